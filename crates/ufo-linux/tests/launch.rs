//! Live tests of how ufo starts GUI applications (issue 12, item 1): the accessibility
//! environment every launched application gets, and a shell command that starts a GUI
//! program returning once its window is there (or with its output when it exits without
//! one).
//!
//! They need a desktop session (`scripts/desktop-session.sh up`, then `source` its env file)
//! and xfce4-terminal (`scripts/test-deps.sh install_apps`). Without `DISPLAY` and without
//! `UFO_LIVE_TESTS=1` they are skipped with a printed reason; with `UFO_LIVE_TESTS=1` they
//! always run and fail loudly when something is missing.
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};
use ufo_desktop::testing::require_live;

use ufo_linux::{LinuxConfig, LinuxDesktop};

/// Kills, by pid, every process whose command line holds the token, when dropped.
struct Guard(String);

impl Drop for Guard {
    fn drop(&mut self) {
        for _ in 0..50 {
            let pids = ufo_proc::live_processes_with_arg(&self.0);
            if pids.is_empty() {
                return;
            }
            for p in pids {
                let _ = std::process::Command::new("kill")
                    .arg(p.to_string())
                    .stderr(std::process::Stdio::null())
                    .status();
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

fn environ(pid: u32) -> Vec<String> {
    std::fs::read(format!("/proc/{pid}/environ"))
        .map(|e| {
            e.split(|b| *b == 0)
                .map(|v| String::from_utf8_lossy(v).into_owned())
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_shell_launch_returns_with_the_window_and_the_app_gets_the_accessibility_switches() {
    let test = "a_shell_launch_returns_with_the_window_and_the_app_gets_the_accessibility_switches";
    if !require_live(test) {
        return;
    }
    assert!(
        ufo_proc::which("xfce4-terminal", None).is_some(),
        "xfce4-terminal is not installed: run scripts/test-deps.sh install_apps (as root)"
    );
    // the switches come from ufo, not from this process's environment
    for k in [
        "GTK_MODULES",
        "QT_LINUX_ACCESSIBILITY_ALWAYS_ON",
        "ACCESSIBILITY_ENABLED",
    ] {
        std::env::remove_var(k);
    }
    let d = LinuxDesktop::connect(LinuxConfig::default())
        .await
        .unwrap_or_else(|e| panic!("the live desktop is unavailable: {e}"));

    // a GUI program that exits without a window: its exit code and output, as any command
    let out = d
        .run_shell("xfce4-terminal --no-such-option-4711")
        .await
        .expect("runs");
    assert!(matches!(out.code, Some(c) if c != 0), "{out:?}");
    assert!(out.stdout.contains("no-such-option-4711"), "{out:?}");
    assert_eq!(out.launched, None);
    // with an argument that opens no window it is an ordinary command, waited for
    let out = d.run_shell("xfce4-terminal --version").await.expect("runs");
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(out.stdout.contains("xfce4-terminal"), "{out:?}");

    // a GUI program started in the background: back once its window is there, still running
    let token = format!("ufo-launch-test-{}", std::process::id());
    let guard = Guard(format!("--title={token}"));
    let t = Instant::now();
    let out = d
        .run_shell(&format!(
            "xfce4-terminal --disable-server --title={token} &"
        ))
        .await
        .expect("launches");
    assert!(
        t.elapsed() < Duration::from_secs(25),
        "held for {:?}",
        t.elapsed()
    );
    assert!(out.launched.is_some(), "{out:?}");
    let pids = ufo_proc::live_processes_with_arg(&guard.0);
    assert_eq!(pids.len(), 1, "{pids:?}");
    let env = environ(pids[0]);
    for want in [
        "GTK_MODULES=gail:atk-bridge",
        "QT_LINUX_ACCESSIBILITY_ALWAYS_ON=1",
        "ACCESSIBILITY_ENABLED=1",
    ] {
        assert!(env.iter().any(|v| v == want), "{want} missing: {env:?}");
    }
    drop(d);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        ufo_proc::live_processes_with_arg(&guard.0),
        pids,
        "the terminal did not outlive the desktop connection"
    );
}
