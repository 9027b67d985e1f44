//! `ufo run --desktop live` on a GTK2 application (GIMP) and a Qt one (FeatherPad), issue 12:
//! an open GTK2 menu's items are listed and `select` on a menu activates the named item; a
//! click that opens a Qt modal dialog (its action call blocks until the dialog closes) is
//! reported done, not as a hung application. Results are checked through pyatspi.
//! Issue 23: the GTK 4 (gnome-text-editor) and KDE (Kate) Save dialogs hide the window under
//! them, as GTK 3's do, and a file saved through them by naming their controls is on disk.
//!
//! Issue 46: a Qt application joins the bus when the display has no `AT_SPI_BUS` property, a
//! Qt menu entry pressed leaves no menu open (FeatherPad, KolourPaint), and Tk's IDLE (no
//! `_NET_WM_PID`) is reported launched.
//!
//! Needs the desktop session (scripts/desktop-session.sh), `gimp`, `featherpad`, `idle`,
//! `gnome-text-editor`, `kate`, `kolourpaint`, `xdotool` and python3 with pyatspi. Skipped with a message without DISPLAY and UFO_LIVE_TESTS; with
//! UFO_LIVE_TESTS=1 anything missing fails the test.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};
use ufo_desktop::testing::script::{app, app_line, line};
use ufo_desktop::testing::{require_live, ProcessGuard};

use common::*;
use serde_json::{json, Value};

/// Live tests share one display: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

/// `ufo run --desktop live` with a script; the run and its events.
fn run_script(home: &Path, dir: &Path, lines: &[String], request: &str) -> (Option<i32>, String) {
    run_script_env(home, dir, lines, request, &[])
}

/// [`run_script`] with more environment for ufo.
fn run_script_env(
    home: &Path,
    dir: &Path,
    lines: &[String],
    request: &str,
    env: &[(&str, &str)],
) -> (Option<i32>, String) {
    run_script_args(home, dir, lines, &[request], env)
}

/// [`run_script_env`] with more options before the request (`rest` ends with it).
fn run_script_args(
    home: &Path,
    dir: &Path,
    lines: &[String],
    rest: &[&str],
    env: &[(&str, &str)],
) -> (Option<i32>, String) {
    let script = dir.join("script.jsonl");
    let out = dir.join("out");
    std::fs::write(&script, lines.join("\n")).expect("script");
    let run = ufo_live(home, &live_run_args(&script, &out, rest), env);
    let events = std::fs::read_to_string(out.join("events.jsonl")).unwrap_or_default();
    let stderr = String::from_utf8_lossy(&run.stderr).into_owned();
    (run.status.code(), format!("{stderr}\n{events}"))
}

/// The app steps' results of a run's events.
fn results(events: &str) -> Vec<String> {
    events
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["type"] == "step" && e["role"] == "app")
        .map(|e| s(&e["result"]))
        .collect()
}

/// A 64×48 image (binary PPM, which GIMP opens), left half red, right half blue.
fn write_image(path: &Path) {
    let (w, h) = (64usize, 48usize);
    let mut data = format!("P6\n{w} {h}\n255\n").into_bytes();
    for _ in 0..h {
        for x in 0..w {
            data.extend_from_slice(if x < w / 2 {
                &[255, 0, 0]
            } else {
                &[0, 0, 255]
            });
        }
    }
    std::fs::write(path, data).expect("image written");
}

/// Through pyatspi: the names of the first items of GIMP's Edit menu (its Undo item says
/// what the last change was).
const GIMP_UNDO: &str = r#"
import sys, time, pyatspi
def find(n, pred, depth=0):
    if pred(n): return n
    if depth > 30: return None
    for i in range(min(n.childCount, 200)):
        c = n.getChildAtIndex(i)
        if c is None: continue
        r = find(c, pred, depth + 1)
        if r: return r
    return None
names = ''
end = time.time() + 10
while time.time() < end:
    for app in pyatspi.Registry.getDesktop(0):
        if app is None or app.name != 'gimp': continue
        edit = find(app, lambda n: n.getRoleName() == 'menu' and n.name == 'Edit')
        if edit is None: continue
        names = '|'.join(edit.getChildAtIndex(i).name for i in range(min(8, edit.childCount)))
    if 'Undo Flip' in names: break
    time.sleep(0.5)
print(names)
"#;

#[test]
fn ufo_lists_an_open_gtk2_menu_and_activates_its_item_in_gimp() {
    if !require_live("ufo_lists_an_open_gtk2_menu_and_activates_its_item_in_gimp") {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).expect("home");
    let image = tmp.path().join("halves.ppm");
    write_image(&image);
    let child = Command::new("gimp")
        .args(["--no-splash", "--new-instance"])
        .arg(&image)
        .env("HOME", &home)
        // GIMP keeps its profile (and a crash-recovery prompt) under XDG_CONFIG_HOME
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_DATA_HOME", home.join(".local/share"))
        .env("XDG_CACHE_HOME", home.join(".cache"))
        .env("GTK_MODULES", "gail:atk-bridge")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("gimp starts (install it: apt-get install gimp)");
    let _gimp = ProcessGuard {
        arg: image.display().to_string(),
        child: Some(child),
    };
    // the window is titled by the image once it is loaded (its menus come before that)
    wait_for_control(
        &home,
        "halves",
        "menu \"Image\"",
        Duration::from_secs(120),
        &home.join("inspect.png"),
    );

    let lines = [
        line(
            "host",
            json!({"Observation": "GIMP shows the image.", "Thought": "Assign.",
                   "Current Sub-Task": "Flip the image horizontally", "ControlText": "gimp",
                   "Status": "ASSIGN"}),
            &[],
        ),
        app_line("Image", "", "click", json!({}), "CONTINUE"),
        // the open menu is listed: its submenu Transform and its items
        line(
            "app",
            app("Transform", "", "click", json!({}), "CONTINUE"),
            &["menu \"Transform\"", "menu item \"Canvas Size...\""],
        ),
        line(
            "app",
            app(
                "Image",
                "",
                "select",
                json!({"item": "Flip Horizontally"}),
                "CONTINUE",
            ),
            &["menu item \"Flip Horizontally\""],
        ),
        app_line("", "", "", json!({}), "FINISH"),
        line(
            "host",
            json!({"Observation": "Flipped.", "Thought": "Finish.", "Status": "FINISH"}),
            &[],
        ),
    ];
    let (code, log) = run_script(&home, tmp.path(), &lines, "Flip the image horizontally");
    assert_eq!(code, Some(0), "{log}");
    let results = results(&log);
    assert!(
        results
            .iter()
            .any(|r| r.contains("selected \"Flip Horizontally\"")),
        "{results:#?}"
    );
    let undo = Command::new("/usr/bin/python3")
        .args(["-c", GIMP_UNDO])
        .output()
        .expect("python3 runs");
    let items = String::from_utf8_lossy(&undo.stdout).into_owned();
    assert!(
        items.contains("Undo Flip"),
        "GIMP's Edit menu does not offer to undo a flip: {items:?}\n{results:#?}"
    );
}

#[test]
fn a_click_that_opens_a_qt_modal_dialog_is_reported_done() {
    if !require_live("a_click_that_opens_a_qt_modal_dialog_is_reported_done") {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).expect("home");
    let file = tmp.path().join("notes-modal-test.txt");
    std::fs::write(&file, "hello\n").expect("file");
    let child = Command::new("featherpad")
        .arg(&file)
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("QT_LINUX_ACCESSIBILITY_ALWAYS_ON", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("featherpad starts (install it: apt-get install featherpad)");
    let _app = ProcessGuard {
        arg: file.display().to_string(),
        child: Some(child),
    };
    wait_for_control(
        &home,
        "FeatherPad",
        "button \"Open\"",
        Duration::from_secs(40),
        &home.join("inspect.png"),
    );
    let lines = [
        line(
            "host",
            json!({"Observation": "FeatherPad is open.", "Thought": "Assign.",
                   "Current Sub-Task": "Show the Open dialog", "ControlText": "FeatherPad",
                   "Status": "ASSIGN"}),
            &[],
        ),
        app_line("Open", "", "click", json!({}), "CONTINUE"),
        line(
            "app",
            app("", "", "", json!({}), "FINISH"),
            &["opened the dialog"],
        ),
        line(
            "host",
            json!({"Observation": "Done.", "Thought": "Finish.", "Status": "FINISH"}),
            &[],
        ),
    ];
    let started = Instant::now();
    // the AT-SPI action, whose call blocks while the modal dialog is open (an XTEST click,
    // the default for a visible control, does not block)
    let (code, log) = run_script_env(
        &home,
        tmp.path(),
        &lines,
        "Show the Open dialog",
        &[("UFO_XTEST_CLICKS", "0")],
    );
    assert_eq!(code, Some(0), "{log}");
    let results = results(&log);
    assert!(
        results[0].contains("opened the dialog") && !results[0].contains("hung"),
        "{results:#?}"
    );
    // the dialog is really there, seen from outside ufo
    let dialog = Command::new("/usr/bin/python3")
        .args([
            "-c",
            "import pyatspi\nfor a in pyatspi.Registry.getDesktop(0):\n  if a is not None and a.name == 'FeatherPad':\n    print('|'.join(w.name for w in a if w is not None))",
        ])
        .output()
        .expect("python3 runs");
    let windows = String::from_utf8_lossy(&dialog.stdout).into_owned();
    assert!(
        windows.to_lowercase().contains("open"),
        "no Open dialog on the bus: {windows:?} (run took {:?})",
        started.elapsed()
    );
}

/// `ufo inspect WINDOW` with its warnings: stdout then stderr.
fn inspect_with_warnings(home: &Path, window: &str, png: &Path) -> String {
    let out = ufo_live(
        home,
        &[
            "inspect".into(),
            window.into(),
            "--png".into(),
            png.display().to_string(),
        ],
        &[],
    );
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Wait (`within` at most) until [`inspect_with_warnings`] shows `wanted`; the listing.
fn wait_for_listing(home: &Path, window: &str, wanted: &str, within: Duration) -> String {
    let deadline = Instant::now() + within;
    let mut last = String::new();
    while Instant::now() < deadline {
        last = inspect_with_warnings(home, window, &home.join("inspect.png"));
        if last.contains(wanted) {
            return last;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    panic!("{window:?} never showed {wanted:?}; last inspect:\n{last}");
}

/// The hex id of the window `ufo inspect` printed first (`window 0x… "title" …`).
fn listed_window_id(listing: &str) -> String {
    listing
        .lines()
        .find_map(|l| l.strip_prefix("window "))
        .and_then(|l| l.split_whitespace().next())
        .unwrap_or_else(|| panic!("no window line in:\n{listing}"))
        .to_string()
}

/// The title of the window `ufo inspect` printed first (`window 0x… "title" …`; no title
/// here holds a quote).
fn listed_window_title(listing: &str) -> String {
    listing
        .lines()
        .find_map(|l| l.strip_prefix("window "))
        .and_then(|l| l.split('"').nth(1))
        .unwrap_or_else(|| panic!("no window line in:\n{listing}"))
        .to_string()
}

/// The title of window `id`, read by xdotool (empty when it cannot be read).
fn window_title(id: &str) -> String {
    Command::new("xdotool")
        .args(["getwindowname", id])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}

/// A text editor whose Save dialog is tested: how to start it and what its windows show.
struct Editor {
    /// The program and its arguments (a new, empty document).
    command: &'static [&'static str],
    /// Its application or process name (the first window found by it is the main one).
    window: &'static str,
    /// The keys that open a new document, and a word of its window's title then (Kate
    /// starts on a welcome view).
    new_document: Option<(&'static str, &'static str)>,
    /// Controls of the main window, listed while no dialog is open.
    main_controls: &'static [&'static str],
    /// The Save dialog's file-name field and its Save button, as named to the agent.
    name_field: &'static str,
    save_button: &'static str,
    /// How long it may take to show its window (Kate is slow to start on a loaded machine).
    start_within: Duration,
}

/// Start `editor` on a new document, type into it and press Ctrl+S (off ufo, with
/// xdotool): the observation of the main window lists the Save dialog's name field, none
/// of the main window's controls, and the modal-dialog warning. Then a scripted run names
/// the dialog's controls to save the text, and the file is checked on disk.
fn save_through_the_modal_save_dialog(editor: &Editor) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).expect("home");
    let file = tmp.path().join("saved-through-the-dialog.txt");
    let child = Command::new(editor.command[0])
        .args(&editor.command[1..])
        .current_dir(tmp.path())
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_DATA_HOME", home.join(".local/share"))
        .env("XDG_CACHE_HOME", home.join(".cache"))
        .env("QT_LINUX_ACCESSIBILITY_ALWAYS_ON", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| {
            panic!(
                "{} does not start ({e}): install it (scripts/test-deps.sh)",
                editor.command[0]
            )
        });
    // the spawned process is the application (no process of another test carries the path)
    let _app = ProcessGuard {
        arg: tmp.path().display().to_string(),
        child: Some(child),
    };
    let main = wait_for_listing(
        &home,
        editor.window,
        editor.main_controls[0],
        editor.start_within,
    );
    let id = listed_window_id(&main);
    // (no quote: xdotool types only what the keyboard map has)
    let typed = "saved by naming the dialog controls";
    let xdotool = |args: &[&str]| {
        let ok = Command::new("xdotool")
            .args(args)
            .status()
            .expect("xdotool runs (install it: apt-get install xdotool)");
        assert!(ok.success(), "xdotool {args:?} failed");
    };
    xdotool(&["windowactivate", "--sync", &id]);
    if let Some((keys, title)) = editor.new_document {
        xdotool(&["key", keys]);
        let deadline = Instant::now() + Duration::from_secs(30);
        while !window_title(&id).contains(title) {
            assert!(Instant::now() < deadline, "no new document in {id}");
            std::thread::sleep(Duration::from_millis(200));
        }
    }
    xdotool(&["type", "--delay", "30", typed]);
    xdotool(&["key", "ctrl+s"]);
    // from now on the window is named by its id (its dialog's title may share words). The
    // dialog's accessible frame can come before its X window is mapped: it is then read as a
    // popup drawn over the window (docs/desktop.md), and the modal dialog is told once its
    // window is there, so the wait is for the warning.
    let seen = wait_for_listing(&home, &id, "the modal dialog", Duration::from_secs(30));
    assert!(
        seen.contains(&format!("text \"{}\"", editor.name_field)),
        "the dialog's name field is not listed:\n{seen}"
    );
    assert!(
        seen.contains("are not listed"),
        "no modal-dialog warning:\n{seen}"
    );
    // the host names the window by its exact title
    let title = listed_window_title(&seen);
    for c in editor.main_controls {
        assert!(
            !seen.contains(c),
            "the main window's {c} is listed under the modal dialog:\n{seen}"
        );
    }

    let lines = [
        line(
            "host",
            json!({"Observation": "The Save dialog is open.", "Thought": "Assign.",
                   "Current Sub-Task": "Save the text", "ControlText": title,
                   "Status": "ASSIGN"}),
            &[],
        ),
        line(
            "app",
            app(
                editor.name_field,
                "",
                "set_text",
                json!({"text": file.display().to_string()}),
                "CONTINUE",
            ),
            &[&format!("text \"{}\"", editor.name_field)],
        ),
        line(
            "app",
            app(editor.save_button, "", "click", json!({}), "FINISH"),
            &[&format!("button \"{}\"", editor.save_button)],
        ),
        line(
            "host",
            json!({"Observation": "Saved.", "Thought": "Finish.", "Status": "FINISH"}),
            &[],
        ),
    ];
    let (code, log) = run_script(&home, tmp.path(), &lines, "Save the text");
    // checked on disk, not through ufo
    let deadline = Instant::now() + Duration::from_secs(15);
    let content = loop {
        match std::fs::read_to_string(&file) {
            Ok(s) if !s.is_empty() => break s,
            _ if Instant::now() > deadline => break String::new(),
            _ => std::thread::sleep(Duration::from_millis(100)),
        }
    };
    assert_eq!(code, Some(0), "{log}");
    // the agent was told why the window's own controls are missing
    let warned = log
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|e| e["type"] == "step" && e["role"] == "app")
        .map(|e| e["artifacts"]["observation_warnings"].to_string())
        .unwrap_or_default();
    assert!(warned.contains("the modal dialog"), "{warned}\n{log}");
    assert_eq!(content.trim_end(), typed, "{:#?}", results(&log));
}

#[test]
fn a_gtk4_save_dialog_hides_the_window_under_it_and_saves_by_name() {
    if !require_live("a_gtk4_save_dialog_hides_the_window_under_it_and_saves_by_name") {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    save_through_the_modal_save_dialog(&Editor {
        command: &["gnome-text-editor", "--standalone"],
        window: "gnome-text-editor",
        new_document: None,
        main_controls: &["button \"Open\"", "button \"Menu\""],
        name_field: "Name",
        save_button: "Save",
        start_within: Duration::from_secs(60),
    });
}

#[test]
fn a_kde_save_dialog_hides_the_window_under_it_and_saves_by_name() {
    if !require_live("a_kde_save_dialog_hides_the_window_under_it_and_saves_by_name") {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    save_through_the_modal_save_dialog(&Editor {
        command: &["kate", "-n"],
        window: "kate",
        new_document: Some(("ctrl+n", "Untitled")),
        main_controls: &["menu item \"File\"", "button \"Save As\""],
        name_field: "File name",
        save_button: "Save",
        start_within: Duration::from_secs(180),
    });
}

/// Puts back the root window's `AT_SPI_BUS` property as it was (removed when it was absent).
struct RootBusProperty(Option<String>);

impl RootBusProperty {
    /// The property now, through xprop (`None`: not set).
    fn read() -> Option<String> {
        let out = Command::new("xprop")
            .args(["-root", "AT_SPI_BUS"])
            .output()
            .expect("xprop runs (install it: apt-get install x11-utils)");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        // AT_SPI_BUS(STRING) = "unix:path=…"
        text.split_once(" = ")
            .map(|(_, v)| v.trim().trim_matches('"').to_string())
    }

    fn set(value: &str) {
        let ok = Command::new("xprop")
            .args([
                "-root",
                "-f",
                "AT_SPI_BUS",
                "8s",
                "-set",
                "AT_SPI_BUS",
                value,
            ])
            .status()
            .expect("xprop runs");
        assert!(ok.success(), "xprop could not set AT_SPI_BUS");
    }
}

impl Drop for RootBusProperty {
    fn drop(&mut self) {
        match &self.0 {
            Some(v) => RootBusProperty::set(v),
            None => {
                let _ = Command::new("xprop")
                    .args(["-root", "-remove", "AT_SPI_BUS"])
                    .status();
            }
        }
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
end = time.time() + 10
while time.time() < end:
    names = []
    for app in pyatspi.Registry.getDesktop(0):
        if app is not None and app.name == 'kcalc': frames(app, names)
    if want in names: break
    time.sleep(0.3)
print('|'.join(names))
"#;

/// Issue 23, item 7: a Qt application started by a host `Bash` joins the accessibility bus
/// although the display's `AT_SPI_BUS` property names a dead bus (Qt reads that property
/// before it asks the session bus): ufo points it at the live bus before the launch. A
/// click on "7" shows 7 on KCalc's display, read through pyatspi.
#[test]
fn a_qt_application_joins_the_bus_when_the_display_names_a_dead_one() {
    if !require_live("a_qt_application_joins_the_bus_when_the_display_names_a_dead_one") {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).expect("home");
    let _restore = RootBusProperty(RootBusProperty::read());
    let dead = format!("unix:path={}/no-such-bus", tmp.path().display());
    RootBusProperty::set(&dead);
    // a name on its command line, so that only this KCalc is ended
    let token = format!("kcalc-{}", std::process::id());
    let _app = ProcessGuard::new(token.clone(), None);
    let lines = [
        line(
            "host",
            json!({"Observation": "KCalc is not open.", "Thought": "Start it.",
                   "Status": "CONTINUE",
                   "Bash": format!("kcalc -name {token}")}),
            &[],
        ),
        line(
            "host",
            json!({"Observation": "KCalc is open.", "Thought": "Assign.",
                   "Current Sub-Task": "Enter 7", "ControlText": "KCalc",
                   "Status": "ASSIGN"}),
            &[],
        ),
        line(
            "app",
            app("7", "", "click", json!({}), "CONTINUE"),
            &["button \"7\""],
        ),
        app_line("", "", "", json!({}), "FINISH"),
        line(
            "host",
            json!({"Observation": "Done.", "Thought": "Finish.", "Status": "FINISH"}),
            &[],
        ),
    ];
    // the person approves the launch (a program off the shell allow-list is held)
    let script = tmp.path().join("script.jsonl");
    let out = tmp.path().join("out");
    std::fs::write(&script, lines.join("\n")).expect("script");
    let run = ufo_live(
        &home,
        &live_run_args(
            &script,
            &out,
            &["--confirm", "yes", "Enter 7 on the calculator"],
        ),
        &[],
    );
    let events = std::fs::read_to_string(out.join("events.jsonl")).unwrap_or_default();
    let log = format!("{}\n{events}", String::from_utf8_lossy(&run.stderr));
    let code = run.status.code();
    let display = Command::new("/usr/bin/python3")
        .args(["-c", KCALC_DISPLAY, "7"])
        .output()
        .expect("python3 runs");
    let frames = String::from_utf8_lossy(&display.stdout).trim().to_string();
    assert_eq!(code, Some(0), "{log}");
    assert!(
        frames.split('|').any(|f| f == "7"),
        "KCalc's display does not show 7 (its frames: {frames:?})\n{:#?}",
        results(&log)
    );
}

/// The live accessibility bus's address, asked of `org.a11y.Bus` with dbus-send (not ufo).
fn live_bus_address() -> String {
    let out = Command::new("dbus-send")
        .args([
            "--session",
            "--dest=org.a11y.Bus",
            "--print-reply",
            "/org/a11y/bus",
            "org.a11y.Bus.GetAddress",
        ])
        .output()
        .expect("dbus-send runs (install it: apt-get install dbus)");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.split_once("string \"")
        .and_then(|(_, rest)| rest.split_once('"'))
        .map(|(address, _)| address.to_string())
        .unwrap_or_else(|| panic!("org.a11y.Bus gave no address: {text}"))
}

/// Through pyatspi: the applications on the accessibility bus, as `name:pid` lines.
const BUS_APPS: &str = r#"
import pyatspi
for a in pyatspi.Registry.getDesktop(0):
    if a is not None: print('%s:%d' % (a.name, a.get_process_id()))
"#;

/// The host calls of a run's events (the model's answers the host asked for).
fn host_calls(events: &str) -> u64 {
    events
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["type"] == "step" && e["role"] == "host")
        .map(|e| e["llm"]["calls"].as_u64().unwrap_or(0))
        .sum()
}

/// Issue 46: with no `AT_SPI_BUS` property on the display (only a stale one was corrected
/// before), a Qt 5 application started by a host `Bash` stayed off the bus and its launch
/// was reported without controls. ufo publishes the live bus first: FeatherPad joins it
/// (pyatspi), the property names the live bus (xprop), and its controls are listed. The
/// command (a file argument: off the allow-list) is held and approved, and the `ASSIGN` of
/// the same answer is kept: the host is asked twice in all, not three times.
#[test]
fn a_qt_application_joins_the_bus_when_the_display_has_no_bus_property() {
    if !require_live("a_qt_application_joins_the_bus_when_the_display_has_no_bus_property") {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).expect("home");
    let file = tmp.path().join("notes-bus-property.txt");
    std::fs::write(&file, "hello\n").expect("file");
    let _restore = RootBusProperty(RootBusProperty::read());
    let removed = Command::new("xprop")
        .args(["-root", "-remove", "AT_SPI_BUS"])
        .status()
        .expect("xprop runs");
    assert!(removed.success() && RootBusProperty::read().is_none());
    let _app = ProcessGuard::new(file.display().to_string(), None);
    let lines = [
        line(
            "host",
            json!({"Observation": "FeatherPad is not open.", "Thought": "Open the notes.",
                   "Current Sub-Task": "Look at the notes", "ControlText": "FeatherPad",
                   "Status": "ASSIGN", "Bash": format!("featherpad {}", file.display())}),
            &[],
        ),
        line(
            "app",
            app("", "", "", json!({}), "FINISH"),
            &["button \"Open\"", "hello"],
        ),
        line(
            "host",
            json!({"Observation": "Done.", "Thought": "Finish.", "Status": "FINISH"}),
            &[],
        ),
    ];
    let (code, log) = run_script_args(
        &home,
        tmp.path(),
        &lines,
        &["--confirm", "yes", "Open my notes in FeatherPad"],
        &[],
    );
    assert_eq!(code, Some(0), "{log}");
    assert_eq!(host_calls(&log), 2, "the host was asked again\n{log}");
    let live = live_bus_address();
    let published = RootBusProperty::read().unwrap_or_default();
    assert_eq!(
        published.split(',').next(),
        live.split(',').next(),
        "the display's AT_SPI_BUS property does not name the live bus"
    );
    let apps = Command::new("/usr/bin/python3")
        .args(["-c", BUS_APPS])
        .output()
        .expect("python3 runs");
    let apps = String::from_utf8_lossy(&apps.stdout).into_owned();
    assert!(
        apps.lines().any(|l| l.starts_with("FeatherPad:")),
        "FeatherPad is not on the accessibility bus: {apps:?}\n{log}"
    );
}

/// Issue 46: a Qt menu entry pressed by ufo left its menu open, and the next keys went into
/// the menu (FeatherPad: Edit ▸ Select All, then typing replaced nothing). An entry of the
/// open popup is clicked as a person clicks it; pressed through its AT-SPI action instead
/// (`UFO_XTEST_CLICKS=0`), the menu left open is closed with Escape. Either way the typed
/// text replaces the file's content, read from the disk.
#[test]
fn a_qt_menu_entry_pressed_leaves_no_menu_open() {
    if !require_live("a_qt_menu_entry_pressed_leaves_no_menu_open") {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    for xtest in ["1", "0"] {
        let tmp = tempfile::tempdir().expect("tempdir");
        let home = tmp.path().join("home");
        std::fs::create_dir_all(&home).expect("home");
        let file = tmp.path().join(format!("notes-menu-{xtest}.txt"));
        std::fs::write(&file, "hello\n").expect("file");
        let _app = ProcessGuard::new(file.display().to_string(), None);
        let lines = [
            line(
                "host",
                json!({"Observation": "FeatherPad is not open.", "Thought": "Open the notes.",
                       "Current Sub-Task": "Replace the notes", "ControlText": "FeatherPad",
                       "Status": "ASSIGN", "Bash": format!("featherpad {}", file.display())}),
                &[],
            ),
            app_line("Edit", "", "click", json!({}), "CONTINUE"),
            line(
                "app",
                app("Select All", "", "click", json!({}), "CONTINUE"),
                &["menu item \"Select All\""],
            ),
            // the editor: an unnamed text whose value is the file's
            line(
                "app",
                app(
                    "text \"\" value: \"hello\\n\"",
                    "",
                    "type_keys",
                    json!({"keys": "replaced{ctrl+s}"}),
                    "CONTINUE",
                ),
                &[],
            ),
            app_line("", "", "", json!({}), "FINISH"),
            line(
                "host",
                json!({"Observation": "Done.", "Thought": "Finish.", "Status": "FINISH"}),
                &[],
            ),
        ];
        let (code, log) = run_script_args(
            &home,
            tmp.path(),
            &lines,
            &[
                "--confirm",
                "yes",
                "Replace my notes with the word replaced",
            ],
            &[("UFO_XTEST_CLICKS", xtest)],
        );
        assert_eq!(code, Some(0), "UFO_XTEST_CLICKS={xtest}\n{log}");
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut saved = String::new();
        while Instant::now() < deadline {
            saved = std::fs::read_to_string(&file).unwrap_or_default();
            if saved.trim() == "replaced" {
                break;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        assert_eq!(
            saved.trim(),
            "replaced",
            "UFO_XTEST_CLICKS={xtest}: the keys did not reach the editor\n{:#?}",
            results(&log)
        );
    }
}

/// The first pixel (red, green, blue) of the PNG at `path`, decoded off ufo.
fn first_pixel(path: &Path) -> Option<[u8; 3]> {
    let file = std::fs::File::open(path).ok()?;
    let mut decoder = png::Decoder::new(std::io::BufReader::new(file));
    decoder.set_transformations(png::Transformations::EXPAND);
    let mut reader = decoder.read_info().ok()?;
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).ok()?;
    (info.color_type.samples() >= 3).then(|| [buf[0], buf[1], buf[2]])
}

/// Issue 46, on KDE's KolourPaint: a menu entry pressed (Image ▸ Mirror) leaves no menu
/// open, clicked as a person clicks it or pressed through AT-SPI (`UFO_XTEST_CLICKS=0`, the
/// menu then closed with Escape): the Ctrl+S typed next saves the mirrored picture, whose
/// first pixel (red before) is blue in the file on the disk.
#[test]
fn a_kde_menu_entry_pressed_leaves_no_menu_open() {
    if !require_live("a_kde_menu_entry_pressed_leaves_no_menu_open") {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    for xtest in ["1", "0"] {
        let tmp = tempfile::tempdir().expect("tempdir");
        let home = tmp.path().join("home");
        std::fs::create_dir_all(&home).expect("home");
        let file = tmp.path().join(format!("mirror-me-{xtest}.png"));
        write_png(&file, 40, 20, |x, _| {
            if x < 20 {
                [255, 0, 0]
            } else {
                [0, 0, 255]
            }
        });
        assert_eq!(first_pixel(&file), Some([255, 0, 0]));
        let _app = ProcessGuard::new(file.display().to_string(), None);
        let lines = [
            line(
                "host",
                json!({"Observation": "KolourPaint is not open.", "Thought": "Open the picture.",
                       "Current Sub-Task": "Mirror the picture and save it",
                       "ControlText": "KolourPaint", "Status": "ASSIGN",
                       "Bash": format!("kolourpaint {}", file.display())}),
                &[],
            ),
            app_line("Image", "", "click", json!({}), "CONTINUE"),
            line(
                "app",
                app("Mirror (horizontally)", "", "click", json!({}), "CONTINUE"),
                &["menu item \"Mirror (horizontally)\""],
            ),
            // the keys go to the zoom box's entry, and through it to the window's shortcut
            app_line(
                "Zoom",
                "",
                "type_keys",
                json!({"keys": "{ctrl+s}"}),
                "CONTINUE",
            ),
            app_line("", "", "", json!({}), "FINISH"),
            line(
                "host",
                json!({"Observation": "Done.", "Thought": "Finish.", "Status": "FINISH"}),
                &[],
            ),
        ];
        let (code, log) = run_script_args(
            &home,
            tmp.path(),
            &lines,
            &["--confirm", "yes", "Mirror my picture and save it"],
            &[("UFO_XTEST_CLICKS", xtest)],
        );
        assert_eq!(code, Some(0), "UFO_XTEST_CLICKS={xtest}\n{log}");
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut pixel = None;
        while Instant::now() < deadline {
            pixel = first_pixel(&file);
            if pixel == Some([0, 0, 255]) {
                break;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        assert_eq!(
            pixel,
            Some([0, 0, 255]),
            "UFO_XTEST_CLICKS={xtest}: the mirrored picture was not saved\n{:#?}",
            results(&log)
        );
    }
}

/// Issue 46: Tk's IDLE sets no `_NET_WM_PID` (nor `WM_CLIENT_MACHINE`/`WM_COMMAND`), and its
/// launch was reported as never appearing. The window's process comes from the X server
/// (X-Resource), so the launch returns with it: the host hears "launched idle". Checked off
/// ufo: the window is on the display (xdotool) and has no `_NET_WM_PID` (xprop).
#[test]
fn a_tk_window_without_a_pid_property_is_reported_launched() {
    if !require_live("a_tk_window_without_a_pid_property_is_reported_launched") {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).expect("home");
    let file = tmp.path().join("idle_launch_check.py");
    std::fs::write(&file, "print('hello')\n").expect("file");
    let _app = ProcessGuard::new(file.display().to_string(), None);
    let lines = [
        line(
            "host",
            json!({"Observation": "IDLE is not open.", "Thought": "Open the script in IDLE.",
                   "Status": "CONTINUE", "Bash": format!("/usr/bin/idle {}", file.display())}),
            &[],
        ),
        line(
            "host",
            json!({"Observation": "IDLE is open.", "Thought": "Finish.", "Status": "FINISH"}),
            &["launched idle"],
        ),
    ];
    let started = Instant::now();
    let (code, log) = run_script_args(
        &home,
        tmp.path(),
        &lines,
        &["--confirm", "yes", "Open my script in IDLE"],
        &[],
    );
    assert_eq!(code, Some(0), "{log}");
    // the window came well within the launch timeout (it waited for it, then 5 s for the bus)
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "the launch took {:?}",
        started.elapsed()
    );
    let found = Command::new("xdotool")
        .args(["search", "--name", "idle_launch_check.py"])
        .output()
        .expect("xdotool runs (install it: apt-get install xdotool)");
    let ids = String::from_utf8_lossy(&found.stdout).into_owned();
    let id = ids
        .lines()
        .next()
        .unwrap_or_else(|| panic!("no IDLE window\n{log}"));
    let pid = Command::new("xprop")
        .args(["-id", id, "_NET_WM_PID"])
        .output()
        .expect("xprop runs");
    assert!(
        String::from_utf8_lossy(&pid.stdout).contains("not found"),
        "IDLE's window has a _NET_WM_PID now: this test no longer covers a window without one"
    );
}
