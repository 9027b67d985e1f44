//! Tests of what a person sees: `ufo report` (a self-contained HTML replay, checked as text
//! and in headless Chromium), `ufo runs`, the terminal output of `ufo run` (progress lines,
//! verbosity, `ufo.log`), and the interactive CONFIRM / PENDING prompts driven through a
//! pseudo-terminal.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command as StdCommand;
use std::time::{Duration, Instant};

use common::procs;
use common::*;
use nix::sys::signal::Signal;
use serde_json::Value;

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// Every scenario folder, plus the Word→Excel example, with the flags its test uses.
fn all_cases() -> Vec<(PathBuf, Vec<&'static str>)> {
    let mut cases = vec![(repo_root().join("examples").join("word_excel"), vec![])];
    let root = repo_root().join("tests").join("scenarios");
    let mut names: Vec<String> = std::fs::read_dir(&root)
        .expect("tests/scenarios lists")
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("script.jsonl").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert!(names.len() >= 30, "scenarios found: {names:?}");
    for n in names {
        let flags = if n.contains("confirm") && n.contains("approved") {
            vec!["--confirm", "yes"]
        } else if n.contains("confirm") {
            vec!["--confirm", "no"]
        } else if n == "max_steps_flag" {
            vec!["--max-steps", "3"]
        } else {
            vec![]
        };
        cases.push((root.join(n), flags));
    }
    cases
}

/// Run `ufo report <out>` and return the HTML.
fn report(out: &Path) -> String {
    let o = ufo()
        .arg("report")
        .arg(out)
        .output()
        .expect("ufo report runs");
    assert_eq!(
        o.status.code(),
        Some(0),
        "ufo report {} failed:\n{}",
        out.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    let path = out.join("report.html");
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).trim(),
        path.display().to_string(),
        "ufo report prints the report's path"
    );
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Count the step elements (`<article ... data-step="N"`) of a page.
fn dom_steps(html: &str) -> usize {
    html.match_indices("<article ")
        .filter(|(i, _)| {
            let end = html[*i..].find('>').map_or(html.len(), |e| i + e);
            html[*i..end].contains(" data-step=\"")
        })
        .count()
}

/// Every value of `src=` and `href=` attributes of the page's tags (text between tags is
/// escaped, so every `<` starts a real tag).
fn resource_refs(html: &str) -> Vec<String> {
    let mut refs = Vec::new();
    for chunk in html.split('<').skip(1) {
        let tag = chunk.split('>').next().unwrap_or("");
        for attr in [" src=", " href=", "\tsrc=", "\nsrc=", "\thref=", "\nhref="] {
            for (i, _) in tag.match_indices(attr) {
                let rest = &tag[i + attr.len()..];
                let v = match rest.chars().next() {
                    Some(q @ ('"' | '\'')) => rest[1..].split(q).next().unwrap_or(""),
                    _ => rest.split(char::is_whitespace).next().unwrap_or(""),
                };
                refs.push(v.to_string());
            }
        }
    }
    refs
}

/// The checks every report must pass: one file, nothing fetched, one element per step.
fn assert_self_contained(html: &str, steps: usize, ctx: &str) {
    assert!(
        html.starts_with("<!DOCTYPE html>"),
        "{ctx}: not an HTML page"
    );
    assert!(
        html.contains(
            "http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; img-src data:;"
        ),
        "{ctx}: the page forbids loading anything but inline images"
    );
    assert_eq!(
        dom_steps(html),
        steps,
        "{ctx}: step elements vs step records"
    );
    for r in resource_refs(html) {
        let lower = r.to_ascii_lowercase();
        assert!(
            !lower.contains("http:") && !lower.contains("https:") && !lower.starts_with("//"),
            "{ctx}: external reference {r}"
        );
        assert!(
            lower.starts_with("data:image/png;base64,") || lower.starts_with('#'),
            "{ctx}: a reference that is not inline: {r:.80}"
        );
    }
    for tag in ["<link", "<iframe", "<object", "<embed", "@import", "url("] {
        assert!(!html.contains(tag), "{ctx}: {tag} in the page");
    }
}

fn step_count(run: &Run) -> usize {
    run.events().iter().filter(|e| e["type"] == "step").count()
}

// ---------------------------------------------------------------------------------------------
// ufo report
// ---------------------------------------------------------------------------------------------

/// Every scenario and the example: the report is one self-contained file with one element
/// per step record, the request, every subtask outcome and the session's end status.
#[test]
fn report_of_every_scenario_is_self_contained_and_complete() {
    for (dir, flags) in all_cases() {
        let run = run_dir(&dir, &flags);
        let ctx = run.ctx();
        let html = report(&run.out);
        let htmls: Vec<PathBuf> = std::fs::read_dir(&run.out)
            .expect("out lists")
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "html"))
            .collect();
        assert_eq!(htmls.len(), 1, "{ctx}: one HTML file, got {htmls:?}");
        assert_self_contained(&html, step_count(&run), &ctx);
        let end = run.record("session_end");
        let status = end["status"].as_str().unwrap_or("");
        assert!(
            html.contains(&format!("id=\"session-status\">{status}<")),
            "{ctx}: session status {status} shown"
        );
        let request = std::fs::read_to_string(dir.join("request.txt")).expect("request");
        let escaped = request
            .trim()
            .replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;");
        assert!(html.contains(&escaped), "{ctx}: the request is shown");
        let archived: Vec<String> = run
            .steps()
            .iter()
            .filter_map(|e| {
                e["action"]["archive"]["status"]
                    .as_str()
                    .map(str::to_string)
            })
            .collect();
        assert_eq!(
            html.matches("<tr data-subtask=").count(),
            archived.len(),
            "{ctx}: one subtask row per archived subtask"
        );
        for st in &archived {
            assert!(
                html.contains(&format!("\">{st}</span></td>")),
                "{ctx}: outcome {st}"
            );
        }
        assert!(
            html.contains("id=\"blackboard\""),
            "{ctx}: blackboard section"
        );
    }
}

/// The report highlights the chosen control on the annotated screenshot of an app step with
/// a label, and embeds the screenshots.
#[test]
fn report_highlights_the_chosen_control() {
    let run = run_dir(&repo_root().join("examples").join("word_excel"), &[]);
    let html = report(&run.out);
    let app_steps_with_label = run
        .steps()
        .iter()
        .filter(|e| {
            e["state"] == "CONTINUE"
                && e["role"] == "app"
                && e["artifacts"]["annotated"].is_string()
                && e["action"]["control_label"]
                    .as_str()
                    .is_some_and(|l| !l.is_empty())
        })
        .count();
    assert_eq!(app_steps_with_label, 2, "{}", run.ctx());
    assert_eq!(
        html.matches("class=\"hl\" data-highlight=\"1\"").count(),
        2,
        "both app steps chose label 1 and are highlighted"
    );
    assert!(html.matches("src=\"data:image/png;base64,").count() >= 5);
    assert!(
        html.contains("chosen: [2] Excel"),
        "host's window label as text"
    );
}

/// Issue 44: a step that chose a control read in the pixels (its id is `ocr:x,y,w,h`) says so
/// in the report; a tree control's step does not.
#[test]
fn report_says_when_the_chosen_control_was_read_in_the_pixels() {
    let run = run_dir(&repo_root().join("examples").join("word_excel"), &[]);
    let before = report(&run.out);
    assert!(!before.contains("(read in the pixels)"), "{}", run.ctx());
    let events = run.out.join("events.jsonl");
    let text = std::fs::read_to_string(&events).expect("events");
    let mut changed = 0;
    let lines: Vec<String> = text
        .lines()
        .map(|l| {
            let mut v: serde_json::Value = serde_json::from_str(l).expect("a JSON line");
            let first_app =
                changed == 0 && v["role"] == "app" && v["action"]["control_id"].is_string();
            if first_app {
                v["action"]["control_id"] = "ocr:10,20,40,12".into();
                changed += 1;
            }
            v.to_string()
        })
        .collect();
    assert_eq!(changed, 1, "an app step chose a control: {}", run.ctx());
    std::fs::write(&events, lines.join("\n") + "\n").expect("write events");
    let after = report(&run.out);
    assert_eq!(
        after.matches("(read in the pixels)").count(),
        1,
        "{}",
        run.ctx()
    );
}

/// Model output is text, never markup: a `<script>` in a scripted answer's Thought (and in
/// the request) is escaped.
#[test]
fn report_escapes_injected_markup() {
    let src = repo_root().join("examples").join("word_excel");
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("inject");
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::copy(src.join("desktop.json"), dir.join("desktop.json")).expect("copy");
    let evil = "<script>alert('pwned')</script><img src=x onerror=alert(1)> \"quoted\" & done";
    std::fs::write(
        dir.join("request.txt"),
        "Extract the sales table from Word and create a bar chart in Excel <b>now</b>",
    )
    .expect("write");
    let script = std::fs::read_to_string(src.join("script.jsonl")).expect("script");
    let mut lines: Vec<String> = Vec::new();
    for (i, l) in script.lines().filter(|l| !l.trim().is_empty()).enumerate() {
        let mut v: Value = serde_json::from_str(l).expect("script line");
        if i <= 1 {
            v["response"]["Thought"] = Value::String(evil.into());
        }
        if i == 1 {
            v["response"]["Result"] =
                Value::String(format!("<iframe src=https://evil.example/>{evil}"));
        }
        lines.push(v.to_string());
    }
    std::fs::write(dir.join("script.jsonl"), lines.join("\n") + "\n").expect("write");
    let run = run_dir(&dir, &[]);
    run.assert_code(0);
    assert!(
        run.steps().iter().any(|e| e["thought"] == evil),
        "the Thought reached the trajectory\n{}",
        run.ctx()
    );
    let html = report(&run.out);
    assert_self_contained(&html, step_count(&run), &run.ctx());
    assert!(!html.contains("<script>alert"), "script injected");
    assert!(!html.contains("<img src=x"), "img injected");
    assert!(!html.contains("<iframe"), "iframe injected");
    assert!(!html.contains("<b>now</b>"), "request markup injected");
    assert!(html.contains("&lt;script&gt;alert("), "escaped text shown");
    assert!(
        html.contains("&lt;b&gt;now&lt;&#x2f;b&gt;") || html.contains("&lt;b&gt;now&lt;/b&gt;")
    );
    assert_eq!(
        html.matches("<script").count(),
        1,
        "only the page's own script"
    );
}

/// `ufo run --report` writes the report at the end; `ufo report` on a folder without a
/// trajectory is a usage error that says what to pass.
#[test]
fn run_with_report_flag_and_report_usage_errors() {
    let run = run_dir(
        &repo_root().join("examples").join("word_excel"),
        &["--report"],
    );
    run.assert_code(0);
    let path = run.out.join("report.html");
    assert!(path.is_file(), "{}", run.ctx());
    assert!(run.stderr.contains("report: "), "{}", run.ctx());
    let html = std::fs::read_to_string(&path).expect("report");
    assert_self_contained(&html, step_count(&run), &run.ctx());

    let tmp = tempfile::tempdir().expect("tempdir");
    let o = ufo()
        .arg("report")
        .arg(tmp.path().join("nothing"))
        .output()
        .expect("runs");
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("events.jsonl"));
}

/// A trajectory cut short (killed process: no session_end, a half-written last line, a
/// missing screenshot) still gives a report, which says what is missing.
#[test]
fn report_of_a_partial_trajectory_says_what_is_missing() {
    let run = run_dir(&repo_root().join("examples").join("word_excel"), &[]);
    let events = std::fs::read_to_string(run.out.join("events.jsonl")).expect("events");
    let lines: Vec<&str> = events.lines().collect();
    let kept = &lines[..5];
    let mut cut = kept.join("\n");
    cut.push_str("\n{\"type\":\"step\",\"round\":0,\"se");
    std::fs::write(run.out.join("events.jsonl"), cut).expect("write");
    std::fs::remove_file(run.out.join("step_0002_annotated.png")).expect("rm");
    let html = report(&run.out);
    let steps = kept
        .iter()
        .filter(|l| l.contains("\"type\":\"step\""))
        .count();
    assert_eq!(dom_steps(&html), steps);
    assert!(html.contains("INCOMPLETE"));
    assert!(html.contains("line 6 is not JSON"));
    assert!(html.contains("cannot read artifact step_0002_annotated.png"));
}

// ---------------------------------------------------------------------------------------------
// ufo runs
// ---------------------------------------------------------------------------------------------

/// `ufo runs` lists finished, interrupted and broken folders, newest first, and says what is
/// wrong with each broken one.
#[test]
fn runs_lists_sessions_newest_first_and_tolerates_broken_folders() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let runs = tmp.path().join("runs");
    std::fs::create_dir_all(&runs).expect("mkdir");
    let first = run_dir(&repo_root().join("examples").join("word_excel"), &[]);
    std::thread::sleep(Duration::from_millis(20));
    let second = run_scenario("host_fail", &[]);
    let copy = |from: &Path, name: &str| {
        let to = runs.join(name);
        std::fs::create_dir_all(&to).expect("mkdir");
        for e in std::fs::read_dir(from).expect("ls").filter_map(|e| e.ok()) {
            std::fs::copy(e.path(), to.join(e.file_name())).expect("copy");
        }
    };
    copy(&first.out, "a-first");
    copy(&second.out, "b-second");
    // a run that died before its first event (ufo writes run.json first)
    std::fs::create_dir_all(runs.join("c-empty")).expect("mkdir");
    std::fs::write(runs.join("c-empty").join("run.json"), "{}").expect("w");
    // a folder that has nothing to do with ufo: left out, counted
    std::fs::create_dir_all(runs.join("f-photos")).expect("mkdir");
    std::fs::create_dir_all(runs.join("d-garbage")).expect("mkdir");
    std::fs::write(
        runs.join("d-garbage").join("events.jsonl"),
        "\u{0}\u{1}garbage\n",
    )
    .expect("w");
    copy(&first.out, "e-cut");
    let ev = std::fs::read_to_string(runs.join("e-cut").join("events.jsonl")).expect("r");
    let half: String = ev.lines().take(4).collect::<Vec<_>>().join("\n");
    std::fs::write(runs.join("e-cut").join("events.jsonl"), half).expect("w");
    std::fs::write(runs.join("notes.txt"), "not a run").expect("w");

    let o = ufo()
        .arg("runs")
        .arg("--dir")
        .arg(&runs)
        .output()
        .expect("ufo runs");
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{out}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let line = |name: &str| -> &str {
        out.lines()
            .find(|l| l.contains(name))
            .unwrap_or_else(|| panic!("{name} listed in\n{out}"))
    };
    assert!(line("a-first").contains("FINISH"), "{out}");
    assert!(line("a-first").contains("Extract the sales table"), "{out}");
    assert!(line("b-second").contains("FAIL"), "{out}");
    assert!(line("c-empty").contains("BROKEN"), "{out}");
    assert!(out.contains("no events.jsonl"), "{out}");
    assert!(line("d-garbage").contains("BROKEN"), "{out}");
    assert!(out.contains("line 1 is not JSON"), "{out}");
    assert!(line("e-cut").contains("INCOMPLETE"), "{out}");
    assert!(out.contains("no session_end"), "{out}");
    assert!(!out.contains("notes.txt"), "{out}");
    assert!(!out.contains("f-photos"), "{out}");
    assert!(
        out.contains("1 folder without a trajectory left out"),
        "{out}"
    );
    // the --out folder of a run, given itself, lists that one session
    let o = ufo()
        .arg("runs")
        .arg("--dir")
        .arg(runs.join("a-first"))
        .output()
        .expect("ufo runs");
    let one = String::from_utf8_lossy(&o.stdout).into_owned();
    assert_eq!(o.status.code(), Some(0), "{one}");
    assert!(one.contains("a-first") && one.contains("FINISH"), "{one}");
    // no runs folder yet (a fresh clone): nothing to list is not an error
    let fresh = tempfile::tempdir().expect("tempdir");
    let o = ufo()
        .current_dir(fresh.path())
        .arg("runs")
        .output()
        .expect("ufo runs");
    let none = String::from_utf8_lossy(&o.stdout).into_owned();
    assert_eq!(o.status.code(), Some(0), "{none}");
    assert!(none.contains("no sessions in runs yet"), "{none}");
    // Newest first: b-second started after a-first (e-cut shares a-first's start).
    let pos = |n: &str| out.find(n).unwrap_or(usize::MAX);
    assert!(pos("b-second") < pos("a-first"), "{out}");

    let o = ufo()
        .arg("runs")
        .arg("--dir")
        .arg(tmp.path().join("missing"))
        .output()
        .expect("ufo runs");
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--dir"));
}

// ---------------------------------------------------------------------------------------------
// Terminal output of ufo run (not a terminal here)
// ---------------------------------------------------------------------------------------------

/// Off a terminal: plain progress lines in the documented format, no escape codes, no status
/// line; `-v` adds thoughts; `-q` prints nothing on success; `ufo.log` has every step.
#[test]
fn progress_lines_verbosity_and_log_file() {
    let dir = repo_root().join("examples").join("word_excel");
    let run = run_dir(&dir, &[]);
    run.assert_code(0);
    assert!(
        !run.stderr.contains('\u{1b}'),
        "no escape codes off a terminal"
    );
    let lines: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.starts_with("[round "))
        .collect();
    assert_eq!(lines.len(), step_count(&run), "{}", run.stderr);
    assert!(
        lines[0].starts_with("[round 0 step 1 #0] HostAgent CONTINUE -> ASSIGN | subtask: "),
        "{}",
        lines[0]
    );
    // issue 14: the step number is the counted one, as in the summary ("after 5 step(s)"); the
    // host's choice of window reads as words, not as raw JSON
    let last = lines.last().expect("lines");
    assert!(last.starts_with("[round 0 step 5 #9] HostAgent"), "{last}");
    assert!(run.stderr.contains("after 5 step(s)"), "{}", run.stderr);
    assert!(lines[0].contains("action: window [1] "), "{}", lines[0]);
    assert!(!run.stderr.contains("\"control_label\""), "{}", run.stderr);
    assert!(!run.stderr.contains("thought:"));
    let log = std::fs::read_to_string(run.out.join("ufo.log")).expect("ufo.log");
    assert_eq!(
        log.lines()
            .filter(|l| l.contains(" step ") && l.contains("seq="))
            .count(),
        step_count(&run),
        "{log}"
    );
    assert!(log.contains("session ended"), "{log}");

    let run = run_dir(&dir, &["-v"]);
    run.assert_code(0);
    assert!(
        run.stderr.contains("    thought: Reading the table text"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("    model: 1 call(s)"),
        "{}",
        run.stderr
    );

    let run = run_dir(&dir, &["--quiet"]);
    run.assert_code(0);
    assert_eq!(run.stderr.trim(), "", "quiet prints nothing");
    assert!(run.out.join("ufo.log").is_file());

    let run = run_dir(&dir, &["-q", "-v"]);
    run.assert_code(2);
}

// ---------------------------------------------------------------------------------------------
// Headless Chromium
// ---------------------------------------------------------------------------------------------

const CHROMIUM: &str = "/usr/bin/chromium";

fn chromium(args: &[String]) -> std::process::Output {
    let mut cmd = assert_cmd::Command::new(CHROMIUM);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        // The browser's own background requests (update checks, accounts) must not even
        // resolve a name: nothing leaves the machine during the test.
        "--host-resolver-rules=MAP * ~NOTFOUND",
        "--no-proxy-server",
    ])
    .args(args)
    .timeout(Duration::from_secs(120));
    cmd.output().expect("chromium runs")
}

/// The report opened in headless Chromium: a screenshot is taken and is not blank, and the DOM
/// as the browser built it has one step element per step record. Skipped (with a message) only
/// when Chromium is absent and `UFO_BROWSER_TESTS` is not `1`.
#[test]
fn report_in_headless_chromium() {
    if !Path::new(CHROMIUM).exists() {
        if std::env::var("UFO_BROWSER_TESTS").as_deref() == Ok("1") {
            panic!(
                "UFO_BROWSER_TESTS=1 but {CHROMIUM} is missing; install it with \
                 `source scripts/test-deps.sh && install_chromium`"
            );
        }
        eprintln!(
            "SKIPPED report_in_headless_chromium: {CHROMIUM} is not installed \
             (scripts/test-deps.sh install_chromium; set UFO_BROWSER_TESTS=1 to require it)"
        );
        return;
    }
    let run = run_dir(
        &repo_root().join("examples").join("word_excel"),
        &["--report"],
    );
    run.assert_code(0);
    let page = run.out.join("report.html");
    let url = format!("file://{}", page.display());
    let tmp = tempfile::tempdir().expect("tempdir");
    let profile = |n: &str| format!("--user-data-dir={}", tmp.path().join(n).display());

    let png_path = tmp.path().join("report.png");
    let o = chromium(&[
        profile("shot"),
        format!("--screenshot={}", png_path.display()),
        "--window-size=1280,2000".into(),
        url.clone(),
    ]);
    assert!(
        png_path.is_file(),
        "chromium wrote no screenshot (exit {:?}):\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stderr)
    );
    let file = std::fs::File::open(&png_path).expect("open png");
    let mut reader = png::Decoder::new(std::io::BufReader::new(file))
        .read_info()
        .expect("a PNG");
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).expect("a frame");
    assert_eq!((info.width, info.height), (1280, 2000));
    let channels = info.color_type.samples();
    let lum: Vec<f64> = buf[..info.buffer_size()]
        .chunks_exact(channels)
        .map(|p| {
            if channels >= 3 {
                0.299 * f64::from(p[0]) + 0.587 * f64::from(p[1]) + 0.114 * f64::from(p[2])
            } else {
                f64::from(p[0])
            }
        })
        .collect();
    let mean = lum.iter().sum::<f64>() / lum.len() as f64;
    let var = lum.iter().map(|l| (l - mean).powi(2)).sum::<f64>() / lum.len() as f64;
    let dark = lum.iter().filter(|l| **l < 128.0).count();
    assert!(var > 100.0, "screenshot looks blank (variance {var:.1})");
    assert!(
        dark > 5_000,
        "too little ink on the page ({dark} dark pixels)"
    );

    let o = chromium(&[profile("dom"), "--dump-dom".into(), url]);
    let dom = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(dom.contains("id=\"timeline\""), "DOM dumped:\n{dom:.2000}");
    assert_eq!(
        dom_steps(&dom),
        step_count(&run),
        "step elements in the DOM"
    );
    assert!(dom.contains("data-highlight=\"1\""));
}

// ---------------------------------------------------------------------------------------------
// Interactive prompts through a pseudo-terminal
// ---------------------------------------------------------------------------------------------

/// `ufo run` on a scenario in a pseudo-terminal (stdin, stdout and stderr are the terminal).
struct Pty {
    session: rexpect::session::PtySession,
    out: PathBuf,
    _tmp: tempfile::TempDir,
}

fn pty_run(scenario: &str, extra: &[&str], env: &[(&str, &str)]) -> Pty {
    pty_run_dir(&scenario_dir(scenario), extra, env)
}

/// As [`pty_run`], on a scenario folder anywhere.
fn pty_run_dir(dir: &Path, extra: &[&str], env: &[(&str, &str)]) -> Pty {
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = tmp.path().join("out");
    let bin = assert_cmd::cargo::cargo_bin("ufo");
    let mut cmd = StdCommand::new(bin);
    for (k, _) in std::env::vars() {
        if k.starts_with("UFO_") || k == "NO_COLOR" {
            cmd.env_remove(k);
        }
    }
    cmd.env("TERM", "xterm-256color");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let request = std::fs::read_to_string(dir.join("request.txt")).expect("request");
    cmd.arg("run")
        .arg("--desktop")
        .arg(format!("sim:{}", dir.join("desktop.json").display()))
        .arg("--llm")
        .arg(format!("script:{}", dir.join("script.jsonl").display()))
        .arg("--config")
        .arg(dir.join("ufo.toml"))
        .arg("--out")
        .arg(&out)
        .args(extra)
        .arg(request.trim());
    let session = rexpect::session::spawn_command(cmd, Some(30_000)).expect("spawn in a pty");
    Pty {
        session,
        out,
        _tmp: tmp,
    }
}

impl Pty {
    fn expect(&mut self, s: &str) -> String {
        self.session
            .exp_string(s)
            .unwrap_or_else(|e| panic!("the terminal never showed {s:?}: {e}"))
    }

    /// Read to the end and return the exit code.
    fn finish(&mut self) -> (i32, String) {
        let rest = self.session.exp_eof().unwrap_or_default();
        let code = match self.session.process.wait() {
            Ok(rexpect::process::wait::WaitStatus::Exited(_, c)) => c,
            other => panic!("ufo did not exit normally: {other:?}"),
        };
        (code, rest)
    }

    fn actions(&self) -> Vec<Value> {
        let text = std::fs::read_to_string(self.out.join("desktop_final.json")).expect("final");
        let v: Value = serde_json::from_str(&text).expect("json");
        v["actions"].as_array().cloned().unwrap_or_default()
    }
}

/// CONFIRM asked at the terminal and approved with `y`: the prompt shows the held action
/// (function, control label and name), and the click reaches the desktop once.
#[test]
fn pty_confirm_approve() {
    let mut p = pty_run(
        "app_confirm_approved",
        &["--confirm", "ask"],
        &[("NO_COLOR", "1")],
    );
    let shown = p.expect("Approve? [y/N]");
    assert!(shown.contains("AppAgent/Writer wants to: click"), "{shown}");
    assert!(shown.contains("control: [3] Delete All"), "{shown}");
    p.session.send_line("y").expect("send");
    p.expect("approved");
    let (code, rest) = p.finish();
    assert_eq!(code, 0, "{rest}");
    for text in [&shown, &rest] {
        assert!(!text.contains("\u{1b}[3"), "NO_COLOR: no colours: {text:?}");
    }
    let clicks: Vec<Value> = p
        .actions()
        .into_iter()
        .filter(|a| a["control"] == "delete_all")
        .collect();
    assert_eq!(clicks.len(), 1, "{clicks:?}");
    assert_eq!(clicks[0]["ok"], true);
}

/// CONFIRM rejected with `n`: the click never reaches the desktop.
#[test]
fn pty_confirm_reject() {
    let mut p = pty_run(
        "app_confirm_rejected",
        &["--confirm", "ask"],
        &[("NO_COLOR", "1")],
    );
    let shown = p.expect("Approve? [y/N]");
    assert!(shown.contains("Delete All"), "{shown}");
    p.session.send_line("n").expect("send");
    p.expect("rejected");
    let (code, rest) = p.finish();
    assert_eq!(code, 0, "{rest}");
    assert!(
        p.actions().iter().all(|a| a["control"] != "delete_all"),
        "{:?}",
        p.actions()
    );
}

/// The host's CONFIRM of a shell command shows the command itself; approving it launches Calc.
#[test]
fn pty_confirm_shows_the_shell_command() {
    let mut p = pty_run("host_confirm_bash_approved", &["--confirm", "ask"], &[]);
    let shown = p.expect("Approve? [y/N]");
    assert!(shown.contains("libreoffice --calc"), "{shown}");
    assert!(shown.contains("shell command:"), "{shown}");
    // Colour is on in a terminal without NO_COLOR.
    assert!(
        shown.contains("\u{1b}[3"),
        "colour escapes expected: {shown:?}"
    );
    // The live status line was drawn (only on a terminal): round, step, elapsed, tokens.
    assert!(
        shown.contains("round 0 step 0 (#0)") && shown.contains(" tokens"),
        "status line expected: {shown:?}"
    );
    p.session.send_line("y").expect("send");
    let (code, rest) = p.finish();
    assert_eq!(code, 0, "{rest}");
    assert!(
        p.actions().iter().any(|a| a["action"] == "launch"),
        "{:?}",
        p.actions()
    );
}

/// A PENDING question shown at the terminal and answered there: the answer reaches the model
/// (the script `expect`s it in the next prompt) and the session finishes.
#[test]
fn pty_pending_answered() {
    let mut p = pty_run("host_pending_answer", &[], &[("NO_COLOR", "1")]);
    p.expect("HostAgent asks: Which document should I open?");
    p.expect("> ");
    p.session.send_line("budget-2027.ods").expect("send");
    let (code, rest) = p.finish();
    assert_eq!(code, 0, "{rest}");
    let bb = std::fs::read_to_string(p.out.join("blackboard.json")).expect("blackboard");
    assert!(bb.contains("budget-2027.ods"), "{bb}");
}

/// Nobody answers: after the timeout (`UFO_PROMPT_TIMEOUT_SECS=1`) the question counts as
/// unanswered, the host's PENDING goes to FAIL (exit 1), well before the default 5 minutes.
#[test]
fn pty_pending_timeout() {
    let started = Instant::now();
    let mut p = pty_run(
        "host_pending_unanswered",
        &[],
        &[("NO_COLOR", "1"), ("UFO_PROMPT_TIMEOUT_SECS", "1")],
    );
    p.expect("Which document should I open?");
    p.expect("no answer within 1 s");
    let (code, rest) = p.finish();
    assert_eq!(code, 1, "{rest}");
    assert!(started.elapsed() < Duration::from_secs(25));
    let events = std::fs::read_to_string(p.out.join("events.jsonl")).expect("events");
    let end: Value = events
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|e| e["type"] == "round_end")
        .expect("round_end");
    assert_eq!(end["reason"], "no_answer", "{events}");
}

/// CONFIRM not answered before the timeout is a rejection.
#[test]
fn pty_confirm_timeout_rejects() {
    let mut p = pty_run(
        "app_confirm_rejected",
        &["--confirm", "ask"],
        &[("NO_COLOR", "1"), ("UFO_PROMPT_TIMEOUT_SECS", "1")],
    );
    p.expect("Approve? [y/N]");
    p.expect("no answer within 1 s");
    p.expect("rejected");
    let (code, rest) = p.finish();
    assert_eq!(code, 0, "{rest}");
    assert!(p.actions().iter().all(|a| a["control"] != "delete_all"));
}

/// Ctrl-C while a CONFIRM prompt waits: the prompt stops waiting (no answer: rejected), the
/// held click never reaches the desktop, and the session ends CANCELLED with exit 130.
#[test]
fn pty_ctrl_c_at_a_prompt_cancels() {
    let mut p = pty_run(
        "app_confirm_rejected",
        &["--confirm", "ask"],
        &[("NO_COLOR", "1")],
    );
    p.expect("Approve? [y/N]");
    let t = Instant::now();
    p.session.send_control('c').expect("send ^C");
    p.expect("cancelled; counted as no answer");
    let (code, rest) = p.finish();
    assert_eq!(code, 130, "{rest}");
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    assert!(p.actions().iter().all(|a| a["control"] != "delete_all"));
    let events = std::fs::read_to_string(p.out.join("events.jsonl")).expect("events");
    let last: Value = events
        .lines()
        .rev()
        .find_map(|l| serde_json::from_str::<Value>(l).ok())
        .expect("records");
    assert_eq!(last["type"], "session_end", "{events}");
    assert_eq!(last["status"], "CANCELLED", "{events}");
}

// ---------------------------------------------------------------------------------------------
// Untrusted text is inert on a terminal
// ---------------------------------------------------------------------------------------------

/// What a terminal shows for the spoofing text: a carriage return and "erase line" that would
/// replace `rm -rf /tmp/victim` with a harmless-looking `ls /tmp/victim`.
const SPOOF: &str = "\r\u{1b}[2Kls /tmp/victim";
/// The same text as ufo must show it: escaped, on one line.
const SPOOF_SHOWN: &str = "\\r\\x1b[2Kls /tmp/victim";

/// A scenario whose model holds a spoofing shell command (host CONFIRM with `Bash`), then has
/// the AppAgent hold a click on a control whose on-screen name spoofs too; its subtask, thought
/// and result carry escape sequences and a right-to-left override. With `click_approved` the
/// script goes on as after an approved click (the AppAgent then finishes).
fn spoof_scenario(dir: &Path, click_approved: bool) {
    let desktop = serde_json::json!({"apps": [{
    "name": "Writer", "process": "writer", "title": "report.odt - Writer", "running": true,
    "launch": "writer",
    "controls": [
        {"id": "body", "role": "edit", "name": "Body", "value": ""},
        {"id": "delete_all", "role": "button", "name": format!("Delete All{SPOOF}")}
    ]}]});
    let host = |status: &str, bash: &str, text: &str| {
        serde_json::json!({"agent": "host", "response": {
            "Observation": "o\u{1b}[1A\u{1b}[2K", "Thought": "t\u{202e}gnol",
            "Current Sub-Task": format!("clean up{SPOOF}"), "ControlLabel": "1",
            "ControlText": text, "Status": status, "Bash": bash, "Comment": "done\u{1b}[31m"}})
    };
    let app = serde_json::json!({"agent": "app", "response": {
        "Observation": "o", "Thought": format!("think{SPOOF}"), "ControlLabel": "2",
        "ControlText": format!("Delete All{SPOOF}"), "Function": "click", "Args": {},
        "Status": "CONFIRM"}});
    let mut script = vec![
        host("CONFIRM", &format!("rm -rf /tmp/victim{SPOOF}"), ""),
        host("ASSIGN", "", "Writer"),
        app,
    ];
    if click_approved {
        script.push(serde_json::json!({"agent": "app", "response": {
            "Observation": "o", "Thought": "t", "Status": "FINISH",
            "Result": format!("deleted{SPOOF}")}}));
    }
    script.push(host("FINISH", "", ""));
    let script = script
        .iter()
        .map(|l| l.to_string())
        .collect::<Vec<_>>()
        .join("\n");
    std::fs::write(dir.join("desktop.json"), desktop.to_string()).expect("desktop");
    std::fs::write(dir.join("script.jsonl"), script).expect("script");
    std::fs::write(dir.join("request.txt"), "Tidy up the report").expect("request");
    std::fs::write(
        dir.join("ufo.toml"),
        "safe_guard = true\nask_question = true\nmax_steps = 20\nmax_rounds = 1\n",
    )
    .expect("config");
}

/// Defect: a held command holding `\r ESC[2K ls /tmp/victim` showed as `ls /tmp/victim` at the
/// CONFIRM prompt. Now the prompt shows the command exactly, escaped, on one line, and no raw
/// escape sequence from the model or the screen reaches the terminal (prompt, progress lines,
/// status line).
#[test]
fn pty_confirm_shows_spoofing_text_escaped() {
    let tmp = tempfile::tempdir().expect("tempdir");
    spoof_scenario(tmp.path(), false);
    let mut p = pty_run_dir(tmp.path(), &["--confirm", "ask"], &[("NO_COLOR", "1")]);
    let first = p.expect("Approve? [y/N]");
    assert!(
        first.contains(&format!(
            "shell command: rm -rf /tmp/victim{SPOOF_SHOWN}\r\n"
        )),
        "the held command is shown exactly on one line: {first:?}"
    );
    assert!(first.contains("shown escaped"), "{first:?}");
    // Approved: the simulated desktop records the command (it runs nothing).
    p.session.send_line("y").expect("send");
    let second = p.expect("Approve? [y/N]");
    assert!(
        second.contains(&format!("control: [2] Delete All{SPOOF_SHOWN}")),
        "{second:?}"
    );
    p.session.send_line("n").expect("send");
    let (code, rest) = p.finish();
    assert_eq!(code, 0, "{rest}");
    for text in [&first, &second, &rest] {
        assert!(
            !text.contains(SPOOF),
            "raw spoofing text reached the terminal: {text:?}"
        );
        assert!(!text.contains("\u{202e}"), "raw bidi override: {text:?}");
        assert!(!text.contains("\u{1b}[1A"), "raw cursor-up: {text:?}");
    }
    // What was approved is what ran; the rejected click never happened.
    let actions = p.actions();
    assert!(
        actions
            .iter()
            .any(|a| a["args"]["command"] == format!("rm -rf /tmp/victim{SPOOF}")),
        "{actions:?}"
    );
    assert!(
        actions.iter().all(|a| a["control"] != "delete_all"),
        "{actions:?}"
    );
}

/// Defect (Unicode space): `cat<U+00A0>x/../../bin/rm -rf /tmp/victim` was judged `cat` and
/// ran unasked, shown as a harmless `cat x/…`. Now the gate holds it, and the CONFIRM prompt
/// shows the no-break space escaped (and says why it holds the command); rejected, nothing
/// reaches the desktop.
#[test]
fn pty_confirm_shows_a_unicode_space_escaped() {
    let tmp = tempfile::tempdir().expect("tempdir");
    spoof_scenario(tmp.path(), false);
    let attack = "cat\u{a0}x/../../bin/rm -rf /tmp/victim";
    let script = [
        serde_json::json!({"agent": "host", "response": {"Observation": "o", "Thought": "t",
            "Status": "CONTINUE", "Bash": attack}}),
        serde_json::json!({"agent": "host", "response": {"Observation": "o", "Thought": "t",
            "Status": "FINISH"}}),
    ]
    .iter()
    .map(|l| l.to_string())
    .collect::<Vec<_>>()
    .join("\n");
    std::fs::write(tmp.path().join("script.jsonl"), script).expect("script");
    let mut p = pty_run_dir(tmp.path(), &["--confirm", "ask"], &[("NO_COLOR", "1")]);
    let shown = p.expect("Approve? [y/N]");
    assert!(
        shown.contains("shell command: cat\\u{a0}x/../../bin/rm -rf /tmp/victim\r\n"),
        "{shown:?}"
    );
    assert!(shown.contains("U+00A0"), "the reason is shown: {shown:?}");
    assert!(shown.contains("no-break space"), "{shown:?}");
    p.session.send_line("n").expect("send");
    let (_, rest) = p.finish();
    for text in [&shown, &rest] {
        // the terminal's bytes arrive one char per byte: a raw U+00A0 is the pair C2 A0
        assert!(
            !text.contains("\u{c2}\u{a0}"),
            "a raw no-break space: {text:?}"
        );
        assert!(!text.contains("cat x/"), "{text:?}");
    }
    assert!(
        p.actions().iter().all(|a| a["action"] != "shell"),
        "{:?}",
        p.actions()
    );
}

/// A PENDING question with a spoofing escape sequence is shown escaped too.
#[test]
fn pty_pending_question_shows_spoofing_text_escaped() {
    let tmp = tempfile::tempdir().expect("tempdir");
    spoof_scenario(tmp.path(), false);
    let script = [
        serde_json::json!({"agent": "host", "response": {"Observation": "o", "Thought": "t",
            "Status": "PENDING", "Questions": [format!("Which file?{SPOOF}")]}}),
        serde_json::json!({"agent": "host", "response": {"Observation": "o", "Thought": "t",
            "Status": "FINISH"}, "expect": ["notes.txt"]}),
    ]
    .iter()
    .map(|l| l.to_string())
    .collect::<Vec<_>>()
    .join("\n");
    std::fs::write(tmp.path().join("script.jsonl"), script).expect("script");
    let mut p = pty_run_dir(tmp.path(), &[], &[("NO_COLOR", "1")]);
    p.expect("HostAgent asks: ");
    let shown = p.expect("\n> ");
    assert!(
        shown.starts_with(&format!("Which file?{SPOOF_SHOWN}\r")),
        "{shown:?}"
    );
    assert!(!shown.contains(SPOOF), "{shown:?}");
    p.session.send_line("notes.txt").expect("send");
    let (code, rest) = p.finish();
    assert_eq!(code, 0, "{rest}");
}

/// Off a terminal too: progress lines, stderr logs and `ufo.log` show the untrusted text
/// escaped and hold no escape character at all.
#[test]
fn progress_lines_and_logs_show_spoofing_text_escaped() {
    let tmp = tempfile::tempdir().expect("tempdir");
    spoof_scenario(tmp.path(), true);
    let run = run_dir(tmp.path(), &["--confirm", "yes", "-vv"]);
    run.assert_code(0);
    assert!(
        !run.stderr.contains('\u{1b}') && !run.stderr.contains('\u{202e}'),
        "{:?}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains(&format!("subtask: clean up{SPOOF_SHOWN}")),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("thought: t\\u{202e}gnol"),
        "{}",
        run.stderr
    );
    let log = std::fs::read_to_string(run.out.join("ufo.log")).expect("ufo.log");
    assert!(
        !log.contains('\u{1b}') && !log.contains('\r') && !log.contains('\u{202e}'),
        "{log:?}"
    );
    assert!(log.contains("/tmp/victim"), "{log}");
}

// ---------------------------------------------------------------------------------------------
// A cancelled and resumed session
// ---------------------------------------------------------------------------------------------

/// Ctrl-C during the slow step of `cancel_resume`, then `ufo resume --report`: the report
/// covers both parts (every step record, a "resumed" round, the final FINISH), and `ufo runs`
/// lists the folder once, FINISH, resumed once.
#[test]
fn report_and_runs_of_a_cancelled_then_resumed_session() {
    let dir = scenario_dir("cancel_resume");
    let tmp = tempfile::tempdir().expect("tempdir");
    let runs = tmp.path().join("runs");
    let out = runs.join("session");
    let request = std::fs::read_to_string(dir.join("request.txt")).expect("request");
    let child = StdCommand::new(assert_cmd::cargo::cargo_bin("ufo"))
        .arg("run")
        .arg("--desktop")
        .arg(format!("sim:{}", dir.join("desktop.json").display()))
        .arg("--llm")
        .arg(format!("script:{}", dir.join("script.jsonl").display()))
        .arg("--out")
        .arg(&out)
        .arg(request.trim())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("ufo starts");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let text = std::fs::read_to_string(out.join("events.jsonl")).unwrap_or_default();
        if text.contains("\"state\":\"ASSIGN\"") {
            break;
        }
        assert!(Instant::now() < deadline, "no ASSIGN within 30 s");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(procs::signal(child.id(), Signal::SIGINT), "SIGINT not sent");
    let o = child.wait_with_output().expect("ufo ends");
    assert_eq!(
        o.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );

    // The cancelled session alone: INCOMPLETE it is not; it ended CANCELLED.
    let html = report(&out);
    assert!(
        html.contains("id=\"session-status\">CANCELLED<"),
        "cancelled shown"
    );

    let o = ufo()
        .arg("resume")
        .arg(&out)
        .arg("--llm")
        .arg(format!("script:{}", dir.join("resume.jsonl").display()))
        .arg("--report")
        .output()
        .expect("resume runs");
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let html = std::fs::read_to_string(out.join("report.html")).expect("report written");
    let text = std::fs::read_to_string(out.join("events.jsonl")).expect("events");
    let steps = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["type"] == "step")
        .count();
    assert_self_contained(&html, steps, "resumed session");
    assert!(
        html.contains("id=\"session-status\">FINISH<"),
        "final status"
    );
    assert!(html.contains("resumed 1 time(s)"));
    assert!(html.contains("<span class=\"badge wait\">resumed</span>"));
    assert!(
        html.contains(">CANCELLED</span>"),
        "the cancelled round's end is kept"
    );

    let o = ufo()
        .arg("runs")
        .arg("--dir")
        .arg(&runs)
        .output()
        .expect("ufo runs");
    let listing = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0));
    let line = listing
        .lines()
        .find(|l| l.contains("session"))
        .unwrap_or_else(|| panic!("listed:\n{listing}"));
    assert!(line.contains("FINISH"), "{listing}");
    assert!(listing.contains("resumed 1 time(s)"), "{listing}");
    assert!(!listing.contains("INCOMPLETE"), "{listing}");
}

/// A CONFIRM prompt quotes the screen: a control whose name shows a held key (a window that
/// displays the key the person exported) put the key on the terminal, since the prompt is
/// written to the console around the redactor. Now everything the console writes hides the
/// held secrets: the prompt shows `***`, and so do the lines after it.
#[test]
fn pty_confirm_hides_a_held_secret_the_screen_shows() {
    const KEY: &str = "sk-screen-echo-probe-8d3f1c";
    let tmp = tempfile::tempdir().expect("tempdir");
    spoof_scenario(tmp.path(), false);
    let desktop = serde_json::json!({"apps": [{"name": "Writer", "process": "writer",
        "title": "report.odt - Writer", "running": true,
        "controls": [{"id": "delete_all", "role": "button", "name": format!("Delete All {KEY}")}]}]});
    std::fs::write(tmp.path().join("desktop.json"), desktop.to_string()).expect("desktop");
    let script = [
        serde_json::json!({"agent": "host", "response": {"Observation": "o", "Thought": "t",
            "Current Sub-Task": "Clear the report", "ControlLabel": "1", "ControlText": "Writer",
            "Status": "ASSIGN"}}),
        serde_json::json!({"agent": "app", "response": {"Observation": "o", "Thought": "t",
            "ControlLabel": "1", "ControlText": "", "Function": "click", "Args": {},
            "Status": "CONTINUE"}}),
        serde_json::json!({"agent": "host", "response": {"Observation": "o", "Thought": "t",
            "Status": "FINISH"}}),
    ]
    .iter()
    .map(|l| l.to_string())
    .collect::<Vec<_>>()
    .join("\n");
    std::fs::write(tmp.path().join("script.jsonl"), script).expect("script");
    let mut p = pty_run_dir(
        tmp.path(),
        &["--confirm", "ask"],
        &[("NO_COLOR", "1"), ("OPENAI_API_KEY", KEY)],
    );
    let shown = p.expect("Approve? [y/N]");
    assert!(shown.contains("control: [1] Delete All ***"), "{shown:?}");
    p.session.send_line("n").expect("send");
    let (code, rest) = p.finish();
    assert_eq!(code, 0, "{rest}");
    for text in [&shown, &rest] {
        assert!(
            !text.contains(KEY),
            "the key reached the terminal: {text:?}"
        );
    }
}
