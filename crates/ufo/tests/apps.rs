//! Live tests on everyday applications (issue 12): a terminal, a file manager, a Qt
//! application, a host `Bash` launch, `ufo doctor` and `ufo mcp serve --config`. Scripted
//! `ufo run --desktop live` sessions name the controls (never `click_at`); each result is
//! checked by a path that is not ufo's: the disk, or the process table.
//!
//! They need a desktop session (`scripts/desktop-session.sh up`, then `source` its env file)
//! and the applications (`scripts/test-deps.sh install_apps`). Without `DISPLAY` and without
//! `UFO_LIVE_TESTS=1` they are skipped with a printed reason; with `UFO_LIVE_TESTS=1` they
//! always run and fail loudly when something is missing. Every application a test starts
//! carries a token unique to the test in its command line and is killed by pid at the end,
//! pass or fail.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};
use ufo_desktop::testing::require_live;
use ufo_desktop::testing::script::{app, app_line, host_assign, host_finish, line};

use common::*;
use serde_json::{json, Value};

/// Live tests share one display: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn need(program: &str) {
    let found = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(program).is_file()))
        .unwrap_or(false);
    assert!(
        found,
        "{program} is not installed: run scripts/test-deps.sh install_apps (as root)"
    );
}

/// The processes whose command line holds `token` (zombies left out).
fn processes_with(token: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(e.path().join("cmdline")) else {
            continue;
        };
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        let zombie = stat
            .rsplit(')')
            .next()
            .is_some_and(|s| s.trim_start().starts_with('Z'));
        if !zombie && String::from_utf8_lossy(&cmdline).contains(token) {
            out.push(pid);
        }
    }
    out
}

/// Kills, by pid, every process whose command line holds the token, when dropped.
struct AppGuard {
    token: String,
}

impl AppGuard {
    fn new(what: &str) -> Self {
        Self {
            token: format!("ufo-{what}-{}", std::process::id()),
        }
    }
}

impl Drop for AppGuard {
    /// End the application's processes, then wait (at most 5 s) until the X server has
    /// dropped its windows too: the next test (`ufo doctor` judges every window) must not
    /// find a window of a process that is already gone.
    fn drop(&mut self) {
        ufo_desktop::testing::end_processes(|| processes_with(&self.token), Duration::from_secs(5));
        let deadline = Instant::now() + Duration::from_secs(5);
        while window_titled(&self.token).is_some() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// `ufo run --desktop live` with a scripted model and a config file, under a fresh HOME.
fn ufo_run(tmp: &Path, lines: &[String], config: &str, request: &str) -> std::process::Output {
    let script = tmp.join("script.jsonl");
    std::fs::write(&script, lines.join("\n")).expect("script");
    let cfg = tmp.join("ufo.toml");
    std::fs::write(&cfg, config).expect("config");
    let home = tmp.join("home");
    std::fs::create_dir_all(&home).expect("home");
    Command::new(assert_cmd::cargo::cargo_bin("ufo"))
        .args(["run", "--desktop", "live", "--llm"])
        .arg(format!("script:{}", script.display()))
        .arg("--config")
        .arg(&cfg)
        .arg("--out")
        .arg(tmp.join("out"))
        // the safe guard holds a host Bash for confirmation
        .args(["--confirm", "yes"])
        .arg(request)
        .env("HOME", &home)
        // applications keep their state there (GIMP its crash backups), not in the session's
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_DATA_HOME", home.join(".local/share"))
        .env("XDG_CACHE_HOME", home.join(".cache"))
        // what an application needs for accessibility comes from ufo, not from the session
        .env_remove("GTK_MODULES")
        .env_remove("QT_LINUX_ACCESSIBILITY_ALWAYS_ON")
        .env_remove("QT_ACCESSIBILITY")
        .env_remove("ACCESSIBILITY_ENABLED")
        .env_remove("GNOME_ACCESSIBILITY")
        .env_remove("UFO_LLM")
        .output()
        .expect("ufo runs")
}

fn steps(out: &Path) -> Vec<String> {
    std::fs::read_to_string(out.join("events.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["type"] == "step")
        .map(|e| format!("{} {}", s(&e["role"]), s(&e["state"])))
        .collect()
}

fn wait_for_file(path: &Path, want: &str, within: Duration) -> String {
    let deadline = Instant::now() + within;
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        if text.contains(want) || Instant::now() > deadline {
            return text;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Issue 12, item 7: a terminal's screen is its text control. The agent types a command
/// into the terminal (named by its label and name, though a menu is also called "Terminal"),
/// reads the screen back, and the command's file is on disk.
#[test]
fn the_agent_runs_a_command_in_a_terminal() {
    if !require_live("the_agent_runs_a_command_in_a_terminal") {
        return;
    }
    need("xfce4-terminal");
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let guard = AppGuard::new("terminal");
    let tmp = tempfile::tempdir().expect("tempdir");
    let made = tmp.path().join("made.txt");
    let config = format!(
        "[launch]\n\"test terminal\" = \"xfce4-terminal --disable-server --title={} --working-directory={}\"\n",
        guard.token,
        tmp.path().display()
    );
    // xfce4-terminal's menus come first (one of them is named "Terminal"), then the terminal
    let lines = [
        host_assign("Write a file from the shell", "test terminal"),
        app_line(
            "Terminal",
            "7",
            "type_keys",
            json!({"keys": format!("echo made-by-ufo > {}{{ENTER}}", made.display())}),
            "CONTINUE",
        ),
        app_line("Terminal", "7", "read_text", json!({}), "FINISH"),
        host_finish(),
    ];
    let run = ufo_run(tmp.path(), &lines, &config, "Write a file from the shell");
    let stderr = String::from_utf8_lossy(&run.stderr).into_owned();
    let text = wait_for_file(&made, "made-by-ufo", Duration::from_secs(10));
    assert_eq!(run.status.code(), Some(0), "stderr:\n{stderr}");
    assert_eq!(text.trim(), "made-by-ufo", "stderr:\n{stderr}");
    // read_text returned the screen, with the command on it
    let events = std::fs::read_to_string(tmp.path().join("out/events.jsonl")).unwrap_or_default();
    let read: Vec<String> = events
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["type"] == "step" && e["action"].to_string().contains("read_text"))
        .map(|e| e["result"].to_string())
        .collect();
    assert!(
        read.iter().any(|r| r.contains("echo made-by-ufo")),
        "read_text did not return the terminal's screen: {read:?}"
    );
    assert_eq!(
        steps(&tmp.path().join("out")).last().map(String::as_str),
        Some("host FINISH")
    );
}

/// Issue 12, item 1 and defect 9: a host `Bash` that starts a GUI application (not in the
/// launch table) returns once its window is there, well before the 60 s shell timeout, and
/// the application outlives the command and ufo.
#[test]
fn a_bash_launch_returns_when_the_window_appears_and_the_app_stays() {
    if !require_live("a_bash_launch_returns_when_the_window_appears_and_the_app_stays") {
        return;
    }
    need("xfce4-terminal");
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let guard = AppGuard::new("bash-launch");
    let tmp = tempfile::tempdir().expect("tempdir");
    let lines = [
        line(
            "host",
            json!({"Observation": "No terminal is open.", "Thought": "Start one.",
                   "Status": "CONTINUE",
                   "Bash": format!("xfce4-terminal --disable-server --title={} &", guard.token)}),
            &[],
        ),
        host_finish(),
    ];
    let t = Instant::now();
    let run = ufo_run(tmp.path(), &lines, "", "Open a terminal");
    let took = t.elapsed();
    let stderr = String::from_utf8_lossy(&run.stderr).into_owned();
    assert_eq!(run.status.code(), Some(0), "stderr:\n{stderr}");
    // within the launch timeout (20 s) for the whole session; the old behaviour held the
    // step for the 60 s shell timeout, then killed the terminal
    assert!(
        took < Duration::from_secs(20),
        "the Bash launch held the session for {took:?}:\n{stderr}"
    );
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        !processes_with(&guard.token).is_empty(),
        "the terminal did not outlive the command and ufo:\n{stderr}"
    );
    let events = std::fs::read_to_string(tmp.path().join("out/events.jsonl")).unwrap_or_default();
    assert!(
        events.contains("launched"),
        "the shell result does not say the application was launched:\n{events}"
    );
}

fn ufo(args: &[&str]) -> std::process::Output {
    Command::new(assert_cmd::cargo::cargo_bin("ufo"))
        .args(args)
        .env_remove("UFO_LLM")
        .output()
        .expect("ufo runs")
}

/// Issue 12, item 2: `ufo doctor` on a fit session exits 0; a GTK 2 application started
/// without its accessibility modules is a problem, printed with the exact fix (exit 1).
#[test]
fn doctor_finds_a_gtk2_application_without_its_bridge() {
    if !require_live("doctor_finds_a_gtk2_application_without_its_bridge") {
        return;
    }
    need("gimp");
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let out = ufo(&["doctor"]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("window manager"), "{text}");
    assert!(text.contains("IsEnabled"), "{text}");

    let guard = AppGuard::new("doctor-gimp");
    let tmp = tempfile::tempdir().expect("tempdir");
    let title_file = tmp.path().join(format!("{}.png", guard.token));
    write_png(&title_file, 8, 8, |_, _| [200, 0, 0]);
    let mut child = Command::new("gimp")
        .args(["-n", "--no-splash", "--no-fonts"])
        .arg(&title_file)
        .env_remove("GTK_MODULES")
        .env("HOME", tmp.path())
        .env("XDG_CONFIG_HOME", tmp.path().join(".config"))
        .env("XDG_DATA_HOME", tmp.path().join(".local/share"))
        .env("XDG_CACHE_HOME", tmp.path().join(".cache"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("gimp starts");
    let deadline = Instant::now() + Duration::from_secs(90);
    let mut text = String::new();
    let mut code = None;
    while Instant::now() < deadline {
        let out = ufo(&["doctor", &guard.token]);
        code = out.status.code();
        text = String::from_utf8_lossy(&out.stdout).into_owned();
        if code == Some(1) {
            break;
        }
        std::thread::sleep(Duration::from_secs(1));
    }
    let _ = child.kill();
    let _ = child.wait();
    drop(guard);
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("GTK 2"), "{text}");
    assert!(text.contains("not on the accessibility bus"), "{text}");
    assert!(text.contains("GTK_MODULES=gail:atk-bridge"), "{text}");
}

/// `ufo doctor` without a display prints the problem and its fix (exit 1); a window that
/// matches none is bad usage (exit 2).
#[test]
fn doctor_without_a_display_prints_the_problem() {
    let out = Command::new(assert_cmd::cargo::cargo_bin("ufo"))
        .arg("doctor")
        .env_remove("DISPLAY")
        .output()
        .expect("ufo runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("PROBLEM  DISPLAY is not set"), "{text}");
    assert!(text.contains("scripts/desktop-session.sh up"), "{text}");
    if !require_live("doctor_without_a_display_prints_the_problem (unknown window part)") {
        return;
    }
    let out = ufo(&["doctor", "no-such-window-anywhere-4711"]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Issue 12, item 8: `ufo mcp serve --config` offers the `[launch]` table beside the built-in
/// one; a broken config file is bad usage (exit 2).
#[test]
fn mcp_serve_takes_the_launch_table_of_its_config() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let bad = tmp.path().join("bad.toml");
    std::fs::write(&bad, "launch = 3\n").expect("write");
    let out = ufo(&["mcp", "serve", "--config", &bad.display().to_string()]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    if !require_live("mcp_serve_takes_the_launch_table_of_its_config") {
        return;
    }
    let cfg = tmp.path().join("ufo.toml");
    std::fs::write(
        &cfg,
        "[launch]\n\"my odd editor\" = \"featherpad --standalone\"\n",
    )
    .expect("write");
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("ufo"))
        .args(["mcp", "serve", "--config"])
        .arg(&cfg)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("ufo starts");
    let mut stdin = child.stdin.take().expect("stdin");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for l in BufReader::new(stdout).lines() {
            let Ok(l) = l else { break };
            if tx.send(l).is_err() {
                break;
            }
        }
    });
    for l in [
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"test","version":"0"}}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"list_windows","arguments":{}}}"#,
    ] {
        stdin.write_all(format!("{l}\n").as_bytes()).expect("write");
    }
    stdin.flush().expect("flush");
    let mut answer = Value::Null;
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        let Ok(l) = rx.recv_timeout(Duration::from_secs(30)) else {
            break;
        };
        let v: Value = serde_json::from_str(&l).unwrap_or(Value::Null);
        if v["id"] == 2 {
            answer = v;
            break;
        }
    }
    drop(stdin);
    let _ = child.kill();
    let _ = child.wait();
    let text = s(&answer["result"]["content"][0]["text"]);
    let listed: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
    let names: Vec<String> = listed["launchable"]
        .as_array()
        .map(|a| a.iter().map(|x| s(&x["name"])).collect())
        .unwrap_or_default();
    assert!(names.iter().any(|n| n == "my odd editor"), "{answer}");
    assert!(names.iter().any(|n| n == "file manager"), "{answer}");
    assert!(names.iter().any(|n| n == "terminal"), "{answer}");
}

/// Issue 12, item 7: a file manager's items are listed in list view. The agent switches
/// Thunar to its list view through the View menu, picks the file by name, renames it through
/// the Rename dialog, and the file has its new name on disk.
#[test]
fn the_agent_renames_a_file_in_thunar() {
    if !require_live("the_agent_renames_a_file_in_thunar") {
        return;
    }
    need("thunar");
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let guard = AppGuard::new("thunar");
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join(&guard.token);
    std::fs::create_dir_all(&dir).expect("folder");
    std::fs::write(dir.join("old-name.txt"), "kept\n").expect("file");
    let config = format!("[launch]\n\"test files\" = \"thunar {}\"\n", dir.display());
    let lines = [
        host_assign("Rename old-name.txt to new-name.txt", "test files"),
        // the icon view first: its files are not listed, and the observation warns so
        app_line("View", "", "click", json!({}), "CONTINUE"),
        app_line("Icon View", "", "click", json!({}), "CONTINUE"),
        app_line("View", "", "click", json!({}), "CONTINUE"),
        app_line("List View", "", "click", json!({}), "CONTINUE"),
        // list view lists the file by name: focus selects its row, F2 opens the Rename dialog
        app_line("old-name.txt", "", "focus", json!({}), "CONTINUE"),
        app_line(
            "old-name.txt",
            "",
            "type_keys",
            json!({"keys": "{F2}"}),
            "CONTINUE",
        ),
        // the dialog comes first in the observation: its name field is label 1
        app_line(
            "",
            "1",
            "set_text",
            json!({"text": "new-name.txt"}),
            "CONTINUE",
        ),
        app_line("Rename", "", "click", json!({}), "FINISH"),
        host_finish(),
    ];
    let run = ufo_run(
        tmp.path(),
        &lines,
        &config,
        "Rename old-name.txt to new-name.txt",
    );
    let stderr = String::from_utf8_lossy(&run.stderr).into_owned();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !dir.join("new-name.txt").exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(run.status.code(), Some(0), "stderr:\n{stderr}");
    assert_eq!(
        std::fs::read_to_string(dir.join("new-name.txt"))
            .ok()
            .as_deref(),
        Some("kept\n"),
        "stderr:\n{stderr}"
    );
    assert!(!dir.join("old-name.txt").exists(), "stderr:\n{stderr}");
    let events = std::fs::read_to_string(tmp.path().join("out/events.jsonl")).unwrap_or_default();
    assert!(
        events.contains("exposes no items to accessibility"),
        "no observation warned about the icon view:\n{stderr}"
    );
}

/// The title of a window whose title contains `part` (through xdotool, not ufo).
fn window_titled(part: &str) -> Option<String> {
    let out = Command::new("xdotool")
        .args(["search", "--name", part, "getwindowname"])
        .output()
        .ok()?;
    let t = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (!t.is_empty()).then_some(t)
}

/// Issue 12, item 9: the Qt application (FeatherPad, Qt 5) opens a file through its File
/// menu and the Qt file dialog; its window then shows that file (title read by xdotool).
#[test]
fn the_agent_opens_a_file_in_a_qt_editor_through_its_menu() {
    if !require_live("the_agent_opens_a_file_in_a_qt_editor_through_its_menu") {
        return;
    }
    need("featherpad");
    need("xdotool");
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let guard = AppGuard::new("featherpad");
    let tmp = tempfile::tempdir().expect("tempdir");
    let start = tmp.path().join(format!("{}-start.txt", guard.token));
    std::fs::write(&start, "start\n").expect("file");
    let target = tmp.path().join(format!("opened-{}.txt", guard.token));
    std::fs::write(&target, "the text inside\n").expect("file");
    let config = format!(
        "[launch]\n\"qt editor\" = \"featherpad --standalone {}\"\n",
        start.display()
    );
    let lines = [
        host_assign("Open the file", "qt editor"),
        app_line("File", "", "click", json!({}), "CONTINUE"),
        // the open menu's "Open" item (the toolbar has an "Open" button too): label and name
        app_line("Open", "18", "click", json!({}), "CONTINUE"),
        app_line(
            "File name:",
            "",
            "set_text",
            json!({"text": target.display().to_string()}),
            "CONTINUE",
        ),
        // the dialog's controls come first: its "Open" button is the first "Open"
        app_line("Open", "", "click", json!({}), "FINISH"),
        host_finish(),
    ];
    let run = ufo_run(tmp.path(), &lines, &config, "Open the file");
    let stderr = String::from_utf8_lossy(&run.stderr).into_owned();
    let part = format!("opened-{}", guard.token);
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut title = None;
    while title.is_none() && Instant::now() < deadline {
        title = window_titled(&part);
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(run.status.code(), Some(0), "stderr:\n{stderr}");
    assert!(
        title.is_some(),
        "no FeatherPad window shows {part}:\n{stderr}"
    );
}

/// The RGB pixels of a PNG (8-bit RGB or RGBA), row by row.
fn read_png(path: &Path) -> (u32, u32, Vec<[u8; 3]>) {
    let file =
        std::fs::File::open(path).unwrap_or_else(|e| panic!("cannot open {}: {e}", path.display()));
    let mut decoder = png::Decoder::new(std::io::BufReader::new(file));
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

/// Issue 12, item 9: GIMP (GTK 2, started by ufo with its accessibility modules) flips an
/// image through its Image menu and exports it; the exported PNG's pixels are mirrored.
///
/// The open GTK 2 menus are not on the accessibility bus yet (item 4, done elsewhere), so
/// the agent walks the menu with its mnemonics: Alt+I (Image), T (Transform), H (Flip
/// Horizontally), each typed through a named control (the layer's row, which takes the
/// focus without closing the menu); Shift+Ctrl+E opens Export As.
#[test]
fn the_agent_flips_and_exports_an_image_in_gimp() {
    if !require_live("the_agent_flips_and_exports_an_image_in_gimp") {
        return;
    }
    need("gimp");
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let guard = AppGuard::new("gimp");
    let tmp = tempfile::tempdir().expect("tempdir");
    let name = format!("flip-{}.png", guard.token);
    let input = tmp.path().join(&name);
    // left half red, right half blue
    write_png(
        &input,
        4,
        2,
        |x, _| if x < 2 { [255, 0, 0] } else { [0, 0, 255] },
    );
    let output = tmp.path().join("flipped.png");
    let config = String::new();
    let keys = |k: &str, status: &str| app_line(&name, "", "type_keys", json!({"keys": k}), status);
    let lines = [
        // a host Bash launch of a GTK 2 program: ufo starts it with its accessibility modules
        // and returns once its window is there
        line(
            "host",
            json!({"Observation": "GIMP is not open.", "Thought": "Start it on the image.",
                   "Status": "CONTINUE",
                   "Bash": format!("gimp -n --no-splash --no-fonts {} &", input.display())}),
            &[],
        ),
        // GIMP shows its window before it has loaded the image
        line(
            "host",
            json!({"Observation": "GIMP is starting.", "Thought": "Let it load the image.",
                   "Status": "CONTINUE", "Bash": "sleep 6"}),
            &[],
        ),
        line(
            "host",
            json!({"Observation": "GIMP shows the image.", "Thought": "Assign the flip.",
                   "Current Sub-Task": "Flip the image horizontally and export it",
                   "ControlLabel": "1", "Status": "ASSIGN"}),
            &[],
        ),
        keys("{alt+i}", "CONTINUE"),
        keys("t", "CONTINUE"),
        keys("h", "CONTINUE"),
        keys("{shift+ctrl+e}", "CONTINUE"),
        // the Export Image dialog's name field, named by the label that points at it
        app_line(
            "Name",
            "",
            "set_text",
            json!({"text": output.display().to_string()}),
            "CONTINUE",
        ),
        app_line(
            "Name",
            "",
            "type_keys",
            json!({"keys": "{ENTER}"}),
            "FINISH",
        ),
        // the PNG options come from GIMP's PNG plug-in, a window of another process that
        // takes a moment to start
        line(
            "host",
            json!({"Observation": "GIMP is exporting.", "Thought": "Let the plug-in start.",
                   "Status": "CONTINUE", "Bash": "sleep 3"}),
            &[],
        ),
        line(
            "host",
            json!({"Observation": "The PNG options are asked.", "Thought": "Confirm them.",
                   "Current Sub-Task": "Export with the default options",
                   "ControlText": "Export Image as PNG", "Status": "ASSIGN"}),
            &[],
        ),
        app_line("Export", "", "click", json!({}), "FINISH"),
        host_finish(),
    ];
    let run = ufo_run(
        tmp.path(),
        &lines,
        &config,
        "Flip the image horizontally and export it",
    );
    let stderr = String::from_utf8_lossy(&run.stderr).into_owned();
    let deadline = Instant::now() + Duration::from_secs(15);
    while !output.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(200));
    }
    std::thread::sleep(Duration::from_millis(500));
    let events = std::fs::read_to_string(tmp.path().join("out/events.jsonl")).unwrap_or_default();
    let windows: Vec<&str> = events
        .lines()
        .filter(|l| l.contains("no window matches"))
        .collect();
    assert_eq!(run.status.code(), Some(0), "stderr:\n{stderr}\n{windows:?}");
    assert!(output.exists(), "nothing exported:\n{stderr}");
    let (w, h, px) = read_png(&output);
    assert_eq!((w, h), (4, 2));
    let blue = [0, 0, 255];
    let red = [255, 0, 0];
    for row in px.chunks(4) {
        assert_eq!(row, [blue, blue, red, red], "not flipped:\n{stderr}");
    }
}

/// Issue 12, item 1: a Chromium started by a host `Bash` (no switch given) gets
/// `--force-renderer-accessibility` (and `--no-sandbox` as root) from ufo, so its page is on
/// the accessibility bus: `ufo inspect` lists the page's button and `ufo doctor` is content.
#[test]
fn a_chromium_started_by_bash_shows_its_page_to_the_agent() {
    if !require_live("a_chromium_started_by_bash_shows_its_page_to_the_agent") {
        return;
    }
    need("chromium");
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let guard = AppGuard::new("chromium");
    let tmp = tempfile::tempdir().expect("tempdir");
    let page = tmp.path().join("page.html");
    std::fs::write(
        &page,
        format!(
            "<html><head><title>{}</title></head><body><button>Press me</button></body></html>",
            guard.token
        ),
    )
    .expect("page");
    let profile = tmp.path().join(&guard.token);
    let lines = [
        line(
            "host",
            json!({"Observation": "No browser is open.", "Thought": "Open the page.",
                   "Status": "CONTINUE",
                   "Bash": format!("chromium --no-first-run --user-data-dir={} file://{} &",
                                   profile.display(), page.display())}),
            &[],
        ),
        host_finish(),
    ];
    let run = ufo_run(tmp.path(), &lines, "", "Open the page");
    let stderr = String::from_utf8_lossy(&run.stderr).into_owned();
    assert_eq!(run.status.code(), Some(0), "stderr:\n{stderr}");
    let cmdlines: Vec<String> = processes_with(&guard.token)
        .iter()
        .filter_map(|p| std::fs::read(format!("/proc/{p}/cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .collect();
    assert!(
        cmdlines
            .iter()
            .any(|c| c.contains("--force-renderer-accessibility")),
        "{cmdlines:?}"
    );
    // the page fills in a moment after the window shows
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut shown = String::new();
    while Instant::now() < deadline {
        let out = ufo(&[
            "inspect",
            &guard.token,
            "--png",
            &tmp.path().join("inspect.png").display().to_string(),
        ]);
        shown = String::from_utf8_lossy(&out.stdout).into_owned();
        if shown.contains("\"Press me\"") {
            break;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    assert!(shown.contains("\"Press me\""), "{shown}");
    let out = ufo(&["doctor", &guard.token]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("(chromium, Chromium)"), "{text}");
}

/// Issue 23, item 3: GIMP's Edit > Preferences opens a separate, non-modal window. The
/// AppAgent follows it (its next prompt observes "Preferences" and says so), names and
/// changes a setting there, closes it with OK and is back on the image window; GIMP wrote the
/// setting into its gimprc, read off-ufo.
#[test]
fn the_agent_follows_gimps_preferences_window_and_changes_a_setting() {
    if !require_live("the_agent_follows_gimps_preferences_window_and_changes_a_setting") {
        return;
    }
    need("gimp");
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let guard = AppGuard::new("gimp-prefs");
    let tmp = tempfile::tempdir().expect("tempdir");
    let input = tmp.path().join(format!("prefs-{}.png", guard.token));
    write_png(&input, 2, 2, |_, _| [0, 128, 0]);
    let undo = "Minimal number of undo levels";
    let lines = [
        // a host Bash launch returns once GIMP's window is there
        line(
            "host",
            json!({"Observation": "GIMP is not open.", "Thought": "Start it.",
                   "Status": "CONTINUE",
                   "Bash": format!("gimp -n --no-splash --no-fonts {} &", input.display())}),
            &[],
        ),
        line(
            "host",
            json!({"Observation": "GIMP is open.", "Thought": "Assign the setting.",
                   "Current Sub-Task": "Set the minimal number of undo levels to 17",
                   "ControlText": "gimp", "Status": "ASSIGN"}),
            &[],
        ),
        app_line("Edit", "", "click", json!({}), "CONTINUE"),
        line(
            "app",
            app("Preferences", "", "click", json!({}), "CONTINUE"),
            &["menu item \"Preferences\""],
        ),
        line(
            "app",
            app(
                undo,
                "",
                "type_keys",
                json!({"keys": "{ctrl+a}17{TAB}"}),
                "CONTINUE",
            ),
            &[
                "Window: Preferences",
                "the action opened window \"Preferences\" (application gimp): it is now the \
                 window observed",
            ],
        ),
        // a GTK 2 spin button takes typed text as its value when the focus leaves it. Issue
        // 46: the unit boxes beside three spin buttons are no longer all named by their
        // container ("Resource Consumption"), and the swap compression box and its entry
        // are one line showing the entry's text
        line(
            "app",
            app("OK", "", "click", json!({}), "CONTINUE"),
            &[
                "value: \"17\"",
                "combo box \"\" value: \"Kibibyte\"",
                "combo box \"Swap compression\" value: \"Best performance\"",
            ],
        ),
        line(
            "app",
            app("", "", "", json!({}), "FINISH"),
            &["window \"Preferences\" closed: the window observed is"],
        ),
        host_finish(),
    ];
    let run = ufo_run(
        tmp.path(),
        &lines,
        "",
        "Set the minimal number of undo levels to 17 in GIMP's preferences",
    );
    let stderr = String::from_utf8_lossy(&run.stderr).into_owned();
    assert_eq!(
        run.status.code(),
        Some(0),
        "stderr:\n{stderr}\n{:?}",
        steps(&tmp.path().join("out"))
    );
    // off-ufo: GIMP saved the setting in its own configuration when OK closed Preferences
    let gimprc = tmp.path().join("home/.config/GIMP/2.10/gimprc");
    let text = wait_for_file(&gimprc, "(undo-levels 17)", Duration::from_secs(15));
    assert!(
        text.contains("(undo-levels 17)"),
        "gimprc has no (undo-levels 17):\n{text}\nstderr:\n{stderr}"
    );
    let events = std::fs::read_to_string(tmp.path().join("out/events.jsonl")).unwrap_or_default();
    let changes: Vec<&str> = events
        .lines()
        .filter(|l| l.contains("\"window_change\""))
        .collect();
    assert_eq!(changes.len(), 2, "{changes:#?}");
}

/// Issue 46, item 1: mousepad's Find and Replace lists each combo box and the entry inside it
/// as one line (`combo box "Replace with"`, no `text "Replace with"`), so `set_text` by name
/// is not ambiguous and goes into the entry. Every "alpha" is replaced, checked in the saved
/// file.
#[test]
fn the_agent_replaces_text_through_mousepads_find_and_replace() {
    if !require_live("the_agent_replaces_text_through_mousepads_find_and_replace") {
        return;
    }
    need("mousepad");
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let guard = AppGuard::new("mousepad");
    let tmp = tempfile::tempdir().expect("tempdir");
    let file = tmp.path().join(format!("{}.txt", guard.token));
    std::fs::write(&file, "alpha beta alpha\ngamma alpha\n").expect("file");
    let config = format!(
        "[launch]\n\"test files\" = \"mousepad {}\"\n",
        file.display()
    );
    let lines = [
        host_assign("Replace every alpha with omega and save", "test files"),
        // the menus come first, then the text area: label 7
        line(
            "app",
            app(
                "",
                "7",
                "type_keys",
                json!({"keys": "{ctrl+r}"}),
                "CONTINUE",
            ),
            &["[7] text"],
        ),
        // one line per field: the box and its entry are one control (the entry was [2] and
        // the second box [3] when each had a line)
        line(
            "app",
            app(
                "Search for",
                "",
                "set_text",
                json!({"text": "alpha"}),
                "CONTINUE",
            ),
            &[
                "[1] combo box \"Search for\"",
                "[2] combo box \"Replace with\"",
            ],
        ),
        app_line(
            "Replace with",
            "",
            "set_text",
            json!({"text": "omega"}),
            "CONTINUE",
        ),
        app_line("Replace all in:", "", "click", json!({}), "CONTINUE"),
        // with "Replace all in" checked, the Replace button replaces them all
        app_line("Replace All", "", "click", json!({}), "CONTINUE"),
        app_line("Close", "", "click", json!({}), "CONTINUE"),
        app_line("", "7", "type_keys", json!({"keys": "{ctrl+s}"}), "FINISH"),
        host_finish(),
    ];
    let run = ufo_run(tmp.path(), &lines, &config, "Replace alpha with omega");
    let stderr = String::from_utf8_lossy(&run.stderr).into_owned();
    let saved = wait_for_file(&file, "omega", Duration::from_secs(10));
    assert_eq!(run.status.code(), Some(0), "stderr:\n{stderr}");
    assert_eq!(
        saved, "omega beta omega\ngamma omega\n",
        "stderr:\n{stderr}"
    );
}

/// The processes whose environment holds `var` (a marker for an application that takes no
/// argument to carry it: GNOME Clocks refuses any).
fn processes_with_env(var: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(env) = std::fs::read(e.path().join("environ")) else {
            continue;
        };
        if env.split(|b| *b == 0).any(|v| v == var.as_bytes()) {
            out.push(pid);
        }
    }
    out
}

/// Ends, when dropped, the processes whose environment holds its marker.
struct EnvGuard<'a>(&'a str);

impl Drop for EnvGuard<'_> {
    fn drop(&mut self) {
        ufo_desktop::testing::end_processes(|| processes_with_env(self.0), Duration::from_secs(5));
    }
}

/// Issue 46, item 1: GNOME Clocks (GTK 4) names its dialog's buttons "_Cancel Cancel" and
/// "_Add Add" (the mnemonic label glued before the label). They are listed as "Cancel" and
/// "Add", and "Cancel" by name closes the dialog (checked with xdotool, not ufo); the next
/// step observes the main window again, with its controls (issue 46, item 3: a closed dialog
/// was once still observed, with none; not seen again here with Cancel or Escape, 5 runs).
#[test]
fn a_gtk4_buttons_mnemonic_is_no_part_of_its_name_in_gnome_clocks() {
    if !require_live("a_gtk4_buttons_mnemonic_is_no_part_of_its_name_in_gnome_clocks") {
        return;
    }
    need("gnome-clocks");
    need("xdotool");
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let marker = format!("UFO_TEST_APP=ufo-clocks-{}", std::process::id());
    let _guard = EnvGuard(&marker);
    let tmp = tempfile::tempdir().expect("tempdir");
    let config = format!("[launch]\n\"world clocks\" = \"env {marker} gnome-clocks\"\n");
    let dialog = "Add a New World Clock";
    let lines = [
        host_assign(
            "Open the dialog to add a clock, then cancel it",
            "world clocks",
        ),
        app_line("Add Location", "", "click", json!({}), "CONTINUE"),
        line(
            "app",
            app("Cancel", "", "click", json!({}), "CONTINUE"),
            &[dialog, "button \"Cancel\"", "button \"Add\""],
        ),
        // the dialog closed: the main window is observed again, with its controls
        line(
            "app",
            app("", "", "", json!({}), "FINISH"),
            &["button \"Add Location\""],
        ),
        host_finish(),
    ];
    let run = ufo_run(tmp.path(), &lines, &config, "Add a clock, then cancel");
    let stderr = String::from_utf8_lossy(&run.stderr).into_owned();
    let deadline = Instant::now() + Duration::from_secs(5);
    while window_titled(dialog).is_some() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(run.status.code(), Some(0), "stderr:\n{stderr}");
    assert!(
        !processes_with_env(&marker).is_empty(),
        "GNOME Clocks is not running:\n{stderr}"
    );
    assert_eq!(
        window_titled(dialog),
        None,
        "the dialog is still open:\n{stderr}"
    );
}

/// Issue 46, item 3: GNOME Clocks lists a city search's results in its "Add a New World
/// Clock" dialog a while after the text; the issue saw the step after the text list none.
/// Not reproduced with the binary before this test (0 of 15 tries: 5 with `set_text`, 5 with
/// `type_keys`, 5 under three busy loops on the two cores: the results were in that step's
/// prompt each time), so this is a regression test: the prompt after the text lists the
/// city's results, the first is added, and gsettings (not ufo) reads Berlin among the world
/// clocks.
#[test]
fn a_city_searchs_results_are_listed_in_the_step_after_the_text_in_gnome_clocks() {
    if !require_live("a_city_searchs_results_are_listed_in_the_step_after_the_text_in_gnome_clocks")
    {
        return;
    }
    need("gnome-clocks");
    need("gsettings");
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let marker = format!("UFO_TEST_APP=ufo-clocks-search-{}", std::process::id());
    let _guard = EnvGuard(&marker);
    let tmp = tempfile::tempdir().expect("tempdir");
    // the session keeps GSettings in memory: this Clocks keeps them in a file of its HOME
    let config = format!(
        "[launch]\n\"world clocks\" = \"env {marker} GSETTINGS_BACKEND=keyfile gnome-clocks\"\n"
    );
    let lines = [
        host_assign("Add Berlin as a world clock", "world clocks"),
        app_line("Add Location", "", "click", json!({}), "CONTINUE"),
        // the search field has no name of its own: its label
        line(
            "app",
            app("", "3", "set_text", json!({"text": "Berlin"}), "CONTINUE"),
            &["[3] entry \"\""],
        ),
        // the results are in the prompt of the step after the text
        line(
            "app",
            app("", "4", "click", json!({}), "CONTINUE"),
            &["[4] list item \"Berlin Germany"],
        ),
        app_line("Add", "", "click", json!({}), "CONTINUE"),
        app_line("", "", "", json!({}), "FINISH"),
        host_finish(),
    ];
    let run = ufo_run(tmp.path(), &lines, &config, "Add Berlin as a world clock");
    let stderr = String::from_utf8_lossy(&run.stderr).into_owned();
    assert_eq!(run.status.code(), Some(0), "stderr:\n{stderr}");
    let home = tmp.path().join("home");
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut clocks = clocks_world_clocks(&home);
    while !clocks.as_deref().is_ok_and(|c| c.contains("'Berlin'")) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(200));
        clocks = clocks_world_clocks(&home);
    }
    assert!(
        clocks.as_deref().is_ok_and(|c| c.contains("'Berlin'")),
        "gsettings reads no Berlin among the world clocks: {clocks:?}\nstderr:\n{stderr}"
    );
}
