//! An MCP server exposing a [`Desktop`] to any MCP client (`ufo mcp serve`).
//!
//! Tools: `list_windows`, `observe_window` (labelled controls as text + the annotated
//! screenshot as an image content), `act` (a GUI function on a control), `type_text`,
//! `launch_app`. The last three change the desktop and are refused (an error result saying
//! how to allow them) unless the server was made with `allow_actions`. `run_shell` (a shell
//! command on the served machine, for a remote HostAgent's `Bash` and a remote batch's task
//! set-up and evaluators) is offered only by a server made [`with_shell`](DesktopServer::with_shell);
//! any other server answers it as unsupported, as a remote desktop without a shell always did.
//!
//! Served over HTTP ([`for_tokens`](DesktopServer::for_tokens)), each call comes from a token
//! holder, and what it may do is decided by `ufo_core::access::on_server` with the server's
//! flags: a viewer token observes, and the acting tools and `run_shell` are neither listed nor
//! run for it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use base64::Engine;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientJsonRpcMessage, ClientNotification, ClientRequest,
    Content, Implementation, ListToolsResult, PaginatedRequestParams, ServerCapabilities,
    ServerInfo, ServerJsonRpcMessage, Tool,
};
use rmcp::service::RequestContext;
use rmcp::transport::Transport;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{json, Map, Value};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use ufo_core::access::{on_server, Caller, ServerFlags, ServerOp, Verdict};
use ufo_core::agent::app::cell_of_table;
use ufo_core::agent::{
    ambiguous_windows_message, refuse_disabled, resolve_control, resolve_window,
    unresolved_message, Unresolved, WindowKey, WindowUnresolved,
};
use ufo_core::{Control, Desktop, UiAction, WindowId, WindowInfo, WindowObservation};

/// Errors of the MCP server.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The MCP session could not start (the client did not initialise).
    #[error(
        "the MCP client did not initialise the session: {0}; the client must send \
         `initialize` first"
    )]
    Init(#[source] Box<rmcp::service::ServerInitializeError>),
    /// The server task failed.
    #[error("the MCP server stopped unexpectedly: {0}; run it again (with -v for details)")]
    Task(#[source] tokio::task::JoinError),
}

/// Why a tool call failed; its text is the error result the MCP client sees.
#[derive(Debug, thiserror::Error)]
pub enum ToolCallError {
    /// An acting tool on a server started without `--allow-actions`.
    #[error(
        "refused: {0} changes the desktop, and this server was started without \
         --allow-actions; restart it with --allow-actions (`ufo mcp serve --allow-actions` or \
         `ufo serve --allow-actions`) to allow it"
    )]
    Refused(String),
    /// A tool the caller's token may not use (a viewer's acting tools); the reason says why
    /// and what token is needed.
    #[error("refused: {0}")]
    NotForCaller(String),
    /// A call over HTTP that carries no token holder (never happens behind the token check).
    #[error("refused: this call carries no token; send `Authorization: Bearer TOKEN`")]
    NoCaller,
    /// The desktop failed; its message says what to do.
    #[error(transparent)]
    Desktop(#[from] ufo_core::DesktopError),
    /// No tool of that name.
    #[error(
        "no tool {0:?}; the tools are list_windows, observe_window, act, type_text, launch_app"
    )]
    UnknownTool(String),
    /// A required argument is missing or not a string.
    #[error("missing string argument {0:?}")]
    MissingArgument(String),
    /// No window matches.
    #[error("no window {0:?}; call list_windows for the windows")]
    NoWindow(String),
    /// The function or its arguments are invalid, or the control was not found: the text
    /// the agents' own resolution gives (it lists the candidates).
    #[error("{0}")]
    Invalid(String),
}

/// The tools that change the desktop (refused unless actions are allowed).
pub const ACTING_TOOLS: [&str; 3] = ["act", "type_text", "launch_app"];

/// What a tool asks of the server, for the access decision; `None` for a name that is no
/// tool (answered as unknown).
fn tool_op(name: &str) -> Option<ServerOp> {
    match name {
        "list_windows" | "observe_window" => Some(ServerOp::Observe),
        SHELL_TOOL => Some(ServerOp::Shell),
        n if ACTING_TOOLS.contains(&n) => Some(ServerOp::Act),
        _ => None,
    }
}

/// The tool that runs a shell command on the served machine (only with `--allow-shell`).
pub const SHELL_TOOL: &str = "run_shell";

/// What a server without `--allow-shell` answers to `run_shell` (as an unsupported desktop
/// function, so a client treats it as a desktop that has no shell).
pub const NO_SHELL: &str = "this served desktop runs no shell commands: its `ufo serve` was \
     started without --allow-shell; restart it with --allow-actions --allow-shell to allow \
     them, or launch applications by name instead";

/// Who the calls of a [`DesktopServer`] come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Callers {
    /// The user who started it (`ufo mcp serve` over stdio): the server's flags decide alone.
    Owner,
    /// Token holders (`ufo serve`): each request's `tokens::Holder`, put on the HTTP request
    /// by the token check; a call without one is refused.
    Tokens,
}

/// The MCP server of one desktop.
#[derive(Clone)]
pub struct DesktopServer {
    desktop: Arc<dyn Desktop>,
    allow_actions: bool,
    /// Whether `run_shell` runs commands (`--allow-shell`).
    allow_shell: bool,
    /// Who calls it.
    callers: Callers,
    /// window id → the controls of the last observation returned for it: labels mean what
    /// the client saw there, not what a fresh observation would number.
    seen: Arc<Mutex<HashMap<WindowId, Vec<Control>>>>,
}

impl DesktopServer {
    /// A server over `desktop`; acting tools run only with `allow_actions`.
    pub fn new(desktop: Arc<dyn Desktop>, allow_actions: bool) -> Self {
        Self {
            desktop,
            allow_actions,
            allow_shell: false,
            callers: Callers::Owner,
            seen: Arc::default(),
        }
    }

    /// Served to token holders over HTTP: each call is decided for the token that made it
    /// (`ufo_core::access::on_server`), so a viewer token only observes.
    pub fn for_tokens(mut self) -> Self {
        self.callers = Callers::Tokens;
        self
    }

    /// What the server was started to allow, as the access decision reads it.
    fn flags(&self) -> ServerFlags {
        ServerFlags {
            models: false,
            actions: self.allow_actions,
            shell: self.allow_shell,
        }
    }

    /// Whether `caller` may call `name`: the server's flags first (with the refusals clients
    /// know: "needs --allow-actions", and `run_shell` as unsupported), then the caller's role.
    /// Both from `ufo_core::access::on_server`.
    pub fn permit(&self, caller: &Caller, name: &str) -> Result<(), ToolCallError> {
        let Some(op) = tool_op(name) else {
            return Ok(());
        };
        let flags = self.flags();
        if !on_server(&Caller::Owner, flags, op).allowed() {
            return Err(match op {
                ServerOp::Shell => ufo_core::DesktopError::Unsupported(NO_SHELL.into()).into(),
                _ => ToolCallError::Refused(name.to_string()),
            });
        }
        match on_server(caller, flags, op) {
            Verdict::Allow => Ok(()),
            // a shell the caller may not use is no shell to it, as on a server without one
            Verdict::Forbidden(why) if op == ServerOp::Shell => {
                Err(ufo_core::DesktopError::Unsupported(why).into())
            }
            Verdict::Forbidden(why) => Err(ToolCallError::NotForCaller(why)),
            Verdict::Hidden => Err(ToolCallError::UnknownTool(name.to_string())),
        }
    }

    /// The tools `caller` may see: every tool its role may use on a server with the flags
    /// that make the tool possible (acting tools are listed, marked, without
    /// `--allow-actions`, as before; `run_shell` only with `--allow-shell`).
    pub fn tools_for(&self, caller: &Caller) -> Vec<Tool> {
        let possible = ServerFlags {
            actions: true,
            ..self.flags()
        };
        self.tools()
            .into_iter()
            .filter(|t| match tool_op(&t.name) {
                Some(op) => on_server(caller, possible, op).allowed(),
                None => true,
            })
            .collect()
    }

    /// The caller of an MCP request: the owner over stdio, else the token holder the HTTP
    /// request carried.
    fn caller_of(&self, extensions: &rmcp::model::Extensions) -> Result<Caller, ToolCallError> {
        match self.callers {
            Callers::Owner => Ok(Caller::Owner),
            Callers::Tokens => extensions
                .get::<axum::http::request::Parts>()
                .and_then(|parts| parts.extensions.get::<crate::http::tokens::Holder>())
                .map(|holder| Caller::Token(holder.principal.clone()))
                .ok_or(ToolCallError::NoCaller),
        }
    }

    /// Also offer `run_shell`: shell commands on the served machine, bounded by the desktop's
    /// own shell limits. Only with `allow` and acting tools allowed: a shell can do anything
    /// an action can.
    pub fn with_shell(mut self, allow: bool) -> Self {
        self.allow_shell = allow && self.allow_actions;
        self
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
        let window = json!({"type": "string", "description": "window id, title (or part of it), or application name (from list_windows)"});
        let control = json!({"type": "string", "description": "kept for compatibility: a label number when it is all digits, else the control's id or name; prefer `label` or `name`, which never mix (a button named \"1\" is `name: \"1\"`)"});
        let label = json!({"type": "integer", "minimum": 1, "description": "the control's label number in the last observe_window of this window"});
        let name = json!({"type": "string", "description": "the control's name, or its entry copied as `role \"name\"` (e.g. `menu \"Slide\"`); always a name, even when made of digits"});
        let mut tools = vec![
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
                format!("Run a GUI function on a control of a window, named by `label` (its number in observe_window) and/or `name` (its name; digits are a name): click {{button, double}}, set_text {{text}}, type_keys {{keys}}, scroll {{direction, amount}}, select {{item}}, read_text, focus, hover (the pointer rests on the control, no click: a tooltip shows in the next observe_window), click_at {{x, y}} (no control), read_pixels (no control: the window's pixels are read for text; the next observe_window lists what is found).{gate}"),
                obj(json!({"type": "object", "properties": {"window": window, "label": label,
                    "name": name, "control": control,
                    "function": {"type": "string"}, "args": {"type": "object"}},
                    "required": ["window", "function"]})),
            ),
            Tool::new(
                "type_text",
                format!("Type text into a control of a window, named by `label` and/or `name` (or `control`) (keys like {{ENTER}} and chords like {{ctrl+s}} are understood).{gate}"),
                obj(json!({"type": "object", "properties": {"window": window, "label": label,
                    "name": name, "control": control,
                    "text": {"type": "string"}}, "required": ["window", "text"]})),
            ),
            Tool::new(
                "launch_app",
                format!("Launch an application by name and return its window.{gate}"),
                obj(json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]})),
            ),
        ];
        if self.allow_shell {
            tools.push(Tool::new(
                SHELL_TOOL,
                "Run a shell command on the served machine (its desktop's environment, bounded in \
                 time and output) and return {\"code\", \"stdout\", \"stderr\", \"launched\"}.",
                obj(
                    json!({"type": "object", "properties": {"command": {"type": "string"}},
                    "required": ["command"]}),
                ),
            ));
        }
        tools
    }

    /// Run one tool; `Err` is a tool-level failure (reported as an error result).
    pub async fn run_tool(
        &self,
        name: &str,
        args: &Map<String, Value>,
    ) -> Result<Vec<Content>, ToolCallError> {
        self.run_tool_full(name, args)
            .await
            .map(|(content, _)| content)
    }

    /// Run one tool: its contents and, for `act` with `control_id`, `settle` or
    /// `final_state` (what the remote desktop adapter sends), a structured result
    /// `{"result", "changed", "final_state"}`.
    pub async fn run_tool_full(
        &self,
        name: &str,
        args: &Map<String, Value>,
    ) -> Result<(Vec<Content>, Option<Value>), ToolCallError> {
        self.run_tool_as(&Caller::Owner, name, args).await
    }

    /// [`run_tool_full`](Self::run_tool_full) for `caller`: refused when the server's flags or
    /// the caller's role do not allow the tool ([`permit`](Self::permit)).
    pub async fn run_tool_as(
        &self,
        caller: &Caller,
        name: &str,
        args: &Map<String, Value>,
    ) -> Result<(Vec<Content>, Option<Value>), ToolCallError> {
        self.permit(caller, name)?;
        let d = self.desktop.as_ref();
        match name {
            "list_windows" => {
                let windows = d.windows().await?;
                let launchable = d.launchable().await?;
                let text = json!({"windows": windows, "launchable": launchable});
                Ok((vec![Content::text(text.to_string())], None))
            }
            "observe_window" => Ok((self.observe_tool(args).await?, None)),
            "act" => self.act_tool(args).await,
            "type_text" => Ok((vec![self.type_text_tool(args).await?], None)),
            SHELL_TOOL => {
                let out = d.shell(str_arg(args, "command")?).await?;
                let text = serde_json::to_string(&out).map_err(|e| {
                    ToolCallError::Invalid(format!("cannot encode the output: {e}"))
                })?;
                Ok((vec![Content::text(text)], None))
            }
            "launch_app" => {
                let w = d.launch(str_arg(args, "name")?).await?;
                Ok((
                    vec![Content::text(json!({"launched": w}).to_string())],
                    None,
                ))
            }
            other => Err(ToolCallError::UnknownTool(other.to_string())),
        }
    }

    /// `observe_window`: the window's description and its screenshots (the annotated one
    /// unless `clean_screenshot`), remembered for the labels of later calls.
    async fn observe_tool(&self, args: &Map<String, Value>) -> Result<Vec<Content>, ToolCallError> {
        let w = self.window(str_arg(args, "window")?).await?;
        let obs = self.desktop.observe(&w.id).await?;
        self.remember(&w.id, &obs);
        let clean = args.get("clean_screenshot").and_then(Value::as_bool) == Some(true);
        let images = images_of(&obs, clean);
        let kinds: Vec<&str> = images.iter().map(|(kind, _)| *kind).collect();
        let mut out = vec![Content::text(describe(&obs, &kinds))];
        for (_, shot) in images {
            let data = base64::engine::general_purpose::STANDARD.encode(shot.png.as_slice());
            out.push(Content::image(data, "image/png"));
        }
        Ok(out)
    }

    /// `act`: a window function, or a GUI action on the control named by `control_id`,
    /// `label` or `name`; with the structured result [`after_act`](Self::after_act) asks for.
    async fn act_tool(
        &self,
        args: &Map<String, Value>,
    ) -> Result<(Vec<Content>, Option<Value>), ToolCallError> {
        let w = self.window(str_arg(args, "window")?).await?;
        let function = str_arg(args, "function")?;
        if let Some(done) = self.window_function(&w, function).await? {
            return Ok((vec![Content::text(done)], None));
        }
        let fargs = args
            .get("args")
            .cloned()
            .unwrap_or(Value::Object(Map::new()));
        let action = UiAction::parse(function, &fargs).map_err(ToolCallError::Invalid)?;
        let exact = args.get("control_id").and_then(Value::as_str);
        let control = if let Some(id) = exact.filter(|_| action.needs_control()) {
            // the remote desktop adapter names the control by the id it observed
            Some(id.to_string())
        } else if action.needs_control() {
            let wanted = Wanted::from_args(args)?.ok_or_else(|| {
                ToolCallError::Invalid(format!(
                    "{} needs a control; pass `label` (its number in observe_window) or `name`",
                    action.name()
                ))
            })?;
            Some(self.control(&w, &wanted, &action).await?)
        } else {
            None
        };
        let r = self.desktop.act(&w.id, control.as_deref(), &action).await?;
        let structured = self.after_act(args, &r).await;
        Ok((
            vec![Content::text(if r.is_empty() { "ok".into() } else { r })],
            structured,
        ))
    }

    /// `type_text`: types the text into the control named by `label` or `name`.
    async fn type_text_tool(&self, args: &Map<String, Value>) -> Result<Content, ToolCallError> {
        let w = self.window(str_arg(args, "window")?).await?;
        let action = UiAction::TypeKeys {
            keys: str_arg(args, "text")?.to_string(),
        };
        let wanted = Wanted::from_args(args)?.ok_or_else(|| {
            ToolCallError::Invalid(
                "type_text needs a control; pass `label` (its number in observe_window) or `name`"
                    .into(),
            )
        })?;
        let control = self.control(&w, &wanted, &action).await?;
        let r = self.desktop.act(&w.id, Some(&control), &action).await?;
        Ok(Content::text(if r.is_empty() { "ok".into() } else { r }))
    }

    /// The window functions of `act` beside the GUI functions: `activate_window` and
    /// `close_window` (the remote desktop adapter's `activate` and `close`); `None` for any
    /// other function.
    async fn window_function(
        &self,
        w: &WindowInfo,
        function: &str,
    ) -> Result<Option<String>, ToolCallError> {
        match function {
            "activate_window" => self.desktop.activate(&w.id).await?,
            "close_window" => self.desktop.close(&w.id).await?,
            _ => return Ok(None),
        }
        Ok(Some("ok".into()))
    }

    /// After an `act`: settle when asked (`settle: true`), and the structured result the
    /// remote desktop adapter reads (`None` when the call asked for none of it).
    async fn after_act(&self, args: &Map<String, Value>, result: &str) -> Option<Value> {
        let flag = |k: &str| args.get(k).and_then(Value::as_bool) == Some(true);
        let settle = flag("settle");
        let final_state = flag("final_state");
        if !settle && !final_state && !args.contains_key("control_id") {
            return None;
        }
        if settle {
            self.desktop.settle().await;
        }
        let mut out = json!({"result": result, "changed": self.desktop.last_action_changed()});
        if final_state {
            out["final_state"] = self.desktop.final_state().unwrap_or(Value::Null);
        }
        Some(out)
    }

    /// A window by the agents' rule (docs/resolution.md, "Window resolution"): id, exact title, title in
    /// any case, application or process name, part of the title. A name several windows fit
    /// equally is an error listing them; none is picked or raised.
    async fn window(&self, wanted: &str) -> Result<WindowInfo, ToolCallError> {
        let windows = self.desktop.windows().await?;
        let keys: Vec<WindowKey<'_>> = windows.iter().map(WindowKey::from).collect();
        match resolve_window("", wanted, &keys) {
            Ok((i, _)) => Ok(windows[i].clone()),
            Err(WindowUnresolved::Ambiguous { fit, candidates }) => {
                Err(ToolCallError::Invalid(ambiguous_windows_message(
                    wanted.trim(),
                    fit,
                    &candidates,
                    &keys,
                    false,
                    "pass the id (or the whole title) of the window you mean as `window`",
                )))
            }
            Err(WindowUnresolved::NoMatch) => Err(ToolCallError::NoWindow(wanted.to_string())),
        }
    }

    /// Keep the controls of an observation returned to the client.
    fn remember(&self, window: &WindowId, obs: &WindowObservation) {
        if let Ok(mut seen) = self.seen.lock() {
            seen.insert(window.clone(), obs.controls.clone());
        }
    }

    /// The id of the control `wanted` names, resolved for `action` against the last
    /// observation returned for the window (a window not observed yet is observed now), by
    /// the agents' rule (docs/resolution.md, "Control resolution"). A control observed as disabled is
    /// refused for an action that needs it enabled.
    async fn control(
        &self,
        w: &WindowInfo,
        wanted: &Wanted,
        action: &UiAction,
    ) -> Result<String, ToolCallError> {
        let known = self.seen.lock().ok().and_then(|s| s.get(&w.id).cloned());
        let controls = match known {
            Some(c) => c,
            None => {
                let obs = self.desktop.observe(&w.id).await?;
                self.remember(&w.id, &obs);
                obs.controls
            }
        };
        let function = action.name();
        let (label, text) = wanted.label_and_text();
        // the old `control` may be the control's id
        let by_id = match wanted {
            Wanted::Control(c) => controls.iter().position(|x| x.id == *c),
            Wanted::LabelName { .. } => None,
        };
        let found = match by_id
            .map(Ok)
            .unwrap_or_else(|| resolve_control(&label, &text, &controls, function))
        {
            Ok(i) => (controls[i].clone(), (i + 1).to_string()),
            // a spreadsheet cell the observation does not list (an empty one), by its address
            Err(Unresolved::NoMatch) if cell_of_table(&text, &controls).is_some() => {
                match cell_of_table(&text, &controls) {
                    Some(c) => (c, String::new()),
                    None => return Err(ToolCallError::Invalid("no cell".to_string())),
                }
            }
            Err(why) => {
                return Err(ToolCallError::Invalid(format!(
                    "{} (window {}; call observe_window for the labels)",
                    unresolved_message(&why, &label, &text, function, &controls),
                    w.title
                )))
            }
        };
        let (control, label) = found;
        if let Some(why) = refuse_disabled(action, &control, &label) {
            return Err(ToolCallError::Invalid(format!(
                "{why} (window {}; call observe_window to see its state now)",
                w.title
            )));
        }
        Ok(control.id)
    }
}

/// Which control a tool call names: `label` (a number) and `name` (always a name), or the
/// older `control` (a label when it is all digits, else an id or a name).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Wanted {
    /// `label` and/or `name`.
    LabelName {
        /// The label number, when given.
        label: Option<u64>,
        /// The name, when given.
        name: Option<String>,
    },
    /// `control`, with its compatible meaning.
    Control(String),
}

impl Wanted {
    /// Read `label`, `name` and `control` from a tool call's arguments; `None` when none is
    /// given. A `label` must be a positive whole number (or a string of digits).
    fn from_args(args: &Map<String, Value>) -> Result<Option<Self>, ToolCallError> {
        let label = match args.get("label") {
            None | Some(Value::Null) => None,
            Some(Value::Number(n)) if n.as_u64().is_some_and(|n| n >= 1) => n.as_u64(),
            Some(Value::String(s)) if s.trim().parse::<u64>().is_ok_and(|n| n >= 1) => {
                s.trim().parse::<u64>().ok()
            }
            Some(other) => {
                return Err(ToolCallError::Invalid(format!(
                    "`label` must be a control's label number from observe_window (1, 2, ...), \
                     not {other}; pass a name as `name`"
                )))
            }
        };
        let name = match args.get("name") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(other) => Some(other.to_string()),
        };
        if label.is_some() || name.is_some() {
            return Ok(Some(Wanted::LabelName { label, name }));
        }
        Ok(args
            .get("control")
            .and_then(Value::as_str)
            .map(|c| Wanted::Control(c.to_string())))
    }

    /// The `ControlLabel` and `ControlText` the agents' resolution gets: a name is never
    /// turned into a label; the old `control` is a label when it is all digits.
    fn label_and_text(&self) -> (String, String) {
        match self {
            Wanted::LabelName { label, name } => (
                label.map(|n| n.to_string()).unwrap_or_default(),
                name.clone().unwrap_or_default(),
            ),
            Wanted::Control(c) if c.trim().parse::<usize>().is_ok() => (c.clone(), String::new()),
            Wanted::Control(c) => (String::new(), c.clone()),
        }
    }
}

fn str_arg<'a>(args: &'a Map<String, Value>, key: &str) -> Result<&'a str, ToolCallError> {
    args.get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| ToolCallError::MissingArgument(key.to_string()))
}

/// The images `observe_window` sends, in order, with what each is (`annotated` or
/// `screenshot`): the annotated screenshot (or the clean one when there is none), and the
/// clean one after it when `clean` is asked.
fn images_of(obs: &WindowObservation, clean: bool) -> Vec<(&'static str, &ufo_core::Screenshot)> {
    let mut out = Vec::new();
    match (&obs.annotated, &obs.screenshot) {
        (Some(a), shot) => {
            out.push(("annotated", a));
            if let Some(s) = shot.as_ref().filter(|_| clean) {
                out.push(("screenshot", s));
            }
        }
        (None, Some(s)) => out.push(("screenshot", s)),
        (None, None) => {}
    }
    out
}

/// The text part of an observation: the window and its labelled controls (with their
/// states when set), and what the images after it are, as JSON.
fn describe(obs: &WindowObservation, images: &[&str]) -> String {
    let controls: Vec<Value> = obs
        .controls
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let mut v = json!({"label": i + 1, "id": c.id, "role": c.role, "name": c.name,
                   "value": c.value, "enabled": c.enabled, "rect": c.rect});
            if let (Value::Object(m), Ok(Value::Object(states))) =
                (&mut v, serde_json::to_value(c.states))
            {
                m.extend(states);
            }
            // read in the pixels (docs/sight.md); tree controls say nothing, as before
            if let (Value::Object(m), false) = (&mut v, c.source.is_tree()) {
                m.insert("source".into(), json!(c.source));
            }
            v
        })
        .collect();
    let mut v = json!({"window": obs.window, "controls": controls, "warnings": obs.warnings,
           "images": images});
    // said only where true: observations of desktops without sight are as they were
    if let (Value::Object(m), true) = (&mut v, obs.pixels_readable) {
        m.insert("pixels_readable".into(), json!(true));
    }
    // where the pixels changed over the last action (docs/sight.md, "Change evidence"), only
    // where they were compared
    if let (Value::Object(m), Some(px)) = (&mut v, &obs.pixel_changes) {
        m.insert("pixel_changes".into(), json!(px));
    }
    v.to_string()
}

/// A desktop failure as structured data, so that a remote client gets the same
/// [`ufo_core::DesktopError`] back (see [`desktop_error_from_json`]).
pub fn desktop_error_json(e: &ufo_core::DesktopError) -> Value {
    use ufo_core::DesktopError as E;
    let (kind, detail) = match e {
        E::NoWindow(w) => ("no_window", json!(w)),
        E::NoControl { window, control } => {
            ("no_control", json!({"window": window, "control": control}))
        }
        E::UnknownApp(a) => ("unknown_app", json!(a)),
        E::ActionFailed(m) => ("action_failed", json!(m)),
        E::Unsupported(m) => ("unsupported", json!(m)),
        E::Observe(m) => ("observe", json!(m)),
        E::Timeout { ms, .. } => ("timeout", json!(ms)),
        // (the source chain stays on this machine: the client gets its text)
        E::Backend(source) => ("backend", json!(source.to_string())),
        E::Lost(m) => ("lost", json!(m)),
    };
    json!({"desktop_error": {"kind": kind, "detail": detail}})
}

/// The [`ufo_core::DesktopError`] a structured error result of this server names, if any.
pub fn desktop_error_from_json(v: &Value) -> Option<ufo_core::DesktopError> {
    use ufo_core::DesktopError as E;
    let e = v.get("desktop_error")?;
    let detail = e.get("detail")?;
    let text = || detail.as_str().map(str::to_string);
    Some(match e.get("kind")?.as_str()? {
        "no_window" => E::NoWindow(text()?),
        "no_control" => E::NoControl {
            window: detail.get("window")?.as_str()?.to_string(),
            control: detail.get("control")?.as_str()?.to_string(),
        },
        "unknown_app" => E::UnknownApp(text()?),
        "action_failed" => E::ActionFailed(text()?),
        "unsupported" => E::Unsupported(text()?),
        "observe" => E::Observe(text()?),
        "timeout" => E::timeout(detail.as_u64()?),
        "backend" => E::backend(text()?),
        "lost" => E::Lost(text()?),
        _ => return None,
    })
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
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tools = match self.caller_of(&context.extensions) {
            Ok(caller) => self.tools_for(&caller),
            Err(_) => Vec::new(),
        };
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let args = request.arguments.unwrap_or_default();
        let outcome = match self.caller_of(&context.extensions) {
            Ok(caller) => self.run_tool_as(&caller, &request.name, &args).await,
            Err(e) => Err(e),
        };
        Ok(match outcome {
            Ok((content, structured)) => {
                let mut r = CallToolResult::success(content);
                r.structured_content = structured;
                r
            }
            Err(e) => {
                let mut r = CallToolResult::error(vec![Content::text(e.to_string())]);
                if let ToolCallError::Desktop(d) = &e {
                    r.structured_content = Some(desktop_error_json(d));
                }
                r
            }
        })
    }
}

/// Longest request line `ufo mcp serve` reads; a longer line is answered with a parse error
/// and skipped without being held in memory whole.
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// JSON-RPC error codes the line filter answers with.
const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;

/// Serve `desktop` over stdio until the client closes the connection.
///
/// A line that is not a JSON-RPC message gets an error response and the server keeps serving
/// (rmcp's own stdio transport would end the session on it).
pub async fn serve_stdio(
    desktop: Arc<dyn Desktop>,
    allow_actions: bool,
    allow_shell: bool,
) -> Result<(), ServeError> {
    let server = DesktopServer::new(desktop, allow_actions).with_shell(allow_shell);
    serve_lines(
        server,
        tokio::io::stdin(),
        tokio::io::stdout(),
        MAX_LINE_BYTES,
    )
    .await
}

/// Serve `server` over newline-delimited JSON-RPC on `input`/`output`, answering malformed
/// lines (not JSON, not a message, longer than `max_line` bytes) with a JSON-RPC error.
pub async fn serve_lines<R, W>(
    server: DesktopServer,
    input: R,
    output: W,
    max_line: usize,
) -> Result<(), ServeError>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    // One writer owns the output so that rmcp's answers and the filter's error answers are
    // each written as whole lines, never interleaved.
    let (out_tx, out_rx) = mpsc::channel::<Vec<u8>>(64);
    let writer = tokio::spawn(write_lines(output, out_rx));
    let (msg_tx, msg_rx) = mpsc::channel::<ClientJsonRpcMessage>(16);
    let reader = tokio::spawn(read_lines(input, msg_tx, out_tx.clone(), max_line));
    let transport = LineTransport {
        incoming: msg_rx,
        outgoing: Some(out_tx),
    };
    let result = async {
        let running = server
            .serve(transport)
            .await
            .map_err(|e| ServeError::Init(Box::new(e)))?;
        running.waiting().await.map_err(ServeError::Task)?;
        Ok(())
    }
    .await;
    reader.abort();
    let _ = reader.await;
    // Every sender is gone now: the writer flushes what is queued and ends (bounded, in case
    // the output blocks).
    let _ = tokio::time::timeout(std::time::Duration::from_secs(5), writer).await;
    result
}

/// rmcp's side of the line filter: messages that parsed, answers to the writer.
struct LineTransport {
    incoming: mpsc::Receiver<ClientJsonRpcMessage>,
    outgoing: Option<mpsc::Sender<Vec<u8>>>,
}

impl Transport<RoleServer> for LineTransport {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: ServerJsonRpcMessage,
    ) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send + 'static {
        let tx = self.outgoing.clone();
        async move {
            let tx = tx.ok_or_else(|| {
                std::io::Error::new(
                    std::io::ErrorKind::NotConnected,
                    "the MCP transport is closed",
                )
            })?;
            let mut line = serde_json::to_vec(&item).map_err(std::io::Error::other)?;
            line.push(b'\n');
            tx.send(line).await.map_err(|_| {
                std::io::Error::new(std::io::ErrorKind::BrokenPipe, "the output is closed")
            })
        }
    }

    fn receive(
        &mut self,
    ) -> impl std::future::Future<Output = Option<ClientJsonRpcMessage>> + Send {
        // Cancel-safe: rmcp polls this inside a select!.
        self.incoming.recv()
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.outgoing = None;
        Ok(())
    }
}

async fn write_lines<W: AsyncWrite + Unpin>(
    mut output: W,
    mut lines: mpsc::Receiver<Vec<u8>>,
) -> std::io::Result<()> {
    while let Some(line) = lines.recv().await {
        output.write_all(&line).await?;
        output.flush().await?;
    }
    Ok(())
}

/// What one input line is.
#[derive(Debug)]
enum Incoming {
    /// A JSON-RPC message for rmcp.
    Message(Box<ClientJsonRpcMessage>),
    /// Not a message: this error response goes back (one line, newline included).
    Reply(Vec<u8>),
    /// Nothing to do (a blank line, or a notification rmcp does not know: JSON-RPC forbids
    /// answering notifications).
    Ignore,
}

/// The outcome of reading one line.
#[derive(Debug, PartialEq, Eq)]
enum Line {
    /// A line is in the buffer (without its newline).
    Complete,
    /// The line was longer than the cap; it was skipped up to its newline.
    TooLong,
    /// End of input.
    Eof,
}

/// Read one line into `buf` (cleared first) holding at most `max` bytes of it: a longer line
/// is consumed up to its newline and reported as [`Line::TooLong`]. A last line without a
/// newline counts as a line.
async fn read_bounded_line<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    buf: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<Line> {
    buf.clear();
    let mut too_long = false;
    let mut any = false;
    loop {
        let chunk = reader.fill_buf().await?;
        if chunk.is_empty() {
            return Ok(match (too_long, any) {
                (true, _) => Line::TooLong,
                (false, true) => Line::Complete,
                (false, false) => Line::Eof,
            });
        }
        any = true;
        let (part, used, done) = match chunk.iter().position(|b| *b == b'\n') {
            Some(i) => (&chunk[..i], i + 1, true),
            None => (chunk, chunk.len(), false),
        };
        if !too_long {
            if buf.len() + part.len() > max {
                too_long = true;
                buf.clear();
                buf.shrink_to(64 * 1024);
            } else {
                buf.extend_from_slice(part);
            }
        }
        reader.consume(used);
        if done {
            return Ok(if too_long {
                Line::TooLong
            } else {
                Line::Complete
            });
        }
    }
}

/// A JSON-RPC error response line.
fn error_line(id: Value, code: i64, message: String) -> Vec<u8> {
    let mut line = json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
        .to_string()
        .into_bytes();
    line.push(b'\n');
    line
}

/// Sort one input line (without its newline).
fn classify(line: &[u8]) -> Incoming {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return Incoming::Ignore;
    }
    let message_error = match serde_json::from_slice::<ClientJsonRpcMessage>(line) {
        // A message with an `id` member that is not a string or an integer (an object, a
        // float, a bool, null, a number too large) reads as a notification, since the id is
        // not a field of one: JSON-RPC calls it an Invalid Request, answered with id null.
        Ok(ClientJsonRpcMessage::Notification(_)) if has_id(line) => {
            return Incoming::Reply(error_line(
                Value::Null,
                INVALID_REQUEST,
                "invalid request: the \"id\" must be a string or an integer (at most \
                 9223372036854775807); send {\"jsonrpc\":\"2.0\",\"id\":1,\"method\":...}"
                    .into(),
            ))
        }
        Ok(m) => return Incoming::Message(Box::new(m)),
        Err(e) => e,
    };
    let value = match serde_json::from_slice::<Value>(line) {
        Ok(v) => v,
        Err(e) => {
            return Incoming::Reply(error_line(
                Value::Null,
                PARSE_ERROR,
                format!(
                    "parse error: the line is not JSON ({e}); send one JSON-RPC message per line"
                ),
            ))
        }
    };
    let id = value.get("id");
    if id.is_none() && value.get("method").is_some_and(Value::is_string) {
        return Incoming::Ignore;
    }
    // echoed only when it is an id JSON-RPC allows (a string, an integer rmcp can hold)
    let id = match id {
        Some(v @ Value::String(_)) => v.clone(),
        Some(Value::Number(n)) if n.as_i64().is_some() => Value::Number(n.clone()),
        _ => Value::Null,
    };
    Incoming::Reply(error_line(
        id,
        INVALID_REQUEST,
        format!(
            "invalid request: the line is JSON but not a JSON-RPC 2.0 message this server \
             understands ({message_error}); send {{\"jsonrpc\":\"2.0\",\"id\":...,\"method\":...}}"
        ),
    ))
}

/// Whether a line that is a JSON object has an `id` member (of any type).
fn has_id(line: &[u8]) -> bool {
    serde_json::from_slice::<serde_json::Map<String, Value>>(line)
        .is_ok_and(|m| m.contains_key("id"))
}

/// Where the MCP handshake is. rmcp ends the session when the first message is not
/// `initialize` or the next is not `notifications/initialized`, so the filter answers (or
/// drops) anything else until then.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    AwaitInitialize,
    AwaitInitialized,
    Running,
}

/// Let `message` through to rmcp, or answer / drop it when the handshake is not done.
fn admit(phase: &mut Phase, message: ClientJsonRpcMessage) -> Incoming {
    let refuse = |id: &rmcp::model::RequestId, what: &str| {
        let id = serde_json::to_value(id).unwrap_or(Value::Null);
        Incoming::Reply(error_line(
            id,
            INVALID_REQUEST,
            format!("the MCP session is not initialised yet: {what}"),
        ))
    };
    match (*phase, &message) {
        (Phase::Running, _) => Incoming::Message(Box::new(message)),
        (Phase::AwaitInitialize, ClientJsonRpcMessage::Request(r)) => match r.request {
            ClientRequest::InitializeRequest(_) => {
                *phase = Phase::AwaitInitialized;
                Incoming::Message(Box::new(message))
            }
            _ => refuse(&r.id, "send `initialize` first"),
        },
        (Phase::AwaitInitialized, ClientJsonRpcMessage::Notification(n))
            if matches!(
                n.notification,
                ClientNotification::InitializedNotification(_)
            ) =>
        {
            *phase = Phase::Running;
            Incoming::Message(Box::new(message))
        }
        (Phase::AwaitInitialized, ClientJsonRpcMessage::Request(r)) => {
            refuse(&r.id, "send `notifications/initialized` first")
        }
        // Notifications, responses and errors before the handshake is done: nothing to answer.
        _ => Incoming::Ignore,
    }
}

/// The line filter: read `input` line by line, forward messages to rmcp, answer the rest.
async fn read_lines<R: AsyncRead + Unpin>(
    input: R,
    to_server: mpsc::Sender<ClientJsonRpcMessage>,
    out: mpsc::Sender<Vec<u8>>,
    max_line: usize,
) {
    let mut reader = BufReader::with_capacity(64 * 1024, input);
    let mut buf = Vec::new();
    let mut phase = Phase::AwaitInitialize;
    loop {
        let incoming = match read_bounded_line(&mut reader, &mut buf, max_line).await {
            Ok(Line::Eof) => break,
            Ok(Line::Complete) => match classify(&buf) {
                Incoming::Message(m) => admit(&mut phase, *m),
                other => other,
            },
            Ok(Line::TooLong) => Incoming::Reply(error_line(
                Value::Null,
                PARSE_ERROR,
                format!(
                    "parse error: the line is longer than {max_line} bytes and was skipped; \
                     send smaller messages"
                ),
            )),
            Err(e) => {
                tracing::warn!("cannot read the MCP input: {e}");
                break;
            }
        };
        match incoming {
            Incoming::Message(m) => {
                if to_server.send(*m).await.is_err() {
                    break;
                }
            }
            Incoming::Reply(line) => {
                tracing::warn!(
                    "answered a malformed MCP input line with an error: {}",
                    String::from_utf8_lossy(&line).trim_end()
                );
                if out.send(line).await.is_err() {
                    break;
                }
            }
            Incoming::Ignore => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{duplex, AsyncBufReadExt};

    const SCENARIO: &str = r#"{"apps": [{"name": "Writer", "controls": [
        {"id": "name", "role": "edit", "name": "File name", "value": ""}]}]}"#;

    const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#;

    /// A control read in the pixels says so (docs/sight.md); a tree control's JSON is as it
    /// was, without `source`.
    #[test]
    fn a_detected_control_is_described_with_its_source() {
        let tree: ufo_core::Control =
            serde_json::from_value(json!({"id": "ok", "role": "button", "name": "OK"}))
                .expect("a control");
        let mut ocr = tree.clone();
        ocr.id = "ocr:1,2,3,4".into();
        ocr.source = ufo_core::ports::ControlSource::Ocr;
        let obs = WindowObservation {
            window: serde_json::from_value(json!({"id": "0x1", "title": "t", "app_name": "a",
                                                  "process": "p"}))
            .expect("a window"),
            controls: vec![tree, ocr],
            screenshot: None,
            annotated: None,
            warnings: Vec::new(),
            pixels_readable: false,
            pixel_changes: None,
        };
        let v: Value = serde_json::from_str(&describe(&obs, &[])).expect("JSON");
        assert!(v["controls"][0].get("source").is_none(), "{v}");
        assert_eq!(v["controls"][1]["source"], "ocr", "{v}");
        assert!(
            v.get("pixel_changes").is_none(),
            "not compared, not said: {v}"
        );
        // the change evidence in pixels, where compared, as the remote desktop reads it
        let px = vec![ufo_core::ports::PixelChange {
            rect: ufo_core::Rect::new(1, 2, 3, 4),
            read: ufo_core::ports::ReadThere::Text("Adds one".into()),
        }];
        let obs = WindowObservation {
            pixel_changes: Some(px.clone()),
            ..obs
        };
        let v: Value = serde_json::from_str(&describe(&obs, &[])).expect("JSON");
        assert_eq!(
            v["pixel_changes"][0]["read"],
            json!({"kind": "text", "text": "Adds one"}),
            "{v}"
        );
        assert_eq!(crate::remote::pixel_changes_of(&v), Some(px));
    }

    fn server() -> DesktopServer {
        let desktop = ufo_desktop::SimDesktop::from_json_str(SCENARIO).expect("scenario");
        DesktopServer::new(Arc::new(desktop), false)
    }

    /// Run the server on `input` (closed at the end) and return every output line as JSON.
    async fn exchange(input: Vec<u8>, max_line: usize) -> Vec<Value> {
        let (mut client_w, server_r) = duplex(1 << 16);
        let (server_w, client_r) = duplex(1 << 16);
        let serving = tokio::spawn(serve_lines(server(), server_r, server_w, max_line));
        let feeding = tokio::spawn(async move {
            client_w.write_all(&input).await.expect("write input");
            // Give the server time to answer before the input closes.
            tokio::time::sleep(std::time::Duration::from_millis(300)).await;
            drop(client_w);
        });
        let mut lines = tokio::io::BufReader::new(client_r).lines();
        let mut out = Vec::new();
        while let Ok(Some(line)) =
            tokio::time::timeout(std::time::Duration::from_secs(10), lines.next_line())
                .await
                .expect("the server answers or closes within 10 s")
        {
            out.push(serde_json::from_str(&line).expect("every output line is JSON"));
        }
        feeding.await.expect("feeder");
        let _ = serving.await;
        out
    }

    fn by_id(out: &[Value], id: Value) -> &Value {
        out.iter()
            .find(|v| v["id"] == id)
            .unwrap_or_else(|| panic!("no answer with id {id}: {out:?}"))
    }

    fn token(role: ufo_core::access::Role) -> Caller {
        Caller::Token(ufo_core::access::Principal {
            name: "t".into(),
            role,
        })
    }

    /// Served to tokens with every flag: a viewer lists and runs only the observing tools; a
    /// user and an admin everything; no role runs what the flags do not allow.
    #[tokio::test]
    async fn a_viewer_only_observes_whatever_the_flags() {
        use ufo_core::access::Role;
        let scenario = r#"{"apps": [{"name": "Writer", "controls": [
            {"id": "b", "role": "button", "name": "Export"}]}]}"#;
        let click = serde_json::Map::from_iter([
            ("window".to_string(), json!("Writer")),
            ("name".to_string(), json!("Export")),
            ("function".to_string(), json!("click")),
        ]);
        let shell = serde_json::Map::from_iter([("command".to_string(), json!("true"))]);
        for (actions, allow_shell) in [(true, true), (false, false)] {
            let desktop = ufo_desktop::SimDesktop::from_json_str(scenario).expect("scenario");
            let server = DesktopServer::new(Arc::new(desktop), actions)
                .with_shell(allow_shell)
                .for_tokens();
            let viewer = token(Role::Viewer);
            let names: Vec<String> = server
                .tools_for(&viewer)
                .iter()
                .map(|t| t.name.to_string())
                .collect();
            assert_eq!(names, ["list_windows", "observe_window"]);
            match server.run_tool_as(&viewer, "act", &click).await {
                Err(ToolCallError::NotForCaller(why)) => assert!(why.contains("viewer"), "{why}"),
                Err(ToolCallError::Refused(_)) if !actions => {}
                other => panic!("a viewer's act: {other:?}"),
            }
            assert!(matches!(
                server.run_tool_as(&viewer, SHELL_TOOL, &shell).await,
                Err(ToolCallError::Desktop(ufo_core::DesktopError::Unsupported(
                    _
                )))
            ));
            for role in [Role::User, Role::Admin] {
                let caller = token(role);
                let listed = server.tools_for(&caller);
                assert_eq!(
                    listed.iter().any(|t| t.name == SHELL_TOOL),
                    allow_shell,
                    "{role}"
                );
                assert!(listed.iter().any(|t| t.name == "act"), "{role}");
                let acted = server.run_tool_as(&caller, "act", &click).await;
                assert_eq!(acted.is_ok(), actions, "{role}: {acted:?}");
            }
        }
    }

    /// Over HTTP a call without a token holder is refused, never taken for the owner's.
    #[tokio::test]
    async fn a_call_without_a_token_holder_is_refused_over_http() {
        let desktop = ufo_desktop::SimDesktop::from_json_str(SCENARIO).expect("scenario");
        let server = DesktopServer::new(Arc::new(desktop), true).for_tokens();
        let none = rmcp::model::Extensions::new();
        assert!(matches!(
            server.caller_of(&none),
            Err(ToolCallError::NoCaller)
        ));
        assert_eq!(self::server().caller_of(&none).ok(), Some(Caller::Owner));
    }

    /// `run_shell` is offered and run only with shell and actions allowed; otherwise it
    /// answers "unsupported" (a desktop without a shell) and the command does not run.
    #[tokio::test]
    async fn the_shell_tool_runs_only_when_shell_and_actions_are_allowed() {
        let scenario = r#"{"apps": []}"#;
        let command = serde_json::Map::from_iter([("command".to_string(), json!("touch /tmp/x"))]);
        for (actions, shell) in [(false, false), (false, true), (true, false)] {
            let desktop = ufo_desktop::SimDesktop::from_json_str(scenario).expect("scenario");
            let server = DesktopServer::new(Arc::new(desktop), actions).with_shell(shell);
            assert!(
                !server.tools().iter().any(|t| t.name == SHELL_TOOL),
                "listed with actions {actions}, shell {shell}"
            );
            match server.run_tool(SHELL_TOOL, &command).await {
                Err(ToolCallError::Desktop(ufo_core::DesktopError::Unsupported(m))) => {
                    assert!(m.contains("--allow-shell"), "{m}")
                }
                other => panic!("actions {actions}, shell {shell}: {other:?}"),
            }
        }
        let desktop = Arc::new(ufo_desktop::SimDesktop::from_json_str(scenario).expect("scenario"));
        let server = DesktopServer::new(desktop.clone(), true).with_shell(true);
        assert!(server.tools().iter().any(|t| t.name == SHELL_TOOL));
        let out = server.run_tool(SHELL_TOOL, &command).await.expect("runs");
        let text = out[0].as_text().expect("text").text.clone();
        let shell: ufo_core::ShellOutput = serde_json::from_str(&text).expect("a command's output");
        assert_eq!(shell.code, Some(0), "{text}");
        let state = desktop.final_state().expect("state").to_string();
        assert!(
            state.contains("touch /tmp/x"),
            "the desktop's shell ran it: {state}"
        );
    }

    /// Issue 12, defect 7: part of a title finds the window, as `ufo inspect` does.
    #[tokio::test]
    async fn a_window_is_found_by_part_of_its_title() {
        let desktop = ufo_desktop::SimDesktop::from_json_str(
            r#"{"apps": [{"name": "VLC", "process": "vlc", "title": "clip.mp4 - VLC media player",
                "controls": []}]}"#,
        )
        .expect("scenario");
        let server = DesktopServer::new(Arc::new(desktop), false);
        let w = server.window("VLC media player").await.expect("found");
        assert_eq!(w.title, "clip.mp4 - VLC media player");
        assert_eq!(
            server.window("vlc").await.expect("by process").process,
            "vlc"
        );
        assert!(server.window("Firefox").await.is_err());
        assert!(server.window("  ").await.is_err());
    }

    /// Issue 23, item 5: three Firefox windows; "Firefox" fits them all, so nothing is
    /// picked and the error lists the three (title, application, id); the agents' rule picks
    /// one by part of its title or by id.
    #[tokio::test]
    async fn an_ambiguous_window_is_an_error_listing_the_candidates() {
        let desktop = ufo_desktop::SimDesktop::from_json_str(
            r#"{"apps": [{"name": "Firefox ESR", "process": "firefox", "title": "Mozilla Firefox",
                "windows": [{"id": "b", "title": "Bookmarks — Mozilla Firefox", "open": true},
                            {"id": "n", "title": "News — Mozilla Firefox", "open": true}]}]}"#,
        )
        .expect("scenario");
        let server = DesktopServer::new(Arc::new(desktop), false);
        let e = server
            .window("Firefox")
            .await
            .expect_err("three windows fit")
            .to_string();
        assert!(e.contains("fits 3 windows equally"), "{e}");
        for w in [
            "\"Mozilla Firefox\" (application Firefox ESR, id Firefox ESR)",
            "\"Bookmarks — Mozilla Firefox\" (application Firefox ESR, id Firefox ESR/b)",
            "\"News — Mozilla Firefox\" (application Firefox ESR, id Firefox ESR/n)",
        ] {
            assert!(e.contains(w), "{w} missing: {e}");
        }
        // the same through the tool a client calls
        let args = json!({"window": "firefox"});
        let err = server
            .run_tool("observe_window", args.as_object().expect("object"))
            .await
            .expect_err("ambiguous")
            .to_string();
        assert!(err.contains("fits 3 windows"), "{err}");
        let w = server.window("bookmarks").await.expect("part of a title");
        assert_eq!(w.id, "Firefox ESR/b");
        assert_eq!(
            server.window("Firefox ESR/n").await.expect("id").id,
            "Firefox ESR/n"
        );
        assert_eq!(
            server
                .window("Mozilla Firefox")
                .await
                .expect("exact title")
                .id,
            "Firefox ESR"
        );
    }

    #[tokio::test]
    async fn a_malformed_line_gets_a_parse_error_and_the_server_keeps_serving() {
        let input = format!(
            "this is not json\n{{\"jsonrpc\":\"2.0\",\"id\":7}}\n[1,2]\n\n\
             {{\"jsonrpc\":\"2.0\",\"method\":\"notifications/whatever\",\"params\":{{}}}}\n\
             {{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}}\n{INITIALIZE}\n\
             {{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}}\n\
             not json either\n\
             {{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/list\"}}\n"
        );
        let out = exchange(input.into_bytes(), MAX_LINE_BYTES).await;
        let parse_errors: Vec<&Value> = out
            .iter()
            .filter(|v| v["error"]["code"] == PARSE_ERROR)
            .collect();
        assert_eq!(parse_errors.len(), 2, "{out:?}");
        assert_eq!(parse_errors[0]["id"], Value::Null);
        assert_eq!(parse_errors[0]["jsonrpc"], "2.0");
        assert_eq!(by_id(&out, json!(7))["error"]["code"], INVALID_REQUEST);
        let invalid_null: Vec<&Value> = out
            .iter()
            .filter(|v| v["error"]["code"] == INVALID_REQUEST && v["id"].is_null())
            .collect();
        assert_eq!(invalid_null.len(), 1, "the batch array: {out:?}");
        let init = by_id(&out, json!(1));
        assert_eq!(init["result"]["serverInfo"]["name"], "ufo", "{out:?}");
        // tools/list before the handshake is refused, after it answered
        assert_eq!(by_id(&out, json!(2))["error"]["code"], INVALID_REQUEST);
        let tools = by_id(&out, json!(3))["result"]["tools"]
            .as_array()
            .map(Vec::len);
        assert_eq!(tools, Some(5), "{out:?}");
        // blank line and unknown notification: no answer
        assert_eq!(out.len(), 7, "{out:?}");
    }

    #[tokio::test]
    async fn an_overlong_line_is_answered_without_being_buffered_and_serving_goes_on() {
        let mut input = vec![b'x'; 300_000];
        input.push(b'\n');
        input.extend_from_slice(INITIALIZE.as_bytes());
        input.push(b'\n');
        let out = exchange(input, 1024).await;
        assert_eq!(out.len(), 2, "{out:?}");
        assert_eq!(out[0]["error"]["code"], PARSE_ERROR, "{out:?}");
        assert!(out[0]["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("longer than 1024 bytes")));
        assert_eq!(by_id(&out, json!(1))["result"]["serverInfo"]["name"], "ufo");
    }

    #[tokio::test]
    async fn bounded_line_reader_splits_caps_and_ends() {
        let data: &[u8] = b"ab\r\n0123456789\nlast";
        let mut r = tokio::io::BufReader::with_capacity(3, data);
        let mut buf = Vec::new();
        assert_eq!(
            read_bounded_line(&mut r, &mut buf, 5).await.ok(),
            Some(Line::Complete)
        );
        assert_eq!(buf, b"ab\r");
        assert_eq!(
            read_bounded_line(&mut r, &mut buf, 5).await.ok(),
            Some(Line::TooLong)
        );
        assert!(buf.is_empty());
        assert_eq!(
            read_bounded_line(&mut r, &mut buf, 5).await.ok(),
            Some(Line::Complete)
        );
        assert_eq!(buf, b"last");
        assert_eq!(
            read_bounded_line(&mut r, &mut buf, 5).await.ok(),
            Some(Line::Eof)
        );
    }

    /// An id JSON-RPC does not allow makes the line an Invalid Request answered with id null
    /// (it used to read as a notification and get no answer); a plain notification stays
    /// unanswered and a valid request passes.
    #[test]
    fn requests_with_ids_json_rpc_does_not_allow_are_invalid() {
        for id in [
            "{}",
            "[]",
            "1.5",
            "true",
            "null",
            "9223372036854775808",
            "1e30",
        ] {
            let line = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#);
            let Incoming::Reply(reply) = classify(line.as_bytes()) else {
                panic!("id {id}: not answered");
            };
            let v: Value = serde_json::from_slice(&reply).expect("json");
            assert_eq!(v["id"], Value::Null, "id {id}: {v}");
            assert_eq!(v["error"]["code"], INVALID_REQUEST, "id {id}: {v}");
        }
        assert!(matches!(
            classify(br#"{"jsonrpc":"2.0","method":"notifications/whatever"}"#),
            Incoming::Ignore | Incoming::Message(_)
        ));
        assert!(matches!(
            classify(br#"{"jsonrpc":"2.0","id":"a","method":"ping"}"#),
            Incoming::Message(_)
        ));
    }
}
