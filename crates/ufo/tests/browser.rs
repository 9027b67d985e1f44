//! `ufo run --desktop live` on Chromium (issue 12): a scripted session that names controls
//! (never `click_at`) fills a local HTML form — text inputs, a `<select>`, a checkbox — and
//! submits it; the resulting URL is read back through pyatspi, not through ufo. Firefox ESR
//! (issue 23): a web `<select>` chosen by name changes the page, seen in the window title.
//!
//! Needs the desktop session (scripts/desktop-session.sh), `chromium`, `firefox-esr`, `xdotool`
//! and python3 with pyatspi.
//! Skipped with a message without DISPLAY and UFO_LIVE_TESTS; with UFO_LIVE_TESTS=1 anything
//! missing fails the test.

mod common;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::Duration;
use ufo_desktop::testing::script::{app, app_line, line};
use ufo_desktop::testing::{require_live, ProcessGuard};

use common::*;
use serde_json::{json, Value};

/// Live tests share one display: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

/// Start Chromium with renderer accessibility on `page`, in a fresh profile under `dir`.
fn start_chromium(dir: &Path, page: &Path) -> ProcessGuard {
    ufo_desktop::testing::start_chromium(
        &dir.join("chromium-profile"),
        &format!("file://{}", page.display()),
    )
}

/// Through pyatspi (not ufo): the URI of the page Chromium shows, once it is `want_title`.
const PAGE_URI: &str = r#"
import sys, time, pyatspi
want = sys.argv[1]
needs = sys.argv[2] if len(sys.argv) > 2 else ''
def find(n, pred, depth=0):
    if pred(n): return n
    if depth > 25: return None
    for i in range(min(n.childCount, 50)):
        c = n.getChildAtIndex(i)
        if c is None: continue
        r = find(c, pred, depth + 1)
        if r: return r
    return None
end = time.time() + 20
while time.time() < end:
    for app in pyatspi.Registry.getDesktop(0):
        if app is None or not (app.name or '').lower().startswith('chrom'): continue
        doc = find(app, lambda n: n.getRoleName() == 'document web' and n.name == want)
        if doc is None: continue
        attrs = dict(a.split(':', 1) for a in doc.queryDocument().getAttributes() if ':' in a)
        uri = attrs.get('URI', '')
        if needs not in uri: continue
        print(uri)
        sys.exit(0)
    time.sleep(0.5)
print('no page titled', want, file=sys.stderr)
sys.exit(1)
"#;

const FORM: &str = r#"<!doctype html><html><head><title>Order form</title></head><body>
<h1>Order form</h1>
<form method="get" action="done.html">
<p><label for="name">Full name</label> <input id="name" name="name" type="text"></p>
<p><label for="city">City</label> <input id="city" name="city" type="text"></p>
<p><label for="colour">Colour</label> <select id="colour" name="colour">
<option value="red">Red</option><option value="green">Green</option><option value="blue">Blue</option></select></p>
<p><input id="gift" name="gift" type="checkbox" value="yes"> <label for="gift">Gift wrap</label></p>
<p><input type="submit" value="Send order"></p>
</form>
<ul>LINKS</ul>
</body></html>"#;

/// The form page with `links` links below it, and the page it submits to.
fn write_form(dir: &Path, links: usize) -> std::path::PathBuf {
    let list: String = (0..links)
        .map(|i| format!("<li><a href=\"#l{i}\">Link number {i}</a></li>\n"))
        .collect();
    let page = dir.join("form.html");
    std::fs::write(&page, FORM.replace("LINKS", &list)).expect("form page");
    std::fs::write(
        dir.join("done.html"),
        "<!doctype html><html><head><title>Thanks</title></head><body><h1>Order received</h1></body></html>",
    )
    .expect("answer page");
    page
}

#[test]
fn ufo_fills_and_submits_a_web_form_in_chromium() {
    if !require_live("ufo_fills_and_submits_a_web_form_in_chromium") {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).expect("home");
    let page = write_form(tmp.path(), 40);
    let _browser = start_chromium(tmp.path(), &page);
    let png = tmp.path().join("inspect.png");
    let shown = wait_for_control(
        &home,
        "Order form",
        "entry \"Full name\"",
        Duration::from_secs(40),
        &png,
    );
    // what issue 12 found broken: actions named, no empty list items beside the links
    assert!(
        shown.contains("actions=jump"),
        "links have no named action:\n{shown}"
    );
    assert!(
        !shown.contains("list item \"\""),
        "empty list items are listed:\n{shown}"
    );

    let out = tmp.path().join("out");
    let script = tmp.path().join("script.jsonl");
    let lines = [
        line(
            "host",
            json!({"Observation": "The order form is open in Chromium.", "Thought": "Assign.",
                   "Current Sub-Task": "Fill and send the order form",
                   "ControlText": "Order form - Chromium", "Status": "ASSIGN"}),
            &[],
        ),
        app_line(
            "Full name",
            "",
            "set_text",
            json!({"text": "Ada Lovelace"}),
            "CONTINUE",
        ),
        app_line("City", "", "set_text", json!({"text": "Paris"}), "CONTINUE"),
        app_line("Colour", "", "select", json!({"item": "Blue"}), "CONTINUE"),
        app_line("Gift wrap", "", "click", json!({}), "CONTINUE"),
        app_line("Send order", "", "click", json!({}), "CONTINUE"),
        app_line("", "", "", json!({}), "FINISH"),
        line(
            "host",
            json!({"Observation": "Sent.", "Thought": "Finish.", "Status": "FINISH"}),
            &[],
        ),
    ];
    std::fs::write(&script, lines.join("\n")).expect("script");
    let run = ufo_live(
        &home,
        // "Send order" is a sensitive control by default: the person approves it
        &live_run_args(
            &script,
            &out,
            &["--confirm", "yes", "Fill and send the order form"],
        ),
        &[],
    );
    let stderr = String::from_utf8_lossy(&run.stderr).into_owned();
    let events = std::fs::read_to_string(out.join("events.jsonl")).unwrap_or_default();
    assert_eq!(
        run.status.code(),
        Some(0),
        "stderr:\n{stderr}\nevents:\n{events}"
    );
    // every action went through a named control and reached it
    let results: Vec<String> = events
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["type"] == "step" && e["role"] == "app")
        .map(|e| s(&e["result"]))
        .collect();
    assert!(
        results.iter().all(|r| !r.contains("failed")),
        "{results:#?}"
    );

    let uri = Command::new("/usr/bin/python3")
        .args(["-c", PAGE_URI, "Thanks"])
        .output()
        .expect("python3 runs");
    let uri_text = String::from_utf8_lossy(&uri.stdout).trim().to_string();
    assert!(
        uri.status.success(),
        "pyatspi found no submitted page: {}\nufo results: {results:#?}",
        String::from_utf8_lossy(&uri.stderr)
    );
    let query = uri_text.split_once('?').map(|(_, q)| q).unwrap_or("");
    assert_eq!(
        query, "name=Ada+Lovelace&city=Paris&colour=blue&gift=yes",
        "submitted URL {uri_text}\nufo results: {results:#?}"
    );
}

/// Below the fold: `read_text` on the page returns its text, `scroll` on the page brings later
/// links into the observation that follows (not a stale one), and a click on one of them by
/// name follows it; the URL is read back through pyatspi.
#[test]
fn ufo_reads_scrolls_and_follows_a_link_below_the_fold_in_chromium() {
    if !require_live("ufo_reads_scrolls_and_follows_a_link_below_the_fold_in_chromium") {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).expect("home");
    let page = write_form(tmp.path(), 200);
    let _browser = start_chromium(tmp.path(), &page);
    let png = tmp.path().join("inspect.png");
    let shown = wait_for_control(
        &home,
        "Order form",
        "link \"Link number 0\"",
        Duration::from_secs(40),
        &png,
    );
    assert!(
        !shown.contains("link \"Link number 135\""),
        "link 135 is on screen before scrolling:\n{shown}"
    );
    let out = tmp.path().join("out");
    let script = tmp.path().join("script.jsonl");
    let with_expect = |response: Value, expect: &[&str]| {
        json!({"agent": "app", "response": response, "expect": expect}).to_string()
    };
    let lines = [
        line(
            "host",
            json!({"Observation": "The page is open in Chromium.", "Thought": "Assign.",
                   "Current Sub-Task": "Open link 135", "ControlText": "Order form - Chromium",
                   "Status": "ASSIGN"}),
            &[],
        ),
        app_line("Order form", "", "read_text", json!({}), "CONTINUE"),
        // the page's text came back, the link is further down
        with_expect(
            app(
                "Order form",
                "",
                "scroll",
                json!({"direction": "down", "amount": 20}),
                "CONTINUE",
            ),
            &["Order form", "Link number 3"],
        ),
        with_expect(
            app("Link number 135", "", "click", json!({}), "CONTINUE"),
            &["link \"Link number 135\""],
        ),
        app_line("", "", "", json!({}), "FINISH"),
        line(
            "host",
            json!({"Observation": "Done.", "Thought": "Finish.", "Status": "FINISH"}),
            &[],
        ),
    ];
    std::fs::write(&script, lines.join("\n")).expect("script");
    let run = ufo_live(
        &home,
        &live_run_args(&script, &out, &["Open link 135"]),
        &[],
    );
    let stderr = String::from_utf8_lossy(&run.stderr).into_owned();
    // the links the model was shown after the scroll, for the failure message
    let shown_after: Vec<String> = std::fs::read_to_string(out.join("step_0004_app_prompt.txt"))
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains("] link "))
        .map(|l| l.trim().to_string())
        .collect();
    assert_eq!(
        run.status.code(),
        Some(0),
        "stderr:\n{stderr}\nlinks after the scroll: {:?} … {:?}",
        shown_after.first(),
        shown_after.last()
    );
    let uri = Command::new("/usr/bin/python3")
        .args(["-c", PAGE_URI, "Order form", "#l135"])
        .output()
        .expect("python3 runs");
    assert!(
        uri.status.success(),
        "the page did not go to #l135 (pyatspi: {} {})\nstderr:\n{stderr}",
        String::from_utf8_lossy(&uri.stdout),
        String::from_utf8_lossy(&uri.stderr)
    );
}

/// `ufo mcp serve --desktop live --allow-actions` with its stdio, one request at a time.
struct McpServe {
    child: Child,
    stdin: std::process::ChildStdin,
    lines: std::io::Lines<std::io::BufReader<std::process::ChildStdout>>,
    id: u64,
}

impl McpServe {
    fn start(home: &Path) -> McpServe {
        let mut child = Command::new(assert_cmd::cargo::cargo_bin("ufo"))
            .args(["mcp", "serve", "--desktop", "live", "--allow-actions"])
            .env("HOME", home)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("ufo mcp serve starts");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        let mut s = McpServe {
            child,
            stdin,
            lines: std::io::BufRead::lines(std::io::BufReader::new(stdout)),
            id: 0,
        };
        s.request(
            "initialize",
            json!({"protocolVersion": "2025-03-26", "capabilities": {},
                   "clientInfo": {"name": "test", "version": "0"}}),
        );
        s.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        s
    }

    fn send(&mut self, v: &Value) {
        use std::io::Write;
        writeln!(self.stdin, "{v}").expect("the server reads");
        self.stdin.flush().expect("flush");
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        self.id += 1;
        let id = self.id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let line = self
                .lines
                .next()
                .expect("the server answers")
                .expect("a line");
            let v: Value = serde_json::from_str(&line).expect("JSON");
            if v["id"] == id {
                return v;
            }
        }
    }

    /// A tool's text answer and whether it is an error.
    fn tool(&mut self, name: &str, args: Value) -> (String, bool) {
        let r = self.request("tools/call", json!({"name": name, "arguments": args}));
        let text = r["result"]["content"]
            .as_array()
            .and_then(|c| c.iter().find(|p| p["type"] == "text"))
            .map(|p| s(&p["text"]))
            .unwrap_or_else(|| r.to_string());
        (text, r["result"]["isError"] == true)
    }
}

impl Drop for McpServe {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A label means the control of the observation the client was given: after the page changed
/// under it, acting on a label of the old page fails with "changed since the last
/// observation" instead of reaching whatever a fresh observation numbers that way.
#[test]
fn a_label_of_a_page_that_changed_is_refused() {
    if !require_live("a_label_of_a_page_that_changed_is_refused") {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).expect("home");
    let page = write_form(tmp.path(), 5);
    let _browser = start_chromium(tmp.path(), &page);
    let png = tmp.path().join("inspect.png");
    wait_for_control(
        &home,
        "Order form",
        "entry \"Full name\"",
        Duration::from_secs(40),
        &png,
    );
    let mut mcp = McpServe::start(&home);
    let window = "Order form - Chromium";
    let (obs, err) = mcp.tool("observe_window", json!({"window": window}));
    assert!(!err, "{obs}");
    let obs: Value = serde_json::from_str(&obs).expect("observation JSON");
    let label = obs["controls"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["name"] == "Full name"))
        .map(|c| c["label"].to_string())
        .expect("the Full name field is listed");
    // the page changes under the client: the form is submitted
    let (sent, err) = mcp.tool(
        "act",
        json!({"window": window, "control": "Send order", "function": "click"}),
    );
    assert!(!err, "{sent}");
    let uri = Command::new("/usr/bin/python3")
        .args(["-c", PAGE_URI, "Thanks"])
        .output()
        .expect("python3 runs");
    assert!(uri.status.success(), "the form was not submitted");
    let (answer, err) = mcp.tool(
        "act",
        json!({"window": "Thanks - Chromium", "control": label, "function": "set_text",
               "args": {"text": "too late"}}),
    );
    assert!(err, "acting on a stale label succeeded: {answer}");
    assert!(
        answer.contains(&format!(
            "the control labelled {label} changed since the last observation"
        )),
        "{answer}"
    );
}

/// A page whose `<select name=Plan>` writes the chosen plan into the page title (so the
/// window title shows it, read off ufo), and a button.
const PLAN_PAGE: &str = r#"<!doctype html><html><head><title>Plan none</title></head><body>
<h1>Choose a plan</h1>
<p><label>Plan <select name="Plan" onchange="document.title = 'Plan ' + this.value">
<option value="Free">Free</option><option value="Pro">Pro</option><option value="Team">Team</option>
</select></label></p>
<p><button type="button" onclick="document.title = 'Plan pressed'">Go</button></p>
</body></html>"#;

/// Firefox ESR with accessibility on `page`, in a fresh profile under `dir` without its
/// first-run pages.
fn start_firefox(dir: &Path, page: &Path) -> ProcessGuard {
    let profile = dir.join("firefox-profile");
    std::fs::create_dir_all(&profile).expect("profile");
    std::fs::write(
        profile.join("user.js"),
        r#"user_pref("browser.aboutwelcome.enabled", false);
user_pref("browser.startup.homepage_override.mstone", "ignore");
user_pref("datareporting.policy.dataSubmissionEnabled", false);
user_pref("toolkit.telemetry.reportingpolicy.firstRun", false);
user_pref("browser.shell.checkDefaultBrowser", false);
user_pref("browser.tabs.warnOnClose", false);
"#,
    )
    .expect("user.js");
    let child = Command::new("firefox-esr")
        .args(["--new-instance", "--profile"])
        .arg(&profile)
        .arg(format!("file://{}", page.display()))
        .env("GNOME_ACCESSIBILITY", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("firefox-esr starts (install it: scripts/test-deps.sh)");
    ProcessGuard::new(profile.display().to_string(), Some(child))
}

/// The title of X window `id` (`0x…`), read by xdotool, not ufo.
fn x_window_title(id: &str) -> String {
    Command::new("xdotool")
        .args(["getwindowname", id])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}

/// Issue 23, Gecko: action names are words (Gecko's `GetActions` answers key bindings such
/// as `;;`), and `select` on a closed HTML `<select>` changes the page's choice with its
/// `change` event, seen in the window title.
#[test]
fn ufo_selects_an_option_of_a_web_select_in_firefox() {
    if !require_live("ufo_selects_an_option_of_a_web_select_in_firefox") {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).expect("home");
    let page = tmp.path().join("plan.html");
    std::fs::write(&page, PLAN_PAGE).expect("page");
    let _browser = start_firefox(tmp.path(), &page);
    let shown = wait_for_control(
        &home,
        "Plan none",
        "button \"Go\"",
        Duration::from_secs(90),
        &tmp.path().join("inspect.png"),
    );
    let go = shown
        .lines()
        .find(|l| l.contains("button \"Go\""))
        .unwrap_or_default();
    assert!(
        go.contains("actions=press") || go.contains("actions=click"),
        "the button's actions are not named by words: {go}\n{shown}"
    );
    assert!(
        !shown.contains(";;"),
        "key bindings shown as actions:\n{shown}"
    );
    let header = shown.lines().next().unwrap_or_default();
    let id = header
        .strip_prefix("window ")
        .and_then(|l| l.split_whitespace().next())
        .unwrap_or_else(|| panic!("no window line:\n{shown}"))
        .to_string();
    let title = header.split('"').nth(1).unwrap_or_default().to_string();

    let out = tmp.path().join("out");
    let script = tmp.path().join("script.jsonl");
    let lines = [
        line(
            "host",
            json!({"Observation": "The plan page is open in Firefox.", "Thought": "Assign.",
                   "Current Sub-Task": "Choose the Team plan", "ControlText": title,
                   "Status": "ASSIGN"}),
            &[],
        ),
        app_line("Plan", "", "select", json!({"item": "Team"}), "CONTINUE"),
        app_line("", "", "", json!({}), "FINISH"),
        line(
            "host",
            json!({"Observation": "Chosen.", "Thought": "Finish.", "Status": "FINISH"}),
            &[],
        ),
    ];
    std::fs::write(&script, lines.join("\n")).expect("script");
    let run = ufo_live(
        &home,
        &live_run_args(&script, &out, &["Choose the Team plan"]),
        &[],
    );
    let stderr = String::from_utf8_lossy(&run.stderr).into_owned();
    let events = std::fs::read_to_string(out.join("events.jsonl")).unwrap_or_default();
    // the page saw the change: its title, in the window title read by xdotool
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    let mut now = x_window_title(&id);
    while !now.starts_with("Plan Team") && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(200));
        now = x_window_title(&id);
    }
    assert_eq!(
        run.status.code(),
        Some(0),
        "stderr:\n{stderr}\nevents:\n{events}"
    );
    assert!(
        now.starts_with("Plan Team"),
        "window title {now:?}: the page saw no change to Team\nstderr:\n{stderr}"
    );
}
