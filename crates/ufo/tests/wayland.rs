//! ufo on Wayland (issue 42): `--desktop wayland` (the person's compositor), `--desktop
//! private:sway` (a headless sway of ufo's own, run as an unprivileged user when ufo runs as
//! root) and the Wayland lines of `ufo doctor`. Results are checked apart from ufo: the
//! calculator's display read with pyatspi, the batch's own evaluators, the processes and
//! folders left.
//!
//! The live tests run with `UFO_WAYLAND_TESTS=1` and the live switch (`UFO_LIVE_TESTS=1`),
//! as scripts/test.sh sets them; `ufo inspect` and `ufo doctor` on Wayland also need a session
//! of `scripts/wayland-session.sh up sway`, its env file sourced. The private desktop runs as
//! `UFO_WAYLAND_USER` (the test set-up's user, default `ufotest`) when the tests run as root.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use common::{procs, repo_root, ufo};
use nix::sys::signal::Signal;
use serde_json::{json, Value};
use ufo_desktop::testing::require_live;

/// One at a time: each checks what its private desktop left.
static SERIAL: Mutex<()> = Mutex::new(());

/// Whether the live Wayland tests run; else says why `name` is skipped.
fn wayland_on(name: &str) -> bool {
    if !require_live(name) {
        return false;
    }
    if std::env::var("UFO_WAYLAND_TESTS").is_ok_and(|v| v == "1") {
        return true;
    }
    eprintln!("skipping {name}: set UFO_WAYLAND_TESTS=1 (scripts/test.sh does)");
    false
}

/// The user the private desktop runs as when the tests run as root.
fn private_user() -> String {
    std::env::var("UFO_WAYLAND_USER").unwrap_or_else(|_| "ufotest".into())
}

/// The processes of the private desktops the ufo of `pid` started (their mark names it).
fn marked_by(pid: u32) -> Vec<String> {
    procs::carrying(&format!("UFO_SESSION_MARK=ufo-private-{pid}-"))
}

/// Wait (up to `within`) until nothing of `pid`'s private desktops is left; what is left.
fn none_left(pid: u32, within: Duration) -> Vec<String> {
    let deadline = Instant::now() + within;
    loop {
        let left = marked_by(pid);
        if left.is_empty() || Instant::now() > deadline {
            return left;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The state folders of `pid`'s private desktops still in the temporary folder.
fn folders_of(pid: u32) -> Vec<PathBuf> {
    let prefix = format!("ufo-private-{pid}-");
    std::fs::read_dir(std::env::temp_dir())
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default()
}

/// A scripted session: launch the calculator, click 12 × 7 =, then (with `check`) the host
/// runs pyatspi over the desktop's buses, writing the calculator's texts to `check`; with
/// `then_wait`, many more clicks (a test kills ufo during them).
fn calculator_script(dir: &Path, check: Option<&Path>, then_wait: bool) -> PathBuf {
    let app = |name: &str, status: &str| {
        json!({"agent": "app", "response": {"Observation": "o", "Thought": "t",
               "ControlText": name, "Function": "click", "Args": {}, "Status": status}})
        .to_string()
    };
    let mut lines = vec![json!({"agent": "host",
        "response": {"Observation": "No calculator is open.", "Thought": "Launch it.",
                     "Current Sub-Task": "Compute 12 x 7", "ControlText": "calculator",
                     "Status": "ASSIGN"}})
    .to_string()];
    for b in ["1", "2", "×", "7", "="] {
        lines.push(app(b, "CONTINUE"));
    }
    for _ in 0..if then_wait { 40 } else { 0 } {
        lines.push(app("0", "CONTINUE"));
    }
    lines.push(
        json!({"agent": "app", "response": {"Observation": "84", "Thought": "done",
               "Status": "FINISH"}, "expect": ["\"84\""]})
        .to_string(),
    );
    if let Some(out) = check {
        let script = repo_root().join("crates/ufo-linux/scripts/pyatspi_texts.py");
        let bash = format!(
            "/usr/bin/python3 {} gnome-calculator > {}",
            script.display(),
            out.display()
        );
        lines.push(
            json!({"agent": "host", "response": {"Observation": "o", "Thought": "check",
                   "Status": "CONTINUE", "Bash": bash}})
            .to_string(),
        );
    }
    lines.push(
        json!({"agent": "host", "response": {"Observation": "Done.", "Thought": "Finish.",
               "Status": "FINISH"}})
        .to_string(),
    );
    let path = dir.join("script.jsonl");
    std::fs::write(&path, lines.join("\n")).expect("script");
    path
}

#[test]
fn a_private_sway_desktop_computes_and_leaves_nothing() {
    if !wayland_on("a_private_sway_desktop_computes_and_leaves_nothing") {
        return;
    }
    let _ = computes_and_leaves_nothing("private:sway");
}

/// KWin grants its input by the executable of the connecting process, which it cannot read
/// for ufo (not dumpable; root when KWin runs as the private user): ufo connects through its
/// helper, run as the desktop's user, and grants itself in the desktop's own data folder.
#[test]
fn a_private_kwin_desktop_computes_and_leaves_nothing() {
    if !wayland_on("a_private_kwin_desktop_computes_and_leaves_nothing") {
        return;
    }
    let home = user_home();
    let before = home_entries(&home);
    let (log, _) = computes_and_leaves_nothing("private:kwin");
    // built with PipeWire and with it installed, the private KWin's looks come from its
    // screencast (ufo starts pipewire and wireplumber for it)
    let installed = ["/usr/bin/pipewire", "/usr/bin/wireplumber"]
        .iter()
        .all(|p| std::path::Path::new(p).exists());
    if cfg!(feature = "pipewire") && installed {
        // (the display's own line comes before the log opens; its streams' come after)
        assert!(log.contains("streams node="), "no window stream in {log}");
    }
    // the grant and KWin's database and settings live in the desktop's folder, not the home
    let added: Vec<String> = home_entries(&home)
        .into_iter()
        .filter(|e| !before.contains(e) && (e.contains("applications") || e.contains("kwin")))
        .collect();
    assert!(added.is_empty(), "written to the user's home: {added:?}");
}

/// GNOME's Mutter serves ufo through its own RemoteDesktop and ScreenCast on a private GNOME
/// Shell: the calculator by button names (pyatspi reads 84), nothing left, and nothing of
/// the shell's settings or state written to the user's home (they live in the desktop's
/// folder).
#[test]
fn a_private_gnome_desktop_computes_and_leaves_nothing() {
    if !wayland_on("a_private_gnome_desktop_computes_and_leaves_nothing") || !gnome_installed() {
        return;
    }
    let home = user_home();
    let before = home_entries(&home);
    let (log, first_shot) = computes_and_leaves_nothing("private:gnome");
    if cfg!(feature = "pipewire") {
        // its windows are placed (maximized): the clicks went to screen points, the pointer
        // moved on Mutter's monitor stream, and the window had a screenshot
        assert!(log.contains(r#"clicked \"7\" at "#), "{log}");
        // the first screenshot shows the window maximized, its light header bar at the top:
        // no banner of the shell over it in the first seconds (the lock warning, dark), nor
        // the blue background of a frame from before the maximize
        let png = first_shot.expect("the first step's screenshot");
        let (w, _, pixels) = read_png(&png);
        let [r, g, b] = pixels[(30 * w + 500) as usize];
        assert!(
            u32::from(r) + u32::from(g) + u32::from(b) > 3 * 128,
            "no light header bar at the top of the first screenshot (a banner over it, or the \
             window not shown maximized yet): {:?}",
            [r, g, b]
        );
    }
    let added: Vec<String> = home_entries(&home)
        .into_iter()
        .filter(|e| !before.contains(e) && (e.contains("gnome-shell") || e.contains("dconf")))
        .collect();
    assert!(added.is_empty(), "written to the user's home: {added:?}");
}

/// GNOME Shell 43 forks ibus-daemon with a JavaScript function run in the copy before its
/// exec, and a GLib lock held at the fork can leave the copy, and the shell waiting for it,
/// stuck for ever (1 start in about 40). Here the shell's first fork is held stopped before its
/// exec, as that lock holds it: the desktop still comes up (the copy ended, a warning said),
/// and the session runs.
#[test]
fn a_private_gnome_desktop_comes_up_when_the_shells_fork_sticks() {
    if !wayland_on("a_private_gnome_desktop_comes_up_when_the_shells_fork_sticks")
        || !gnome_installed()
    {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let tmp = tempfile::tempdir().expect("tempdir");
    let script = tmp.path().join("script.jsonl");
    let finish = json!({"agent": "host", "response": {"Observation": "A desktop.",
        "Thought": "Nothing to do.", "Status": "FINISH"}});
    std::fs::write(&script, finish.to_string()).expect("script");
    let err_file = tmp.path().join("stderr.txt");
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("ufo"))
        .args([
            "run",
            "--desktop",
            "private:gnome",
            "--confirm",
            "yes",
            "--llm",
        ])
        .arg(format!("script:{}", script.display()))
        .arg("--out")
        .arg(tmp.path().join("out"))
        .arg("Nothing")
        .env("UFO_PRIVATE_USER", private_user())
        .env_remove("DISPLAY")
        .env_remove("UFO_LLM")
        .env_remove("UFO_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&err_file).expect("stderr file"))
        .spawn()
        .expect("ufo starts");
    let pid = child.id();
    let held = hold_the_shells_first_fork(pid, Duration::from_secs(20));
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(s) = child.try_wait().expect("ufo's status") {
            break s;
        }
        assert!(Instant::now() < deadline, "ufo did not end within 60 s");
        std::thread::sleep(Duration::from_millis(100));
    };
    let stderr = std::fs::read_to_string(&err_file).unwrap_or_default();
    let held = held.expect("no fork of the shell seen within 20 s of its start");
    assert!(
        !stderr.contains("cannot start a private desktop"),
        "the desktop did not come up with the shell's copy {held} stuck: {stderr}"
    );
    assert!(
        stderr.contains(&format!("copy {held} stayed stuck before its exec")),
        "{stderr}"
    );
    if cfg!(feature = "pipewire") {
        assert_eq!(status.code(), Some(0), "{stderr}");
    }
    let left = none_left(pid, Duration::from_secs(10));
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// Hold the first child of the GNOME Shell of the ufo of `pid` that is still a copy of the
/// shell (forked, not exec'd yet) stopped, as GNOME Shell 43's lock at the fork holds it; its
/// pid, when one is seen within `within`.
fn hold_the_shells_first_fork(pid: u32, within: Duration) -> Option<u32> {
    let deadline = Instant::now() + within;
    let shell: u32 = loop {
        let found = marked_by(pid)
            .into_iter()
            .find(|p| p.ends_with(" gnome-shell"))
            .and_then(|p| p.split(' ').next().and_then(|n| n.parse().ok()));
        if let Some(shell) = found {
            break shell;
        }
        if Instant::now() > deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    let program = std::fs::read_link(format!("/proc/{shell}/exe")).ok()?;
    // the fork lives for a millisecond or so before its exec: look without pause
    while Instant::now() < deadline {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{shell}/task")) else {
            return None;
        };
        let children: Vec<u32> = tasks
            .filter_map(|t| t.ok())
            .filter_map(|t| std::fs::read_to_string(t.path().join("children")).ok())
            .flat_map(|text| {
                text.split_whitespace()
                    .filter_map(|w| w.parse().ok())
                    .collect::<Vec<u32>>()
            })
            .collect();
        for c in children {
            if std::fs::read_link(format!("/proc/{c}/exe")).is_ok_and(|p| p == program)
                && procs::signal(c, Signal::SIGSTOP)
            {
                return Some(c);
            }
        }
    }
    None
}

#[test]
fn nothing_of_a_private_gnome_desktop_survives_a_killed_ufo() {
    if !wayland_on("nothing_of_a_private_gnome_desktop_survives_a_killed_ufo") || !gnome_installed()
    {
        return;
    }
    nothing_survives_a_killed_ufo("private:gnome", "gnome-shell");
}

/// Text off the keyboard layout reaches a GTK application on GNOME (Mutter drops keysyms its
/// layout lacks: ufo types them through GTK's Ctrl+Shift+U entry): gnome-text-editor types a
/// line of non-ASCII text and saves it, and the saved file holds it exactly.
#[test]
fn a_private_gnome_desktop_types_and_saves_non_ascii_text() {
    if !wayland_on("a_private_gnome_desktop_types_and_saves_non_ascii_text") || !gnome_installed() {
        return;
    }
    if !Path::new("/usr/bin/gnome-text-editor").exists() {
        eprintln!("skipping: gnome-text-editor is not installed (scripts/test-deps.sh)");
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let tmp = tempfile::tempdir().expect("tempdir");
    // the editor runs as the desktop's user: it writes the file
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o777)).expect("chmod");
    let note = tmp.path().join("note.txt");
    std::fs::write(&note, "").expect("note");
    std::fs::set_permissions(&note, std::fs::Permissions::from_mode(0o666)).expect("chmod");
    let config = tmp.path().join("ufo.toml");
    std::fs::write(
        &config,
        format!(
            "[launch]\n\"test editor\" = \"gnome-text-editor --standalone {}\"\n",
            note.display()
        ),
    )
    .expect("config");
    let text = "Grüße, naïve café — 12×7=84 ✓ ß€ 日本語";
    let app = |keys: &str, status: &str| {
        json!({"agent": "app", "response": {"Observation": "o", "Thought": "t",
               "ControlText": "EditorSourceView", "Function": "type_keys",
               "Args": {"keys": keys}, "Status": status}})
        .to_string()
    };
    let lines = [
        json!({"agent": "host", "response": {"Observation": "o", "Thought": "t",
               "Current Sub-Task": "Write the line", "ControlText": "test editor",
               "Status": "ASSIGN"}})
        .to_string(),
        app(text, "CONTINUE"),
        app("{ctrl+s}", "CONTINUE"),
        json!({"agent": "app", "response": {"Observation": "o", "Thought": "t", "Status": "FINISH"}})
            .to_string(),
        json!({"agent": "host", "response": {"Observation": "Done.", "Thought": "Finish.",
               "Status": "FINISH"}})
        .to_string(),
    ];
    let script = tmp.path().join("script.jsonl");
    std::fs::write(&script, lines.join("\n")).expect("script");
    let child = Command::new(assert_cmd::cargo::cargo_bin("ufo"))
        .args([
            "run",
            "--desktop",
            "private:gnome",
            "--confirm",
            "yes",
            "--llm",
        ])
        .arg(format!("script:{}", script.display()))
        .arg("--config")
        .arg(&config)
        .arg("--out")
        .arg(tmp.path().join("out"))
        .arg("Write the line")
        .env("UFO_PRIVATE_USER", private_user())
        .env_remove("DISPLAY")
        .env_remove("UFO_LLM")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("ufo starts");
    let pid = child.id();
    let run = child.wait_with_output().expect("ufo runs");
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(0), "{stderr}");
    // the file as the editor saved it, read apart from ufo
    let saved = std::fs::read_to_string(&note).expect("the note");
    assert_eq!(saved.trim_end_matches('\n'), text, "{stderr}");
    let left = none_left(pid, Duration::from_secs(5));
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// `ufo doctor` inside a private GNOME desktop (run by the host's shell there) names Mutter and
/// the path ufo takes on it, and finds PipeWire running.
#[test]
fn doctor_inside_a_private_gnome_desktop_says_which_path() {
    if !wayland_on("doctor_inside_a_private_gnome_desktop_says_which_path") || !gnome_installed() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let tmp = tempfile::tempdir().expect("tempdir");
    let report = tmp.path().join("doctor.txt");
    let bash = format!(
        "{} doctor > {} 2>&1",
        assert_cmd::cargo::cargo_bin("ufo").display(),
        report.display()
    );
    let lines = [
        json!({"agent": "host", "response": {"Observation": "o", "Thought": "check",
               "Status": "CONTINUE", "Bash": bash}})
        .to_string(),
        json!({"agent": "host", "response": {"Observation": "Done.", "Thought": "Finish.",
               "Status": "FINISH"}})
        .to_string(),
    ];
    let script = tmp.path().join("script.jsonl");
    std::fs::write(&script, lines.join("\n")).expect("script");
    let run = Command::new(assert_cmd::cargo::cargo_bin("ufo"))
        .args([
            "run",
            "--desktop",
            "private:gnome",
            "--confirm",
            "yes",
            "--llm",
        ])
        .arg(format!("script:{}", script.display()))
        .arg("--out")
        .arg(tmp.path().join("out"))
        .arg("Check the desktop")
        .env("UFO_PRIVATE_USER", private_user())
        .env_remove("DISPLAY")
        .env_remove("UFO_LLM")
        .stdin(Stdio::null())
        .output()
        .expect("ufo runs");
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(0), "{stderr}");
    let text = std::fs::read_to_string(&report).expect("doctor's report");
    assert!(
        text.contains("ok       the compositor is GNOME's Mutter"),
        "{text}"
    );
    assert!(
        text.contains("ok       path: Mutter's own RemoteDesktop and ScreenCast"),
        "{text}"
    );
    assert!(text.contains("ok       PipeWire runs"), "{text}");
    assert!(!text.contains("PROBLEM"), "{text}");
}

/// Whether GNOME Shell is installed (scripts/test-deps.sh install_wayland); else says why the
/// GNOME tests are skipped.
fn gnome_installed() -> bool {
    if Path::new("/usr/bin/gnome-shell").exists() {
        return true;
    }
    eprintln!("skipping: gnome-shell is not installed (scripts/test-deps.sh install_wayland)");
    false
}

/// The private desktop's user's home folder (the test's own when not root).
fn user_home() -> PathBuf {
    let root = nix::unistd::geteuid().is_root();
    let name = if root {
        private_user()
    } else {
        std::env::var("USER").unwrap_or_default()
    };
    nix::unistd::User::from_name(&name)
        .ok()
        .flatten()
        .map(|u| u.dir)
        .unwrap_or_else(|| PathBuf::from(std::env::var("HOME").unwrap_or_default()))
}

/// The files under `home`'s `.local/share`, `.config` and `.cache` (two levels deep).
fn home_entries(home: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for top in [".local/share", ".config", ".cache"] {
        let Ok(dir) = std::fs::read_dir(home.join(top)) else {
            continue;
        };
        for e in dir.flatten() {
            out.push(e.path().display().to_string());
            if let Ok(inner) = std::fs::read_dir(e.path()) {
                out.extend(inner.flatten().map(|i| i.path().display().to_string()));
            }
        }
    }
    out
}

/// `ufo run --desktop SPEC` computes 12 × 7 on the calculator (pyatspi reads 84, apart from
/// ufo), and nothing of the desktop is left once ufo ends.
/// Returns the session's log (`ufo.log`: the KWin display notes its window streams there) and
/// the first screenshot of the calculator (PNG), if any.
fn computes_and_leaves_nothing(spec: &str) -> (String, Option<Vec<u8>>) {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let tmp = tempfile::tempdir().expect("tempdir");
    // written by pyatspi, run by root's shell: a folder anyone may write to
    let check = tmp.path().join("texts.json");
    let script = calculator_script(tmp.path(), Some(&check), false);
    let out = tmp.path().join("out");
    let started = Instant::now();
    let child = Command::new(assert_cmd::cargo::cargo_bin("ufo"))
        .args(["run", "--desktop", spec, "--confirm", "yes", "--llm"])
        .arg(format!("script:{}", script.display()))
        .arg("--out")
        .arg(&out)
        .arg("Compute 12 x 7")
        .env("UFO_PRIVATE_USER", private_user())
        .env_remove("DISPLAY")
        .env_remove("UFO_LLM")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("ufo starts");
    let pid = child.id();
    let run = child.wait_with_output().expect("ufo runs");
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(0), "{stderr}");
    println!(
        "{spec} session (start, 5 clicks, check, end): {:.1} s",
        started.elapsed().as_secs_f64()
    );
    // the calculator's display, read with pyatspi apart from ufo
    let texts: Vec<String> =
        serde_json::from_str(&std::fs::read_to_string(&check).expect("pyatspi wrote its texts"))
            .expect("a JSON list");
    assert!(
        texts.iter().any(|t| t.trim() == "84"),
        "pyatspi reads no 84: {texts:?}"
    );
    // no process of the compositor, its buses, the helper or the calculator; no folder
    let left = none_left(pid, Duration::from_secs(5));
    assert!(left.is_empty(), "left behind: {left:?}");
    assert!(folders_of(pid).is_empty(), "{:?}", folders_of(pid));
    let record: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("run.json")).expect("run.json"))
            .expect("json");
    assert_eq!(record["desktop"], spec);
    (
        std::fs::read_to_string(out.join("ufo.log")).unwrap_or_default(),
        std::fs::read(out.join("step_0002_screenshot.png")).ok(),
    )
}

/// The width, height and RGB pixels (row by row) of an 8-bit RGB or RGBA PNG.
fn read_png(bytes: &[u8]) -> (u32, u32, Vec<[u8; 3]>) {
    let mut decoder = png::Decoder::new(std::io::Cursor::new(bytes));
    decoder.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
    let mut reader = decoder.read_info().expect("png header");
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).expect("png frame");
    let channels = info.color_type.samples();
    let pixels = buf[..info.buffer_size()]
        .chunks(channels)
        .map(|p| match channels {
            1 | 2 => [p[0], p[0], p[0]],
            _ => [p[0], p[1], p[2]],
        })
        .collect();
    (info.width, info.height, pixels)
}

#[test]
fn nothing_of_a_private_sway_desktop_survives_a_killed_ufo() {
    if !wayland_on("nothing_of_a_private_sway_desktop_survives_a_killed_ufo") {
        return;
    }
    nothing_survives_a_killed_ufo("private:sway", "sway");
}

#[test]
fn nothing_of_a_private_kwin_desktop_survives_a_killed_ufo() {
    if !wayland_on("nothing_of_a_private_kwin_desktop_survives_a_killed_ufo") {
        return;
    }
    nothing_survives_a_killed_ufo("private:kwin", "kwin_wayland");
}

/// ufo killed (SIGKILL) while it clicks on the desktop `spec`, whose compositor's command
/// line holds `compositor`: nothing of the desktop is left.
fn nothing_survives_a_killed_ufo(spec: &str, compositor: &str) {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let tmp = tempfile::tempdir().expect("tempdir");
    let script = calculator_script(tmp.path(), None, true);
    let out = tmp.path().join("out");
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("ufo"))
        .args(["run", "--desktop", spec, "--llm"])
        .arg(format!("script:{}", script.display()))
        .arg("--out")
        .arg(&out)
        .arg("Compute 12 x 7")
        .env("UFO_PRIVATE_USER", private_user())
        .env_remove("DISPLAY")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("ufo starts");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let events = std::fs::read_to_string(out.join("events.jsonl")).unwrap_or_default();
        if events.matches("\"role\":\"app\"").count() >= 3 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the session did not get going:\n{events}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let pid = child.id();
    let running = marked_by(pid);
    assert!(
        running.iter().any(|p| p.contains(compositor)),
        "{compositor} runs: {running:?}"
    );
    procs::signal(pid, Signal::SIGKILL);
    let _ = child.wait();
    let left = none_left(pid, Duration::from_secs(10));
    assert!(left.is_empty(), "left behind after kill -9: {left:?}");
    let deadline = Instant::now() + Duration::from_secs(5);
    while !folders_of(pid).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(folders_of(pid).is_empty(), "{:?}", folders_of(pid));
}

#[test]
fn a_batch_runs_on_a_private_sway_desktop() {
    if !wayland_on("a_batch_runs_on_a_private_sway_desktop") {
        return;
    }
    batch_on("private:sway");
}

#[test]
fn a_batch_runs_on_a_private_kwin_desktop() {
    if !wayland_on("a_batch_runs_on_a_private_kwin_desktop") {
        return;
    }
    batch_on("private:kwin");
}

/// A batch of a few tasks of the task set on the private desktop `spec`: each ends as its
/// own evaluator says.
#[test]
fn a_batch_runs_on_a_private_gnome_desktop() {
    if !wayland_on("a_batch_runs_on_a_private_gnome_desktop") || !gnome_installed() {
        return;
    }
    batch_on("private:gnome");
}

fn batch_on(spec: &str) {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let tmp = tempfile::tempdir().expect("tempdir");
    let suite = tmp.path().join("suite");
    std::fs::create_dir_all(suite.join("scripts")).expect("suite folder");
    let from = repo_root().join("tests").join("batch");
    let tasks = ["calc_sum", "calc_wrong", "shell_write", "shell_list"];
    for id in tasks {
        std::fs::copy(
            from.join(format!("{id}.json")),
            suite.join(format!("{id}.json")),
        )
        .expect("task");
        let script = format!("scripts/{id}.jsonl");
        std::fs::copy(from.join(&script), suite.join(&script)).expect("script");
    }
    let out = tmp.path().join("out");
    let started = Instant::now();
    let output = Command::new(assert_cmd::cargo::cargo_bin("ufo"))
        .arg("batch")
        .arg(&suite)
        .args(["--confirm", "yes", "--task-timeout", "120"])
        .args(["--desktop", spec, "--out"])
        .arg(&out)
        .env("UFO_PRIVATE_USER", private_user())
        .env_remove("DISPLAY")
        .env_remove("UFO_LLM")
        .output()
        .expect("ufo runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    // calc_wrong fails by design: exit 1
    assert_eq!(output.status.code(), Some(1), "{stdout}\n{stderr}");
    let results: Vec<Value> = std::fs::read_to_string(out.join("results.jsonl"))
        .expect("results")
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let status = |id: &str| {
        results
            .iter()
            .find(|r| r["id"] == id)
            .map(|r| r["status"].as_str().unwrap_or("").to_string())
            .unwrap_or_default()
    };
    for (id, want) in [
        ("calc_sum", "passed"),
        ("calc_wrong", "failed"),
        ("shell_write", "passed"),
        ("shell_list", "passed"),
    ] {
        assert_eq!(status(id), want, "{id}\n{stdout}\n{stderr}");
    }
    println!(
        "batch of {} tasks on {spec}: {:.1} s",
        tasks.len(),
        started.elapsed().as_secs_f64()
    );
}

/// The environment of the test set-up's sway session, if one is sourced.
fn wayland_session() -> Option<String> {
    std::env::var("WAYLAND_DISPLAY")
        .ok()
        .filter(|w| !w.is_empty())
}

/// gnome-calculator started as the user of the test set-up's session, in it.
fn calculator_in_session() -> std::process::Child {
    Command::new(repo_root().join("scripts/wayland-session.sh"))
        .args(["exec", "gnome-calculator"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("gnome-calculator in the session")
}

/// The calculator's texts, read with pyatspi as the session's user (apart from ufo).
fn calculator_texts_in_session() -> Vec<String> {
    let script = repo_root().join("crates/ufo-linux/scripts/pyatspi_texts.py");
    let out = Command::new(repo_root().join("scripts/wayland-session.sh"))
        .args(["exec", "/usr/bin/python3"])
        .arg(&script)
        .arg("gnome-calculator")
        .output()
        .expect("pyatspi as the session's user");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "pyatspi_texts.py: {e}: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

#[test]
fn inspect_on_the_persons_wayland_session_lists_the_calculator() {
    if !wayland_on("inspect_on_the_persons_wayland_session_lists_the_calculator") {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    wayland_session().expect("WAYLAND_DISPLAY: source the env file of scripts/wayland-session.sh");
    let mut app = calculator_in_session();
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut last;
    let found = loop {
        // DISPLAY set too: --desktop wayland still takes the compositor
        let out = ufo()
            .env("DISPLAY", ":4242")
            .args([
                "inspect",
                "--desktop",
                "wayland",
                "Calculator",
                "--png",
                "/dev/null",
            ])
            .output()
            .expect("ufo inspect");
        last = format!(
            "{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        if last.lines().any(|l| l.contains("] button \"7\"")) {
            break true;
        }
        if Instant::now() > deadline {
            break false;
        }
        std::thread::sleep(Duration::from_millis(300));
    };
    let _ = Command::new("kill").arg(app.id().to_string()).status();
    let _ = app.wait();
    assert!(found, "no `[N] button \"7\"` line:\n{last}");
    assert!(
        last.lines()
            .any(|l| l.starts_with('[') && l.contains("] button \"=\"")),
        "{last}"
    );
}

#[test]
fn doctor_names_the_compositor_and_its_protocols() {
    if !wayland_on("doctor_names_the_compositor_and_its_protocols") {
        return;
    }
    let Some(socket) = wayland_session() else {
        panic!("WAYLAND_DISPLAY: source the env file of scripts/wayland-session.sh");
    };
    // the Wayland session alone: its checks are the session's
    let out = ufo()
        .env_remove("DISPLAY")
        .arg("doctor")
        .output()
        .expect("doctor");
    let text = String::from_utf8_lossy(&out.stdout);
    for line in [
        "ok       zwlr_virtual_pointer_manager_v1 offered (clicks)",
        "ok       zwlr_screencopy_manager_v1 offered (screenshots)",
        "ok       sway IPC at",
    ] {
        assert!(text.contains(line), "no {line:?} in:\n{text}");
    }
    // beside an X display the Wayland lines are notes, which fail nothing
    let out = ufo()
        .env("DISPLAY", ":4242")
        .env("WAYLAND_DISPLAY", &socket)
        .arg("doctor")
        .output()
        .expect("doctor");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("note     wayland: zwp_virtual_keyboard_manager_v1 offered (typing)"),
        "{text}"
    );
}

#[test]
fn doctor_says_there_is_no_wayland_display_without_failing_x11() {
    let out = ufo()
        .env("DISPLAY", ":4242")
        .env_remove("WAYLAND_DISPLAY")
        .arg("doctor")
        .output()
        .expect("doctor");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("note     no Wayland display (WAYLAND_DISPLAY is not set)"),
        "{text}"
    );
    assert!(!text.contains("PROBLEM  no Wayland"), "{text}");
}

#[test]
fn unknown_compositors_are_usage_errors() {
    // the error names the desktops ufo can start, GNOME's among them
    let out = ufo()
        .args([
            "run",
            "--desktop",
            "private:weston",
            "--llm",
            "script:none.jsonl",
            "x",
        ])
        .output()
        .expect("ufo runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("private:weston") && stderr.contains("private:gnome"),
        "{stderr}"
    );
    // a private Wayland desktop is headless: --watch is the X one's
    let out = ufo()
        .args([
            "run",
            "--desktop",
            "private:sway",
            "--watch",
            "--llm",
            "script:x.jsonl",
            "x",
        ])
        .output()
        .expect("ufo runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("private X desktop"));
    // a command that cannot start a private desktop says so
    let out = ufo()
        .args(["inspect", "--desktop", "private:sway"])
        .output()
        .expect("ufo runs");
    assert_ne!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stderr).contains("started by ufo itself"));
}

/// One JSON-RPC answer of a served `ufo mcp serve`, within a bound.
fn answer(rx: &std::sync::mpsc::Receiver<Value>, what: &str) -> Value {
    rx.recv_timeout(Duration::from_secs(60))
        .unwrap_or_else(|e| panic!("no answer to {what}: {e}"))
}

#[test]
fn mcp_serve_on_the_persons_wayland_session_computes_by_button_names() {
    use std::io::{BufRead, BufReader, Write};
    if !wayland_on("mcp_serve_on_the_persons_wayland_session_computes_by_button_names") {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    wayland_session().expect("WAYLAND_DISPLAY: source the env file of scripts/wayland-session.sh");
    let mut app = calculator_in_session();
    let mut server = Command::new(assert_cmd::cargo::cargo_bin("ufo"))
        .args(["mcp", "serve", "--desktop", "wayland", "--allow-actions"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("ufo mcp serve");
    let stdout = server.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            let v = serde_json::from_str(&line).unwrap_or_else(|_| json!({ "not_json": line }));
            if tx.send(v).is_err() {
                break;
            }
        }
    });
    let mut stdin = server.stdin.take().expect("stdin");
    let mut send = |v: Value| {
        stdin
            .write_all(format!("{v}\n").as_bytes())
            .and_then(|()| stdin.flush())
            .expect("the server reads its input");
    };
    send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-03-26", "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"}}}),
    );
    answer(&rx, "initialize");
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    // the calculator's window, once it is listed
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut id = 2;
    loop {
        send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "list_windows", "arguments": {}}}));
        let listed = answer(&rx, "list_windows").to_string();
        id += 1;
        if listed.contains("Calculator") {
            break;
        }
        assert!(Instant::now() < deadline, "no calculator listed: {listed}");
        std::thread::sleep(Duration::from_millis(300));
    }
    send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "observe_window", "arguments": {"window": "Calculator"}}}));
    let seen = answer(&rx, "observe_window").to_string();
    assert!(seen.contains("button"), "{seen}");
    for b in ["1", "2", "×", "7", "="] {
        id += 1;
        send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "act", "arguments": {"window": "Calculator", "name": b,
                       "function": "click", "args": {}}}}));
        let done = answer(&rx, "act");
        assert_ne!(done["result"]["isError"], json!(true), "click {b}: {done}");
    }
    drop(stdin);
    let _ = server.wait();
    // the calculator's display, read with pyatspi as the session's user
    let texts = calculator_texts_in_session();
    let _ = Command::new("kill").arg(app.id().to_string()).status();
    let _ = app.wait();
    assert!(
        texts.iter().any(|t| t.trim() == "84"),
        "pyatspi reads no 84: {texts:?}"
    );
}

/// On a person's KWin session (ufo run as its user), captures work: KWin checks the caller of
/// its screenshot interface by the executable of the D-Bus connection's peer, which it cannot
/// read for ufo (not dumpable); the connection is made and kept by ufo's helper.
#[test]
fn kwin_captures_for_ufo_run_as_the_sessions_user() {
    if !wayland_on("kwin_captures_for_ufo_run_as_the_sessions_user") {
        return;
    }
    if std::env::var("UFO_WAYLAND_COMPOSITOR").as_deref() != Ok("kwin") {
        eprintln!("skipping: needs a session of `scripts/wayland-session.sh up kwin`");
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let session = repo_root().join("scripts/wayland-session.sh");
    let exe = assert_cmd::cargo::cargo_bin("ufo");
    let granted = Command::new(&session)
        .arg("grant")
        .arg(&exe)
        .status()
        .expect("grant");
    assert!(granted.success(), "the grant for {}", exe.display());
    let mut app = calculator_in_session();
    let tmp = tempfile::tempdir().expect("tempdir");
    let png = tmp.path().join("calculator.png");
    // the user writes the picture: a folder it may write to
    let _ = Command::new("chmod").arg("777").arg(tmp.path()).status();
    let deadline = Instant::now() + Duration::from_secs(30);
    let said = loop {
        let out = Command::new(&session)
            .arg("exec")
            .arg(&exe)
            .args(["inspect", "--desktop", "wayland", "Calculator", "--png"])
            .arg(&png)
            .output()
            .expect("ufo inspect as the session's user");
        let said = String::from_utf8_lossy(&out.stderr).to_string();
        if png.exists() || Instant::now() > deadline {
            break said;
        }
        std::thread::sleep(Duration::from_millis(300));
    };
    let _ = Command::new("kill").arg(app.id().to_string()).status();
    let _ = app.wait();
    let size = std::fs::metadata(&png).map(|m| m.len()).unwrap_or(0);
    assert!(size > 1000, "no screenshot ({size} bytes): {said}");
    assert!(!said.contains("refuses"), "{said}");
}

/// `ufo mcp serve --desktop wayland --allow-actions` run as the session's user (as a person
/// runs it), initialised; the exec chain (setpriv, env) replaces itself, so its child is ufo.
fn served_as_user() -> common::mcp_stdio::McpStdio {
    let mut command = Command::new(repo_root().join("scripts/wayland-session.sh"));
    command
        .arg("exec")
        .arg(assert_cmd::cargo::cargo_bin("ufo"))
        .args(["mcp", "serve", "--desktop", "wayland", "--allow-actions"]);
    common::mcp_stdio::McpStdio::start(command)
}

/// Until `window` is listed by `served` (its display, and with it KWin's watch, is open).
fn wait_for_window(served: &mut common::mcp_stdio::McpStdio, window: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (_, listed) = served.call("list_windows", json!({}));
        if listed.contains(window) {
            return;
        }
        assert!(Instant::now() < deadline, "no {window} listed: {listed}");
        std::thread::sleep(Duration::from_millis(300));
    }
}

/// Whether KWin has a script of this name loaded, asked on the session's bus as its user.
fn kwin_script_loaded(name: &str) -> bool {
    let out = Command::new(repo_root().join("scripts/wayland-session.sh"))
        .args([
            "exec",
            "dbus-send",
            "--session",
            "--print-reply",
            "--dest=org.kde.KWin",
            "/Scripting",
            "org.kde.kwin.Scripting.isScriptLoaded",
        ])
        .arg(format!("string:{name}"))
        .output()
        .expect("dbus-send as the session's user");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "isScriptLoaded: {said}");
    said.contains("boolean true")
}

/// On a person's KWin session, the watch script of a ufo killed before it could unload it
/// unloads itself once its calls go unanswered (windows keep redrawing: another ufo's clicks
/// here), and leaves the living ufo's script loaded.
#[test]
fn kwin_watch_script_of_a_killed_ufo_unloads_itself() {
    if !wayland_on("kwin_watch_script_of_a_killed_ufo_unloads_itself") {
        return;
    }
    if std::env::var("UFO_WAYLAND_COMPOSITOR").as_deref() != Ok("kwin") {
        eprintln!("skipping: needs a session of `scripts/wayland-session.sh up kwin`");
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let exe = assert_cmd::cargo::cargo_bin("ufo");
    let granted = Command::new(repo_root().join("scripts/wayland-session.sh"))
        .arg("grant")
        .arg(&exe)
        .status()
        .expect("grant");
    assert!(granted.success(), "the grant for {}", exe.display());
    let mut app = calculator_in_session();
    let mut killed = served_as_user();
    wait_for_window(&mut killed, "Calculator");
    // the exec chain (setpriv, env) replaces itself: the child is ufo
    let stale = format!("ufo-watch-{}-w0", killed.child.id());
    assert!(kwin_script_loaded(&stale), "{stale} is not loaded");
    let _ = killed.child.kill();
    let _ = killed.child.wait();
    assert!(kwin_script_loaded(&stale), "{stale} went before any redraw");
    let mut living = served_as_user();
    wait_for_window(&mut living, "Calculator");
    let own = format!("ufo-watch-{}-w0", living.child.id());
    let deadline = Instant::now() + Duration::from_secs(90);
    let mut clicks = 0;
    while kwin_script_loaded(&stale) {
        assert!(
            Instant::now() < deadline,
            "{stale} still loaded after {clicks} clicks"
        );
        for b in ["1", "2", "="] {
            let (err, done) = living.call(
                "act",
                json!({"window": "Calculator", "name": b, "function": "click", "args": {}}),
            );
            assert!(!err, "click {b}: {done}");
            clicks += 1;
        }
    }
    assert!(kwin_script_loaded(&own), "the living ufo's {own} went too");
    eprintln!("{stale} unloaded itself after {clicks} clicks of another ufo");
    living.finish();
    let _ = Command::new("kill").arg(app.id().to_string()).status();
    let _ = app.wait();
}
