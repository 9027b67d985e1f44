//! The remote desktop (`--desktop remote:URL`): the [`Desktop`] port over MCP streamable HTTP,
//! against the tools `ufo serve` offers (docs/serve.md "A remote desktop").
//!
//! Every call is bounded by a timeout. A transport failure or a call past its timeout is a
//! [`DesktopError::Lost`]: the step ends ERROR with the reason `device_lost`, and every later
//! call fails at once with the same error, so a lost device never makes the session hang.
//! The bearer token is sent in the `Authorization` header only; it is never logged or shown.
//! Every answer and error of the served desktop has the process's known secret values hidden
//! (`***`, [`ufo_core::secrets::redactor`]) before anything reads it: a server that echoes
//! the token (in a title, a control, an error) cannot bring it into a session, nor into what
//! `ufo serve` or `ufo mcp serve` serve on in turn (docs/security.md).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use base64::Engine;
use rmcp::model::{CallToolRequestParams, CallToolResult, RawContent, ResourceContents};
use rmcp::service::RunningService;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{json, Map, Value};
use ufo_core::{
    Control, Desktop, DesktopError, LaunchableApp, Screenshot, ShellOutput, UiAction, WindowId,
    WindowInfo, WindowObservation,
};

use crate::server::desktop_error_from_json;

/// How long one call to the remote desktop may take by default.
pub const DEFAULT_REMOTE_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a `run_shell` call may take: the served desktop's own bound on a command (60 s
/// by default) and a margin.
const SHELL_CALL_TIMEOUT: Duration = Duration::from_secs(90);

/// How long connecting (TCP and TLS) may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How to reach a served desktop.
#[derive(Clone)]
pub struct RemoteConfig {
    /// The server's URL (`https://HOST:PORT[/mcp]`, or `http://` on a loopback address).
    pub url: String,
    /// The bearer token (`ufo serve token add`).
    pub token: String,
    /// The SHA-256 fingerprint of the server's certificate to pin; `None` trusts the
    /// public web roots.
    pub fingerprint: Option<[u8; 32]>,
    /// The bound of every call.
    pub timeout: Duration,
}

impl std::fmt::Debug for RemoteConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // never the token
        f.debug_struct("RemoteConfig")
            .field("url", &self.url)
            .field("fingerprint", &self.fingerprint.is_some())
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

/// Why a remote desktop could not be reached.
#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    /// The URL is not one this adapter can use.
    #[error("{0}")]
    Url(String),
    /// The server refused the token.
    #[error(
        "the served desktop at {0} refused the token (401); check the token in --token-file or \
         UFO_REMOTE_TOKEN (make one on that machine with `ufo serve token add NAME`)"
    )]
    Token(String),
    /// Too many failed attempts from this address.
    #[error(
        "the served desktop at {0} locked this address out after failed token attempts (429); \
         wait a minute and check the token in --token-file or UFO_REMOTE_TOKEN"
    )]
    LockedOut(String),
    /// Anything else while connecting.
    #[error(
        "cannot reach the served desktop at {url}: {reason}; check that `ufo serve` runs there, \
         the address and port, and (for https) the --fingerprint it printed"
    )]
    Connect {
        /// The URL.
        url: String,
        /// What failed.
        reason: String,
    },
}

/// A desktop served by `ufo serve` on another machine (or another session of this one).
pub struct RemoteDesktop {
    url: String,
    service: RunningService<RoleClient, ()>,
    timeout: Duration,
    /// Set once the device is lost: every later call fails at once with it.
    lost: Mutex<Option<String>>,
    last_changed: Mutex<Option<bool>>,
    final_state: Mutex<Option<Value>>,
    /// The served machine's programs (name → path, the first on its `PATH`), listed once at
    /// connect when it runs shell commands; empty otherwise.
    programs: std::collections::HashMap<String, String>,
}

/// Lists every executable file on the served machine's `PATH`, one absolute path per line,
/// in `PATH` order (a name's first line is the one its shell finds).
const LIST_PROGRAMS: &str = r#"IFS=:; for d in $PATH; do [ -d "$d" ] || continue; for f in "$d"/*; do [ -f "$f" ] && [ -x "$f" ] && printf '%s\n' "$f"; done; done"#;

/// The programs of [`LIST_PROGRAMS`]' output: name → the first absolute path of that name.
fn programs_of(listing: &str) -> std::collections::HashMap<String, String> {
    let mut programs = std::collections::HashMap::new();
    for path in listing.lines().filter(|l| l.starts_with('/')) {
        if let Some((_, name)) = path.rsplit_once('/') {
            if !name.is_empty() {
                programs
                    .entry(name.to_string())
                    .or_insert_with(|| path.to_string());
            }
        }
    }
    programs
}

/// The URL `remote:` names, checked: `https://`, or `http://` on a loopback host only; the
/// path `/mcp` when none is given.
pub fn normalise_url(url: &str) -> Result<String, RemoteError> {
    let parsed = reqwest::Url::parse(url).map_err(|e| {
        RemoteError::Url(format!(
            "--desktop remote:{url}: not a URL ({e}); write remote:https://HOST:PORT"
        ))
    })?;
    let loopback = match parsed.host_str() {
        Some(h) => {
            h.eq_ignore_ascii_case("localhost")
                || h.trim_start_matches('[')
                    .trim_end_matches(']')
                    .parse::<std::net::IpAddr>()
                    .is_ok_and(|a| a.is_loopback())
        }
        None => {
            return Err(RemoteError::Url(format!(
                "--desktop remote:{url}: no host; write remote:https://HOST:PORT"
            )))
        }
    };
    match parsed.scheme() {
        "https" => {}
        "http" if loopback => {}
        "http" => {
            return Err(RemoteError::Url(format!(
                "--desktop remote:{url}: plain http is allowed on a loopback address only; \
                 serve with `ufo serve --tls` and use remote:https://… with --fingerprint"
            )))
        }
        other => {
            return Err(RemoteError::Url(format!(
                "--desktop remote:{url}: the scheme {other:?} is not http or https"
            )))
        }
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(RemoteError::Url(
            "--desktop remote:URL must not carry credentials; give the token with --token-file \
             or UFO_REMOTE_TOKEN"
                .into(),
        ));
    }
    let mut parsed = parsed;
    if parsed.path().is_empty() || parsed.path() == "/" {
        parsed.set_path("/mcp");
    }
    Ok(parsed.to_string())
}

impl RemoteDesktop {
    /// Connect and complete the MCP handshake (bounded by the config's timeout).
    pub async fn connect(config: RemoteConfig) -> Result<Self, RemoteError> {
        let url = normalise_url(&config.url)?;
        let connect_error = |reason: String| RemoteError::Connect {
            url: url.clone(),
            reason,
        };
        let mut http = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            // the token must not follow a redirect to another host
            .redirect(reqwest::redirect::Policy::none());
        if let Some(pin) = config.fingerprint {
            http = http.use_preconfigured_tls(crate::http::tls::pinned_client_config(pin));
        }
        let http = http.build().map_err(|e| connect_error(e.to_string()))?;
        // each reply, each event of a stream, bounded (bounded_http.rs)
        let transport = StreamableHttpClientTransport::with_client(
            crate::bounded_http::BoundedHttp::new(http, Default::default()),
            StreamableHttpClientTransportConfig::with_uri(url.as_str())
                .auth_header(config.token.clone()),
        );
        let service = match tokio::time::timeout(config.timeout, ().serve(transport)).await {
            Err(_) => {
                return Err(connect_error(format!(
                    "no answer within {} s",
                    config.timeout.as_secs()
                )))
            }
            Ok(Err(e)) => {
                let reason = scrub(&format!("{e:#}"), &config.token);
                return Err(match refusal(&reason, &url) {
                    Some(Refusal::Token) => RemoteError::Token(url),
                    Some(Refusal::LockedOut) => RemoteError::LockedOut(url),
                    None => connect_error(reason),
                });
            }
            Ok(Ok(s)) => s,
        };
        let mut desktop = Self {
            url,
            service,
            timeout: config.timeout,
            lost: Mutex::new(None),
            last_changed: Mutex::new(None),
            final_state: Mutex::new(None),
            programs: Default::default(),
        };
        desktop.programs = desktop.served_programs().await;
        Ok(desktop)
    }

    /// The served machine's programs when it runs shell commands (so the shell allow-list
    /// looks them up as it does on this machine); none when it does not or cannot say.
    async fn served_programs(&self) -> std::collections::HashMap<String, String> {
        let listed = tokio::time::timeout(self.timeout, self.service.list_all_tools()).await;
        let offers_shell = matches!(&listed, Ok(Ok(tools))
            if tools.iter().any(|t| t.name == crate::server::SHELL_TOOL));
        if !offers_shell {
            return Default::default();
        }
        match self.shell(LIST_PROGRAMS).await {
            Ok(out) => programs_of(&out.stdout),
            Err(e) => {
                tracing::warn!("cannot list the served machine's programs: {e}");
                Default::default()
            }
        }
    }

    /// The server's URL (no credentials in it).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Call one tool within `timeout`; a transport failure or timeout loses the device.
    async fn call_within(
        &self,
        name: &str,
        args: Value,
        timeout: Duration,
    ) -> Result<CallToolResult, DesktopError> {
        if let Some(why) = self.lost.lock().ok().and_then(|l| l.clone()) {
            return Err(DesktopError::Lost(why));
        }
        let arguments = match args {
            Value::Object(m) => Some(m),
            _ => None,
        };
        let params = CallToolRequestParams {
            meta: None,
            name: name.to_string().into(),
            arguments,
            task: None,
        };
        let outcome = tokio::time::timeout(timeout, self.service.call_tool(params)).await;
        let why = match outcome {
            Ok(Ok(result)) => return Ok(hide_secrets(result, &ufo_core::secrets::redactor())),
            Ok(Err(e)) => format!(
                "{} did not answer {name}: {}",
                self.url,
                ufo_core::secrets::redact(&e.to_string())
            ),
            Err(_) => format!(
                "{} did not answer {name} within {} s",
                self.url,
                timeout.as_secs()
            ),
        };
        let why = format!("{why}; check that `ufo serve` still runs there and the network between");
        if let Ok(mut l) = self.lost.lock() {
            l.get_or_insert(why.clone());
        }
        Err(DesktopError::Lost(why))
    }

    /// Call a tool and read its answer: the text of a success, or the error it reports.
    async fn call_ok(&self, name: &str, args: Value) -> Result<CallToolResult, DesktopError> {
        self.call_ok_within(name, args, self.timeout).await
    }

    /// [`call_ok`](Self::call_ok) with its own bound.
    async fn call_ok_within(
        &self,
        name: &str,
        args: Value,
        timeout: Duration,
    ) -> Result<CallToolResult, DesktopError> {
        let result = self.call_within(name, args, timeout).await?;
        if result.is_error != Some(true) {
            return Ok(result);
        }
        if let Some(e) = result
            .structured_content
            .as_ref()
            .and_then(desktop_error_from_json)
        {
            return Err(e);
        }
        Err(DesktopError::ActionFailed(format!(
            "the served desktop answered {name} with an error: {}",
            text_of(&result)
        )))
    }

    /// The JSON of a tool's first text content.
    fn json_of(name: &str, result: &CallToolResult) -> Result<Value, DesktopError> {
        serde_json::from_str(&text_of(result)).map_err(|e| {
            DesktopError::backend_with(
                format!(
                    "the served desktop's {name} answer is not the JSON expected ({e}); is it \
                     an older or newer ufo serve?"
                ),
                e,
            )
        })
    }

    async fn listing(&self) -> Result<Value, DesktopError> {
        let r = self.call_ok("list_windows", json!({})).await?;
        Self::json_of("list_windows", &r)
    }
}

/// The first text content of a result.
fn text_of(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .find_map(|c| c.as_text().map(|t| t.text.clone()))
        .unwrap_or_default()
}

/// `result` with every value `redactor` knows replaced by `***` in its texts and structured
/// content (images are left as they are).
fn hide_secrets(
    mut result: CallToolResult,
    redactor: &ufo_core::secrets::Redactor,
) -> CallToolResult {
    if redactor.is_empty() {
        return result;
    }
    let hide = |text: &mut String| {
        if let std::borrow::Cow::Owned(hidden) = redactor.redact(text) {
            *text = hidden;
        }
    };
    for content in &mut result.content {
        match &mut content.raw {
            RawContent::Text(t) => hide(&mut t.text),
            RawContent::Resource(r) => match &mut r.resource {
                ResourceContents::TextResourceContents { text, .. } => hide(text),
                ResourceContents::BlobResourceContents { .. } => {}
            },
            RawContent::Image(_) | RawContent::Audio(_) | RawContent::ResourceLink(_) => {}
        }
    }
    if let Some(structured) = &mut result.structured_content {
        redactor.redact_json(structured);
    }
    result
}

/// Remove the token from a text, should a library have put it there.
/// What a failed handshake's message says the server answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Refusal {
    /// 401: the token was refused.
    Token,
    /// 429: this client is locked out for a while.
    LockedOut,
}

/// The refusal a failed handshake's `reason` names, if any. The server's address is taken
/// out first and a status is a number of its own: a port such as 40151 holds "401", and a
/// server that answers no HTTP at all must read as unreachable, not as a refused token.
fn refusal(reason: &str, url: &str) -> Option<Refusal> {
    let mut text = reason.replace(url, " ");
    if let Ok(u) = reqwest::Url::parse(url) {
        let authority = format!("{}:{}", u.host_str().unwrap_or(""), u.port().unwrap_or(0));
        text = text.replace(&authority, " ");
    }
    let status = |code: &str| {
        text.match_indices(code).any(|(i, _)| {
            let before = text[..i].chars().next_back();
            let after = text[i + code.len()..].chars().next();
            !before.is_some_and(|c| c.is_ascii_digit())
                && !after.is_some_and(|c| c.is_ascii_digit())
        })
    };
    if status("401") || text.contains("Unauthorized") || text.contains("Auth required") {
        Some(Refusal::Token)
    } else if status("429") {
        Some(Refusal::LockedOut)
    } else {
        None
    }
}

fn scrub(text: &str, token: &str) -> String {
    if token.is_empty() {
        text.to_string()
    } else {
        text.replace(token, "[token]")
    }
}

fn field<T: serde::de::DeserializeOwned>(
    v: &Value,
    key: &str,
    tool: &str,
) -> Result<T, DesktopError> {
    serde_json::from_value(v.get(key).cloned().unwrap_or(Value::Null)).map_err(|e| {
        DesktopError::backend_with(
            format!("the served desktop's {tool} answer has no valid {key:?} ({e})"),
            e,
        )
    })
}

/// A PNG image content as a [`Screenshot`] (its size read from the PNG header).
fn screenshot_of(data: &str) -> Option<Screenshot> {
    let png = base64::engine::general_purpose::STANDARD
        .decode(data)
        .ok()?;
    // the IHDR chunk: width and height, big-endian, at bytes 16..24
    let width = u32::from_be_bytes(png.get(16..20)?.try_into().ok()?);
    let height = u32::from_be_bytes(png.get(20..24)?.try_into().ok()?);
    Some(Screenshot {
        png: Arc::new(png),
        width,
        height,
    })
}

#[async_trait]
impl Desktop for RemoteDesktop {
    // (the remote desktop changes by itself: a window on its way is waited for here)
    async fn pause(&self, within: std::time::Duration) {
        tokio::time::sleep(within).await;
    }

    async fn windows(&self) -> Result<Vec<WindowInfo>, DesktopError> {
        field(&self.listing().await?, "windows", "list_windows")
    }

    async fn launchable(&self) -> Result<Vec<LaunchableApp>, DesktopError> {
        field(&self.listing().await?, "launchable", "list_windows")
    }

    async fn desktop_screenshot(&self) -> Result<Option<Screenshot>, DesktopError> {
        Ok(None)
    }

    async fn observe(&self, window_id: &WindowId) -> Result<WindowObservation, DesktopError> {
        let r = self
            .call_ok(
                "observe_window",
                json!({"window": window_id, "clean_screenshot": true}),
            )
            .await?;
        let v = Self::json_of("observe_window", &r)?;
        let window: WindowInfo = field(&v, "window", "observe_window")?;
        let controls: Vec<Control> = field(&v, "controls", "observe_window")?;
        let warnings: Vec<String> =
            serde_json::from_value(v.get("warnings").cloned().unwrap_or(json!([])))
                .unwrap_or_default();
        let kinds: Vec<String> =
            serde_json::from_value(v.get("images").cloned().unwrap_or(json!(["annotated"])))
                .unwrap_or_default();
        let images = r
            .content
            .iter()
            .filter_map(|c| c.as_image().and_then(|i| screenshot_of(&i.data)));
        let (mut screenshot, mut annotated) = (None, None);
        for (kind, shot) in kinds.iter().zip(images) {
            match kind.as_str() {
                "screenshot" => screenshot = Some(shot),
                _ => annotated = Some(shot),
            }
        }
        Ok(WindowObservation {
            window,
            controls,
            screenshot,
            annotated,
            warnings,
            pixels_readable: v["pixels_readable"].as_bool().unwrap_or(false),
            pixel_changes: pixel_changes_of(&v),
        })
    }

    async fn act(
        &self,
        window_id: &WindowId,
        control_id: Option<&str>,
        action: &UiAction,
    ) -> Result<String, DesktopError> {
        let mut args = Map::new();
        args.insert("window".into(), json!(window_id));
        args.insert("function".into(), json!(action.name()));
        args.insert("args".into(), action_args(action));
        if let Some(c) = control_id {
            args.insert("control_id".into(), json!(c));
        }
        args.insert("settle".into(), json!(true));
        args.insert("final_state".into(), json!(true));
        let r = self.call_ok("act", Value::Object(args)).await?;
        let s = r.structured_content.clone().unwrap_or(Value::Null);
        if let Ok(mut c) = self.last_changed.lock() {
            *c = s.get("changed").and_then(Value::as_bool);
        }
        if let Some(f) = s.get("final_state").filter(|f| !f.is_null()) {
            if let Ok(mut state) = self.final_state.lock() {
                *state = Some(f.clone());
            }
        }
        Ok(match s.get("result").and_then(Value::as_str) {
            Some(result) => result.to_string(),
            None => text_of(&r),
        })
    }

    async fn launch(&self, app: &str) -> Result<WindowInfo, DesktopError> {
        let r = self.call_ok("launch_app", json!({"name": app})).await?;
        field(&Self::json_of("launch_app", &r)?, "launched", "launch_app")
    }

    async fn shell(&self, command: &str) -> Result<ShellOutput, DesktopError> {
        // the server bounds the command itself; the call waits for that bound and a margin
        let r = self
            .call_ok_within(
                crate::server::SHELL_TOOL,
                json!({"command": command}),
                self.timeout.max(SHELL_CALL_TIMEOUT),
            )
            .await?;
        serde_json::from_value(Self::json_of(crate::server::SHELL_TOOL, &r)?).map_err(|e| {
            DesktopError::backend_with(
                format!(
                    "the served desktop's {} answer is not a command's output ({e}); is it an \
                     older or newer ufo serve?",
                    crate::server::SHELL_TOOL
                ),
                e,
            )
        })
    }

    fn find_program(&self, name: &str) -> Option<String> {
        self.programs.get(name).cloned()
    }

    async fn settle(&self) {
        // the server settles after each act (`settle: true`)
    }

    async fn activate(&self, window_id: &WindowId) -> Result<(), DesktopError> {
        self.window_function(window_id, "activate_window").await
    }

    async fn close(&self, window_id: &WindowId) -> Result<(), DesktopError> {
        self.window_function(window_id, "close_window").await
    }

    fn last_action_changed(&self) -> Option<bool> {
        self.last_changed.lock().ok().and_then(|c| *c)
    }

    fn final_state(&self) -> Option<Value> {
        self.final_state.lock().ok().and_then(|s| s.clone())
    }
}

impl RemoteDesktop {
    async fn window_function(
        &self,
        window_id: &WindowId,
        function: &str,
    ) -> Result<(), DesktopError> {
        self.call_ok(
            "act",
            json!({"window": window_id, "function": function, "args": {}}),
        )
        .await
        .map(|_| ())
    }
}

/// The change evidence in pixels of an `observe_window` answer; `None` when the server did not
/// compare (or says something this client does not read).
pub(crate) fn pixel_changes_of(v: &Value) -> Option<Vec<ufo_core::ports::PixelChange>> {
    serde_json::from_value(v.get("pixel_changes")?.clone()).ok()
}

/// The `args` object of a GUI function, as `act` reads it ([`UiAction::parse`]).
fn action_args(action: &UiAction) -> Value {
    action.args()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_is_read_from_the_status_not_from_the_servers_port() {
        let url = "http://127.0.0.1:40151/mcp";
        // a server that answers no HTTP: its port holds "401", yet it is unreachable
        let garbage = "Transport [rmcp::transport::worker::WorkerTransport] error: Client \
            error: error sending request for url (http://127.0.0.1:40151/mcp): connection to \
            127.0.0.1:40151 closed before message completed";
        assert_eq!(refusal(garbage, url), None);
        assert_eq!(
            refusal("invalid HTTP version parsed at 127.0.0.1:14290", url),
            None
        );
        let refused = "Client error: HTTP status client error (401 Unauthorized) for url \
            (http://127.0.0.1:40151/mcp)";
        assert_eq!(refusal(refused, url), Some(Refusal::Token));
        assert_eq!(refusal("Auth required", url), Some(Refusal::Token));
        let locked = "HTTP status client error (429 Too Many Requests) for url (http://x/mcp)";
        assert_eq!(refusal(locked, url), Some(Refusal::LockedOut));
        // a port of exactly 401 is the address, not a status
        assert_eq!(
            refusal(
                "connection refused (127.0.0.1:401)",
                "http://127.0.0.1:401/mcp"
            ),
            None
        );
    }

    #[test]
    fn urls_get_mcp_and_plain_http_only_on_loopback() {
        assert_eq!(
            normalise_url("http://127.0.0.1:8377").expect("loopback"),
            "http://127.0.0.1:8377/mcp"
        );
        assert_eq!(
            normalise_url("https://lab.example:8377/mcp").expect("https"),
            "https://lab.example:8377/mcp"
        );
        assert!(normalise_url("http://lab.example:8377").is_err());
        assert!(normalise_url("ftp://127.0.0.1").is_err());
        assert!(normalise_url("https://me:secret@lab.example").is_err());
        assert!(normalise_url("not a url").is_err());
    }

    #[test]
    fn programs_are_found_where_the_served_shell_finds_them_first() {
        let listing = "/usr/local/bin/printf\n/usr/bin/printf\n/usr/bin/ls\nnoise\n/bin/\n";
        let p = programs_of(listing);
        assert_eq!(
            p.get("printf").map(String::as_str),
            Some("/usr/local/bin/printf")
        );
        assert_eq!(p.get("ls").map(String::as_str), Some("/usr/bin/ls"));
        assert_eq!(p.len(), 2, "{p:?}");
    }

    #[test]
    fn the_programs_listing_runs_in_a_posix_shell() {
        let dir = tempfile::tempdir().expect("tmp");
        let tool = dir.path().join("tool");
        std::fs::write(&tool, "#!/bin/sh\n").expect("write");
        std::fs::write(dir.path().join("data"), "").expect("write");
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let out = std::process::Command::new("/bin/sh")
            .arg("-c")
            .arg(LIST_PROGRAMS)
            .env("PATH", format!("{}:/nonexistent", dir.path().display()))
            .output()
            .expect("sh");
        let p = programs_of(&String::from_utf8_lossy(&out.stdout));
        assert_eq!(p.get("tool"), Some(&tool.display().to_string()));
        assert!(!p.contains_key("data"), "{p:?}");
    }

    #[test]
    fn a_served_answer_that_echoes_a_secret_arrives_hidden() {
        let token = "ufo_served-echo-probe-31f8";
        let redactor = ufo_core::secrets::Redactor::from_values([token.to_string()]);
        let mut result = CallToolResult::success(vec![
            rmcp::model::Content::text(format!("{{\"title\": \"notes {token}\"}}")),
            rmcp::model::Content::image("iVBORw0K", "image/png"),
            rmcp::model::Content::resource(ResourceContents::TextResourceContents {
                uri: "file:///n".into(),
                mime_type: None,
                text: format!("key={token}"),
                meta: None,
            }),
        ]);
        result.structured_content = Some(json!({"window": {"title": token}, "n": [token, 1]}));
        let hidden = hide_secrets(result, &redactor);
        let all = serde_json::to_string(&hidden).expect("serialises");
        assert!(!all.contains(token), "{all}");
        assert_eq!(text_of(&hidden), "{\"title\": \"notes ***\"}");
        assert_eq!(
            hidden.structured_content,
            Some(json!({"window": {"title": "***"}, "n": ["***", 1]}))
        );
        assert_eq!(
            hidden.content[1].as_image().map(|i| i.data.as_str()),
            Some("iVBORw0K")
        );
        // a redactor that knows nothing leaves the answer as it is
        let plain = CallToolResult::success(vec![rmcp::model::Content::text(token)]);
        let same = hide_secrets(plain.clone(), &ufo_core::secrets::Redactor::default());
        assert_eq!(same, plain);
    }

    #[test]
    fn the_config_never_shows_the_token() {
        let c = RemoteConfig {
            url: "https://lab.example".into(),
            token: "ufo_secret".into(),
            fingerprint: None,
            timeout: DEFAULT_REMOTE_TIMEOUT,
        };
        assert!(!format!("{c:?}").contains("ufo_secret"));
    }

    #[test]
    fn every_action_round_trips_through_act_args() {
        for (function, args) in [
            ("click", json!({"button": "left", "double": false})),
            ("set_text", json!({"text": "hello"})),
            ("type_keys", json!({"keys": "{ctrl+s}"})),
            ("read_text", json!({})),
            ("click_at", json!({"x": 3, "y": 4})),
            ("hover", json!({})),
        ] {
            let action = UiAction::parse(function, &args).expect("parses");
            let back = UiAction::parse(action.name(), &action_args(&action)).expect("again");
            assert_eq!(back, action, "{function}");
        }
    }

    /// An answer of the served desktop that does not decode: the text says which, and the
    /// decoder's error is kept beneath it.
    #[test]
    fn an_unusable_answer_keeps_the_decoders_error() {
        let Err(e) = field::<u32>(&json!({"n": "seven"}), "n", "list_windows") else {
            panic!("a string is not a number")
        };
        assert!(e
            .to_string()
            .starts_with("desktop backend failure: the served desktop's list_windows answer"));
        let root = std::error::Error::source(&e)
            .and_then(|s| s.source())
            .and_then(|s| s.downcast_ref::<serde_json::Error>());
        assert!(root.is_some(), "{e:?}");
    }

    #[test]
    fn desktop_errors_survive_the_wire() {
        for e in [
            DesktopError::NoWindow("w1".into()),
            DesktopError::NoControl {
                window: "w".into(),
                control: "c".into(),
            },
            DesktopError::timeout(5),
            DesktopError::ActionFailed("no".into()),
            DesktopError::backend_with("cannot encode", std::fmt::Error),
        ] {
            let v = crate::server::desktop_error_json(&e);
            let back = desktop_error_from_json(&v).expect("known kind");
            assert_eq!(back.to_string(), e.to_string());
        }
    }
}
