//! An AppAgent's planned action: what the model chose, resolved to a control or a tool, as
//! the trajectory records it; how it runs, alone or as a speculative multi-action list
//! checked against the screen before every action; and why it failed (a failure is the
//! step's result, which the model reads, not an error of the step).

use serde_json::Value;

use super::context::Cx;
use crate::action::UiAction;
use crate::ports::{Control, Desktop, DesktopError, WindowInfo, WindowObservation};
use crate::step_action::{Chosen, ControlRef, ToolCall};
use crate::text::clip;

/// What the model chose to do: a GUI function on a control, or a tool call.
#[derive(Debug, Clone)]
pub(super) enum Planned {
    /// A GUI function on the control resolved (none for a function that needs none).
    Ui {
        /// The function.
        action: UiAction,
        /// Its control.
        control: Option<Control>,
        /// The control's label in the observation.
        label: String,
    },
    /// A tool call.
    Tool {
        /// The tool.
        name: String,
        /// Its arguments.
        args: Value,
    },
    /// Speculative multi-action: run in order, each checked against a fresh observation.
    Batch(Vec<Planned>),
}

impl Planned {
    /// One line describing it.
    pub(super) fn describe(&self) -> String {
        match self {
            Planned::Ui {
                action,
                control,
                label,
            } => describe(action, control.as_ref(), label),
            Planned::Tool { name, args } => format!("tool {name} {args}"),
            Planned::Batch(list) => {
                let parts: Vec<String> = list.iter().map(Planned::describe).collect();
                format!("{} actions: {}", list.len(), parts.join("; "))
            }
        }
    }

    /// What the trajectory records of it.
    pub(super) fn chosen(&self) -> Chosen {
        match self {
            Planned::Ui {
                action,
                control,
                label,
            } => ui_choice(action, control.as_ref(), label),
            Planned::Tool { name, args } => Chosen::Tool(ToolCall {
                name: name.clone(),
                args: args.clone(),
            }),
            Planned::Batch(list) => Chosen::Batch(list.iter().map(Planned::chosen).collect()),
        }
    }

    /// Run it: its result, or why it failed (the failure is the step's result, not an error).
    /// A list's failures are in its result, which says where it stopped.
    pub(super) async fn run(
        &self,
        cx: &mut Cx<'_>,
        window: &WindowInfo,
    ) -> Result<String, ActionFailure> {
        match self {
            Planned::Ui {
                action, control, ..
            } => execute(cx, window, control.as_ref(), action).await,
            Planned::Tool { name, args } => match cx.services.tools {
                Some(tools) => match tools.call(&window.app_name, name, args).await {
                    Ok(text) => Ok(clip(&text, 4000)),
                    Err(e) => Err(ActionFailure::Tool(e)),
                },
                None => Err(ActionFailure::NoTool(name.clone())),
            },
            Planned::Batch(list) => Ok(run_batch(cx, window, list, None).await.0),
        }
    }
}

/// Why an action that was run did not do its work: the desktop or the tool refused it, or no
/// tool of that name is configured. Its text is the step's result (the model reads it).
#[derive(Debug, thiserror::Error)]
pub(super) enum ActionFailure {
    /// The desktop answered with an error.
    #[error("action failed: {0}")]
    Desktop(DesktopError),
    /// The tool failed.
    #[error("action failed: {0}")]
    Tool(crate::ports::ToolError),
    /// No tool provider is configured.
    #[error("action failed: no tool {0} is configured")]
    NoTool(String),
}

/// An action's result as the model reads it: its text, or its failure's.
pub(super) fn result_text(run: Result<String, ActionFailure>) -> String {
    run.unwrap_or_else(|e| e.to_string())
}

/// Run a multi-action list in order. Before every action after the first, the window is
/// observed again and the action's control must still be there, visible and enabled; the
/// first that cannot run stops the list. `seen`: the window's controls the list was decided
/// on. Returns the text for the model and how many ran.
pub(super) async fn run_batch(
    cx: &mut Cx<'_>,
    window: &WindowInfo,
    list: &[Planned],
    seen: Option<Vec<Control>>,
) -> (String, usize) {
    let n = list.len();
    let mut run = ListRun {
        lines: Vec::new(),
        seen,
        ahead: None,
    };
    for (i, planned) in list.iter().enumerate() {
        // (what the window shows right before this action, when it was looked at)
        if let Some(Ok(o)) = &run.ahead {
            run.seen = Some(o.controls.clone());
        }
        if i > 0 {
            if let Some(problem) = run.blocked(cx.services.desktop, window, planned).await {
                run.lines.push(format!(
                    "stopped before action {} ({}): {problem}",
                    i + 1,
                    planned.describe()
                ));
                return (
                    format!("ran {i} of {n} actions; {}", run.lines.join("; ")),
                    i,
                );
            }
        }
        let result = Box::pin(planned.run(cx, window)).await;
        let failed = result.is_err();
        let out = result_text(result);
        run.lines
            .push(format!("{}. {} -> {out}", i + 1, planned.describe()));
        if failed {
            let lines = run.lines.join("; ");
            return (
                format!("ran {i} of {n} actions (action {} failed); {lines}", i + 1),
                i,
            );
        }
        let desktop = cx.services.desktop;
        if run
            .changed_nothing(desktop, window, planned, i + 1 < n)
            .await
        {
            run.lines.push(format!(
                "stopped after action {}: it changed nothing on the screen",
                i + 1
            ));
            let lines = run.lines.join("; ");
            return (format!("ran {} of {n} actions; {lines}", i + 1), i + 1);
        }
    }
    (
        format!("ran {n} of {n} actions; {}", run.lines.join("; ")),
        n,
    )
}

/// What a multi-action list's run keeps from one action to the next.
struct ListRun {
    /// One line per action run (and, last, why the list stopped).
    lines: Vec<String>,
    /// The window's controls as last looked at.
    seen: Option<Vec<Control>>,
    /// An observation made after the last action, for the next one to start from.
    ahead: Option<Result<WindowObservation, DesktopError>>,
}

impl ListRun {
    /// Why the next action cannot run now: its control is gone or disabled (the window is
    /// observed again, unless an observation after the last action is at hand), the window
    /// cannot be observed, or the person took the desktop over since the list was decided.
    async fn blocked(
        &mut self,
        desktop: &dyn Desktop,
        window: &WindowInfo,
        planned: &Planned,
    ) -> Option<String> {
        if let Planned::Ui {
            control: Some(c),
            label,
            ..
        } = planned
        {
            let fresh = match self.ahead.take() {
                Some(o) => o,
                None => desktop.observe(&window.id).await,
            };
            self.seen = fresh.as_ref().ok().map(|o| o.controls.clone());
            let problem = match &fresh {
                Err(e) => Some(format!("the window could not be observed: {e}")),
                Ok(obs) => match obs.controls.iter().find(|x| x.id == c.id) {
                    None => Some(format!("control [{label}] \"{}\" is gone", c.name)),
                    Some(x) if !x.enabled => {
                        Some(format!("control [{label}] \"{}\" is disabled", c.name))
                    }
                    Some(_) => None,
                },
            };
            if problem.is_some() {
                return problem;
            }
        }
        // the person took the desktop over since the list was decided: the rest is stale
        desktop
            .person_input()
            .map(|input| format!("the person took the desktop over ({input})"))
    }

    /// Whether the action just run changed nothing on the screen, when more actions are to
    /// come. Verified speculation: such an action did not do what the list assumed, and the
    /// rest waits for the model (a read changes nothing, and is not asked).
    async fn changed_nothing(
        &mut self,
        desktop: &dyn Desktop,
        window: &WindowInfo,
        planned: &Planned,
        more: bool,
    ) -> bool {
        let acts =
            matches!(planned, Planned::Ui { action, .. } if !matches!(action, UiAction::ReadText));
        self.ahead = None;
        let before = self.seen.take();
        if !(acts && more && desktop.last_action_changed() == Some(false)) {
            return false;
        }
        // The wait after the action saw no change in its time; on a loaded machine the
        // application may redraw later. The window's controls are the second witness:
        // changed since the list was decided (or since the last look), the action did
        // something.
        let after = desktop.observe(&window.id).await;
        let changed = match (&before, &after) {
            (Some(b), Ok(a)) => !super::changes::diff(b, &a.controls).is_empty(),
            _ => false,
        };
        self.ahead = Some(after);
        !changed
    }
}

/// One line describing an action.
fn describe(action: &UiAction, control: Option<&Control>, label: &str) -> String {
    let args = action.args();
    let args = if args.as_object().is_some_and(|m| m.is_empty()) {
        String::new()
    } else {
        format!(" {args}")
    };
    match control {
        Some(c) => format!(
            "{}{} on [{label}] {} \"{}\"",
            action.name(),
            args,
            c.role,
            c.name
        ),
        None => format!("{}{}", action.name(), args),
    }
}

/// A GUI function on `control` as the trajectory records it.
pub(super) fn ui_choice(action: &UiAction, control: Option<&Control>, label: &str) -> Chosen {
    let control = control.map(|c| ControlRef {
        id: c.id.clone(),
        text: c.name.clone(),
        role: c.role.clone(),
    });
    Chosen::ui(action.name(), action.args(), label, control)
}

/// Run an action on the desktop: its result text, or the desktop's error.
async fn execute(
    cx: &mut Cx<'_>,
    window: &WindowInfo,
    control: Option<&Control>,
    action: &UiAction,
) -> Result<String, ActionFailure> {
    let d = cx.services.desktop;
    match d
        .act(&window.id, control.map(|c| c.id.as_str()), action)
        .await
    {
        Ok(text) if text.is_empty() => Ok("ok".to_string()),
        Ok(text) => Ok(clip(&text, 2000)),
        Err(e) => {
            let failure = ActionFailure::Desktop(e);
            if matches!(failure, ActionFailure::Desktop(DesktopError::Lost(_))) {
                // no later action can reach the desktop: the step ends ERROR
                cx.device_lost.get_or_insert(failure.to_string());
            }
            Err(failure)
        }
    }
}
