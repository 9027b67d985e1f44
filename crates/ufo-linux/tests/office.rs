//! Live tests on LibreOffice (issue 11): ufo must never harm the application it observes.
//!
//! They need a desktop session (`scripts/desktop-session.sh up`, then `source` its env file)
//! and LibreOffice with its GTK3 plugin (`scripts/test-deps.sh install_libreoffice`). Without
//! `DISPLAY` and without `UFO_LIVE_TESTS=1` they are skipped with a printed reason; with
//! `UFO_LIVE_TESTS=1` they always run and fail loudly when something is missing. Each run uses
//! a fresh HOME and a fresh LibreOffice profile (no first-start dialog, no document recovery),
//! and kills every LibreOffice process it started, pass or fail.
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};
mod support;

use support::office::{require_libreoffice_gtk3, OfficeGuard};
use support::*;
use ufo_desktop::testing::require_live;
use ufo_desktop::testing::script::{app_line, ufo_binary};

use ufo_core::Desktop;
use ufo_linux::{LinuxConfig, LinuxDesktop};

/// The tests take turns: they share the screen.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// CPU time (user + system, clock ticks) and resident memory (KiB) of a process.
fn cpu_and_rss(pid: u32) -> (u64, u64) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .unwrap_or_else(|e| panic!("LibreOffice (pid {pid}) is gone: {e}"));
    // fields after the command name: state is field 3, utime 14, stime 15
    let rest: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, r)| r)
        .unwrap_or("")
        .split_whitespace()
        .collect();
    let field = |n: usize| rest.get(n - 3).and_then(|v| v.parse::<u64>().ok()).unwrap();
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let rss = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap();
    (field(14) + field(15), rss)
}

fn clock_ticks() -> u64 {
    std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse().ok())
        .unwrap_or(100)
}

/// Over `span`: the share of one core LibreOffice used, and how much its memory grew (KiB).
fn load_over(pid: u32, span: Duration) -> (f64, i64) {
    let (cpu0, rss0) = cpu_and_rss(pid);
    let t = Instant::now();
    std::thread::sleep(span);
    let (cpu1, rss1) = cpu_and_rss(pid);
    let secs = t.elapsed().as_secs_f64();
    let share = (cpu1 - cpu0) as f64 / clock_ticks() as f64 / secs;
    (share, rss1 as i64 - rss0 as i64)
}

/// Issue 11, test 10(d), item 1: Calc's sheet reports a child for each of its 2^31 cells
/// (manages its descendants, count -1 in the cache). Started while ufo is connected to the
/// bus and then observed, it used to get asked for all its children: the observation came
/// back empty after 6-8 s and LibreOffice stayed at 100% CPU, its memory growing ~70 MB/s.
#[tokio::test(flavor = "multi_thread")]
async fn calc_started_while_connected_stays_idle_when_observed() {
    if !require_live("calc_started_while_connected_stays_idle_when_observed") {
        return;
    }
    let _turn = SERIAL.lock().await;
    let cmd = ufo_linux::default_launch_table(ufo_linux::libreoffice_gtk3_installed())
        .into_iter()
        .find(|(n, _)| n == "spreadsheet")
        .map(|(_, c)| c)
        .expect("the launch table knows spreadsheet");
    require_libreoffice_gtk3();
    let guard = OfficeGuard::new("ufo-office-test-");
    let (home, profile_arg) = (guard.home(), guard.profile_arg().to_string());
    // the process that is connected to the bus when Calc's window is created
    let d = LinuxDesktop::connect(LinuxConfig {
        launch: vec![(
            "calc".into(),
            format!("{cmd} --norestore --nologo {profile_arg}"),
        )],
        launch_env: LinuxConfig::home_env(&home),
        launch_timeout: Duration::from_secs(60),
        ..LinuxConfig::default()
    })
    .await
    .unwrap_or_else(|e| panic!("the live desktop is unavailable: {e}"));

    let w = d
        .launch_app("calc")
        .await
        .unwrap_or_else(|e| panic!("cannot launch Calc: {e}"));
    let pid = w.pid.expect("Calc's window has a pid");
    // LibreOffice finishes its window a few seconds after it shows it, and GTK3 caches the
    // sheet (with -1 children) then: an observation after that is the one that hung
    tokio::time::sleep(Duration::from_secs(4)).await;

    // the window is on the bus before LibreOffice has filled it: observe until its toolbars
    // and menus are there, every observation answering within 10 s
    let fill_deadline = Instant::now() + Duration::from_secs(30);
    let obs = loop {
        let t = Instant::now();
        let obs = tokio::time::timeout(Duration::from_secs(30), d.observe(&w.id))
            .await
            .expect("the observation of Calc did not answer within 30 s")
            .expect("observe Calc");
        let took = t.elapsed();
        // the defect this guards against was an observation hanging until its 30 s timeout;
        // 10 s leaves room for a machine busy with builds (2 s failed under a load of 15)
        assert!(
            took < Duration::from_secs(10),
            "the observation of Calc took {took:?}; {}",
            describe(&obs)
        );
        if obs.controls.len() >= 20 {
            break obs;
        }
        assert!(
            Instant::now() < fill_deadline,
            "Calc's toolbars and menus are missing after 30 s: {}",
            describe(&obs)
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    // GTK3 caches the sheet (with -1 children) a moment after the window is filled: look a
    // few more times, as an agent would, every observation within 2 s
    let mut obs = obs;
    for _ in 0..4 {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let t = Instant::now();
        obs = tokio::time::timeout(Duration::from_secs(30), d.observe(&w.id))
            .await
            .expect("an observation of Calc did not answer within 30 s")
            .expect("observe Calc");
        assert!(
            t.elapsed() < Duration::from_secs(2) && obs.controls.len() >= 20,
            "an observation of Calc took {:?}: {}",
            t.elapsed(),
            describe(&obs)
        );
    }
    // whether the sheet is in GTK3's cache (then it is refused, with a warning) depends on
    // timing; when it is, the warning names it
    if let Some(w) = obs
        .warnings
        .iter()
        .find(|w| w.contains("was not enumerated"))
    {
        assert!(w.contains("Sheet"), "{w}");
    }

    // LibreOffice returns to idle: no core kept busy, no memory growing
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (share, grew_kib) = load_over(pid, Duration::from_secs(2));
    assert!(
        share < 0.3,
        "LibreOffice used {:.0}% of a core in the 2 s after the observation (idle is near 0%)",
        share * 100.0
    );
    assert!(
        grew_kib < 20 * 1024,
        "LibreOffice's memory grew by {} MiB in the 2 s after the observation",
        grew_kib / 1024
    );

    // the window still answers
    let t = Instant::now();
    let again = tokio::time::timeout(Duration::from_secs(30), d.observe(&w.id))
        .await
        .expect("the second observation of Calc did not answer within 30 s")
        .expect("observe Calc again");
    assert!(
        t.elapsed() < Duration::from_secs(2) && again.controls.len() >= 20,
        "the second observation took {:?}: {}",
        t.elapsed(),
        describe(&again)
    );
    let (share, grew_kib) = load_over(pid, Duration::from_secs(2));
    assert!(
        share < 0.3 && grew_kib < 20 * 1024,
        "after the second observation LibreOffice used {:.0}% of a core and grew by {} MiB",
        share * 100.0,
        grew_kib / 1024
    );
}

/// Issue 11, item 9: a LibreOffice without an accessible plugin (`SAL_USE_VCLPLUGIN=gen`) is
/// not on the accessibility bus; the observation says so and how to fix it, instead of
/// suggesting it "was started before accessibility was switched on".
#[tokio::test(flavor = "multi_thread")]
async fn calc_without_its_accessible_plugin_is_diagnosed() {
    if !require_live("calc_without_its_accessible_plugin_is_diagnosed") {
        return;
    }
    let _turn = SERIAL.lock().await;
    assert!(
        ufo_proc::which("libreoffice", None).is_some(),
        "LibreOffice is not installed: run scripts/test-deps.sh install_libreoffice (as root)"
    );
    let mut guard = OfficeGuard::new("ufo-office-test-");
    let d = LinuxDesktop::connect(LinuxConfig::default())
        .await
        .unwrap_or_else(|e| panic!("the live desktop is unavailable: {e}"));
    guard.start("gen", &["--calc"]);
    let w = guard.window(&d, "Calc", Duration::from_secs(60)).await;
    let obs = tokio::time::timeout(Duration::from_secs(30), d.observe(&w.id))
        .await
        .expect("the observation did not answer within 30 s")
        .expect("observe Calc");
    assert!(obs.controls.is_empty(), "{}", describe(&obs));
    let hint = obs
        .warnings
        .iter()
        .find(|w| w.contains("not on the accessibility bus"))
        .unwrap_or_else(|| panic!("no diagnosis: {}", describe(&obs)));
    assert!(
        hint.contains("SAL_USE_VCLPLUGIN=gen")
            && hint.contains("start it with SAL_USE_VCLPLUGIN=gtk3"),
        "{hint}"
    );
    assert!(!hint.contains("before accessibility"), "{hint}");
}

/// A fresh LibreOffice for one test: a temporary HOME and profile, a document made from a
/// flat ODF file with LibreOffice's own converter (before the window starts, same profile),
/// and a desktop whose launch table opens that document.
struct Office {
    d: LinuxDesktop,
    guard: OfficeGuard,
    doc: std::path::PathBuf,
}

async fn office_with(entry: &str, flat_name: &str, flat: &str, to: &str) -> Office {
    let cmd = ufo_linux::default_launch_table(ufo_linux::libreoffice_gtk3_installed())
        .into_iter()
        .find(|(n, _)| n == entry)
        .map(|(_, c)| c)
        .unwrap_or_else(|| panic!("the launch table knows {entry}"));
    require_libreoffice_gtk3();
    let guard = OfficeGuard::new("ufo-office-test-");
    let (home, profile_arg) = (guard.home(), guard.profile_arg().to_string());
    let work = guard.dir().join("docs");
    std::fs::create_dir_all(&work).unwrap();
    let flat_path = work.join(flat_name);
    std::fs::write(&flat_path, flat).unwrap();
    let out = tokio::time::timeout(
        Duration::from_secs(120),
        tokio::process::Command::new("libreoffice")
            .args([
                &profile_arg,
                "--headless",
                "--norestore",
                "--convert-to",
                to,
                "--outdir",
            ])
            .arg(&work)
            .arg(&flat_path)
            .env("HOME", &home)
            .stdin(std::process::Stdio::null())
            .output(),
    )
    .await
    .expect("libreoffice --convert-to did not finish within 120 s")
    .expect("cannot run libreoffice --convert-to");
    let ext = to.split(':').next().unwrap();
    let doc = flat_path.with_extension(ext);
    assert!(
        doc.exists(),
        "libreoffice --convert-to {to} made no file: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let d = LinuxDesktop::connect(LinuxConfig {
        launch: vec![(
            "office".into(),
            format!("{cmd} --norestore --nologo {profile_arg} {}", doc.display()),
        )],
        launch_env: LinuxConfig::home_env(&home),
        launch_timeout: Duration::from_secs(60),
        ..LinuxConfig::default()
    })
    .await
    .unwrap_or_else(|e| panic!("the live desktop is unavailable: {e}"));
    Office { d, guard, doc }
}

impl Office {
    /// Launch the document's window and observe it (30 s at most) until `ready` holds
    /// (LibreOffice fills its window a few seconds after showing it; `what` names the awaited
    /// state): the window and that observation.
    async fn open(
        &self,
        what: &str,
        ready: impl Fn(&ufo_core::WindowObservation) -> bool,
    ) -> (ufo_core::WindowInfo, ufo_core::WindowObservation) {
        let w = self
            .d
            .launch_app("office")
            .await
            .unwrap_or_else(|e| panic!("cannot launch LibreOffice: {e}"));
        let obs = observe_until(&self.d, &w.id, what, Duration::from_secs(30), ready).await;
        (w, obs)
    }

    /// When the document was last written, to tell its next save.
    fn written_at(&self) -> Option<std::time::SystemTime> {
        std::fs::metadata(&self.doc).and_then(|m| m.modified()).ok()
    }
}

/// A scripted session in the window titled `title`: the host assigns it, the app agent
/// answers `app`, the host finishes.
fn session(title: &str, app: Vec<String>) -> Vec<String> {
    let mut lines = vec![answer(
        "host",
        title,
        "",
        serde_json::json!({}),
        "ASSIGN",
        &[title],
    )];
    lines.extend(app);
    lines.push(answer("host", "", "", serde_json::json!({}), "FINISH", &[]));
    lines
}

/// The app agent's answer that clicks the control `name` and goes on.
fn click(name: &str, expect: &[&str]) -> String {
    answer(
        "app",
        name,
        "click",
        serde_json::json!({}),
        "CONTINUE",
        expect,
    )
}

/// The app agent's answer that types `keys` into the control `name`, with `status`.
fn keys(name: &str, keys: &str, status: &str, expect: &[&str]) -> String {
    answer(
        "app",
        name,
        "type_keys",
        serde_json::json!({ "keys": keys }),
        status,
        expect,
    )
}

/// The app agent's answers that type `text` into the shape `shape` (where a click left the
/// text cursor) and save the deck, expecting the text shown.
fn type_and_save_deck(shape: &str, text: &str) -> Vec<String> {
    let shown = format!("\"{text}\"");
    vec![
        keys(shape, text, "CONTINUE", &[]),
        keys(
            "deck - LibreOffice Presentation",
            "{ESC}{ctrl+s}",
            "FINISH",
            &[&shown],
        ),
    ]
}

/// The saved two-slide deck's `content.xml` holds `text` in slide 2's shape `shape` and not
/// on slide 1.
fn assert_only_slide_two_holds(xml: &str, shape: &str, text: &str, ufo_said: &str) {
    let pages: Vec<&str> = xml.split("<draw:page ").skip(1).collect();
    assert_eq!(pages.len(), 2, "{xml}");
    let frame = slide_frame(pages[1], shape);
    assert!(frame.contains(text), "{}\nufo said:\n{ufo_said}", pages[1]);
    assert!(!pages[0].contains(text), "{}", pages[0]);
}

/// One member of a zip file, read by `unzip` (not by ufo).
fn unzip(file: &std::path::Path, member: &str) -> String {
    let out = std::process::Command::new("unzip")
        .arg("-p")
        .arg(file)
        .arg(member)
        .output()
        .expect("cannot run unzip (install it)");
    assert!(
        out.status.success(),
        "unzip -p {} {member} failed",
        file.display()
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// One answer of the scripted model: the host's (`text` names a window) or the app agent's
/// (`text` names a control), with the texts its prompt must show (`expect`).
fn answer(
    agent: &str,
    text: &str,
    function: &str,
    args: serde_json::Value,
    status: &str,
    expect: &[&str],
) -> String {
    let response = if agent == "host" {
        serde_json::json!({"Observation": "the desktop", "Thought": "next sub-task",
            "Current Sub-Task": "the user's request", "ControlText": text, "Status": status})
    } else {
        serde_json::json!({"Observation": "the window", "Thought": "next step", "ControlLabel": "",
            "ControlText": text, "Function": function, "Args": args, "Status": status})
    };
    serde_json::json!({"agent": agent, "response": response, "expect": expect}).to_string()
}

/// Run `ufo run --desktop live --llm script:FILE` with these answers (written to `work`) and
/// this request; its stderr, after checking that it finished (exit code 0) within 5 minutes.
async fn run_ufo_script(work: &std::path::Path, lines: &[String], request: &str) -> String {
    let script = work.join("script.jsonl");
    std::fs::write(&script, lines.join("\n")).unwrap();
    let run = tokio::time::timeout(
        Duration::from_secs(300),
        tokio::process::Command::new(ufo_binary())
            .args(["run", "--desktop", "live", "--llm"])
            .arg(format!("script:{}", script.display()))
            .arg("--out")
            .arg(work.join("out"))
            .arg(request)
            .env_remove("UFO_LLM")
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("ufo run did not finish within 5 minutes")
    .expect("cannot run ufo");
    let stderr = String::from_utf8_lossy(&run.stderr).into_owned();
    assert_eq!(run.status.code(), Some(0), "ufo run failed:\n{stderr}");
    // every step found its control by name and did its action
    assert!(
        !stderr.contains("action failed"),
        "a step of ufo run failed:\n{stderr}"
    );
    stderr
}

/// The title a window shows now (LibreOffice names its window "LibreOffice" first and after
/// the document once it is loaded).
async fn title_now(d: &LinuxDesktop, id: &ufo_core::WindowId) -> String {
    d.windows()
        .await
        .expect("list windows")
        .into_iter()
        .find(|w| w.id == *id)
        .map(|w| w.title)
        .unwrap_or_else(|| panic!("window {id} is gone"))
}

/// Wait (30 s at most) until `doc` has been written again (its time differs from `before`)
/// and `unzip` reads `member` from it; that member's text.
async fn saved_member(
    doc: &std::path::Path,
    before: Option<std::time::SystemTime>,
    member: &str,
    ufo_said: &str,
) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let now = std::fs::metadata(doc).and_then(|m| m.modified()).ok();
        if now.is_some() && now != before {
            let x = std::process::Command::new("unzip")
                .arg("-p")
                .arg(doc)
                .arg(member)
                .output()
                .expect("cannot run unzip (install it)");
            if x.status.success() && !x.stdout.is_empty() {
                return String::from_utf8_lossy(&x.stdout).into_owned();
            }
        }
        assert!(
            Instant::now() < deadline,
            "{} was not saved with a {member} within 30 s; ufo said:\n{ufo_said}",
            doc.display()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Issue 11, test 10(b), items 3 and 6: a scripted `ufo run` in a fresh Writer window
/// (rectangles reported 25 px too high) types a paragraph into the document, selects its last
/// word, presses the "Bold" toggle button by name (it has no action: it is clicked at its
/// corrected centre), saves with Ctrl+S sent to the named paragraph and keeps the Word
/// format by naming the button of LibreOffice's question. unzip finds the word in a bold run
/// of word/document.xml and the rest of the paragraph in a run that is not bold.
#[tokio::test(flavor = "multi_thread")]
async fn ufo_bolds_one_word_by_name_in_writer_and_saves_docx() {
    if !require_live("ufo_bolds_one_word_by_name_in_writer_and_saves_docx") {
        return;
    }
    let _turn = SERIAL.lock().await;
    let flat = r#"<?xml version="1.0" encoding="UTF-8"?>
<office:document xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" office:version="1.3" office:mimetype="application/vnd.oasis.opendocument.text">
<office:body><office:text><text:p>First line of the letter.</text:p></office:text></office:body></office:document>"#;
    let o = office_with(
        "word processor",
        "letter.fodt",
        flat,
        "docx:MS Word 2007 XML",
    )
    .await;
    let (w, _) = o
        .open("the paragraph and the Bold button", |obs| {
            obs.controls
                .iter()
                .any(|c| c.role == "paragraph" && c.name == "First line of the letter.")
                && obs
                    .controls
                    .iter()
                    .any(|c| c.role == "toggle button" && c.name == "Bold")
        })
        .await;
    let title = title_now(&o.d, &w.id).await;
    let before = o.written_at();
    let lines = session(
        &title,
        vec![
            // the document, the paragraph and the font boxes are listed by name
            keys(
                "letter - LibreOffice Document",
                "{ctrl+END}{ENTER}Hello brave world{ctrl+shift+LEFT}",
                "CONTINUE",
                &[
                    "document text \"letter - LibreOffice Document\"",
                    "paragraph \"First line of the letter.\"",
                    "toggle button \"Bold\"",
                    "text \"Font Name\"",
                    "text \"Font Size\"",
                    "text \"Paragraph Style\"",
                ],
            ),
            answer(
                "app",
                "Bold",
                "click",
                serde_json::json!({}),
                "SCREENSHOT",
                &["paragraph \"Hello brave world\"", "toggle button \"Bold\""],
            ),
            // the Bold button shows it is pressed (LibreOffice gives its state as a value)
            keys(
                "Hello brave world",
                "{ctrl+s}",
                "SCREENSHOT",
                &[
                    "paragraph \"Hello brave world\"",
                    "toggle button \"Bold\" value: \"checked\"",
                ],
            ),
            answer(
                "app",
                "Use Word 2007\u{2013}365 Format",
                "click",
                serde_json::json!({}),
                "FINISH",
                &["button \"Use Word 2007\u{2013}365 Format\""],
            ),
        ],
    );
    let said = run_ufo_script(
        o.guard.dir(),
        &lines,
        "In Writer add a paragraph \"Hello brave world\", make \"world\" bold and save as docx",
    )
    .await;
    let xml = saved_member(&o.doc, before, "word/document.xml", &said).await;
    // the run that holds "world" is bold; the one before it is not
    let runs: Vec<&str> = xml.split("<w:r>").skip(1).collect();
    let world = runs
        .iter()
        .find(|r| r.contains(">world<"))
        .unwrap_or_else(|| panic!("no run with the word: {xml}"));
    assert!(world.contains("<w:b/>"), "the word is not bold: {world}");
    let start = runs
        .iter()
        .find(|r| r.contains("Hello brave"))
        .unwrap_or_else(|| panic!("no run with the start: {xml}"));
    assert!(
        !start.contains("<w:b/>"),
        "more than the word is bold: {start}"
    );
    let first = runs
        .iter()
        .find(|r| r.contains("First line of the letter."))
        .unwrap_or_else(|| panic!("the first paragraph is gone: {xml}"));
    assert!(
        !first.contains("<w:b/>"),
        "the first paragraph is bold: {first}"
    );
    drop(o.guard);
}

/// Issue 11, test 10(c), item 4: in a two-slide presentation a scripted `ufo run` chooses
/// slide 2 in the slides panel by name, sets its title by naming the title's paragraph
/// (set_text), saves with Ctrl+S sent to the new title and keeps the PowerPoint format by
/// naming the button of LibreOffice's question. unzip finds the new title in
/// ppt/slides/slide2.xml and slide 1 unchanged.
#[tokio::test(flavor = "multi_thread")]
async fn ufo_sets_the_title_of_slide_two_in_impress_and_saves_pptx() {
    if !require_live("ufo_sets_the_title_of_slide_two_in_impress_and_saves_pptx") {
        return;
    }
    let _turn = SERIAL.lock().await;
    let slide = |n: &str, title: &str| {
        format!(
            r#"<draw:page draw:name="{n}" draw:master-page-name="Default"><draw:frame presentation:class="title" svg:x="1.4cm" svg:y="0.8cm" svg:width="25cm" svg:height="3cm"><draw:text-box><text:p>{title}</text:p></draw:text-box></draw:frame><draw:frame presentation:class="outline" svg:x="1.4cm" svg:y="4.5cm" svg:width="25cm" svg:height="10cm"><draw:text-box><text:p>Body of {n}</text:p></draw:text-box></draw:frame></draw:page>"#
        )
    };
    let flat = format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<office:document xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" xmlns:presentation="urn:oasis:names:tc:opendocument:xmlns:presentation:1.0" xmlns:svg="urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0" office:version="1.3" office:mimetype="application/vnd.oasis.opendocument.presentation">
<office:body><office:presentation>{}{}</office:presentation></office:body></office:document>"#,
        slide("Slide1", "Opening"),
        slide("Slide2", "Old title")
    );
    let o = office_with(
        "presentation",
        "deck.fodp",
        &flat,
        "pptx:Impress MS PowerPoint 2007 XML",
    )
    .await;
    let (w, _) = o
        .open("the slides panel", |obs| {
            obs.controls.iter().any(|c| c.name == "Slide 2")
                && obs
                    .controls
                    .iter()
                    .any(|c| c.role == "paragraph" && c.name == "Opening")
        })
        .await;
    let title = title_now(&o.d, &w.id).await;
    let before = o.written_at();
    let lines = session(
        &title,
        vec![
            // the slides panel's slides, slide 1's title and the layouts are listed by name
            click(
                "Slide 2",
                &[
                    "\"Slide 1\"",
                    "\"Slide 2\"",
                    "paragraph \"Opening\"",
                    "list item \"Title, Content\"",
                ],
            ),
            answer(
                "app",
                "Old title",
                "set_text",
                serde_json::json!({"text": "Quarterly results"}),
                "CONTINUE",
                &["paragraph \"Old title\""],
            ),
            keys(
                "Quarterly results",
                "{ctrl+s}",
                "SCREENSHOT",
                &["paragraph \"Quarterly results\""],
            ),
            answer(
                "app",
                "Use PowerPoint 2007\u{2013}365 Format",
                "click",
                serde_json::json!({}),
                "FINISH",
                &["button \"Use PowerPoint 2007\u{2013}365 Format\""],
            ),
        ],
    );
    let said = run_ufo_script(
        o.guard.dir(),
        &lines,
        "In Impress set the title of slide 2 to \"Quarterly results\" and save",
    )
    .await;
    let xml = saved_member(&o.doc, before, "ppt/slides/slide2.xml", &said).await;
    assert!(xml.contains("Quarterly results"), "{xml}");
    assert!(!xml.contains("Old title"), "{xml}");
    let first = unzip(&o.doc, "ppt/slides/slide1.xml");
    assert!(
        first.contains("Opening") && !first.contains("Quarterly results"),
        "{first}"
    );
    drop(o.guard);
}

/// The live desktop and Calc started on a new document in a temporary folder (its path is
/// returned for the files a test saves there; the folder lives as long as the guard).
async fn desktop_with_calc() -> (
    LinuxDesktop,
    ufo_core::WindowInfo,
    OfficeGuard,
    std::path::PathBuf,
) {
    let d = LinuxDesktop::connect(LinuxConfig::default())
        .await
        .unwrap_or_else(|e| panic!("the live desktop is unavailable: {e}"));
    require_libreoffice_gtk3();
    let mut guard = OfficeGuard::new("ufo-office-test-");
    guard.start("gtk3", &["--calc"]);
    let w = guard.window(&d, "Calc", Duration::from_secs(60)).await;
    // LibreOffice fills its window (toolbars, then the sheet) a few seconds after showing it
    observe_until(
        &d,
        &w.id,
        "Calc's sheet on the bus",
        Duration::from_secs(60),
        |o| o.controls.iter().any(|c| c.role == "table") && o.controls.len() >= 20,
    )
    .await;
    let work = guard.dir().to_path_buf();
    (d, w, guard, work)
}

/// Issue 11, test 10(a) and item 2: a scripted `ufo run` fills A1:A5 with 1..5 and A6 with
/// `=SUM(A1:A5)`, naming every cell by its address (A2..A6 are empty, so not listed: they
/// resolve through the sheet), and saves the sheet as xlsx through the Save As dialog and
/// the "Keep current format" question, naming every control, never coordinates. The file
/// is read back by unzip, not by ufo.
#[tokio::test(flavor = "multi_thread")]
async fn ufo_fills_cells_by_address_sums_them_and_saves_xlsx() {
    if !require_live("ufo_fills_cells_by_address_sums_them_and_saves_xlsx") {
        return;
    }
    let _turn = SERIAL.lock().await;
    let ufo = ufo_binary();
    let (d, w, _guard, work) = desktop_with_calc().await;
    let pid = w.pid.expect("Calc's window has a pid");
    // the empty sheet: its first cell is listed, the rest are summarised on the sheet
    let obs = d.observe(&w.id).await.expect("observe Calc");
    let sheet = obs
        .controls
        .iter()
        .find(|c| c.role == "table")
        .unwrap_or_else(|| panic!("no sheet: {}", describe(&obs)));
    assert!(
        sheet
            .value
            .as_deref()
            .is_some_and(|v| v.contains("name any cell by its address")),
        "{sheet:?}"
    );
    for name in ["A1", "Name Box", "Input line", "Sheet1"] {
        assert!(
            obs.controls.iter().any(|c| c.name == name),
            "{name} is not listed: {:?}",
            obs.controls.iter().map(|c| &c.name).collect::<Vec<_>>()
        );
    }
    let cells = obs
        .controls
        .iter()
        .filter(|c| c.role == "table cell")
        .count();
    assert!(cells <= 3, "empty cells are listed one by one: {cells}");

    let file = work.join("sum.xlsx");
    let out = work.join("out");
    let script = work.join("script.jsonl");
    let mut lines = vec![serde_json::json!({"agent": "host", "response": {
        "Observation": "Calc is open.", "Thought": "Assign.",
        "Current Sub-Task": "Fill A1:A5, sum them in A6, save as xlsx",
        "ControlText": w.title, "Status": "ASSIGN"}})
    .to_string()];
    for (i, v) in ["1", "2", "3", "4", "5", "=SUM(A1:A5)"].iter().enumerate() {
        lines.push(app_line(
            &format!("A{}", i + 1),
            "",
            "set_text",
            serde_json::json!({ "text": v }),
            "CONTINUE",
        ));
    }
    lines.push(app_line(
        "Sheet Sheet1",
        "",
        "type_keys",
        serde_json::json!({"keys": "{ctrl+shift+s}"}),
        "SCREENSHOT",
    ));
    lines.push(app_line(
        "ODF Spreadsheet (.ods)",
        "",
        "select",
        serde_json::json!({"item": "Excel 2007-365 (.xlsx)"}),
        "CONTINUE",
    ));
    lines.push(app_line(
        "Name",
        "",
        "set_text",
        serde_json::json!({"text": file.display().to_string()}),
        "CONTINUE",
    ));
    lines.push(app_line(
        "Save",
        "",
        "click",
        serde_json::json!({}),
        "CONTINUE",
    ));
    lines.push(app_line(
        "Use Excel 2007\u{2013}365 Format",
        "",
        "click",
        serde_json::json!({}),
        "FINISH",
    ));
    lines.push(
        serde_json::json!({"agent": "host", "response": {
            "Observation": "Saved.", "Thought": "Finish.", "Status": "FINISH"}})
        .to_string(),
    );
    std::fs::write(&script, lines.join("\n")).unwrap();
    let run = tokio::task::spawn_blocking(move || {
        std::process::Command::new(ufo)
            .args([
                "run",
                "--desktop",
                "live",
                "--llm",
                &format!("script:{}", script.display()),
                "--out",
                &out.display().to_string(),
                "Fill A1:A5 with 1 to 5, sum them in A6 and save as sum.xlsx",
            ])
            .env_remove("UFO_LLM")
            .output()
            .expect("ufo runs")
    })
    .await
    .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr).into_owned();
    assert_eq!(run.status.code(), Some(0), "ufo run failed:\n{stderr}");
    // the file, read by unzip
    let deadline = Instant::now() + Duration::from_secs(15);
    let xml = loop {
        let x = std::process::Command::new("unzip")
            .args([
                "-p",
                &file.display().to_string(),
                "xl/worksheets/sheet1.xml",
            ])
            .output()
            .expect("unzip runs");
        if x.status.success() && !x.stdout.is_empty() {
            break String::from_utf8_lossy(&x.stdout).into_owned();
        }
        if Instant::now() > deadline {
            let now = d.observe(&w.id).await.map(|o| {
                o.controls
                    .iter()
                    .map(|c| format!("{} {:?} {:?}", c.role, c.name, c.value))
                    .collect::<Vec<_>>()
            });
            panic!(
                "{} is not an xlsx with a sheet1: {}\nufo said:\n{stderr}\nthe window now: {now:?}",
                file.display(),
                String::from_utf8_lossy(&x.stderr)
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    for (i, v) in (1..=5).enumerate() {
        let cell = format!("<c r=\"A{}\"", i + 1);
        let at = xml
            .find(&cell)
            .unwrap_or_else(|| panic!("no cell A{} in {xml}", i + 1));
        let rest = &xml[at..];
        let end = rest.find("</c>").unwrap_or(rest.len());
        assert!(
            rest[..end].contains(&format!("<v>{v}</v>")),
            "A{} is not {v}: {}",
            i + 1,
            &rest[..end]
        );
    }
    let at = xml
        .find("<c r=\"A6\"")
        .unwrap_or_else(|| panic!("no A6 in {xml}"));
    let a6 = &xml[at..];
    let a6 = &a6[..a6.find("</c>").unwrap_or(a6.len())];
    assert!(
        a6.contains(">SUM(A1:A5)</f>"),
        "A6 has no =SUM(A1:A5): {a6}"
    );
    assert!(a6.contains("<v>15</v>"), "A6 does not show 15: {a6}");
    // read_text on a cell gives its formula and its value; the Name Box selects a range.
    // LibreOffice may still be redrawing the sheet after writing the file: observed until
    // A6 is listed (a failure lists the last observation)
    let obs = observe_until(&d, &w.id, "A6 listed", Duration::from_secs(15), |o| {
        o.controls
            .iter()
            .any(|c| c.role == "table cell" && c.name == "A6")
    })
    .await;
    let a6 = obs
        .controls
        .iter()
        .find(|c| c.role == "table cell" && c.name == "A6")
        .expect("observe_until waited for A6");
    assert_eq!(a6.value.as_deref(), Some("15"));
    let read = d
        .act(&w.id, Some(&a6.id), &ufo_core::UiAction::ReadText)
        .await
        .expect("read_text on A6");
    assert_eq!(read, "=SUM(A1:A5) \u{2192} 15");
    let name_box = obs
        .controls
        .iter()
        .find(|c| c.name == "Name Box")
        .unwrap_or_else(|| panic!("no Name Box: {}", describe(&obs)));
    d.act(
        &w.id,
        Some(&name_box.id),
        &ufo_core::UiAction::SetText {
            text: "A1:B5".into(),
        },
    )
    .await
    .expect("set_text on the Name Box");
    let obs = d.observe(&w.id).await.expect("observe Calc");
    let shown = obs
        .controls
        .iter()
        .find(|c| c.name == "Name Box")
        .and_then(|c| c.value.clone());
    assert_eq!(shown.as_deref(), Some("A1:B5"), "{}", describe(&obs));

    // LibreOffice is idle afterwards
    let (share, grew_kib) = load_over(pid, Duration::from_secs(2));
    assert!(
        share < 0.3 && grew_kib < 20 * 1024,
        "after the session LibreOffice used {:.0}% of a core and grew by {} MiB",
        share * 100.0,
        grew_kib / 1024
    );
}

/// Through pyatspi (not ufo): the texts of the first `rows` cells of columns A and B of the
/// sheet of process `pid`, as `A1,A2,…|B1,B2,…`.
fn calc_columns(pid: u32, rows: usize) -> String {
    let py = r#"
import pyatspi, sys
pid, rows = int(sys.argv[1]), int(sys.argv[2])
for app in pyatspi.Registry.getDesktop(0):
    if app is None or app.get_process_id() != pid: continue
    stack = [app]; n = 0
    while stack and n < 5000:
        o = stack.pop(); n += 1
        try:
            if o.getRole() == pyatspi.ROLE_TABLE and (o.name or '').startswith('Sheet'):
                t = o.queryTable()
                cols = [','.join(t.getAccessibleAt(r, c).queryText().getText(0, -1)
                                 for r in range(rows)) for c in (0, 1)]
                print('|'.join(cols)); sys.exit(0)
            if 0 <= o.childCount <= 500:
                stack.extend(o.getChildAtIndex(i) for i in range(o.childCount))
        except Exception:
            pass
"#;
    let out = std::process::Command::new("timeout")
        .args([
            "30",
            "/usr/bin/python3",
            "-c",
            py,
            &pid.to_string(),
            &rows.to_string(),
        ])
        .output()
        .expect("cannot run python3 with pyatspi");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Keys sent with xdotool to the active window (what a person types meanwhile), then a
/// pause for LibreOffice to handle them.
fn person_types(args: &[&str]) {
    let ok = std::process::Command::new("xdotool")
        .args(args)
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "xdotool {args:?} failed");
    std::thread::sleep(Duration::from_millis(600));
}

/// Issue 48: `set_text` on a cell types straight into it when LibreOffice's cursor is
/// already there (Enter after an entry leaves it on the next cell down) and moves it with
/// the Name Box otherwise. Every entry lands in the cell named, also after the cursor was
/// moved by keys, while another cell is being edited, and while the Name Box holds the
/// focus; read back through pyatspi, column B (where the cursor was moved) stays empty.
#[tokio::test(flavor = "multi_thread")]
async fn an_entry_lands_in_its_cell_wherever_the_cursor_and_the_focus_were() {
    if !require_live("an_entry_lands_in_its_cell_wherever_the_cursor_and_the_focus_were") {
        return;
    }
    let _turn = SERIAL.lock().await;
    // RUST_LOG=ufo_linux::act=debug says how each entry reached its cell
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
    let (d, w, _guard, _) = desktop_with_calc().await;
    let pid = w.pid.expect("Calc's window has a pid");
    let obs = d.observe(&w.id).await.expect("observe Calc");
    let sheet = obs
        .controls
        .iter()
        .find(|c| c.role == "table")
        .map(|c| c.id.clone())
        .unwrap_or_else(|| panic!("no sheet: {}", describe(&obs)));
    let enter = |address: &str, text: &str| {
        let (d, w, id) = (&d, &w, format!("{sheet}#{address}"));
        let (address, text) = (address.to_string(), text.to_string());
        async move {
            d.act(&w.id, Some(&id), &ufo_core::UiAction::SetText { text })
                .await
                .unwrap_or_else(|e| panic!("set_text on {address}: {e}"))
        }
    };
    enter("A1", "1").await;
    // the cursor is on A2 now: typed straight in
    enter("A2", "2").await;
    // the cursor moved by a person, from A3 to B5
    person_types(&["key", "Down", "Down", "Right"]);
    enter("A3", "3").await;
    // a cell being edited where the cursor is (A4): the entry replaces it
    person_types(&["type", "--delay", "0", "77"]);
    enter("A4", "4").await;
    // the Name Box holds the focus (Ctrl+Shift+F5)
    person_types(&["key", "ctrl+shift+F5"]);
    enter("A5", "5").await;
    enter("A6", "6").await;
    assert_eq!(calc_columns(pid, 6), "1,2,3,4,5,6|,,,,,");
}

/// Through pyatspi (not ufo): the names of the shapes of the slide Impress shows now in the
/// window of process `pid` ("PageShape: Slide 2" names the current slide).
fn impress_shapes(pid: u32) -> Vec<String> {
    let py = r#"
import pyatspi, sys
pid = int(sys.argv[1])
for app in pyatspi.Registry.getDesktop(0):
    if app is None or app.get_process_id() != pid: continue
    stack = [app]; n = 0
    while stack and n < 5000:
        o = stack.pop(); n += 1
        try:
            if o.getRoleName() == 'document presentation':
                for i in range(min(o.childCount, 100)):
                    print(o.getChildAtIndex(i).name.strip())
                continue
            if o.getRoleName() in ('document text', 'document spreadsheet', 'table'): continue
            stack.extend(o.getChildAtIndex(i) for i in range(min(o.childCount, 300)))
        except Exception:
            pass
"#;
    let out = std::process::Command::new("timeout")
        .args(["30", "/usr/bin/python3", "-c", py, &pid.to_string()])
        .output()
        .expect("cannot run python3 with pyatspi");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

/// A flat presentation of two slides without names of their own (LibreOffice calls them
/// "Slide 1", "Slide 2"): slide 2 holds two empty text frames named as PowerPoint names its
/// placeholders, filled (an empty placeholder is hit over its whole area, as a filled frame
/// is).
fn untitled_deck() -> String {
    let ns = r#"xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" xmlns:presentation="urn:oasis:names:tc:opendocument:xmlns:presentation:1.0" xmlns:svg="urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0" xmlns:style="urn:oasis:names:tc:opendocument:xmlns:style:1.0" xmlns:fo="urn:oasis:names:tc:opendocument:xmlns:xsl-fo-compatible:1.0""#;
    format!(
        r##"<?xml version="1.0" encoding="UTF-8"?>
<office:document {ns} office:version="1.3" office:mimetype="application/vnd.oasis.opendocument.presentation">
<office:automatic-styles><style:style style:name="filled" style:family="graphic"><style:graphic-properties draw:fill="solid" draw:fill-color="#eeeeee"/></style:style></office:automatic-styles>
<office:body><office:presentation><draw:page draw:master-page-name="Default"><draw:frame presentation:class="title" svg:x="1.4cm" svg:y="0.8cm" svg:width="25cm" svg:height="3cm"><draw:text-box><text:p>Opening</text:p></draw:text-box></draw:frame></draw:page><draw:page draw:master-page-name="Default"><draw:frame draw:name="Title 1" draw:style-name="filled" svg:x="1.4cm" svg:y="0.8cm" svg:width="25cm" svg:height="3cm"><draw:text-box><text:p/></draw:text-box></draw:frame><draw:frame draw:name="Content Placeholder 2" draw:style-name="filled" svg:x="1.4cm" svg:y="4.5cm" svg:width="25cm" svg:height="10cm"><draw:text-box><text:p/></draw:text-box></draw:frame></draw:page></office:presentation></office:body></office:document>"##
    )
}

/// Issue 24, item 2: in a presentation whose slides have no names of their own, a scripted
/// `ufo run` clicks "Slide 2" in the slides panel by the name a person reads there (pyatspi
/// then finds slide 2 shown), then clicks into the shape "Content Placeholder 2" by its name
/// (its paragraph is empty, so only the shape's name can reach it), types a line and saves:
/// unzip finds the line in that shape of slide 2 in content.xml.
#[tokio::test(flavor = "multi_thread")]
async fn ufo_clicks_an_untitled_slide_and_a_placeholder_by_name_in_impress() {
    if !require_live("ufo_clicks_an_untitled_slide_and_a_placeholder_by_name_in_impress") {
        return;
    }
    let _turn = SERIAL.lock().await;
    let flat = untitled_deck();
    let o = office_with("presentation", "deck.fodp", &flat, "odp").await;
    let (w, _) = o
        .open("the slides panel", |obs| {
            obs.controls.iter().any(|c| c.name == "Slide 2")
                && obs.controls.iter().any(|c| c.name == "Opening")
        })
        .await;
    let pid = w.pid.expect("Impress's window has a pid");
    let title = title_now(&o.d, &w.id).await;
    let work = o.guard.dir();
    let lines = session(
        &title,
        vec![answer(
            "app",
            "Slide 2",
            "click",
            serde_json::json!({}),
            "FINISH",
            &["\"Slide 1\"", "\"Slide 2\""],
        )],
    );
    run_ufo_script(work, &lines, "In Impress go to slide 2").await;
    // off ufo: the slide shown is slide 2
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let shapes = impress_shapes(pid);
        if shapes.iter().any(|s| s == "PageShape: Slide 2") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "slide 2 is not shown after clicking it: {shapes:?}"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let before = o.written_at();
    let lines = session(
        &title,
        [
            // the current slide's shapes are listed by their names; typed into the shape,
            // where the click left the text cursor
            vec![click(
                "Content Placeholder 2",
                &["\"Title 1\"", "\"Content Placeholder 2\""],
            )],
            type_and_save_deck("Content Placeholder 2", "Quarterly results"),
        ]
        .concat(),
    );
    // a second session: its own trajectory folder
    let second = work.join("second");
    std::fs::create_dir_all(&second).unwrap();
    let said = run_ufo_script(
        &second,
        &lines,
        "In Impress write \"Quarterly results\" into slide 2's content and save",
    )
    .await;
    let xml = saved_member(&o.doc, before, "content.xml", &said).await;
    assert_only_slide_two_holds(&xml, "Content Placeholder 2", "Quarterly results", &said);
    drop(o.guard);
}

/// Through pyatspi (not ufo): whether Calc's status bar is shown in the window of `pid`.
fn calc_status_bar_shown(pid: u32) -> bool {
    let py = r#"
import pyatspi, sys
pid = int(sys.argv[1])
shown = False
for app in pyatspi.Registry.getDesktop(0):
    if app is None or app.get_process_id() != pid: continue
    stack = [app]; n = 0
    while stack and n < 5000:
        o = stack.pop(); n += 1
        try:
            r = o.getRoleName()
            if r == 'status bar' and o.getState().contains(pyatspi.STATE_SHOWING):
                shown = True
            if r in ('table', 'document spreadsheet', 'menu bar', 'tool bar'): continue
            stack.extend(o.getChildAtIndex(i) for i in range(min(o.childCount, 300)))
        except Exception:
            pass
print('shown' if shown else 'hidden')
"#;
    let out = std::process::Command::new("timeout")
        .args(["30", "/usr/bin/python3", "-c", py, &pid.to_string()])
        .output()
        .expect("cannot run python3 with pyatspi");
    String::from_utf8_lossy(&out.stdout).trim() == "shown"
}

/// Issue 24, item 2: Calc's View menu, opened from the menu bar by a click on it, lists its
/// items (it listed none, where Format's were listed), and a click on one of them ("Status
/// Bar") does what it says: pyatspi finds the status bar hidden.
#[tokio::test(flavor = "multi_thread")]
async fn calc_view_menu_lists_its_items_and_one_is_clicked() {
    if !require_live("calc_view_menu_lists_its_items_and_one_is_clicked") {
        return;
    }
    let _turn = SERIAL.lock().await;
    let (d, w, _guard, _) = desktop_with_calc().await;
    let pid = w.pid.expect("Calc's window has a pid");
    assert!(
        calc_status_bar_shown(pid),
        "Calc starts without its status bar"
    );
    let obs = d.observe(&w.id).await.expect("observe Calc");
    let view = obs
        .controls
        .iter()
        .find(|c| c.role == "menu" && c.name == "View")
        .unwrap_or_else(|| panic!("no View menu: {}", listing(&obs)));
    d.act(
        &w.id,
        Some(&view.id),
        &ufo_core::UiAction::Click {
            button: ufo_core::Button::Left,
            double: false,
        },
    )
    .await
    .expect("click View");
    let obs = observe_until(
        &d,
        &w.id,
        "the View menu's items",
        Duration::from_secs(15),
        |o| {
            ["Formula Bar", "Status Bar", "Sidebar"]
                .iter()
                .all(|n| o.controls.iter().any(|c| &c.name == n))
        },
    )
    .await;
    let item = obs
        .controls
        .iter()
        .find(|c| c.name == "Status Bar")
        .expect("observe_until waited for it");
    d.act(
        &w.id,
        Some(&item.id),
        &ufo_core::UiAction::Click {
            button: ufo_core::Button::Left,
            double: false,
        },
    )
    .await
    .expect("click Status Bar");
    let deadline = Instant::now() + Duration::from_secs(10);
    while calc_status_bar_shown(pid) {
        assert!(
            Instant::now() < deadline,
            "the status bar is still shown after clicking View > Status Bar"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

/// A flat presentation of one slide: a text frame named "Title 1" holding one paragraph
/// ("Old title") and one named "Content Placeholder 2" holding two, as PowerPoint names its
/// placeholders (LibreOffice lists a shape by such a name of its own).
fn titled_deck() -> String {
    r#"<?xml version="1.0" encoding="UTF-8"?>
<office:document xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" xmlns:presentation="urn:oasis:names:tc:opendocument:xmlns:presentation:1.0" xmlns:svg="urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0" office:version="1.3" office:mimetype="application/vnd.oasis.opendocument.presentation">
<office:body><office:presentation><draw:page draw:master-page-name="Default"><draw:frame draw:name="Title 1" svg:x="1.4cm" svg:y="0.8cm" svg:width="25cm" svg:height="3cm"><draw:text-box><text:p>Old title</text:p></draw:text-box></draw:frame><draw:frame draw:name="Content Placeholder 2" svg:x="1.4cm" svg:y="4.5cm" svg:width="25cm" svg:height="10cm"><draw:text-box><text:p>First point</text:p><text:p>Second point</text:p></draw:text-box></draw:frame></draw:page></office:presentation></office:body></office:document>"#
        .to_string()
}

/// The frame of content.xml's first slide named `name` (its XML up to the next frame).
fn slide_frame<'x>(xml: &'x str, name: &str) -> &'x str {
    xml.split("<draw:frame ")
        .find(|f| f.contains(&format!("draw:name=\"{name}\"")))
        .unwrap_or_else(|| panic!("no frame {name:?} in content.xml: {xml}"))
}

/// Issue 46, item 1: a slide's shape and its only paragraph are one control, listed once as
/// `panel "Title 1" value: "Old title"` (a shape of two paragraphs stays apart from them). A
/// scripted `ufo run` sets its text by the text it shows ("Old title"), then again by the
/// shape's name ("Title 1"), and saves: unzip finds the last text in that frame of
/// content.xml, the others nowhere.
#[tokio::test(flavor = "multi_thread")]
async fn an_impress_shape_and_its_paragraph_are_one_control_reached_by_either_name() {
    if !require_live("an_impress_shape_and_its_paragraph_are_one_control_reached_by_either_name") {
        return;
    }
    let _turn = SERIAL.lock().await;
    let o = office_with("presentation", "deck.fodp", &titled_deck(), "odp").await;
    let (w, obs) = o
        .open("the slide's shapes", |obs| {
            obs.controls.iter().any(|c| c.name == "Title 1")
                && obs.controls.iter().any(|c| c.name == "Second point")
        })
        .await;
    // listed once: no line of its own for the paragraph
    let showing: Vec<&ufo_core::Control> = obs
        .controls
        .iter()
        .filter(|c| c.name == "Old title" || c.value.as_deref() == Some("Old title"))
        .collect();
    assert_eq!(showing.len(), 1, "{}", listing(&obs));
    assert_eq!(
        (showing[0].role.as_str(), showing[0].name.as_str()),
        ("panel", "Title 1"),
        "{}",
        listing(&obs)
    );
    // two paragraphs in a shape are two lines
    for p in ["First point", "Second point"] {
        assert!(
            obs.controls
                .iter()
                .any(|c| c.role == "paragraph" && c.name == p),
            "{p}: {}",
            listing(&obs)
        );
    }
    let title = title_now(&o.d, &w.id).await;
    let before = o.written_at();
    let lines = session(
        &title,
        vec![
            answer(
                "app",
                "Old title",
                "set_text",
                serde_json::json!({"text": "Quarterly results"}),
                "CONTINUE",
                &["panel \"Title 1\" value: \"Old title\""],
            ),
            answer(
                "app",
                "Title 1",
                "set_text",
                serde_json::json!({"text": "Final results"}),
                "CONTINUE",
                &["panel \"Title 1\" value: \"Quarterly results\""],
            ),
            keys(
                "deck - LibreOffice Presentation",
                "{ESC}{ctrl+s}",
                "FINISH",
                &["panel \"Title 1\" value: \"Final results\""],
            ),
        ],
    );
    let said = run_ufo_script(
        o.guard.dir(),
        &lines,
        "In Impress set the title to \"Final results\" and save",
    )
    .await;
    let xml = saved_member(&o.doc, before, "content.xml", &said).await;
    let frame = slide_frame(&xml, "Title 1");
    assert!(
        frame.contains("Final results"),
        "{frame}\nufo said:\n{said}"
    );
    for gone in ["Old title", "Quarterly results"] {
        assert!(!xml.contains(gone), "{gone} is still in {xml}");
    }
    drop(o.guard);
}

/// The automatic styles of content.xml (`style:name` → its XML) a frame's XML refers to,
/// joined: what its shape and paragraphs look like.
fn styles_of(xml: &str, frame: &str) -> String {
    let mut names = Vec::new();
    for attr in [
        "draw:style-name=\"",
        "text:style-name=\"",
        "draw:text-style-name=\"",
    ] {
        for part in frame.split(attr).skip(1) {
            if let Some(end) = part.find('"') {
                names.push(part[..end].to_string());
            }
        }
    }
    names
        .iter()
        .filter_map(|n| {
            let at = xml.find(&format!("<style:style style:name=\"{n}\""))?;
            let rest = &xml[at..];
            let end = rest.find("</style:style>").unwrap_or(rest.len());
            Some(rest[..end].to_string())
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Issue 46, item 2: with Impress's Format ▸ Align Text open, "Right" names the submenu's
/// radio menu item and the sidebar's button "Right" (both listed, as the prompt shows); a
/// scripted `ufo run` clicks "Right" by name, and the open menu's item is the one pressed:
/// unzip finds the title's paragraph right-aligned in the saved content.xml (it was not).
/// The sidebar's button would right-align it too: which of the two was pressed is ufo's
/// account only (the step reached label "Right" without "matches 2 controls").
#[tokio::test(flavor = "multi_thread")]
async fn an_open_submenus_item_wins_over_a_sidebar_button_of_its_name_in_impress() {
    if !require_live("an_open_submenus_item_wins_over_a_sidebar_button_of_its_name_in_impress") {
        return;
    }
    let _turn = SERIAL.lock().await;
    let o = office_with("presentation", "deck.fodp", &titled_deck(), "odp").await;
    let original = unzip(&o.doc, "content.xml");
    let aligned = |styles: &str| {
        styles.contains("fo:text-align=\"end\"") || styles.contains("fo:text-align=\"right\"")
    };
    assert!(
        !aligned(&styles_of(&original, slide_frame(&original, "Title 1"))),
        "the title starts right-aligned: {original}"
    );
    let (w, _) = o
        .open("the slide's shapes", |obs| {
            obs.controls.iter().any(|c| c.name == "Title 1")
        })
        .await;
    let title = title_now(&o.d, &w.id).await;
    let before = o.written_at();
    let lines = session(
        &title,
        vec![
            // the slide first (a fresh LibreOffice window's rectangles are right once it was
            // clicked: a first click on the title was once aimed 25 px above it)
            click("Slide 1", &["panel \"Slide 1\""]),
            click("Title 1", &["panel \"Title 1\""]),
            // the sidebar has a toggle button "Format" too: the menu is named by its line
            answer(
                "app",
                "menu \"Format\"",
                "click",
                serde_json::json!({}),
                "CONTINUE",
                &["menu \"Format\""],
            ),
            click("Align Text", &["menu \"Align Text\""]),
            click("Right", &["radio menu item \"Right\"", "button \"Right\""]),
            keys(
                "deck - LibreOffice Presentation",
                "{ESC}{ESC}{ctrl+s}",
                "FINISH",
                &[],
            ),
        ],
    );
    let said = run_ufo_script(
        o.guard.dir(),
        &lines,
        "In Impress align the title to the right with Format > Align Text and save",
    )
    .await;
    // ufo's own account: one control, no ambiguity (run_ufo_script saw no failed action)
    assert!(
        said.contains("Right | result: clicked \"Right\""),
        "ufo said:\n{said}"
    );
    let xml = saved_member(&o.doc, before, "content.xml", &said).await;
    let frame = slide_frame(&xml, "Title 1");
    let styles = styles_of(&xml, frame);
    assert!(
        aligned(&styles),
        "the title is not right-aligned: {frame}\n{styles}\nufo said:\n{said}"
    );
    drop(o.guard);
}

/// Issue 46, item 3: Impress exports a clicked slide's shapes a while after its window
/// settled, and an observation right after a click on a slide of the slides panel listed the
/// slide before (1 in 2 runs of a task). Slides are switched back and forth by ufo's clicks,
/// each followed by one observation (no retry): it lists the shapes pyatspi finds on the
/// slide shown (and pyatspi finds the clicked slide shown), never the other slide's.
#[tokio::test(flavor = "multi_thread")]
async fn an_observation_after_a_slide_click_lists_that_slides_shapes() {
    if !require_live("an_observation_after_a_slide_click_lists_that_slides_shapes") {
        return;
    }
    let _turn = SERIAL.lock().await;
    let frame = |name: &str, text: &str, y: &str| {
        format!(
            r#"<draw:frame draw:name="{name}" svg:x="1.4cm" svg:y="{y}" svg:width="25cm" svg:height="3cm"><draw:text-box><text:p>{text}</text:p></draw:text-box></draw:frame>"#
        )
    };
    let flat = format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<office:document xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" xmlns:presentation="urn:oasis:names:tc:opendocument:xmlns:presentation:1.0" xmlns:svg="urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0" office:version="1.3" office:mimetype="application/vnd.oasis.opendocument.presentation">
<office:body><office:presentation><draw:page draw:master-page-name="Default">{}</draw:page><draw:page draw:master-page-name="Default">{}{}</draw:page></office:presentation></office:body></office:document>"#,
        frame("Title 1", "Opening", "0.8cm"),
        frame("Chart Notes 3", "Second slide", "0.8cm"),
        frame("Content Placeholder 4", "Body of two", "4.5cm"),
    );
    let o = office_with("presentation", "deck.fodp", &flat, "odp").await;
    let (w, _) = o
        .open("the slides panel", |obs| {
            obs.controls.iter().any(|c| c.name == "Slide 2")
                && obs.controls.iter().any(|c| c.name == "Title 1")
        })
        .await;
    let pid = w.pid.expect("Impress's window has a pid");
    let shapes_of = |slide: &str| -> &[&str] {
        if slide == "Slide 1" {
            &["Title 1"]
        } else {
            &["Chart Notes 3", "Content Placeholder 4"]
        }
    };
    for slide in [
        "Slide 2", "Slide 1", "Slide 2", "Slide 1", "Slide 2", "Slide 1",
    ] {
        let obs = o.d.observe(&w.id).await.expect("observe Impress");
        let item = obs
            .controls
            .iter()
            .find(|c| c.role == "panel" && c.name == slide)
            .unwrap_or_else(|| panic!("no {slide} in the slides panel: {}", listing(&obs)));
        o.d.act(
            &w.id,
            Some(&item.id),
            &ufo_core::UiAction::Click {
                button: ufo_core::Button::Left,
                double: false,
            },
        )
        .await
        .unwrap_or_else(|e| panic!("click {slide}: {e}"));
        let obs = o.d.observe(&w.id).await.expect("observe Impress");
        // off ufo: the slide shown, and its shapes
        let shown = impress_shapes(pid);
        assert!(
            shown.iter().any(|s| *s == format!("PageShape: {slide}")),
            "{slide} is not shown after clicking it: {shown:?}"
        );
        let listed = |n: &str| {
            obs.controls
                .iter()
                .any(|c| c.role == "panel" && c.name == n)
        };
        for s in shapes_of(slide) {
            assert!(shown.iter().any(|x| x == s), "pyatspi: {shown:?}");
            assert!(
                listed(s),
                "the observation right after clicking {slide} lacks its shape {s:?}: {}",
                listing(&obs)
            );
        }
        let other = if slide == "Slide 1" {
            "Slide 2"
        } else {
            "Slide 1"
        };
        for s in shapes_of(other) {
            assert!(
                !listed(s),
                "the observation right after clicking {slide} lists {other}'s shape {s:?}: {}",
                listing(&obs)
            );
        }
    }
    drop(o.guard);
}

/// Issue 46, item 3: one scripted `ufo run` clicks "Slide 2" in the slides panel and, in the
/// very next step, clicks into slide 2's "Content Placeholder 2" by name and types a line
/// (a task once failed here 1 in 2 runs: the step after the slide's click was shown slide 1,
/// "no control matches … Content Placeholder 2"). unzip finds the line in that shape of
/// slide 2 in the saved content.xml.
#[tokio::test(flavor = "multi_thread")]
async fn ufo_types_into_a_placeholder_right_after_switching_slides_in_impress() {
    if !require_live("ufo_types_into_a_placeholder_right_after_switching_slides_in_impress") {
        return;
    }
    let _turn = SERIAL.lock().await;
    let o = office_with("presentation", "deck.fodp", &untitled_deck(), "odp").await;
    let (w, _) = o
        .open("the slides panel", |obs| {
            obs.controls.iter().any(|c| c.name == "Slide 2")
                && obs.controls.iter().any(|c| c.name == "Opening")
        })
        .await;
    let title = title_now(&o.d, &w.id).await;
    let before = o.written_at();
    let lines = session(
        &title,
        [
            vec![
                click("Slide 2", &["\"Slide 2\""]),
                click("Content Placeholder 2", &["\"Content Placeholder 2\""]),
            ],
            type_and_save_deck("Content Placeholder 2", "Quarterly results"),
        ]
        .concat(),
    );
    let said = run_ufo_script(
        o.guard.dir(),
        &lines,
        "In Impress write \"Quarterly results\" into slide 2's content and save",
    )
    .await;
    let xml = saved_member(&o.doc, before, "content.xml", &said).await;
    assert_only_slide_two_holds(&xml, "Content Placeholder 2", "Quarterly results", &said);
    drop(o.guard);
}
