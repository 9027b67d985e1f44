//! Demonstrations (issue 26), live: a "person" (xdotool on the session's display) computes
//! 12 × 7 on gnome-calculator while `ufo demo record` runs; the recorded plan names each
//! button clicked; stored with `ufo knowledge add-demo`, `ufo knowledge search --kind demo`
//! finds it; replayed by `ufo follow --desktop live` on a fresh calculator (a scripted model
//! that clicks exactly the recorded steps' controls, by name), the display shows 84, read
//! through pyatspi.
//!
//! Run when `UFO_LIVE_TESTS=1` (scripts/test.sh sets it after starting the session); skipped
//! with a message otherwise.

mod common;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use ufo_desktop::testing::require_live;
use ufo_desktop::testing::script::{app, host_finish, line};

use common::procs;
use common::*;
use nix::sys::signal::Signal;

/// Live tests share one display: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

/// A child killed (and reaped) when the test ends, however it ends.
struct Kill(Option<Child>);

impl Drop for Kill {
    fn drop(&mut self) {
        if let Some(c) = self.0.as_mut() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// A process (by pid) ended when the test ends.
struct KillPid(Option<u32>);

impl Drop for KillPid {
    fn drop(&mut self) {
        if let Some(pid) = self.0 {
            procs::signal(pid, Signal::SIGTERM);
        }
    }
}

/// Wait at most `secs` for `ok`.
fn wait_for(what: &str, secs: u64, ok: &dyn Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < deadline {
        if ok() {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("timed out waiting for {what}");
}

/// The centre of the button named `name` in an `ufo inspect` listing.
fn centre(listing: &str, name: &str) -> (i32, i32) {
    let tag = format!("button \"{name}\" @");
    let line = listing
        .lines()
        .find(|l| l.contains(&tag))
        .unwrap_or_else(|| panic!("no button {name:?} in:\n{listing}"));
    let mut parts = line
        .split(&tag)
        .nth(1)
        .expect("geometry")
        .split_whitespace();
    let (pos, size) = (parts.next().expect("position"), parts.next().expect("size"));
    let (x, y) = pos.split_once(',').expect("x,y");
    let (w, h) = size.split_once('x').expect("WxH");
    let num = |v: &str| v.parse::<i32>().expect("a number");
    let (x, y, w, h) = (num(x), num(y), num(w), num(h));
    (x + w / 2, y + h / 2)
}

fn pid_of(listing: &str) -> Option<u32> {
    listing
        .lines()
        .next()
        .and_then(|l| l.split(" pid ").nth(1))
        .and_then(|r| r.split_whitespace().next())
        .and_then(|p| p.parse().ok())
}

/// Through pyatspi: the text of gnome-calculator's display (its editable text), once it is
/// `argv[1]` (or the last read after 20 s).
const CALC_DISPLAY: &str = r#"
import sys, time, pyatspi
want = sys.argv[1]
def texts(n, out, depth=0):
    if depth > 25 or len(out) > 50: return
    try:
        if n.getRoleName() in ('editbar', 'text', 'entry'):
            t = n.queryText()
            out.append(t.getText(0, t.characterCount))
    except Exception:
        pass
    for i in range(min(n.childCount, 200)):
        c = n.getChildAtIndex(i)
        if c is not None: texts(c, out, depth + 1)
seen = []
end = time.time() + 20
while time.time() < end:
    seen = []
    for a in pyatspi.Registry.getDesktop(0):
        if a is not None and a.name == 'gnome-calculator': texts(a, seen)
    if any(want in s for s in seen): break
    time.sleep(0.3)
print('|'.join(seen))
"#;

/// Send SIGTERM to the recorder and wait (30 s at most) for it to end.
fn terminate(recorder: &mut Kill) -> std::process::ExitStatus {
    let mut child = recorder.0.take().expect("recorder");
    procs::signal(child.id(), Signal::SIGTERM);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(s) = child.try_wait().expect("wait") {
            return s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("ufo demo record did not end on SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn presses(err: &Path) -> usize {
    std::fs::read_to_string(err)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.starts_with("press "))
        .count()
}

#[test]
fn a_recorded_demonstration_replays_to_the_same_result() {
    if !require_live("a_recorded_demonstration_replays_to_the_same_result") {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).expect("home");
    let rec = tmp.path().join("rec");
    let png = tmp.path().join("calc.png");

    // the person's calculator
    let calc = Kill(Some(
        Command::new("gnome-calculator")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("gnome-calculator starts"),
    ));
    let listing = wait_for_control(
        &home,
        "Calculator",
        "button \"×\"",
        Duration::from_secs(60),
        &png,
    );

    // the recorder
    let err = tmp.path().join("record.err");
    let recorder = Command::new(assert_cmd::cargo::cargo_bin("ufo"))
        .args(["demo", "record", "--out"])
        .arg(&rec)
        .args(["--max-seconds", "180", "--task", "Compute 12 × 7"])
        .env("HOME", &home)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&err).expect("stderr file"))
        .spawn()
        .expect("ufo demo record starts");
    let mut recorder = Kill(Some(recorder));
    wait_for("the recorder to start", 60, &|| {
        std::fs::read_to_string(&err)
            .unwrap_or_default()
            .contains("recording:")
    });

    // the person clicks 1 2 × 7 =, each once the recorder has resolved the one before
    for (i, name) in ["1", "2", "×", "7", "="].iter().enumerate() {
        let (x, y) = centre(&listing, name);
        let ok = Command::new("xdotool")
            .args(["mousemove", &x.to_string(), &y.to_string(), "click", "1"])
            .status()
            .expect("xdotool runs");
        assert!(ok.success());
        wait_for(&format!("press {} to be recorded", i + 1), 60, &|| {
            presses(&err) > i
        });
    }
    let shown = Command::new("/usr/bin/python3")
        .args(["-c", CALC_DISPLAY, "84"])
        .output()
        .expect("python3");
    assert!(
        String::from_utf8_lossy(&shown.stdout).contains("84"),
        "the person's calculator does not show 84: {}",
        String::from_utf8_lossy(&shown.stdout)
    );
    // SIGTERM ends the recording and writes the plan
    let status = terminate(&mut recorder);
    let log = std::fs::read_to_string(&err).unwrap_or_default();
    assert!(status.success(), "{status:?}\n{log}");
    drop(calc);

    replays_to_84(tmp.path(), &home, &rec, &log);
}

/// The recording in `rec` is the five clicks 1 2 × 7 = on the calculator; stored with
/// `ufo knowledge add-demo` it is found as a demonstration; replayed by `ufo follow --desktop
/// live` on a fresh calculator (a scripted model that clicks each recorded control by name) the
/// display shows 84, read through pyatspi. `log` is the recorder's stderr (for failures).
fn replays_to_84(tmp: &Path, home: &Path, rec: &Path, log: &str) {
    let data = tmp.join("data");
    let png = tmp.join("calc.png");
    let plan: Value =
        serde_json::from_str(&std::fs::read_to_string(rec.join("plan.json")).expect("plan.json"))
            .expect("plan is JSON");
    assert_eq!(plan["task"], "Compute 12 × 7");
    let steps: Vec<String> = plan["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .map(|s| s.as_str().unwrap_or_default().to_string())
        .collect();
    let names = ["1", "2", "×", "7", "="];
    assert_eq!(steps.len(), names.len(), "{steps:?}\n{log}");
    for (step, name) in steps.iter().zip(names) {
        assert_eq!(
            step,
            &format!("Click the button \"{name}\" in the window \"Calculator\""),
            "{log}"
        );
    }
    let summary = std::fs::read_to_string(rec.join("summary.txt")).expect("summary.txt");
    assert!(summary.contains("4. Click the button \"7\""), "{summary}");

    // stored, and found as a demonstration
    let env = [("XDG_DATA_HOME", data.to_str().expect("utf-8"))];
    let add = ufo_live(
        home,
        &[
            "knowledge".into(),
            "add-demo".into(),
            "--request".into(),
            "multiply twelve by seven on the calculator".into(),
            rec.display().to_string(),
        ],
        &env,
    );
    assert_eq!(
        add.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&add.stderr)
    );
    let found = ufo_live(
        home,
        &[
            "knowledge".into(),
            "search".into(),
            "--kind".into(),
            "demo".into(),
            "--json".into(),
            "multiply on the calculator".into(),
        ],
        &env,
    );
    let first: Value = serde_json::from_str(
        String::from_utf8_lossy(&found.stdout)
            .lines()
            .next()
            .expect("one hit"),
    )
    .expect("JSON hit");
    assert_eq!(first["kind"], "demo");
    let canonical = std::fs::canonicalize(rec).expect("canonical");
    assert_eq!(first["location"], canonical.display().to_string());

    // replayed on a fresh calculator: the model clicks each recorded step's control by name
    let demo: Value =
        serde_json::from_str(&std::fs::read_to_string(rec.join("demo.json")).expect("demo.json"))
            .expect("demo is JSON");
    let recorded = demo["steps"].as_array().expect("steps");
    // the host is shown the recorded plan and hands it to the calculator's AppAgent
    let mut host_expect: Vec<&str> = vec!["Compute 12 × 7", "Follower mode", "Your plan so far"];
    host_expect.extend(steps.iter().map(String::as_str));
    let mut lines = vec![line(
        "host",
        json!({"Observation": "No calculator is open.", "Thought": "Launch it and follow the plan.",
               "Current Sub-Task": "Compute 12 × 7", "Message": steps, "Plan": steps,
               "ControlText": "calculator", "Status": "ASSIGN"}),
        &host_expect,
    )];
    for (i, step) in recorded.iter().enumerate() {
        assert_eq!(step["function"], "click");
        let status = if i + 1 == recorded.len() {
            "FINISH"
        } else {
            "CONTINUE"
        };
        let name = s(&step["target"]["name"]);
        let expect = format!("Click the button \"{name}\"");
        lines.push(line(
            "app",
            app(&name, "", "click", json!({}), status),
            &[expect.as_str()],
        ));
    }
    lines.push(host_finish());
    let script = tmp.join("script.jsonl");
    std::fs::write(&script, lines.join("\n")).expect("script");
    let out = tmp.join("out");
    let follow = ufo_live(
        home,
        &[
            "follow".into(),
            rec.join("plan.json").display().to_string(),
            "--desktop".into(),
            "live".into(),
            "--llm".into(),
            format!("script:{}", script.display()),
            "--out".into(),
            out.display().to_string(),
        ],
        &[],
    );
    let fresh = KillPid(pid_of(&inspect_window(home, "Calculator", &png)));
    assert_eq!(
        follow.status.code(),
        Some(0),
        "stderr:\n{}",
        String::from_utf8_lossy(&follow.stderr)
    );
    let shown = Command::new("/usr/bin/python3")
        .args(["-c", CALC_DISPLAY, "84"])
        .output()
        .expect("python3");
    drop(fresh);
    assert!(
        String::from_utf8_lossy(&shown.stdout).contains("84"),
        "the replayed calculator does not show 84: {}",
        String::from_utf8_lossy(&shown.stdout)
    );
}

/// The environment of a private desktop from the file `ufo demo record --desktop private`
/// names (`export K='V'` lines).
fn private_env(file: &Path) -> Vec<(String, String)> {
    std::fs::read_to_string(file)
        .expect("the private desktop's environment file")
        .lines()
        .filter_map(|l| l.strip_prefix("export "))
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_string(), v.trim_matches('\'').replace("'\\''", "'")))
        .collect()
}

/// A command that runs inside the private desktop `env`.
fn inside(program: &str, env: &[(String, String)]) -> Command {
    let mut c = Command::new(program);
    c.env_remove("NO_AT_BRIDGE")
        .env_remove("WAYLAND_DISPLAY")
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    c
}

/// The processes of the private desktops that ufo process `pid` started (their environment
/// carries its mark).
fn marked_by(pid: u32) -> Vec<String> {
    let needle = format!("UFO_SESSION_MARK=ufo-private-{pid}-");
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(env) = std::fs::read(e.path().join("environ")) else {
            continue;
        };
        if env
            .split(|b| *b == 0)
            .any(|kv| kv.starts_with(needle.as_bytes()))
        {
            let comm = std::fs::read_to_string(e.path().join("comm")).unwrap_or_default();
            out.push(format!(
                "{} {}",
                e.file_name().to_string_lossy(),
                comm.trim()
            ));
        }
    }
    out
}

/// `ufo demo record --desktop private`: ufo starts a desktop of its own and says where it is;
/// a "person" (xdotool on that display) computes 12 × 7 on a calculator started there; SIGTERM
/// ends the recording (exit 0) and the private desktop with every process in it (its X server,
/// the calculator); the recording replays to 84 like one made on the live desktop.
#[test]
fn a_demonstration_recorded_on_a_private_desktop_replays_and_leaves_nothing_behind() {
    if !require_live(
        "a_demonstration_recorded_on_a_private_desktop_replays_and_leaves_nothing_behind",
    ) {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).expect("home");
    let rec = tmp.path().join("rec");
    let png = tmp.path().join("calc.png");

    let err = tmp.path().join("record.err");
    let recorder = Command::new(assert_cmd::cargo::cargo_bin("ufo"))
        .args(["demo", "record", "--desktop", "private", "--out"])
        .arg(&rec)
        .args(["--max-seconds", "240", "--task", "Compute 12 × 7"])
        .env("HOME", &home)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&err).expect("stderr file"))
        .spawn()
        .expect("ufo demo record starts");
    let outer = recorder.id();
    let mut recorder = Kill(Some(recorder));
    let log = || std::fs::read_to_string(&err).unwrap_or_default();
    wait_for("the private desktop and the recorder to start", 90, &|| {
        log().contains("recording:")
    });
    // "private desktop: DISPLAY=:N; start a program in it with `. FILE && PROGRAM &`; ..."
    let said = log();
    let announced = said
        .lines()
        .find(|l| l.starts_with("private desktop: DISPLAY=:"))
        .unwrap_or_else(|| panic!("ufo did not say where the private desktop is:\n{said}"))
        .to_string();
    let display = announced["private desktop: DISPLAY=".len()..]
        .split(';')
        .next()
        .expect("display")
        .to_string();
    assert_ne!(
        Some(display.as_str()),
        std::env::var("DISPLAY").ok().as_deref(),
        "the private desktop is not the session's own display"
    );
    let env_file = announced
        .split("`. ")
        .nth(1)
        .and_then(|r| r.split(" && ").next())
        .expect("the environment file");
    let env = private_env(Path::new(env_file));
    assert!(
        env.iter().any(|(k, v)| k == "DISPLAY" && *v == display),
        "{env:?}"
    );

    // the person starts a calculator in it and clicks 1 2 × 7 =
    let calc = inside("gnome-calculator", &env)
        .env("HOME", &home)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("gnome-calculator starts");
    let mut calc = Kill(Some(calc));
    let deadline = Instant::now() + Duration::from_secs(60);
    let listing = loop {
        let out = inside(
            assert_cmd::cargo::cargo_bin("ufo").to_str().expect("utf-8"),
            &env,
        )
        .env("HOME", &home)
        .args(["inspect", "Calculator", "--png"])
        .arg(&png)
        .output()
        .expect("ufo inspect runs");
        let listing = String::from_utf8_lossy(&out.stdout).into_owned();
        if listing.contains("button \"×\"") {
            break listing;
        }
        assert!(
            Instant::now() < deadline,
            "the private desktop's calculator never showed ×:\n{listing}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        std::thread::sleep(Duration::from_millis(500));
    };
    for (i, name) in ["1", "2", "×", "7", "="].iter().enumerate() {
        let (x, y) = centre(&listing, name);
        let ok = Command::new("xdotool")
            .env("DISPLAY", &display)
            .args(["mousemove", &x.to_string(), &y.to_string(), "click", "1"])
            .status()
            .expect("xdotool runs");
        assert!(ok.success());
        wait_for(&format!("press {} to be recorded", i + 1), 60, &|| {
            presses(&err) > i
        });
    }
    let shown = inside("/usr/bin/python3", &env)
        .args(["-c", CALC_DISPLAY, "84"])
        .output()
        .expect("python3");
    assert!(
        String::from_utf8_lossy(&shown.stdout).contains("84"),
        "the private desktop's calculator does not show 84: {}",
        String::from_utf8_lossy(&shown.stdout)
    );

    // SIGTERM to ufo ends the recording, writes it, and ends the private desktop
    let status = terminate(&mut recorder);
    let log = log();
    assert!(status.success(), "{status:?}\n{log}");
    let left = {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let left = marked_by(outer);
            if left.is_empty() || Instant::now() > deadline {
                break left;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    assert!(
        left.is_empty(),
        "processes of the private desktop remain: {left:?}\n{log}"
    );
    // the calculator is this test's child: ended, it waits here to be reaped
    let calc_ended = (0..100).any(|_| {
        let ended = calc
            .0
            .as_mut()
            .is_some_and(|c| matches!(c.try_wait(), Ok(Some(_))));
        if !ended {
            std::thread::sleep(Duration::from_millis(100));
        }
        ended
    });
    assert!(
        calc_ended,
        "the calculator started in the private desktop still runs"
    );
    let n = display.trim_start_matches(':');
    assert!(
        !Path::new(&format!("/tmp/.X{n}-lock")).exists()
            && !Path::new(&format!("/tmp/.X11-unix/X{n}")).exists(),
        "the private X server {display} is still there"
    );

    replays_to_84(tmp.path(), &home, &rec, &log);
}

/// A demonstration folder as `ufo demo record` writes it: the Save of a note in Mousepad.
fn write_demo(dir: &Path) {
    std::fs::create_dir_all(dir).expect("dir");
    let target = json!({"window": "Untitled 1 - Mousepad", "name": "", "role": "text"});
    let demo = json!({
        "task": "Write a note and save it",
        "steps": [
            {"function": "click", "target": target, "x": 100, "y": 200},
            {"function": "type_text", "text": "groceries: milk", "target": target},
            {"function": "keys", "keys": "{ctrl+s}", "target": target}
        ],
        "presses": 17,
        "seconds": 9.5
    });
    std::fs::write(dir.join("demo.json"), demo.to_string()).expect("demo.json");
}

/// `ufo knowledge add-demo` stores a demonstration as kind `demo` (its steps as text, its
/// folder as location) so `search --kind demo` finds it by the request or by its steps; a
/// folder without a recording, or an empty request, is a usage error that says what to do.
#[test]
fn a_demonstration_is_stored_and_found_as_kind_demo() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).expect("home");
    let data = tmp.path().join("data");
    let env = [("XDG_DATA_HOME", data.to_str().expect("utf-8"))];
    let rec = tmp.path().join("note");
    write_demo(&rec);
    let arg = |s: &str| s.to_string();
    let add = ufo_live(
        &home,
        &[
            arg("knowledge"),
            arg("add-demo"),
            arg("--request"),
            arg("jot down a shopping list"),
            rec.display().to_string(),
        ],
        &env,
    );
    assert_eq!(
        add.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&add.stderr)
    );
    let search = |q: &str| {
        let out = ufo_live(
            &home,
            &[
                arg("knowledge"),
                arg("search"),
                arg("--kind"),
                arg("demo"),
                arg("--json"),
                arg(q),
            ],
            &env,
        );
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .collect::<Vec<Value>>()
    };
    let canonical = std::fs::canonicalize(&rec).expect("canonical");
    for q in ["shopping list", "groceries milk"] {
        let hits = search(q);
        assert_eq!(hits.len(), 1, "{q}: {hits:?}");
        assert_eq!(hits[0]["kind"], "demo");
        assert_eq!(hits[0]["title"], "jot down a shopping list");
        assert_eq!(hits[0]["location"], canonical.display().to_string());
    }
    // adding it again replaces it
    let again = ufo_live(
        &home,
        &[
            arg("knowledge"),
            arg("add-demo"),
            arg("--request"),
            arg("jot down a shopping list"),
            rec.display().to_string(),
        ],
        &env,
    );
    assert_eq!(again.status.code(), Some(0));
    assert_eq!(search("shopping list").len(), 1);

    // no recording in the folder; an empty request
    let empty = tmp.path().join("empty");
    std::fs::create_dir_all(&empty).expect("empty");
    let none = ufo_live(
        &home,
        &[
            arg("knowledge"),
            arg("add-demo"),
            arg("--request"),
            arg("anything"),
            empty.display().to_string(),
        ],
        &env,
    );
    assert_eq!(none.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&none.stderr).contains("ufo demo record --out DIR"),
        "{}",
        String::from_utf8_lossy(&none.stderr)
    );
    let blank = ufo_live(
        &home,
        &[
            arg("knowledge"),
            arg("add-demo"),
            arg("--request"),
            arg(" "),
            rec.display().to_string(),
        ],
        &env,
    );
    assert_eq!(blank.status.code(), Some(2));
}

/// The geometry `(x, y, w, h)` of the first line of an `ufo inspect` listing holding `tag`.
fn rect_of(listing: &str, tag: &str) -> (i32, i32, i32, i32) {
    let line = listing
        .lines()
        .find(|l| l.contains(tag))
        .unwrap_or_else(|| panic!("no {tag:?} in:\n{listing}"));
    let mut parts = line
        .split(" @")
        .nth(1)
        .expect("geometry")
        .split_whitespace();
    let (pos, size) = (parts.next().expect("position"), parts.next().expect("size"));
    let (x, y) = pos.split_once(',').expect("x,y");
    let (w, h) = size.split_once('x').expect("WxH");
    let num = |v: &str| v.parse::<i32>().expect("a number");
    (num(x), num(y), num(w), num(h))
}

fn xdotool(args: &[&str]) {
    let ok = Command::new("xdotool")
        .args(args)
        .status()
        .expect("xdotool runs");
    assert!(ok.success(), "xdotool {args:?}");
}

/// Wait at most 30 s for a file's content.
fn content(file: &Path) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match std::fs::read_to_string(file) {
            Ok(s) if !s.is_empty() => return s,
            _ if Instant::now() > deadline => return String::new(),
            _ => std::thread::sleep(Duration::from_millis(100)),
        }
    }
}

/// The second case: the person types a line in Mousepad and saves it (Ctrl+S, the file name
/// typed into the Save As dialog, Enter); the recording merges the characters into two text
/// steps (the line; the file name in the dialog's "Name" field) and two key steps; replayed on
/// a fresh Mousepad with another file name, the file on disk holds the line.
#[test]
fn a_recorded_note_in_mousepad_replays_to_the_same_file() {
    if !require_live("a_recorded_note_in_mousepad_replays_to_the_same_file") {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).expect("home");
    let rec = tmp.path().join("rec");
    let png = tmp.path().join("m.png");
    let shown_file = tmp.path().join("shown.txt");
    let replay_file = tmp.path().join("replayed.txt");

    let editor = Kill(Some(
        Command::new("mousepad")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("mousepad starts"),
    ));
    let listing = wait_for_control(
        &home,
        "Mousepad",
        "text \"\" @",
        Duration::from_secs(60),
        &png,
    );
    let (x, y, w, h) = rect_of(&listing, "text \"\" @");

    let err = tmp.path().join("record.err");
    let mut recorder = Kill(Some(
        Command::new(assert_cmd::cargo::cargo_bin("ufo"))
            .args(["demo", "record", "--out"])
            .arg(&rec)
            .args(["--max-seconds", "180", "--task", "Write a note and save it"])
            .env("HOME", &home)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&err).expect("stderr file"))
            .spawn()
            .expect("ufo demo record starts"),
    ));
    wait_for("the recorder to start", 60, &|| {
        std::fs::read_to_string(&err)
            .unwrap_or_default()
            .contains("recording:")
    });
    // The person waits for the recorder to catch up before the window changes: a key is
    // resolved to the focus when it is read.
    let line_text = "Hello from ufo-rs";
    xdotool(&[
        "mousemove",
        &(x + w / 2).to_string(),
        &(y + h / 2).to_string(),
        "click",
        "1",
    ]);
    xdotool(&["type", "--delay", "60", line_text]);
    let typed = 1 + line_text.chars().count();
    wait_for("the line to be recorded", 60, &|| presses(&err) >= typed);
    xdotool(&["key", "ctrl+s"]);
    wait_for("the Save As dialog", 30, &|| {
        Command::new("xdotool")
            .args(["search", "--name", "Save As"])
            .output()
            .map(|o| !o.stdout.is_empty())
            .unwrap_or(false)
    });
    let path = shown_file.display().to_string();
    // the dialog's name field is focused with its text selected: typing replaces it
    wait_for_control(&home, "Save As", "[focused", Duration::from_secs(30), &png);
    xdotool(&["type", "--delay", "60", &path]);
    wait_for("the file name to be recorded", 60, &|| {
        presses(&err) >= typed + 1 + path.chars().count()
    });
    xdotool(&["key", "Return"]);
    // The file chooser may take the first Enter for its completion of the typed folder (a
    // person then presses Enter again; the plan records `{ENTER 2}`).
    let save_as_open = || {
        Command::new("xdotool")
            .args(["search", "--name", "Save As"])
            .output()
            .map(|o| !o.stdout.is_empty())
            .unwrap_or(false)
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while !shown_file.exists() && save_as_open() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    let mut enters = 1;
    if !shown_file.exists() && save_as_open() {
        xdotool(&["key", "Return"]);
        enters = 2;
    }
    assert_eq!(
        content(&shown_file),
        line_text,
        "the person's save; the recorder said:\n{}",
        std::fs::read_to_string(&err).unwrap_or_default()
    );
    wait_for("Enter to be recorded", 60, &|| {
        presses(&err) >= typed + 1 + enters + path.chars().count()
    });
    let status = terminate(&mut recorder);
    drop(editor);
    let log = std::fs::read_to_string(&err).unwrap_or_default();
    assert!(status.success(), "{status:?}\n{log}");

    let demo: Value =
        serde_json::from_str(&std::fs::read_to_string(rec.join("demo.json")).expect("demo.json"))
            .expect("demo is JSON");
    let steps = demo["steps"].as_array().expect("steps");
    let functions: Vec<String> = steps.iter().map(|st| s(&st["function"])).collect();
    assert_eq!(
        functions,
        ["click", "type_text", "keys", "type_text", "keys"],
        "{log}"
    );
    assert_eq!(steps[1]["text"], line_text);
    assert_eq!(steps[1]["target"]["role"], "text");
    assert_eq!(steps[2]["keys"], "{ctrl+s}");
    assert_eq!(steps[3]["text"], path.as_str());
    assert_eq!(steps[3]["target"]["name"], "Name", "{log}");
    let enter = if enters == 1 { "{ENTER}" } else { "{ENTER 2}" };
    assert_eq!(steps[4]["keys"], enter);
    let plan: Value =
        serde_json::from_str(&std::fs::read_to_string(rec.join("plan.json")).expect("plan.json"))
            .expect("plan is JSON");
    let plan_steps: Vec<String> = plan["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .map(s)
        .collect();
    assert!(
        plan_steps[1].starts_with("Type the text \"Hello from ufo-rs\" into the text"),
        "{plan_steps:?}"
    );

    // Replayed on a fresh Mousepad (to another file): the scripted model renders each recorded
    // step as the action a model reading the plan would take. Mousepad's text area has no
    // name: its label (7, after the six menus) stands for it, as in the live run test.
    let mut host_expect: Vec<&str> = vec!["Write a note and save it", "Follower mode"];
    host_expect.extend(plan_steps.iter().map(String::as_str));
    let replay_path = replay_file.display().to_string();
    let lines = [
        line(
            "host",
            json!({"Observation": "No editor is open.", "Thought": "Launch it and follow the plan.",
                   "Current Sub-Task": "Write a note and save it", "Message": plan_steps,
                   "Plan": plan_steps, "ControlText": "text editor", "Status": "ASSIGN"}),
            &host_expect,
        ),
        line(
            "app",
            app(
                "",
                "7",
                "type_keys",
                json!({"keys": s(&steps[1]["text"])}),
                "CONTINUE",
            ),
            &["[7] text"],
        ),
        line(
            "app",
            app(
                "",
                "7",
                "type_keys",
                json!({"keys": s(&steps[2]["keys"])}),
                "SCREENSHOT",
            ),
            &[],
        ),
        line(
            "app",
            app(
                &s(&steps[3]["target"]["name"]),
                "",
                "set_text",
                json!({"text": replay_path}),
                "CONTINUE",
            ),
            &["text \"Name\""],
        ),
        line(
            "app",
            app(
                &s(&steps[4]["target"]["name"]),
                "",
                "type_keys",
                json!({"keys": s(&steps[4]["keys"])}),
                "FINISH",
            ),
            &[],
        ),
        host_finish(),
    ];
    let script = tmp.path().join("script.jsonl");
    std::fs::write(&script, lines.join("\n")).expect("script");
    let out = tmp.path().join("out");
    let follow = ufo_live(
        &home,
        &[
            "follow".into(),
            rec.join("plan.json").display().to_string(),
            "--desktop".into(),
            "live".into(),
            "--llm".into(),
            format!("script:{}", script.display()),
            "--out".into(),
            out.display().to_string(),
        ],
        &[],
    );
    let saved = content(&replay_file);
    let fresh = KillPid(pid_of(&inspect_window(&home, "Mousepad", &png)));
    drop(fresh);
    assert_eq!(
        follow.status.code(),
        Some(0),
        "stderr:\n{}",
        String::from_utf8_lossy(&follow.stderr)
    );
    assert_eq!(saved, line_text, "the replayed save");
}
