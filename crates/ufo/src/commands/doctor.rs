//! `ufo doctor [WINDOW]`: is this session fit for the agent, and can it read each window?

use std::process::ExitCode;
use std::time::Duration;

/// Bound on each session check (connecting to the X server, a D-Bus call).
const CHECK_TIMEOUT: Duration = Duration::from_secs(3);

fn print(f: &ufo_linux::doctor::Finding) {
    // window titles come from the screen: shown inert
    let what = ufo_core::inert(&f.what);
    if f.ok {
        crate::output::outln!("ok       {what}");
    } else {
        crate::output::outln!("PROBLEM  {what}");
        if let Some(fix) = &f.fix {
            crate::output::outln!("  fix:   {}", ufo_core::inert(fix));
        }
    }
}

/// Where ufo works on X11 (`DISPLAY` set), what it would find on Wayland, as notes that
/// never fail the check: the compositor of `WAYLAND_DISPLAY` (which one, the protocols it
/// offers, what is missing and how to get it), or that there is none. Without `DISPLAY` the
/// session checks are the Wayland ones already.
async fn wayland_notes() {
    if std::env::var_os("DISPLAY").is_none() {
        return;
    }
    match wayland_note_kind(std::env::var_os("WAYLAND_DISPLAY").as_deref()) {
        WaylandNote::None => {
            crate::output::outln!(
                "note     no Wayland display (WAYLAND_DISPLAY is not set): ufo works on X11 here"
            );
        }
        WaylandNote::Check => {
            for f in ufo_linux::doctor::check_wayland(
                None,
                CHECK_TIMEOUT,
                crate::desktop::wayland_connector(None),
            )
            .await
            {
                let what = ufo_core::inert(&f.what);
                crate::output::outln!("note     wayland: {what}");
                if let Some(fix) = &f.fix {
                    crate::output::outln!("  fix:   {}", ufo_core::inert(fix));
                }
            }
            crate::output::outln!(
                "note     ufo uses X11 (DISPLAY) here; --desktop wayland uses the compositor"
            );
        }
    }
}

/// Whether windows without an accessibility tree can be read in their pixels (docs/sight.md):
/// a note that never fails the check, with how to get the worker when it is missing.
async fn sight_note() {
    let settings = crate::sight::VisionSettings::from_env(None).unwrap_or_default();
    let (ok, what, fix) = crate::sight::doctor_note(&settings).await;
    let tag = if ok {
        "note    "
    } else {
        "note     (optional)"
    };
    crate::output::outln!("{tag} {}", ufo_core::inert(&what));
    if let Some(fix) = fix {
        crate::output::outln!("  fix:   {}", ufo_core::inert(&fix));
    }
}

/// What `ufo doctor` says of Wayland beside X11.
#[derive(Debug, PartialEq, Eq)]
enum WaylandNote {
    /// No Wayland display: say so.
    None,
    /// Check the compositor.
    Check,
}

fn wayland_note_kind(wayland_display: Option<&std::ffi::OsStr>) -> WaylandNote {
    match wayland_display {
        Some(v) if !v.is_empty() => WaylandNote::Check,
        _ => WaylandNote::None,
    }
}

/// Run `ufo doctor`: 0 when the session and the windows are fit for the agent, 1 when
/// something is missing (each problem printed with its fix), 2 when the window named
/// matches none.
pub async fn run(window: Option<&str>) -> ExitCode {
    let session =
        ufo_linux::doctor::check_session(CHECK_TIMEOUT, crate::desktop::wayland_connector(None))
            .await;
    for f in &session {
        print(f);
    }
    let mut problems = session.iter().filter(|f| !f.ok).count();
    wayland_notes().await;
    sight_note().await;
    if problems > 0 {
        crate::output::outln!("{problems} problem(s) in the session; windows not checked");
        return ExitCode::from(1);
    }
    // the windows' check is of their accessibility: what the tree gives, not the pixels
    let desktop = match crate::desktop::connect_live(&[], &crate::sight::VisionSettings::off())
        .await
    {
        Ok(d) => d,
        Err(e) => {
            print(&ufo_linux::doctor::Finding {
                ok: false,
                what: format!("cannot open the live desktop: {e:#}"),
                fix: Some("start the session again (scripts/desktop-session.sh down; up)".into()),
            });
            return ExitCode::from(1);
        }
    };
    match ufo_linux::doctor::check_windows(&desktop, window).await {
        Ok(windows) => {
            for f in &windows {
                print(f);
            }
            problems += windows.iter().filter(|f| !f.ok).count();
        }
        Err(e @ ufo_linux::LinuxError::NoWindow(_)) => {
            eprintln!("error: {}", ufo_core::inert(&e.to_string()));
            return ExitCode::from(2);
        }
        Err(e) => {
            print(&ufo_linux::doctor::Finding {
                ok: false,
                what: format!("the windows could not be listed: {e}"),
                fix: Some(
                    "check that the window manager runs (scripts/desktop-session.sh up)".into(),
                ),
            });
            return ExitCode::from(1);
        }
    }
    if problems == 0 {
        crate::output::outln!("all well: the session and the windows are fit for the agent");
        ExitCode::SUCCESS
    } else {
        crate::output::outln!("{problems} problem(s); the fixes are above");
        ExitCode::from(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wayland_display_is_checked_only_when_named() {
        assert_eq!(wayland_note_kind(None), WaylandNote::None);
        assert_eq!(wayland_note_kind(Some("".as_ref())), WaylandNote::None);
        assert_eq!(
            wayland_note_kind(Some("wayland-1".as_ref())),
            WaylandNote::Check
        );
    }
}
