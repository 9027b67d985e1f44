//! Live test of what an observation keeps of LibreOffice between observations (issue 11,
//! speed): the tree and the cell texts of the last observation are kept while LibreOffice
//! sends no event and brought up to date from its events otherwise (changes.rs), and a change
//! made outside ufo (keys typed with xdotool: a cell's value and a formula fed by it, the Bold
//! button's state) shows in the very next observation.
//!
//! Needs a desktop session (`scripts/desktop-session.sh up`, then `source` its env file),
//! LibreOffice with its GTK3 plugin and xdotool. Without `DISPLAY` and without
//! `UFO_LIVE_TESTS=1` it is skipped with a printed reason; with `UFO_LIVE_TESTS=1` it fails
//! loudly when something is missing. It uses a fresh profile and kills the LibreOffice it
//! started, pass or fail.
#![allow(clippy::unwrap_used)]

use std::time::Duration;
use ufo_desktop::testing::require_live;

mod support;
use support::observe_until;
use support::office::{require_libreoffice_gtk3, OfficeGuard};

use ufo_core::{Desktop, WindowObservation};
use ufo_linux::LinuxDesktop;

/// The tests run one at a time: they share the screen and the keyboard.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn cell(o: &WindowObservation, address: &str) -> Option<String> {
    o.controls
        .iter()
        .find(|c| c.role == "table cell" && c.name == address)
        .map(|c| c.value.clone().unwrap_or_default())
}

fn listed(o: &WindowObservation) -> Vec<(String, String, Option<String>)> {
    let mut v: Vec<_> = o
        .controls
        .iter()
        .map(|c| (c.role.clone(), c.name.clone(), c.value.clone()))
        .collect();
    v.sort();
    v
}

/// Where each control outside the sheet sits: role, name and box (the bars' buttons are
/// placed from their bar when it sent no event: places.rs).
fn placed(o: &WindowObservation) -> Vec<String> {
    let mut v: Vec<_> = o
        .controls
        .iter()
        .filter(|c| c.role != "table cell")
        .map(|c| {
            let r = c.rect;
            format!("{} {:?} at {},{} {}x{}", c.role, c.name, r.x, r.y, r.w, r.h)
        })
        .collect();
    v.sort();
    v
}

/// A1 = 1, A2 = 2, A3 = A1 + A2.
const THREE: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<office:document xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" xmlns:of="urn:oasis:names:tc:opendocument:xmlns:of:1.2" office:version="1.2" office:mimetype="application/vnd.oasis.opendocument.spreadsheet"><office:body><office:spreadsheet><table:table table:name="Sheet1"><table:table-row><table:table-cell office:value-type="float" office:value="1"><text:p>1</text:p></table:table-cell></table:table-row><table:table-row><table:table-cell office:value-type="float" office:value="2"><text:p>2</text:p></table:table-cell></table:table-row><table:table-row><table:table-cell table:formula="of:=[.A1]+[.A2]" office:value-type="float" office:value="3"><text:p>3</text:p></table:table-cell></table:table-row></table:table></office:spreadsheet></office:body></office:document>"#;

/// The live desktop and a LibreOffice of the test's own showing a sheet written from
/// `content` as `name`, once the cell `shows.0` shows `shows.1` (LibreOffice finishes its
/// window a few seconds after it shows it).
async fn open_sheet(
    prefix: &str,
    name: &str,
    content: &str,
    shows: (&str, &str),
) -> (LinuxDesktop, ufo_core::WindowInfo, OfficeGuard) {
    require_libreoffice_gtk3();
    let mut office = OfficeGuard::new(prefix);
    let sheet = office.dir().join(name);
    std::fs::write(&sheet, content).unwrap();
    let d = LinuxDesktop::connect(Default::default())
        .await
        .unwrap_or_else(|e| panic!("the live desktop is unavailable: {e}"));
    office.start("gtk3", &[&sheet]);
    let w = office.window(&d, name, Duration::from_secs(90)).await;
    let (address, value) = shows;
    observe_until(
        &d,
        &w.id,
        &format!("Calc's cell {address} showing {value}"),
        Duration::from_secs(30),
        |o| cell(o, address).as_deref() == Some(value) && o.controls.len() >= 20,
    )
    .await;
    (d, w, office)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_kept_calc_observation_follows_changes_made_outside_ufo() {
    if !require_live("a_kept_calc_observation_follows_changes_made_outside_ufo") {
        return;
    }
    let _serial = SERIAL.lock().await;
    assert!(
        ufo_proc::which("xdotool", None).is_some(),
        "xdotool is not installed: apt-get install xdotool"
    );
    let (d, w, _office) = open_sheet("ufo-kept-test-", "kept.fods", THREE, ("A1", "1")).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    // an observation right after another (kept when LibreOffice sent nothing) lists the same
    let first = d.observe(&w.id).await.expect("observe Calc");
    let second = d.observe(&w.id).await.expect("observe Calc");
    assert_eq!(
        listed(&first),
        listed(&second),
        "two observations of an unchanged window differ"
    );
    assert_eq!(cell(&second, "A2").as_deref(), Some("2"));
    assert_eq!(cell(&second, "A3").as_deref(), Some("3"), "A3 is =A1+A2");

    // change A1 outside ufo: the cursor to A1, 42, Enter
    let xid = w.id.clone();
    let xdo = |args: &[&str]| {
        let ok = std::process::Command::new("xdotool")
            .args(args)
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        assert!(ok, "xdotool {args:?} failed");
    };
    let wid = u64::from_str_radix(xid.as_str().trim_start_matches("0x"), 16)
        .unwrap()
        .to_string();
    xdo(&["windowactivate", "--sync", &wid]);
    xdo(&["key", "--clearmodifiers", "ctrl+Home"]);
    xdo(&["type", "--delay", "50", "42"]);
    xdo(&["key", "Return"]);
    // LibreOffice has taken the keys well within 2 s; the very next observation (the kept
    // tree brought up to date from the events, changes.rs) must show the new value
    tokio::time::sleep(Duration::from_secs(2)).await;
    let o = d.observe(&w.id).await.expect("observe Calc");
    assert_eq!(
        cell(&o, "A1").as_deref(),
        Some("42"),
        "A1 was changed to 42 outside ufo but the next observation shows otherwise"
    );
    assert_eq!(cell(&o, "A2").as_deref(), Some("2"));
    // (a cell whose formula reads A1 is recalculated: its new value shows too)
    assert_eq!(
        cell(&o, "A3").as_deref(),
        Some("44"),
        "A3 is =A1+A2: {:?}",
        listed(&o)
    );

    // a change of the toolbar, not of a cell: A1 bold makes the Bold button checked
    let bold = |o: &WindowObservation| {
        o.controls
            .iter()
            .find(|c| c.name == "Bold")
            .map(|c| c.states.checked)
    };
    assert_eq!(bold(&o), Some(false), "{:?}", listed(&o));
    xdo(&["key", "--clearmodifiers", "ctrl+Home"]);
    xdo(&["key", "--clearmodifiers", "ctrl+b"]);
    tokio::time::sleep(Duration::from_secs(2)).await;
    let o = d.observe(&w.id).await.expect("observe Calc");
    assert_eq!(
        bold(&o),
        Some(true),
        "A1 was made bold outside ufo but the next observation shows the Bold button unchecked"
    );
    // the refreshed observation lists what a whole read lists (a new connection keeps nothing)
    let whole = LinuxDesktop::connect(Default::default())
        .await
        .unwrap_or_else(|e| panic!("the live desktop is unavailable: {e}"));
    let w_whole = whole.observe(&w.id).await.expect("observe Calc whole");
    let again = d.observe(&w.id).await.expect("observe Calc");
    assert_eq!(
        listed(&again),
        listed(&w_whole),
        "the observation refreshed from the events differs from a whole read"
    );
    // and again: the same window after the same kind of change, refreshed from the events
    xdo(&["key", "--clearmodifiers", "ctrl+b"]);
    xdo(&["key", "Down"]);
    xdo(&["type", "--delay", "50", "7"]);
    xdo(&["key", "Return"]);
    tokio::time::sleep(Duration::from_secs(2)).await;
    let o = d.observe(&w.id).await.expect("observe Calc");
    assert_eq!(bold(&o), Some(false), "bold was switched off outside ufo");
    assert_eq!(cell(&o, "A2").as_deref(), Some("7"), "A2 was changed to 7");
    assert_eq!(cell(&o, "A1").as_deref(), Some("42"));
    assert_eq!(cell(&o, "A3").as_deref(), Some("49"), "A3 is =A1+A2");
}

/// A cell, the text entered into it, and the cells that must show what after it.
type Entry<'a> = (&'a str, &'a str, &'a [(&'a str, &'a str)]);

/// A sheet of five rows: A1 = 1, A2 = 2, A3 = A1 + A2, A4 = A5 × 2 (A5 empty, so A4 shows 0).
const FORMULAS: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<office:document xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" xmlns:of="urn:oasis:names:tc:opendocument:xmlns:of:1.2" office:version="1.2" office:mimetype="application/vnd.oasis.opendocument.spreadsheet"><office:body><office:spreadsheet><table:table table:name="Sheet1"><table:table-row><table:table-cell office:value-type="float" office:value="1"><text:p>1</text:p></table:table-cell></table:table-row><table:table-row><table:table-cell office:value-type="float" office:value="2"><text:p>2</text:p></table:table-cell></table:table-row><table:table-row><table:table-cell table:formula="of:=[.A1]+[.A2]" office:value-type="float" office:value="3"><text:p>3</text:p></table:table-cell></table:table-row><table:table-row><table:table-cell table:formula="of:=[.A5]*2" office:value-type="float" office:value="0"><text:p>0</text:p></table:table-cell></table:table-row></table:table></office:spreadsheet></office:body></office:document>"#;

/// Issue 25: after ufo enters a value into a cell, the next observation reads only the cells
/// that may have changed (the one entered, and those that showed something: a formula always
/// does), not every visible cell; a formula fed by the cell entered shows its new value, and
/// the observation lists what a whole read by a new connection lists.
#[tokio::test(flavor = "multi_thread")]
async fn a_cell_entered_by_ufo_is_read_again_with_the_formulas_it_feeds_not_the_whole_sheet() {
    if !require_live(
        "a_cell_entered_by_ufo_is_read_again_with_the_formulas_it_feeds_not_the_whole_sheet",
    ) {
        return;
    }
    let _serial = SERIAL.lock().await;
    // RUST_LOG=ufo_linux=debug says why cells were read whole
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
    let (d, w, _office) = open_sheet("ufo-kept-entry-", "entry.fods", FORMULAS, ("A3", "3")).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let mut o = d.observe(&w.id).await.expect("observe Calc");
    let visible = d.cells_read();
    assert!(visible > 0, "no cell was read");

    // (cell, text entered, then the cells that must show: the formulas follow their cells)
    let entries: [Entry; 4] = [
        (
            "A1",
            "42",
            &[("A1", "42"), ("A2", "2"), ("A3", "44"), ("A4", "0")],
        ),
        ("A5", "7", &[("A5", "7"), ("A4", "14"), ("A3", "44")]),
        ("A2", "8", &[("A2", "8"), ("A3", "50"), ("A4", "14")]),
        ("A5", "-1", &[("A5", "-1"), ("A4", "-2"), ("A3", "50")]),
    ];
    for (address, text, want) in entries {
        let id = o
            .controls
            .iter()
            .find(|c| c.role == "table cell" && c.name == address)
            .map(|c| c.id.clone())
            .unwrap_or_else(|| panic!("{address} is not listed: {:?}", listed(&o)));
        let before = d.cells_read();
        d.act(
            &w.id,
            Some(&id),
            &ufo_core::UiAction::SetText {
                text: text.to_string(),
            },
        )
        .await
        .unwrap_or_else(|e| panic!("set_text {text:?} on {address}: {e}"));
        o = d.observe(&w.id).await.expect("observe Calc");
        let read = d.cells_read() - before;
        for (cell_at, shows) in want {
            assert_eq!(
                cell(&o, cell_at).as_deref(),
                Some(*shows),
                "{text:?} entered in {address}: {cell_at} must show {shows}: {:?}",
                listed(&o)
            );
        }
        // the whole sheet was read at first (every visible cell that shows something); after
        // an entry only the cells that may have changed, and the empty cells not read before
        // that the cell cursor's frame now marks (the cell it moved to and its neighbours,
        // each read once: apps/inked.rs)
        assert!(
            read <= 16,
            "{text:?} entered in {address}: {read} cells were read again (the whole reads before: {visible})"
        );
    }
    // what a whole read by a new connection lists
    let whole = LinuxDesktop::connect(Default::default())
        .await
        .unwrap_or_else(|e| panic!("the live desktop is unavailable: {e}"));
    let w_whole = whole.observe(&w.id).await.expect("observe Calc whole");
    let again = d.observe(&w.id).await.expect("observe Calc");
    assert_eq!(
        listed(&again),
        listed(&w_whole),
        "the observation refreshed cell by cell differs from a whole read"
    );
}

/// The observation kept by `d` (brought up to date from the events) lists what a whole read
/// by a new connection lists, after `what`.
async fn kept_matches_a_whole_read(
    d: &LinuxDesktop,
    w: &ufo_core::WindowId,
    what: &str,
) -> WindowObservation {
    let whole = LinuxDesktop::connect(Default::default())
        .await
        .unwrap_or_else(|e| panic!("the live desktop is unavailable: {e}"));
    let w_whole = whole.observe(w).await.expect("observe Calc whole");
    let kept = d.observe(w).await.expect("observe Calc");
    assert_eq!(
        listed(&kept),
        listed(&w_whole),
        "after {what}, the observation refreshed from the events differs from a whole read"
    );
    assert_eq!(
        placed(&kept),
        placed(&w_whole),
        "after {what}, the controls of the observation refreshed from the events sit elsewhere \
         than a whole read places them"
    );
    kept
}

/// Issue 48: ufo asks LibreOffice only for the kinds of events it reads (a11y/events.rs). The
/// actions whose events are no longer asked for (a window resized: bounds; the sheet scrolled
/// by the wheel: a scroll bar's value; a cell's text edited with the caret moved and text
/// selected, then the edit cancelled: caret and text selection; the focus moved to the Name
/// Box and back: focus events) leave the kept observation as a whole read lists it.
#[tokio::test(flavor = "multi_thread")]
async fn a_kept_calc_observation_follows_what_sends_only_events_no_longer_asked_for() {
    if !require_live("a_kept_calc_observation_follows_what_sends_only_events_no_longer_asked_for") {
        return;
    }
    let _serial = SERIAL.lock().await;
    // RUST_LOG=ufo_linux=debug says whether each observation was kept, refreshed or read whole
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
    assert!(
        ufo_proc::which("xdotool", None).is_some(),
        "xdotool is not installed: apt-get install xdotool"
    );
    let (d, w, _office) =
        open_sheet("ufo-kept-unasked-", "unasked.fods", FORMULAS, ("A3", "3")).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let first = d.observe(&w.id).await.expect("observe Calc");
    assert_eq!(cell(&first, "A1").as_deref(), Some("1"));
    let wid = u64::from_str_radix(w.id.as_str().trim_start_matches("0x"), 16)
        .unwrap()
        .to_string();
    let xdo = |args: &[&str]| {
        let ok = std::process::Command::new("xdotool")
            .args(args)
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        assert!(ok, "xdotool {args:?} failed");
    };
    // (LibreOffice has handled each within the pause)
    let settle = || tokio::time::sleep(Duration::from_millis(1500));
    xdo(&["windowactivate", "--sync", &wid]);

    // the window resized: every control's bounds change, and the sheet shows fewer cells
    xdo(&["windowsize", "--sync", &wid, "900", "700"]);
    settle().await;
    kept_matches_a_whole_read(&d, &w.id, "a resize").await;

    // the window moved: its bars keep their size, and their buttons, taken from where they
    // sat in them, move with them
    xdo(&["windowmove", "--sync", &wid, "60", "40"]);
    settle().await;
    kept_matches_a_whole_read(&d, &w.id, "a move").await;

    // the sheet scrolled down by the wheel, then back (the first rows shown again)
    xdo(&["mousemove", "--window", &wid, "300", "350"]);
    for _ in 0..3 {
        xdo(&["click", "5"]);
    }
    settle().await;
    let down = kept_matches_a_whole_read(&d, &w.id, "a scroll down").await;
    assert_eq!(
        cell(&down, "A1"),
        None,
        "A1 scrolled out: {:?}",
        listed(&down)
    );
    for _ in 0..3 {
        xdo(&["click", "4"]);
    }
    settle().await;
    let up = kept_matches_a_whole_read(&d, &w.id, "a scroll back up").await;
    assert_eq!(cell(&up, "A3").as_deref(), Some("3"), "A3 shown again");

    // an edit of A1 with the caret moved and text selected, then cancelled
    // (F2 edits in the cell, where the arrows move the caret; typed into a cell not being
    // edited, they would enter the text: F2 comes once LibreOffice has taken ctrl+Home)
    xdo(&["key", "--clearmodifiers", "ctrl+Home"]);
    settle().await;
    xdo(&["key", "F2"]);
    settle().await;
    xdo(&["type", "--delay", "30", "95"]);
    xdo(&["key", "Left", "Left", "Home", "shift+End"]);
    settle().await;
    kept_matches_a_whole_read(&d, &w.id, "an edit with the caret moved").await;
    xdo(&["key", "Escape"]);
    settle().await;
    kept_matches_a_whole_read(&d, &w.id, "an edit cancelled").await;

    // the focus to the Name Box and back to the sheet
    xdo(&["key", "--clearmodifiers", "ctrl+shift+F5"]);
    settle().await;
    kept_matches_a_whole_read(&d, &w.id, "the focus in the Name Box").await;
    xdo(&["key", "Escape"]);
    settle().await;
    let last = d.observe(&w.id).await.expect("observe Calc");
    assert_eq!(
        cell(&last, "A1").as_deref(),
        Some("1"),
        "the edit was cancelled"
    );
    assert_eq!(cell(&last, "A3").as_deref(), Some("3"));
    kept_matches_a_whole_read(&d, &w.id, "the focus back on the sheet").await;
}
