//! What a person sees in Chromium and ufo did not (issue 46), each through a scripted
//! `ufo run --desktop live` session naming controls, checked off ufo: the bookmark bubble
//! (the profile's Bookmarks file), a settings page reached by its address, and a setting below
//! the first screen of it (the profile's Preferences file).
//!
//! Needs the desktop session (scripts/desktop-session.sh) and `chromium`. Skipped with a
//! message without DISPLAY and UFO_LIVE_TESTS; with UFO_LIVE_TESTS=1 anything missing fails.

mod common;

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use ufo_desktop::testing::script::{app, app_line, line};
use ufo_desktop::testing::{require_live, ProcessGuard};

use common::*;

/// Live tests share one display: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

const PAGE: &str = r#"<!doctype html><html><head><title>Order form</title></head><body>
<h1>Order form</h1><p><label for="name">Full name</label> <input id="name" type="text"></p>
</body></html>"#;

/// A fresh profile under `dir` and Chromium started in it on `url`.
fn start(dir: &Path, url: &str) -> (PathBuf, ProcessGuard) {
    let profile = dir.join("chromium-profile");
    (
        profile.clone(),
        ufo_desktop::testing::start_chromium(&profile, url),
    )
}

/// `text` read from `file` once `ok` holds for it, waiting up to 20 s (Chromium writes its
/// profile's files a while after a change); the last text otherwise.
fn eventually(file: &Path, ok: impl Fn(&str) -> bool) -> Result<String, String> {
    let end = Instant::now() + Duration::from_secs(20);
    let mut last = String::new();
    while Instant::now() < end {
        last = std::fs::read_to_string(file).unwrap_or_default();
        if ok(&last) {
            return Ok(last);
        }
        std::thread::sleep(Duration::from_millis(300));
    }
    Err(last)
}

/// An app step whose prompt must show each of `expect`.
fn expecting(response: Value, expect: &[&str]) -> String {
    json!({"agent": "app", "response": response, "expect": expect}).to_string()
}

/// The host's assignment of `task` to the window `window`, and its final FINISH.
fn host(task: &str, window: &str) -> (String, String) {
    (
        line(
            "host",
            json!({"Observation": "Chromium is open.", "Thought": "Assign.",
                   "Current Sub-Task": task, "ControlText": window, "Status": "ASSIGN"}),
            &[],
        ),
        line(
            "host",
            json!({"Observation": "Done.", "Thought": "Finish.", "Status": "FINISH"}),
            &[],
        ),
    )
}

/// Run the script `lines` for `task`; returns the run's output folder, after checking that
/// it ended well and that no action failed.
fn run(tmp: &Path, home: &Path, task: &str, lines: &[String]) -> PathBuf {
    let out = tmp.join("out");
    let script = tmp.join("script.jsonl");
    std::fs::write(&script, lines.join("\n")).expect("script");
    let started = Instant::now();
    let run = ufo_live(home, &live_run_args(&script, &out, &[task]), &[]);
    let stderr = String::from_utf8_lossy(&run.stderr).into_owned();
    let events = std::fs::read_to_string(out.join("events.jsonl")).unwrap_or_default();
    let results: Vec<String> = events
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["type"] == "step" && e["role"] == "app")
        .map(|e| s(&e["result"]))
        .collect();
    // (what the observations waited for, for the measurements in docs/desktop.md)
    let log = std::fs::read_to_string(out.join("ufo.log")).unwrap_or_default();
    let rereads = log
        .matches("route is not rendered yet: reading again")
        .count();
    eprintln!("{task}: {rereads} reads again for the page's route");
    eprintln!(
        "{task}: {:.1} s; results {results:#?}",
        started.elapsed().as_secs_f64()
    );
    assert_eq!(
        run.status.code(),
        Some(0),
        "stderr:\n{stderr}\nresults: {results:#?}"
    );
    assert!(
        results.iter().all(|r| !r.contains("failed")),
        "{results:#?}"
    );
    out
}

/// The app prompts of a run, in step order.
fn app_prompts(out: &Path) -> Vec<String> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(out)
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    files.retain(|p| {
        p.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.ends_with("_app_prompt.txt"))
    });
    files.sort();
    files
        .iter()
        .map(|p| std::fs::read_to_string(p).unwrap_or_default())
        .collect()
}

/// Chromium draws its bookmark bubble in the browser's own window (a top-level dialog of its
/// tree, no window of its own): after "Bookmark this tab" the bubble's fields are observed,
/// the bookmark is renamed there and Done closes it; the next observation is the page again.
/// Checked in the profile's Bookmarks file.
#[test]
fn ufo_renames_a_bookmark_in_chromiums_bubble() {
    if !require_live("ufo_renames_a_bookmark_in_chromiums_bubble") {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).expect("home");
    let page = tmp.path().join("form.html");
    std::fs::write(&page, PAGE).expect("page");
    let (profile, _browser) = start(tmp.path(), &format!("file://{}", page.display()));
    let png = tmp.path().join("inspect.png");
    wait_for_control(
        &home,
        "Order form",
        "entry \"Full name\"",
        Duration::from_secs(40),
        &png,
    );
    let task = "Bookmark this page as Spring order";
    let (assign, finish) = host(task, "Order form - Chromium");
    let lines = [
        assign,
        app_line("Bookmark this tab", "", "click", json!({}), "CONTINUE"),
        expecting(
            app(
                "Bookmark name",
                "",
                "set_text",
                json!({"text": "Spring order"}),
                "CONTINUE",
            ),
            &["entry \"Bookmark name\"", "button \"Done\""],
        ),
        app_line("Done", "", "click", json!({}), "CONTINUE"),
        expecting(
            app("", "", "", json!({}), "FINISH"),
            &["entry \"Full name\""],
        ),
        finish,
    ];
    let out = run(tmp.path(), &home, task, &lines);
    let prompts = app_prompts(&out);
    let last = prompts.last().cloned().unwrap_or_default();
    // (the prompt also says what disappeared since the last action: only listed lines count)
    assert!(
        !last.contains("] entry \"Bookmark name\""),
        "the closed bubble is still observed:\n{last}"
    );
    assert!(
        last.contains("disappeared (button \"Close\", entry \"Bookmark name\""),
        "{last}"
    );
    let bookmarks = profile.join("Default").join("Bookmarks");
    let saved = eventually(&bookmarks, |t| t.contains("\"Spring order\""));
    assert!(saved.is_ok(), "no bookmark named Spring order: {saved:?}");
    let saved = saved.unwrap_or_default();
    assert!(
        saved.contains(&format!("file://{}", page.display())),
        "{saved}"
    );
}

/// The first steps of a session on a Chromium just started on a New Tab: the host assigns
/// `task`, the address bar is given `url` and Enter.
fn to_address(task: &str, url: &str) -> Vec<String> {
    let (assign, _) = host(task, "New Tab - Chromium");
    vec![
        assign,
        app_line(
            "Address and search bar",
            "",
            "set_text",
            json!({"text": url}),
            "CONTINUE",
        ),
        app_line(
            "Address and search bar",
            "",
            "type_keys",
            json!({"keys": "{ENTER}"}),
            "CONTINUE",
        ),
    ]
}

/// A value of Chromium's Preferences file (JSON) at `keys`, once `ok` holds for it, read while
/// Chromium runs (it writes the file about 10 s after a change).
fn preference(profile: &Path, keys: &[&str], ok: impl Fn(&Value) -> bool) -> Result<Value, String> {
    let file = profile.join("Default").join("Preferences");
    let pick = |t: &str| {
        let mut v: Value = serde_json::from_str(t).unwrap_or(Value::Null);
        for k in keys {
            v = v[*k].clone();
        }
        v
    };
    eventually(&file, |t| ok(&pick(t)))
        .map(|t| pick(&t))
        .map_err(|t| format!("{keys:?} is {} in Preferences", pick(&t)))
}

/// A Chromium on a new tab under `dir` (its `home`, its profile, its guard), once ufo sees
/// the address bar.
fn new_tab(dir: &Path) -> (PathBuf, PathBuf, ProcessGuard) {
    let home = dir.join("home");
    std::fs::create_dir_all(&home).expect("home");
    let (profile, browser) = start(dir, "");
    wait_for_control(
        &home,
        "New Tab",
        "Address and search bar",
        Duration::from_secs(40),
        &dir.join("inspect.png"),
    );
    (home, profile, browser)
}

/// A settings sub-page reached by its address on a Chromium started cold draws its section
/// after the side menu: the observation right after Enter lists the section's controls, and
/// the step acts on one of them. Checked in the profile's Preferences file.
#[test]
fn a_chromium_settings_page_reached_by_address_is_observed_with_its_section() {
    if !require_live("a_chromium_settings_page_reached_by_address_is_observed_with_its_section") {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let tmp = tempfile::tempdir().expect("tempdir");
    let (home, profile, browser) = new_tab(tmp.path());
    let task = "Show the Home button on Chromium's toolbar";
    let mut lines = to_address(task, "chrome://settings/appearance");
    lines.extend([
        // the first observation after the navigation: the section is there
        expecting(
            app("Show home button", "", "click", json!({}), "CONTINUE"),
            &["toggle button \"Show home button\""],
        ),
        app_line("", "", "", json!({}), "FINISH"),
        host(task, "").1,
    ]);
    run(tmp.path(), &home, task, &lines);
    let shown = preference(&profile, &["browser", "show_home_button"], |v| {
        v == &json!(true)
    });
    drop(browser);
    assert!(shown.is_ok(), "{shown:?}");
}

/// A setting below the first screen of a settings page is listed with its place, and an
/// action on it scrolls it into view first: "Font size" on the appearance page, chosen Large.
/// Checked in the profile's Preferences file (20 px for Large; 16 by default).
#[test]
fn a_chromium_setting_below_the_first_screen_is_listed_and_reached() {
    if !require_live("a_chromium_setting_below_the_first_screen_is_listed_and_reached") {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let tmp = tempfile::tempdir().expect("tempdir");
    let (home, profile, browser) = new_tab(tmp.path());
    let task = "Make Chromium's font size large";
    let mut lines = to_address(task, "chrome://settings/appearance");
    lines.extend([
        expecting(
            app(
                "Font size",
                "",
                "select",
                json!({"item": "Large"}),
                "CONTINUE",
            ),
            &["combo box \"Font size\"", "below, out of view"],
        ),
        app_line("", "", "", json!({}), "FINISH"),
        host(task, "").1,
    ]);
    run(tmp.path(), &home, task, &lines);
    let size = preference(
        &profile,
        &["webkit", "webprefs", "default_font_size"],
        |v| v == &json!(20),
    );
    drop(browser);
    assert!(size.is_ok(), "{size:?}");
}
