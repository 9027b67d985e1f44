//! MCP client tools for AppAgents: a [`ToolProvider`] over the MCP servers of `ufo.toml`.
//!
//! Servers start lazily (on the first `tools_for` of an application they serve), are reused
//! for the session, and are shut down by [`McpTools::shutdown`]. Every request is bounded by
//! the server's timeout: a server that hangs or dies makes the call fail (a failed action the
//! model sees), never a hung session. A server whose connection is gone is started again on
//! the next use.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use async_trait::async_trait;
use rmcp::model::{CallToolRequestParams, CallToolResult, ClientRequest, RawContent};
use rmcp::service::{PeerRequestOptions, RunningService, ServiceError};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{RoleClient, ServiceExt};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::Mutex;
use ufo_core::{ToolError, ToolProvider, ToolSpec};

use crate::bounded::{BoundedChild, MAX_MESSAGE_BYTES};
use crate::bounded_http::BoundedHttp;

/// Default per-request timeout, in milliseconds.
pub const DEFAULT_TIMEOUT_MS: u64 = 30_000;

/// How one MCP server is reached (`[mcp.servers.<name>]` in `ufo.toml`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct McpServerConfig {
    /// A program to start with its stdin/stdout as the MCP stdio transport.
    pub command: Option<String>,
    /// Its arguments.
    pub args: Vec<String>,
    /// Extra environment variables for it (e.g. an API key the server needs). The server
    /// inherits ufo's environment without its secrets ([`ufo_core::secrets`]); a secret it
    /// needs must be passed here.
    pub env: BTreeMap<String, String>,
    /// A streamable HTTP endpoint (instead of `command`).
    pub url: Option<String>,
    /// The applications whose AppAgents see this server's tools (application names, any
    /// case); empty: every AppAgent (a global server).
    pub apps: Vec<String>,
    /// Per-request timeout in milliseconds (starting the server included); default 30000.
    pub timeout_ms: Option<u64>,
}

/// Errors in the MCP configuration.
#[derive(Debug, thiserror::Error)]
pub enum McpConfigError {
    /// Neither `command` nor `url`, or both.
    #[error("[mcp.servers.{0}] needs exactly one of `command` (a stdio server) or `url` (streamable HTTP)")]
    Transport(String),
    /// A zero timeout.
    #[error("[mcp.servers.{0}] timeout_ms is 0; set it to 1 or more milliseconds")]
    Timeout(String),
}

impl McpServerConfig {
    /// Check the entry named `name`.
    pub fn check(&self, name: &str) -> Result<(), McpConfigError> {
        if self.command.is_some() == self.url.is_some() {
            return Err(McpConfigError::Transport(name.to_string()));
        }
        if self.timeout_ms == Some(0) {
            return Err(McpConfigError::Timeout(name.to_string()));
        }
        Ok(())
    }

    fn timeout(&self) -> Duration {
        Duration::from_millis(self.timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS))
    }

    fn serves(&self, app: &str) -> bool {
        self.apps.is_empty() || self.apps.iter().any(|a| a.eq_ignore_ascii_case(app))
    }
}

/// Why a server could not be started or its tools listed. The messages name the server and
/// say what to check; a tool call that needed the connection reports it as
/// [`ToolError::Failed`].
#[derive(Debug, thiserror::Error)]
pub enum McpConnectError {
    /// The entry names no `command` (nor a `url`).
    #[error(transparent)]
    Config(#[from] McpConfigError),
    /// The server's program could not be started.
    #[error("cannot start MCP server {name} (`{program}`): {source}; check `command` in [mcp.servers.{name}]")]
    Spawn {
        /// The server's name.
        name: String,
        /// The program configured.
        program: String,
        /// Why it did not start.
        #[source]
        source: std::io::Error,
    },
    /// A streamable HTTP server did not accept the connection. The cause is kept as text with
    /// the URL's credentials scrubbed out (the error itself would print them).
    #[error("cannot connect to MCP server {name} at {url}: {reason}; check `url` in [mcp.servers.{name}] and that the server is running")]
    Connect {
        /// The server's name.
        name: String,
        /// The URL without credentials.
        url: String,
        /// What the transport said, credentials scrubbed.
        reason: String,
    },
    /// A started server did not complete the MCP handshake.
    #[error(
        "MCP server {name} did not initialise: {source}{stderr}; check that it speaks MCP on stdio"
    )]
    Initialise {
        /// The server's name.
        name: String,
        /// The handshake's failure (boxed: it is large).
        #[source]
        source: Box<rmcp::service::ClientInitializeError>,
        /// The last lines of the server's stderr (` (server stderr: ...)`), or empty.
        stderr: String,
    },
    /// Starting the server took longer than its timeout.
    #[error("MCP server {name} did not start within {ms} ms; raise timeout_ms in [mcp.servers.{name}] or check the server")]
    StartTimeout {
        /// The server's name.
        name: String,
        /// The timeout.
        ms: u128,
    },
    /// The server refused to list its tools.
    #[error("MCP server {name} could not list its tools: {source}")]
    ListTools {
        /// The server's name.
        name: String,
        /// The server's answer (boxed: it is large).
        #[source]
        source: Box<ServiceError>,
    },
    /// Listing the tools took longer than the timeout.
    #[error("MCP server {name} did not list its tools within {ms} ms; raise timeout_ms in [mcp.servers.{name}] or check the server")]
    ListTimeout {
        /// The server's name.
        name: String,
        /// The timeout.
        ms: u128,
    },
}

/// A live connection to a server.
struct Conn {
    service: RunningService<RoleClient, ()>,
    tools: Vec<ToolSpec>,
    /// Raised when the server sent a message longer than [`MAX_MESSAGE_BYTES`] (the
    /// connection is then closed).
    oversized: Arc<AtomicBool>,
}

/// One configured server and its connection, if started.
struct Server {
    name: String,
    config: McpServerConfig,
    conn: Mutex<Option<Conn>>,
    /// The last lines the server wrote on stderr (for error messages).
    stderr: Arc<StdMutex<VecDeque<String>>>,
    /// Where a streamable HTTP server last redirected to (redacted; not followed).
    redirected: Arc<StdMutex<Option<String>>>,
}

const STDERR_LINES: usize = 20;

/// The longest stderr line kept, in bytes; the rest of a longer line is dropped.
const STDERR_LINE_BYTES: usize = 1000;

/// Read a server's stderr to its end: each line is logged and the last [`STDERR_LINES`] are
/// kept in `keep`, each cut to [`STDERR_LINE_BYTES`], so an endless line costs no memory.
async fn keep_stderr(
    stderr: tokio::process::ChildStderr,
    name: String,
    keep: Arc<StdMutex<VecDeque<String>>>,
) {
    let mut reader = BufReader::new(stderr);
    let mut line: Vec<u8> = Vec::new();
    let push = |line: &[u8]| {
        let line = String::from_utf8_lossy(line).into_owned();
        tracing::debug!(server = %name, "{line}");
        if let Ok(mut k) = keep.lock() {
            if k.len() == STDERR_LINES {
                k.pop_front();
            }
            k.push_back(line);
        }
    };
    loop {
        let buf = match reader.fill_buf().await {
            Ok(buf) if !buf.is_empty() => buf,
            _ => break,
        };
        let newline = buf.iter().position(|b| *b == b'\n');
        let part = &buf[..newline.unwrap_or(buf.len())];
        let room = STDERR_LINE_BYTES.saturating_sub(line.len());
        line.extend_from_slice(&part[..part.len().min(room)]);
        let used = newline.map_or(buf.len(), |i| i + 1);
        reader.consume(used);
        if newline.is_some() {
            push(&line);
            line.clear();
        }
    }
    if !line.is_empty() {
        push(&line);
    }
}

impl Server {
    fn stderr_tail(&self) -> String {
        let lines = match self.stderr.lock() {
            Ok(l) => l.iter().cloned().collect::<Vec<_>>(),
            Err(_) => Vec::new(),
        };
        if lines.is_empty() {
            String::new()
        } else {
            format!(" (server stderr: {})", lines.join(" | "))
        }
    }

    /// Start the server and list its tools, all within the timeout.
    async fn connect(&self) -> Result<Conn, McpConnectError> {
        let timeout = self.config.timeout();
        let oversized = Arc::new(AtomicBool::new(false));
        let started = tokio::time::timeout(timeout, self.start(oversized.clone())).await;
        let service = match started {
            Ok(Ok(s)) => s,
            Ok(Err(e)) => return Err(e),
            Err(_) => {
                return Err(McpConnectError::StartTimeout {
                    name: self.name.clone(),
                    ms: timeout.as_millis(),
                })
            }
        };
        let listed = tokio::time::timeout(timeout, service.list_all_tools()).await;
        let tools = match listed {
            Ok(Ok(t)) => t,
            Ok(Err(e)) => {
                let _ = tokio::time::timeout(Duration::from_secs(5), service.cancel()).await;
                return Err(McpConnectError::ListTools {
                    name: self.name.clone(),
                    source: Box::new(e),
                });
            }
            Err(_) => {
                let _ = tokio::time::timeout(Duration::from_secs(5), service.cancel()).await;
                return Err(McpConnectError::ListTimeout {
                    name: self.name.clone(),
                    ms: timeout.as_millis(),
                });
            }
        };
        let tools = tools
            .into_iter()
            .map(|t| ToolSpec {
                name: t.name.to_string(),
                description: t
                    .description
                    .as_deref()
                    .map(str::to_string)
                    .or(t.title.clone())
                    .unwrap_or_default(),
                input_schema: Value::Object((*t.input_schema).clone()),
                source: self.name.clone(),
            })
            .collect();
        Ok(Conn {
            service,
            tools,
            oversized,
        })
    }

    /// Start the server (a stdio server's messages, an HTTP server's replies and events,
    /// bounded to [`MAX_MESSAGE_BYTES`], raising `oversized` past it) and complete the MCP
    /// handshake.
    async fn start(
        &self,
        oversized: Arc<AtomicBool>,
    ) -> Result<RunningService<RoleClient, ()>, McpConnectError> {
        if let Some(url) = &self.config.url {
            let connect_error = |reason: String| McpConnectError::Connect {
                name: self.name.clone(),
                url: ufo_core::redact::redact_url(url),
                reason,
            };
            let http = self
                .http_client()
                .map_err(|e| connect_error(e.to_string()))?;
            // each reply, each event of a stream, bounded as a stdio server's lines
            let transport = StreamableHttpClientTransport::with_client(
                BoundedHttp::new(http, oversized.clone()),
                StreamableHttpClientTransportConfig::with_uri(url.as_str()),
            );
            return ().serve(transport).await.map_err(|e| {
                // The URL may carry a token (userinfo, `?key=`): never print it.
                let reason = ufo_core::redact::scrub_url_secrets(&e.to_string(), url);
                let cut = if oversized.load(Ordering::SeqCst) && !reason.contains("longer than") {
                    format!(
                        " (it sent a message longer than {} MiB, which was cut)",
                        MAX_MESSAGE_BYTES >> 20
                    )
                } else {
                    String::new()
                };
                connect_error(format!("{reason}{cut}{}", self.redirect_note()))
            });
        }
        let Some(program) = &self.config.command else {
            return Err(McpConfigError::Transport(self.name.clone()).into());
        };
        // none of ufo's secrets (provider keys, UFO_LLM_*), unless `env` passes one on purpose;
        // memory and CPU time limited as every command ufo runs
        let mut cmd = ufo_proc::limited_command(program, &self.config.args);
        cmd.envs(&self.config.env);
        let (transport, stderr) =
            BoundedChild::spawn(cmd, MAX_MESSAGE_BYTES, oversized).map_err(|source| {
                McpConnectError::Spawn {
                    name: self.name.clone(),
                    program: program.clone(),
                    source,
                }
            })?;
        if let Some(stderr) = stderr {
            let keep = self.stderr.clone();
            let name = self.name.clone();
            tokio::spawn(keep_stderr(stderr, name, keep));
        }
        ().serve(transport)
            .await
            .map_err(|source| McpConnectError::Initialise {
                name: self.name.clone(),
                source: Box::new(source),
                stderr: self.stderr_tail(),
            })
    }

    /// The HTTP client of a streamable HTTP server. It follows no redirect: one would re-send
    /// the request (tool arguments, the URL's credentials) wherever the server points, so
    /// the address is noted for the error message instead.
    fn http_client(&self) -> Result<reqwest::Client, reqwest::Error> {
        let redirected = self.redirected.clone();
        let policy = reqwest::redirect::Policy::custom(move |attempt| {
            if let Ok(mut r) = redirected.lock() {
                *r = Some(ufo_core::redact::redact_url(attempt.url().as_str()));
            }
            attempt.stop()
        });
        reqwest::Client::builder().redirect(policy).build()
    }

    /// ` (it answered a redirect to …)` when the server answered one, or empty.
    fn redirect_note(&self) -> String {
        match self.redirected.lock().ok().and_then(|r| r.clone()) {
            Some(to) => format!(
                " (it answered a redirect to {to}, which is not followed: set `url` in \
                 [mcp.servers.{}] to the final address)",
                self.name
            ),
            None => String::new(),
        }
    }

    /// The server's tools, starting it if needed.
    async fn tools(&self) -> Result<Vec<ToolSpec>, McpConnectError> {
        let mut guard = self.conn.lock().await;
        if let Some(c) = guard.as_ref() {
            if !c.service.is_transport_closed() {
                return Ok(c.tools.clone());
            }
        }
        let conn = self.connect().await?;
        let tools = conn.tools.clone();
        if let Some(old) = guard.replace(conn) {
            let _ = tokio::time::timeout(Duration::from_secs(5), old.service.cancel()).await;
        }
        Ok(tools)
    }

    /// Call `tool` with `args` (a JSON object or null), starting the server if its connection
    /// is gone; bounded by the server's timeout.
    async fn call(&self, tool: &str, args: &Value) -> Result<String, ToolError> {
        let timeout = self.config.timeout();
        let mut guard = self.conn.lock().await;
        let conn = self.connected(&mut guard, tool).await?;
        let arguments = tool_arguments(tool, args)?;
        let sent = send_call(conn, tool, arguments, timeout).await;
        let response = match sent {
            Err(_) | Ok(Err(ServiceError::Timeout { .. })) => {
                return Err(ToolError::Timeout {
                    tool: tool.into(),
                    ms: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
                })
            }
            Ok(Err(e)) => {
                let (message, closed) = self.failure(conn, tool, &e);
                if closed {
                    if let Some(old) = guard.take() {
                        let _ = tokio::time::timeout(Duration::from_secs(5), old.service.cancel())
                            .await;
                    }
                }
                return Err(ToolError::Failed {
                    tool: tool.into(),
                    message,
                });
            }
            Ok(Ok(r)) => r,
        };
        self.tool_result(tool, response)
    }

    /// The live connection in `conn`, made anew when there is none or its transport closed.
    async fn connected<'c>(
        &self,
        conn: &'c mut Option<Conn>,
        tool: &str,
    ) -> Result<&'c Conn, ToolError> {
        let alive = conn
            .as_ref()
            .is_some_and(|c| !c.service.is_transport_closed());
        if !alive {
            let fresh = self.connect().await.map_err(|e| ToolError::Failed {
                tool: tool.to_string(),
                message: e.to_string(),
            })?;
            *conn = Some(fresh);
        }
        conn.as_ref().ok_or_else(|| ToolError::Failed {
            tool: tool.into(),
            message: format!("MCP server {} is not connected", self.name),
        })
    }

    /// Why a call failed, and whether its connection is to be dropped (the server exited, or
    /// sent a message over the bound and was cut off) so that the next call starts it again.
    fn failure(&self, conn: &Conn, tool: &str, e: &ServiceError) -> (String, bool) {
        let exited =
            conn.service.is_transport_closed() || matches!(e, ServiceError::TransportClosed);
        let oversized = conn.oversized.load(Ordering::SeqCst);
        let message = if oversized {
            let again = if self.config.url.is_some() {
                "the connection was closed and is opened again on the next call"
            } else {
                "it was stopped and will be started again on the next call"
            };
            format!(
                "MCP server {} sent a message longer than {} MiB in answer to {tool}; \
                 {again} (ask the tool for less)",
                self.name,
                MAX_MESSAGE_BYTES >> 20
            )
        } else {
            format!(
                "MCP server {}: {e}{}{}",
                self.name,
                if exited {
                    "; the server has exited and will be started again on the next call"
                } else {
                    ""
                },
                self.stderr_tail(),
            ) + &self.redirect_note()
        };
        (message, exited || oversized)
    }

    /// The text of a `tools/call` answer, secrets redacted; an error result is a failed call.
    fn tool_result(
        &self,
        tool: &str,
        response: rmcp::model::ServerResult,
    ) -> Result<String, ToolError> {
        let result = match response {
            rmcp::model::ServerResult::CallToolResult(r) => r,
            other => {
                return Err(ToolError::Failed {
                    tool: tool.into(),
                    message: format!("unexpected answer from MCP server {}: {other:?}", self.name),
                })
            }
        };
        // a key the server knows (or read) never reaches the model or the trajectory
        let text = ufo_core::secrets::redact(&result_text(&result));
        if result.is_error == Some(true) {
            return Err(ToolError::Failed {
                tool: tool.into(),
                message: text,
            });
        }
        Ok(text)
    }

    async fn shutdown(&self) {
        let mut guard = self.conn.lock().await;
        if let Some(conn) = guard.take() {
            if tokio::time::timeout(Duration::from_secs(5), conn.service.cancel())
                .await
                .is_err()
            {
                tracing::warn!(server = %self.name, "MCP server did not stop within 5 s");
            }
        }
    }
}

/// The arguments of a `tools/call`: a JSON object, or none for null; anything else is refused.
fn tool_arguments(
    tool: &str,
    args: &Value,
) -> Result<Option<serde_json::Map<String, Value>>, ToolError> {
    match args {
        Value::Object(m) => Ok(Some(m.clone())),
        Value::Null => Ok(None),
        other => Err(ToolError::BadArgs {
            tool: tool.into(),
            message: format!("Args must be a JSON object, found {other}"),
        }),
    }
}

/// Send `tools/call` on `conn` and wait for the answer. The peer's own timeout cancels the
/// request on the server; the outer one (half a second later) also covers a server that no
/// longer reads its input.
async fn send_call(
    conn: &Conn,
    tool: &str,
    arguments: Option<serde_json::Map<String, Value>>,
    timeout: Duration,
) -> Result<Result<rmcp::model::ServerResult, ServiceError>, tokio::time::error::Elapsed> {
    let request =
        ClientRequest::CallToolRequest(rmcp::model::Request::new(CallToolRequestParams {
            meta: None,
            name: tool.to_string().into(),
            arguments,
            task: None,
        }));
    let peer = conn.service.peer().clone();
    let options = PeerRequestOptions {
        timeout: Some(timeout),
        meta: None,
    };
    tokio::time::timeout(timeout + Duration::from_millis(500), async {
        peer.send_request_with_option(request, options)
            .await?
            .await_response()
            .await
    })
    .await
}

/// The text of a tool result: text parts, embedded text resources, the structured content
/// when there is no text, and a note per image or binary part.
pub fn result_text(result: &CallToolResult) -> String {
    let mut parts = Vec::new();
    for c in &result.content {
        match &c.raw {
            RawContent::Text(t) => parts.push(t.text.clone()),
            RawContent::Image(i) => parts.push(format!("[image {}]", i.mime_type)),
            RawContent::Audio(a) => parts.push(format!("[audio {}]", a.mime_type)),
            RawContent::Resource(r) => match &r.resource {
                rmcp::model::ResourceContents::TextResourceContents { uri, text, .. } => {
                    parts.push(format!("{uri}: {text}"))
                }
                rmcp::model::ResourceContents::BlobResourceContents { uri, .. } => {
                    parts.push(format!("[binary resource {uri}]"))
                }
            },
            RawContent::ResourceLink(r) => parts.push(format!("[resource {}]", r.uri)),
        }
    }
    if parts.is_empty() {
        if let Some(s) = &result.structured_content {
            parts.push(s.to_string());
        }
    }
    parts.join("\n")
}

/// MCP tools for the AppAgents: every server of `[mcp.servers]`.
pub struct McpTools {
    servers: Vec<Server>,
}

impl McpTools {
    /// Tools from these servers (name, config), checked; nothing starts until first used.
    pub fn new(
        servers: impl IntoIterator<Item = (String, McpServerConfig)>,
    ) -> Result<Self, McpConfigError> {
        let mut out = Vec::new();
        for (name, config) in servers {
            config.check(&name)?;
            out.push(Server {
                name,
                config,
                conn: Mutex::new(None),
                stderr: Arc::new(StdMutex::new(VecDeque::new())),
                redirected: Arc::new(StdMutex::new(None)),
            });
        }
        Ok(Self { servers: out })
    }

    /// Whether no server is configured.
    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }

    /// Stop every started server (at the end of the session).
    pub async fn shutdown(&self) {
        for s in &self.servers {
            s.shutdown().await;
        }
    }

    fn serving<'s>(&'s self, app: &'s str) -> impl Iterator<Item = &'s Server> + 's {
        self.servers.iter().filter(move |s| s.config.serves(app))
    }
}

#[async_trait]
impl ToolProvider for McpTools {
    async fn tools_for(&self, app: &str) -> Result<Vec<ToolSpec>, ToolError> {
        let mut tools: Vec<ToolSpec> = Vec::new();
        let mut errors = Vec::new();
        for server in self.serving(app) {
            match server.tools().await {
                Ok(list) => {
                    for t in list {
                        // The first server offering a name wins.
                        if !tools.iter().any(|x| x.name == t.name) {
                            tools.push(t);
                        }
                    }
                }
                Err(e) => {
                    tracing::warn!("{e}");
                    errors.push(e.to_string());
                }
            }
        }
        if !errors.is_empty() && tools.is_empty() {
            return Err(ToolError::Failed {
                tool: "(listing tools)".into(),
                message: errors.join("; "),
            });
        }
        Ok(tools)
    }

    fn validate(&self, tool: &ToolSpec, args: &Value) -> Result<(), ToolError> {
        crate::schema::validate(tool, args)
    }

    #[tracing::instrument(level = "debug", skip(self, args), err(Display))]
    async fn call(&self, app: &str, tool: &str, args: &Value) -> Result<String, ToolError> {
        for server in self.serving(app) {
            let offers = {
                let guard = server.conn.lock().await;
                guard
                    .as_ref()
                    .is_some_and(|c| c.tools.iter().any(|t| t.name == tool))
            };
            let offers = offers
                || match server.tools().await {
                    Ok(list) => list.iter().any(|t| t.name == tool),
                    Err(_) => false,
                };
            if offers {
                return server.call(tool, args).await;
            }
        }
        Err(ToolError::Unknown(tool.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Defect 1 for MCP stdio servers: the server inherits no provider key, but gets what its
    /// `env` passes on purpose. The "server" here writes its environment and exits.
    #[tokio::test]
    async fn a_stdio_server_gets_no_secrets_but_its_explicit_env() {
        std::env::set_var("OPENAI_API_KEY", "sk-mcp-parent-secret");
        std::env::set_var("UFO_LLM_BASE_URL", "https://user:pw@llm.example/v1");
        let tmp = tempfile::tempdir().expect("tempdir");
        let dump = tmp.path().join("env.txt");
        let config = McpServerConfig {
            command: Some("/bin/sh".into()),
            args: vec!["-c".into(), "env > \"$DUMP\"".into()],
            env: BTreeMap::from([
                ("DUMP".to_string(), dump.display().to_string()),
                (
                    "SEARCH_API_KEY".to_string(),
                    "passed-on-purpose".to_string(),
                ),
            ]),
            timeout_ms: Some(5000),
            ..McpServerConfig::default()
        };
        let tools = McpTools::new([("dump".to_string(), config)]).expect("valid");
        // it exits without speaking MCP: listing its tools fails, after it ran
        let _ = tools.tools_for("Writer").await;
        tools.shutdown().await;
        let env = std::fs::read_to_string(&dump).expect("the server ran");
        assert!(!env.contains("sk-mcp-parent-secret"), "{env}");
        assert!(!env.contains("user:pw"), "{env}");
        assert!(env.contains("SEARCH_API_KEY=passed-on-purpose"), "{env}");
        assert!(env.contains("PATH="), "{env}");
    }
}
