//! An MCP server exposing a [`Desktop`] to any MCP client (`ufo mcp serve`).
//!
//! Tools: `list_windows`, `observe_window` (labelled controls as text + the annotated
//! screenshot as an image content), `act` (a GUI function on a control), `type_text`,
//! `launch_app`. The last three change the desktop and are refused (an error result saying
//! how to allow them) unless the server was made with `allow_actions`.

use std::sync::Arc;

use base64::Engine;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, Content, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerInfo, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{json, Map, Value};
use ufo_core::agent::resolve;
use ufo_core::{Desktop, UiAction, WindowInfo, WindowObservation};

/// Errors of the MCP server.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The MCP session could not start (the client did not initialise).
    #[error("the MCP client did not initialise the session: {0}")]
    Init(String),
    /// The server task failed.
    #[error("the MCP server stopped unexpectedly: {0}")]
    Task(String),
}

/// The tools that change the desktop (refused unless actions are allowed).
pub const ACTING_TOOLS: [&str; 3] = ["act", "type_text", "launch_app"];

/// The MCP server of one desktop.
#[derive(Clone)]
pub struct DesktopServer {
    desktop: Arc<dyn Desktop>,
    allow_actions: bool,
}

impl DesktopServer {
    /// A server over `desktop`; acting tools run only with `allow_actions`.
    pub fn new(desktop: Arc<dyn Desktop>, allow_actions: bool) -> Self {
        Self {
            desktop,
            allow_actions,
        }
    }

    /// The tools this server offers (acting ones too, marked as needing `--allow-actions`
    /// when they are refused).
    pub fn tools(&self) -> Vec<Tool> {
        let gate = if self.allow_actions {
            ""
        } else {
            " Refused unless the server runs with --allow-actions."
        };
        let obj = |v: Value| match v {
            Value::Object(m) => Arc::new(m),
            _ => Arc::new(Map::new()),
        };
        let window = json!({"type": "string", "description": "window id, title, or application name (from list_windows)"});
        let control = json!({"type": "string", "description": "control label number (from observe_window), id, or name"});
        vec![
            Tool::new(
                "list_windows",
                "List the top-level windows (id, title, application, process) and the applications that can be launched.",
                obj(json!({"type": "object", "properties": {}})),
            ),
            Tool::new(
                "observe_window",
                "Observe one window: its controls with label numbers, roles, names and values, and the screenshot annotated with the same labels (an image).",
                obj(json!({"type": "object", "properties": {"window": window}, "required": ["window"]})),
            ),
            Tool::new(
                "act",
                format!("Run a GUI function on a control of a window: click {{button, double}}, set_text {{text}}, type_keys {{keys}}, scroll {{direction, amount}}, select {{item}}, read_text, focus, click_at {{x, y}} (no control).{gate}"),
                obj(json!({"type": "object", "properties": {"window": window, "control": control,
                    "function": {"type": "string"}, "args": {"type": "object"}},
                    "required": ["window", "function"]})),
            ),
            Tool::new(
                "type_text",
                format!("Type text into a control of a window (keys like {{ENTER}} and chords like {{ctrl+s}} are understood).{gate}"),
                obj(json!({"type": "object", "properties": {"window": window, "control": control,
                    "text": {"type": "string"}}, "required": ["window", "control", "text"]})),
            ),
            Tool::new(
                "launch_app",
                format!("Launch an application by name and return its window.{gate}"),
                obj(json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]})),
            ),
        ]
    }

    /// Run one tool; `Err` is a tool-level failure (reported as an error result).
    pub async fn run_tool(
        &self,
        name: &str,
        args: &Map<String, Value>,
    ) -> Result<Vec<Content>, String> {
        if ACTING_TOOLS.contains(&name) && !self.allow_actions {
            return Err(format!(
                "refused: {name} changes the desktop, and this server was started without \
                 --allow-actions; restart it with `ufo mcp serve --allow-actions` to allow it"
            ));
        }
        let d = self.desktop.as_ref();
        match name {
            "list_windows" => {
                let windows = d.windows().await.map_err(|e| e.to_string())?;
                let launchable = d.launchable().await.map_err(|e| e.to_string())?;
                let text = json!({"windows": windows, "launchable": launchable});
                Ok(vec![Content::text(text.to_string())])
            }
            "observe_window" => {
                let w = self.window(str_arg(args, "window")?).await?;
                let obs = d.observe(&w.id).await.map_err(|e| e.to_string())?;
                let mut out = vec![Content::text(describe(&obs))];
                if let Some(shot) = obs.annotated.as_ref().or(obs.screenshot.as_ref()) {
                    let data = base64::engine::general_purpose::STANDARD.encode(shot.png.as_slice());
                    out.push(Content::image(data, "image/png"));
                }
                Ok(out)
            }
            "act" => {
                let w = self.window(str_arg(args, "window")?).await?;
                let function = str_arg(args, "function")?;
                let fargs = args.get("args").cloned().unwrap_or(Value::Object(Map::new()));
                let action = UiAction::parse(function, &fargs)?;
                let control = match args.get("control").and_then(Value::as_str) {
                    Some(c) if action.needs_control() => Some(self.control(&w, c).await?),
                    _ if action.needs_control() => {
                        return Err(format!("{} needs a control; pass `control`", action.name()))
                    }
                    _ => None,
                };
                let r = d
                    .act(&w.id, control.as_deref(), &action)
                    .await
                    .map_err(|e| e.to_string())?;
                Ok(vec![Content::text(if r.is_empty() { "ok".into() } else { r })])
            }
            "type_text" => {
                let w = self.window(str_arg(args, "window")?).await?;
                let control = self.control(&w, str_arg(args, "control")?).await?;
                let action = UiAction::TypeKeys {
                    keys: str_arg(args, "text")?.to_string(),
                };
                let r = d
                    .act(&w.id, Some(&control), &action)
                    .await
                    .map_err(|e| e.to_string())?;
                Ok(vec![Content::text(if r.is_empty() { "ok".into() } else { r })])
            }
            "launch_app" => {
                let w = d
                    .launch(str_arg(args, "name")?)
                    .await
                    .map_err(|e| e.to_string())?;
                Ok(vec![Content::text(
                    json!({"launched": w}).to_string(),
                )])
            }
            other => Err(format!(
                "no tool {other:?}; the tools are list_windows, observe_window, act, type_text, launch_app"
            )),
        }
    }

    /// A window by id, then by title / application / process name.
    async fn window(&self, wanted: &str) -> Result<WindowInfo, String> {
        let windows = self.desktop.windows().await.map_err(|e| e.to_string())?;
        if let Some(w) = windows.iter().find(|w| w.id == wanted) {
            return Ok(w.clone());
        }
        resolve("", wanted, windows.len(), |i| {
            vec![
                windows[i].title.as_str(),
                windows[i].app_name.as_str(),
                windows[i].process.as_str(),
            ]
        })
        .map(|i| windows[i].clone())
        .ok_or_else(|| format!("no window {wanted:?}; call list_windows for the windows"))
    }

    /// A control's id by label number, id, or name, in a fresh observation.
    async fn control(&self, w: &WindowInfo, wanted: &str) -> Result<String, String> {
        let obs = self
            .desktop
            .observe(&w.id)
            .await
            .map_err(|e| e.to_string())?;
        if let Some(c) = obs.controls.iter().find(|c| c.id == wanted) {
            return Ok(c.id.clone());
        }
        let label = if wanted.trim().parse::<usize>().is_ok() {
            wanted
        } else {
            ""
        };
        let text = if label.is_empty() { wanted } else { "" };
        resolve(label, text, obs.controls.len(), |i| {
            vec![obs.controls[i].name.as_str()]
        })
        .map(|i| obs.controls[i].id.clone())
        .ok_or_else(|| {
            format!(
                "no control {wanted:?} in {}; call observe_window for the labels",
                w.title
            )
        })
    }
}

fn str_arg<'a>(args: &'a Map<String, Value>, key: &str) -> Result<&'a str, String> {
    args.get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| format!("missing string argument {key:?}"))
}

/// The text part of an observation: the window and its labelled controls, as JSON.
fn describe(obs: &WindowObservation) -> String {
    let controls: Vec<Value> = obs
        .controls
        .iter()
        .enumerate()
        .map(|(i, c)| {
            json!({"label": i + 1, "id": c.id, "role": c.role, "name": c.name,
                   "value": c.value, "enabled": c.enabled, "rect": c.rect})
        })
        .collect();
    json!({"window": obs.window, "controls": controls, "warnings": obs.warnings}).to_string()
}

impl ServerHandler for DesktopServer {
    fn get_info(&self) -> ServerInfo {
        ServerInfo {
            capabilities: ServerCapabilities::builder().enable_tools().build(),
            server_info: Implementation {
                name: "ufo".into(),
                title: Some("ufo-rs desktop".into()),
                version: env!("CARGO_PKG_VERSION").into(),
                description: None,
                icons: None,
                website_url: None,
            },
            instructions: Some(
                "The desktop of ufo-rs: list_windows, then observe_window to see labelled \
                 controls and an annotated screenshot; act, type_text and launch_app change the \
                 desktop and need --allow-actions."
                    .into(),
            ),
            ..ServerInfo::default()
        }
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let args = request.arguments.unwrap_or_default();
        Ok(match self.run_tool(&request.name, &args).await {
            Ok(content) => CallToolResult::success(content),
            Err(e) => CallToolResult::error(vec![Content::text(e)]),
        })
    }
}

/// Serve `desktop` over stdio until the client closes the connection.
pub async fn serve_stdio(desktop: Arc<dyn Desktop>, allow_actions: bool) -> Result<(), ServeError> {
    let server = DesktopServer::new(desktop, allow_actions);
    let running = server
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| ServeError::Init(e.to_string()))?;
    running
        .waiting()
        .await
        .map_err(|e| ServeError::Task(e.to_string()))?;
    Ok(())
}
