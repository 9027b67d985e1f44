//! Pages observed while they load (issue 23): a navigation to a page a local server answers
//! after 3 s, typed in the address bar, is observed once, and that one observation shows the
//! new page (in Chromium and in Firefox ESR); a `file://` page opened in a new window is
//! observed at once with its content; a LibreOffice Calc the host launches is observed with
//! its sheet. What was loaded is checked outside ufo too: the server's log of requests and
//! the window's title as the X server has it (`xdotool`), the cell by pyatspi.
//!
//! Needs the desktop session (scripts/desktop-session.sh), `chromium`, `firefox-esr`,
//! LibreOffice (GTK3 plugin), `python3-pyatspi` and `xdotool` (and `cargo build -p ufo`). Skipped with a message without DISPLAY and UFO_LIVE_TESTS; with
//! UFO_LIVE_TESTS=1 anything missing fails the test.
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod support;
use support::*;

use ufo_core::{Desktop, UiAction, WindowObservation};
use ufo_desktop::testing::http::{Page, PageServer};
use ufo_desktop::testing::script::{app_line, host_finish, line, ufo_binary, write_script};
use ufo_desktop::testing::{require_live, ProcessGuard};
use ufo_linux::{LinuxConfig, LinuxDesktop};

static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// How long the server takes to answer `/slow`.
const SLOW: Duration = Duration::from_secs(3);

fn page(title: &str, button: &str) -> String {
    format!(
        "<!doctype html><html><head><title>{title}</title></head><body><h1>{title}</h1>\
         <button>{button}</button></body></html>"
    )
}

/// A local HTTP server: `/slow` answers after [`SLOW`] with the page "Slow page" (a button
/// "Arrived"), anything else at once with "First page" (a button "Start here").
fn serve() -> PageServer {
    PageServer::start(|path| {
        Page::ok(if path.starts_with("/slow") {
            std::thread::sleep(SLOW);
            page("Slow page", "Arrived")
        } else if path.starts_with("/favicon") {
            String::new()
        } else {
            page("First page", "Start here")
        })
    })
}

/// Which browser a test drives.
#[derive(Clone, Copy)]
enum Browser {
    Chromium,
    Firefox,
}

/// Start the browser on `url` in a fresh profile under `dir`.
fn start(browser: Browser, dir: &Path, url: &str) -> ProcessGuard {
    let profile = dir.join("profile");
    std::fs::create_dir_all(&profile).unwrap();
    let mut cmd = match browser {
        Browser::Chromium => ufo_desktop::testing::chromium_command(&profile),
        Browser::Firefox => {
            // no first-run pages: the page asked for is the only tab
            std::fs::write(
                profile.join("user.js"),
                "user_pref(\"browser.aboutwelcome.enabled\", false);\n\
                 user_pref(\"datareporting.policy.dataSubmissionEnabled\", false);\n\
                 user_pref(\"browser.startup.homepage_override.mstone\", \"ignore\");\n\
                 user_pref(\"trailhead.firstrun.didSeeAboutWelcome\", true);\n\
                 user_pref(\"browser.shell.checkDefaultBrowser\", false);\n",
            )
            .unwrap();
            let mut c = Command::new("firefox-esr");
            c.args(["--no-remote", "--profile"])
                .arg(&profile)
                .env("GNOME_ACCESSIBILITY", "1")
                .env("MOZ_ENABLE_ACCESSIBILITY", "1");
            c
        }
    };
    let child = cmd
        .arg(url)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("the browser starts (install chromium and firefox-esr)");
    // (every process of the browser carries its profile as one whole argument)
    let marker = match browser {
        Browser::Chromium => ufo_desktop::testing::chromium_profile_arg(&profile),
        Browser::Firefox => profile.display().to_string(),
    };
    ProcessGuard::new(marker, Some(child))
}

async fn connect(home: &Path) -> LinuxDesktop {
    // (RUST_LOG=ufo_linux::observe::loading=debug shows each look of the wait)
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
    let config = LinuxConfig {
        launch_env: LinuxConfig::home_env(home),
        ..LinuxConfig::default()
    };
    LinuxDesktop::connect(config)
        .await
        .unwrap_or_else(|e| panic!("the live desktop is unavailable: {e}"))
}

/// The id of the window whose title holds `title`, waited for up to `within`.
async fn window_titled(d: &LinuxDesktop, title: &str, within: Duration) -> ufo_core::WindowId {
    let deadline = Instant::now() + within;
    loop {
        let ws = d.windows().await.expect("windows");
        if let Some(w) = ws.iter().find(|w| w.title.contains(title)) {
            return w.id.clone();
        }
        assert!(
            Instant::now() < deadline,
            "no window titled {title:?} within {within:?}: {:?}",
            ws.iter().map(|w| &w.title).collect::<Vec<_>>()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Whether the observation lists a button named `name`.
fn has_button(obs: &WindowObservation, name: &str) -> bool {
    obs.controls
        .iter()
        .any(|c| c.name == name && c.role.contains("button"))
}

/// The window's title as the X server has it (not through ufo).
fn x_title(id: &str) -> String {
    let xid = u32::from_str_radix(id.trim_start_matches("0x"), 16).unwrap();
    let out = Command::new("xdotool")
        .args(["getwindowname", &xid.to_string()])
        .output()
        .expect("xdotool runs (apt-get install xdotool)");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Navigate from the first page to the slow one through the address bar, then observe once.
async fn slow_navigation_is_observed_loaded(browser: Browser) {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let server = serve();
    let first = server.url("/first");
    let _browser = start(browser, tmp.path(), &first);
    let d = connect(&home).await;
    let id = window_titled(&d, "First page", Duration::from_secs(60)).await;
    let before = observe_until(
        &d,
        &id,
        "the first page's button",
        Duration::from_secs(30),
        |o| has_button(o, "Start here"),
    )
    .await;
    let address = before
        .controls
        .iter()
        .find(|c| {
            ["entry", "combo box", "text"].contains(&c.role.as_str())
                && c.name.to_lowercase().contains("address")
        })
        .unwrap_or_else(|| panic!("no address bar: {}", listing(&before)))
        .id
        .clone();

    let keys = format!("{{ctrl+a}}127.0.0.1:{}/slow{{ENTER}}", server.port);
    let asked_at = Instant::now();
    d.act(&id, Some(&address), &UiAction::TypeKeys { keys })
        .await
        .expect("typing the address");
    let obs = d.observe(&id).await.expect("observe");
    let took = asked_at.elapsed();

    // outside ufo: the server was asked for the page, and the window shows it
    assert!(
        server.requests().iter().any(|r| r.path == "/slow"),
        "the browser never asked for the slow page: {:?}",
        server.requests()
    );
    if !has_button(&obs, "Arrived") {
        let now = x_title(id.as_str());
        std::thread::sleep(SLOW);
        panic!(
            "the first observation after Enter (after {took:?}) is not of the new page \
             (window title {now:?}, {:?} 3 s later): {}",
            x_title(id.as_str()),
            listing(&obs)
        );
    }
    assert!(
        x_title(id.as_str()).contains("Slow page"),
        "the window's title is {:?}",
        x_title(id.as_str())
    );
    assert!(
        took < SLOW + Duration::from_secs(8),
        "the wait took {took:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chromium_a_slow_page_typed_in_the_address_bar_is_observed_once_loaded() {
    if !require_live("chromium_a_slow_page_typed_in_the_address_bar_is_observed_once_loaded") {
        return;
    }
    let _serial = SERIAL.lock().await;
    slow_navigation_is_observed_loaded(Browser::Chromium).await;
}

/// Under load Firefox ESR may read the keys, and start the navigation (its document turns
/// `BUSY`), only after ufo's `type_keys` has settled; it empties the old document before the
/// new one comes: the observation looks for the start from when Firefox answered a ping sent
/// behind the keys, and waits past the emptied document.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn firefox_a_slow_page_typed_in_the_address_bar_is_observed_once_loaded() {
    if !require_live("firefox_a_slow_page_typed_in_the_address_bar_is_observed_once_loaded") {
        return;
    }
    let _serial = SERIAL.lock().await;
    slow_navigation_is_observed_loaded(Browser::Firefox).await;
}

/// A `file://` page opened in a new window of a running Chromium is observed at once: the
/// first observation has the page's content. The new window is the one of this browser's
/// process that was not there before (another test's window may still be closing).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chromium_a_file_page_in_a_new_window_is_observed_with_its_document() {
    if !require_live("chromium_a_file_page_in_a_new_window_is_observed_with_its_document") {
        return;
    }
    let _serial = SERIAL.lock().await;
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let server = serve();
    let first = server.url("/first");
    let browser = start(Browser::Chromium, tmp.path(), &first);
    let d = connect(&home).await;
    let id = window_titled(&d, "First page", Duration::from_secs(60)).await;
    observe_until(&d, &id, "the first page", Duration::from_secs(30), |o| {
        has_button(o, "Start here")
    })
    .await;

    let file = tmp.path().join("local.html");
    std::fs::write(&file, page("Local file page", "From the disk")).unwrap();
    // the new window is this browser's (same process) and was not there before
    let browser_pid = d
        .windows()
        .await
        .expect("windows")
        .into_iter()
        .find(|w| w.id == id)
        .and_then(|w| w.pid);
    let before: Vec<ufo_core::WindowId> = d
        .windows()
        .await
        .expect("windows")
        .into_iter()
        .map(|w| w.id)
        .collect();
    let status = Command::new("chromium")
        .arg(&browser.arg)
        .args([
            "--no-sandbox",
            "--force-renderer-accessibility",
            "--new-window",
        ])
        .arg(format!("file://{}", file.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("chromium hands the page to the running one");
    assert!(status.success(), "chromium --new-window failed: {status}");
    // the new window, as soon as the X server has it (its title may still be "Untitled")
    let deadline = Instant::now() + Duration::from_secs(30);
    let new_id = loop {
        let ws = d.windows().await.expect("windows");
        if let Some(w) = ws
            .iter()
            .find(|w| !before.contains(&w.id) && w.pid == browser_pid && !w.title.is_empty())
        {
            break w.id.clone();
        }
        assert!(Instant::now() < deadline, "no new Chromium window");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let obs = d.observe(&new_id).await.expect("observe");
    assert!(
        has_button(&obs, "From the disk"),
        "the first observation of the new window has no page (title {:?}): {}",
        x_title(new_id.as_str()),
        listing(&obs)
    );
}

/// Cell A1 of the Calc sheet of these processes, read by pyatspi (not by ufo): its text, or
/// why it could not be read.
fn calc_a1_by_pyatspi(pids: &[u32]) -> Result<String, String> {
    const SCRIPT: &str = r#"
import sys, pyatspi
pids = set(int(p) for p in sys.argv[1:])
def find(n, depth):
    if n is None or depth > 14:
        return None
    if n.getRole() == pyatspi.ROLE_TABLE:
        return n
    for c in n:
        r = find(c, depth + 1)
        if r is not None:
            return r
    return None
for app in pyatspi.Registry.getDesktop(0):
    try:
        if app is None or app.get_process_id() not in pids:
            continue
    except Exception:
        continue
    for frame in app:
        t = find(frame, 0)
        if t is not None:
            cell = t.queryTable().getAccessibleAt(0, 0)
            print(cell.queryText().getText(0, -1))
            sys.exit(0)
print("no sheet on the bus", file=sys.stderr)
sys.exit(1)
"#;
    let out = Command::new("/usr/bin/python3")
        .arg("-c")
        .arg(SCRIPT)
        .args(pids.iter().map(|p| p.to_string()))
        .output()
        .map_err(|e| format!("python3 does not run: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

/// A LibreOffice Calc launched by the host's `Bash` shows its window seconds before it puts
/// the sheet in it: the first step of the app agent, a `set_text` on A1, must find the cell
/// (the observation waits, bounded, for the window's content). A1 is then read by pyatspi.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calc_launched_by_the_host_is_observed_with_its_sheet() {
    if !require_live("calc_launched_by_the_host_is_observed_with_its_sheet") {
        return;
    }
    let _serial = SERIAL.lock().await;
    assert!(
        ufo_linux::libreoffice_gtk3_installed(),
        "LibreOffice with its GTK3 plugin is not installed: run scripts/test-deps.sh install_libreoffice (as root)"
    );
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let profile_arg = format!(
        "-env:UserInstallation=file://{}",
        tmp.path().join("profile").display()
    );
    let _office = ProcessGuard::new(profile_arg.clone(), None);
    // (one simple command, as the shell gate lets it run; HOME and the plugin come from ufo's
    // environment)
    let bash = format!("libreoffice --calc --norestore --nologo {profile_arg} &");
    let lines = [
        line(
            "host",
            serde_json::json!({"Observation": "Calc is not open.", "Thought": "Start it.",
                "Current Sub-Task": "Put 42 in A1", "Status": "CONTINUE", "Bash": bash}),
            &[],
        ),
        line(
            "host",
            serde_json::json!({"Observation": "Calc is open.", "Thought": "Assign.",
                "Current Sub-Task": "Put 42 in A1", "ControlText": "Untitled 1 - LibreOffice Calc",
                "Status": "ASSIGN"}),
            &[],
        ),
        app_line(
            "A1",
            "",
            "set_text",
            serde_json::json!({"text": "42"}),
            "FINISH",
        ),
        host_finish(),
    ];
    let script = write_script(tmp.path(), &lines);
    let run = tokio::time::timeout(
        Duration::from_secs(300),
        tokio::process::Command::new(ufo_binary())
            .args(["run", "--desktop", "live", "--llm"])
            .arg(format!("script:{}", script.display()))
            .arg("--out")
            .arg(tmp.path().join("out"))
            // the safe guard holds a host Bash for confirmation
            .args(["--confirm", "yes"])
            .arg("Open Calc and put 42 in A1")
            .env_remove("UFO_LLM")
            .env("HOME", &home)
            .env("SAL_USE_VCLPLUGIN", "gtk3")
            .stdin(Stdio::null())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("ufo run did not finish within 5 minutes")
    .expect("ufo runs");
    let stderr = String::from_utf8_lossy(&run.stderr).into_owned();
    assert_eq!(run.status.code(), Some(0), "ufo run failed:\n{stderr}");
    assert!(
        !stderr.contains("action failed") && !stderr.contains("not found"),
        "the first step did not find A1:\n{stderr}"
    );
    // outside ufo: the cell holds 42 (LibreOffice may take a moment to expose it)
    let pids = ufo_proc::live_processes_with_arg(&profile_arg);
    let deadline = Instant::now() + Duration::from_secs(20);
    let a1 = loop {
        let a1 = calc_a1_by_pyatspi(&pids);
        if a1.as_deref() == Ok("42") || Instant::now() > deadline {
            break a1;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    assert_eq!(
        a1.as_deref(),
        Ok("42"),
        "A1 by pyatspi; ufo's log:\n{stderr}"
    );
}
