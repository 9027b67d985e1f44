//! A page's popup in Chromium (one process, one accessibility application for all its
//! windows): the popup is observed with its own controls from its first observation on,
//! never with those of the window that opened it, and its form is filled and sent; the
//! `<select>`'s option that is chosen already is chosen again without emptying the box. The
//! check is what a local HTTP server received (not ufo).
//!
//! It needs a desktop session (`scripts/desktop-session.sh up`, then `source` its env file)
//! and `chromium`; skipped with a printed reason without `DISPLAY` and `UFO_LIVE_TESTS=1`.
#![allow(clippy::unwrap_used)]

mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ufo_core::{Button, Desktop, UiAction, WindowInfo, WindowObservation};
use ufo_desktop::testing::{require_live, ProcessGuard};
use ufo_linux::{LinuxConfig, LinuxDesktop};

/// The opener's button: never a control of the popup.
const OPENER_BUTTON: &str = "Open the order form";

/// A web server on a free port: `/` opens `/form` in a popup window, `/form` posts to
/// `/submit`, whose bodies are kept.
fn serve() -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let bodies = Arc::new(Mutex::new(Vec::new()));
    let kept = bodies.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut request = String::new();
            let _ = reader.read_line(&mut request);
            let mut length = 0usize;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line.trim().is_empty() {
                    break;
                }
                if let Some((k, v)) = line.split_once(':') {
                    if k.trim().eq_ignore_ascii_case("content-length") {
                        length = v.trim().parse().unwrap_or(0).min(1 << 16);
                    }
                }
            }
            let mut body = vec![0; length];
            let _ = reader.read_exact(&mut body);
            let path = request.split_whitespace().nth(1).unwrap_or("/").to_string();
            let html = match path.as_str() {
                "/" => "<!doctype html><html><head><title>Start page</title></head><body>\
                        <button onclick=\"window.open('/form', 'order', 'popup,width=800,height=700')\">\
                        Open the order form</button></body></html>"
                    .to_string(),
                "/form" => "<!doctype html><html><head><title>Order form</title></head><body>\
                            <form method=\"post\" action=\"/submit\">\
                            <p><label for=\"name\">Full name</label> <input id=\"name\" name=\"name\"></p>\
                            <p><label for=\"plan\">Plan</label> <select id=\"plan\" name=\"plan\">\
                            <option value=\"basic\">Basic</option><option value=\"pro\">Pro</option>\
                            </select></p><p><input type=\"submit\" value=\"Send\"></p></form></body></html>"
                    .to_string(),
                "/submit" => {
                    kept.lock()
                        .unwrap()
                        .push(String::from_utf8_lossy(&body).into_owned());
                    "<!doctype html><html><head><title>Thank you</title></head><body>Thanks</body></html>"
                        .to_string()
                }
                _ => String::new(),
            };
            let mut stream = stream;
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n{html}",
                html.len()
            );
        }
    });
    (base, bodies)
}

/// Start Chromium as a person would (no renderer switch) on `url`, in a fresh profile.
fn start_chromium(dir: &std::path::Path, url: &str) -> ProcessGuard {
    let profile = format!("--user-data-dir={}", dir.join("profile").display());
    let child = std::process::Command::new("chromium")
        .args([
            "--no-sandbox",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-gpu",
            "--password-store=basic",
            &profile,
            url,
        ])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("chromium starts (install it: apt-get install chromium)");
    ProcessGuard::new(profile, Some(child))
}

/// The window titled `title`, once it is up (40 s at most).
async fn window(d: &LinuxDesktop, title: &str) -> WindowInfo {
    let deadline = Instant::now() + Duration::from_secs(40);
    loop {
        let found = d
            .windows()
            .await
            .unwrap_or_default()
            .into_iter()
            .find(|w| w.title == title);
        if let Some(w) = found {
            return w;
        }
        assert!(
            Instant::now() < deadline,
            "no window {title:?} appeared within 40 s"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The id of the control named `name` with role `role`.
fn control(obs: &WindowObservation, role: &str, name: &str) -> Option<String> {
    obs.controls
        .iter()
        .find(|c| c.role == role && c.name == name)
        .map(|c| c.id.clone())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chromium_popup_is_observed_with_its_own_controls() {
    if !require_live("a_chromium_popup_is_observed_with_its_own_controls") {
        return;
    }
    let (base, bodies) = serve();
    let dir = tempfile::tempdir().unwrap();
    let _browser = start_chromium(dir.path(), &format!("{base}/"));
    let d = LinuxDesktop::connect(LinuxConfig::default()).await.unwrap();
    let opener = window(&d, "Start page - Chromium").await;
    let obs = support::observe_until(
        &d,
        &opener.id,
        "the opener's button",
        Duration::from_secs(40),
        |o| control(o, "button", OPENER_BUTTON).is_some(),
    )
    .await;
    let open = control(&obs, "button", OPENER_BUTTON).unwrap();
    let click = UiAction::Click {
        button: Button::Left,
        double: false,
    };
    d.act(&opener.id, Some(&open), &click).await.unwrap();
    let popup = window(&d, "Order form - Chromium").await;
    // every observation of the popup, from the first, is the popup's (or none while its
    // frame is being built), never the opener's
    let deadline = Instant::now() + Duration::from_secs(40);
    let obs = loop {
        let obs = d.observe(&popup.id).await.unwrap();
        assert!(
            control(&obs, "button", OPENER_BUTTON).is_none(),
            "the popup was observed with the opener's controls: {}",
            support::listing(&obs)
        );
        if control(&obs, "entry", "Full name").is_some()
            && control(&obs, "combo box", "Plan").is_some()
            && control(&obs, "button", "Send").is_some()
        {
            break obs;
        }
        assert!(
            Instant::now() < deadline,
            "the popup's form did not appear within 40 s: {}",
            support::listing(&obs)
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let name = control(&obs, "entry", "Full name").unwrap();
    let plan = control(&obs, "combo box", "Plan").unwrap();
    let send = control(&obs, "button", "Send").unwrap();
    let text = UiAction::SetText {
        text: "Barbara Liskov".into(),
    };
    d.act(&popup.id, Some(&name), &text).await.unwrap();
    // "Basic" is chosen already: choosing it again keeps it
    let basic = UiAction::Select {
        item: "Basic".into(),
    };
    d.act(&popup.id, Some(&plan), &basic).await.unwrap();
    d.act(&popup.id, Some(&send), &click).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let got = bodies.lock().unwrap().clone();
        if got
            .iter()
            .any(|b| b.contains("name=Barbara+Liskov") && b.contains("plan=basic"))
        {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the server did not receive the order within 20 s (received: {got:?})"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
