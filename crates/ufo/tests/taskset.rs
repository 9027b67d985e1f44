//! The task set of issue 23: realistic tasks in the spirit of OSWorld's instructions, each
//! done by a scripted model that names controls only (never `click_at`) on the real
//! `ufo run --desktop live`, and each checked by a path that is not ufo's: the saved file,
//! the application's own settings file, what a local HTTP server received, or pyatspi.
//!
//! One test runs every task (each bounded in time; a failing task does not stop the others),
//! prints a table per application and every failed task with its reason, writes the results
//! as JSON lines under `target/taskset/` (the path is printed), and asserts that at least
//! [`PASS_RATE`] of the tasks passed (the goal is 90%). `UFO_TASKSET=chromium,gimp` runs the tasks of those
//! applications only (or of those task ids), for development.
//!
//! Needs the desktop session (`scripts/desktop-session.sh up`, then `source` its env file)
//! and the applications (`scripts/test-deps.sh install_apps`); skipped with a printed reason
//! without `DISPLAY` and without `UFO_LIVE_TESTS=1`. Every application a task starts runs
//! under the task's own `HOME`; at the end of the task every process with that `HOME` is
//! ended by pid, pass or fail, so the desktop stays clean.

mod common;

use std::collections::HashMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use ufo_desktop::testing::http::{Page, PageServer};
use ufo_desktop::testing::require_live;
use ufo_desktop::testing::script::{app_line, host_assign, host_finish, line};

use common::{repo_root, s};

/// Live tests share one display: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

/// The share of tasks that must pass: a floor that catches a regression, with room for a
/// task or two that a cold, loaded machine fails (a browser's first start). The issue's goal
/// is 90%; the results of each run are in `target/taskset/` and docs/desktop.md's "Applications
/// tested".
const PASS_RATE: f64 = 0.8;

/// How long the slow page makes the browser wait (issue 23, item 1).
const SLOW: Duration = Duration::from_secs(3);

// ---------------------------------------------------------------------------------------
// The pages of the local HTTP server (`ufo_desktop::testing::http`, which records every
// request): some after SLOW.
// ---------------------------------------------------------------------------------------

fn start_server() -> PageServer {
    PageServer::start(|path| {
        let (status, html) = page(path);
        Page { status, html }
    })
}

/// A form page titled `title` that posts to `action`: a text field "Full name", a `<select>`
/// "Plan" (Basic, Pro, Team), a checkbox "Subscribe to the newsletter" and a "Send" button.
fn form_page(title: &str, action: &str, with_select: bool) -> String {
    let select = if with_select {
        "<p><label for=\"plan\">Plan</label> <select id=\"plan\" name=\"plan\">\
         <option value=\"basic\">Basic</option><option value=\"pro\">Pro</option>\
         <option value=\"team\">Team</option></select></p>"
    } else {
        ""
    };
    format!(
        "<!doctype html><html><head><title>{title}</title></head><body><h1>{title}</h1>\
         <form method=\"post\" action=\"{action}\">\
         <p><label for=\"name\">Full name</label> <input id=\"name\" name=\"name\" type=\"text\"></p>\
         {select}\
         <p><input id=\"news\" name=\"news\" type=\"checkbox\" value=\"yes\"> \
         <label for=\"news\">Subscribe to the newsletter</label></p>\
         <p><input type=\"submit\" value=\"Send\"></p></form></body></html>"
    )
}

/// The server's pages. `/slow/<rest>` is `/<rest>` after [`SLOW`]; `/form/<id>` is the form
/// of task `<id>` (posting to `/submit/<id>`), `/formtext/<id>` the same without the select;
/// `/popup/<id>` opens the form of `<id>` in a new window; `/link/<id>` links to the slow
/// form of `<id>`.
fn page(path: &str) -> (&'static str, String) {
    if let Some(rest) = path.strip_prefix("/slow") {
        std::thread::sleep(SLOW);
        return page(rest);
    }
    let doc = |title: &str, body: &str| {
        format!(
            "<!doctype html><html><head><title>{title}</title></head><body><h1>{title}</h1>{body}</body></html>"
        )
    };
    if let Some(id) = path.strip_prefix("/form/") {
        return (
            "200 OK",
            form_page(&title_of(id), &format!("/submit/{id}"), true),
        );
    }
    if let Some(id) = path.strip_prefix("/formtext/") {
        return (
            "200 OK",
            form_page(&title_of(id), &format!("/submit/{id}"), false),
        );
    }
    if let Some(id) = path.strip_prefix("/submit/") {
        return (
            "200 OK",
            doc("Thank you", &format!("<p>Received for {id}.</p>")),
        );
    }
    if let Some(id) = path.strip_prefix("/popup/") {
        return (
            "200 OK",
            doc(
                "Start page",
                &format!(
                    "<button onclick=\"window.open('/form/{id}', 'order', 'popup,width=800,height=700')\">Open the order form</button>"
                ),
            ),
        );
    }
    if let Some(id) = path.strip_prefix("/link/") {
        return (
            "200 OK",
            doc(
                "Start page",
                &format!("<p><a href=\"/slow/form/{id}\">Go to the order form</a></p>"),
            ),
        );
    }
    match path {
        "/start" => ("200 OK", doc("Start page", "<p>Nothing here yet.</p>")),
        "/alpha" => ("200 OK", doc("Alpha page", "<p>The first window.</p>")),
        _ => ("404 Not Found", doc("Not found", "")),
    }
}

/// The title of the form page of task `id` ("Order form <id>").
fn title_of(id: &str) -> String {
    format!("Order form {id}")
}

// ---------------------------------------------------------------------------------------
// Tasks
// ---------------------------------------------------------------------------------------

/// What a task's check is handed: its folder, its HOME and the web server.
struct Ctx {
    id: String,
    dir: PathBuf,
    home: PathBuf,
    server: Arc<PageServer>,
}

impl Ctx {
    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
}

/// A check: `Ok` when the task's result is there, `Err(what is not)`.
type Check = Box<dyn Fn(&Ctx) -> Result<(), String>>;

/// One task: its scripted model, the launch table it needs, and its off-ufo check.
struct Task {
    instruction: String,
    lines: Vec<String>,
    config: String,
    check: Check,
    /// Check after the applications are closed (settings files are written on exit).
    after_close: bool,
}

impl Task {
    fn new(instruction: impl Into<String>, lines: Vec<String>, check: Check) -> Task {
        Task {
            instruction: instruction.into(),
            lines,
            config: String::new(),
            check,
            after_close: false,
        }
    }
    fn after_close(mut self) -> Task {
        self.after_close = true;
        self
    }
}

/// A host step that runs `command` in the host's `Bash` (the model starts an application).
fn host_bash(observation: &str, command: &str) -> String {
    line(
        "host",
        json!({"Observation": observation, "Thought": "Start it.", "Status": "CONTINUE",
               "Bash": command}),
        &[],
    )
}

fn click(name: &str) -> String {
    app_line(name, "", "click", json!({}), "CONTINUE")
}
/// The model's answer once the subtask is done: no action, FINISH.
fn done() -> String {
    app_line("", "", "", json!({}), "FINISH")
}
/// A last click, then FINISH once its result is seen (two script lines: a click on a
/// sensitive control is held for confirmation, and the model is asked again after it).
fn click_done(name: &str) -> String {
    format!("{}\n{}", click(name), done())
}
fn set_text(name: &str, text: &str) -> String {
    app_line(name, "", "set_text", json!({"text": text}), "CONTINUE")
}
fn keys(name: &str, k: &str) -> String {
    app_line(name, "", "type_keys", json!({"keys": k}), "CONTINUE")
}
fn select(name: &str, item: &str) -> String {
    app_line(name, "", "select", json!({"item": item}), "CONTINUE")
}

/// Poll `f` until it is `Ok` or `within` has passed; its last answer.
fn eventually(within: Duration, f: impl Fn() -> Result<(), String>) -> Result<(), String> {
    let deadline = Instant::now() + within;
    loop {
        let r = f();
        if r.is_ok() || Instant::now() > deadline {
            return r;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// The file `path` contains `want`.
fn file_has(path: &Path, want: &str) -> Result<(), String> {
    match std::fs::read_to_string(path) {
        Ok(t) if t.contains(want) => Ok(()),
        Ok(t) => Err(format!(
            "{} does not contain {want:?} (it holds {:?})",
            path.display(),
            t.chars().take(120).collect::<String>()
        )),
        Err(e) => Err(format!("{} is not there: {e}", path.display())),
    }
}

/// The server received on `/submit/<id>` a form whose body holds every `want`.
fn server_got(ctx: &Ctx, want: &[&str]) -> Result<(), String> {
    let path = format!("/submit/{}", ctx.id);
    let bodies = ctx.server.bodies(&path);
    if bodies.iter().any(|b| want.iter().all(|w| b.contains(w))) {
        return Ok(());
    }
    Err(format!(
        "the server received on {path}: {bodies:?}, wanted one holding {want:?}"
    ))
}

/// Through pyatspi (not ufo): some node of the application whose name starts with `app`
/// has the name or text `want`.
fn atspi_has(app: &str, want: &str) -> Result<(), String> {
    const FIND: &str = r#"
import sys, pyatspi
app_name, want = sys.argv[1].lower(), sys.argv[2]
seen = 0
def walk(n, depth):
    global seen
    seen += 1
    if n is None or depth > 60 or seen > 20000: return False
    try:
        if n.name == want: return True
        try:
            t = n.queryText()
            if t.getText(0, -1).strip() == want: return True
        except Exception: pass
        for i in range(min(n.childCount, 400)):
            if walk(n.getChildAtIndex(i), depth + 1): return True
    except Exception: return False
    return False
for a in pyatspi.Registry.getDesktop(0):
    if a is not None and (a.name or '').lower().startswith(app_name) and walk(a, 0):
        sys.exit(0)
sys.exit(1)
"#;
    let status = Command::new("/usr/bin/python3")
        .args(["-c", FIND, app, want])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map_err(|e| format!("python3 with pyatspi does not run: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("pyatspi finds no {want:?} in {app}"))
    }
}

/// The JSON file `path` (Chromium's Preferences, Bookmarks), if it parses.
fn json_file(path: &Path) -> Result<Value, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("{} is not there: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{} is not JSON: {e}", path.display()))
}

// --- Chromium ---------------------------------------------------------------------------

fn chromium_cmd(ctx: &Ctx, url: &str) -> String {
    format!(
        "chromium --user-data-dir={} --no-first-run --no-default-browser-check --password-store=basic --disable-gpu {url} &",
        ctx.path("chromium").display()
    )
}

/// Launch Chromium on a new tab, assign the subtask to its window, go to `url` through the
/// address bar.
fn chromium_on(ctx: &Ctx, task: &str, url: &str) -> Vec<String> {
    vec![
        host_bash("No browser is open.", &chromium_cmd(ctx, "")),
        host_assign(task, "Chromium"),
        set_text("Address and search bar", url),
        keys("Address and search bar", "{ENTER}"),
    ]
}

fn chromium_pref(ctx: &Ctx, pick: &[&str]) -> Result<Value, String> {
    let mut v = json_file(&ctx.path("chromium/Default/Preferences"))?;
    for k in pick {
        v = v[*k].clone();
    }
    Ok(v)
}

fn chr_home_button(ctx: &Ctx) -> Task {
    let t = "Show the Home button on Chromium's toolbar";
    let mut lines = chromium_on(ctx, t, "chrome://settings/appearance");
    lines.push(click_done("Show home button"));
    lines.push(host_finish());
    Task::new(
        t,
        lines,
        Box::new(
            |ctx| match chromium_pref(ctx, &["browser", "show_home_button"])? {
                Value::Bool(true) => Ok(()),
                other => Err(format!("browser.show_home_button is {other}")),
            },
        ),
    )
    .after_close()
}

fn chr_search_engine(ctx: &Ctx) -> Task {
    let t = "Make Google Chromium's default search engine";
    let mut lines = chromium_on(ctx, t, "chrome://settings/search");
    lines.push(click("More actions for Google"));
    lines.push(click_done("Make default"));
    lines.push(host_finish());
    Task::new(
        t,
        lines,
        Box::new(|ctx| {
            let k = chromium_pref(
                ctx,
                &[
                    "default_search_provider_data",
                    "template_url_data",
                    "keyword",
                ],
            )?;
            if k == "google.com" {
                Ok(())
            } else {
                Err(format!("the default search engine's keyword is {k}"))
            }
        }),
    )
    .after_close()
}

fn chr_bookmark_folder(ctx: &Ctx) -> Task {
    let t = "In Chromium's bookmark manager, add a folder named Receipts 2024";
    let mut lines = chromium_on(ctx, t, "chrome://bookmarks");
    lines.extend([
        click("Organize"),
        click("Add new folder"),
        set_text("Name", "Receipts 2024"),
        click_done("Save"),
        host_finish(),
    ]);
    Task::new(
        t,
        lines,
        // Chromium writes its Bookmarks file a moment after the change, while it runs
        Box::new(|ctx| {
            eventually(Duration::from_secs(15), || {
                file_has(&ctx.path("chromium/Default/Bookmarks"), "Receipts 2024")
            })
        }),
    )
}

fn chr_bookmark_page(ctx: &Ctx) -> Task {
    let t = "Bookmark the start page in Chromium";
    let url = ctx.server.url("/start");
    let lines = vec![
        host_bash("No browser is open.", &chromium_cmd(ctx, &url)),
        host_assign(t, "Start page - Chromium"),
        click("Bookmark this tab"),
        click_done("Done"),
        host_finish(),
    ];
    Task::new(
        t,
        lines,
        // Chromium writes its Bookmarks file a moment after the change, while it runs
        Box::new(|ctx| {
            eventually(Duration::from_secs(15), || {
                file_has(&ctx.path("chromium/Default/Bookmarks"), "/start")
            })
        }),
    )
}

fn chr_tab_search_off(ctx: &Ctx) -> Task {
    let t = "Hide the tab search button in Chromium";
    let mut lines = chromium_on(ctx, t, "chrome://settings/appearance");
    lines.push(click_done("Show tab search button"));
    lines.push(host_finish());
    Task::new(
        t,
        lines,
        Box::new(
            |ctx| match chromium_pref(ctx, &["tab_search", "pinned_to_tabstrip"])? {
                Value::Bool(false) => Ok(()),
                other => Err(format!("tab_search.pinned_to_tabstrip is {other}")),
            },
        ),
    )
    .after_close()
}

fn chr_slow_form(ctx: &Ctx) -> Task {
    let t = "Open the order form (it loads slowly) and order the Pro plan for Ada Lovelace";
    let start = ctx.server.url("/start");
    let form = ctx.server.url(&format!("/slow/form/{}", ctx.id));
    let lines = vec![
        host_bash("No browser is open.", &chromium_cmd(ctx, &start)),
        host_assign(t, "Start page - Chromium"),
        set_text("Address and search bar", &form),
        keys("Address and search bar", "{ENTER}"),
        // the fixed ufo waits for the slow page: its fields are there in the next step
        set_text("Full name", "Ada Lovelace"),
        select("Plan", "Pro"),
        click_done("Send"),
        host_finish(),
    ];
    Task::new(
        t,
        lines,
        Box::new(|ctx| server_got(ctx, &["name=Ada+Lovelace", "plan=pro"])),
    )
}

fn chr_slow_launch(ctx: &Ctx) -> Task {
    let t = "Subscribe Grace Hopper to the newsletter on the order form";
    let form = ctx.server.url(&format!("/slow/formtext/{}", ctx.id));
    let lines = vec![
        host_bash("No browser is open.", &chromium_cmd(ctx, &form)),
        host_assign(t, &format!("{} - Chromium", title_of(&ctx.id))),
        set_text("Full name", "Grace Hopper"),
        click("Subscribe to the newsletter"),
        click_done("Send"),
        host_finish(),
    ];
    Task::new(
        t,
        lines,
        Box::new(|ctx| server_got(ctx, &["name=Grace+Hopper", "news=yes"])),
    )
}

fn chr_link_slow(ctx: &Ctx) -> Task {
    let t = "Follow the link to the order form and order the Team plan for Alan Turing";
    let start = ctx.server.url(&format!("/link/{}", ctx.id));
    let lines = vec![
        host_bash("No browser is open.", &chromium_cmd(ctx, &start)),
        host_assign(t, "Start page - Chromium"),
        click("Go to the order form"),
        set_text("Full name", "Alan Turing"),
        select("Plan", "Team"),
        click_done("Send"),
        host_finish(),
    ];
    Task::new(
        t,
        lines,
        Box::new(|ctx| server_got(ctx, &["name=Alan+Turing", "plan=team"])),
    )
}

fn chr_two_windows(ctx: &Ctx) -> Task {
    let t = "In the order form window, order the Basic plan for Edsger Dijkstra";
    let alpha = ctx.server.url("/alpha");
    let form = ctx.server.url(&format!("/form/{}", ctx.id));
    let lines = vec![
        host_bash("No browser is open.", &chromium_cmd(ctx, &alpha)),
        host_bash(
            "The first window is open.",
            &chromium_cmd(ctx, &format!("--new-window {form}")),
        ),
        host_assign(t, &format!("{} - Chromium", title_of(&ctx.id))),
        set_text("Full name", "Edsger Dijkstra"),
        select("Plan", "Basic"),
        click_done("Send"),
        host_finish(),
    ];
    Task::new(
        t,
        lines,
        Box::new(|ctx| server_got(ctx, &["name=Edsger+Dijkstra", "plan=basic"])),
    )
}

fn chr_popup(ctx: &Ctx) -> Task {
    let t = "Open the order form from the start page and order the Pro plan for Barbara Liskov";
    let start = ctx.server.url(&format!("/popup/{}", ctx.id));
    let lines = vec![
        host_bash("No browser is open.", &chromium_cmd(ctx, &start)),
        host_assign(t, "Start page - Chromium"),
        click("Open the order form"),
        // the form opens in a new window: the fixed ufo follows it
        set_text("Full name", "Barbara Liskov"),
        select("Plan", "Pro"),
        click_done("Send"),
        host_finish(),
    ];
    Task::new(
        t,
        lines,
        Box::new(|ctx| server_got(ctx, &["name=Barbara+Liskov", "plan=pro"])),
    )
}

// --- Firefox ESR ------------------------------------------------------------------------

const FIREFOX_PREFS: &str = r#"user_pref("browser.aboutwelcome.enabled", false);
user_pref("startup.homepage_welcome_url", "");
user_pref("startup.homepage_override_url", "");
user_pref("browser.startup.homepage_override.mstone", "ignore");
user_pref("datareporting.policy.dataSubmissionEnabled", false);
user_pref("toolkit.telemetry.reportingpolicy.firstRun", false);
user_pref("browser.shell.checkDefaultBrowser", false);
user_pref("browser.tabs.warnOnClose", false);
user_pref("browser.sessionstore.resume_from_crash", false);
"#;

fn firefox_cmd(ctx: &Ctx, url: &str) -> String {
    let profile = ctx.path("firefox");
    let _ = std::fs::create_dir_all(&profile);
    let _ = std::fs::write(profile.join("user.js"), FIREFOX_PREFS);
    format!(
        "firefox-esr -profile {} -no-remote {url} &",
        profile.display()
    )
}

fn ff_form(ctx: &Ctx) -> Task {
    let t = "On the order form in Firefox, order the Pro plan for Ada Lovelace with the newsletter";
    let form = ctx.server.url(&format!("/form/{}", ctx.id));
    let lines = vec![
        host_bash("No browser is open.", &firefox_cmd(ctx, &form)),
        host_assign(t, &format!("{} — Mozilla Firefox", title_of(&ctx.id))),
        set_text("Full name", "Ada Lovelace"),
        select("Plan", "Pro"),
        click("Subscribe to the newsletter"),
        click_done("Send"),
        host_finish(),
    ];
    Task::new(
        t,
        lines,
        Box::new(|ctx| server_got(ctx, &["name=Ada+Lovelace", "plan=pro", "news=yes"])),
    )
}

fn ff_form_text(ctx: &Ctx) -> Task {
    let t = "On the order form in Firefox, send Grace Hopper's name with the newsletter";
    let form = ctx.server.url(&format!("/formtext/{}", ctx.id));
    let lines = vec![
        host_bash("No browser is open.", &firefox_cmd(ctx, &form)),
        host_assign(t, &format!("{} — Mozilla Firefox", title_of(&ctx.id))),
        set_text("Full name", "Grace Hopper"),
        click("Subscribe to the newsletter"),
        click_done("Send"),
        host_finish(),
    ];
    Task::new(
        t,
        lines,
        Box::new(|ctx| server_got(ctx, &["name=Grace+Hopper", "news=yes"])),
    )
}

fn ff_slow(ctx: &Ctx) -> Task {
    let t = "In Firefox, follow the link to the slow order form and send Alan Turing's name";
    let start = ctx.server.url(&format!("/link/{}", ctx.id));
    let lines = vec![
        host_bash("No browser is open.", &firefox_cmd(ctx, &start)),
        host_assign(t, "Start page — Mozilla Firefox"),
        click("Go to the order form"),
        // the form answers after 3 s: the fixed ufo waits for it before the next step
        set_text("Full name", "Alan Turing"),
        click_done("Send"),
        host_finish(),
    ];
    Task::new(
        t,
        lines,
        Box::new(|ctx| server_got(ctx, &["name=Alan+Turing"])),
    )
}

fn ff_pref_ctrl_tab(ctx: &Ctx) -> Task {
    let t = "Make Ctrl+Tab in Firefox cycle through tabs in recently used order";
    let lines = vec![
        host_bash(
            "No browser is open.",
            &firefox_cmd(ctx, "about:preferences"),
        ),
        host_assign(t, "Settings — Mozilla Firefox"),
        click("Tabs and browsing"),
        click_done("Ctrl+Tab cycles through tabs in recently used order"),
        host_finish(),
    ];
    Task::new(
        t,
        lines,
        Box::new(|ctx| {
            file_has(
                &ctx.path("firefox/prefs.js"),
                "\"browser.ctrlTab.sortByRecentlyUsed\", true",
            )
        }),
    )
    .after_close()
}

fn ff_pref_search(ctx: &Ctx) -> Task {
    let t = "Find Firefox's setting for opening links in tabs and turn it off";
    let lines = vec![
        host_bash(
            "No browser is open.",
            &firefox_cmd(ctx, "about:preferences"),
        ),
        host_assign(t, "Settings — Mozilla Firefox"),
        set_text("Find in Settings", "Open links in tabs"),
        click_done("Open links in tabs instead of new windows"),
        host_finish(),
    ];
    Task::new(
        t,
        lines,
        Box::new(|ctx| {
            file_has(
                &ctx.path("firefox/prefs.js"),
                "\"browser.link.open_newwindow\", 2",
            )
        }),
    )
    .after_close()
}

// --- Thunderbird --------------------------------------------------------------------------

fn thunderbird_cmd(ctx: &Ctx) -> String {
    let profile = ctx.path("thunderbird");
    let _ = std::fs::create_dir_all(&profile);
    let _ = std::fs::write(profile.join("user.js"), FIREFOX_PREFS);
    format!("thunderbird -profile {} -no-remote &", profile.display())
}

fn tb_account_name(ctx: &Ctx) -> Task {
    let t = "Start setting up a mail account in Thunderbird for Ada Lovelace, ada@example.com";
    let lines = vec![
        host_bash("Thunderbird is not open.", &thunderbird_cmd(ctx)),
        host_assign(t, "Thunderbird"),
        set_text("Full name*", "Ada Lovelace"),
        set_text("Email address*", "ada@example.com"),
        done(),
        host_finish(),
    ];
    Task::new(
        t,
        lines,
        Box::new(|_| {
            atspi_has("thunderbird", "Ada Lovelace")?;
            atspi_has("thunderbird", "ada@example.com")
        }),
    )
}

/// Thunderbird without an account opens on its Account Hub, a dialog over the main window:
/// the hub is put aside ("Minimize"), then the Settings space opens in a tab.
fn tb_setting(ctx: &Ctx, t: &str, checkbox: &str) -> Vec<String> {
    vec![
        host_bash("Thunderbird is not open.", &thunderbird_cmd(ctx)),
        host_assign(t, "Thunderbird"),
        click("Minimize"),
        click("Settings"),
        click_done(checkbox),
        host_finish(),
    ]
}

fn tb_settings(ctx: &Ctx) -> Task {
    let t = "In Thunderbird's settings, turn off the start page";
    Task::new(
        t,
        tb_setting(
            ctx,
            t,
            "When Thunderbird launches, show the Start Page in the message area",
        ),
        Box::new(|ctx| {
            file_has(
                &ctx.path("thunderbird/prefs.js"),
                "\"mailnews.start_page.enabled\", false",
            )
        }),
    )
    .after_close()
}

fn tb_default_client(ctx: &Ctx) -> Task {
    let t = "Make Thunderbird check at start-up whether it is the default mail client";
    Task::new(
        t,
        tb_setting(
            ctx,
            t,
            "Always check to see if Thunderbird is the default mail client on startup",
        ),
        Box::new(|ctx| {
            file_has(
                &ctx.path("thunderbird/prefs.js"),
                "\"mail.shell.checkDefaultClient\", true",
            )
        }),
    )
    .after_close()
}

// --- GIMP ---------------------------------------------------------------------------------

/// A PNG of `w`×`h` pixels, left half red, right half blue.
fn write_png(path: &Path, w: u32, h: u32) {
    let file = std::fs::File::create(path).expect("png file");
    let mut enc = png::Encoder::new(std::io::BufWriter::new(file), w, h);
    enc.set_color(png::ColorType::Rgb);
    enc.set_depth(png::BitDepth::Eight);
    let mut writer = enc.write_header().expect("png header");
    let mut data = Vec::with_capacity((w * h * 3) as usize);
    for _ in 0..h {
        for x in 0..w {
            data.extend_from_slice(if x < w / 2 {
                &[255, 0, 0]
            } else {
                &[0, 0, 255]
            });
        }
    }
    writer.write_image_data(&data).expect("png data");
}

/// The size of the PNG at `path`.
fn png_size(path: &Path) -> Result<(u32, u32), String> {
    let file =
        std::fs::File::open(path).map_err(|e| format!("{} is not there: {e}", path.display()))?;
    let decoder = png::Decoder::new(std::io::BufReader::new(file));
    let reader = decoder
        .read_info()
        .map_err(|e| format!("{} is not a PNG: {e}", path.display()))?;
    let info = reader.info();
    Ok((info.width, info.height))
}

/// Launch GIMP on a fresh image named after the task; its window title holds that name.
fn gimp_on(ctx: &Ctx, task: &str) -> (Vec<String>, String) {
    let name = format!("img-{}.png", ctx.id);
    let image = ctx.path(&name);
    write_png(&image, 40, 20);
    (
        vec![
            host_bash(
                "GIMP is not open.",
                &format!("gimp -n --no-splash --no-fonts {} &", image.display()),
            ),
            // the title GIMP gives an imported 40x20 PNG
            host_assign(
                task,
                &format!(
                    "[img-{}] (imported)-1.0 (RGB color 8-bit gamma integer, GIMP built-in sRGB, 1 layer) 40x20 – GIMP",
                    ctx.id
                ),
            ),
        ],
        name,
    )
}

fn gimp_gimprc(ctx: &Ctx) -> PathBuf {
    ctx.home.join(".config/GIMP/2.10/gimprc")
}

/// GIMP names its Preferences spin buttons by their tooltips.
const GIMP_UNDO_LEVELS: &str = "Minimal number of undo levels";
const GIMP_THREADS: &str = "Number of threads to use";

/// Set the spin button `name` of GIMP's Preferences (System Resources, its first page) to
/// `value`, press OK and quit GIMP (it writes gimprc when it quits; a signal would lose it).
fn gimp_pref(ctx: &Ctx, t: &str, name: &str, value: &str) -> Vec<String> {
    let (mut lines, _) = gimp_on(ctx, t);
    lines.extend([
        click("Edit"),
        click("Preferences"),
        // Preferences is a new window: the fixed ufo follows it
        set_text(name, value),
        keys(name, "{TAB}"),
        click("OK"),
        // Preferences closed: the image window is the AppAgent's again
        click("File"),
        // Quit closes the AppAgent's window: the subtask ends with this action
        app_line("Quit", "", "click", json!({}), "FINISH"),
        host_finish(),
    ]);
    lines
}

fn gimp_pref_undo(ctx: &Ctx) -> Task {
    let t = "In GIMP's Preferences, set the minimal number of undo levels to 42, then quit GIMP";
    Task::new(
        t,
        gimp_pref(ctx, t, GIMP_UNDO_LEVELS, "42"),
        Box::new(|ctx| file_has(&gimp_gimprc(ctx), "(undo-levels 42)")),
    )
    .after_close()
}

fn gimp_pref_threads(ctx: &Ctx) -> Task {
    let t = "In GIMP's Preferences, make GIMP use 1 thread, then quit GIMP";
    Task::new(
        t,
        gimp_pref(ctx, t, GIMP_THREADS, "1"),
        Box::new(|ctx| file_has(&gimp_gimprc(ctx), "(num-processors 1)")),
    )
    .after_close()
}

fn gimp_export_as(out: &Path, status_last: &str) -> Vec<String> {
    vec![
        click("File"),
        click("Export As..."),
        // Export Image is a window of its own: the fixed ufo follows it. GTK 2 names the
        // file name field after the folder row.
        set_text("Name", &out.display().to_string()),
        // the PNG options come next from the PNG plug-in, a window of another process: the
        // host hands it over once it is there
        click("Export"),
        app_line("", "", "", json!({}), status_last),
    ]
}

/// After [`gimp_export_as`]: the host waits for the PNG plug-in's window and assigns it.
fn gimp_png_options() -> Vec<String> {
    vec![
        host_bash("GIMP is exporting.", "sleep 3"),
        host_assign("Export with the default PNG options", "Export Image as PNG"),
        // Export closes the plug-in's window: the subtask ends with this action
        app_line("Export", "", "click", json!({}), "FINISH"),
        host_finish(),
    ]
}

/// A GIMP task on the test image: `steps` in its menus and dialogs, then Export As `file`
/// (PNG); checked on the exported file by `check`, within 10 s.
fn gimp_export_task(
    ctx: &Ctx,
    t: &str,
    steps: Vec<String>,
    file: &str,
    check: impl Fn(&Path) -> Result<(), String> + 'static,
) -> Task {
    let (mut lines, _) = gimp_on(ctx, t);
    let out = ctx.path(file);
    lines.extend(steps);
    lines.extend(gimp_export_as(&out, "FINISH"));
    lines.extend(gimp_png_options());
    Task::new(
        t,
        lines,
        Box::new(move |_| eventually(Duration::from_secs(10), || check(&out))),
    )
}

/// The exported image is `w`×`h` pixels.
fn png_sized(out: &Path, w: u32, h: u32) -> Result<(), String> {
    match png_size(out)? {
        size if size == (w, h) => Ok(()),
        other => Err(format!("the exported image is {other:?}, not {w}x{h}")),
    }
}

fn gimp_canvas(ctx: &Ctx) -> Task {
    let steps = vec![
        click("Image"),
        click("Canvas Size..."),
        // width and height are both named "Width": the first is the width. The dialog opens
        // with the focus on its Template box: the width field takes it first, so that the
        // Tab after the new value commits it
        app_line("Width", "3", "focus", json!({}), "CONTINUE"),
        app_line("Width", "3", "set_text", json!({"text": "80"}), "CONTINUE"),
        app_line(
            "Width",
            "3",
            "type_keys",
            json!({"keys": "{TAB}"}),
            "CONTINUE",
        ),
        click("Resize"),
    ];
    gimp_export_task(
        ctx,
        "Enlarge the canvas to 80 pixels wide in GIMP and export the image as PNG",
        steps,
        "canvas.png",
        |out| png_sized(out, 80, 20),
    )
}

fn gimp_scale(ctx: &Ctx) -> Task {
    let steps = vec![
        click("Image"),
        click("Scale Image..."),
        // the chain keeps the ratio: the height follows once the width is committed
        app_line("Width", "1", "set_text", json!({"text": "20"}), "CONTINUE"),
        app_line(
            "Width",
            "1",
            "type_keys",
            json!({"keys": "{TAB}"}),
            "CONTINUE",
        ),
        click("Scale"),
    ];
    gimp_export_task(
        ctx,
        "Scale the image to 20 pixels wide in GIMP and export it as PNG",
        steps,
        "scaled.png",
        |out| png_sized(out, 20, 10),
    )
}

fn gimp_flip_export(ctx: &Ctx) -> Task {
    let steps = vec![
        click("Image"),
        click("Transform"),
        click("Flip Horizontally"),
    ];
    gimp_export_task(
        ctx,
        "Flip the image horizontally in GIMP and export it as PNG",
        steps,
        "flipped.png",
        |out| {
            let file = std::fs::File::open(out)
                .map_err(|e| format!("{} is not there: {e}", out.display()))?;
            let mut decoder = png::Decoder::new(std::io::BufReader::new(file));
            decoder.set_transformations(png::Transformations::EXPAND);
            let mut reader = decoder.read_info().map_err(|e| e.to_string())?;
            let mut buf = vec![0; reader.output_buffer_size()];
            let info = reader.next_frame(&mut buf).map_err(|e| e.to_string())?;
            let ch = info.color_type.samples();
            // the first pixel was red; flipped, it is blue
            if buf[0] == 0 && buf[2] == 255 && ch >= 3 {
                Ok(())
            } else {
                Err(format!("the first pixel is {:?}: not flipped", &buf[..3]))
            }
        },
    )
}

// --- Qt applications started by ufo through a host Bash ----------------------------------

/// Compute `shown` on KCalc by clicking its buttons `buttons`, then "="; `result` is shown.
fn kcalc_task(shown: &str, buttons: &[&str], result: &str) -> Task {
    let t = format!("Compute {shown} on the calculator");
    let mut lines = vec![
        host_bash("No calculator is open.", "kcalc &"),
        host_assign(&t, "KCalc"),
    ];
    lines.extend(buttons.iter().map(|b| click(b)));
    lines.push(click_done("="));
    lines.push(host_finish());
    let result = result.to_string();
    Task::new(
        t,
        lines,
        Box::new(move |_| eventually(Duration::from_secs(5), || atspi_has("kcalc", &result))),
    )
}

fn kcalc_mul(_ctx: &Ctx) -> Task {
    kcalc_task("12 × 3", &["1", "2", "×", "3"], "36")
}

fn kcalc_sub(_ctx: &Ctx) -> Task {
    kcalc_task("90 − 45", &["9", "0", "−", "4", "5"], "45")
}

fn featherpad_save(ctx: &Ctx) -> Task {
    let t = "Write a shopping list in the Qt editor and save it";
    let file = ctx.path("list.txt");
    let _ = std::fs::write(&file, "");
    let lines = vec![
        host_bash(
            "No editor is open.",
            &format!("featherpad --standalone {} &", file.display()),
        ),
        host_assign(t, &file.display().to_string()),
        // FeatherPad's text area has no name; it is the page's only editable text
        app_line(
            "",
            "18",
            "type_keys",
            json!({"keys": "milk and bread"}),
            "CONTINUE",
        ),
        click("File"),
        click_done("Save"),
        host_finish(),
    ];
    Task::new(
        t,
        lines,
        Box::new(move |_| eventually(Duration::from_secs(5), || file_has(&file, "milk and bread"))),
    )
}

fn featherpad_save_as(ctx: &Ctx) -> Task {
    let t = "Save the note in the Qt editor under a new name, note-copy.txt";
    let file = ctx.path("note.txt");
    let _ = std::fs::write(&file, "keep this note\n");
    let copy = ctx.path("note-copy.txt");
    let lines = vec![
        host_bash(
            "No editor is open.",
            &format!("featherpad --standalone {} &", file.display()),
        ),
        host_assign(t, &file.display().to_string()),
        click("File"),
        click("Save As"),
        // the Qt file dialog is modal: its controls come first
        set_text("File name:", &copy.display().to_string()),
        click_done("Save"),
        host_finish(),
    ];
    Task::new(
        t,
        lines,
        Box::new(move |_| eventually(Duration::from_secs(5), || file_has(&copy, "keep this note"))),
    )
}

/// Issue 46: a person's way to replace a note (Edit ▸ Select All, type, save); the Qt menu
/// must be closed once its entry ran, or the typed words go into it.
fn featherpad_replace(ctx: &Ctx) -> Task {
    let t = "In the Qt editor, replace everything in my note with \"call the dentist\" and save it";
    let file = ctx.path("todo.txt");
    let _ = std::fs::write(&file, "old things to do\n");
    let lines = vec![
        host_bash(
            "No editor is open.",
            &format!("featherpad --standalone {} &", file.display()),
        ),
        host_assign(t, &file.display().to_string()),
        click("Edit"),
        click("Select All"),
        // FeatherPad's text area has no name: the line copied from the control list
        keys(
            "text \"\" value: \"old things to do\\n\"",
            "call the dentist{ctrl+s}",
        ),
        done(),
        host_finish(),
    ];
    Task::new(
        t,
        lines,
        Box::new(move |_| {
            eventually(Duration::from_secs(5), || {
                let now = std::fs::read_to_string(&file).unwrap_or_default();
                match now.trim() {
                    "call the dentist" => Ok(()),
                    other => Err(format!("the note holds {other:?}")),
                }
            })
        }),
    )
}

// --- KDE: Okular and KolourPaint (issue 46) -------------------------------------------------

/// Through pyatspi (not ufo): the zoom Okular's zoom box shows (the combo box described
/// "Zoom" is named by it), for the Okular of the document `argv[1]`'s window.
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
    if a is None or a.name != 'okular': continue
    if not any((a.getChildAtIndex(i).name or '').startswith(sys.argv[1]) for i in range(a.childCount)):
        continue
    z = find(a, 0)
    if z is not None: print(z.name)
"#;

/// Okular: the zoom box (listed "Zoom", it was "Main Toolbar") set to 200%, as a person
/// types it there; read back through pyatspi.
fn okular_zoom(ctx: &Ctx) -> Task {
    let t = "Open my report in Okular and zoom it to 200%";
    let name = format!("report-{}.pdf", ctx.id);
    let pdf = ctx.path(&name);
    ufo_desktop::testing::files::write_pdf(&pdf, 3).expect("pdf written");
    let lines = vec![
        host_bash(
            "Okular is not open.",
            &format!("okular {} &", pdf.display()),
        ),
        host_assign(t, "Okular"),
        set_text("Zoom", "200%"),
        keys("Zoom", "{enter}"),
        done(),
        host_finish(),
    ];
    Task::new(
        t,
        lines,
        Box::new(move |_| {
            eventually(Duration::from_secs(10), || {
                let out = Command::new("/usr/bin/python3")
                    .args(["-c", OKULAR_ZOOM, &name])
                    .output()
                    .map_err(|e| format!("python3 with pyatspi does not run: {e}"))?;
                match String::from_utf8_lossy(&out.stdout).trim() {
                    "200%" => Ok(()),
                    other => Err(format!("Okular's zoom box shows {other:?}, not 200%")),
                }
            })
        }),
    )
}

/// KolourPaint: Image ▸ Resize / Scale, scaled to half keeping the proportions, saved by
/// File ▸ Save (two Qt menus: each must close after its entry); the saved PNG is half the
/// size and still red on the left, blue on the right (scaled, not cut).
fn kolourpaint_half(ctx: &Ctx) -> Task {
    let t = "Scale my picture down to half its size in KolourPaint, keeping its proportions, and save it";
    let image = ctx.path("holiday.png");
    write_png(&image, 80, 40);
    let lines = vec![
        host_bash(
            "KolourPaint is not open.",
            &format!("kolourpaint {} &", image.display()),
        ),
        host_assign(t, "KolourPaint"),
        click("Image"),
        click("Resize / Scale..."),
        click("Scale"),
        click("Keep aspect ratio"),
        set_text("Percent:", "50"),
        click("OK"),
        click("File"),
        click_done("Save"),
        host_finish(),
    ];
    Task::new(
        t,
        lines,
        Box::new(move |_| {
            eventually(Duration::from_secs(10), || {
                png_sized(&image, 40, 20)?;
                let file = std::fs::File::open(&image).map_err(|e| e.to_string())?;
                let mut decoder = png::Decoder::new(std::io::BufReader::new(file));
                decoder.set_transformations(png::Transformations::EXPAND);
                let mut reader = decoder.read_info().map_err(|e| e.to_string())?;
                let mut buf = vec![0; reader.output_buffer_size()];
                let info = reader.next_frame(&mut buf).map_err(|e| e.to_string())?;
                let ch = info.color_type.samples();
                let last = (info.width as usize - 1) * ch;
                // red on the left, blue on the right: scaled, not cut to its left half
                if buf[0] == 255 && buf[last + 2] == 255 && buf[last] == 0 {
                    Ok(())
                } else {
                    Err(format!(
                        "the first row runs {:?} to {:?}: cut, not scaled",
                        &buf[..3],
                        &buf[last..last + 3]
                    ))
                }
            })
        }),
    )
}

// --- Tk (IDLE) -------------------------------------------------------------------------------

/// Issue 46: IDLE's windows carry no `_NET_WM_PID`; its launch must be seen (the host hears
/// "launched idle", `expect`), and the file is open in it: a window titled by the file is on
/// the display (xdotool). Tk has no accessibility bridge, so there is nothing more to name.
fn idle_open(ctx: &Ctx) -> Task {
    let t = "Open my script greet.py in IDLE";
    let file = ctx.path("greet.py");
    let _ = std::fs::write(&file, "print('hello')\n");
    let lines = vec![
        host_bash("IDLE is not open.", &format!("idle {} &", file.display())),
        line(
            "host",
            json!({"Observation": "IDLE shows the script.", "Thought": "Done.",
                   "Status": "FINISH"}),
            &["launched idle"],
        ),
    ];
    Task::new(
        t,
        lines,
        Box::new(move |_| {
            eventually(Duration::from_secs(5), || {
                let out = Command::new("xdotool")
                    .args(["search", "--name", "greet.py"])
                    .output()
                    .map_err(|e| format!("xdotool: {e}"))?;
                if out.stdout.is_empty() {
                    Err("no window titled by greet.py is on the display".into())
                } else {
                    Ok(())
                }
            })
        }),
    )
}

// --- Issue 46: mousepad, AbiWord, Impress, GNOME Clocks and Geany --------------------------

/// Issue 46: mousepad's Find and Replace holds two combo boxes with an entry inside each;
/// each is one control, so `set_text` by its name goes into its entry (it was ambiguous, and
/// a model that went on replaced every match with nothing).
fn mousepad_replace(ctx: &Ctx) -> Task {
    let t = "In mousepad, replace every \"colour\" in my notes with \"color\" and save them";
    let file = ctx.path("notes.txt");
    let _ = std::fs::write(&file, "colour of the sky\nthe colour red\n");
    let lines = vec![
        host_bash(
            "Mousepad is not open.",
            &format!("mousepad --disable-server {} &", file.display()),
        ),
        host_assign(t, &format!("{} - Mousepad", file.display())),
        click("Search"),
        click("Find and Replace..."),
        set_text("Search for", "colour"),
        set_text("Replace with", "color"),
        // with "Replace all in:" checked, the Replace button replaces them all
        click("Replace all in:"),
        click("Replace All"),
        click("Close"),
        click("File"),
        click_done("Save"),
        host_finish(),
    ];
    Task::new(
        t,
        lines,
        Box::new(move |_| {
            eventually(Duration::from_secs(5), || {
                let now = std::fs::read_to_string(&file).unwrap_or_default();
                if now == "color of the sky\nthe color red\n" {
                    Ok(())
                } else {
                    Err(format!("the notes hold {now:?}"))
                }
            })
        }),
    )
}

/// Issue 46: AbiWord's "Font Size" box (listed twice before the composite rule) set by name
/// on the letter's words, selected through the Edit menu (AbiWord's page has no accessible
/// control to type into). The letter is made .abw by AbiWord itself, off ufo's clock; checked
/// in the saved file: its paragraph in 18 points.
fn abiword_font_size(ctx: &Ctx) -> Task {
    let t = "In AbiWord, make my letter 18 point and save it";
    let text = ctx.path("letter.txt");
    let file = ctx.path("letter.abw");
    let _ = std::fs::write(&text, "Dear Ada\n");
    let _ = Command::new("abiword")
        .arg("--to=abw")
        .arg(&text)
        .current_dir(&ctx.dir)
        .env("HOME", &ctx.home)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    let lines = vec![
        host_bash(
            "AbiWord is not open.",
            &format!("abiword {} &", file.display()),
        ),
        host_assign(t, "abiword"),
        click("Edit"),
        click("Select All"),
        set_text("Font Size", "18"),
        keys("Font Size", "{ENTER}"),
        click_done("Save"),
        host_finish(),
    ];
    Task::new(
        t,
        lines,
        Box::new(move |_| {
            eventually(Duration::from_secs(5), || {
                let saved = std::fs::read_to_string(&file)
                    .map_err(|e| format!("{} is not there: {e}", file.display()))?;
                let para = saved
                    .split("<p ")
                    .find(|p| p.contains("Dear Ada"))
                    .ok_or_else(|| format!("no paragraph holds \"Dear Ada\" in {saved:?}"))?;
                if para.contains("font-size:18pt") {
                    Ok(())
                } else {
                    Err(format!("\"Dear Ada\" is not in 18 points: <p {para}"))
                }
            })
        }),
    )
}

/// A flat presentation of one slide whose title shape "Title 1" reads "Old title".
const IMPRESS_DECK: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<office:document xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" xmlns:svg="urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0" xmlns:presentation="urn:oasis:names:tc:opendocument:xmlns:presentation:1.0" xmlns:style="urn:oasis:names:tc:opendocument:xmlns:style:1.0" office:version="1.3" office:mimetype="application/vnd.oasis.opendocument.presentation">
<office:body><office:presentation><draw:page draw:master-page-name="Default"><draw:frame draw:name="Title 1" svg:x="1.4cm" svg:y="0.8cm" svg:width="25cm" svg:height="3cm"><draw:text-box><text:p>Old title</text:p></draw:text-box></draw:frame><draw:frame draw:name="Content Placeholder 2" svg:x="1.4cm" svg:y="4.5cm" svg:width="25cm" svg:height="10cm"><draw:text-box><text:p>First point</text:p><text:p>Second point</text:p></draw:text-box></draw:frame></draw:page></office:presentation></office:body></office:document>
"#;

/// Issue 46: an Impress title shape and its only paragraph are one control, reached by the
/// shape's name; the deck (made .odp by LibreOffice itself, off ufo's clock) is checked in
/// its saved content.xml, read by unzip.
fn impress_title(ctx: &Ctx) -> Task {
    let t = "Change the title of my slides to \"Quarterly results\" and save them";
    let flat = ctx.path("deck.fodp");
    let deck = ctx.path("deck.odp");
    let _ = std::fs::write(&flat, IMPRESS_DECK);
    let _ = Command::new("libreoffice")
        .arg(format!(
            "-env:UserInstallation=file://{}",
            ctx.path("convert").display()
        ))
        .args([
            "--headless",
            "--norestore",
            "--convert-to",
            "odp",
            "--outdir",
        ])
        .arg(&ctx.dir)
        .arg(&flat)
        .env("HOME", &ctx.home)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    let _ = std::fs::remove_file(&flat);
    office_quiet(ctx);
    let lines = vec![
        host_bash(
            "The slides are not open.",
            &format!(
                "libreoffice --impress --norestore --nologo {} &",
                deck.display()
            ),
        ),
        // LibreOffice's first window is titled "LibreOffice 7.4" and takes the deck's title a
        // few seconds later: ufo waits for the window the host names after a launch
        host_assign(t, "deck.odp - LibreOffice Impress"),
        set_text("Title 1", "Quarterly results"),
        // out of the shape, then save (an .odp keeps its format without a question)
        keys("Title 1", "{ESC}{ctrl+s}"),
        done(),
        host_finish(),
    ];
    Task::new(
        t,
        lines,
        Box::new(move |_| {
            eventually(Duration::from_secs(10), || {
                let out = Command::new("unzip")
                    .arg("-p")
                    .arg(&deck)
                    .arg("content.xml")
                    .output()
                    .map_err(|e| format!("unzip does not run: {e}"))?;
                let xml = String::from_utf8_lossy(&out.stdout);
                if xml.contains("Quarterly results") && !xml.contains("Old title") {
                    Ok(())
                } else {
                    Err(format!(
                        "content.xml of {} holds {:?}",
                        deck.display(),
                        xml.chars().take(300).collect::<String>()
                    ))
                }
            })
        }),
    )
}

/// Issue 46: GNOME Clocks (GTK 4): "Add Location", a search for the city, its first result,
/// "Add" (its mnemonic is no part of its name). The search field has no name: the model
/// names it by its label, as its line reads `[3] entry ""`; the first result, whose name
/// holds the time difference, by its label too. Checked with gsettings.
fn clocks_add_city(_ctx: &Ctx) -> Task {
    let t = "Add Berlin to my world clocks";
    let lines = vec![
        // the session keeps GSettings in memory: this Clocks keeps them in a file of its
        // HOME, where gsettings reads them
        host_bash(
            "Clocks is not open.",
            "env GSETTINGS_BACKEND=keyfile gnome-clocks &",
        ),
        host_assign(t, "Clocks"),
        click("Add Location"),
        app_line("", "3", "set_text", json!({"text": "Berlin"}), "CONTINUE"),
        // the results of the search are listed in the step after the text
        line(
            "app",
            ufo_desktop::testing::script::app("", "4", "click", json!({}), "CONTINUE"),
            &["list item \"Berlin Germany"],
        ),
        click_done("Add"),
        host_finish(),
    ];
    Task::new(
        t,
        lines,
        Box::new(|ctx| {
            eventually(Duration::from_secs(5), || {
                let clocks = common::clocks_world_clocks(&ctx.home)?;
                if clocks.contains("'Berlin'") {
                    Ok(())
                } else {
                    Err(format!("the world clocks are {}", clocks.trim()))
                }
            })
        }),
    )
}

/// Issue 46: Geany's "New menu" (the arrow of the split "New" button, once one of three
/// "Menu") lists the file templates; the new file is saved through the Save dialog.
fn geany_template(ctx: &Ctx) -> Task {
    let t = "In Geany, start a new Python script from its main.py template and save it as hello.py";
    let file = ctx.path("hello.py");
    let lines = vec![
        host_bash("Geany is not open.", "geany --new-instance &"),
        host_assign(t, "Geany"),
        click("New menu"),
        click("main.py"),
        // the new file is not modified yet: Save is disabled, Save As is not
        click("File"),
        click("Save As..."),
        // the GTK 3 Save dialog is modal: only its controls are listed
        set_text("Name", &file.display().to_string()),
        click_done("Save"),
        host_finish(),
    ];
    Task::new(
        t,
        lines,
        Box::new(move |_| {
            eventually(Duration::from_secs(5), || {
                file_has(&file, "def main(args):")
            })
        }),
    )
}

// --- GTK 4 and KDE Save dialogs --------------------------------------------------------------

fn gte_save(ctx: &Ctx, text: &str, name: &str) -> Task {
    let t = format!("Write \"{text}\" in a new document of the text editor and save it as {name}");
    let file = ctx.path(name);
    let lines = vec![
        host_bash("No editor is open.", "gnome-text-editor --standalone &"),
        host_assign(&t, "New Document (Draft) - Text Editor"),
        keys("EditorSourceView", text),
        keys("EditorSourceView", "{ctrl+shift+s}"),
        // the GTK 4 Save As dialog is modal: only its controls are listed
        set_text("Name", &file.display().to_string()),
        click_done("Save"),
        host_finish(),
    ];
    let want = text.to_string();
    Task::new(
        t,
        lines,
        Box::new(move |_| eventually(Duration::from_secs(5), || file_has(&file, &want))),
    )
}

fn gte_save_a(ctx: &Ctx) -> Task {
    gte_save(ctx, "Meeting at noon", "meeting.txt")
}

fn gte_save_b(ctx: &Ctx) -> Task {
    gte_save(ctx, "Call the plumber", "todo.txt")
}

fn kate_save(ctx: &Ctx, text: &str, name: &str) -> Task {
    let t = format!("Write \"{text}\" in a new document in Kate and save it as {name}");
    let file = ctx.path(name);
    let lines = vec![
        host_bash("Kate is not open.", "kate -n &"),
        host_assign(&t, "Kate"),
        click("New File"),
        keys("Untitled", text),
        click("File"),
        click("Save As..."),
        // the KDE Save dialog is modal: only its controls are listed
        set_text("File name", &file.display().to_string()),
        click_done("Save"),
        host_finish(),
    ];
    let want = text.to_string();
    Task::new(
        t,
        lines,
        Box::new(move |_| eventually(Duration::from_secs(5), || file_has(&file, &want))),
    )
}

fn kate_save_a(ctx: &Ctx) -> Task {
    kate_save(ctx, "Dear team", "letter.txt")
}

fn kate_save_b(ctx: &Ctx) -> Task {
    kate_save(ctx, "let answer = 42;", "main.rs")
}

// --- Dolphin (KDE's file manager) ---------------------------------------------------------

/// A folder made through Dolphin's hamburger menu (issue 46: its Qt popups were never
/// observed). Dolphin is started with `--new-window` (else it hands the folder to a Dolphin
/// already on the session bus).
fn dolphin_new_folder(ctx: &Ctx) -> Task {
    let t = "Make a new folder called Receipts in my Documents folder with the file manager";
    let docs = ctx.path("Documents");
    let _ = std::fs::create_dir_all(&docs);
    let _ = std::fs::write(docs.join("report.txt"), "Q3 report\n");
    let lines = vec![
        host_bash(
            "No file manager is open.",
            &format!("dolphin --new-window {} &", docs.display()),
        ),
        host_assign(t, "Documents"),
        click("Open Menu"),
        click("Create New"),
        click("Folder..."),
        set_text(
            &format!("Create new folder in {}/", docs.display()),
            "Receipts",
        ),
        click_done("OK"),
        host_finish(),
    ];
    let made = docs.join("Receipts");
    Task::new(
        t,
        lines,
        Box::new(move |_| {
            eventually(Duration::from_secs(5), || {
                if made.is_dir() {
                    Ok(())
                } else {
                    Err(format!("no folder {}", made.display()))
                }
            })
        }),
    )
}

// --- LibreOffice Calc launched by the host -------------------------------------------------

const LIBREOFFICE_QUIET: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<oor:items xmlns:oor="http://openoffice.org/2001/registry" xmlns:xs="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
<item oor:path="/org.openoffice.Office.Common/Misc"><prop oor:name="FirstRun" oor:op="fuse"><value>false</value></prop></item>
<item oor:path="/org.openoffice.Office.Common/Misc"><prop oor:name="ShowTipOfTheDay" oor:op="fuse"><value>false</value></prop></item>
</oor:items>
"#;

/// No Tip of the Day over the document: a first start of LibreOffice shows one.
fn office_quiet(ctx: &Ctx) {
    let user = ctx.home.join(".config/libreoffice/4/user");
    let _ = std::fs::create_dir_all(&user);
    let _ = std::fs::write(user.join("registrymodifications.xcu"), LIBREOFFICE_QUIET);
}

fn calc_a1(ctx: &Ctx, value: &str) -> Task {
    let t = format!("Put {value} in cell A1 of the sheet and save it");
    let file = ctx.path(&format!("sheet-{}.csv", ctx.id));
    let _ = std::fs::write(&file, "old,1\n");
    office_quiet(ctx);
    let name = file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let lines = vec![
        host_bash(
            "The sheet is not open.",
            &format!(
                "localc --norestore --infilter=CSV:44,34,76,1 {} &",
                file.display()
            ),
        ),
        host_assign(&t, &format!("{name} - LibreOffice Calc")),
        // the fixed ufo waits for the document: A1 is there in the first step
        set_text("A1", value),
        keys("A1", "{ctrl+s}"),
        click_done("Use Text CSV Format"),
        host_finish(),
    ];
    let want = value.to_string();
    Task::new(
        t,
        lines,
        Box::new(move |_| eventually(Duration::from_secs(10), || file_has(&file, &want))),
    )
}

fn calc_a1_a(ctx: &Ctx) -> Task {
    calc_a1(ctx, "Revenue")
}

fn calc_a1_b(ctx: &Ctx) -> Task {
    calc_a1(ctx, "42")
}

/// Every task: (application, id, builder).
type Builder = fn(&Ctx) -> Task;
const TASKS: &[(&str, &str, Builder)] = &[
    ("chromium", "chr-home-button", chr_home_button),
    ("chromium", "chr-search-engine", chr_search_engine),
    ("chromium", "chr-bookmark-folder", chr_bookmark_folder),
    ("chromium", "chr-bookmark-page", chr_bookmark_page),
    ("chromium", "chr-tab-search-off", chr_tab_search_off),
    ("chromium", "chr-slow-form", chr_slow_form),
    ("chromium", "chr-slow-launch", chr_slow_launch),
    ("chromium", "chr-link-slow", chr_link_slow),
    ("chromium", "chr-two-windows", chr_two_windows),
    ("chromium", "chr-popup", chr_popup),
    ("firefox", "ff-form", ff_form),
    ("firefox", "ff-form-text", ff_form_text),
    ("firefox", "ff-slow", ff_slow),
    ("firefox", "ff-pref-ctrl-tab", ff_pref_ctrl_tab),
    ("firefox", "ff-pref-search", ff_pref_search),
    ("thunderbird", "tb-account-name", tb_account_name),
    ("thunderbird", "tb-settings", tb_settings),
    ("thunderbird", "tb-default-client", tb_default_client),
    ("gimp", "gimp-pref-undo", gimp_pref_undo),
    ("gimp", "gimp-pref-threads", gimp_pref_threads),
    ("gimp", "gimp-canvas", gimp_canvas),
    ("gimp", "gimp-scale", gimp_scale),
    ("gimp", "gimp-flip-export", gimp_flip_export),
    ("kcalc", "kcalc-mul", kcalc_mul),
    ("kcalc", "kcalc-sub", kcalc_sub),
    ("featherpad", "fp-save", featherpad_save),
    ("featherpad", "fp-save-as", featherpad_save_as),
    ("featherpad", "fp-replace", featherpad_replace),
    ("idle", "idle-open", idle_open),
    ("mousepad", "mp-replace", mousepad_replace),
    ("abiword", "abi-font-size", abiword_font_size),
    ("impress", "imp-title", impress_title),
    ("gnome-clocks", "clk-add-city", clocks_add_city),
    ("geany", "geany-template", geany_template),
    ("gnome-text-editor", "gte-save-a", gte_save_a),
    ("gnome-text-editor", "gte-save-b", gte_save_b),
    ("kate", "kate-save-a", kate_save_a),
    ("kate", "kate-save-b", kate_save_b),
    ("okular", "okular-zoom", okular_zoom),
    ("kolourpaint", "kp-half", kolourpaint_half),
    ("calc", "calc-a1-text", calc_a1_a),
    ("calc", "calc-a1-number", calc_a1_b),
    ("dolphin", "dolphin-new-folder", dolphin_new_folder),
];

// ---------------------------------------------------------------------------------------
// Running
// ---------------------------------------------------------------------------------------

/// The longest one task may run (ufo's session included).
const TASK_BUDGET: Duration = Duration::from_secs(120);

/// The processes (not this one) of a task: those whose environment holds `HOME=<home>`
/// and those whose command line names a path inside the task's folder `dir` (a browser's
/// profile, a document; Chromium does not keep the HOME it was given).
fn processes_of(home: &Path, dir: &Path) -> Vec<u32> {
    let needle = format!("HOME={}", home.display());
    let inside = dir.display().to_string();
    let me = std::process::id();
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if pid == me {
            continue;
        }
        let env = std::fs::read(e.path().join("environ")).unwrap_or_default();
        let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        let ours = env.split(|b| *b == 0).any(|kv| kv == needle.as_bytes())
            || String::from_utf8_lossy(&cmdline).contains(&inside);
        if !ours {
            continue;
        }
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        let zombie = stat
            .rsplit(')')
            .next()
            .is_some_and(|s| s.trim_start().starts_with('Z'));
        if !zombie {
            out.push(pid);
        }
    }
    out
}

/// End every process of the task (by pid): SIGTERM, then SIGKILL after 8 s.
fn close_apps(home: &Path, dir: &Path) {
    ufo_desktop::testing::end_processes(|| processes_of(home, dir), Duration::from_secs(8));
}

/// The outcome of one task.
struct Outcome {
    app: &'static str,
    id: &'static str,
    instruction: String,
    passed: bool,
    exit: Option<i32>,
    seconds: f64,
    reason: String,
}

/// Why ufo's session went wrong, from its trajectory: the session's end reason and the
/// last failed action's message.
fn session_story(out: &Path, stderr: &str) -> String {
    let text = std::fs::read_to_string(out.join("events.jsonl")).unwrap_or_default();
    let events: Vec<Value> = text
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let end = events
        .iter()
        .rev()
        .find(|e| e["type"] == "session_end")
        .map(|e| format!("{} ({})", s(&e["status"]), s(&e["reason"])))
        .unwrap_or_else(|| "no session_end".into());
    // the first action that failed is where the task went wrong
    let failed = events
        .iter()
        .filter(|e| e["type"] == "step")
        .find_map(|e| {
            let r = s(&e["result"]);
            r.contains("failed")
                .then(|| format!("first failure at {} seq {}: {r}", s(&e["agent"]), e["seq"]))
        })
        .unwrap_or_default();
    let err_line = stderr
        .lines()
        .rev()
        .find(|l| l.contains("ERROR") || l.contains("error") || l.contains("warning"))
        .unwrap_or_default();
    let mut story = format!("session {end}");
    for extra in [failed, err_line.to_string()] {
        if !extra.is_empty() {
            story.push_str("; ");
            story.push_str(&extra.chars().take(400).collect::<String>());
        }
    }
    story
}

fn run_task(
    app: &'static str,
    id: &'static str,
    build: Builder,
    root: &Path,
    server: &Arc<PageServer>,
) -> Outcome {
    let dir = root.join(id);
    let _ = std::fs::remove_dir_all(&dir);
    let home = dir.join("home");
    std::fs::create_dir_all(&home).expect("task folder");
    let ctx = Ctx {
        id: id.to_string(),
        dir: dir.clone(),
        home: home.clone(),
        server: Arc::clone(server),
    };
    let task = build(&ctx);
    let script = dir.join("script.jsonl");
    std::fs::write(&script, task.lines.join("\n") + "\n").expect("script");
    let cfg = dir.join("ufo.toml");
    std::fs::write(&cfg, &task.config).expect("config");
    let out = dir.join("out");
    let started = Instant::now();
    let child = Command::new(assert_cmd::cargo::cargo_bin("ufo"))
        .args(["run", "--desktop", "live", "--llm"])
        .arg(format!("script:{}", script.display()))
        .arg("--config")
        .arg(&cfg)
        .arg("--out")
        .arg(&out)
        .args(["--confirm", "yes"])
        .arg(&task.instruction)
        .current_dir(&dir)
        .env("HOME", &home)
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
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => {
            return Outcome {
                app,
                id,
                instruction: task.instruction,
                passed: false,
                exit: None,
                seconds: 0.0,
                reason: format!("ufo does not start: {e}"),
            }
        }
    };
    // stderr is read on a thread so a chatty session cannot block on a full pipe
    let mut err_pipe = child.stderr.take();
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        if let Some(p) = err_pipe.as_mut() {
            let _ = p.read_to_string(&mut text);
        }
        text
    });
    let mut exit = None;
    let mut timed_out = false;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => {
                exit = status.code();
                break;
            }
            Ok(None) if started.elapsed() > TASK_BUDGET => {
                let _ = child.kill();
                let _ = child.wait();
                timed_out = true;
                break;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(200)),
            Err(_) => break,
        }
    }
    let stderr = reader.join().unwrap_or_default();
    let _ = std::fs::write(dir.join("stderr.txt"), &stderr);
    let checked = if task.after_close {
        close_apps(&home, &dir);
        eventually(Duration::from_secs(5), || (task.check)(&ctx))
    } else {
        let r = eventually(Duration::from_secs(3), || (task.check)(&ctx));
        close_apps(&home, &dir);
        r
    };
    let seconds = started.elapsed().as_secs_f64();
    let story = session_story(&out, &stderr);
    let (passed, reason) = match (&checked, timed_out) {
        (Ok(()), false) if exit == Some(0) => (true, String::new()),
        (Ok(()), false) => (
            false,
            format!("the result is there but ufo exited {exit:?}: {story}"),
        ),
        (Ok(()), true) => (false, format!("ufo ran over {TASK_BUDGET:?}: {story}")),
        (Err(e), true) => (
            false,
            format!("ufo ran over {TASK_BUDGET:?}; check: {e}; {story}"),
        ),
        (Err(e), false) => (false, format!("check: {e}; {story}")),
    };
    Outcome {
        app,
        id,
        instruction: task.instruction,
        passed,
        exit,
        seconds,
        reason,
    }
}

/// The tasks `UFO_TASKSET` selects (application names or task ids, comma-separated; all
/// when unset or empty).
fn selected() -> Vec<(&'static str, &'static str, Builder)> {
    let filter = std::env::var("UFO_TASKSET").unwrap_or_default();
    let wanted: Vec<&str> = filter
        .split(',')
        .map(str::trim)
        .filter(|w| !w.is_empty())
        .collect();
    TASKS
        .iter()
        .filter(|(app, id, _)| wanted.is_empty() || wanted.iter().any(|w| w == app || w == id))
        .copied()
        .collect()
}

#[test]
fn the_task_set_passes() {
    if !require_live("the_task_set_passes") {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let tasks = selected();
    assert!(
        !tasks.is_empty(),
        "UFO_TASKSET selects no task; use application names or task ids of: {:?}",
        TASKS
            .iter()
            .map(|(a, i, _)| format!("{a}/{i}"))
            .collect::<Vec<_>>()
    );
    let root = repo_root().join("target").join("taskset");
    std::fs::create_dir_all(&root).expect("target/taskset");
    let results_path = root.join("results.jsonl");
    let mut results = std::fs::File::create(&results_path).expect("results file");
    let server = Arc::new(start_server());
    let mut outcomes = Vec::new();
    for (app, id, build) in tasks {
        let o = run_task(app, id, build, &root, &server);
        let _ = writeln!(
            std::io::stderr(),
            "task {id:<22} {} {:>5.1}s {}",
            if o.passed { "pass" } else { "FAIL" },
            o.seconds,
            o.reason
        );
        let _ = writeln!(
            results,
            "{}",
            json!({"id": o.id, "app": o.app, "instruction": o.instruction,
                   "passed": o.passed, "exit": o.exit, "seconds": o.seconds,
                   "reason": o.reason})
        );
        outcomes.push(o);
    }
    let mut per_app: Vec<(&str, usize, usize)> = Vec::new();
    let mut index: HashMap<&str, usize> = HashMap::new();
    for o in &outcomes {
        let i = *index.entry(o.app).or_insert_with(|| {
            per_app.push((o.app, 0, 0));
            per_app.len() - 1
        });
        per_app[i].1 += 1;
        per_app[i].2 += usize::from(o.passed);
    }
    let mut report = String::from("\n| application | tasks | passed |\n|---|---|---|\n");
    for (app, n, p) in &per_app {
        report.push_str(&format!("| {app} | {n} | {p} |\n"));
    }
    let total = outcomes.len();
    let passed = outcomes.iter().filter(|o| o.passed).count();
    report.push_str(&format!(
        "| **all** | {total} | {passed} |\n\nfailed tasks:\n"
    ));
    for o in outcomes.iter().filter(|o| !o.passed) {
        report.push_str(&format!("- {} ({}): {}\n", o.id, o.app, o.reason));
    }
    report.push_str(&format!("results: {}\n", results_path.display()));
    let _ = writeln!(std::io::stderr(), "{report}");
    let rate = passed as f64 / total as f64;
    assert!(
        rate >= PASS_RATE,
        "{passed} of {total} tasks passed ({:.0}%), fewer than {:.0}%:{report}",
        rate * 100.0,
        PASS_RATE * 100.0
    );
}
