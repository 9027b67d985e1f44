//! Names of fields and rows (issue 24): a field is named by the label that points at it,
//! never by its value or placeholder; a table row is one control; LibreOffice-like
//! buttons show no empty number. Checked off ufo where it can be: the file renamed through
//! the named entry is looked for on the disk.
//!
//! It needs a desktop session (`scripts/desktop-session.sh up`, then `source` its env file)
//! and `thunar`, `file-roller`, `gnumeric` and `geany` (scripts/test-deps.sh install_apps); skipped
//! with a printed reason without `DISPLAY` and `UFO_LIVE_TESTS=1`, failing when one is
//! missing.
#![allow(clippy::unwrap_used)]

mod support;

use std::path::Path;
use std::time::{Duration, Instant};

use ufo_core::{Desktop, UiAction, WindowInfo, WindowObservation};
use ufo_desktop::testing::{require_live, ProcessGuard};
use ufo_linux::{LinuxConfig, LinuxDesktop};

/// One test at a time: keys go to the window that has the focus, an open list closes when
/// another window takes it, and on a loaded machine two applications starting at once made a
/// test's window wait run out (File Roller's Compress dialog, a GTK 4 editor's Save).
static FOCUS: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Start `program` with `args` in `dir`, as a person would.
fn start(program: &str, args: &[&str], dir: &Path, marker: &str) -> (ProcessGuard, u32) {
    let child = std::process::Command::new(program)
        .args(args)
        .current_dir(dir)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap_or_else(|e| {
            panic!("{program} starts (install it: scripts/test-deps.sh install_apps): {e}")
        });
    let pid = child.id();
    (ProcessGuard::new(marker.to_string(), Some(child)), pid)
}

/// Remove gnome-text-editor's saved session (kept across the tests of a session in its HOME):
/// a new editor reopens the earlier tests' documents as tabs, and which tab is in front (the
/// window's title, what the tests wait for) is then a race.
fn forget_editor_session() {
    if let Some(home) = std::env::var_os("HOME") {
        let saved = Path::new(&home).join(".local/share/org.gnome.TextEditor/session.gvariant");
        let _ = std::fs::remove_file(saved);
    }
}

/// The window whose title `fits`, once it is up (60 s at most).
async fn window(d: &LinuxDesktop, what: &str, fits: impl Fn(&WindowInfo) -> bool) -> WindowInfo {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let found = d
            .windows()
            .await
            .unwrap_or_default()
            .into_iter()
            .find(|w| fits(w));
        if let Some(w) = found {
            return w;
        }
        assert!(Instant::now() < deadline, "no {what} window within 60 s");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The ids of the windows now (a window of the same title left by another run of a
/// single-instance application is not the one a test opens).
async fn window_ids(d: &LinuxDesktop) -> Vec<ufo_core::WindowId> {
    d.windows()
        .await
        .unwrap_or_default()
        .into_iter()
        .map(|w| w.id)
        .collect()
}

/// The id of the control with role `role` named `name`.
fn control(obs: &WindowObservation, role: &str, name: &str) -> Option<String> {
    obs.controls
        .iter()
        .find(|c| c.role == role && c.name == name)
        .map(|c| c.id.clone())
}

fn temp_dir(tag: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("ufo-names-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Thunar's rename entry has no name and no `LABELLED_BY`; its label's `LABEL_FOR` points
/// at it. It is listed as "Enter the new name" (it was `text ""`), and the file renamed
/// through it is renamed on the disk.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thunars_rename_entry_is_named_by_its_label() {
    if !require_live("thunars_rename_entry_is_named_by_its_label") {
        return;
    }
    let _one = FOCUS.lock().await;
    let dir = temp_dir("thunar");
    std::fs::write(dir.join("alpha.txt"), "a").unwrap();
    let dir_s = dir.display().to_string();
    let (_guard, _) = start("thunar", &[&dir_s], &dir, &dir_s);
    let d = LinuxDesktop::connect(LinuxConfig::default()).await.unwrap();
    let leaf = dir.file_name().unwrap().to_string_lossy().to_string();
    let main = window(&d, "Thunar", |t| {
        t.title.starts_with(&leaf) && t.title.ends_with("Thunar")
    })
    .await;
    let obs = support::observe_until(
        &d,
        &main.id,
        "Thunar's Home button",
        Duration::from_secs(30),
        |o| control(o, "button", "Home").is_some(),
    )
    .await;
    // (the keys go to the window's accelerators: select every file, rename)
    let home = control(&obs, "button", "Home").unwrap();
    let keys = UiAction::TypeKeys {
        keys: "{ctrl+a}{f2}".into(),
    };
    // (a Rename dialog left by another run of the same process is not this one)
    let before: Vec<ufo_core::WindowId> = d
        .windows()
        .await
        .unwrap_or_default()
        .into_iter()
        .map(|w| w.id)
        .collect();
    d.act(&main.id, Some(&home), &keys).await.unwrap();
    let dialog = window(&d, "Rename", |w| {
        w.title.starts_with("Rename") && !before.contains(&w.id)
    })
    .await;
    let obs = support::observe_until(
        &d,
        &dialog.id,
        "the rename entry named by its label",
        Duration::from_secs(30),
        |o| control(o, "text", "Enter the new name").is_some(),
    )
    .await;
    assert!(
        !obs.controls
            .iter()
            .any(|c| c.role == "text" && c.name.is_empty()),
        "no unnamed entry: {}",
        support::listing(&obs)
    );
    let entry = control(&obs, "text", "Enter the new name").unwrap();
    let set = UiAction::SetText {
        text: "beta.txt".into(),
    };
    d.act(&dialog.id, Some(&entry), &set).await.unwrap();
    let enter = UiAction::TypeKeys {
        keys: "{enter}".into(),
    };
    d.act(&dialog.id, Some(&entry), &enter).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !dir.join("beta.txt").exists() {
        assert!(
            Instant::now() < deadline,
            "alpha.txt was not renamed to beta.txt on the disk within 20 s"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(!dir.join("alpha.txt").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

/// File Roller's Compress dialog: its "Filename:" entry and its Location combo box are
/// named by their labels (they were `text ""` and `combo box "<folder>"`); the folder is
/// the combo box's value.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_rollers_fields_are_named_by_their_labels() {
    if !require_live("file_rollers_fields_are_named_by_their_labels") {
        return;
    }
    let _one = FOCUS.lock().await;
    let dir = temp_dir("roller");
    std::fs::write(dir.join("alpha.txt"), "a").unwrap();
    let file = dir.join("alpha.txt").display().to_string();
    let d = LinuxDesktop::connect(LinuxConfig::default()).await.unwrap();
    let before = window_ids(&d).await;
    let (_guard, _) = start("file-roller", &["--add", &file], &dir, &file);
    let w = window(&d, "Compress", |w| {
        w.title == "Compress" && !before.contains(&w.id)
    })
    .await;
    let obs = support::observe_until(
        &d,
        &w.id,
        "Filename and Location named by their labels",
        Duration::from_secs(30),
        |o| {
            control(o, "text", "Filename").is_some()
                && control(o, "combo box", "Location").is_some()
        },
    )
    .await;
    let leaf = dir.file_name().unwrap().to_string_lossy().to_string();
    let location = obs
        .controls
        .iter()
        .find(|c| c.role == "combo box" && c.name == "Location")
        .unwrap();
    assert_eq!(location.value.as_deref(), Some(leaf.as_str()));
    assert!(
        !obs.controls.iter().any(|c| c.name == leaf),
        "the folder is a value, never a name: {}",
        support::listing(&obs)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Gnumeric's Save dialog (a GTK3 file chooser): each file row is one control named by
/// the file's name (GTK3 gives seven cells per row, most unnamed or named "\u{1}").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_choosers_rows_are_one_control_each() {
    if !require_live("a_file_choosers_rows_are_one_control_each") {
        return;
    }
    let _one = FOCUS.lock().await;
    let dir = temp_dir("chooser");
    // (folders: the dialog's file type filter shows them whatever their type)
    let files = ["apple", "banana", "cherry", "damson"];
    for f in files {
        std::fs::create_dir(dir.join(f)).unwrap();
    }
    let dir_s = dir.display().to_string();
    let marker = "--geometry=900x700+0+0".to_string();
    let (_guard, pid) = start("gnumeric", &[&marker], &dir, &marker);
    let d = LinuxDesktop::connect(LinuxConfig::default()).await.unwrap();
    let main = window(&d, "Gnumeric", |w| {
        w.title.ends_with("- Gnumeric") && w.pid == Some(pid)
    })
    .await;
    let obs = support::observe_until(
        &d,
        &main.id,
        "Gnumeric's window",
        Duration::from_secs(40),
        |o| o.controls.iter().any(|c| c.role == "text"),
    )
    .await;
    let field = obs
        .controls
        .iter()
        .find(|c| c.role == "text")
        .unwrap()
        .id
        .clone();
    let save = UiAction::TypeKeys {
        keys: "{ctrl+s}".into(),
    };
    d.act(&main.id, Some(&field), &save).await.unwrap();
    let obs = support::observe_until(
        &d,
        &main.id,
        "the Save dialog's file rows",
        Duration::from_secs(40),
        |o| files.iter().all(|f| control(o, "table cell", f).is_some()),
    )
    .await;
    let cells: Vec<_> = obs
        .controls
        .iter()
        .filter(|c| c.role == "table cell")
        .collect();
    assert_eq!(
        cells.len(),
        files.len(),
        "one control per row ({dir_s}): {}",
        support::listing(&obs)
    );
    assert!(cells
        .iter()
        .all(|c| !c.name.is_empty() && !c.name.contains('\u{1}')));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Gnumeric's Name Box and formula bar are listed by those names (they were `text ""`): a
/// cell is chosen through the Name Box and a formula typed in the formula bar, the workbook
/// saved through its Save dialog, and the saved file read back with `ssconvert` (not ufo).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gnumerics_name_box_and_formula_bar_are_named() {
    if !require_live("gnumerics_name_box_and_formula_bar_are_named") {
        return;
    }
    let _one = FOCUS.lock().await;
    let dir = temp_dir("gnumeric");
    let marker = "--geometry=900x700+10+10".to_string();
    let (_guard, pid) = start("gnumeric", &[&marker], &dir, &marker);
    let d = LinuxDesktop::connect(LinuxConfig::default()).await.unwrap();
    let main = window(&d, "Gnumeric", |w| {
        w.title.ends_with("- Gnumeric") && w.pid == Some(pid)
    })
    .await;
    let obs = support::observe_until(
        &d,
        &main.id,
        "the Name Box and the formula bar",
        Duration::from_secs(40),
        |o| control(o, "text", "Name Box").is_some() && control(o, "text", "Formula bar").is_some(),
    )
    .await;
    let enter = UiAction::TypeKeys {
        keys: "{enter}".into(),
    };
    let name_box = control(&obs, "text", "Name Box").unwrap();
    let set = |t: &str| UiAction::SetText { text: t.into() };
    d.act(&main.id, Some(&name_box), &set("C3")).await.unwrap();
    d.act(&main.id, Some(&name_box), &enter).await.unwrap();
    let obs = support::observe_until(
        &d,
        &main.id,
        "the Name Box at C3",
        Duration::from_secs(20),
        |o| {
            o.controls
                .iter()
                .any(|c| c.name == "Name Box" && c.value.as_deref() == Some("C3"))
        },
    )
    .await;
    let formula = control(&obs, "text", "Formula bar").unwrap();
    d.act(&main.id, Some(&formula), &set("=ROW()*10+COLUMN()"))
        .await
        .unwrap();
    d.act(&main.id, Some(&formula), &enter).await.unwrap();
    let save = UiAction::TypeKeys {
        keys: "{ctrl+s}".into(),
    };
    d.act(&main.id, Some(&formula), &save).await.unwrap();
    let obs = support::observe_until(
        &d,
        &main.id,
        "the Save dialog",
        Duration::from_secs(30),
        |o| control(o, "text", "Name").is_some() && control(o, "button", "Save").is_some(),
    )
    .await;
    let out = dir.join("answer.gnumeric");
    let name = control(&obs, "text", "Name").unwrap();
    d.act(&main.id, Some(&name), &set(&out.display().to_string()))
        .await
        .unwrap();
    let save_button = control(&obs, "button", "Save").unwrap();
    let click = UiAction::Click {
        button: ufo_core::Button::Left,
        double: false,
    };
    d.act(&main.id, Some(&save_button), &click).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !out.exists() {
        assert!(
            Instant::now() < deadline,
            "{} was not saved within 30 s",
            out.display()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // read back off ufo: the formula of row 3, column 3 gives 33 (the CSV holds the used
    // range only: the cell's own number says where it is)
    let csv = dir.join("answer.csv");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        // (the file it writes is what counts: a warning may set its exit status)
        let _ = std::process::Command::new("ssconvert")
            .arg(&out)
            .arg(&csv)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .expect("ssconvert runs (it comes with gnumeric)");
        let text = std::fs::read_to_string(&csv).unwrap_or_default();
        if text.trim() == "33" {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the saved workbook's C3 is not 33: {text:?}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Through pyatspi: whether one of KCalc's frames is named `want` (its display is a frame
/// named by the number it shows), within 10 s.
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

/// KCalc's display (a `frame` named by the number it shows) is listed, named by its
/// description, its number as its value (it was left out: the result could not be read);
/// 6 × 7 = shows 42 there, and pyatspi sees 42 too. Only one control is focused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kcalcs_display_is_read_and_one_control_is_focused() {
    if !require_live("kcalcs_display_is_read_and_one_control_is_focused") {
        return;
    }
    let _one = FOCUS.lock().await;
    let dir = temp_dir("kcalc");
    let token = format!("kcalc-names-{}", std::process::id());
    let (_guard, pid) = start("kcalc", &["-name", &token], &dir, &token);
    let d = LinuxDesktop::connect(LinuxConfig::default()).await.unwrap();
    let w = window(&d, "KCalc", |w| w.pid == Some(pid)).await;
    let obs = support::observe_until(
        &d,
        &w.id,
        "KCalc's display and keys",
        Duration::from_secs(40),
        |o| control(o, "frame", "Result Display").is_some() && control(o, "button", "=").is_some(),
    )
    .await;
    let focused = obs.controls.iter().filter(|c| c.states.focused).count();
    assert!(
        focused <= 1,
        "{focused} controls focused: {}",
        support::listing(&obs)
    );
    let click = UiAction::Click {
        button: ufo_core::Button::Left,
        double: false,
    };
    for key in ["6", "×", "7", "="] {
        let id = control(&obs, "button", key).unwrap();
        d.act(&w.id, Some(&id), &click).await.unwrap();
    }
    let obs = support::observe_until(
        &d,
        &w.id,
        "42 on the display",
        Duration::from_secs(20),
        |o| {
            o.controls
                .iter()
                .any(|c| c.name == "Result Display" && c.value.as_deref() == Some("42"))
        },
    )
    .await;
    let focused = obs.controls.iter().filter(|c| c.states.focused).count();
    assert!(
        focused <= 1,
        "{focused} controls focused: {}",
        support::listing(&obs)
    );
    let seen = std::process::Command::new("/usr/bin/python3")
        .args(["-c", KCALC_DISPLAY, "42"])
        .output()
        .expect("python3 runs");
    let frames = String::from_utf8_lossy(&seen.stdout).trim().to_string();
    assert!(
        frames.split('|').any(|f| f == "42"),
        "pyatspi does not see 42 on KCalc's display (its frames: {frames:?})"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// File Roller's Add Files dialog: its three pattern fields are named by the labels that
/// point at them (they were all named by their hint, "example: *.o; *.bak").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_rollers_add_files_fields_are_named_by_their_labels() {
    if !require_live("file_rollers_add_files_fields_are_named_by_their_labels") {
        return;
    }
    let _one = FOCUS.lock().await;
    let dir = temp_dir("add");
    std::fs::write(dir.join("alpha.txt"), "a").unwrap();
    let tar = std::process::Command::new("tar")
        .args(["czf", "pack.tar.gz", "alpha.txt"])
        .current_dir(&dir)
        .status()
        .expect("tar runs");
    assert!(tar.success());
    let archive = dir.join("pack.tar.gz").display().to_string();
    let d = LinuxDesktop::connect(LinuxConfig::default()).await.unwrap();
    let before = window_ids(&d).await;
    let (_guard, _) = start("file-roller", &[&archive], &dir, &archive);
    let w = window(&d, "pack.tar.gz", |w| {
        w.title.starts_with("pack.tar.gz") && !before.contains(&w.id)
    })
    .await;
    let obs = support::observe_until(&d, &w.id, "the Add button", Duration::from_secs(30), |o| {
        control(o, "button", "Add").is_some()
    })
    .await;
    let add = control(&obs, "button", "Add").unwrap();
    let click = UiAction::Click {
        button: ufo_core::Button::Left,
        double: false,
    };
    let before = window_ids(&d).await;
    d.act(&w.id, Some(&add), &click).await.unwrap();
    let dialog = window(&d, "Add Files", |w| {
        w.title == "Add Files" && !before.contains(&w.id)
    })
    .await;
    let fields = ["Include files", "Exclude files", "Exclude folders"];
    let obs = support::observe_until(
        &d,
        &dialog.id,
        "the pattern fields named by their labels",
        Duration::from_secs(30),
        |o| fields.iter().all(|f| control(o, "text", f).is_some()),
    )
    .await;
    assert!(
        !obs.controls.iter().any(|c| c.name.starts_with("example:")),
        "a hint is never a name: {}",
        support::listing(&obs)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Inkscape's palette: its unnamed colour swatches (70 `list item ""` before) are one
/// control named by their count.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inkscapes_unnamed_swatches_are_one_control() {
    if !require_live("inkscapes_unnamed_swatches_are_one_control") {
        return;
    }
    let _one = FOCUS.lock().await;
    let dir = temp_dir("inkscape");
    let file = dir.join("drawing.svg").display().to_string();
    std::fs::write(
        &file,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="100" height="100"></svg>"#,
    )
    .unwrap();
    let d = LinuxDesktop::connect(LinuxConfig::default()).await.unwrap();
    let (_guard, _) = start("inkscape", &[&file], &dir, &file);
    let w = window(&d, "Inkscape", |w| w.title.starts_with("drawing.svg")).await;
    let obs = support::observe_until(
        &d,
        &w.id,
        "the palette's swatches as one control",
        Duration::from_secs(60),
        |o| {
            o.controls
                .iter()
                .any(|c| c.name.ends_with(" unnamed list items"))
        },
    )
    .await;
    let unnamed = obs
        .controls
        .iter()
        .filter(|c| c.role == "list item" && c.name.is_empty())
        .count();
    assert!(
        unnamed < MIN_GROUP,
        "{unnamed} unnamed list items left: {}",
        support::listing(&obs)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Fewest unnamed alike items the observation groups into one control.
const MIN_GROUP: usize = 5;

/// A page whose "Save settings" button and "Theme" box stand half below the window's
/// bottom edge (issue 24 item 6): `fetch('/pressed')` on a press tells the server.
fn cut_page(path: &str) -> ufo_desktop::testing::http::Page {
    let html = match path {
        "/" => {
            "<!doctype html><html><head><title>Cut settings</title><style>\
             body{margin:0;height:100vh;overflow:hidden}\
             .cut{position:fixed;bottom:-30px;height:60px;font-size:20px}\
             </style></head><body><p>Settings</p>\
             <select class=\"cut\" style=\"left:20px;width:200px\" aria-label=\"Theme\">\
             <option>Light</option><option>Dark</option></select>\
             <button class=\"cut\" style=\"left:300px;width:220px\" \
             onclick=\"fetch('/pressed')\">Save settings</button></body></html>"
        }
        _ => "",
    };
    ufo_desktop::testing::http::Page::ok(html)
}

/// A control SHOWING but cut by the window's bottom edge is listed, with its visible
/// rectangle (inside the window, the visible part), and a click on it by name reaches the
/// page (the server receives the button's request; not ufo).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn controls_cut_by_the_windows_edge_are_listed_clipped_and_clickable() {
    if !require_live("controls_cut_by_the_windows_edge_are_listed_clipped_and_clickable") {
        return;
    }
    let _one = FOCUS.lock().await;
    let server = ufo_desktop::testing::http::PageServer::start(cut_page);
    let profile = tempfile::tempdir().unwrap();
    let child = ufo_desktop::testing::chromium_command(profile.path())
        .arg("--window-size=900,500")
        .arg(server.url("/"))
        .spawn()
        .expect("chromium starts (install it: scripts/test-deps.sh install_apps)");
    let _guard = ProcessGuard::new(
        ufo_desktop::testing::chromium_profile_arg(profile.path()),
        Some(child),
    );
    let d = LinuxDesktop::connect(LinuxConfig::default()).await.unwrap();
    let win = window(&d, "the page's", |w| w.title.starts_with("Cut settings")).await;
    let obs = support::observe_until(
        &d,
        &win.id,
        "the cut button and box",
        Duration::from_secs(40),
        |o| {
            control(o, "button", "Save settings").is_some()
                && control(o, "combo box", "Theme").is_some()
        },
    )
    .await;
    let frame = obs
        .window
        .rect
        .or(win.rect)
        .expect("the window's rectangle");
    let bottom = frame.y + frame.h as i32;
    for (role, name) in [("button", "Save settings"), ("combo box", "Theme")] {
        let c = obs
            .controls
            .iter()
            .find(|c| c.role == role && c.name == name)
            .unwrap();
        let r = c.rect;
        assert!(
            r.y >= frame.y && r.y + r.h as i32 <= bottom && r.h >= 10,
            "{role} {name:?} at {r:?} is not the visible part inside the window {frame:?}"
        );
        // (60 px tall, 30 px of it below the edge: the visible part is about half)
        assert!(
            r.h <= 45,
            "{role} {name:?} at {r:?} keeps its hidden part (window {frame:?})"
        );
    }
    let save = control(&obs, "button", "Save settings").unwrap();
    let click = UiAction::Click {
        button: ufo_core::Button::Left,
        double: false,
    };
    d.act(&win.id, Some(&save), &click).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while server.bodies("/pressed").is_empty() {
        assert!(
            Instant::now() < deadline,
            "the click on the cut button did not reach the page within 20 s"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// GTK4's drop-downs (gnome-text-editor's Save As, GTK's own file chooser): each is one
/// combo box named by its label with its chosen option as its value; the "(None)" label of
/// its hidden empty page names nothing (it named the inner button before, and the combo's
/// value was "GtkDropDown"). The option it shows (Unix/Linux (LF)) is the one the saved file has.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gtk4_dropdowns_are_named_by_their_label_with_their_option_as_value() {
    if !require_live("gtk4_dropdowns_are_named_by_their_label_with_their_option_as_value") {
        return;
    }
    let _one = FOCUS.lock().await;
    let dir = temp_dir("dropdown");
    let file = dir.join("crlf.txt");
    let draft = dir.join("draft.txt").display().to_string();
    // (GTK's own file chooser, not the desktop portal's GTK3 one)
    forget_editor_session();
    let child = std::process::Command::new("gnome-text-editor")
        .args(["--standalone", &draft])
        .env("GDK_DEBUG", "no-portals")
        .env("GTK_USE_PORTAL", "0")
        .current_dir(&dir)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("gnome-text-editor starts (install it: scripts/test-deps.sh install_apps)");
    let _guard = ProcessGuard::new(draft.clone(), Some(child));
    let d = LinuxDesktop::connect(LinuxConfig::default()).await.unwrap();
    let main = window(&d, "gnome-text-editor", |w| {
        w.title.starts_with("draft.txt") && w.process.starts_with("gnome-text-edit")
    })
    .await;
    let before = window_ids(&d).await;
    let keys = |k: &str| UiAction::TypeKeys { keys: k.into() };
    let obs = support::observe_until(
        &d,
        &main.id,
        "the document's text",
        Duration::from_secs(30),
        |o| o.controls.iter().any(|c| c.role == "text"),
    )
    .await;
    let page = obs.controls.iter().find(|c| c.role == "text").unwrap();
    d.act(&main.id, Some(&page.id), &keys("one{enter}two"))
        .await
        .unwrap();
    // (a loaded machine may deliver the shortcut before the editor handles it: ask again,
    // a bounded number of times, while no dialog has come)
    let mut dialog = None;
    for _ in 0..4 {
        d.act(&main.id, Some(&page.id), &keys("{ctrl+shift+s}"))
            .await
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(15);
        while dialog.is_none() && Instant::now() < deadline {
            dialog = d
                .windows()
                .await
                .unwrap_or_default()
                .into_iter()
                .find(|w| w.title == "Save As" && !before.contains(&w.id));
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        if dialog.is_some() {
            break;
        }
    }
    let dialog = dialog.expect("no Save As window within 60 s of four Ctrl+Shift+S");
    let obs = support::observe_until(
        &d,
        &dialog.id,
        "the Line Ending drop-down with its option",
        Duration::from_secs(30),
        |o| {
            o.controls.iter().any(|c| {
                c.role == "combo box"
                    && c.name == "Line Ending"
                    && c.value.as_deref() == Some("Unix/Linux (LF)")
            })
        },
    )
    .await;
    assert!(
        !obs.controls
            .iter()
            .any(|c| c.name == "(None)" || c.value.as_deref().is_some_and(|v| v.starts_with("Gtk"))),
        "a hidden label or a type name shows: {}",
        support::listing(&obs)
    );
    let name = control(&obs, "text", "Name").unwrap();
    let path = file.display().to_string();
    d.act(&dialog.id, Some(&name), &UiAction::SetText { text: path })
        .await
        .unwrap();
    // (on a loaded machine the chooser may still be taking the name in when Enter comes, and
    // drops it: press it again every 10 s, at most three times, while the dialog stays open)
    let started = Instant::now();
    let (mut rounds, mut pressed) = (0, 0);
    loop {
        let text = std::fs::read(&file).unwrap_or_default();
        if text.contains(&b'\n') && !text.contains(&b'\r') {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the file was not saved with LF line endings within 30 s of {pressed} Enter(s): {:?}",
            String::from_utf8_lossy(&text)
        );
        let due = started + Duration::from_secs(10) * rounds;
        if rounds < 3 && Instant::now() >= due {
            let open = d.windows().await.unwrap_or_default();
            if rounds == 0 || open.iter().any(|w| w.id == dialog.id) {
                d.act(&dialog.id, Some(&name), &keys("{enter}"))
                    .await
                    .unwrap();
                pressed += 1;
            }
            rounds += 1;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// LibreOffice Calc's Name Box arrow (an unnamed toggle button beside the Name Box, with
/// no description) is named "Name Box list" (it was `toggle button ""`), and a click on it
/// by that name opens the list (the toggle reads checked).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calcs_name_box_arrow_is_named_after_the_name_box() {
    if !require_live("calcs_name_box_arrow_is_named_after_the_name_box") {
        return;
    }
    let _one = FOCUS.lock().await;
    let dir = temp_dir("calc-arrow");
    let profile = format!("-env:UserInstallation=file://{}/profile", dir.display());
    let d = LinuxDesktop::connect(LinuxConfig::default()).await.unwrap();
    let before = window_ids(&d).await;
    let (_guard, _) = start(
        "soffice",
        &["--calc", "--norestore", "--nologo", &profile],
        &dir,
        &profile,
    );
    let calc = window(&d, "LibreOffice Calc", |w| {
        w.title.ends_with("LibreOffice Calc") && !before.contains(&w.id)
    })
    .await;
    let obs = support::observe_until(
        &d,
        &calc.id,
        "the Name Box and its arrow",
        Duration::from_secs(60),
        |o| {
            control(o, "text", "Name Box").is_some()
                && control(o, "toggle button", "Name Box list").is_some()
        },
    )
    .await;
    assert!(
        !obs.controls
            .iter()
            .any(|c| c.role == "toggle button" && c.name.is_empty()),
        "an unnamed toggle button is left: {}",
        support::listing(&obs)
    );
    let arrow = control(&obs, "toggle button", "Name Box list").unwrap();
    let click = UiAction::Click {
        button: ufo_core::Button::Left,
        double: false,
    };
    d.act(&calc.id, Some(&arrow), &click).await.unwrap();
    support::observe_until(
        &d,
        &calc.id,
        "the Name Box list open",
        Duration::from_secs(20),
        |o| {
            o.controls.iter().any(|c| {
                c.name == "Name Box list"
                    && (c.states.checked || c.value.as_deref() == Some("checked"))
            })
        },
    )
    .await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// pyatspi (off ufo): the names of the shown list items, cells and menu items of LibreOffice, once
/// `argv[1]` is among them (10 s at most).
const OFFICE_ITEMS: &str = r#"
import sys, time, pyatspi
want = sys.argv[1]
ROLES = ('list item', 'table cell', 'menu item', 'check menu item', 'radio menu item')
def items(n, out, depth=0):
    if depth > 40 or len(out) > 400: return
    try:
        if n.getRoleName() in ROLES and n.getState().contains(pyatspi.STATE_SHOWING):
            out.append(n.name)
        for i in range(min(n.childCount, 200)):
            c = n.getChildAtIndex(i)
            if c is not None: items(c, out, depth + 1)
    except Exception:
        pass
names = []
end = time.time() + 10
while time.time() < end:
    names = []
    for app in pyatspi.Registry.getDesktop(0):
        if app is not None and 'soffice' in (app.name or '').lower(): items(app, names)
    if want in names: break
    time.sleep(0.3)
print('|'.join(names))
"#;

/// LibreOffice Draw's sidebar list boxes (Format, Orientation, Background, Margin, Master
/// Page) are bare toggle buttons: a label points at their wrapper, or (Master Page) stands
/// just left of them. They are named by those labels (they were `toggle button ""`), and a
/// click on "Orientation" by name opens its list: pyatspi sees "Landscape" shown.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn draws_sidebar_list_boxes_are_named_by_their_labels() {
    if !require_live("draws_sidebar_list_boxes_are_named_by_their_labels") {
        return;
    }
    let _one = FOCUS.lock().await;
    let dir = temp_dir("draw-sidebar");
    let profile = format!("-env:UserInstallation=file://{}/profile", dir.display());
    let d = LinuxDesktop::connect(LinuxConfig::default()).await.unwrap();
    let before = window_ids(&d).await;
    let (_guard, _) = start(
        "soffice",
        &["--draw", "--norestore", "--nologo", &profile],
        &dir,
        &profile,
    );
    let draw = window(&d, "LibreOffice Draw", |w| {
        w.title.ends_with("LibreOffice Draw") && !before.contains(&w.id)
    })
    .await;
    let boxes = [
        "Format",
        "Orientation",
        "Background",
        "Margin",
        "Master Page",
    ];
    let obs = support::observe_until(
        &d,
        &draw.id,
        "the sidebar's list boxes by their labels",
        Duration::from_secs(60),
        |o| {
            boxes
                .iter()
                .all(|b| control(o, "toggle button", b).is_some())
        },
    )
    .await;
    let orientation = control(&obs, "toggle button", "Orientation").unwrap();
    let click = UiAction::Click {
        button: ufo_core::Button::Left,
        double: false,
    };
    d.act(&draw.id, Some(&orientation), &click).await.unwrap();
    let seen = std::process::Command::new("/usr/bin/python3")
        .args(["-c", OFFICE_ITEMS, "Landscape"])
        .output()
        .expect("python3 runs");
    let items = String::from_utf8_lossy(&seen.stdout).trim().to_string();
    assert!(
        items.split('|').any(|i| i == "Landscape"),
        "pyatspi sees no Landscape item after the click on Orientation (shown items: {items:?})"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// GTK4 drop-downs are chosen from by a click on a listed item (it closed the list without
/// choosing: the popover is drawn elsewhere than its items' extents say) and by `select`: on
/// gnome-text-editor's Save As (GTK's own file chooser), "Mac OS Classic (CR)" by a click, then
/// "Windows (CR+LF)" — the item of the Line Ending list that reaches below the
/// dialog, cut from the control list — is chosen by name (a click on an item and the list's
/// `SelectChild` only highlighted it). The drop-down shows it, the closed list's items are
/// no longer listed, and the saved file has CR LF line endings (read from the disk, off ufo).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gtk4_dropdown_options_are_chosen_by_click_and_select() {
    if !require_live("gtk4_dropdown_options_are_chosen_by_click_and_select") {
        return;
    }
    let _one = FOCUS.lock().await;
    let dir = temp_dir("dropdown-select");
    let file = dir.join("crlf.txt");
    let draft = dir.join("draft-select.txt").display().to_string();
    forget_editor_session();
    let child = std::process::Command::new("gnome-text-editor")
        .args(["--standalone", &draft])
        .env("GDK_DEBUG", "no-portals")
        .env("GTK_USE_PORTAL", "0")
        .current_dir(&dir)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("gnome-text-editor starts (install it: scripts/test-deps.sh install_apps)");
    let _guard = ProcessGuard::new(draft.clone(), Some(child));
    let d = LinuxDesktop::connect(LinuxConfig::default()).await.unwrap();
    let main = window(&d, "gnome-text-editor", |w| {
        w.title.starts_with("draft-select.txt") && w.process.starts_with("gnome-text-edit")
    })
    .await;
    let before = window_ids(&d).await;
    let keys = |k: &str| UiAction::TypeKeys { keys: k.into() };
    let obs = support::observe_until(
        &d,
        &main.id,
        "the document's text",
        Duration::from_secs(30),
        |o| o.controls.iter().any(|c| c.role == "text"),
    )
    .await;
    let page = obs.controls.iter().find(|c| c.role == "text").unwrap();
    d.act(&main.id, Some(&page.id), &keys("one{enter}two"))
        .await
        .unwrap();
    let mut dialog = None;
    for _ in 0..4 {
        d.act(&main.id, Some(&page.id), &keys("{ctrl+shift+s}"))
            .await
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(15);
        while dialog.is_none() && Instant::now() < deadline {
            dialog = d
                .windows()
                .await
                .unwrap_or_default()
                .into_iter()
                .find(|w| w.title == "Save As" && !before.contains(&w.id));
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        if dialog.is_some() {
            break;
        }
    }
    let dialog = dialog.expect("no Save As window within 60 s of four Ctrl+Shift+S");
    let obs = support::observe_until(
        &d,
        &dialog.id,
        "the Line Ending drop-down",
        Duration::from_secs(30),
        |o| control(o, "combo box", "Line Ending").is_some(),
    )
    .await;
    let endings = control(&obs, "combo box", "Line Ending").unwrap();
    // a click opens the list, a click on an item listed there chooses it
    let click = UiAction::Click {
        button: ufo_core::Button::Left,
        double: false,
    };
    d.act(&dialog.id, Some(&endings), &click).await.unwrap();
    let obs = support::observe_until(
        &d,
        &dialog.id,
        "the Line Ending list open",
        Duration::from_secs(20),
        |o| control(o, "list item", "Mac OS Classic (CR)").is_some(),
    )
    .await;
    let mac = control(&obs, "list item", "Mac OS Classic (CR)").unwrap();
    let done = d.act(&dialog.id, Some(&mac), &click).await;
    assert!(done.is_ok(), "the click on the item failed: {done:?}");
    let obs = support::observe_until(
        &d,
        &dialog.id,
        "Line Ending showing Mac OS Classic (CR)",
        Duration::from_secs(20),
        |o| {
            o.controls.iter().any(|c| {
                c.name == "Line Ending" && c.value.as_deref() == Some("Mac OS Classic (CR)")
            })
        },
    )
    .await;
    let endings = control(&obs, "combo box", "Line Ending").unwrap();
    let done = d
        .act(
            &dialog.id,
            Some(&endings),
            &UiAction::Select {
                item: "Windows (CR+LF)".into(),
            },
        )
        .await;
    assert!(done.is_ok(), "select failed: {done:?}");
    // the closed list's items are not listed (GTK 4 keeps the closed popover in its cache)
    let obs = support::observe_until(
        &d,
        &dialog.id,
        "Line Ending showing Windows (CR+LF), its closed list's items not listed",
        Duration::from_secs(20),
        |o| {
            o.controls
                .iter()
                .any(|c| c.name == "Line Ending" && c.value.as_deref() == Some("Windows (CR+LF)"))
                && !o
                    .controls
                    .iter()
                    .any(|c| c.role == "list item" && c.name == "Mac OS Classic (CR)")
        },
    )
    .await;
    let name = control(&obs, "text", "Name").unwrap();
    let path = file.display().to_string();
    d.act(&dialog.id, Some(&name), &UiAction::SetText { text: path })
        .await
        .unwrap();
    d.act(&dialog.id, Some(&name), &keys("{enter}"))
        .await
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let text = std::fs::read(&file).unwrap_or_default();
        if text.windows(2).any(|w| w == b"\r\n") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the file was not saved with CR LF line endings within 30 s: {:?}",
            String::from_utf8_lossy(&text)
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// pyatspi (off ufo): the names of Geany's shown page tabs, once `argv[1]` is among them
/// (10 s at most).
const GEANY_TABS: &str = r#"
import sys, time, pyatspi
want = sys.argv[1]
def tabs(n, out, depth=0):
    if depth > 40 or len(out) > 200: return
    try:
        if n.getRoleName() == 'page tab' and n.getState().contains(pyatspi.STATE_SHOWING):
            out.append(n.name)
        for i in range(min(n.childCount, 200)):
            c = n.getChildAtIndex(i)
            if c is not None: tabs(c, out, depth + 1)
    except Exception:
        pass
names = []
end = time.time() + 10
while time.time() < end:
    names = []
    for app in pyatspi.Registry.getDesktop(0):
        if app is not None and 'geany' in (app.name or '').lower(): tabs(app, names)
    if want in names: break
    time.sleep(0.3)
print('|'.join(names))
"#;

/// Geany's split tool buttons (GTK 3 menu tool buttons: "New", "Open", "Build"): GTK names
/// each arrow "Menu", so three controls were `toggle button "Menu"`. Each arrow is named
/// after its button ("New menu"), no "Menu" is left, and the arrow opened by its new name
/// shows the templates: picking "main.py" opens a Python document, which pyatspi sees as a
/// tab "untitled.py".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn geanys_split_button_arrows_are_named_after_their_buttons() {
    if !require_live("geanys_split_button_arrows_are_named_after_their_buttons") {
        return;
    }
    let _one = FOCUS.lock().await;
    let dir = temp_dir("geany");
    let config = dir.join("config");
    let config = config.to_string_lossy().to_string();
    let d = LinuxDesktop::connect(LinuxConfig::default()).await.unwrap();
    let before = window_ids(&d).await;
    let (_guard, _) = start("geany", &["--new-instance", "-c", &config], &dir, &config);
    // ("untitled - Geany (new instance)")
    let geany = window(&d, "Geany", |w| {
        w.title.contains(" - Geany") && !before.contains(&w.id)
    })
    .await;
    let obs = support::observe_until(
        &d,
        &geany.id,
        "Geany's New menu arrow",
        Duration::from_secs(60),
        |o| control(o, "toggle button", "New menu").is_some(),
    )
    .await;
    for name in ["Open menu", "Build menu"] {
        assert!(
            control(&obs, "toggle button", name).is_some(),
            "no toggle button {name:?}: {}",
            support::listing(&obs)
        );
    }
    assert!(
        !obs.controls.iter().any(|c| c.name == "Menu"),
        "a control is still named \"Menu\": {}",
        support::listing(&obs)
    );
    let arrow = control(&obs, "toggle button", "New menu").unwrap();
    let click = UiAction::Click {
        button: ufo_core::Button::Left,
        double: false,
    };
    d.act(&geany.id, Some(&arrow), &click).await.unwrap();
    let menu = support::observe_until(
        &d,
        &geany.id,
        "the New menu's templates",
        Duration::from_secs(20),
        |o| control(o, "menu item", "main.py").is_some(),
    )
    .await;
    let item = control(&menu, "menu item", "main.py").unwrap();
    d.act(&geany.id, Some(&item), &click).await.unwrap();
    let seen = std::process::Command::new("/usr/bin/python3")
        .args(["-c", GEANY_TABS, "untitled.py"])
        .output()
        .expect("python3 runs");
    let tabs = String::from_utf8_lossy(&seen.stdout).trim().to_string();
    assert!(
        tabs.split('|').any(|t| t == "untitled.py"),
        "pyatspi sees no tab \"untitled.py\" after main.py was picked (its tabs: {tabs:?})"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Through pyatspi (not ufo): the name of Okular's zoom box (a combo box described "Zoom",
/// named by the zoom it shows).
const OKULAR_ZOOM: &str = r#"
import sys, pyatspi
def find(n, depth):
    if n is None or depth > 40: return None
    try:
        if n.getRoleName() == 'combo box' and n.description == 'Zoom': return n
        for i in range(min(n.childCount, 200)):
            r = find(n.getChildAtIndex(i), depth + 1)
            if r is not None: return r
    except Exception: return None
for a in pyatspi.Registry.getDesktop(0):
    if a is not None and a.name == 'okular' and a.get_process_id() == int(sys.argv[1]):
        z = find(a, 0)
        if z is not None: print(z.name)
"#;

/// Issue 46: Okular's zoom box was `combo box "Main Toolbar"` (its tool bar's name), or,
/// with a document open, `combo box "Zoom"` beside `text ""` and 19 items of its closed list
/// at the window's corner; its page field was `text "1"` (a hidden label beside it repeats
/// the page shown). Now the zoom box is one line `combo box "Zoom"` with its zoom as its
/// value and no item while closed, the page field is unnamed with its page as its value, and
/// nothing is named "Main Toolbar". The zoom set through the box by its name is read back
/// through pyatspi.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn okulars_zoom_box_and_page_field_are_named_as_a_person_reads_them() {
    if !require_live("okulars_zoom_box_and_page_field_are_named_as_a_person_reads_them") {
        return;
    }
    let _one = FOCUS.lock().await;
    let dir = temp_dir("okular");
    let pdf = dir.join("five-pages.pdf");
    ufo_desktop::testing::files::write_pdf(&pdf, 5).unwrap();
    let pdf_s = pdf.display().to_string();
    let d = LinuxDesktop::connect(LinuxConfig::default()).await.unwrap();
    let (_guard, pid) = start("okular", &[&pdf_s], &dir, &pdf_s);
    let w = window(&d, "Okular", |w| {
        w.title.starts_with("five-pages.pdf") && w.pid == Some(pid)
    })
    .await;
    let obs = support::observe_until(
        &d,
        &w.id,
        "Okular's zoom box and page field",
        Duration::from_secs(60),
        |o| {
            control(o, "combo box", "Zoom").is_some()
                && o.controls
                    .iter()
                    .any(|c| c.role == "text" && c.value.as_deref() == Some("1"))
        },
    )
    .await;
    let listing = support::listing(&obs);
    let page: Vec<_> = obs
        .controls
        .iter()
        .filter(|c| c.role == "text" && c.value.as_deref() == Some("1"))
        .collect();
    assert_eq!(page.len(), 1, "one page field: {listing}");
    assert_eq!(page[0].name, "", "the page field is unnamed: {listing}");
    assert!(
        !obs.controls.iter().any(|c| c.name == "Main Toolbar"),
        "a field is named after its tool bar: {listing}"
    );
    let zoom = obs
        .controls
        .iter()
        .find(|c| c.role == "combo box" && c.name == "Zoom")
        .unwrap();
    let shown = zoom.value.clone().unwrap_or_default();
    assert!(!shown.is_empty(), "the zoom box shows its zoom: {listing}");
    assert!(
        !obs.controls
            .iter()
            .any(|c| c.value.as_deref() == Some(shown.as_str()) && c.id != zoom.id),
        "the zoom box and its entry are one line: {listing}"
    );
    assert!(
        !obs.controls.iter().any(|c| c.role == "list item"),
        "the closed zoom list's items are not listed: {listing}"
    );
    let zoom = zoom.id.clone();
    let set = UiAction::SetText {
        text: "200%".into(),
    };
    d.act(&w.id, Some(&zoom), &set).await.unwrap();
    let enter = UiAction::TypeKeys {
        keys: "{enter}".into(),
    };
    d.act(&w.id, Some(&zoom), &enter).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let out = std::process::Command::new("/usr/bin/python3")
            .args(["-c", OKULAR_ZOOM, &pid.to_string()])
            .output()
            .expect("python3 runs");
        let now = String::from_utf8_lossy(&out.stdout).trim().to_string();
        if now == "200%" {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "pyatspi reads Okular's zoom as {now:?}, not 200%"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A `w`×`h` RGB PNG at `path`, left half red and right half blue, written by python3's
/// standard library.
fn write_png(path: &Path, w: u32, h: u32) {
    const PNG: &str = r#"
import struct, sys, zlib
path, w, h = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
row = b'\x00' + b''.join(b'\xff\x00\x00' if x < w // 2 else b'\x00\x00\xff' for x in range(w))
def chunk(t, d): return struct.pack('>I', len(d)) + t + d + struct.pack('>I', zlib.crc32(t + d))
png = b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', w, h, 8, 2, 0, 0, 0))
png += chunk(b'IDAT', zlib.compress(row * h)) + chunk(b'IEND', b'')
open(path, 'wb').write(png)
"#;
    let ok = std::process::Command::new("/usr/bin/python3")
        .args([
            "-c",
            PNG,
            &path.display().to_string(),
            &w.to_string(),
            &h.to_string(),
        ])
        .status()
        .expect("python3 runs");
    assert!(ok.success(), "python3 wrote no PNG");
}

/// The width and height a PNG's header says (read off ufo, from the file).
fn png_size(path: &Path) -> Option<(u32, u32)> {
    let b = std::fs::read(path).ok()?;
    let word = |at: usize| Some(u32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?));
    (b.get(12..16) == Some(b"IHDR".as_slice())).then_some((word(16)?, word(20)?))
}

/// Issue 46: KolourPaint's Resize / Scale dialog listed the three spin buttons of its
/// Height column as "Dimensions" (Qt gives them their group's title as their own name;
/// each has only a label "x" just left of it). A name that names several fields names none:
/// they are listed unnamed with their values, and no two fields share a name. The New row's
/// height, reached by its place beside "New:", and "New:" itself are set; the image saved
/// is 60×30 on the disk.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kolourpaints_resize_fields_share_no_name() {
    if !require_live("kolourpaints_resize_fields_share_no_name") {
        return;
    }
    let _one = FOCUS.lock().await;
    let dir = temp_dir("kolourpaint");
    let image = dir.join("resize-me.png");
    write_png(&image, 80, 40);
    let image_s = image.display().to_string();
    let d = LinuxDesktop::connect(LinuxConfig::default()).await.unwrap();
    let (_guard, pid) = start("kolourpaint", &[&image_s], &dir, &image_s);
    let main = window(&d, "KolourPaint", |w| {
        w.title.starts_with("resize-me.png") && w.pid == Some(pid)
    })
    .await;
    let obs = support::observe_until(
        &d,
        &main.id,
        "KolourPaint's zoom box",
        Duration::from_secs(60),
        |o| control(o, "combo box", "Zoom").is_some(),
    )
    .await;
    let click = UiAction::Click {
        button: ufo_core::Button::Left,
        double: false,
    };
    let image_menu = control(&obs, "menu item", "Image").unwrap();
    d.act(&main.id, Some(&image_menu), &click).await.unwrap();
    let menu = support::observe_until(
        &d,
        &main.id,
        "the Image menu",
        Duration::from_secs(20),
        |o| control(o, "menu item", "Resize / Scale...").is_some(),
    )
    .await;
    let item = control(&menu, "menu item", "Resize / Scale...").unwrap();
    let before = window_ids(&d).await;
    d.act(&main.id, Some(&item), &click).await.unwrap();
    let dialog = window(&d, "Resize / Scale", |w| {
        w.title.starts_with("Resize / Scale") && !before.contains(&w.id)
    })
    .await;
    let obs = support::observe_until(
        &d,
        &dialog.id,
        "the Resize / Scale dialog's spin buttons",
        Duration::from_secs(30),
        |o| {
            o.controls
                .iter()
                .filter(|c| c.role == "spin button")
                .count()
                == 6
        },
    )
    .await;
    let listing = support::listing(&obs);
    assert!(
        !obs.controls.iter().any(|c| c.name == "Dimensions"),
        "a spin button is named after its group: {listing}"
    );
    let fields: Vec<_> = obs
        .controls
        .iter()
        .filter(|c| c.role == "spin button")
        .collect();
    for f in &fields {
        if !f.name.is_empty() {
            assert_eq!(
                fields.iter().filter(|g| g.name == f.name).count(),
                1,
                "{:?} names several fields: {listing}",
                f.name
            );
        }
    }
    let new_width = fields.iter().find(|c| c.name == "New:").unwrap();
    // the New row's height: the unnamed spin button on New:'s line
    let new_height = fields
        .iter()
        .find(|c| c.name.is_empty() && c.rect.y == new_width.rect.y && c.enabled)
        .unwrap_or_else(|| panic!("no unnamed field beside New: {listing}"));
    let (width_id, height_id) = (new_width.id.clone(), new_height.id.clone());
    if let Some(keep) = obs
        .controls
        .iter()
        .find(|c| c.name == "Keep aspect ratio" && c.states.checked)
    {
        d.act(&dialog.id, Some(&keep.id), &click).await.unwrap();
    }
    let set = |t: &str| UiAction::SetText { text: t.into() };
    d.act(&dialog.id, Some(&width_id), &set("60"))
        .await
        .unwrap();
    d.act(&dialog.id, Some(&height_id), &set("30"))
        .await
        .unwrap();
    let ok = control(&obs, "button", "OK").unwrap();
    d.act(&dialog.id, Some(&ok), &click).await.unwrap();
    let obs = support::observe_until(
        &d,
        &main.id,
        "KolourPaint's window after the dialog",
        Duration::from_secs(30),
        |o| control(o, "combo box", "Zoom").is_some(),
    )
    .await;
    let zoom = control(&obs, "combo box", "Zoom").unwrap();
    let save = UiAction::TypeKeys {
        keys: "{ctrl+s}".into(),
    };
    d.act(&main.id, Some(&zoom), &save).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let size = png_size(&image);
        if size == Some((60, 30)) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the saved image is {size:?}, not 60x30"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// pyatspi (off ufo): the name of gnome-text-editor's window, once it starts with `argv[1]`
/// (10 s at most; the editor's title starts with its current document's name).
const EDITOR_TITLE: &str = r#"
import sys, time, pyatspi
want = sys.argv[1]
names = []
end = time.time() + 10
while time.time() < end:
    names = [w.name for app in pyatspi.Registry.getDesktop(0)
             if app is not None and app.name == 'gnome-text-editor'
             for w in app if w is not None and w.getRoleName() == 'frame']
    if any(n.startswith(want) for n in names): break
    time.sleep(0.3)
print('|'.join(names))
"#;

/// pyatspi (off ufo): the labels of gnome-text-editor that name a `.txt` file, once none is
/// `argv[1]` (10 s at most).
const EDITOR_LABELS_WITHOUT: &str = r#"
import sys, time, pyatspi
gone = sys.argv[1]
def labels(n, out, depth=0):
    if depth > 40 or len(out) > 200: return
    if n.getRoleName() == 'label' and n.name.endswith('.txt'): out.append(n.name)
    for i in range(min(n.childCount, 200)):
        c = n.getChildAtIndex(i)
        if c is not None: labels(c, out, depth + 1)
names = []
end = time.time() + 10
while time.time() < end:
    names = []
    for app in pyatspi.Registry.getDesktop(0):
        if app is not None and app.name == 'gnome-text-editor': labels(app, names)
    if gone not in names: break
    time.sleep(0.3)
print('|'.join(names))
"#;

/// The editor's window title as pyatspi reads it once it starts with `want`.
fn editor_title(want: &str) -> String {
    let out = std::process::Command::new("/usr/bin/python3")
        .args(["-c", EDITOR_TITLE, want])
        .output()
        .expect("python3 runs");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// libadwaita 1.2's tabs (gnome-text-editor with two documents): each tab is listed as a page
/// tab named by its title (the tree gives an unnamed `AdwTab` filler with no action, and only
/// the tabs' "Close Tab" buttons were listed), and a click on the other tab by that name
/// makes its document the current one: pyatspi reads the window's title change to it. Each
/// close button is named after its tab, and the one of the tab now behind (shown only under
/// the pointer) closes that tab: pyatspi reads no label of its document after the click. The
/// one tab left, its bar hidden, is not listed. Of the two documents' text views, on one box,
/// only the one in front is listed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn adwaita_tabs_are_listed_by_their_titles_and_switched_by_a_click() {
    if !require_live("adwaita_tabs_are_listed_by_their_titles_and_switched_by_a_click") {
        return;
    }
    let _one = FOCUS.lock().await;
    let dir = temp_dir("adwtabs");
    for (file, text) in [("left-doc.txt", "left"), ("right-doc.txt", "right")] {
        std::fs::write(dir.join(file), text).unwrap();
    }
    let (left, right) = (
        dir.join("left-doc.txt").display().to_string(),
        dir.join("right-doc.txt").display().to_string(),
    );
    forget_editor_session();
    let (_guard, _) = start(
        "gnome-text-editor",
        &["--standalone", &left, &right],
        &dir,
        &right,
    );
    let d = LinuxDesktop::connect(LinuxConfig::default()).await.unwrap();
    let main = window(&d, "gnome-text-editor", |w| {
        w.title.starts_with("right-doc.txt") && w.process.starts_with("gnome-text-edit")
    })
    .await;
    let obs = support::observe_until(
        &d,
        &main.id,
        "both documents' tabs",
        Duration::from_secs(30),
        |o| {
            ["left-doc.txt", "right-doc.txt"].iter().all(|t| {
                o.controls
                    .iter()
                    .any(|c| c.role == "page tab" && c.name == *t)
            })
        },
    )
    .await;
    assert!(
        !obs.controls.iter().any(|c| c.name.starts_with("Adw")),
        "a type name shows: {}",
        support::listing(&obs)
    );
    let before = editor_title("right-doc.txt");
    assert!(
        before.starts_with("right-doc.txt"),
        "the last document opened is not the current one (pyatspi: {before:?})"
    );
    let tab = control(&obs, "page tab", "left-doc.txt").unwrap();
    let click = UiAction::Click {
        button: ufo_core::Button::Left,
        double: false,
    };
    d.act(&main.id, Some(&tab), &click).await.unwrap();
    let after = editor_title("left-doc.txt");
    assert!(
        after.split('|').any(|t| t.starts_with("left-doc.txt")),
        "the click on the tab left-doc.txt did not make it current (pyatspi reads the title {after:?})"
    );
    // both documents' pages lie on one box (GTK 4 marks neither hidden): only the one in
    // front is listed, with its text
    let shown = support::observe_until(
        &d,
        &main.id,
        "the text of the document in front",
        Duration::from_secs(30),
        |o| {
            o.controls
                .iter()
                .any(|c| c.role == "text" && c.value.as_deref() == Some("left"))
        },
    )
    .await;
    let texts: Vec<_> = shown.controls.iter().filter(|c| c.role == "text").collect();
    assert_eq!(
        texts.len(),
        1,
        "the page behind is listed too: {}",
        support::listing(&shown)
    );
    let close = control(&obs, "button", "Close Tab right-doc.txt").unwrap_or_else(|| {
        panic!(
            "no close button named after its tab: {}",
            support::listing(&obs)
        )
    });
    d.act(&main.id, Some(&close), &click).await.unwrap();
    let left = std::process::Command::new("/usr/bin/python3")
        .args(["-c", EDITOR_LABELS_WITHOUT, "right-doc.txt"])
        .output()
        .expect("python3 runs");
    let left = String::from_utf8_lossy(&left.stdout).trim().to_string();
    assert!(
        !left.split('|').any(|l| l == "right-doc.txt") && left.split('|').any(|l| l == "left-doc.txt"),
        "the click on Close Tab right-doc.txt did not close that tab alone (pyatspi reads the labels {left:?})"
    );
    let obs = support::observe_until(
        &d,
        &main.id,
        "the document's text, with no tab",
        Duration::from_secs(30),
        |o| {
            o.controls.iter().any(|c| c.role == "text")
                && !o.controls.iter().any(|c| c.role == "page tab")
        },
    )
    .await;
    assert!(
        !obs.controls.iter().any(|c| c.name.starts_with("Close Tab")),
        "a hidden tab's close button is listed: {}",
        support::listing(&obs)
    );
    let _ = std::fs::remove_dir_all(&dir);
}
