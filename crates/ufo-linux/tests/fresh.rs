//! Observations are never stale (issue 13, incremental observation): a window changed
//! outside ufo (keys typed with xdotool into mousepad and gnome-calculator) shows the change
//! in the very next observation. These GTK applications are read whole at every observation
//! (changes.rs says why); LibreOffice, whose tree is kept and refreshed from its events, has
//! the same test in kept.rs.
//!
//! Needs a desktop session (`scripts/desktop-session.sh up`, then `source` its env file) and
//! xdotool. Without `DISPLAY` and without `UFO_LIVE_TESTS=1` it is skipped with a printed
//! reason; with `UFO_LIVE_TESTS=1` it fails loudly when something is missing.
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};
use ufo_desktop::testing::require_live;

use ufo_core::{Button, Desktop, UiAction, WindowObservation};
use ufo_linux::{LinuxConfig, LinuxDesktop};

static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

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

async fn connect(home: &std::path::Path) -> LinuxDesktop {
    let h = |sub: &str| home.join(sub).to_string_lossy().into_owned();
    let config = LinuxConfig {
        launch_env: vec![
            ("HOME".into(), h("")),
            ("XDG_CONFIG_HOME".into(), h(".config")),
            ("XDG_DATA_HOME".into(), h(".local/share")),
            ("XDG_CACHE_HOME".into(), h(".cache")),
            ("GSETTINGS_BACKEND".into(), "memory".into()),
        ],
        ..LinuxConfig::default()
    };
    LinuxDesktop::connect(config)
        .await
        .unwrap_or_else(|e| panic!("the live desktop is unavailable: {e}"))
}

fn xdo(args: &[&str]) {
    let ok = std::process::Command::new("xdotool")
        .args(args)
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    assert!(ok, "xdotool {args:?} failed (apt-get install xdotool)");
}

/// Type `keys` into window `id` with xdotool, give the application time to take them, and
/// observe once.
async fn type_outside(
    d: &LinuxDesktop,
    id: &ufo_core::WindowId,
    keys: &[&[&str]],
) -> WindowObservation {
    let wid = u64::from_str_radix(id.as_str().trim_start_matches("0x"), 16)
        .unwrap()
        .to_string();
    xdo(&["windowactivate", "--sync", &wid]);
    for k in keys {
        xdo(k);
    }
    // the application has taken the keys well within a second
    tokio::time::sleep(Duration::from_secs(1)).await;
    d.observe(id).await.expect("observe")
}

fn texts(o: &WindowObservation) -> Vec<String> {
    o.controls
        .iter()
        .filter(|c| c.role == "text")
        .map(|c| c.value.clone().unwrap_or_default())
        .collect()
}

#[tokio::test]
async fn mousepad_and_calculator_changed_outside_ufo_show_it_in_the_next_observation() {
    if !require_live("mousepad_and_calculator_changed_outside_ufo_show_it_in_the_next_observation")
    {
        return;
    }
    assert!(
        ufo_proc::which("xdotool", None).is_some(),
        "xdotool is not installed: apt-get install xdotool"
    );
    let _serial = SERIAL.lock().await;
    let home = tempfile::Builder::new()
        .prefix("ufo-fresh-test-home-")
        .tempdir()
        .unwrap();
    let d = connect(home.path()).await;

    // mousepad (GTK3): text typed into the document
    let w = d
        .launch_app("mousepad")
        .await
        .unwrap_or_else(|e| panic!("cannot launch mousepad: {e}"));
    let _g = AppGuard(w.pid);
    let before = d.observe(&w.id).await.expect("observe mousepad");
    assert!(
        texts(&before).iter().any(|t| t.is_empty()),
        "{:?}",
        texts(&before)
    );
    let after = type_outside(&d, &w.id, &[&["type", "--delay", "20", "hello outside"]]).await;
    assert!(
        texts(&after).iter().any(|t| t == "hello outside"),
        "typed outside ufo, but the next observation shows {:?}",
        texts(&after)
    );
    let again = type_outside(&d, &w.id, &[&["key", "BackSpace", "BackSpace"]]).await;
    assert!(
        texts(&again).iter().any(|t| t == "hello outsi"),
        "two characters erased outside ufo, but the next observation shows {:?}",
        texts(&again)
    );

    // a dialog an action opens is watched from when it appears: it is drawn when the action
    // returns, and the observation made while it settled is dropped when the dialog changes
    // afterwards (a name typed into it outside ufo)
    let keys = |k: &str| UiAction::TypeKeys { keys: k.into() };
    let doc = again
        .controls
        .iter()
        .find(|c| c.role == "text")
        .map(|c| c.id.clone())
        .expect("mousepad's document");
    d.act(&w.id, Some(&doc), &keys("{ctrl+s}"))
        .await
        .expect("ctrl+s");
    // (the dialog is the active window, its name field focused with its text selected)
    xdo(&["type", "--delay", "20", "zq-outside.txt"]);
    tokio::time::sleep(Duration::from_secs(1)).await;
    let o = d.observe(&w.id).await.expect("observe the save dialog");
    assert!(
        o.controls
            .iter()
            .any(|c| c.name == "Save" && c.role.contains("button")),
        "ctrl+s pressed, but the next observation shows no Save button: {:?}",
        o.controls
    );
    assert!(
        texts(&o).iter().any(|t| t.contains("zq-outside.txt")),
        "a name typed into the dialog outside ufo, but the next observation shows {:?}",
        texts(&o)
    );
    xdo(&["key", "Escape"]);
    drop(_g);

    // gnome-calculator (GTK4): a sum typed on the keyboard
    let w = d
        .launch_app("calculator")
        .await
        .unwrap_or_else(|e| panic!("cannot launch gnome-calculator: {e}"));
    let _g = AppGuard(w.pid);
    d.observe(&w.id).await.expect("observe the calculator");
    let shows = |o: &WindowObservation, want: &str| {
        o.controls.iter().any(|c| {
            c.role == "text"
                && c.value
                    .as_deref()
                    .is_some_and(|v| v.trim().replace(['\u{2009}', ' '], "") == want)
        })
    };
    let o = type_outside(&d, &w.id, &[&["type", "--delay", "30", "12+30"]]).await;
    assert!(
        shows(&o, "12+30"),
        "12+30 typed outside ufo, but the next observation shows {:?}",
        texts(&o)
    );
    let o = type_outside(&d, &w.id, &[&["key", "Return"]]).await;
    assert!(
        shows(&o, "42"),
        "Enter pressed outside ufo, but the next observation shows {:?}",
        texts(&o)
    );

    // a click by ufo: the observation made while its settle waited is the next one, unless
    // the window changed after it (here: a key typed outside ufo)
    let click = |o: &WindowObservation, name: &str| {
        o.controls
            .iter()
            .find(|c| c.name == name && c.role.contains("button"))
            .map(|c| c.id.clone())
            .unwrap_or_else(|| panic!("no button {name:?} in {:?}", o.controls))
    };
    let left = UiAction::Click {
        button: Button::Left,
        double: false,
    };
    let seven = click(&o, "7");
    d.act(&w.id, Some(&seven), &left).await.expect("click 7");
    let o = d.observe(&w.id).await.expect("observe after the click");
    assert!(
        shows(&o, "7"),
        "7 clicked, but the next observation shows {:?}",
        texts(&o)
    );
    let eight = click(&o, "8");
    d.act(&w.id, Some(&eight), &left).await.expect("click 8");
    let o = type_outside(&d, &w.id, &[&["type", "5"]]).await;
    assert!(
        shows(&o, "785"),
        "8 clicked by ufo and 5 typed outside it, but the next observation shows {:?}",
        texts(&o)
    );
}
