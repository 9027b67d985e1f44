//! Chromium's own pages benchmark (issue 23, item 2): the observation `ufo inspect` makes
//! (controls with their actions, screenshot, annotation) of `chrome://settings/appearance`,
//! `chrome://bookmarks`, a second window on `chrome://settings`, and Firefox ESR on a local
//! form page and on `about:preferences`, p50, beside a pyatspi walk
//! of the same window in the same run (`scripts/pyatspi_walk.py`), with the nodes each read
//! and the nodes ufo read twice (always 0).
//!
//! Run inside a desktop session: `cargo bench -p ufo-linux --bench pages`
//! (`UFO_BENCH_ITERS`, default 30). It starts Chromium with renderer accessibility in a fresh
//! profile and stops every process of that profile at the end.
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use ufo_core::{Desktop, UiAction, WindowInfo};
use ufo_desktop::testing::ProcessGuard;
use ufo_linux::{LinuxConfig, LinuxDesktop};

#[path = "support/mod.rs"]
mod support;
use support::{ms, pct, pyatspi};

/// A Chromium window not in `except` (40 s at most).
async fn window(d: &LinuxDesktop, except: &[ufo_core::WindowId]) -> WindowInfo {
    let deadline = Instant::now() + Duration::from_secs(40);
    loop {
        let found = d
            .windows()
            .await
            .unwrap_or_default()
            .into_iter()
            .find(|w| w.title.ends_with("Chromium") && !except.contains(&w.id));
        if let Some(w) = found {
            return w;
        }
        assert!(Instant::now() < deadline, "no Chromium window within 40 s");
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

/// Type `keys` into the address bar of `w`.
async fn address_bar(d: &LinuxDesktop, w: &WindowInfo, keys: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let obs = d.observe(&w.id).await.unwrap();
        if let Some(c) = obs.controls.iter().find(|c| c.name.contains("Address")) {
            let keys = UiAction::TypeKeys { keys: keys.into() };
            d.act(&w.id, Some(&c.id), &keys).await.unwrap();
            return;
        }
        assert!(Instant::now() < deadline, "no address bar within 30 s");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Navigate `w` to `url`, let it load, then measure and print one row.
async fn measure(d: &LinuxDesktop, w: &WindowInfo, url: &str, what: &str, iters: usize) {
    address_bar(d, w, &format!("{{ctrl+l}}{url}{{ENTER}}")).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    row(d, w, "Chromium", what, iters).await;
}

/// Observe `w` of application `app` `iters` times as `ufo inspect` does and print one row
/// beside pyatspi's walk of the same window.
async fn row(d: &LinuxDesktop, w: &WindowInfo, app: &str, what: &str, iters: usize) {
    let mut times = Vec::with_capacity(iters);
    let (mut nodes, mut twice, mut controls, mut title) = (0, 0, 0, String::new());
    for _ in 0..iters {
        let t = Instant::now();
        let o = d.observe_full(w.id.as_str()).await.unwrap();
        times.push(ms(t.elapsed()));
        nodes = o.stats.nodes;
        twice += o.stats.read_twice;
        controls = o.observation.controls.len();
        title = o.observation.window.title.clone();
    }
    times.sort_by(|a, b| a.total_cmp(b));
    let (py50, py_nodes) = match pyatspi(app, &title, (iters / 3).max(5)) {
        Ok((t, n)) => (pct(&t, 0.5), n),
        Err(e) => {
            eprintln!("pages bench: pyatspi baseline unavailable: {e}");
            (f64::NAN, 0)
        }
    };
    println!(
        "| {what} | {:.1} | {:.1} | {py50:.1} | {nodes} | {py_nodes} | {controls} | {twice} |",
        pct(&times, 0.5),
        pct(&times, 0.95),
    );
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    if std::env::var_os("DISPLAY").is_none() {
        eprintln!(
            "pages bench: no DISPLAY; run scripts/desktop-session.sh up and source its env file"
        );
        return;
    }
    let iters: usize = std::env::var("UFO_BENCH_ITERS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(30);
    let dir = tempfile::tempdir().expect("temporary folder");
    let _browser = ufo_desktop::testing::start_chromium(&dir.path().join("profile"), "about:blank");
    let d = LinuxDesktop::connect(LinuxConfig::default()).await.unwrap();
    let first = window(&d, &[]).await;
    println!("| window | ufo inspect p50 ms | p95 ms | pyatspi walk p50 ms | ufo nodes | pyatspi nodes | controls | nodes read twice |");
    println!("|---|---|---|---|---|---|---|---|");
    measure(
        &d,
        &first,
        "chrome://settings/appearance",
        "Chromium chrome://settings/appearance",
        iters,
    )
    .await;
    measure(
        &d,
        &first,
        "chrome://bookmarks",
        "Chromium chrome://bookmarks",
        iters,
    )
    .await;
    address_bar(&d, &first, "{ctrl+n}").await;
    let second = window(&d, std::slice::from_ref(&first.id)).await;
    measure(
        &d,
        &second,
        "chrome://settings",
        "Chromium, second window, chrome://settings",
        iters,
    )
    .await;
    firefox(&d, dir.path(), iters).await;
}

/// A page of a form, a table and text, as the Firefox rows read it.
const FORM_PAGE: &str = r##"<!doctype html><html><head><title>Order form</title></head><body>
<h1>Order</h1><form><p><label>Name <input name=name></label></p>
<p><label>Plan <select name=plan><option>Free</option><option>Pro</option></select></label></p>
<p><label><input type=checkbox name=news> News</label></p><p><button>Send</button></p></form>
<table><tr><th>Item</th><th>Price</th></tr><tr><td>One</td><td>1</td></tr><tr><td>Two</td><td>2</td></tr></table>
<p>Some text with <a href="#a">a link</a> and <a href="#b">another</a>.</p></body></html>"##;

/// The Firefox ESR rows: a local form page and Firefox's own settings page, in a fresh
/// profile with accessibility on.
async fn firefox(d: &LinuxDesktop, dir: &std::path::Path, iters: usize) {
    let page = dir.join("form.html");
    std::fs::write(&page, FORM_PAGE).unwrap();
    let profile = dir.join("firefox-profile");
    std::fs::create_dir_all(&profile).unwrap();
    std::fs::write(
        profile.join("user.js"),
        "user_pref(\"browser.aboutwelcome.enabled\", false);\n\
         user_pref(\"browser.shell.checkDefaultBrowser\", false);\n\
         user_pref(\"datareporting.policy.dataSubmissionEnabled\", false);\n",
    )
    .unwrap();
    let child = std::process::Command::new("firefox-esr")
        .args(["--new-instance", "--profile"])
        .arg(&profile)
        .arg(format!("file://{}", page.display()))
        .env("GNOME_ACCESSIBILITY", "1")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    let Ok(child) = child else {
        eprintln!("pages bench: firefox-esr is not installed: no Firefox rows");
        return;
    };
    let _browser = ProcessGuard::new(profile.display().to_string(), Some(child));
    let deadline = Instant::now() + Duration::from_secs(60);
    let w = loop {
        let found = d
            .windows()
            .await
            .unwrap_or_default()
            .into_iter()
            .find(|w| w.title.starts_with("Order form"));
        if let Some(w) = found {
            break w;
        }
        assert!(Instant::now() < deadline, "no Firefox window within 60 s");
        tokio::time::sleep(Duration::from_millis(300)).await;
    };
    tokio::time::sleep(Duration::from_secs(2)).await;
    row(d, &w, "Firefox", "Firefox ESR, a local form page", iters).await;
    // the running instance opens its settings in a second window
    let opened = std::process::Command::new("firefox-esr")
        .args(["--profile"])
        .arg(&profile)
        .args(["--new-window", "about:preferences"])
        .env("GNOME_ACCESSIBILITY", "1")
        .status();
    if !opened.is_ok_and(|s| s.success()) {
        eprintln!("pages bench: Firefox did not open about:preferences: no row");
        return;
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    let settings = loop {
        let found = d.windows().await.unwrap_or_default().into_iter().find(|s| {
            s.id != w.id && s.title.starts_with("Settings") && s.title.contains("Firefox")
        });
        if let Some(s) = found {
            break s;
        }
        assert!(
            Instant::now() < deadline,
            "no Firefox settings window within 30 s"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    };
    tokio::time::sleep(Duration::from_secs(2)).await;
    row(
        d,
        &settings,
        "Firefox",
        "Firefox ESR, about:preferences (second window)",
        iters,
    )
    .await;
}
