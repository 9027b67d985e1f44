//! Throughput of batches across machines on this machine: tasks per minute of the
//! `tests/batch` suite run as 1, 2 and 3 Slurm array tasks (deploy/slurm/submit.sh on a
//! single-node Slurm, deploy/slurm/local-cluster.sh; each array task one shard on a private
//! desktop of its own, then the merge) against `ufo batch --jobs` 1, 2 and 3 on private
//! desktops, in one run; and the engine's own overhead: an array of no-op tasks with the same
//! merge dependency, per array task and per suite task. Needs Slurm and munge
//! (scripts/test-deps.sh install_slurm) and the private desktop's packages; uses the release
//! binary when built:
//!
//!     cargo build --release -p ufo && cargo bench -p ufo --bench shards
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

fn binary() -> PathBuf {
    let release = root().join("target/release/ufo");
    if release.exists() {
        release
    } else {
        root().join("target/debug/ufo")
    }
}

fn suite() -> PathBuf {
    root().join("tests/batch")
}

/// Tasks in the suite (every `*.json` directly in it).
fn suite_tasks() -> usize {
    std::fs::read_dir(suite())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
        .count()
}

/// Seconds of one `ufo batch --jobs N --desktop private` run.
fn local(bin: &Path, jobs: usize, dir: &Path) -> f64 {
    let out = dir.join(format!("jobs-{jobs}"));
    let started = Instant::now();
    let status = Command::new(bin)
        .arg("batch")
        .arg(suite())
        .args(["--desktop", "private", "--confirm", "yes", "--quiet"])
        .args([
            "--task-timeout",
            "120",
            "--jobs",
            &jobs.to_string(),
            "--out",
        ])
        .arg(&out)
        .env_remove("UFO_LLM")
        .output()
        .unwrap();
    let took = started.elapsed().as_secs_f64();
    assert!(
        matches!(status.status.code(), Some(0 | 1)),
        "--jobs {jobs}: {}",
        String::from_utf8_lossy(&status.stderr)
    );
    took
}

fn scontrol_state(conf: &Path, id: &str) -> String {
    let out = Command::new("scontrol")
        .args(["show", "job", id])
        .env("SLURM_CONF", conf)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .find_map(|w| w.strip_prefix("JobState="))
        .unwrap_or("")
        .to_string()
}

/// Wait (bounded) for job `id` to end.
fn wait(conf: &Path, id: &str) {
    let deadline = Instant::now() + Duration::from_secs(600);
    while Instant::now() < deadline {
        let s = scontrol_state(conf, id);
        if matches!(
            s.as_str(),
            "COMPLETED" | "FAILED" | "CANCELLED" | "TIMEOUT" | "NODE_FAIL"
        ) {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("job {id} did not end within 600 s");
}

/// Seconds from submitting the suite as an array of `n` shards to the merge's end.
fn slurm(bin: &Path, conf: &Path, n: usize, dir: &Path) -> f64 {
    let results = dir.join(format!("slurm-{n}"));
    let started = Instant::now();
    let out = Command::new("bash")
        .arg(root().join("deploy/slurm/submit.sh"))
        .arg(suite())
        .arg(&results)
        .arg(n.to_string())
        .args(["--task-timeout", "120"])
        .env("SLURM_CONF", conf)
        .env("UFO_BIN", bin)
        .env("UFO_CONFIRM", "yes")
        .env_remove("UFO_LLM")
        .output()
        .unwrap();
    let ids = String::from_utf8_lossy(&out.stdout).into_owned();
    let merge = ids
        .split_whitespace()
        .nth(1)
        .unwrap_or_else(|| panic!("submit.sh: {ids}{}", String::from_utf8_lossy(&out.stderr)));
    wait(conf, merge);
    let took = started.elapsed().as_secs_f64();
    let merged = std::fs::read_to_string(results.join("merged/results.jsonl")).unwrap_or_default();
    assert_eq!(
        merged.lines().count(),
        suite_tasks(),
        "{n} array tasks: the merge does not hold every task"
    );
    took
}

/// Seconds for an array of `n` no-op tasks and a dependent no-op: the engine alone.
fn noop(conf: &Path, n: usize, dir: &Path) -> f64 {
    let started = Instant::now();
    let sbatch = |args: &[String]| -> String {
        let out = Command::new("sbatch")
            .arg("--parsable")
            .args(args)
            .current_dir(dir)
            .env("SLURM_CONF", conf)
            .output()
            .unwrap();
        let id = String::from_utf8_lossy(&out.stdout).trim().to_string();
        id.split(';').next().unwrap_or("").to_string()
    };
    let array = sbatch(&[
        format!("--array=0-{}", n - 1),
        "--output=/dev/null".into(),
        "--wrap=true".into(),
    ]);
    let after = sbatch(&[
        format!("--dependency=afterany:{array}"),
        "--output=/dev/null".into(),
        "--wrap=true".into(),
    ]);
    wait(conf, &after);
    started.elapsed().as_secs_f64()
}

/// Stops the local Slurm when dropped.
struct Cluster(PathBuf);

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .arg(root().join("deploy/slurm/local-cluster.sh"))
            .arg("down")
            .arg(&self.0)
            .output();
    }
}

fn main() {
    if !Path::new("/usr/sbin/slurmctld").exists() {
        eprintln!("shards bench: Slurm is not installed (scripts/test-deps.sh install_slurm)");
        return;
    }
    let bin = binary();
    let dir = tempfile::tempdir().unwrap();
    let cluster_dir = dir.path().join("slurm");
    let up = Command::new("bash")
        .arg(root().join("deploy/slurm/local-cluster.sh"))
        .arg("up")
        .arg(&cluster_dir)
        .output()
        .unwrap();
    let _cluster = Cluster(cluster_dir.clone());
    assert!(
        up.status.success(),
        "{}",
        String::from_utf8_lossy(&up.stderr)
    );
    let conf = cluster_dir.join("slurm.conf");
    let tasks = suite_tasks() as f64;
    println!(
        "tests/batch ({tasks} tasks), {} cores, {}:",
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1),
        bin.display()
    );
    println!(
        "{:>6} {:>18} {:>12} {:>20} {:>12} {:>16}",
        "count", "ufo batch --jobs", "tasks/min", "Slurm array tasks", "tasks/min", "engine s/task"
    );
    for n in 1..=3 {
        let l = local(&bin, n, dir.path());
        let s = slurm(&bin, &conf, n, dir.path());
        let e = noop(&conf, n, dir.path());
        println!(
            "{n:>6} {l:>16.1} s {:>12.1} {s:>18.1} s {:>12.1} {:>16.2}",
            tasks * 60.0 / l,
            tasks * 60.0 / s,
            e / tasks
        );
        println!(
            "       (engine alone: {n} no-op array tasks and the dependent merge slot {e:.2} s; \
             Slurm - jobs {:+.1} s)",
            s - l
        );
    }
}
