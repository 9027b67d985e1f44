//! Non-model time per live AppAgent step (issues 13 and 25): the sum of a step's phases other
//! than the model call (`timings_ms` of the `app` step records in events.jsonl), p50 and p95
//! over the *action* steps (those whose action executed; the closing step, which executes
//! none, is reported apart) of several scripted `ufo run --desktop live` sessions, also per
//! function (click, set_text, type_keys, batch), with the first action step of a session (and
//! its observation, the window's first) and the last one (the calculator's `=`) apart. Cases (`UFO_BENCH_ONLY`, a comma-separated
//! list, picks some): `calculator` gnome-calculator 12 × 7 (five clicks, then the display is
//! read through pyatspi and must show 84); `beside` the same with LibreOffice Calc open beside
//! it; `multi` the same with `multi_action` on (one model call for the five clicks);
//! `mousepad` type-and-save (the saved file is read from disk); `chromium`
//! click-a-link-then-observe (the model's second call must be shown the new page, and pyatspi
//! must find the new page's address); `cells` Calc cell entry (five values and a formula set
//! in cells named by address, then read back through pyatspi); `writer` LibreOffice Writer
//! typing (four lines typed into a document's text, then read back through pyatspi). Needs a
//! desktop session (`DISPLAY`) with pyatspi, `chromium`, LibreOffice with its GTK3 plugin and
//! `xdotool`. `UFO_BENCH_RUNS` sets the sessions per binary and case (default 5).
//!
//! The `calculator`, `cells`, `writer` and `chromium` cases also measure, in the same run,
//! what the application itself takes for the same input without ufo ([`own_update`]): after
//! every session, in the window it left open, the same input sent by `xdotool` as many times
//! as the session timed steps (the calculator's `=` once, six cell entries, four lines, one
//! link), then the time from the first key or button press of that input to the
//! application's redraw, both in the X server's clock (XInput 2 raw events, X Damage): a
//! ufo step is timed from before it sends its input, typing included, so the application
//! alone is timed from its first input too. (Runs before timed it from when `xdotool`
//! returned, which left out the typing and xdotool's own pauses; that figure is still
//! printed beside.) Interleaved so, both sides have as many samples and meet the same load. For
//! gnome-calculator's `=` (typed, so no press animation) the first redraw, which shows the
//! result: GTK 4 then redraws the whole window at every frame of its caret's blink, so its
//! last redraw is never seen. For a Calc entry (the text, Delete, Enter, as `set_text` types
//! it, in column B) the last redraw before 300 ms without one: LibreOffice's updates after
//! Enter (the cell, the formula bar, the Name Box) come in several; the same for a Writer
//! line and for Chromium following a link (the pointer moved over it first). A step cannot
//! end before that; the rest of it is ufo's.
//!
//! Each of them prints the ratio of ufo's step to the application alone (p50 to p50, p95 to
//! p95, with both sides' p50 and p95): the `=` step for the calculator, every cell entry for
//! Calc, every line for Writer, the click for Chromium. Every case also prints the first
//! look: the phases of the window's first observation (its debug trace, `observation
//! phases`, read from the session's stderr: the tree, the details, the capture, the
//! encoding, the load wait, the total) and how many reads of the window it took.
//!
//! `UFO_BENCH_LOGS` (a folder) keeps each session's stderr there: its observations' phases,
//! each sheet read (`sheet read`: the hit tests, the cells' texts, the grid's geometry) and
//! each action's phases (`action phases`, `cell entry phases`, the settle's `settled`).
//! `UFO_BENCH_TRACE` replaces that trace's filter (e.g. the default's with `,calls=trace`
//! added: every accessibility call, with its time).
//!
//! `UFO_BENCH_BASE` (a second `ufo` binary, e.g. built from main) runs every session of a
//! case twice, alternating the base and the binary under test, and reports both: before and
//! after in the same run, on the same load.
//!
//!     cargo build -p ufo && cargo bench -p ufo --bench steps
//!     cargo build --release -p ufo && UFO_BENCH_BIN=target/release/ufo \
//!         UFO_BENCH_ONLY=calculator,cells,writer,chromium cargo bench -p ufo --bench steps
//!     UFO_BENCH_BASE=/path/to/old/ufo UFO_BENCH_ONLY=calculator,cells \
//!         cargo test -p ufo --bench steps   # the debug build, without an optimised rebuild
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use x11rb::connection::Connection;
use x11rb::protocol::damage::{self, ConnectionExt as _};
use x11rb::protocol::xinput::{self, ConnectionExt as _};
use x11rb::protocol::Event;

use serde_json::{json, Value};
use ufo_desktop::testing::script::{app, app_line, host_assign, host_finish, line};

/// Sessions per binary and case: `UFO_BENCH_RUNS`, default 5.
fn runs() -> usize {
    std::env::var("UFO_BENCH_RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .filter(|r| *r > 0)
        .unwrap_or(5)
}

fn binary() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    match std::env::var_os("UFO_BENCH_BIN") {
        Some(b) => PathBuf::from(b),
        None => root.join("target/debug/ufo"),
    }
}

/// The binaries a case runs, each with its label: the one under test, and before it the
/// base of `UFO_BENCH_BASE` when set (their sessions alternate).
fn binaries() -> Vec<(&'static str, PathBuf)> {
    let mut bins = Vec::new();
    if let Some(b) = std::env::var_os("UFO_BENCH_BASE") {
        bins.push(("base", PathBuf::from(b)));
    }
    bins.push(("new", binary()));
    bins
}

/// The phases of an observation in its debug trace, in the order they are printed.
const PHASES: [&str; 7] = [
    "tree_ms",
    "details_ms",
    "capture_ms",
    "encode_ms",
    "load_wait_ms",
    "pixel_evidence_ms",
    "total_ms",
];

/// The first observation in a session's stderr (run with [`TRACE`]): the milliseconds of
/// each of its [`PHASES`], and how many reads of the window it took (the `window controls
/// read` lines before it).
fn first_look(stderr: &str) -> Option<([f64; 7], usize)> {
    let mut reads = 0;
    for l in stderr.lines() {
        if l.contains("window controls read") {
            reads += 1;
        }
        if !l.contains("observation phases") {
            continue;
        }
        let mut ms = [f64::NAN; 7];
        for (i, p) in PHASES.iter().enumerate() {
            ms[i] = l
                .split_whitespace()
                .find_map(|w| w.strip_prefix(p)?.strip_prefix('=')?.parse().ok())?;
        }
        return Some((ms, reads));
    }
    None
}

/// The log filter of the sessions: warnings, the observation's phase traces (with the
/// sheets' `sheet read` lines: the hit tests, the cells' texts and the grid's geometry) and
/// the actions' (`action phases`, `cell entry phases`, and the settle's `settled` line: its
/// first change, when it decided, its observations made while waiting).
const TRACE: &str = "warn,ufo_linux::observe::take=debug,ufo_linux::observe::read=debug,\
                     ufo_linux::apps::table=debug,ufo_linux::act=debug";

/// With `UFO_BENCH_LOGS` (a folder): each session's stderr (its [`TRACE`]) is kept there,
/// one file a session, named after its binary's label and its order, to read its phases.
fn keep_log(bin: &Path, stderr: &str) {
    static SESSIONS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let Some(dir) = std::env::var_os("UFO_BENCH_LOGS") else {
        return;
    };
    let n = SESSIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let label = binaries()
        .into_iter()
        .find(|(_, b)| b == bin)
        .map_or("new", |(l, _)| l);
    let file = Path::new(&dir).join(format!("{n:03}-{label}.log"));
    if let Err(e) = std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(&file, stderr)) {
        eprintln!(
            "the session's log could not be kept in {}: {e}",
            file.display()
        );
    }
}

/// What the runs of one case measured.
#[derive(Default)]
struct Measured {
    /// function and non-model milliseconds of each AppAgent step whose action executed
    actions: Vec<(String, f64)>,
    /// non-model milliseconds of each AppAgent step that executed no action (the closing one)
    closing: Vec<f64>,
    /// data-collection milliseconds of each action step
    collect: Vec<f64>,
    /// per session: the non-model milliseconds of the first action step, and its data
    /// collection (the first observation of the window)
    first: Vec<f64>,
    first_collect: Vec<f64>,
    /// per session: the non-model milliseconds of the last action step (the calculator's `=`)
    last: Vec<f64>,
    /// non-model milliseconds of each whole session (every step, host steps included)
    sessions: Vec<f64>,
    /// AppAgent model calls
    calls: usize,
    /// runs whose result was checked right
    ok: usize,
    /// per session: the phases of the window's first observation and its reads
    /// ([`first_look`])
    first_look: Vec<([f64; 7], usize)>,
}

/// Run one scripted session and add what it measured to `m`.
fn run(bin: &Path, dir: &Path, lines: &[String], task: &str, multi: bool, m: &mut Measured) {
    let script = dir.join("script.jsonl");
    std::fs::write(&script, lines.join("\n")).unwrap();
    let out = dir.join("out");
    let _ = std::fs::remove_dir_all(&out);
    let mut cmd = Command::new(bin);
    cmd.args(["run", "--desktop", "live", "--llm"])
        .arg(format!("script:{}", script.display()))
        .arg("--out")
        .arg(&out)
        .env_remove("UFO_LLM")
        .env(
            "UFO_LOG",
            std::env::var("UFO_BENCH_TRACE").unwrap_or_else(|_| TRACE.to_string()),
        );
    if multi {
        let cfg = dir.join("config.toml");
        std::fs::write(&cfg, "multi_action = true\n").unwrap();
        cmd.arg("--config").arg(&cfg);
    }
    let status = cmd.arg(task).output().unwrap();
    let stderr = String::from_utf8_lossy(&status.stderr);
    if !status.status.success() {
        eprintln!("run failed ({:?}): {stderr}", status.status.code());
    }
    keep_log(bin, &stderr);
    m.first_look.extend(first_look(&stderr));
    let events = std::fs::read_to_string(out.join("events.jsonl")).unwrap_or_default();
    let mut session = 0.0;
    let mut steps: Vec<(f64, f64)> = Vec::new();
    for e in events
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
    {
        if e["type"] != "step" {
            continue;
        }
        // the step's whole time less the model call (records without timings are the
        // archive steps that end a subtask: no work)
        let t = &e["timings_ms"];
        let Some(total) = t["total"].as_f64() else {
            continue;
        };
        let own = total - t["llm_interaction"].as_f64().unwrap_or(0.0);
        session += own;
        if e["role"] == "app" {
            m.calls += 1;
            if e["action"]["executed"] == true {
                let function = e["action"]["function"].as_str().unwrap_or("?").to_string();
                m.actions.push((function, own));
                let collect = t["data_collection"].as_f64().unwrap_or(f64::NAN);
                m.collect.push(collect);
                steps.push((own, collect));
            } else {
                m.closing.push(own);
            }
        }
    }
    m.sessions.push(session);
    if let (Some(first), Some(last)) = (steps.first(), steps.last()) {
        m.first.push(first.0);
        m.first_collect.push(first.1);
        m.last.push(last.0);
    }
}

/// The first shown window whose title matches `name` (`xdotool search --name`), waited for
/// up to `within` (looked for once at least).
fn window_named(name: &str, within: Duration) -> Option<u32> {
    let deadline = Instant::now() + within;
    loop {
        let found = Command::new("xdotool")
            .args(["search", "--onlyvisible", "--name", name])
            .output()
            .unwrap();
        let found = String::from_utf8_lossy(&found.stdout);
        if let Some(id) = found.split_whitespace().next().and_then(|w| w.parse().ok()) {
            return Some(id);
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Which redraw [`own_update`] times.
#[derive(Clone, Copy)]
enum Redraw {
    /// the first one after the input
    First,
    /// the last one before 300 ms without any
    Last,
}

/// The longest pause between two redraws of one update the application alone made, over the
/// samples of [`own_update`] that time the last redraw (how long a quiet time must be not to
/// end a step in the middle of an update).
static GAPS: std::sync::Mutex<Vec<f64>> = std::sync::Mutex::new(Vec::new());

/// Milliseconds, in the X server's clock, from the first input of one [`own_update`] to the
/// redraw timed, as measured before (from when the last `xdotool` returned; kept to compare
/// with runs of the bench before the input's own time was read).
static AFTER_RETURN: std::sync::Mutex<Vec<f64>> = std::sync::Mutex::new(Vec::new());

/// Without ufo: run `xdotool` once per item of `runs` (input for the active window `xid`) and
/// return the milliseconds from the first key or button press it sent to the window's first
/// or last redraw, both read in the X server's clock (XInput 2 raw events, X Damage): a ufo
/// step is timed from before it sends its input, so the application alone is too, typing
/// included. At most 3 s; `None` when nothing was redrawn by then or no press was seen. For
/// the last redraw, the longest pause between two of its redraws is noted in [`GAPS`].
fn own_update(xid: u32, runs: &[&[&str]], mark: Redraw) -> Option<f64> {
    const QUIET: Duration = Duration::from_millis(300);
    let (conn, screen) = x11rb::connect(None).ok()?;
    conn.damage_query_version(1, 1).ok()?.reply().ok()?;
    conn.xinput_xi_query_version(2, 2).ok()?.reply().ok()?;
    let root = conn.setup().roots.get(screen)?.root;
    let presses = xinput::XIEventMask::RAW_KEY_PRESS | xinput::XIEventMask::RAW_BUTTON_PRESS;
    conn.xinput_xi_select_events(
        root,
        &[xinput::EventMask {
            deviceid: xinput::Device::ALL_MASTER.into(),
            mask: vec![presses],
        }],
    )
    .ok()?
    .check()
    .ok()?;
    let d = conn.generate_id().ok()?;
    conn.damage_create(d, xid, damage::ReportLevel::RAW_RECTANGLES)
        .ok()?
        .check()
        .ok()?;
    while conn.poll_for_event().ok()?.is_some() {}
    for args in runs {
        if !Command::new("xdotool").args(*args).status().ok()?.success() {
            return None;
        }
    }
    let t0 = Instant::now();
    // the first press's server time, and each redraw's since it (server ms)
    let mut pressed: Option<u32> = None;
    let mut seen: Option<(Duration, Instant, u32)> = None;
    let mut gap = Duration::ZERO;
    let over = |seen: &Option<(Duration, Instant, u32)>| match (mark, seen) {
        (_, None) => false,
        (Redraw::First, Some(_)) => true,
        (Redraw::Last, Some((_, at, _))) => at.elapsed() >= QUIET,
    };
    while !over(&seen) && t0.elapsed() < Duration::from_secs(3) {
        match conn.poll_for_event().ok()? {
            Some(Event::XinputRawKeyPress(e)) => {
                pressed.get_or_insert(e.time);
            }
            Some(Event::XinputRawButtonPress(e)) => {
                pressed.get_or_insert(e.time);
            }
            Some(Event::DamageNotify(e)) if pressed.is_some() => {
                if let Some((_, at, _)) = seen {
                    gap = gap.max(at.elapsed());
                }
                seen = Some((t0.elapsed(), Instant::now(), e.timestamp));
            }
            Some(_) => {}
            None => std::thread::sleep(Duration::from_millis(1)),
        }
    }
    if matches!(mark, Redraw::Last) && seen.is_some() {
        if let Ok(mut g) = GAPS.lock() {
            g.push(gap.as_secs_f64() * 1000.0);
        }
    }
    let _ = conn.damage_destroy(d);
    let _ = conn.flush();
    // let the application finish before the next input
    std::thread::sleep(Duration::from_millis(500));
    let (after_return, _, drawn) = seen?;
    if let Ok(mut a) = AFTER_RETURN.lock() {
        a.push(after_return.as_secs_f64() * 1000.0);
    }
    Some(f64::from(drawn.wrapping_sub(pressed?)))
}

/// gnome-calculator's own time for `=` without ufo, in the calculator a session left open
/// (it shows 84): 12 × 7 typed into it again, then `=` typed and timed to its first redraw.
fn calculator_alone_once() -> Option<f64> {
    let xid = window_named("^Calculator$", Duration::from_secs(5))?;
    let _ = Command::new("xdotool")
        .args(["windowactivate", "--sync", &xid.to_string()])
        .status();
    std::thread::sleep(Duration::from_millis(300));
    let _ = Command::new("xdotool").args(["key", "Escape"]).status();
    let _ = Command::new("xdotool")
        .args(["type", "--delay", "20", "12*7"])
        .status();
    std::thread::sleep(Duration::from_millis(500));
    own_update(xid, &[&["key", "Return"]], Redraw::First)
}

/// The calculator's display text through pyatspi; the calculator is closed afterwards.
fn calculator_display() -> String {
    app_text_and_close("calculator")
}

/// The calculator's display text through pyatspi, the calculator left open.
fn calculator_display_open() -> String {
    app_text("calculator", false)
}

/// The text of the last non-empty text field of the application whose name contains `app`
/// (read through pyatspi on this session's bus); the application is closed afterwards and
/// waited for (up to 5 s), so the next run starts a fresh one.
fn app_text_and_close(app: &str) -> String {
    app_text(app, true)
}

/// [`app_text_and_close`], the application closed only when `close`.
fn app_text(app: &str, close: bool) -> String {
    let py = r#"
import pyatspi, os, signal, sys, time
d = pyatspi.Registry.getDesktop(0)
shown = ''
pids = []
for a in d:
    if a is None or sys.argv[1] not in (a.name or '').lower():
        continue
    stack = [a]
    n = 0
    while stack and n < 3000:
        o = stack.pop(); n += 1
        try:
            if o.getRole() in (pyatspi.ROLE_EDITBAR, pyatspi.ROLE_TEXT, pyatspi.ROLE_ENTRY):
                t = o.queryText().getText(0, -1)
                if t.strip():
                    shown = t.strip()
            if 0 <= o.childCount <= 500:
                stack.extend(o[i] for i in range(o.childCount))
        except Exception:
            pass
    if sys.argv[2] == 'close':
        pids.append(a.get_process_id())
        os.kill(pids[-1], signal.SIGTERM)
for _ in range(50 if pids else 0):
    if not any(os.path.exists('/proc/%d' % p) for p in pids):
        break
    time.sleep(0.1)
if pids:
    time.sleep(0.3)
print(shown)
"#;
    let out = Command::new("/usr/bin/python3")
        .arg("-c")
        .arg(py)
        .arg(app)
        .arg(if close { "close" } else { "keep" })
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn kill_mousepad() {
    app_text_and_close("mousepad");
}

fn pct(v: &mut [f64], p: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    v[((v.len() - 1) as f64 * p).round() as usize]
}

fn report(name: &str, m: &mut Measured) {
    let mut all: Vec<f64> = m.actions.iter().map(|a| a.1).collect();
    let (p50, p95) = (pct(&mut all, 0.5), pct(&mut all, 0.95));
    let mut functions: Vec<&str> = m.actions.iter().map(|a| a.0.as_str()).collect();
    functions.sort_unstable();
    functions.dedup();
    let per: Vec<String> = functions
        .iter()
        .map(|f| {
            let mut v: Vec<f64> = m
                .actions
                .iter()
                .filter(|a| a.0 == *f)
                .map(|a| a.1)
                .collect();
            let n = v.len();
            format!(
                "{f} {n}: p50 {:.0} / p95 {:.0}",
                pct(&mut v, 0.5),
                pct(&mut v, 0.95)
            )
        })
        .collect();
    let closing = pct(&mut m.closing, 0.5);
    let collect = pct(&mut m.collect, 0.5);
    let session = pct(&mut m.sessions, 0.5);
    let first = pct(&mut m.first, 0.5);
    let first_collect = pct(&mut m.first_collect, 0.5);
    let last = pct(&mut m.last, 0.5);
    println!(
        "{name}: {} action steps, non-model time per action step p50 {p50:.0} ms, p95 {p95:.0} ms \
         ({}); first action step p50 {first:.0} ms (its observation, the window's first, \
         {first_collect:.0} ms); last action step p50 {last:.0} ms; closing steps {} p50 \
         {closing:.0} ms; data collection p50 {collect:.0} ms; whole session p50 {session:.0} ms; \
         {} app model calls in {} runs; result right in {}/{}; load {}",
        all.len(),
        per.join(", "),
        m.closing.len(),
        m.calls,
        m.sessions.len(),
        m.ok,
        m.sessions.len(),
        load()
    );
    print_first_look(name, &m.first_look);
}

/// The first look of a case: p50 and max of each phase of the window's first observation
/// over its sessions, and its reads of the window.
fn print_first_look(name: &str, looks: &[([f64; 7], usize)]) {
    if looks.is_empty() {
        println!("{name}: first look: no `observation phases` trace in the sessions' stderr");
        return;
    }
    let phases: Vec<String> = PHASES
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let mut v: Vec<f64> = looks.iter().map(|l| l.0[i]).collect();
            let p = p.trim_end_matches("_ms");
            format!("{p} {:.0}/{:.0}", pct(&mut v, 0.5), pct(&mut v, 1.0))
        })
        .collect();
    let mut reads: Vec<f64> = looks.iter().map(|l| l.1 as f64).collect();
    println!(
        "{name}: first look (the window's first observation), ms p50/max over {}: {}; reads of \
         the window p50 {:.0}, max {:.0}",
        looks.len(),
        phases.join(", "),
        pct(&mut reads, 0.5),
        pct(&mut reads, 1.0)
    );
}

/// ufo's step ÷ the application alone for the same input, p50 to p50 and p95 to p95.
fn print_ratio(name: &str, ufo: &[f64], alone: &[f64]) {
    let (mut u, mut a) = (ufo.to_vec(), alone.to_vec());
    let (u50, u95, a50, a95) = (
        pct(&mut u, 0.5),
        pct(&mut u, 0.95),
        pct(&mut a, 0.5),
        pct(&mut a, 0.95),
    );
    println!(
        "{name}: ratio ufo ÷ application alone p50 {:.2}× ({u50:.0} / {a50:.0} ms), p95 {:.2}× \
         ({u95:.0} / {a95:.0} ms); {} ufo steps, {} alone; load {}",
        u50 / a50,
        u95 / a95,
        ufo.len(),
        alone.len(),
        load()
    );
}

/// The load average over the last minute (the machine is shared: numbers go with it).
fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "?".to_string())
}

/// The calculator case with each of `bins` (their sessions alternate); what each measured,
/// and the calculator's own time for `=` measured after each session ([`Alone`]).
fn calculator(
    bins: &[(&'static str, PathBuf)],
    dir: &Path,
    multi: bool,
    name: &str,
) -> (Vec<Measured>, Vec<f64>) {
    let task = "Compute 12 x 7";
    let click = |t: &str, s: &str| app_line(t, "", "click", json!({}), s);
    let lines: Vec<String> = if multi {
        let a = |t: &str| json!({"ControlText": t, "Function": "click", "Args": {}});
        vec![
            host_assign(task, "calculator"),
            line(
                "app",
                json!({"Observation": "o", "Thought": "t", "Status": "FINISH",
                       "Actions": [a("1"), a("2"), a("×"), a("7"), a("=")]}),
                &[],
            ),
            host_finish(),
        ]
    } else {
        vec![
            host_assign(task, "calculator"),
            click("1", "CONTINUE"),
            click("2", "CONTINUE"),
            click("×", "CONTINUE"),
            click("7", "CONTINUE"),
            click("=", "FINISH"),
            host_finish(),
        ]
    };
    let mut ms: Vec<Measured> = bins.iter().map(|_| Measured::default()).collect();
    let mut alone = Alone::default();
    for _ in 0..runs() {
        for ((_, bin), m) in bins.iter().zip(&mut ms) {
            run(bin, dir, &lines, task, multi, m);
            let shown = calculator_display_open();
            if shown == "84" {
                m.ok += 1;
            } else {
                eprintln!("the calculator shows {shown:?}, not 84");
            }
            // the application alone, right after the session, on the same load
            alone.ms.extend(calculator_alone_once());
            alone.runs += 1;
            let shown = calculator_display();
            if shown == "84" {
                alone.ok += 1;
            } else {
                eprintln!("alone, the calculator shows {shown:?}, not 84");
            }
        }
    }
    for ((label, _), m) in bins.iter().zip(&mut ms) {
        report(&format!("{name} [{label}]"), m);
    }
    alone.print(
        "gnome-calculator alone, `=` typed: first redraw after the key",
        "84",
    );
    (ms, alone.ms)
}

/// What the application alone measured (its own time for the same input, without ufo),
/// interleaved with the sessions: after each one, in the window it left open.
#[derive(Default)]
struct Alone {
    /// milliseconds from the input to the redraw timed
    ms: Vec<f64>,
    /// the inputs timed, and those whose result was checked right afterwards
    runs: usize,
    ok: usize,
}

impl Alone {
    /// Print the samples (with the pauses within updates noted since the last print, see
    /// [`GAPS`]).
    fn print(&self, what: &str, right: &str) {
        let mut gaps = GAPS
            .lock()
            .map(|mut g| std::mem::take(&mut *g))
            .unwrap_or_default();
        if !gaps.is_empty() {
            println!(
                "{what}: longest pause between two redraws of one update p50 {:.0} ms, p95 {:.0} \
                 ms, max {:.0} ms ({} updates)",
                pct(&mut gaps, 0.5),
                pct(&mut gaps, 0.95),
                pct(&mut gaps, 1.0),
                gaps.len()
            );
        }
        let mut after_return = AFTER_RETURN
            .lock()
            .map(|mut a| std::mem::take(&mut *a))
            .unwrap_or_default();
        if !after_return.is_empty() {
            println!(
                "{what}, timed from when xdotool returned (as before): p50 {:.0} ms, p95 {:.0} ms",
                pct(&mut after_return, 0.5),
                pct(&mut after_return, 0.95),
            );
        }
        println!(
            "{what}: p50 {:.0} ms, p95 {:.0} ms, max {:.0} ms ({} timed; result {right} \
             checked right in {}/{}); load {}",
            pct(&mut self.ms.clone(), 0.5),
            pct(&mut self.ms.clone(), 0.95),
            pct(&mut self.ms.clone(), 1.0),
            self.ms.len(),
            self.ok,
            self.runs,
            load()
        );
    }
}

fn mousepad(bin: &Path, dir: &Path) {
    let task = "Write a note and save it";
    let mut m = Measured::default();
    for i in 0..runs() {
        let file = dir.join(format!("note{i}.txt"));
        let lines = vec![
            host_assign(task, "text editor"),
            app_line(
                "",
                "7",
                "type_keys",
                json!({"keys": "Hello from ufo-rs{ENTER}bye"}),
                "CONTINUE",
            ),
            app_line(
                "",
                "7",
                "type_keys",
                json!({"keys": "{ctrl+s}"}),
                "SCREENSHOT",
            ),
            app_line(
                "Name",
                "",
                "set_text",
                json!({"text": file.display().to_string()}),
                "CONTINUE",
            ),
            app_line("Save", "", "click", json!({}), "FINISH"),
            host_finish(),
        ];
        run(bin, dir, &lines, task, false, &mut m);
        let mut content = String::new();
        for _ in 0..50 {
            content = std::fs::read_to_string(&file).unwrap_or_default();
            if !content.is_empty() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        if content.trim_end() == "Hello from ufo-rs\nbye" {
            m.ok += 1;
        } else {
            eprintln!("the saved file holds {content:?}");
        }
        kill_mousepad();
    }
    report("mousepad type-and-save", &mut m);
}

/// The Chromium page the bench starts on, and the page its link leads to.
fn write_pages(dir: &Path) -> PathBuf {
    let first = dir.join("first.html");
    std::fs::write(
        &first,
        "<!doctype html><html><head><title>First page</title></head><body><h1>Start here</h1>\
         <p><a href=\"second.html\">Go to the second page</a></p></body></html>",
    )
    .unwrap();
    std::fs::write(
        dir.join("second.html"),
        "<!doctype html><html><head><title>Second page</title></head><body>\
         <h1>Arrived on page two</h1><p><a href=\"first.html\">Back to the first page</a></p>\
         </body></html>",
    )
    .unwrap();
    first
}

/// Through pyatspi: the address of the page Chromium shows.
const PAGE_URI: &str = r#"
import pyatspi
def find(n, depth=0):
    if n.getRoleName() == 'document web': return n
    if depth > 25: return None
    for i in range(min(n.childCount, 50)):
        c = n.getChildAtIndex(i)
        r = find(c, depth + 1) if c is not None else None
        if r: return r
    return None
for app in pyatspi.Registry.getDesktop(0):
    if app is not None and (app.name or '').lower().startswith('chrom'):
        doc = find(app)
        if doc is not None:
            attrs = dict(a.split(':', 1) for a in doc.queryDocument().getAttributes() if ':' in a)
            print(attrs.get('URI', ''))
            break
"#;

/// Through pyatspi: the centre, on the screen, of Chromium's link named `argv[1]`.
const LINK_AT: &str = r#"
import pyatspi, sys
def find(n, depth=0):
    if n.getRole() == pyatspi.ROLE_LINK and n.name == sys.argv[1]: return n
    if depth > 30: return None
    for i in range(min(n.childCount, 80)):
        c = n.getChildAtIndex(i)
        r = find(c, depth + 1) if c is not None else None
        if r: return r
    return None
for app in pyatspi.Registry.getDesktop(0):
    if app is not None and (app.name or '').lower().startswith('chrom'):
        link = find(app)
        if link is not None:
            e = link.queryComponent().getExtents(pyatspi.DESKTOP_COORDS)
            print(e.x + e.width // 2, e.y + e.height // 2)
            break
"#;

/// The address of the page Chromium shows (through pyatspi).
fn page_uri() -> String {
    let uri = Command::new("/usr/bin/python3")
        .args(["-c", PAGE_URI])
        .output()
        .unwrap();
    String::from_utf8_lossy(&uri.stdout).trim().to_string()
}

/// Chromium's own time for following a link without ufo, on the second page a session left
/// open: the pointer moved over "Back to the first page" (its hover drawn and let settle),
/// then a click sent with xdotool, timed to the window's last redraw before 300 ms without
/// one (the first page laid out and drawn).
fn chromium_alone_once() -> Option<f64> {
    let xid = window_named("Second page", Duration::from_secs(5))?;
    let _ = Command::new("xdotool")
        .args(["windowactivate", "--sync", &xid.to_string()])
        .status();
    let at = Command::new("/usr/bin/python3")
        .args(["-c", LINK_AT, "Back to the first page"])
        .output()
        .ok()?;
    let at = String::from_utf8_lossy(&at.stdout).to_string();
    let mut xy = at.split_whitespace();
    let (x, y) = (xy.next()?.to_string(), xy.next()?.to_string());
    let _ = Command::new("xdotool")
        .args(["mousemove", "--sync", &x, &y])
        .status();
    std::thread::sleep(Duration::from_millis(500));
    own_update(xid, &[&["click", "1"]], Redraw::Last)
}

fn chromium(bins: &[(&'static str, PathBuf)], dir: &Path) {
    let task = "Follow the link to the second page";
    let lines = vec![
        host_assign(task, "First page - Chromium"),
        app_line("Go to the second page", "", "click", json!({}), "CONTINUE"),
        // the observation after the click must be of the new page (not a stale one)
        line(
            "app",
            app("", "", "", json!({}), "FINISH"),
            &["Back to the first page"],
        ),
        host_finish(),
    ];
    let mut ms: Vec<Measured> = bins.iter().map(|_| Measured::default()).collect();
    let mut alone = Alone::default();
    for i in 0..runs() * bins.len() {
        let (bin, m) = (&bins[i % bins.len()].1, &mut ms[i % bins.len()]);
        let pages = dir.join(format!("pages{i}"));
        std::fs::create_dir_all(&pages).unwrap();
        let first = write_pages(&pages);
        let _browser = ufo_desktop::testing::start_chromium(
            &pages.join("profile"),
            &format!("file://{}", first.display()),
        );
        // the page is ready once its link is listed
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(40);
        while std::time::Instant::now() < deadline {
            let shown = Command::new(bin)
                .args(["inspect", "First page", "--png", "/dev/null"])
                .output()
                .unwrap();
            if String::from_utf8_lossy(&shown.stdout).contains("Go to the second page") {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(300));
        }
        run(bin, dir, &lines, task, false, m);
        let uri = page_uri();
        if uri.ends_with("/second.html") {
            m.ok += 1;
        } else {
            eprintln!("Chromium shows {uri:?}, not second.html");
        }
        // the application alone, right after the session, on the same load
        alone.ms.extend(chromium_alone_once());
        alone.runs += 1;
        let uri = page_uri();
        if uri.ends_with("/first.html") {
            alone.ok += 1;
        } else {
            eprintln!("alone, Chromium shows {uri:?}, not first.html");
        }
    }
    alone.print(
        "Chromium alone, a link clicked: last redraw after the click",
        "first.html",
    );
    for ((label, _), m) in bins.iter().zip(&mut ms) {
        let name = format!("chromium click-a-link-then-observe [{label}]");
        report(&name, m);
        let clicks: Vec<f64> = m.actions.iter().map(|a| a.1).collect();
        print_ratio(&format!("{name}, the click"), &clicks, &alone.ms);
    }
}

/// An empty spreadsheet as a flat ODF file (LibreOffice opens it without a question).
const EMPTY_SHEET: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<office:document xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" office:version="1.2" office:mimetype="application/vnd.oasis.opendocument.spreadsheet"><office:body><office:spreadsheet><table:table table:name="Sheet1"><table:table-row><table:table-cell/></table:table-row></table:table></office:spreadsheet></office:body></office:document>"#;

/// LibreOffice Calc on `name` (an empty sheet written into `dir`), with its own profile in
/// `dir`, its window shown and given 3 s to finish; its processes end with the guard.
fn start_calc(dir: &Path, name: &str) -> ufo_desktop::testing::ProcessGuard {
    start_office(dir, name, EMPTY_SHEET, "Calc")
}

/// LibreOffice on `name` (`content` written into `dir`), with its own profile in `dir`, its
/// window (titled after the `module`: Calc, Writer) shown and given 3 s to finish; its
/// processes end with the guard.
fn start_office(
    dir: &Path,
    name: &str,
    content: &str,
    module: &str,
) -> ufo_desktop::testing::ProcessGuard {
    let file = dir.join(name);
    std::fs::write(&file, content).unwrap();
    let profile_arg = format!(
        "-env:UserInstallation=file://{}",
        dir.join(format!("{name}-profile")).display()
    );
    let child = Command::new("libreoffice")
        .args(["--norestore", "--nologo", &profile_arg])
        .arg(&file)
        .env("SAL_USE_VCLPLUGIN", "gtk3")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("libreoffice does not start");
    let guard = ufo_desktop::testing::ProcessGuard::new(profile_arg, Some(child));
    window_named(
        &format!("{name} - LibreOffice {module}"),
        Duration::from_secs(90),
    );
    // LibreOffice finishes its window a few seconds after it shows it
    std::thread::sleep(Duration::from_secs(3));
    guard
}

/// An empty text document as a flat ODF file.
const EMPTY_TEXT: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<office:document xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" office:version="1.2" office:mimetype="application/vnd.oasis.opendocument.text"><office:body><office:text><text:p/></office:text></office:body></office:document>"#;

/// Through pyatspi: the texts of the paragraphs of LibreOffice Writer's document, joined by
/// `|`.
const DOC_PARAGRAPHS: &str = r#"
import pyatspi, sys
for a in pyatspi.Registry.getDesktop(0):
    name = ((a.name if a is not None else '') or '').lower()
    if 'soffice' not in name and 'libreoffice' not in name:
        continue
    stack, n = [a], 0
    while stack and n < 5000:
        o = stack.pop(); n += 1
        try:
            if o.getRole() == pyatspi.ROLE_DOCUMENT_TEXT:
                print('|'.join(o[i].queryText().getText(0, -1) for i in range(o.childCount)))
                sys.exit(0)
            if 0 <= o.childCount <= 500:
                stack.extend(o[i] for i in range(o.childCount))
        except Exception:
            pass
"#;

/// The words the Writer case types, one line each (capitalised: Writer's autocorrection
/// capitalises a line's first word).
const WORDS: [&str; 4] = ["Hello", "From", "Ufo", "Bye"];

/// The paragraphs of the open Writer document (through pyatspi), joined by `|`.
fn doc_paragraphs() -> String {
    let shown = Command::new("/usr/bin/python3")
        .args(["-c", DOC_PARAGRAPHS])
        .output()
        .unwrap();
    String::from_utf8_lossy(&shown.stdout).trim().to_string()
}

/// Writer typing: four words typed into an empty document, one `type_keys` step a line (the
/// word, then Enter), then the document's paragraphs read back through pyatspi, in order.
fn writer(bins: &[(&'static str, PathBuf)], dir: &Path) {
    let task = "Type four lines";
    let mut ms: Vec<Measured> = bins.iter().map(|_| Measured::default()).collect();
    let mut alone = Alone::default();
    let once = WORDS.join("|");
    for i in 0..runs() * bins.len() {
        let (bin, m) = (&bins[i % bins.len()].1, &mut ms[i % bins.len()]);
        let stem = format!("text{i}");
        let name = format!("{stem}.fodt");
        let document = format!("{stem} - LibreOffice Document");
        let mut lines = vec![host_assign(task, &format!("{name} - LibreOffice Writer"))];
        for (n, w) in WORDS.iter().enumerate() {
            let status = if n + 1 == WORDS.len() {
                "FINISH"
            } else {
                "CONTINUE"
            };
            let keys = json!({"keys": format!("{w}{{ENTER}}")});
            lines.push(app_line(&document, "", "type_keys", keys, status));
        }
        lines.push(host_finish());
        let _writer = start_office(dir, &name, EMPTY_TEXT, "Writer");
        run(bin, dir, &lines, task, false, m);
        let shown = doc_paragraphs();
        if same_lines(&shown, &WORDS) {
            m.ok += 1;
        } else {
            eprintln!("the document shows {shown:?}, not the lines {once}");
        }
        // the application alone, right after the session, on the same load
        alone.ms.extend(writer_alone(&name));
        alone.runs += 1;
        let shown = doc_paragraphs();
        if shown.ends_with(&format!("|{once}|")) {
            alone.ok += 1;
        } else {
            eprintln!("alone, the document does not end with {once}: {shown:?}");
        }
    }
    alone.print(
        "Writer alone, the same lines typed: last redraw after the keys",
        "(the lines)",
    );
    for ((label, _), m) in bins.iter().zip(&mut ms) {
        let name = format!("Writer typing (4 lines) [{label}]");
        report(&name, m);
        let steps: Vec<f64> = m.actions.iter().map(|a| a.1).collect();
        print_ratio(&format!("{name}, each line"), &steps, &alone.ms);
    }
}

/// Whether the document's paragraphs (`shown`, joined by `|`) are `words` in order, empty
/// ones left out.
fn same_lines(shown: &str, words: &[&str]) -> bool {
    let lines: Vec<&str> = shown.split('|').filter(|l| !l.is_empty()).collect();
    lines == words
}

/// LibreOffice Writer's own time for a line without ufo, in the document `name` a session
/// left open: the same words typed with xdotool at its end (the word, then Enter), each timed
/// to the window's last redraw before 300 ms without one (typing restarts the caret's blink,
/// which comes back after ~500 ms).
fn writer_alone(name: &str) -> Vec<f64> {
    let Some(xid) = window_named(
        &format!("{name} - LibreOffice Writer"),
        Duration::from_secs(5),
    ) else {
        eprintln!("Writer alone: no window");
        return Vec::new();
    };
    let _ = Command::new("xdotool")
        .args(["windowactivate", "--sync", &xid.to_string()])
        .status();
    std::thread::sleep(Duration::from_millis(300));
    let _ = Command::new("xdotool").args(["key", "ctrl+End"]).status();
    std::thread::sleep(Duration::from_millis(500));
    let mut own = Vec::new();
    for w in WORDS {
        own.extend(own_update(
            xid,
            &[&["type", "--delay", "0", w], &["key", "Return"]],
            Redraw::Last,
        ));
    }
    own
}

/// Through pyatspi: the texts of the first six cells of column `argv[1]` (0 is A) of
/// LibreOffice's sheet, comma-separated.
const SHEET_CELLS: &str = r#"
import pyatspi, sys
for a in pyatspi.Registry.getDesktop(0):
    name = ((a.name if a is not None else '') or '').lower()
    if 'soffice' not in name and 'libreoffice' not in name:
        continue
    stack, n = [a], 0
    while stack and n < 5000:
        o = stack.pop(); n += 1
        try:
            if o.getRole() == pyatspi.ROLE_TABLE and (o.name or '').startswith('Sheet'):
                t = o.queryTable()
                col = int(sys.argv[1])
                print(','.join(t.getAccessibleAt(r, col).queryText().getText(0, -1) for r in range(6)))
                sys.exit(0)
            if 0 <= o.childCount <= 500:
                stack.extend(o[i] for i in range(o.childCount))
        except Exception:
            pass
"#;

/// Calc cell entry: five values and their sum entered in A1..A6, each cell named by its
/// address, then read back through pyatspi.
fn cells(bins: &[(&'static str, PathBuf)], dir: &Path) {
    let task = "Enter the numbers and their sum";
    let mut ms: Vec<Measured> = bins.iter().map(|_| Measured::default()).collect();
    let mut alone = Alone::default();
    for i in 0..runs() * bins.len() {
        let (bin, m) = (&bins[i % bins.len()].1, &mut ms[i % bins.len()]);
        let name = format!("cells{i}.fods");
        let set = |cell: &str, text: &str, status: &str| {
            app_line(cell, "", "set_text", json!({"text": text}), status)
        };
        let lines = vec![
            host_assign(task, &format!("{name} - LibreOffice Calc")),
            set("A1", "5", "CONTINUE"),
            set("A2", "7", "CONTINUE"),
            set("A3", "11", "CONTINUE"),
            set("A4", "13", "CONTINUE"),
            set("A5", "2", "CONTINUE"),
            set("A6", "=SUM(A1:A5)", "FINISH"),
            host_finish(),
        ];
        let _calc = start_calc(dir, &name);
        run(bin, dir, &lines, task, false, m);
        if sheet_column(0) == SUMMED {
            m.ok += 1;
        } else {
            eprintln!("the sheet shows {:?}, not {SUMMED}", sheet_column(0));
        }
        // the application alone, right after the session, on the same load
        alone.ms.extend(cells_alone(&name));
        alone.runs += 1;
        let shown = sheet_column(1);
        if shown == SUMMED {
            alone.ok += 1;
        } else {
            eprintln!("alone, column B shows {shown:?}, not {SUMMED}");
        }
    }
    alone.print(
        "Calc alone, the same entries typed in column B: last redraw after the keys",
        SUMMED,
    );
    for ((label, _), m) in bins.iter().zip(&mut ms) {
        let name = format!("Calc cell entry (6 cells) [{label}]");
        report(&name, m);
        let entries: Vec<f64> = m.actions.iter().map(|a| a.1).collect();
        print_ratio(&format!("{name}, each entry"), &entries, &alone.ms);
    }
}

/// What the six cells of a column show once entered.
const SUMMED: &str = "5,7,11,13,2,38";

/// Through pyatspi: the first six cells of column `col` (0 is A) of the open sheet.
fn sheet_column(col: usize) -> String {
    let shown = Command::new("/usr/bin/python3")
        .args(["-c", SHEET_CELLS, &col.to_string()])
        .output()
        .unwrap();
    String::from_utf8_lossy(&shown.stdout).trim().to_string()
}

/// LibreOffice Calc's own time for a cell entry without ufo, in the sheet `name` a session
/// left open: the same six entries typed in column B with xdotool (the text, Delete, Enter,
/// as `set_text` types them; Enter moves the cursor to the next cell), each timed to the
/// window's last redraw (LibreOffice draws no caret in a sheet that is not being edited: its
/// redraws end).
fn cells_alone(name: &str) -> Vec<f64> {
    let Some(xid) = window_named(
        &format!("{name} - LibreOffice Calc"),
        Duration::from_secs(5),
    ) else {
        eprintln!("Calc alone: no window");
        return Vec::new();
    };
    let _ = Command::new("xdotool")
        .args(["windowactivate", "--sync", &xid.to_string()])
        .status();
    std::thread::sleep(Duration::from_millis(300));
    // to B1
    let _ = Command::new("xdotool")
        .args(["key", "ctrl+Home", "Right"])
        .status();
    std::thread::sleep(Duration::from_millis(500));
    let mut own = Vec::new();
    for text in ["5", "7", "11", "13", "2", "=SUM(B1:B5)"] {
        own.extend(own_update(
            xid,
            &[
                &["type", "--delay", "0", text],
                &["key", "Delete", "Return"],
            ],
            Redraw::Last,
        ));
    }
    own
}

fn main() {
    if std::env::var_os("DISPLAY").is_none() {
        eprintln!("steps bench: no DISPLAY; start a session (scripts/desktop-session.sh up)");
        return;
    }
    let bin = binary();
    let bins = binaries();
    let dir = tempfile::tempdir().unwrap();
    let only = std::env::var("UFO_BENCH_ONLY").unwrap_or_default();
    let wanted = |case: &str| only.is_empty() || only.split(',').any(|o| o.trim() == case);
    if wanted("calculator") {
        let name = "calculator 12 × 7";
        let (ms, alone) = calculator(&bins, dir.path(), false, name);
        for ((label, _), m) in bins.iter().zip(&ms) {
            print_ratio(&format!("{name} [{label}], the `=` step"), &m.last, &alone);
        }
    }
    if wanted("beside") {
        let _calc = start_calc(dir.path(), "beside.fods");
        calculator(
            &bins,
            dir.path(),
            false,
            "calculator 12 × 7, LibreOffice Calc open beside it",
        );
    }
    if wanted("multi") {
        calculator(&bins, dir.path(), true, "calculator 12 × 7, multi_action");
    }
    if wanted("mousepad") {
        mousepad(&bin, dir.path());
    }
    if wanted("chromium") {
        chromium(&bins, dir.path());
    }
    if wanted("writer") {
        writer(&bins, dir.path());
    }
    if wanted("cells") {
        cells(&bins, dir.path());
    }
}
