//! Batches across machines through the real `ufo` binary and the deployment files in
//! `deploy/`.
//!
//! - `--shard` usage errors (no desktop needed): a missing or inconsistent engine variable is
//!   named;
//! - `ufo batch merge` on shard folders: suite order, duplicates and missing tasks and shards
//!   reported, an unfinished shard's task results used, shards of different suites refused;
//! - live (private desktops): the container's entry point with `JOB_COMPLETION_INDEX` runs its
//!   shard and, run again, resumes; a single-node Slurm (deploy/slurm/local-cluster.sh) runs
//!   `tests/batch` as a 3-task array and the merge, whose results equal one `--jobs 1` run's;
//! - the Kubernetes manifests pass the Kubernetes schemas (offline, `kubernetes-validate`) and
//!   keep the shard contract (Indexed, UFO_SHARD_COUNT = completions, the results volume).
//!
//! The live tests run when `UFO_LIVE_TESTS=1` or `DISPLAY` is set; Slurm and the validator are
//! test peers (scripts/test-deps.sh install_slurm, install_python_k8s_validate): missing, the
//! tests say so and pass, unless `UFO_PEER_TESTS=1`, where they fail.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::*;
use serde_json::{json, Value};
use ufo_desktop::testing::{require_live, require_peer};

/// The engines' variables, removed so the test's own environment cannot choose a shard.
const ENGINE_VARS: &[&str] = &[
    "JOB_COMPLETION_INDEX",
    "UFO_SHARD_COUNT",
    "SLURM_ARRAY_TASK_ID",
    "SLURM_ARRAY_TASK_MIN",
    "SLURM_ARRAY_TASK_COUNT",
    "SLURM_ARRAY_TASK_STEP",
    "BATCH_TASK_INDEX",
    "BATCH_TASK_COUNT",
    "AWS_BATCH_JOB_ARRAY_INDEX",
];

fn suite() -> PathBuf {
    repo_root().join("tests").join("batch")
}

/// `ufo batch tests/batch --shard FLAG` with these engine variables.
fn shard_run(flag: &str, vars: &[(&str, &str)]) -> (Option<i32>, String) {
    let mut cmd = ufo();
    cmd.arg("batch").arg(suite()).arg("--shard").arg(flag);
    for v in ENGINE_VARS {
        cmd.env_remove(v);
    }
    cmd.envs(vars.iter().copied());
    let out = cmd.output().expect("ufo runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_missing_or_inconsistent_shard_is_a_usage_error_naming_the_variable() {
    /// The flag, the engine's variables, the name the message must give.
    type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], &'a str);
    let cases: &[Case] = &[
        ("auto", &[], "JOB_COMPLETION_INDEX"),
        ("auto", &[("JOB_COMPLETION_INDEX", "1")], "UFO_SHARD_COUNT"),
        (
            "auto",
            &[("JOB_COMPLETION_INDEX", "3"), ("UFO_SHARD_COUNT", "3")],
            "JOB_COMPLETION_INDEX",
        ),
        (
            "auto",
            &[
                ("SLURM_ARRAY_TASK_ID", "2"),
                ("SLURM_ARRAY_TASK_COUNT", "3"),
            ],
            "SLURM_ARRAY_TASK_MIN",
        ),
        ("auto", &[("BATCH_TASK_INDEX", "0")], "BATCH_TASK_COUNT"),
        ("3/3", &[], "--shard"),
        ("one of three", &[], "--shard"),
    ];
    for (flag, vars, named) in cases {
        let (code, stderr) = shard_run(flag, vars);
        assert_eq!(code, Some(2), "{flag} {vars:?}: {stderr}");
        assert!(stderr.contains(named), "{flag} {vars:?}: {stderr}");
    }
}

/// A shard folder as `ufo batch --shard` writes it: `shard.json`, and `results.jsonl` when
/// `finished` (else each task's `tasks/<id>/result.json`).
fn fake_shard(
    dir: &Path,
    suite: &[&str],
    index: usize,
    count: usize,
    results: &[(&str, &str)],
    finished: bool,
) {
    std::fs::create_dir_all(dir).expect("mkdir");
    let mut ids: Vec<&str> = suite.to_vec();
    ids.sort_unstable();
    // the digest `ufo batch` computes: FNV-1a over the sorted ids, each followed by a NUL
    let mut h = 0xcbf2_9ce4_8422_2325_u64;
    for b in ids.iter().flat_map(|id| id.bytes().chain([0])) {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    let info = json!({
        "shard": {"index": index, "count": count},
        "suite": {"digest": format!("{h:016x}"), "ids": ids},
        "tasks": results.iter().map(|(id, _)| id).collect::<Vec<_>>(),
    });
    std::fs::write(dir.join("shard.json"), info.to_string()).expect("write");
    let line = |(id, status): &(&str, &str)| json!({"id": id, "app": "shell", "status": status, "time_s": 1.0, "out": "/nowhere"});
    if finished {
        let text: String = results.iter().map(|r| format!("{}\n", line(r))).collect();
        std::fs::write(dir.join("results.jsonl"), text).expect("write");
    } else {
        for r in results {
            let t = dir.join("tasks").join(r.0);
            std::fs::create_dir_all(&t).expect("mkdir");
            std::fs::write(t.join("result.json"), line(r).to_string()).expect("write");
        }
    }
}

fn merge(out: &Path, dirs: &[&Path]) -> (Option<i32>, String, String) {
    let o = ufo()
        .arg("batch")
        .arg("merge")
        .arg(out)
        .args(dirs)
        .output()
        .expect("ufo runs");
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn read_results(out: &Path) -> Vec<Value> {
    std::fs::read_to_string(out.join("results.jsonl"))
        .unwrap_or_else(|e| panic!("{}/results.jsonl: {e}", out.display()))
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

fn statuses(results: &[Value]) -> BTreeMap<String, String> {
    results
        .iter()
        .map(|r| (s(&r["id"]), s(&r["status"])))
        .collect()
}

#[test]
fn merging_shards_gives_one_result_per_task_and_reports_what_is_wrong() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let all = ["d", "a", "c", "b", "e"];
    let shards = tmp.path().join("results");
    // sorted a b c d e, dealt round-robin to 2 shards: 0 gets a c e, 1 gets b d
    fake_shard(
        &shards.join("shard-0-of-2"),
        &all,
        0,
        2,
        &[("a", "passed"), ("c", "failed"), ("e", "passed")],
        true,
    );
    // shard 1 did not finish: its task results so far are used
    fake_shard(
        &shards.join("shard-1-of-2"),
        &all,
        1,
        2,
        &[("b", "passed"), ("d", "passed")],
        false,
    );
    let out = tmp.path().join("merged");
    let (code, stdout, stderr) = merge(&out, &[&shards]);
    assert_eq!(code, Some(1), "a failed task: exit 1\n{stderr}");
    let results = read_results(&out);
    let ids: Vec<String> = results.iter().map(|r| s(&r["id"])).collect();
    assert_eq!(ids, ["a", "b", "c", "d", "e"], "{stderr}");
    assert_eq!(statuses(&results)["c"], "failed");
    assert!(stdout.contains("TOTAL"), "{stdout}");
    let summary = std::fs::read_to_string(out.join("summary.txt")).expect("summary");
    assert!(summary.contains("TOTAL"), "{summary}");
    // the trajectories stay in the shard folders: `out` points there when the recorded one
    // is not on this machine
    let b = results.iter().find(|r| r["id"] == "b").expect("b");
    assert!(s(&b["out"]).contains("shard-1-of-2"), "{b}");

    // again without --force: refused, the merged results kept
    let (code, _, stderr) = merge(&out, &[&shards]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("--force"), "{stderr}");

    // a missing shard and a duplicate
    let partial = tmp.path().join("partial");
    fake_shard(
        &partial.join("shard-0-of-3"),
        &all,
        0,
        3,
        &[("a", "passed"), ("d", "passed")],
        true,
    );
    fake_shard(
        &partial.join("shard-1-of-3"),
        &all,
        1,
        3,
        &[("b", "passed"), ("e", "passed"), ("a", "failed")],
        true,
    );
    let out2 = tmp.path().join("merged2");
    let (code, _, stderr) = merge(
        &out2,
        &[&partial.join("shard-1-of-3"), &partial.join("shard-0-of-3")],
    );
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("missing shards: 2"), "{stderr}");
    assert!(
        stderr.contains("missing tasks (1, counted as errors): c"),
        "{stderr}"
    );
    // shard 1 also reported a, which shard 0 owns: set aside, never merged
    assert!(
        stderr.contains("results of shards that do not own the task (1, not merged"),
        "{stderr}"
    );
    let results = read_results(&out2);
    assert_eq!(results.len(), 5);
    let st = statuses(&results);
    assert_eq!(st["a"], "passed", "shard 0's result is kept");
    assert_eq!(st["c"], "error");
    let c = results.iter().find(|r| r["id"] == "c").expect("c");
    assert!(s(&c["reason"]).contains("shard 2 of 3"), "{c}");
}

#[test]
fn a_result_counts_only_from_the_shard_that_owns_its_task_and_strays_are_reported() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let all = ["a", "b", "c", "d"];
    let shards = tmp.path().join("results");
    // sorted a b c d dealt to 2 shards: 0 gets a c, 1 gets b d. Shard 0 also says d passed
    // (d failed on its owner, shard 1) and reports a task of no suite.
    fake_shard(
        &shards.join("shard-0-of-2"),
        &all,
        0,
        2,
        &[
            ("a", "passed"),
            ("c", "passed"),
            ("d", "passed"),
            ("zz", "passed"),
        ],
        true,
    );
    fake_shard(
        &shards.join("shard-1-of-2"),
        &all,
        1,
        2,
        &[("b", "passed"), ("d", "failed")],
        true,
    );
    let out = tmp.path().join("merged");
    let (code, _, stderr) = merge(&out, &[&shards]);
    assert_eq!(code, Some(1), "d failed on its owner: exit 1\n{stderr}");
    let results = read_results(&out);
    let st = statuses(&results);
    assert_eq!(
        st["d"], "failed",
        "the owner's result, never another shard's"
    );
    assert_eq!(st.len(), 4, "the id of no suite is not merged: {st:?}");
    let summary = std::fs::read_to_string(out.join("summary.txt")).expect("summary");
    for report in [&stderr, &summary] {
        assert!(
            report.contains(
                "results of shards that do not own the task (1, not merged: only the owning \
                 shard's result counts): d (from "
            ),
            "{report}"
        );
        assert!(
            report.contains("shard-0-of-2, owned by shard 1)"),
            "{report}"
        );
        assert!(
            report.contains("results of tasks not in the suite (1, not merged): zz (from "),
            "{report}"
        );
    }
}

#[test]
fn a_damaged_shard_description_is_refused_naming_the_file_never_a_panic() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let all = ["a", "b"];
    /// A name, the damage done to a good `shard.json`, what the error must say.
    type Case<'a> = (&'a str, &'a dyn Fn(&mut Value), &'a str);
    let cases: &[Case] = &[
        (
            "zero",
            &|v| v["shard"]["count"] = json!(0),
            "shard count is 0",
        ),
        (
            // once an allocation of this size: the process aborted
            "huge",
            &|v| v["shard"]["count"] = json!(1_000_000_000_000_000u64),
            "shard count is 1000000000000000",
        ),
        (
            "index",
            &|v| v["shard"]["index"] = json!(7),
            "shard index 7 is not below",
        ),
        (
            "float",
            &|v| v["shard"]["count"] = json!(1e15),
            "not a shard description",
        ),
        (
            "unsorted",
            &|v| v["suite"]["ids"] = json!(["b", "a"]),
            "not sorted",
        ),
        (
            "nested",
            &|v| *v = json!([[[[[[[[[[1]]]]]]]]]]),
            "not a shard description",
        ),
    ];
    for (name, damage, says) in cases {
        let dir = tmp.path().join(name).join("shard-0-of-2");
        fake_shard(&dir, &all, 0, 2, &[("a", "passed")], true);
        let file = dir.join("shard.json");
        let mut v: Value =
            serde_json::from_str(&std::fs::read_to_string(&file).expect("read")).expect("json");
        damage(&mut v);
        std::fs::write(&file, v.to_string()).expect("write");
        let out = tmp.path().join(name).join("merged");
        let (code, _, stderr) = merge(&out, &[&dir]);
        assert_eq!(code, Some(2), "{name}: {stderr}");
        assert!(
            stderr.contains(&file.display().to_string()),
            "{name}: {stderr}"
        );
        assert!(stderr.contains(says), "{name}: {stderr}");
        assert!(!out.join("results.jsonl").exists(), "{name}");
    }
}

#[test]
fn a_results_file_cut_mid_line_costs_only_that_line() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let all = ["a", "b", "c", "d", "e"];
    let shards = tmp.path().join("results");
    // shard 0 gets a c e, shard 1 gets b d
    let zero = shards.join("shard-0-of-2");
    fake_shard(
        &zero,
        &all,
        0,
        2,
        &[("a", "passed"), ("c", "passed"), ("e", "passed")],
        true,
    );
    fake_shard(
        &shards.join("shard-1-of-2"),
        &all,
        1,
        2,
        &[("b", "passed"), ("d", "passed")],
        true,
    );
    // c's line is damaged; e's, the last, was cut by the killed job, but e's worker wrote
    // its result.json
    let text = std::fs::read_to_string(zero.join("results.jsonl")).expect("read");
    let lines: Vec<&str> = text.lines().collect();
    let damaged = format!("{}\n{{\"id\": \"c\", \"sta\n{}", lines[0], &lines[2][..25]);
    std::fs::write(zero.join("results.jsonl"), damaged).expect("write");
    let e_dir = zero.join("tasks").join("e");
    std::fs::create_dir_all(&e_dir).expect("mkdir");
    std::fs::write(e_dir.join("result.json"), lines[2]).expect("write");

    let out = tmp.path().join("merged");
    let (code, _, stderr) = merge(&out, &[&shards]);
    assert_eq!(code, Some(1), "c is lost: missing, exit 1\n{stderr}");
    let file = zero.join("results.jsonl").display().to_string();
    assert!(
        stderr.contains(&format!("{file} line 2 skipped: not a task result")),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("{file} line 3 skipped: cut short")),
        "{stderr}"
    );
    assert!(
        stderr.contains("1 task(s) missing from it taken from"),
        "{stderr}"
    );
    let st = statuses(&read_results(&out));
    let want: BTreeMap<String, String> = [
        ("a", "passed"),
        ("b", "passed"),
        ("c", "error"),
        ("d", "passed"),
        ("e", "passed"),
    ]
    .into_iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect();
    assert_eq!(st, want, "{stderr}");
    assert!(
        stderr.contains("missing tasks (1, counted as errors): c"),
        "{stderr}"
    );
}

#[test]
fn shards_of_different_suites_are_refused() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let a = tmp.path().join("a");
    let b = tmp.path().join("b");
    fake_shard(&a, &["x", "y"], 0, 2, &[("x", "passed")], true);
    fake_shard(&b, &["x", "z"], 1, 2, &[("z", "passed")], true);
    let out = tmp.path().join("merged");
    let (code, _, stderr) = merge(&out, &[&a, &b]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("different suites"), "{stderr}");
    assert!(!out.join("results.jsonl").exists());
    let (code, _, stderr) = merge(&out, &[tmp.path()]);
    assert_eq!(code, Some(2), "{stderr}");
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).expect("mkdir");
    let (code, _, stderr) = merge(&out, &[&empty]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("not a shard folder"), "{stderr}");
}

/// The statuses (and scores) `tests/batch` must give, as one `ufo batch --jobs 1` run gives
/// them (crates/ufo/tests/batch.rs checks that run).
fn expected_suite() -> BTreeMap<String, String> {
    [
        ("calc_sum", "passed"),
        ("calc_wrong", "failed"),
        ("infeasible_fax", "passed"),
        ("mousepad_append", "passed"),
        ("shell_delete", "passed"),
        ("shell_list", "passed"),
        ("shell_write", "passed"),
        ("skip_download", "skipped"),
    ]
    .into_iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect()
}

/// The session's end and the last lines of its log and trajectory, for each task not as
/// expected: a run that fails under load is told apart from a logic error.
fn diagnose(results: &[Value]) -> String {
    let want = expected_suite();
    let mut text = String::new();
    for r in results {
        if want.get(&s(&r["id"])) == Some(&s(&r["status"])) {
            continue;
        }
        text.push_str(&format!(
            "\n{}: {} session {} {} log {}\n",
            s(&r["id"]),
            s(&r["status"]),
            s(&r["session_status"]),
            s(&r["session_reason"]),
            r["log"]
        ));
        let out = Path::new(&s(&r["out"])).to_path_buf();
        for f in [
            "trajectory/events.jsonl",
            "worker.log",
            "trajectory/ufo.log",
        ] {
            let t = std::fs::read_to_string(out.join(f)).unwrap_or_default();
            let tail: Vec<&str> = t.lines().rev().take(4).collect();
            text.push_str(&format!(
                "--- {f}\n{}\n",
                tail.into_iter().rev().collect::<Vec<_>>().join("\n")
            ));
        }
    }
    text
}

/// id → (status, score) of a results file.
fn verdicts(results: &[Value]) -> BTreeMap<String, (String, String)> {
    results
        .iter()
        .map(|r| (s(&r["id"]), (s(&r["status"]), r["score"].to_string())))
        .collect()
}

fn ufo_bin() -> PathBuf {
    assert_cmd::cargo::cargo_bin("ufo")
}

#[test]
fn the_container_entry_point_runs_the_shard_of_its_completion_index_and_resumes() {
    if !require_live("the_container_entry_point_runs_the_shard_of_its_completion_index") {
        return;
    }
    let tmp = tempfile::tempdir().expect("tempdir");
    let results = tmp.path().join("results");
    let entry = repo_root().join("deploy/container/entrypoint.sh");
    let run = |index: &str| {
        let mut cmd = Command::new("bash");
        cmd.arg(&entry).arg("--task-timeout").arg("120");
        for v in ENGINE_VARS {
            cmd.env_remove(v);
        }
        let out = cmd
            .env_remove("UFO_LLM")
            .env("JOB_COMPLETION_INDEX", index)
            .env("UFO_SHARD_COUNT", "3")
            .env("UFO_BIN", ufo_bin())
            .env("UFO_SUITE", suite())
            .env("UFO_RESULTS", &results)
            .env("UFO_CONFIRM", "yes")
            .output()
            .expect("the entry point runs");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, stderr) = run("1");
    // shard 1 holds calc_wrong, which fails: still a shard that ran to its end
    assert_eq!(code, Some(0), "{stderr}");
    let folder = results.join("shard-1-of-3");
    let first = read_results(&folder);
    // sorted ids dealt round-robin to 3: shard 1 has the 2nd, 5th and 8th
    let want: BTreeMap<String, String> = expected_suite()
        .into_iter()
        .filter(|(id, _)| ["calc_wrong", "shell_delete", "skip_download"].contains(&id.as_str()))
        .collect();
    assert_eq!(statuses(&first), want, "{stderr}");
    let info: Value = serde_json::from_str(
        &std::fs::read_to_string(folder.join("shard.json")).expect("shard.json"),
    )
    .expect("json");
    assert_eq!(info["shard"], json!({"index": 1, "count": 3}));
    assert_eq!(info["suite"]["ids"].as_array().map(Vec::len), Some(8));

    // the engine runs the index again (a pod evicted after its shard ended): nothing reruns
    let started = Instant::now();
    let (code, stderr) = run("1");
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains("already finished"), "{stderr}");
    let again = read_results(&folder);
    let times =
        |r: &[Value]| -> Vec<String> { r.iter().map(|x| x["time_s"].to_string()).collect() };
    assert_eq!(
        times(&again),
        times(&first),
        "the finished tasks were run again"
    );
    println!("resumed shard: {:.1} s", started.elapsed().as_secs_f64());

    // an index not below the count: a usage error the engine must not retry
    let (code, stderr) = run("3");
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("JOB_COMPLETION_INDEX"), "{stderr}");
}

/// A single-node Slurm in a temporary folder (deploy/slurm/local-cluster.sh), stopped when
/// dropped.
struct LocalSlurm {
    dir: tempfile::TempDir,
    conf: PathBuf,
}

impl LocalSlurm {
    fn up() -> LocalSlurm {
        let dir = tempfile::tempdir().expect("tempdir");
        let out = Command::new("bash")
            .arg(repo_root().join("deploy/slurm/local-cluster.sh"))
            .arg("up")
            .arg(dir.path())
            .output()
            .expect("local-cluster.sh runs");
        let conf = dir.path().join("slurm.conf");
        let slurm = LocalSlurm { dir, conf };
        assert!(
            out.status.success(),
            "the local Slurm did not start: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        slurm
    }

    /// `scontrol show job ID`'s JobState and ExitCode.
    fn job_state(&self, id: &str) -> (String, String) {
        let out = Command::new("scontrol")
            .args(["show", "job", id])
            .env("SLURM_CONF", &self.conf)
            .output()
            .expect("scontrol runs");
        let text = String::from_utf8_lossy(&out.stdout);
        let field = |name: &str| {
            text.split_whitespace()
                .find_map(|w| w.strip_prefix(name))
                .unwrap_or("")
                .to_string()
        };
        (field("JobState="), field("ExitCode="))
    }

    /// Wait (bounded) until job `id` has ended; its state and exit code.
    fn wait(&self, id: &str, limit: Duration) -> (String, String) {
        let deadline = Instant::now() + limit;
        loop {
            let (state, code) = self.job_state(id);
            let ended = matches!(
                state.as_str(),
                "COMPLETED" | "FAILED" | "CANCELLED" | "TIMEOUT" | "NODE_FAIL" | "OUT_OF_MEMORY"
            );
            if ended || Instant::now() > deadline {
                return (state, code);
            }
            std::thread::sleep(Duration::from_millis(500));
        }
    }

    fn logs(&self) -> String {
        let mut text = String::new();
        for f in ["slurmctld.log", "slurmd.log"] {
            let log =
                std::fs::read_to_string(self.dir.path().join("log").join(f)).unwrap_or_default();
            let tail: Vec<&str> = log.lines().rev().take(15).collect();
            text.push_str(&format!(
                "\n--- {f}\n{}",
                tail.into_iter().rev().collect::<Vec<_>>().join("\n")
            ));
        }
        text
    }
}

impl Drop for LocalSlurm {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .arg(repo_root().join("deploy/slurm/local-cluster.sh"))
            .arg("down")
            .arg(self.dir.path())
            .output();
    }
}

#[test]
fn the_suite_as_a_slurm_array_of_three_merges_to_the_results_of_one_run() {
    if !require_live("the_suite_as_a_slurm_array_of_three") {
        return;
    }
    if require_peer(
        PathBuf::from("/usr/sbin/slurmctld"),
        "Slurm (slurmctld, slurmd, munge)",
        "install_slurm",
    )
    .is_none()
    {
        return;
    }
    let slurm = LocalSlurm::up();
    let tmp = tempfile::tempdir().expect("tempdir");
    let results = tmp.path().join("results");
    let started = Instant::now();
    let out = Command::new("bash")
        .arg(repo_root().join("deploy/slurm/submit.sh"))
        .arg(suite())
        .arg(&results)
        .arg("3")
        .arg("--task-timeout")
        .arg("120")
        .env("SLURM_CONF", &slurm.conf)
        .env("UFO_BIN", ufo_bin())
        .env("UFO_CONFIRM", "yes")
        .env_remove("UFO_LLM")
        .output()
        .expect("submit.sh runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}{}{}",
        String::from_utf8_lossy(&out.stderr),
        slurm.logs()
    );
    let ids: Vec<&str> = stdout.split_whitespace().collect();
    let [array, merge_job] = ids[..] else {
        panic!("submit.sh printed {stdout:?}, not the array's and the merge's job ids");
    };
    let (state, code) = slurm.wait(merge_job, Duration::from_secs(240));
    let took = started.elapsed().as_secs_f64();
    let job_out: String = std::fs::read_dir(&results)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter(|e| e.file_name().to_string_lossy().starts_with("slurm-"))
                .map(|e| std::fs::read_to_string(e.path()).unwrap_or_default())
                .collect()
        })
        .unwrap_or_default();
    // the merge exits 1: calc_wrong fails, as it must
    assert_eq!(
        (state.as_str(), code.as_str()),
        ("FAILED", "1:0"),
        "array {array}, merge {merge_job}\n{job_out}{}",
        slurm.logs()
    );
    for k in 0..3 {
        let (state, _) = slurm.job_state(&format!("{array}_{k}"));
        assert_eq!(state, "COMPLETED", "array task {k}\n{job_out}");
    }
    let merged = read_results(&results.join("merged"));
    assert_eq!(
        statuses(&merged),
        expected_suite(),
        "{job_out}{}",
        diagnose(&merged)
    );
    // each array task ran its own slice, every trajectory is in its shard's folder
    for r in &merged {
        if r["status"] != "skipped" {
            let events = Path::new(&s(&r["out"])).join("trajectory/events.jsonl");
            assert!(events.is_file(), "{r}");
            assert!(s(&r["out"]).contains("/shard-"), "{r}");
        }
    }

    // one `ufo batch --jobs 1` run of the same suite gives the same verdicts
    let one = tmp.path().join("one");
    let started_one = Instant::now();
    let o = Command::new(ufo_bin())
        .arg("batch")
        .arg(suite())
        .args([
            "--desktop",
            "private",
            "--jobs",
            "1",
            "--confirm",
            "yes",
            "--quiet",
        ])
        .args(["--task-timeout", "120", "--out"])
        .arg(&one)
        .env_remove("UFO_LLM")
        .output()
        .expect("ufo runs");
    let took_one = started_one.elapsed().as_secs_f64();
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(verdicts(&merged), verdicts(&read_results(&one)));
    println!("tests/batch: 3 Slurm array tasks and the merge {took:.1} s; ufo batch --jobs 1 {took_one:.1} s");
}

/// Slurm's `--output` is a filename pattern (`%A`, `%j`, ...): a results folder whose name
/// holds `%` must still get every job's output, and the scripts must get the folder as it is.
/// The ufo binary is a stub that prints its arguments: the scripts and Slurm are under test.
#[test]
fn a_results_folder_with_percent_signs_gets_every_slurm_jobs_output() {
    if require_peer(
        PathBuf::from("/usr/sbin/slurmctld"),
        "Slurm (slurmctld, slurmd, munge)",
        "install_slurm",
    )
    .is_none()
    {
        return;
    }
    let slurm = LocalSlurm::up();
    let tmp = tempfile::tempdir().expect("tempdir");
    let stub = tmp.path().join("ufo-stub");
    std::fs::write(&stub, "#!/bin/sh\necho \"stub ufo: $*\"\n").expect("write");
    std::fs::set_permissions(&stub, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    let submit = |results: &Path| {
        Command::new("bash")
            .arg(repo_root().join("deploy/slurm/submit.sh"))
            .arg(suite())
            .arg(results)
            .arg("2")
            .env("SLURM_CONF", &slurm.conf)
            .env("UFO_BIN", &stub)
            .output()
            .expect("submit.sh runs")
    };
    // every pattern letter Slurm knows, and an escaped one
    let results = tmp.path().join("res%j%A_%a%x%%u%");
    let out = submit(&results);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ids: Vec<&str> = stdout.split_whitespace().collect();
    let [array, merge_job] = ids[..] else {
        panic!("submit.sh printed {stdout:?}, not the array's and the merge's job ids");
    };
    let (state, code) = slurm.wait(merge_job, Duration::from_secs(60));
    let shown = format!(
        "{:?}\n{}",
        std::fs::read_dir(tmp.path())
            .map(|d| d
                .filter_map(|e| e.ok())
                .map(|e| e.file_name())
                .collect::<Vec<_>>())
            .unwrap_or_default(),
        slurm.logs()
    );
    assert_eq!(
        (state.as_str(), code.as_str()),
        ("COMPLETED", "0:0"),
        "{shown}"
    );
    let read = |name: String| {
        std::fs::read_to_string(results.join(&name))
            .unwrap_or_else(|e| panic!("{name} in {}: {e}\n{shown}", results.display()))
    };
    let folder = results.display().to_string();
    for k in 0..2 {
        let (state, _) = slurm.job_state(&format!("{array}_{k}"));
        assert_eq!(state, "COMPLETED", "array task {k}\n{shown}");
        let text = read(format!("slurm-{array}_{k}.out"));
        assert!(
            text.contains(&format!("stub ufo: batch {} ", suite().display()))
                && text.contains(&format!("--out {folder} ")),
            "{text}"
        );
    }
    let text = read(format!("slurm-merge-{merge_job}.out"));
    assert!(
        text.contains(&format!(
            "stub ufo: batch merge {folder}/merged {folder} --force"
        )),
        "{text}"
    );

    // a backslash turns Slurm's pattern off (and is dropped): refused before anything is
    // submitted
    let out = submit(&tmp.path().join("res\\ults"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("backslash"), "{stderr}");
    assert!(out.stdout.is_empty(), "nothing submitted");
}

/// Every file and folder under `dir` (at most `depth` levels down) whose name starts with
/// `prefix`.
fn named(dir: &Path, prefix: &str, depth: usize) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = e.path();
        if e.file_name().to_string_lossy().starts_with(prefix) {
            found.push(path.clone());
        }
        if depth > 0 && e.file_type().is_ok_and(|t| t.is_dir()) {
            found.extend(named(&path, prefix, depth - 1));
        }
    }
    found
}

/// Quoting in the Slurm scripts: a results folder whose name holds spaces, both quotes,
/// `$(…)`, backquotes, `;`, `&` and `$HOME` reaches every job (the shards' `--out`, the
/// merge's folders) as one word, unchanged, and no command it names runs anywhere: not in
/// `submit.sh`, not in Slurm, not in the job scripts. The ufo binary is a stub that prints
/// each argument it got on a line of its own.
#[test]
fn a_results_folder_with_quotes_and_command_substitutions_runs_nothing_it_names() {
    if require_peer(
        PathBuf::from("/usr/sbin/slurmctld"),
        "Slurm (slurmctld, slurmd, munge)",
        "install_slurm",
    )
    .is_none()
    {
        return;
    }
    let slurm = LocalSlurm::up();
    let tmp = tempfile::tempdir().expect("tempdir");
    let stub = tmp.path().join("ufo-stub");
    std::fs::write(
        &stub,
        "#!/bin/sh\nfor a in \"$@\"; do printf 'arg[%s]\\n' \"$a\"; done\n",
    )
    .expect("write");
    std::fs::set_permissions(&stub, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    let work = tmp.path().join("work");
    std::fs::create_dir_all(&work).expect("mkdir");
    let results = tmp.path().join(
        "res ults 'single' \"double\" $(touch pwned-dollar) `touch pwned-backquote` \
         ;touch pwned-semicolon & $HOME",
    );
    let out = Command::new("bash")
        .arg(repo_root().join("deploy/slurm/submit.sh"))
        .arg(suite())
        .arg(&results)
        .arg("2")
        .current_dir(&work)
        .env("SLURM_CONF", &slurm.conf)
        .env("UFO_BIN", &stub)
        .output()
        .expect("submit.sh runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ids: Vec<&str> = stdout.split_whitespace().collect();
    let [array, merge_job] = ids[..] else {
        panic!("submit.sh printed {stdout:?}, not the array's and the merge's job ids");
    };
    let (state, code) = slurm.wait(merge_job, Duration::from_secs(60));
    let shown = format!("{:?}\n{}", named(tmp.path(), "", 1), slurm.logs());
    assert_eq!(
        (state.as_str(), code.as_str()),
        ("COMPLETED", "0:0"),
        "{shown}"
    );
    let read = |name: String| {
        std::fs::read_to_string(results.join(&name))
            .unwrap_or_else(|e| panic!("{name} in {}: {e}\n{shown}", results.display()))
    };
    let folder = results.display().to_string();
    for k in 0..2 {
        let (state, _) = slurm.job_state(&format!("{array}_{k}"));
        assert_eq!(state, "COMPLETED", "array task {k}\n{shown}");
        let text = read(format!("slurm-{array}_{k}.out"));
        assert!(
            text.contains(&format!("arg[--out]\narg[{folder}]\n")),
            "array task {k}: {text}"
        );
    }
    let text = read(format!("slurm-merge-{merge_job}.out"));
    assert_eq!(
        text,
        format!("arg[batch]\narg[merge]\narg[{folder}/merged]\narg[{folder}]\narg[--force]\n"),
    );
    // nothing the name holds ran: wherever a shell would have run it (the submitting
    // folder, the jobs' folder, Slurm's own), no `pwned-` file
    let mut ran = named(tmp.path(), "pwned-", 3);
    ran.extend(named(slurm.dir.path(), "pwned-", 3));
    ran.extend(named(&repo_root(), "pwned-", 0));
    ran.extend(named(Path::new("/tmp"), "pwned-", 0));
    assert!(
        ran.is_empty(),
        "the folder's name ran as a command: {ran:?}"
    );
}

/// The Python of the test venv (scripts/test-deps.sh install_python_k8s_validate).
fn venv() -> PathBuf {
    std::env::var_os("UFO_PY_MCP_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("target/test-deps/py"))
}

#[test]
fn the_kubernetes_manifests_pass_the_schemas_and_keep_the_shard_contract() {
    let Some(validate) = require_peer(
        venv().join("bin/kubernetes-validate"),
        "kubernetes-validate (the Kubernetes schemas)",
        "install_python_k8s_validate",
    ) else {
        return;
    };
    let dir = repo_root().join("deploy/kubernetes");
    let files = ["results-pvc.yaml", "job.yaml", "merge-job.yaml"].map(|f| dir.join(f));
    let out = Command::new(&validate)
        .arg("--strict")
        .args(&files)
        .output()
        .expect("kubernetes-validate runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}");
    assert_eq!(text.matches("passed").count(), 3, "{text}");

    // the validator does check: a misspelt field of the Job is refused
    let tmp = tempfile::tempdir().expect("tempdir");
    let bad = tmp.path().join("job.yaml");
    let job_text = std::fs::read_to_string(&files[1]).expect("job.yaml");
    std::fs::write(
        &bad,
        job_text.replace("backoffLimitPerIndex", "backoffLimitPerIdx"),
    )
    .expect("write");
    let out = Command::new(&validate)
        .arg("--strict")
        .arg(&bad)
        .output()
        .expect("runs");
    assert!(!out.status.success(), "a misspelt field passed");

    // the contract with the entry point, which the schemas cannot see
    let yaml = |f: &Path| -> Value {
        let out = Command::new(venv().join("bin/python"))
            .args([
                "-c",
                "import json, sys, yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1]))))",
            ])
            .arg(f)
            .output()
            .expect("python runs");
        serde_json::from_slice(&out.stdout).expect("the manifest as JSON")
    };
    let pvc = yaml(&files[0]);
    let job = yaml(&files[1]);
    let merge = yaml(&files[2]);
    let spec = &job["spec"];
    assert_eq!(spec["completionMode"], "Indexed");
    assert!(spec["parallelism"].as_u64().unwrap_or(0) >= 1, "{spec}");
    assert!(spec["backoffLimitPerIndex"].as_u64().is_some(), "{spec}");
    assert_eq!(spec["template"]["spec"]["restartPolicy"], "Never");
    let container = &spec["template"]["spec"]["containers"][0];
    let env: BTreeMap<String, String> = container["env"]
        .as_array()
        .expect("env")
        .iter()
        .filter_map(|e| Some((s(&e["name"]), e["value"].as_str()?.to_string())))
        .collect();
    assert_eq!(
        env.get("UFO_SHARD_COUNT").map(String::as_str),
        Some(spec["completions"].to_string().as_str()),
        "UFO_SHARD_COUNT must equal completions: {env:?}"
    );
    let results_path = env.get("UFO_RESULTS").cloned().unwrap_or("/results".into());
    let claim = &pvc["metadata"]["name"];
    for (what, pod) in [
        ("job", &spec["template"]["spec"]),
        ("merge", &merge["spec"]["template"]["spec"]),
    ] {
        let volume = pod["volumes"]
            .as_array()
            .and_then(|v| {
                v.iter()
                    .find(|v| &v["persistentVolumeClaim"]["claimName"] == claim)
            })
            .unwrap_or_else(|| panic!("{what}: no volume of the claim {claim}"));
        let mounted = pod["containers"][0]["volumeMounts"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|m| m["name"] == volume["name"] && m["mountPath"] == results_path.as_str());
        assert!(
            mounted,
            "{what}: the results volume is not at {results_path}"
        );
    }
    let command: Vec<String> = merge["spec"]["template"]["spec"]["containers"][0]["command"]
        .as_array()
        .expect("merge command")
        .iter()
        .map(s)
        .collect();
    assert_eq!(command[..3], ["ufo", "batch", "merge"], "{command:?}");
    assert!(command.contains(&results_path), "{command:?}");

    // the image's entry point is the script the live test runs
    let containerfile =
        std::fs::read_to_string(repo_root().join("deploy/container/Containerfile")).expect("read");
    assert!(containerfile.contains("COPY deploy/container/entrypoint.sh /usr/local/bin/ufo-shard"));
    assert!(containerfile.contains("ENTRYPOINT [\"/usr/local/bin/ufo-shard\"]"));
    assert!(containerfile.contains("FROM debian:"), "a Debian base");
}
