//! A very large `events.jsonl` (about 100 MB) is read as a stream: `ufo runs` and `ufo report`
//! stay within a memory bound, and the report embeds a capped part of it with a note saying
//! what was left out.

use std::io::Write;
use std::path::Path;

/// Steps in the generated trajectory and the size of each step's thought.
const STEPS: usize = 25_000;
const THOUGHT: usize = 4_000;

fn generate(dir: &Path) -> u64 {
    std::fs::create_dir_all(dir).expect("mkdir");
    let file = std::fs::File::create(dir.join("events.jsonl")).expect("create");
    let mut w = std::io::BufWriter::new(file);
    writeln!(
        w,
        r#"{{"type":"session_start","request":"a very long session","ts":"2026-01-01T10:00:00+00:00"}}"#
    )
    .expect("write");
    let thought = "lorem ipsum ".repeat(THOUGHT / 12);
    for i in 0..STEPS {
        writeln!(
            w,
            r#"{{"type":"step","round":0,"seq":{i},"agent":"HostAgent","role":"host","state":"CONTINUE","status":"CONTINUE","thought":"{i} {thought}","action":null,"llm":{{"calls":1,"prompt_tokens":10,"completion_tokens":2}},"timings_ms":{{}},"terminal":false,"steps":{i}}}"#
        )
        .expect("write");
    }
    writeln!(
        w,
        r#"{{"type":"session_end","status":"FINISH","reason":"done","steps":{STEPS},"llm":{{"calls":{STEPS},"prompt_tokens":1,"completion_tokens":1}}}}"#
    )
    .expect("write");
    w.flush().expect("flush");
    std::fs::metadata(dir.join("events.jsonl"))
        .expect("meta")
        .len()
}

/// Run `ufo ARGS` to its end (at most 300 s) and return its exit code, stdout and the peak
/// resident size it reached (`VmHWM` of /proc/PID/status, read every few milliseconds while it
/// runs), in MB.
fn run_measured(args: &[&std::ffi::OsStr]) -> (Option<i32>, String, u64) {
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("ufo"))
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit())
        .spawn()
        .expect("ufo starts");
    let mut stdout = child.stdout.take().expect("stdout");
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut stdout, &mut s);
        s
    });
    let status = format!("/proc/{}/status", child.id());
    let mut peak_kb = 0u64;
    let start = std::time::Instant::now();
    let code = loop {
        if let Ok(text) = std::fs::read_to_string(&status) {
            if let Some(kb) = text
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            {
                peak_kb = peak_kb.max(kb);
            }
        }
        if let Ok(Some(st)) = child.try_wait() {
            break st.code();
        }
        if start.elapsed() > std::time::Duration::from_secs(300) {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    };
    (code, reader.join().unwrap_or_default(), peak_kb / 1024)
}

#[test]
fn runs_and_report_stream_a_huge_trajectory_within_a_memory_bound() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = tmp.path().join("huge");
    let size = generate(&out);
    assert!(size > 90_000_000, "{size}");

    let (code, stdout, runs_mb) =
        run_measured(&["runs".as_ref(), "--dir".as_ref(), tmp.path().as_os_str()]);
    assert_eq!(code, Some(0), "{stdout}");
    assert!(
        stdout.contains("FINISH") && stdout.contains(&STEPS.to_string()),
        "{stdout}"
    );
    let (code, _, report_mb) = run_measured(&["report".as_ref(), out.as_os_str()]);
    assert_eq!(code, Some(0));
    eprintln!(
        "events.jsonl {} MB: peak RSS ufo runs {runs_mb} MB, ufo report {report_mb} MB",
        size / 1_000_000
    );
    assert!(runs_mb < 64, "ufo runs peaked at {runs_mb} MB");
    assert!(report_mb < 160, "ufo report peaked at {report_mb} MB");

    let html_len = std::fs::metadata(out.join("report.html"))
        .expect("report.html")
        .len();
    assert!(html_len < 60_000_000, "the report embeds {html_len} bytes");
    let html = std::fs::read_to_string(out.join("report.html")).expect("read");
    assert!(html.contains("not shown"), "the page says what it left out");
}
