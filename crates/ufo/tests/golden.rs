//! Golden trajectories: the real binary on every simulated scenario of `tests/scenarios/` (and
//! `examples/word_excel`) writes, byte for byte, the trajectory committed under
//! `crates/ufo/tests/golden/<case>/`, so a change of the engine's types cannot change the
//! format docs/formats.md promises ("Trajectory") without this test saying so.
//!
//! Per case it compares:
//! - `events.jsonl`: every line must be canonical JSON as the recorder writes it (keys in
//!   order, no spaces: re-encoding the parsed line gives the same bytes), and the lines, masked,
//!   must equal the golden ones;
//! - `desktop_final.json` and `blackboard.json`, masked;
//! - `outcome.txt`: the exit code and the SHA-256 of every prompt file (`*_prompt.txt`,
//!   masked), so a change of what the model is shown is caught too without storing the prompts.
//!
//! Masked, and only this, because it varies from run to run whatever the code does:
//! - the `ts` of every record (the wall clock);
//! - the values of `timings_ms` (durations; its keys, the phases that ran, are kept);
//! - the workspace's own path (`<repo>`: `session_start` names the script, and the worktree a
//!   test runs in varies) and the run's temporary folder (`<tmp>`).
//!
//! After an intended change of the trajectory, regenerate the golden files with
//! `UFO_BLESS=1 cargo test -p ufo --test golden` and review their diff before committing.

mod common;

use std::path::{Path, PathBuf};

use serde_json::Value;
use sha2::{Digest, Sha256};

use common::{repo_root, run_dir, Run};

/// The scenarios whose tests add options, with every set of options a test uses: (suffix of
/// the case's name, scenario, options). Every other scenario runs once, without options.
const VARIANTS: &[(&str, &str, &[&str])] = &[
    ("", "app_confirm_approved", &["--confirm", "yes"]),
    ("", "app_confirm_rejected", &["--confirm", "no"]),
    ("ask", "app_confirm_rejected", &["--confirm", "ask"]),
    ("", "app_confirm_safeguard_off", &["--confirm", "no"]),
    ("", "host_confirm_bash_approved", &["--confirm", "yes"]),
    ("", "host_confirm_bash_rejected", &["--confirm", "no"]),
    ("", "host_confirm_safeguard_off", &["--confirm", "no"]),
    ("yes", "host_held_launch_assign", &["--confirm", "yes"]),
    ("no", "host_held_launch_assign", &["--confirm", "no"]),
    ("", "max_steps_flag", &["--max-steps", "3"]),
    ("", "max_steps_not_counting", &["--confirm", "yes"]),
    (
        "max3",
        "max_steps_not_counting",
        &["--confirm", "yes", "--max-steps", "3"],
    ),
    ("", "resolve_disabled", &["--confirm", "yes"]),
    ("no", "injection_shell", &["--confirm", "no"]),
    ("yes", "injection_shell", &["--confirm", "yes"]),
    ("", "sensitive_click", &["--confirm", "no"]),
    ("", "sensitive_click_at", &["--confirm", "no"]),
    ("no", "sensitive_operator_click", &["--confirm", "no"]),
    ("yes", "sensitive_operator_click", &["--confirm", "yes"]),
    ("no", "shell_agent", &["--confirm", "no"]),
    ("yes", "shell_agent", &["--confirm", "yes"]),
];

/// One run to compare.
struct Case {
    name: String,
    dir: PathBuf,
    options: Vec<&'static str>,
}

/// Every scenario folder (with its variants) and the reference example.
fn cases() -> Vec<Case> {
    let root = repo_root();
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root.join("tests").join("scenarios"))
        .expect("tests/scenarios is readable")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("script.jsonl").is_file())
        .collect();
    dirs.sort();
    dirs.push(root.join("examples").join("word_excel"));
    let mut cases = Vec::new();
    for dir in dirs {
        let scenario = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .expect("a folder name");
        let variants: Vec<_> = VARIANTS.iter().filter(|v| v.1 == scenario).collect();
        if variants.is_empty() {
            cases.push(Case {
                name: scenario.clone(),
                dir: dir.clone(),
                options: Vec::new(),
            });
        }
        for (suffix, _, options) in variants {
            let name = if suffix.is_empty() {
                scenario.clone()
            } else {
                format!("{scenario}.{suffix}")
            };
            cases.push(Case {
                name,
                dir: dir.clone(),
                options: options.to_vec(),
            });
        }
    }
    cases
}

/// Paths that differ between machines and runs, and what they are written as.
struct Masks {
    paths: Vec<(String, &'static str)>,
}

impl Masks {
    fn of(run: &Run) -> Self {
        let tmp = run.out.parent().expect("out has a parent").to_path_buf();
        let mut paths = vec![(tmp.display().to_string(), "<tmp>")];
        if let Ok(canonical) = tmp.canonicalize() {
            paths.push((canonical.display().to_string(), "<tmp>"));
        }
        paths.push((repo_root().display().to_string(), "<repo>"));
        Self { paths }
    }

    fn text(&self, text: &str) -> String {
        let mut s = text.to_string();
        for (from, to) in &self.paths {
            s = s.replace(from.as_str(), to);
        }
        s
    }

    /// One line of `events.jsonl`, masked; an error when it is not the recorder's canonical
    /// JSON.
    fn record(&self, line: &str) -> Result<String, String> {
        let mut v: Value =
            serde_json::from_str(line).map_err(|e| format!("not JSON ({e}): {line}"))?;
        let canonical = serde_json::to_string(&v).map_err(|e| e.to_string())?;
        if canonical != line {
            return Err(format!(
                "not in the recorder's canonical form:\n  {line}\n  {canonical}"
            ));
        }
        if let Value::Object(m) = &mut v {
            if m.contains_key("ts") {
                m.insert("ts".into(), "<ts>".into());
            }
            if let Some(Value::Object(t)) = m.get_mut("timings_ms") {
                for ms in t.values_mut() {
                    *ms = "<ms>".into();
                }
            }
        }
        Ok(self.text(&serde_json::to_string(&v).map_err(|e| e.to_string())?))
    }
}

/// The golden files of one run: (file name, content).
fn observed(run: &Run) -> Vec<(&'static str, String)> {
    let masks = Masks::of(run);
    let read = |name: &str| std::fs::read_to_string(run.out.join(name)).ok();
    let mut files = Vec::new();
    let events = read("events.jsonl").unwrap_or_default();
    let mut lines = Vec::new();
    for line in events.lines() {
        lines.push(masks.record(line).unwrap_or_else(|e| {
            panic!("[{}] events.jsonl: {e}", run.label);
        }));
    }
    files.push(("events.jsonl", lines.join("\n") + "\n"));
    for name in ["desktop_final.json", "blackboard.json"] {
        if let Some(text) = read(name) {
            files.push((name, masks.text(&text)));
        }
    }
    let mut outcome = format!("exit {}\n", run.code);
    let mut prompts: Vec<PathBuf> = std::fs::read_dir(&run.out)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    prompts.retain(|p| p.to_string_lossy().ends_with("_prompt.txt"));
    prompts.sort();
    for p in prompts {
        let text = std::fs::read_to_string(&p).unwrap_or_default();
        let digest = Sha256::digest(masks.text(&text).as_bytes());
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        let name = p
            .file_name()
            .expect("a file")
            .to_string_lossy()
            .into_owned();
        outcome.push_str(&format!("{hex}  {name}\n"));
    }
    files.push(("outcome.txt", outcome));
    files
}

fn golden_dir(case: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("golden")
        .join(case)
}

/// Where `expected` and `actual` first differ, line by line.
fn first_difference(expected: &str, actual: &str) -> String {
    let (e, a): (Vec<&str>, Vec<&str>) = (expected.lines().collect(), actual.lines().collect());
    for i in 0..e.len().max(a.len()) {
        let (x, y) = (e.get(i), a.get(i));
        if x != y {
            return format!(
                "line {}:\n  golden: {}\n  now:    {}",
                i + 1,
                x.unwrap_or(&"(none)"),
                y.unwrap_or(&"(none)")
            );
        }
    }
    "the same lines, other line ends".into()
}

/// Compare one case with its golden files (or write them, blessing); the differences found.
fn check(case: &Case, bless: bool) -> Vec<String> {
    let run = run_dir(&case.dir, &case.options);
    let dir = golden_dir(&case.name);
    let files = observed(&run);
    if bless {
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create the golden folder");
        for (name, text) in &files {
            std::fs::write(dir.join(name), text).expect("write a golden file");
        }
        return Vec::new();
    }
    let mut problems = Vec::new();
    for (name, text) in &files {
        match std::fs::read_to_string(dir.join(name)) {
            Ok(golden) if golden == *text => {}
            Ok(golden) => problems.push(format!(
                "{}/{name} differs, {}",
                case.name,
                first_difference(&golden, text)
            )),
            Err(e) => problems.push(format!("{}/{name}: no golden file ({e})", case.name)),
        }
    }
    problems
}

/// Every scenario's trajectory is the committed one (masked as the module says).
#[test]
fn trajectories_match_the_golden_files() {
    let bless = std::env::var_os("UFO_BLESS").is_some_and(|v| v == "1");
    let cases = cases();
    let mut problems = Vec::new();
    for case in &cases {
        problems.extend(check(case, bless));
    }
    // a golden folder no case writes any more is stale
    let names: Vec<&str> = cases.iter().map(|c| c.name.as_str()).collect();
    let golden_root = golden_dir("");
    for e in std::fs::read_dir(&golden_root)
        .into_iter()
        .flatten()
        .flatten()
    {
        let name = e.file_name().to_string_lossy().into_owned();
        if !names.contains(&name.as_str()) {
            problems.push(format!("golden/{name} belongs to no case; remove it"));
        }
    }
    assert!(
        problems.is_empty(),
        "{} of {} cases differ from their golden trajectory (after an intended change: \
         UFO_BLESS=1 cargo test -p ufo --test golden, then review the diff):\n{}",
        problems.len(),
        cases.len(),
        problems.join("\n")
    );
}

/// The masks hide only what varies: a timestamp, a duration and a path, not a changed value.
#[test]
fn masking_hides_only_what_varies() {
    let masks = Masks {
        paths: vec![("/tmp/x1".into(), "<tmp>")],
    };
    let line = r#"{"action":{"executed":true},"timings_ms":{"total":1.5},"ts":"2026-01-01T00:00:00Z","type":"step","workdir":"/tmp/x1/w"}"#;
    assert_eq!(
        masks.record(line).expect("canonical"),
        r#"{"action":{"executed":true},"timings_ms":{"total":"<ms>"},"ts":"<ts>","type":"step","workdir":"<tmp>/w"}"#
    );
    // a line the recorder would not write (keys out of order, spaces) is reported
    assert!(masks.record(r#"{"type":"step","action":null}"#).is_err());
    assert!(masks.record(r#"{"action": null}"#).is_err());
}
