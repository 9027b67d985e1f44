//! Live tests on KDE's Dolphin file manager (issue 46): its icon view lists each file as one
//! control; its hamburger and context menus (override-redirect Qt popups its tree does not
//! list) are observed with its window; an entry pressed in them leaves no menu open. Scripted
//! `ufo run --desktop live` sessions name the controls; the results are checked off ufo: on
//! disk (a file renamed, a folder made) and through pyatspi (the icon view's cells).
//!
//! Dolphin refuses to start as root only when `SUDO_USER` or `KDESU_USER` is set (it checks
//! `getuid() == 0` and those two variables: "Running Dolphin with sudo can cause bugs..."); as
//! root without them it starts and shows a banner. The tests start it without them, with
//! `--new-window` (else it hands the folder to a Dolphin already on the session bus), and end
//! it by its folder argument. Breeze's icons (`scripts/test-deps.sh install_apps`) are needed:
//! without an icon theme Dolphin draws only an item's name, and a click at the item's centre
//! lands on the empty view.
//!
//! Needs the desktop session (scripts/desktop-session.sh), `dolphin`, xdotool and python3 with
//! pyatspi. Skipped with a message without DISPLAY and UFO_LIVE_TESTS; with UFO_LIVE_TESTS=1
//! anything missing fails the test.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};
use ufo_desktop::testing::script::{app, app_line, host_finish, line};
use ufo_desktop::testing::{require_live, ProcessGuard};

use common::*;
use serde_json::{json, Value};

/// Live tests share one display: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

/// A test's temporary folder and the HOME ufo runs with in it.
fn scene() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).expect("home");
    (tmp, home)
}

/// A folder of its own with the files `names` (each holding its name), under `tmp`; its name
/// is the window's title.
fn folder(tmp: &Path, title: &str, names: &[&str]) -> PathBuf {
    let dir = tmp.join(title);
    std::fs::create_dir_all(&dir).expect("folder");
    for n in names {
        std::fs::write(dir.join(n), n).expect("file");
    }
    dir
}

/// Dolphin on `dir` in a window of its own; ended (by its folder argument) with the guard.
fn start_dolphin(dir: &Path, home: &Path) -> ProcessGuard {
    let child = Command::new("dolphin")
        .arg("--new-window")
        .arg(dir)
        .env_remove("SUDO_USER")
        .env_remove("KDESU_USER")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("dolphin starts (scripts/test-deps.sh install_apps)");
    let guard = ProcessGuard::new(dir.display().to_string(), Some(child));
    let title = dir.file_name().map(|n| n.to_string_lossy().into_owned());
    let title = title.unwrap_or_default();
    let png = home.join("start.png");
    wait_for_control(home, &title, "Open Menu", Duration::from_secs(60), &png);
    guard
}

/// `ufo run --desktop live` with a script (its first line assigns the window `title`); the
/// exit code, the app steps' results and the log.
fn run(home: &Path, dir: &Path, lines: &[String], env: &[(&str, &str)]) -> (Option<i32>, String) {
    // (a folder of its own for each run in `dir`)
    let n = std::fs::read_dir(dir).map_or(0, |d| d.count());
    let script = dir.join(format!("script-{n}.jsonl"));
    let out = dir.join(format!("out-{n}"));
    std::fs::write(&script, lines.join("\n")).expect("script");
    let args = live_run_args(&script, &out, &["--confirm", "yes", "Tidy my folder"]);
    let run = ufo_live(home, &args, env);
    let events = std::fs::read_to_string(out.join("events.jsonl")).unwrap_or_default();
    let results: Vec<String> = events
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["type"] == "step" && e["role"] == "app")
        .map(|e| s(&e["result"]))
        .collect();
    let stderr = String::from_utf8_lossy(&run.stderr);
    (run.status.code(), format!("{results:#?}\n{stderr}"))
}

/// The host's line assigning the window `title`.
fn assign(title: &str) -> String {
    line(
        "host",
        json!({"Observation": "The folder is open in Dolphin.", "Thought": "Assign it.",
               "Current Sub-Task": "Tidy the folder", "ControlText": title,
               "Status": "ASSIGN"}),
        &[],
    )
}

/// Wait (10 s at most) until `check` holds of the disk.
fn on_disk(check: impl Fn() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if check() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    false
}

/// The icon view's cells as pyatspi reads them: `name x y w h` lines.
fn cells_by_pyatspi(title: &str) -> Vec<String> {
    let py = format!(
        "import pyatspi\n\
         for a in pyatspi.Registry.getDesktop(0):\n  \
         if a is None or a.name != 'dolphin': continue\n  \
         for w in a:\n    \
         if w is None or {title:?} not in w.name: continue\n    \
         for c in pyatspi.findAllDescendants(w, lambda n: n.getRole() == pyatspi.ROLE_TABLE_CELL \
         and n.getState().contains(pyatspi.STATE_SHOWING)):\n      \
         e = c.queryComponent().getExtents(pyatspi.DESKTOP_COORDS)\n      \
         print(c.name, e.x, e.y, e.width, e.height)\n"
    );
    let out = Command::new("/usr/bin/python3")
        .args(["-c", &py])
        .output()
        .expect("python3 with pyatspi");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

/// Issue 46: Dolphin's icon view lists its files as a table's cells, several to a line; the
/// line was one control (`"draft.txt" value "draft.txt · notes.txt"`). Each file the view
/// shows (pyatspi: its showing cells) is one listed line, named by the file, at the cell's
/// place, with no value.
#[test]
fn dolphins_icon_view_lists_each_file_as_one_control() {
    if !require_live("dolphins_icon_view_lists_each_file_as_one_control") {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let (tmp, home) = scene();
    let title = format!("icons-{}", std::process::id());
    let names = ["draft.txt", "notes.txt", "todo.txt"];
    let dir = folder(tmp.path(), &title, &names);
    let _dolphin = start_dolphin(&dir, &home);
    // the icon view (Dolphin keeps the last view mode chosen)
    let lines = [
        assign(&title),
        app_line("Icons", "", "click", json!({}), "CONTINUE"),
        app_line("", "", "", json!({}), "FINISH"),
        host_finish(),
    ];
    let (code, log) = run(&home, tmp.path(), &lines, &[]);
    assert_eq!(code, Some(0), "{log}");
    let cells = cells_by_pyatspi(&title);
    assert_eq!(cells.len(), names.len(), "pyatspi's cells: {cells:?}");
    let listing = inspect_window(&home, &title, &home.join("icons.png"));
    for cell in &cells {
        let mut parts = cell.rsplitn(5, ' ');
        let (h, w, y, x) = (parts.next(), parts.next(), parts.next(), parts.next());
        let name = parts.next().unwrap_or_default();
        let want = format!(
            "table cell \"{name}\" @{},{} {}x{}",
            x.unwrap_or_default(),
            y.unwrap_or_default(),
            w.unwrap_or_default(),
            h.unwrap_or_default()
        );
        let line = listing.lines().find(|l| l.contains(&format!("\"{name}\"")));
        let line = line.unwrap_or_else(|| panic!("{name} is not listed:\n{listing}"));
        assert!(
            line.contains(&want) && !line.contains("value="),
            "{name}: {line:?}, pyatspi: {cell:?}\n{listing}"
        );
    }
}

/// Issue 46: Dolphin's context menu (a Qt popup its tree does not list) was never observed:
/// "nothing changed in the window's controls". A file is renamed through its context menu,
/// as a person does it: right click on the file, "Rename...", the new name, Enter; twice
/// (Dolphin makes a new context menu at each right click, and the entries it shares with the
/// menu bar answered nothing in the second one). Checked on disk.
#[test]
fn a_file_is_renamed_through_dolphins_context_menu() {
    if !require_live("a_file_is_renamed_through_dolphins_context_menu") {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let (tmp, home) = scene();
    let title = format!("context-{}", std::process::id());
    let dir = folder(tmp.path(), &title, &["draft.txt", "notes.txt"]);
    let _dolphin = start_dolphin(&dir, &home);
    for (from, to) in [("notes", "minutes"), ("draft", "letter")] {
        let lines = [
            assign(&title),
            app_line("Icons", "", "click", json!({}), "CONTINUE"),
            app_line(
                &format!("{from}.txt"),
                "",
                "click",
                json!({"button": "right"}),
                "CONTINUE",
            ),
            line(
                "app",
                app("Rename...", "", "click", json!({}), "CONTINUE"),
                &["menu item \"Rename...\""],
            ),
            // Dolphin's name editor selects the name without its extension
            app_line(
                &format!("{from}.txt"),
                "",
                "type_keys",
                json!({"keys": format!("{to}{{enter}}")}),
                "CONTINUE",
            ),
            app_line("", "", "", json!({}), "FINISH"),
            host_finish(),
        ];
        let (code, log) = run(&home, tmp.path(), &lines, &[]);
        assert_eq!(code, Some(0), "{log}");
        let renamed = dir.join(format!("{to}.txt"));
        assert!(
            on_disk(|| renamed.is_file() && !dir.join(format!("{from}.txt")).exists()),
            "{from}.txt was not renamed {to}.txt: {:?}\n{log}",
            std::fs::read_dir(&dir).map(|d| d.flatten().map(|e| e.file_name()).collect::<Vec<_>>())
        );
    }
}

/// Issue 46: Dolphin's hamburger menu ("Open Menu", a Qt popup its tree does not list) was
/// never observed. A folder is made through it: "Open Menu", "Create New", "Folder...", the
/// name, OK. Its entries shared with the hidden menu bar report that menu's places; they are
/// listed where the popup draws them, and clicked there. Pressed through AT-SPI instead
/// (`UFO_XTEST_CLICKS=0`), Qt leaves the menu open: it is closed, and the folder is made all
/// the same. Checked on disk.
#[test]
fn a_folder_is_made_through_dolphins_hamburger_menu() {
    if !require_live("a_folder_is_made_through_dolphins_hamburger_menu") {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    for xtest in ["1", "0"] {
        let (tmp, home) = scene();
        let title = format!("menu-{xtest}-{}", std::process::id());
        let dir = folder(tmp.path(), &title, &["draft.txt"]);
        let _dolphin = start_dolphin(&dir, &home);
        let made = format!("Invoices {xtest}");
        let lines = [
            assign(&title),
            app_line("Open Menu", "", "click", json!({}), "CONTINUE"),
            line(
                "app",
                app("Create New", "", "click", json!({}), "CONTINUE"),
                &["menu item \"Create New\""],
            ),
            app_line("Folder...", "", "click", json!({}), "CONTINUE"),
            app_line(
                &format!("Create new folder in {}/", dir.display()),
                "",
                "set_text",
                json!({"text": made}),
                "CONTINUE",
            ),
            app_line("OK", "", "click", json!({}), "CONTINUE"),
            app_line("", "", "", json!({}), "FINISH"),
            host_finish(),
        ];
        let (code, log) = run(&home, tmp.path(), &lines, &[("UFO_XTEST_CLICKS", xtest)]);
        assert_eq!(code, Some(0), "UFO_XTEST_CLICKS={xtest}\n{log}");
        let folder = dir.join(&made);
        assert!(
            on_disk(|| folder.is_dir()),
            "UFO_XTEST_CLICKS={xtest}: no folder {made:?}\n{log}"
        );
    }
}
