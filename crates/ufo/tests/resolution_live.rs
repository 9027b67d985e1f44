//! Control resolution on the live desktop (docs/resolution.md, "Control resolution"), through `ufo mcp serve`
//! and a scripted `ufo run --desktop live`: `act` with `name: "1"` clicks KCalc's button "1" (a
//! name made of digits is a name, not a label), read back off ufo through pyatspi; a click on
//! LibreOffice Writer's toolbar "Undo", disabled in a fresh document, fails with "is disabled",
//! asks no CONFIRM, and the button is still disabled (Paste is not used: its state follows the
//! clipboard, which other programs may fill).

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use ufo_desktop::testing::script::{app, host_assign, host_finish, line, write_script};
use ufo_desktop::testing::{require_live, ProcessGuard};

use common::{live_run_args, ufo_live};

/// One live application at a time: the tests share the desktop.
static SERIAL: Mutex<()> = Mutex::new(());

/// `ufo mcp serve --allow-actions` on the live desktop, initialised.
type Server = common::mcp_stdio::McpStdio;

impl Server {
    fn on_live(home: &Path) -> Self {
        Self::start(Self::ufo(home))
    }

    /// Observe `window` until its controls mention `wanted` (the application may still be
    /// starting), within `within`.
    fn observe_until(&mut self, window: &str, wanted: &str, within: Duration) -> String {
        let end = Instant::now() + within;
        let mut last = String::new();
        while Instant::now() < end {
            let (err, text) = self.call("observe_window", json!({"window": window}));
            if !err && text.contains(wanted) {
                return text;
            }
            last = text;
            std::thread::sleep(Duration::from_millis(500));
        }
        panic!("{window:?} never showed {wanted:?}; last observation: {last}");
    }
}

/// Through pyatspi: the names of KCalc's frames (its display is a frame named by the number
/// it shows), once one of them is `want`.
const KCALC_DISPLAY: &str = r#"
import sys, time, pyatspi
want = sys.argv[1]
def frames(n, out, depth=0):
    if depth > 12: return
    if n.getRoleName() == 'frame': out.append(n.name)
    for i in range(min(n.childCount, 100)):
        c = n.getChildAtIndex(i)
        if c is not None: frames(c, out, depth + 1)
names = []
end = time.time() + 20
while time.time() < end:
    names = []
    for app in pyatspi.Registry.getDesktop(0):
        if app is not None and app.name == 'kcalc': frames(app, names)
    if want in names: break
    time.sleep(0.3)
print('|'.join(names))
"#;

/// Through pyatspi: the states of the first push button named `argv[1]` of soffice, as
/// `enabled`/`disabled` once it is `argv[2]` (or the last seen after 20 s).
const SOFFICE_BUTTON: &str = r#"
import sys, time, pyatspi
name, want = sys.argv[1], sys.argv[2]
def find(n, depth=0):
    if depth > 25: return None
    if n.getRoleName() == 'push button' and n.name == name: return n
    for i in range(min(n.childCount, 200)):
        c = n.getChildAtIndex(i)
        if c is not None:
            f = find(c, depth + 1)
            if f is not None: return f
    return None
seen = 'absent'
end = time.time() + 20
while time.time() < end:
    for app in pyatspi.Registry.getDesktop(0):
        if app is not None and app.name == 'soffice':
            b = find(app)
            if b is not None:
                s = b.getState()
                on = s.contains(pyatspi.STATE_SENSITIVE) or s.contains(pyatspi.STATE_ENABLED)
                seen = 'enabled' if on else 'disabled'
    if seen == want: break
    time.sleep(0.3)
print(seen)
"#;

/// A fresh LibreOffice Writer of its own profile (under `dir`), ended when the guard drops.
fn start_writer(dir: &Path, home: &Path) -> ProcessGuard {
    let profile = dir.join(format!("ufo-disabled-{}", std::process::id()));
    // the profile argument marks this Writer's processes: the guard ends them by it
    let marker = format!("-env:UserInstallation=file://{}", profile.display());
    let child = Command::new("soffice")
        .arg("--writer")
        .arg("--norestore")
        .arg("--nologo")
        .arg(&marker)
        .env("HOME", home)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("soffice starts");
    ProcessGuard::new(marker, Some(child))
}

fn python(script: &str, args: &[&str]) -> String {
    let out = Command::new("/usr/bin/python3")
        .arg("-c")
        .arg(script)
        .args(args)
        .output()
        .expect("python3 runs");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Issue 24, item 4: `name: "1"` is KCalc's button "1", never label 1 ("File"); `label`
/// names a control by its number. The display shows 13 after `name: "1"`, `name: "3"`.
#[test]
fn act_with_a_digit_name_clicks_the_button_of_that_name_on_kcalc() {
    if !require_live("act_with_a_digit_name_clicks_the_button_of_that_name_on_kcalc") {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).expect("home");
    let token = format!("kcalc-names-{}", std::process::id());
    let child = Command::new("kcalc")
        .args(["-name", &token])
        .env("QT_LINUX_ACCESSIBILITY_ALWAYS_ON", "1")
        .env("HOME", &home)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("kcalc starts");
    let _app = ProcessGuard::new(token, Some(child));
    let mut server = Server::on_live(&home);
    let listing = server.observe_until("KCalc", "\"name\":\"1\"", Duration::from_secs(90));
    for name in ["1", "3"] {
        let (err, text) = server.call(
            "act",
            json!({"window": "KCalc", "name": name, "function": "click"}),
        );
        assert!(!err, "act name {name:?}: {text}\n{listing}");
    }
    let frames = python(KCALC_DISPLAY, &["13"]);
    assert!(
        frames.split('|').any(|f| f == "13"),
        "KCalc's display does not show 13 (its frames: {frames:?})"
    );
}

/// Issue 24, item 5: Writer's toolbar "Undo" is disabled in a fresh document; `act` click on
/// it fails with "is disabled" and nothing is done (checked off ufo: still disabled, and no
/// window opened).
#[test]
fn act_on_a_disabled_control_fails_with_is_disabled_on_writer() {
    if !require_live("act_on_a_disabled_control_fails_with_is_disabled_on_writer") {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).expect("home");
    let _app = start_writer(tmp.path(), &home);
    let mut server = Server::on_live(&home);
    // (a document still loading may show Undo enabled for a moment: observed again, bounded)
    let settled = Instant::now() + Duration::from_secs(20);
    let undo = loop {
        let listing = server.observe_until("Writer", "\"name\":\"Undo\"", Duration::from_secs(120));
        let observed: Value = serde_json::from_str(&listing).expect("observation is JSON");
        let undo = observed["controls"]
            .as_array()
            .and_then(|cs| cs.iter().find(|c| c["name"] == "Undo"))
            .cloned()
            .unwrap_or_default();
        if undo["enabled"] == false || Instant::now() > settled {
            break undo;
        }
        std::thread::sleep(Duration::from_millis(500));
    };
    assert_eq!(
        undo["enabled"], false,
        "Undo is not observed as disabled: {undo}"
    );
    let role = undo["role"].as_str().unwrap_or("button").to_string();
    let (err, text) = server.call(
        "act",
        json!({"window": "Writer", "name": format!("{role} \"Undo\""), "function": "click"}),
    );
    assert!(err, "a click on the disabled Undo was not refused: {text}");
    assert!(text.contains("is disabled"), "{text}");
    assert_eq!(python(SOFFICE_BUTTON, &["Undo", "disabled"]), "disabled");
}

/// Issue 24, item 5, through the AppAgent: a scripted model answers CONFIRM for a click on
/// Writer's toolbar "Undo", disabled in a fresh document (copied as its line); the step fails
/// with "is disabled", no CONFIRM is entered (with `--confirm no` a CONFIRM would end the
/// subtask rejected), and the button is still disabled (pyatspi).
#[test]
fn a_scripted_run_asks_no_confirm_for_a_disabled_control_on_writer() {
    if !require_live("a_scripted_run_asks_no_confirm_for_a_disabled_control_on_writer") {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).expect("home");
    let _app = start_writer(tmp.path(), &home);
    // the window is up and its Undo listed before the run starts
    let mut server = Server::on_live(&home);
    // LibreOffice lists its toolbar before the document's state reaches it (a fresh
    // document's Undo shows enabled for a moment): look until it is disabled, bounded
    let settled = Instant::now() + Duration::from_secs(60);
    let (observed, undo) = loop {
        let listing = server.observe_until("Writer", "\"name\":\"Undo\"", Duration::from_secs(120));
        let observed: Value = serde_json::from_str(&listing).expect("observation is JSON");
        let undo = observed["controls"]
            .as_array()
            .and_then(|cs| cs.iter().find(|c| c["name"] == "Undo"))
            .cloned()
            .unwrap_or_default();
        if undo["enabled"] == false || Instant::now() > settled {
            break (observed, undo);
        }
        std::thread::sleep(Duration::from_millis(500));
    };
    drop(server);
    assert_eq!(
        undo["enabled"], false,
        "Undo is not observed as disabled: {undo}"
    );
    let role = undo["role"].as_str().unwrap_or("button").to_string();
    let window_id = observed["window"]["id"]
        .as_str()
        .expect("the observation names its window")
        .to_string();
    let lines = [
        // by the window's id: a name like "LibreOffice Writer" would launch another Writer
        host_assign("Undo the last change", &window_id),
        line(
            "app",
            app(
                &format!("[99] {role} \"Undo\""),
                "",
                "click",
                json!({}),
                "CONFIRM",
            ),
            &[],
        ),
        line(
            "app",
            app("", "", "", json!({}), "FINISH"),
            &["is disabled"],
        ),
        host_finish(),
    ];
    let script = write_script(tmp.path(), &lines);
    let out = tmp.path().join("out");
    let run = ufo_live(
        &home,
        &live_run_args(&script, &out, &["--confirm", "no", "Undo the last change"]),
        &[],
    );
    let events = std::fs::read_to_string(out.join("events.jsonl")).unwrap_or_default();
    let log = format!("{}\n{events}", String::from_utf8_lossy(&run.stderr));
    assert_eq!(run.status.code(), Some(0), "{log}");
    let steps: Vec<Value> = events
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["type"] == "step")
        .collect();
    assert!(
        !steps.iter().any(
            |st| st["role"] == "app" && (st["state"] == "CONFIRM" || st["status"] == "CONFIRM")
        ),
        "a CONFIRM was entered for a disabled control\n{log}"
    );
    assert!(
        steps.iter().any(|st| st["result"]
            .as_str()
            .is_some_and(|r| r.contains("control is disabled") && r.contains("\"Undo\""))),
        "{log}"
    );
    assert_eq!(python(SOFFICE_BUTTON, &["Undo", "disabled"]), "disabled");
}
