//! A trajectory folder is data, not trusted: through the real binary, a symbolic link planted
//! in it is never written or read through (`run --out`, `resume`, `report`), `ufo runs` reads
//! only regular files (a FIFO or a device never blocks it or fills memory), `ufo report` leaves
//! no temporary file when its write fails, a closed stdout ends a command quietly, and SIGTERM
//! and SIGHUP end commands that have no session to cancel.

mod common;

use std::io::{BufRead, BufReader};
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

/// `ufo run` arguments for a scenario into `out`.
fn scenario_args(name: &str, out: &Path) -> Vec<String> {
    let dir = scenario_dir(name);
    let request = std::fs::read_to_string(dir.join("request.txt")).expect("request.txt");
    vec![
        "run".to_string(),
        "--desktop".into(),
        format!("sim:{}", dir.join("desktop.json").display()),
        "--llm".into(),
        format!("script:{}", dir.join("script.jsonl").display()),
        "--out".into(),
        out.display().to_string(),
        request.trim().to_string(),
    ]
}

fn run(args: &[String]) -> std::process::Output {
    let tmp = tempfile::tempdir().expect("tempdir");
    ufo()
        .current_dir(tmp.path())
        .args(args)
        .output()
        .expect("ufo runs")
}

/// A file outside the folder that a planted link points at, with known content.
fn victim(dir: &Path) -> PathBuf {
    let v = dir.join("victim.txt");
    std::fs::write(&v, "precious\n").expect("write");
    v
}

fn assert_untouched(victim: &Path, ctx: &str) {
    assert_eq!(
        std::fs::read_to_string(victim).expect("victim"),
        "precious\n",
        "written through a planted link: {ctx}"
    );
}

#[test]
fn run_refuses_a_folder_with_planted_links_and_writes_nothing_through_them() {
    for planted in ["ufo.log", ".checkpoint.json.tmp", "events.jsonl"] {
        let tmp = tempfile::tempdir().expect("tempdir");
        let victim = victim(tmp.path());
        let out = tmp.path().join("out");
        std::fs::create_dir(&out).expect("mkdir");
        symlink(&victim, out.join(planted)).expect("symlink");
        let output = run(&scenario_args("app_fail_replan", &out));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_untouched(&victim, planted);
        assert_eq!(output.status.code(), Some(2), "{planted}: {stderr}");
        assert!(stderr.contains("symbolic link"), "{planted}: {stderr}");
        // The link is left as it was for the person to look at.
        assert!(std::fs::symlink_metadata(out.join(planted))
            .expect("still there")
            .is_symlink());
    }
}

#[test]
fn force_clears_planted_links_instead_of_following_them() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let victim = victim(tmp.path());
    let out = tmp.path().join("out");
    std::fs::create_dir(&out).expect("mkdir");
    symlink(&victim, out.join("ufo.log")).expect("symlink");
    symlink(&victim, out.join(".checkpoint.json.tmp")).expect("symlink");
    let mut args = scenario_args("app_fail_replan", &out);
    args.insert(1, "--force".into());
    let output = run(&args);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_untouched(&victim, "--force");
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let log = std::fs::symlink_metadata(out.join("ufo.log")).expect("ufo.log");
    assert!(log.is_file(), "ufo.log is a file of its own now");
}

/// A session cut off before its end (so that it can be resumed).
fn interrupted_session(out: &Path) {
    let first = run(&{
        let mut a = scenario_args("app_fail_replan", out);
        a.insert(1, "--max-steps".into());
        a.insert(2, "2".into());
        a
    });
    assert_eq!(first.status.code(), Some(1), "{first:?}");
    let path = out.join("events.jsonl");
    let text = std::fs::read_to_string(&path).expect("events");
    let kept: String = text
        .lines()
        .filter(|l| {
            !l.contains("\"type\":\"round_end\"") && !l.contains("\"type\":\"session_end\"")
        })
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&path, kept).expect("write");
}

#[test]
fn resume_refuses_an_events_file_that_is_a_link() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = tmp.path().join("out");
    interrupted_session(&out);
    // The events moved out of the folder, a link left in their place.
    let outside = tmp.path().join("elsewhere.jsonl");
    std::fs::rename(out.join("events.jsonl"), &outside).expect("move");
    let before = std::fs::read(&outside).expect("read");
    symlink(&outside, out.join("events.jsonl")).expect("symlink");
    let output = ufo()
        .arg("resume")
        .arg(&out)
        .arg("--max-steps")
        .arg("3")
        .output()
        .expect("resume runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("symbolic link"), "{stderr}");
    assert_eq!(
        std::fs::read(&outside).expect("read"),
        before,
        "the file behind the link was changed"
    );
}

#[test]
fn resume_never_blocks_on_a_fifo_in_the_folder() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = tmp.path().join("out");
    interrupted_session(&out);
    for name in ["run.json", "checkpoint.json", "events.jsonl"] {
        let saved = tmp.path().join(name);
        std::fs::rename(out.join(name), &saved).expect("move");
        let made = Command::new("mkfifo")
            .arg(out.join(name))
            .status()
            .expect("mkfifo runs");
        assert!(made.success());
        let mut child = Command::new(assert_cmd::cargo::cargo_bin("ufo"))
            .arg("resume")
            .arg(&out)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("ufo starts");
        let start = Instant::now();
        let mut code = None;
        while start.elapsed() < Duration::from_secs(20) {
            if let Ok(Some(st)) = child.try_wait() {
                code = Some(st.code());
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        if code.is_none() {
            let _ = child.kill();
        }
        let output = child.wait_with_output().expect("ended");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(code, Some(Some(2)), "{name} as a FIFO: {stderr}");
        assert!(stderr.contains("not a regular file"), "{name}: {stderr}");
        std::fs::remove_file(out.join(name)).expect("rm");
        std::fs::rename(&saved, out.join(name)).expect("move back");
    }
}

/// A finished session's folder and the artifacts its steps name.
fn finished_session(out: &Path) -> Vec<String> {
    let output = run(&scenario_args("app_fail_replan", out));
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let mut pngs: Vec<String> = std::fs::read_dir(out)
        .expect("read_dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".png"))
        .collect();
    pngs.sort();
    pngs
}

#[test]
fn report_reads_and_writes_no_planted_link() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = tmp.path().join("out");
    let pngs = finished_session(&out);
    assert!(!pngs.is_empty(), "the scenario records screenshots");
    // a "screenshot" that is a link to a secret, and a planted temporary file
    let secret = tmp.path().join("secret.png");
    std::fs::write(&secret, b"\x89PNG SECRET-KEY-MATERIAL").expect("write");
    for png in &pngs {
        std::fs::remove_file(out.join(png)).expect("rm");
        symlink(&secret, out.join(png)).expect("symlink");
    }
    let victim = victim(tmp.path());
    symlink(&victim, out.join(".report.html.tmp")).expect("symlink");
    let output = ufo().arg("report").arg(&out).output().expect("report runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert_untouched(&victim, ".report.html.tmp");
    let meta = std::fs::symlink_metadata(out.join("report.html")).expect("report");
    assert!(meta.is_file());
    let html = std::fs::read_to_string(out.join("report.html")).expect("read");
    use base64::Engine as _;
    let leaked = base64::engine::general_purpose::STANDARD.encode(b"\x89PNG SECRET-KEY-MATERIAL");
    assert!(!html.contains(&leaked), "a linked file was embedded");
    assert!(html.contains("symbolic link"), "the page says why");

    // events.jsonl itself a link: refused, a usage error
    let moved = tmp.path().join("events.jsonl");
    std::fs::rename(out.join("events.jsonl"), &moved).expect("move");
    symlink(&moved, out.join("events.jsonl")).expect("symlink");
    let output = ufo().arg("report").arg(&out).output().expect("report runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("symbolic link"), "{stderr}");
}

#[test]
fn a_failed_report_write_leaves_no_temporary_file() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = tmp.path().join("out");
    finished_session(&out);
    // 2 KiB: far less than the page (a file-size limit standing in for a full disk)
    let output = Command::new("sh")
        .arg("-c")
        .arg("ulimit -f 4 && trap '' XFSZ && exec \"$@\"")
        .arg("sh")
        .arg(assert_cmd::cargo::cargo_bin("ufo"))
        .arg("report")
        .arg(&out)
        .stdin(Stdio::null())
        .output()
        .expect("sh runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("cannot write"), "{stderr}");
    let left: Vec<String> = std::fs::read_dir(&out)
        .expect("read_dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp") || n == "report.html")
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// `ufo runs --dir DIR` with a time bound: `None` when it had to be killed.
fn runs_within(dir: &Path, limit: Duration) -> Option<std::process::Output> {
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("ufo"))
        .arg("runs")
        .arg("--dir")
        .arg(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("ufo starts");
    let start = Instant::now();
    while start.elapsed() < limit {
        if let Ok(Some(_)) = child.try_wait() {
            return Some(child.wait_with_output().expect("output"));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

#[test]
fn runs_reads_only_regular_files_and_never_blocks() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let fifo = tmp.path().join("fifo");
    std::fs::create_dir(&fifo).expect("mkdir");
    let made = Command::new("mkfifo")
        .arg(fifo.join("events.jsonl"))
        .status()
        .expect("mkfifo runs");
    assert!(made.success());
    let zero = tmp.path().join("zero");
    std::fs::create_dir(&zero).expect("mkdir");
    symlink("/dev/zero", zero.join("events.jsonl")).expect("symlink");
    let good = tmp.path().join("good");
    std::fs::create_dir(&good).expect("mkdir");
    std::fs::write(
        good.join("events.jsonl"),
        "{\"type\":\"session_start\",\"request\":\"fine\"}\n",
    )
    .expect("write");
    let output = runs_within(tmp.path(), Duration::from_secs(20))
        .expect("ufo runs ended (it blocked on the FIFO or read /dev/zero before)");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("fine"), "{stdout}");
    assert!(stdout.contains("not a regular file"), "{stdout}");
    assert!(stdout.contains("symbolic link"), "{stdout}");
}

/// SIGTERM and SIGHUP end a command that has no session to cancel (`mcp serve` waiting for
/// its input here); before, the Ctrl-C handler installed for every command swallowed them.
#[test]
fn sigterm_and_sighup_end_a_waiting_command() {
    use nix::sys::signal::{kill, Signal};
    use nix::unistd::Pid;
    let desktop = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/desktop.json");
    for signal in [Signal::SIGTERM, Signal::SIGHUP] {
        let mut child = Command::new(assert_cmd::cargo::cargo_bin("ufo"))
            .args(["mcp", "serve", "--desktop"])
            .arg(format!("sim:{}", desktop.display()))
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("ufo starts");
        // let it reach its read loop
        std::thread::sleep(Duration::from_millis(700));
        let pid = Pid::from_raw(i32::try_from(child.id()).expect("pid"));
        kill(pid, signal).expect("signal sent");
        let start = Instant::now();
        let mut ended = false;
        while start.elapsed() < Duration::from_secs(10) {
            if let Ok(Some(_)) = child.try_wait() {
                ended = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        if !ended {
            let _ = child.kill();
        }
        let _ = child.wait();
        assert!(ended, "{signal:?} was ignored");
    }
}

#[test]
fn a_closed_stdout_ends_the_command_quietly() {
    let tmp = tempfile::tempdir().expect("tempdir");
    // enough sessions for more output than a pipe holds
    for i in 0..1500 {
        let d = tmp.path().join(format!("run-{i:04}"));
        std::fs::create_dir(&d).expect("mkdir");
        std::fs::write(
            d.join("events.jsonl"),
            format!("{{\"type\":\"session_start\",\"request\":\"request number {i} with some words to fill the line\"}}\n"),
        )
        .expect("write");
    }
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("ufo"))
        .arg("runs")
        .arg("--dir")
        .arg(tmp.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("ufo starts");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut first = String::new();
    stdout.read_line(&mut first).expect("a first line");
    assert!(first.contains("DATE"), "{first}");
    drop(stdout); // as `| head -1` does
    let output = child.wait_with_output().expect("ends");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(!stderr.contains("Broken pipe"), "{stderr}");
    assert_eq!(output.status.code(), Some(0), "{stderr}");
}
