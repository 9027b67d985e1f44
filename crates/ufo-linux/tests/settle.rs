//! Fast live steps (issue 13) on gnome-calculator: clicks go through XTEST when the control
//! is uncovered and through its AT-SPI action when a window covers it, settling on X events;
//! the observation right after an action already shows its effect. Results are checked
//! through pyatspi, not through ufo.
//!
//! They need a desktop session (`scripts/desktop-session.sh up`, then `source` its env file);
//! skipped with a printed reason without `DISPLAY` and `UFO_LIVE_TESTS=1`.
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};
use ufo_desktop::testing::require_live;

use ufo_core::{Button, Desktop, UiAction, WindowObservation};
use ufo_linux::{LinuxConfig, LinuxDesktop};
use x11rb::connection::Connection;
use x11rb::protocol::xproto::{ConnectionExt as _, CreateWindowAux, WindowClass};

/// Kills the launched application when the test ends, pass or fail.
struct AppGuard(Option<u32>);

impl Drop for AppGuard {
    fn drop(&mut self) {
        if let Some(pid) = self.0 {
            let _ = std::process::Command::new("kill")
                .arg(pid.to_string())
                .status();
            let deadline = Instant::now() + Duration::from_secs(3);
            while std::path::Path::new(&format!("/proc/{pid}")).exists()
                && Instant::now() < deadline
            {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }
}

fn click() -> UiAction {
    UiAction::Click {
        button: Button::Left,
        double: false,
    }
}

fn button_id(obs: &WindowObservation, name: &str) -> (String, ufo_core::Rect) {
    let c = obs
        .controls
        .iter()
        .find(|c| c.role == "button" && c.name == name)
        .unwrap_or_else(|| panic!("no button {name:?}"));
    (c.id.clone(), c.rect)
}

/// The display's value in an observation.
fn display(obs: &WindowObservation) -> Vec<String> {
    obs.controls
        .iter()
        .filter(|c| c.role == "text")
        .filter_map(|c| c.value.as_deref().map(|v| v.trim().to_string()))
        .filter(|v| !v.is_empty())
        .collect()
}

/// The calculator's display text as pyatspi reads it (another process, another client).
fn display_through_pyatspi(pid: u32) -> String {
    let py = r#"
import pyatspi, sys
want = int(sys.argv[1])
for a in pyatspi.Registry.getDesktop(0):
    if a is None or a.get_process_id() != want:
        continue
    stack, n, shown = [a], 0, ''
    while stack and n < 3000:
        o = stack.pop(); n += 1
        try:
            if o.getRole() in (pyatspi.ROLE_EDITBAR, pyatspi.ROLE_TEXT, pyatspi.ROLE_ENTRY):
                t = o.queryText().getText(0, -1).strip()
                if t:
                    shown = t
            if 0 <= o.childCount <= 500:
                stack.extend(o[i] for i in range(o.childCount))
        except Exception:
            pass
    print(shown)
"#;
    let out = std::process::Command::new("/usr/bin/python3")
        .arg("-c")
        .arg(py)
        .arg(pid.to_string())
        .output()
        .expect("python3 with pyatspi runs");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// An override-redirect window over `r` (a popup no window manager moves): the control under
/// it is covered.
struct Cover {
    conn: x11rb::rust_connection::RustConnection,
    win: u32,
}

impl Cover {
    fn over(r: ufo_core::Rect) -> Cover {
        let (conn, screen) = x11rb::connect(None).expect("X connection");
        let s = &conn.setup().roots[screen];
        let win = conn.generate_id().unwrap();
        conn.create_window(
            s.root_depth,
            win,
            s.root,
            (r.x - 10) as i16,
            (r.y - 10) as i16,
            (r.w + 20) as u16,
            (r.h + 20) as u16,
            0,
            WindowClass::INPUT_OUTPUT,
            0,
            &CreateWindowAux::new()
                .override_redirect(1)
                .background_pixel(s.black_pixel),
        )
        .unwrap();
        conn.map_window(win).unwrap();
        conn.get_input_focus().unwrap().reply().unwrap();
        std::thread::sleep(Duration::from_millis(200));
        Cover { conn, win }
    }
}

impl Drop for Cover {
    fn drop(&mut self) {
        let _ = self.conn.destroy_window(self.win);
        let _ = self.conn.get_input_focus().map(|c| c.reply());
    }
}

#[tokio::test]
async fn xtest_and_atspi_clicks_compute_12_times_7_and_observations_are_fresh() {
    if !require_live("xtest_and_atspi_clicks_compute_12_times_7_and_observations_are_fresh") {
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let d = LinuxDesktop::connect(LinuxConfig {
        launch_env: LinuxConfig::home_env(home.path()),
        ..LinuxConfig::default()
    })
    .await
    .unwrap_or_else(|e| panic!("the live desktop is unavailable: {e}"));
    let w = d.launch_app("calculator").await.expect("launch calculator");
    let _g = AppGuard(w.pid);
    let obs = d.observe(&w.id).await.expect("observe");

    // "1" is covered by another window: the click goes through the AT-SPI action
    let (one, rect) = button_id(&obs, "1");
    let cover = Cover::over(rect);
    let out = d.act(&w.id, Some(&one), &click()).await.expect("click 1");
    drop(cover);
    assert!(
        !out.contains(" at "),
        "a covered button must be clicked through its AT-SPI action: {out}"
    );
    let mut seen = String::new();
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        seen = display_through_pyatspi(w.pid.unwrap());
        if seen == "1" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        seen, "1",
        "the covered button's AT-SPI click did not reach it"
    );

    // uncovered buttons: XTEST at their centre, and the observation right after each click
    // (no retry) already shows its effect
    for name in ["2", "×", "7", "="] {
        let (id, _) = button_id(&obs, name);
        let out = d
            .act(&w.id, Some(&id), &click())
            .await
            .unwrap_or_else(|e| panic!("click {name}: {e}"));
        assert!(
            out.contains(" at "),
            "{name} was not clicked through XTEST: {out}"
        );
        assert_eq!(d.last_action_changed(), Some(true), "{name}: {out}");
        if name == "2" || name == "=" {
            let want = if name == "2" { "12" } else { "84" };
            let now = d.observe(&w.id).await.expect("observe");
            assert!(
                display(&now).iter().any(|v| v == want),
                "stale observation after {name}: the display shows {:?}, not {want}",
                display(&now)
            );
        }
    }
    assert_eq!(display_through_pyatspi(w.pid.unwrap()), "84");
}
