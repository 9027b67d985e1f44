//! The config-step runner: puts the desktop in a task's start state (and runs an evaluator's
//! `postconfig`), through the [`Desktop`] port.

use std::time::{Duration, Instant};

use serde_json::Value;
use ufo_core::{Desktop, WindowId};

use crate::kinds::StepKind;
use crate::task::ConfigStep;
use crate::BatchError;

/// Longest `sleep` step honoured.
const MAX_SLEEP: Duration = Duration::from_secs(120);

/// How steps run.
#[derive(Debug, Clone)]
pub struct SetupOptions {
    /// The task's home folder: `/home/user/` in commands and paths is mapped onto it.
    pub home: std::path::PathBuf,
    /// Launch commands of the desktop's launch table: `launch` with one of these goes through
    /// the desktop's launcher, which waits for the window to be on the accessibility bus.
    pub launch_commands: Vec<String>,
    /// Longest wait for the window of a launched or opened application.
    pub window_timeout: Duration,
}

impl SetupOptions {
    fn map(&self, text: &str) -> String {
        let home = self.home.display().to_string();
        text.replace("/home/user/", &format!("{home}/"))
            .replace("~/", &format!("{home}/"))
    }
}

fn step_err(step: &str, message: String) -> BatchError {
    BatchError::Step {
        step: step.to_string(),
        message,
    }
}

fn desktop_err(step: &str, e: ufo_core::DesktopError) -> BatchError {
    match e {
        // a desktop without a shell (a served one without --allow-shell): the task cannot run
        // there, which is not the task's failure
        ufo_core::DesktopError::Unsupported(why) => {
            BatchError::Unsupported(format!("config step `{step}`: {why}"))
        }
        e => BatchError::Step {
            step: step.to_string(),
            message: e.to_string(),
        },
    }
}

/// The desktop's windows as (id, pid) pairs (none when they cannot be listed): what was there
/// before a command, to tell the windows it opened.
pub async fn window_keys(desktop: &dyn Desktop) -> Vec<(WindowId, Option<u32>)> {
    desktop
        .windows()
        .await
        .map(|ws| ws.into_iter().map(|w| (w.id, w.pid)).collect())
        .unwrap_or_default()
}

/// Run `command` in the background and wait (bounded) for a new window.
async fn spawn_and_wait(
    desktop: &dyn Desktop,
    step: &str,
    command: &str,
    opts: &SetupOptions,
) -> Result<String, BatchError> {
    let before = window_keys(desktop).await;
    desktop
        .shell(&format!("{command} >/dev/null 2>&1 &"))
        .await
        .map_err(|e| desktop_err(step, e))?;
    let deadline = Instant::now() + opts.window_timeout;
    while Instant::now() < deadline {
        if let Ok(ws) = desktop.windows().await {
            if let Some(w) = ws.iter().find(|w| !before.contains(&(w.id.clone(), w.pid))) {
                // let the application populate its window on the accessibility bus
                tokio::time::sleep(Duration::from_millis(500)).await;
                return Ok(format!("{step} `{command}`: window {:?}", w.title));
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(format!(
        "{step} `{command}`: no new window within {} s",
        opts.window_timeout.as_secs()
    ))
}

fn is_text_file(path: &str) -> bool {
    let ext = path.rsplit('.').next().unwrap_or("").to_lowercase();
    [
        "txt", "md", "csv", "py", "json", "log", "sh", "toml", "yaml", "yml", "rs", "c", "h",
        "ini", "cfg", "html", "xml",
    ]
    .contains(&ext.as_str())
}

/// Launch `command` through the desktop's own launcher: the launchable application whose
/// launch command or name it is, else a one-word command as a name; `None` when the desktop
/// cannot.
async fn launch_by_name(desktop: &dyn Desktop, command: &str) -> Option<String> {
    let command = command.trim();
    let apps = desktop.launchable().await.unwrap_or_default();
    let known = apps
        .iter()
        .find(|a| a.command.trim() == command || a.name.eq_ignore_ascii_case(command))
        .map(|a| a.name.clone());
    let name = match known {
        Some(name) => name,
        None if !command.is_empty() && !command.contains(char::is_whitespace) => {
            command.to_string()
        }
        None => return None,
    };
    let window = desktop.launch(&name).await.ok()?;
    Some(format!("launch `{command}`: window {:?}", window.title))
}

/// Run one config step; returns a line for the task's log.
pub async fn run_step(
    desktop: &dyn Desktop,
    step: &ConfigStep,
    opts: &SetupOptions,
) -> Result<String, BatchError> {
    let Some(kind) = StepKind::named(&step.kind) else {
        return Err(BatchError::Unsupported(format!(
            "unsupported config step `{}`",
            step.kind
        )));
    };
    match kind {
        StepKind::Launch => launch(desktop, step, opts).await,
        StepKind::Execute | StepKind::Command => execute(desktop, kind, step, opts).await,
        StepKind::Open => open(desktop, step, opts).await,
        StepKind::Sleep => sleep(step).await,
        StepKind::ActivateWindow => activate_window(desktop, step).await,
    }
}

/// A step that lacks a parameter.
fn needs(kind: StepKind, what: &str) -> BatchError {
    step_err(kind.name(), format!("needs {what}"))
}

/// The step's command, with `/home/user/` mapped onto the task's home.
fn mapped_command(
    kind: StepKind,
    step: &ConfigStep,
    opts: &SetupOptions,
) -> Result<String, BatchError> {
    let command = step
        .command_text()
        .ok_or_else(|| needs(kind, "\"command\""))?;
    Ok(opts.map(&command))
}

/// `launch`: through the desktop's launcher when the command is in its launch table, else in
/// the background, waiting for a new window.
async fn launch(
    desktop: &dyn Desktop,
    step: &ConfigStep,
    opts: &SetupOptions,
) -> Result<String, BatchError> {
    let kind = StepKind::Launch;
    let cmd = mapped_command(kind, step, opts)?;
    let started = if opts.launch_commands.iter().any(|c| c.trim() == cmd.trim()) {
        desktop
            .shell(&cmd)
            .await
            .map_err(|e| desktop_err(kind.name(), e))
            .map(|out| {
                format!(
                    "launch `{cmd}`: {}",
                    out.launched.unwrap_or_else(|| "started".into())
                )
            })
    } else {
        spawn_and_wait(desktop, kind.name(), &cmd, opts).await
    };
    match started {
        // a desktop without a shell may still launch a known application by its name
        Err(BatchError::Unsupported(why)) => launch_by_name(desktop, &cmd)
            .await
            .ok_or(BatchError::Unsupported(why)),
        other => other,
    }
}

/// `execute` / `command`: run the command and wait for it; the log line has its exit code and
/// standard error.
async fn execute(
    desktop: &dyn Desktop,
    kind: StepKind,
    step: &ConfigStep,
    opts: &SetupOptions,
) -> Result<String, BatchError> {
    let cmd = mapped_command(kind, step, opts)?;
    let out = desktop
        .shell(&cmd)
        .await
        .map_err(|e| desktop_err(kind.name(), e))?;
    Ok(format!(
        "{} `{cmd}`: exit {}{}",
        kind.name(),
        out.code
            .map(|c| c.to_string())
            .unwrap_or_else(|| "-".into()),
        if out.stderr.trim().is_empty() {
            String::new()
        } else {
            format!(", stderr {:?}", out.stderr.trim())
        }
    ))
}

/// `open`: a file with its application, waiting for the new window.
async fn open(
    desktop: &dyn Desktop,
    step: &ConfigStep,
    opts: &SetupOptions,
) -> Result<String, BatchError> {
    let kind = StepKind::Open;
    let path = step
        .parameters
        .get("path")
        .and_then(Value::as_str)
        .ok_or_else(|| needs(kind, "\"path\""))?;
    let path = opts.map(path);
    // its own process (not a tab of a mousepad already on the session bus), so the
    // window is new and is closed with the task
    let opener = if is_text_file(&path) {
        "mousepad --disable-server"
    } else {
        "xdg-open"
    };
    let cmd = format!("{opener} {}", crate::getters::sh_quote(&path));
    spawn_and_wait(desktop, kind.name(), &cmd, opts).await
}

/// `sleep`: the given seconds, at most [`MAX_SLEEP`].
async fn sleep(step: &ConfigStep) -> Result<String, BatchError> {
    let secs = step
        .parameters
        .get("seconds")
        .and_then(Value::as_f64)
        .ok_or_else(|| needs(StepKind::Sleep, "\"seconds\" (a number)"))?;
    // Clamp before converting: a huge number (1e300) would panic in the conversion.
    let secs = if secs.is_finite() { secs } else { 0.0 };
    let d =
        Duration::try_from_secs_f64(secs.clamp(0.0, MAX_SLEEP.as_secs_f64())).unwrap_or(MAX_SLEEP);
    tokio::time::sleep(d).await;
    Ok(format!("sleep {} s", d.as_secs_f64()))
}

/// The window an `activate_window` step names: by title (a part of it, any case, or exactly
/// with `strict`) or by application (`by_class`).
struct WindowQuery<'a> {
    name: &'a str,
    lower: String,
    strict: bool,
    by_class: bool,
}

impl<'a> WindowQuery<'a> {
    fn of(step: &'a ConfigStep) -> Result<WindowQuery<'a>, BatchError> {
        let p = &step.parameters;
        let name = p
            .get("window_name")
            .and_then(Value::as_str)
            .ok_or_else(|| needs(StepKind::ActivateWindow, "\"window_name\""))?;
        Ok(WindowQuery {
            name,
            lower: name.to_lowercase(),
            strict: p.get("strict").and_then(Value::as_bool).unwrap_or(false),
            by_class: p.get("by_class").and_then(Value::as_bool).unwrap_or(false),
        })
    }

    fn matches(&self, w: &ufo_core::WindowInfo) -> bool {
        if self.by_class {
            w.app_name.to_lowercase() == self.lower || w.process.to_lowercase() == self.lower
        } else if self.strict {
            w.title == self.name
        } else {
            w.title.to_lowercase().contains(&self.lower)
        }
    }
}

/// `activate_window`: bring the named window to the front, waiting up to 5 s for it.
async fn activate_window(desktop: &dyn Desktop, step: &ConfigStep) -> Result<String, BatchError> {
    let kind = StepKind::ActivateWindow.name();
    let query = WindowQuery::of(step)?;
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let ws = desktop.windows().await.map_err(|e| desktop_err(kind, e))?;
        if let Some(w) = ws.iter().find(|w| query.matches(w)) {
            desktop
                .activate(&w.id)
                .await
                .map_err(|e| desktop_err(kind, e))?;
            return Ok(format!("activate_window {:?}", w.title));
        }
        if Instant::now() >= deadline {
            return Err(step_err(kind, format!("no window {:?}", query.name)));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use ufo_desktop::SimDesktop;

    fn sim() -> SimDesktop {
        let scenario = json!({"apps": [
            {"name": "Editor", "process": "editor", "title": "notes - Editor", "running": true,
             "launch": "editor", "controls": []},
            {"name": "Calc", "process": "calc", "title": "Calc", "running": false,
             "launch": "calc", "controls": []}
        ]});
        SimDesktop::from_value(&scenario).unwrap()
    }

    fn opts() -> SetupOptions {
        SetupOptions {
            home: "/tmp/h".into(),
            launch_commands: vec!["calc".into()],
            window_timeout: Duration::from_millis(300),
        }
    }

    fn step(kind: &str, p: Value) -> ConfigStep {
        ConfigStep {
            kind: kind.into(),
            parameters: p,
        }
    }

    #[tokio::test]
    async fn steps_reach_the_desktop() {
        let d = sim();
        let o = opts();
        let r = run_step(&d, &step("launch", json!({"command": ["calc"]})), &o)
            .await
            .unwrap();
        assert!(r.contains("Calc"), "{r}");
        assert!(d
            .windows()
            .await
            .unwrap()
            .iter()
            .any(|w| w.app_name == "Calc"));
        let r = run_step(
            &d,
            &step(
                "execute",
                json!({"command": ["touch", "/home/user/a b.txt"]}),
            ),
            &o,
        )
        .await
        .unwrap();
        assert!(r.contains("touch '/tmp/h/a b.txt'"), "{r}");
        let r = run_step(
            &d,
            &step("activate_window", json!({"window_name": "notes"})),
            &o,
        )
        .await
        .unwrap();
        assert_eq!(r, "activate_window \"notes - Editor\"");
        run_step(&d, &step("sleep", json!({"seconds": 0.01})), &o)
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn bad_or_unknown_steps_are_errors() {
        let d = sim();
        let o = opts();
        assert!(matches!(
            run_step(&d, &step("download", json!({})), &o).await,
            Err(BatchError::Unsupported(_))
        ));
        assert!(run_step(&d, &step("sleep", json!({})), &o).await.is_err());
        assert!(run_step(&d, &step("launch", json!({"command": 3})), &o)
            .await
            .is_err());
    }

    /// A task file's `"seconds": 1e300` used to panic converting to a duration; now it is
    /// clamped to the longest sleep (the call is still sleeping when the bound expires).
    #[tokio::test]
    async fn a_huge_sleep_is_clamped_not_a_panic() {
        let d = sim();
        let o = opts();
        for secs in [1e300, f64::MAX] {
            let step = step("sleep", json!({ "seconds": secs }));
            let r = tokio::time::timeout(Duration::from_millis(50), run_step(&d, &step, &o)).await;
            assert!(r.is_err(), "{secs}: still sleeping, not ended: {r:?}");
        }
    }
}
