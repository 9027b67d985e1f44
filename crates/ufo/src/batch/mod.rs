//! `ufo batch <TASKS>...`: run a suite of OSWorld-format tasks on the live desktop and judge
//! each with its evaluator.
//!
//! The coordinator (this process) reads and checks the tasks, then runs each runnable task in
//! a worker process (`ufo batch --worker TASK`, this same binary) with a fresh `HOME` and the
//! environment of the job's desktop session, so `--jobs N` runs N tasks at once on N displays.
//! A worker runs the config steps, the session, the evaluator, closes the windows the task
//! opened, and writes `result.json`; the coordinator collects the results into
//! `results.jsonl` and prints the summary table.

pub(crate) mod results;
pub(crate) mod shards;

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context, Result};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::Value;
use ufo_batch::{Task, TaskResult, TaskStatus};
use ufo_core::agent::{AppAgentFactory, Services};
use ufo_core::{Desktop, Session, WindowId};

use crate::config::plan::{Access, BatchPlan, Output, SessionPlan, Start};
use crate::exit::EXIT_USAGE;

use self::results::{task_dir, write_results, Queue, RESULT_FILE};
use crate::console::{Console, Verbosity};

/// `ufo batch`. The first Ctrl-C lets the running tasks end their current step (their sessions
/// end CANCELLED) and starts no further task; the tasks not started are reported skipped.
pub fn batch_command(
    args: BatchPlan,
    runtime: &tokio::runtime::Runtime,
    cancel: Arc<AtomicBool>,
) -> ExitCode {
    if let Some(task) = args.worker.clone() {
        return runtime.block_on(worker(args, task, cancel));
    }
    match coordinate(&args, &cancel) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(EXIT_USAGE)
        }
    }
}

/// Read a desktop-session env file (`export K='V'` lines, `unset A B` lines) into a job.
fn read_env_file(path: &Path) -> Result<Job> {
    let text = std::fs::read_to_string(path).with_context(|| {
        format!(
            "cannot read --display-env {}; start a session with UFO_SESSION_DIR=<dir> \
             scripts/desktop-session.sh up",
            path.display()
        )
    })?;
    let mut set = Vec::new();
    let mut unset = Vec::new();
    for line in text.lines().map(str::trim) {
        if let Some(rest) = line.strip_prefix("export ") {
            if let Some((k, v)) = rest.split_once('=') {
                let v = v.trim();
                let v = v
                    .strip_prefix('\'')
                    .and_then(|v| v.strip_suffix('\''))
                    .unwrap_or(v);
                // the task gets its own HOME; the toolchain variables do not matter to it
                if !matches!(
                    k,
                    "HOME" | "XDG_CONFIG_HOME" | "XDG_DATA_HOME" | "XDG_CACHE_HOME"
                ) {
                    set.push((k.to_string(), v.to_string()));
                }
            }
        } else if let Some(rest) = line.strip_prefix("unset ") {
            unset.extend(rest.split_whitespace().map(str::to_string));
        }
    }
    Ok(Job { set, unset })
}

/// The display job `i` runs on, checked before any task starts: a batch without a desktop
/// would otherwise fail every task one by one.
fn job_display(job: &Job, i: usize, env: &dyn Fn(&str) -> Option<String>) -> Result<String> {
    let display = match job.set.iter().find(|(k, _)| k == "DISPLAY") {
        Some((_, v)) => Some(v.clone()),
        None if job.unset.iter().any(|k| k == "DISPLAY") => None,
        None => env("DISPLAY"),
    };
    let wayland = match job.set.iter().find(|(k, _)| k == "WAYLAND_DISPLAY") {
        Some((_, v)) => Some(v.clone()),
        None if job.unset.iter().any(|k| k == "WAYLAND_DISPLAY") => None,
        None => env("WAYLAND_DISPLAY"),
    };
    if let (None, Some(socket)) = (&display, wayland.filter(|w| !w.trim().is_empty())) {
        // a Wayland job (a private Wayland desktop): its compositor's socket must be there
        if socket.starts_with('/') && !Path::new(&socket).exists() {
            return Err(anyhow!(
                "no desktop to run job {} on: no Wayland compositor at WAYLAND_DISPLAY \
                 {socket}; start it first (scripts/wayland-session.sh up sway)",
                i + 1
            ));
        }
        return Ok(socket);
    }
    let Some(display) = display.filter(|d| !d.trim().is_empty()) else {
        return Err(anyhow!(
            "no desktop to run job {} on: DISPLAY is not set; start a session with \
             UFO_SESSION_DIR=/tmp/ufo-s1 scripts/desktop-session.sh up and pass --display-env \
             /tmp/ufo-s1/env (or run ufo batch inside a desktop session)",
            i + 1
        ));
    };
    // A local display `:N` is served through its socket; a missing socket means no X server.
    let number = display
        .strip_prefix(':')
        .and_then(|rest| rest.split('.').next())
        .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
    if let Some(n) = number {
        let socket = Path::new("/tmp/.X11-unix").join(format!("X{n}"));
        if !socket.exists() {
            return Err(anyhow!(
                "no desktop to run job {} on: no X server answers on DISPLAY {display} ({} is \
                 missing); start the session first (scripts/desktop-session.sh up)",
                i + 1,
                socket.display()
            ));
        }
    }
    Ok(display)
}

struct Job {
    set: Vec<(String, String)>,
    unset: Vec<String>,
}

/// Whether the tasks run on a served desktop (`--desktop remote:URL`).
fn is_remote(args: &BatchPlan) -> bool {
    args.desktop.starts_with("remote:")
}

/// Run a batch: check the jobs' desktops, prepare the batch folder, settle at once what
/// cannot run, run the rest on the jobs (one worker process per task), and write the results.
fn coordinate(args: &BatchPlan, cancel: &AtomicBool) -> Result<ExitCode> {
    let shard = shards::resolve(args.shard.as_deref(), &|k| std::env::var(k).ok())?;
    let out = out_folder(args, shard);
    // an earlier batch's results are refused before anything else is asked of the machine
    refuse_kept_results(args, shard, &out)?;
    let jobs = job_envs(args)?;
    let files = ufo_batch::collect_task_files(&args.tasks)?;
    if files.is_empty() {
        return Err(anyhow!("no task files (*.json) in the given paths"));
    }
    let (out, _lock) = batch_folder(args, shard, out)?;
    // who may follow it from `ufo serve`'s web console (nobody unless --share names them)
    crate::sharing::write(&out, &args.share).with_context(|| {
        format!(
            "cannot write {} in the batch folder {}",
            crate::sharing::SHARE_FILE,
            out.display()
        )
    })?;
    let (mut results, mut queue) = triage(args, &files);
    if let Some(shard) = shard {
        (results, queue) = shards::narrow(shard, &out, &files, results, queue, args.force)?;
    }
    run_queue(args, &jobs, queue, &out, cancel, &mut results)?;
    let results: Vec<TaskResult> = results.into_iter().flatten().collect();
    write_results(args.quiet, &out, &results, "")
}

/// The environment of each job's desktop (`--display-env`), checked: each has a display.
fn job_envs(args: &BatchPlan) -> Result<Vec<Job>> {
    if args.jobs == 0 {
        return Err(anyhow!("--jobs must be at least 1"));
    }
    if is_remote(args) {
        if args.jobs != 1 || !args.display_env.is_empty() {
            return Err(anyhow!(
                "--desktop remote:URL runs the tasks one at a time on that one desktop: leave \
                 out --jobs and --display-env (for tasks in parallel, serve one desktop per job \
                 and run one `ufo batch --shard K/N` against each)"
            ));
        }
        return Ok(vec![Job {
            set: Vec::new(),
            unset: Vec::new(),
        }]);
    }
    if args.jobs > 1 && args.display_env.len() < args.jobs {
        return Err(anyhow!(
            "--jobs {} needs {} --display-env files, one desktop session per job (got {}); start \
             them with UFO_SESSION_DIR=/tmp/ufo-s<N> scripts/desktop-session.sh up and pass \
             --display-env /tmp/ufo-s<N>/env",
            args.jobs,
            args.jobs,
            args.display_env.len()
        ));
    }
    let mut jobs = Vec::new();
    for i in 0..args.jobs {
        match args.display_env.get(i) {
            Some(p) => jobs.push(read_env_file(p)?),
            None => jobs.push(Job {
                set: Vec::new(),
                unset: Vec::new(),
            }),
        }
    }
    for (i, job) in jobs.iter().enumerate() {
        job_display(job, i, &|k| crate::secret_env::var(k))?;
    }
    Ok(jobs)
}

/// Where the batch writes: `--out`, else a new `runs/batch-<time>`; a shard's is
/// `<out>/shard-K-of-N`.
fn out_folder(args: &BatchPlan, shard: Option<ufo_batch::shard::Shard>) -> PathBuf {
    let out = args.out.clone().unwrap_or_else(|| {
        PathBuf::from("runs").join(format!(
            "batch-{}",
            chrono::Local::now().format("%Y%m%d-%H%M%S")
        ))
    });
    match shard {
        Some(shard) => out.join(shard.folder()),
        None => out,
    }
}

/// An earlier batch's results in `out` are kept unless `--force`; a shard run again resumes
/// from its finished tasks.
fn refuse_kept_results(
    args: &BatchPlan,
    shard: Option<ufo_batch::shard::Shard>,
    out: &Path,
) -> Result<()> {
    if shard.is_none() && !args.force && out.join("results.jsonl").exists() {
        return Err(anyhow!(
            "{} already holds a batch's results (results.jsonl); choose another folder for \
             --out, or pass --force to replace them",
            out.display()
        ));
    }
    Ok(())
}

/// The batch folder, locked for the whole batch; an earlier batch's results are kept unless
/// `--force` (a shard's are resumed from).
fn batch_folder(
    args: &BatchPlan,
    shard: Option<ufo_batch::shard::Shard>,
    out: PathBuf,
) -> Result<(PathBuf, crate::recorder::OutLock)> {
    let lock = crate::recorder::OutLock::open(&out, crate::recorder::OutMode::Append)?;
    // checked again under the lock: another batch may have finished in the meantime
    refuse_kept_results(args, shard, &out)?;
    if args.force && (shard.is_some() || out.join("results.jsonl").exists()) {
        for name in ["results.jsonl", "summary.txt", ufo_batch::shard::SHARD_FILE] {
            let _ = std::fs::remove_file(out.join(name));
        }
        if out.join("tasks").exists() {
            std::fs::remove_dir_all(out.join("tasks"))
                .with_context(|| format!("cannot clear {}/tasks", out.display()))?;
        }
    }
    std::fs::create_dir_all(out.join("tasks"))
        .with_context(|| format!("cannot create the batch folder {}", out.display()))?;
    check_tasks_folder(&out)?;
    let out = out.canonicalize().unwrap_or(out);

    Ok((out, lock))
}

/// `<out>/tasks` must be a folder of the batch's own: task folders are created and removed in
/// it, so a planted link (to a home folder, say) would have them removed elsewhere.
fn check_tasks_folder(out: &Path) -> Result<()> {
    let tasks = out.join("tasks");
    let meta = std::fs::symlink_metadata(&tasks)
        .with_context(|| format!("cannot use {}", tasks.display()))?;
    if !meta.is_dir() {
        return Err(anyhow!(
            "{} is a symbolic link or not a folder; the batch creates and removes task folders \
             in it, so it must be a folder of its own: remove it or choose another --out",
            tasks.display()
        ));
    }
    Ok(())
}

/// Read and check every task: what cannot run is settled at once (skipped, or an error) in
/// its slot of the results; the rest is queued with its slot.
fn triage(args: &BatchPlan, files: &[PathBuf]) -> (Vec<Option<TaskResult>>, Queue) {
    let mut results: Vec<Option<TaskResult>> = Vec::new();
    let mut queue = VecDeque::new();
    for (i, file) in files.iter().enumerate() {
        let stem = file
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| format!("task{i}"));
        let early = match Task::load(file) {
            Err(e) => Some(TaskResult::early(
                &stem,
                "other",
                TaskStatus::Error,
                e.to_string(),
            )),
            Ok(task) => {
                if let Some(why) = task.unsupported() {
                    Some(TaskResult::early(
                        &task.id,
                        &task.app(),
                        TaskStatus::Skipped,
                        why,
                    ))
                } else if task.ufo_script.is_none() && args.llm.is_none() {
                    Some(TaskResult::early(
                        &task.id,
                        &task.app(),
                        TaskStatus::Skipped,
                        "no model: the task has no ufo_script and no --llm was given",
                    ))
                } else {
                    queue.push_back((i, file.clone(), task));
                    None
                }
            }
        };
        results.push(early);
    }

    (results, queue)
}

/// Run the queued tasks, each job taking the next task until none is left; every result goes
/// into its slot.
fn run_queue(
    args: &BatchPlan,
    jobs: &[Job],
    queue: Queue,
    out: &Path,
    cancel: &AtomicBool,
    results: &mut [Option<TaskResult>],
) -> Result<()> {
    let bar = if args.quiet {
        ProgressBar::hidden()
    } else {
        let b =
            ProgressBar::with_draw_target(Some(results.len() as u64), ProgressDrawTarget::stderr());
        if let Ok(style) =
            ProgressStyle::with_template("{bar:30} {pos}/{len} tasks | {elapsed} | {msg}")
        {
            b.set_style(style);
        }
        b
    };
    bar.inc(results.iter().filter(|r| r.is_some()).count() as u64);
    let exe = std::env::current_exe().context("cannot find the ufo executable")?;
    let queue = Arc::new(Mutex::new(queue));
    let done: Arc<Mutex<Vec<(usize, TaskResult)>>> = Arc::default();
    std::thread::scope(|scope| {
        for job in jobs {
            let queue = queue.clone();
            let done = done.clone();
            let bar = bar.clone();
            let exe = exe.clone();
            let out = out.to_path_buf();
            scope.spawn(move || loop {
                let next = queue.lock().unwrap_or_else(|p| p.into_inner()).pop_front();
                let Some((i, file, task)) = next else {
                    break;
                };
                if cancel.load(std::sync::atomic::Ordering::SeqCst) {
                    let r = TaskResult::early(
                        &task.id,
                        &task.app(),
                        TaskStatus::Skipped,
                        "cancelled (Ctrl-C) before it started",
                    );
                    bar.inc(1);
                    done.lock().unwrap_or_else(|p| p.into_inner()).push((i, r));
                    continue;
                }
                bar.set_message(ufo_core::inert(&task.id).into_owned());
                let r = run_worker(args, &exe, job, &file, &task, &out);
                if !args.quiet {
                    bar.suspend(|| {
                        eprintln!(
                            "{:<8} {} ({:.1} s){}",
                            r.status.as_str(),
                            ufo_core::inert(&r.id),
                            r.time_s,
                            if r.status == TaskStatus::Passed {
                                String::new()
                            } else {
                                let reason: String = r.reason.chars().take(120).collect();
                                format!(": {}", ufo_core::inert(&reason))
                            }
                        )
                    });
                }
                bar.inc(1);
                done.lock().unwrap_or_else(|p| p.into_inner()).push((i, r));
            });
        }
    });
    bar.finish_and_clear();
    for (i, r) in done.lock().unwrap_or_else(|p| p.into_inner()).drain(..) {
        if let Some(slot) = results.get_mut(i) {
            *slot = Some(r);
        }
    }
    Ok(())
}

/// Run one task in a worker process and read its result.
fn run_worker(
    args: &BatchPlan,
    exe: &Path,
    job: &Job,
    file: &Path,
    task: &Task,
    out: &Path,
) -> TaskResult {
    let started = Instant::now();
    let dir = task_dir(out, &task.id);
    let _ = std::fs::remove_dir_all(&dir);
    let home = dir.join("home");
    let fail = |why: String| {
        let mut r = TaskResult::early(&task.id, &task.app(), TaskStatus::Error, why);
        r.time_s = started.elapsed().as_secs_f64();
        r.out = dir.display().to_string();
        r
    };
    if let Err(e) = std::fs::create_dir_all(home.join(".config")) {
        return fail(format!("cannot create {}: {e}", home.display()));
    }
    let mut cmd = worker_command(args, exe, job, file, &dir, &home);
    let log = match std::fs::File::create(dir.join("worker.log")) {
        Ok(f) => f,
        Err(e) => return fail(format!("cannot create the worker log: {e}")),
    };
    cmd.stderr(log);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => return fail(format!("cannot start the worker: {e}")),
    };
    if let Err(e) = crate::secret_env::write_to_stdin(&mut child) {
        let _ = child.kill();
        let _ = child.wait();
        return fail(format!("cannot hand the model keys to the worker: {e}"));
    }
    let deadline = started + Duration::from_secs(args.task_timeout);
    let status = match wait_until(&mut child, deadline) {
        Ok(s) => s,
        Err(e) => return fail(format!("cannot wait for the worker: {e}")),
    };
    let read = crate::folder::read_capped(&dir.join(RESULT_FILE), shards::MAX_RESULT_FILE)
        .ok()
        .and_then(|b| serde_json::from_slice::<TaskResult>(&b).ok());
    match (read, status) {
        (Some(r), _) => r,
        (None, None) => fail(format!(
            "the task took longer than --task-timeout {} s; its worker was killed",
            args.task_timeout
        )),
        (None, Some(s)) => {
            let log = std::fs::read_to_string(dir.join("worker.log")).unwrap_or_default();
            let tail: Vec<&str> = log.lines().rev().take(3).collect();
            fail(format!(
                "the worker ended ({s}) without a result: {}",
                tail.into_iter().rev().collect::<Vec<_>>().join(" | ")
            ))
        }
    }
}

/// The worker process for `file`: this binary with the batch's options, in the job's desktop
/// session with a fresh `HOME` under `dir`; the keys are handed over on stdin.
fn worker_command(
    args: &BatchPlan,
    exe: &Path,
    job: &Job,
    file: &Path,
    dir: &Path,
    home: &Path,
) -> std::process::Command {
    let mut cmd = std::process::Command::new(exe);
    cmd.arg("batch")
        .arg("--worker")
        .arg(file)
        .arg("--worker-out")
        .arg(dir);
    if let Some(l) = &args.llm {
        cmd.arg("--llm").arg(l);
    }
    if let Some(c) = &args.config {
        cmd.arg("--config").arg(c);
    }
    if let Some(m) = args.structured_output {
        cmd.arg("--structured-output").arg(m.as_str());
    }
    if crate::desktop::live_display(&args.desktop).is_some_and(|d| d != Default::default()) {
        // the person's Wayland session even where DISPLAY is set too
        cmd.arg("--desktop").arg(&args.desktop);
    }
    if is_remote(args) {
        cmd.arg("--desktop").arg(&args.desktop);
        if let Some(f) = &args.remote.token_file {
            cmd.arg("--token-file").arg(f);
        }
        if let Some(f) = &args.remote.fingerprint {
            cmd.arg("--fingerprint").arg(f);
        }
    }
    if let Some(n) = args.max_steps {
        cmd.arg("--max-steps").arg(n.to_string());
    }
    if let Some(e) = &args.eval_llm {
        cmd.arg("--eval-llm").arg(e);
    }
    if let Some(c) = args.confirm {
        cmd.arg("--confirm").arg(c.as_str());
    }
    for k in &job.unset {
        cmd.env_remove(k);
    }
    cmd.envs(job.set.iter().map(|(k, v)| (k, v)))
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_DATA_HOME", home.join(".local/share"))
        .env("XDG_CACHE_HOME", home.join(".cache"))
        .stdout(std::process::Stdio::null());
    // The task's fresh HOME must not move the knowledge store: the workers use the batch's.
    if let Some(store) = crate::config::knowledge::store_for_workers(args.config.as_deref()) {
        cmd.env("UFO_KNOWLEDGE_STORE", store);
    }
    // the keys go through a pipe on stdin, never through the worker's environment
    crate::secret_env::pass_on_stdin(&mut cmd);
    cmd
}

/// Wait for the worker until `deadline`: its status, or `None` when it was killed for taking
/// longer (bounded: `--task-timeout`).
fn wait_until(
    child: &mut std::process::Child,
    deadline: Instant,
) -> std::io::Result<Option<std::process::ExitStatus>> {
    loop {
        match child.try_wait()? {
            Some(s) => return Ok(Some(s)),
            None if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Ok(None);
            }
            None => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}

/// Close what the task opened, so the next task starts from the same desktop: every window
/// that was not there before is closed through the desktop port (asked to close; its
/// application ended when it is still there after the port's grace period), all at once.
/// Returns the windows that would not close, with why.
async fn close_new_windows(
    desktop: &dyn Desktop,
    before: &[(WindowId, Option<u32>)],
) -> Vec<String> {
    let before_ids: Vec<&WindowId> = before.iter().map(|(id, _)| id).collect();
    let new: Vec<WindowId> = ufo_batch::setup::window_keys(desktop)
        .await
        .into_iter()
        .map(|(id, _)| id)
        .filter(|id| !before_ids.contains(&id))
        .collect();
    let closed = futures::future::join_all(new.iter().map(|id| desktop.close(id))).await;
    new.into_iter()
        .zip(closed)
        .filter_map(|(id, r)| r.err().map(|e| format!("{id}: {e}")))
        .collect()
}

/// `PATH` with the folder of this executable first.
fn own_path() -> Option<(String, String)> {
    let exe = std::env::current_exe().ok()?;
    let dir = exe.parent()?.display().to_string();
    let path = std::env::var("PATH").unwrap_or_default();
    Some(("PATH".into(), format!("{dir}:{path}")))
}

/// Model time of a trajectory: the sum of the steps' `llm_interaction` timings, seconds.
fn model_seconds(events: &Path) -> f64 {
    let Ok(text) = std::fs::read_to_string(events) else {
        return 0.0;
    };
    text.lines()
        .filter_map(
            |l| match serde_json::from_str::<ufo_core::events::Record>(l) {
                Ok(ufo_core::events::Record::Step(s)) => {
                    s.timings_ms.get("llm_interaction")?.as_f64()
                }
                _ => None,
            },
        )
        .sum::<f64>()
        / 1000.0
}

/// The LLM evaluation agent's verdict on a trajectory, as JSON (`{"error"}` when it could
/// not judge).
async fn llm_verdict(
    spec: &str,
    settings: &crate::config::settings::Settings,
    instruction: &str,
    trajectory: &Path,
) -> Value {
    let answers = settings.answers();
    let client = match crate::models::eval_model(spec, &settings.prices, &answers) {
        Ok(c) => c,
        Err(e) => return serde_json::json!({"error": format!("{e:#}")}),
    };
    let events = std::fs::read_to_string(trajectory.join("events.jsonl")).unwrap_or_default();
    let text = ufo_batch::trajectory_text(&events);
    match ufo_batch::judge(client.as_ref(), instruction, &text).await {
        Ok(v) => serde_json::json!({
            "complete": v.complete,
            "reason": v.reason,
            "sub_scores": v.sub_scores,
            "calls": v.calls,
            "prompt_tokens": v.prompt_tokens,
            "completion_tokens": v.completion_tokens,
        }),
        Err(e) => serde_json::json!({"error": e.to_string()}),
    }
}

/// The worker: one task in this process, the result written to `<worker_out>/result.json`.
async fn worker(args: BatchPlan, file: PathBuf, cancel: Arc<AtomicBool>) -> ExitCode {
    let Some(dir) = args.worker_out.clone() else {
        eprintln!("error: --worker needs --worker-out");
        return ExitCode::from(EXIT_USAGE);
    };
    let result = run_task(&args, &file, &dir, cancel).await;
    let text = match serde_json::to_string_pretty(&result) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: cannot serialise the result: {e}");
            return ExitCode::from(3);
        }
    };
    if let Err(e) = std::fs::write(dir.join(RESULT_FILE), text) {
        eprintln!(
            "error: cannot write {}: {e}",
            dir.join(RESULT_FILE).display()
        );
        return ExitCode::from(3);
    }
    ExitCode::SUCCESS
}

#[tracing::instrument(level = "info", skip(args, dir, cancel), fields(task = %file.display()))]
async fn run_task(
    args: &BatchPlan,
    file: &Path,
    dir: &Path,
    cancel: Arc<AtomicBool>,
) -> TaskResult {
    let started = Instant::now();
    let task = match Task::load(file) {
        Ok(t) => t,
        Err(e) => return TaskResult::early("?", "other", TaskStatus::Error, e.to_string()),
    };
    let mut r = TaskResult::early(&task.id, &task.app(), TaskStatus::Error, "");
    r.out = dir.display().to_string();
    let finish = |mut r: TaskResult| {
        r.time_s = started.elapsed().as_secs_f64();
        r
    };
    let llm = match task_model(&task, args.llm.as_deref()) {
        Ok(l) => l,
        Err(why) => {
            r.status = TaskStatus::Skipped;
            r.reason = why;
            return finish(r);
        }
    };
    let trajectory = dir.join("trajectory");
    let console = Console::new(Verbosity::Quiet);
    let run_args = task_session(args, &task, llm, &trajectory);
    let (prepared, served, launch_commands) =
        match open_task(args, &run_args, &console, &cancel).await {
            Ok(x) => x,
            Err(why) => {
                r.reason = why;
                return finish(r);
            }
        };
    let desktop = served.as_ref();
    let before = ufo_batch::setup::window_keys(desktop).await;
    let (device, opts) = task_home(args, &served, dir, launch_commands).await;
    let home = opts.home.clone();

    // Setup.
    let t = Instant::now();
    let setup = run_setup(desktop, &task, &opts, &mut r).await;
    r.setup_s = t.elapsed().as_secs_f64();
    if setup.is_err() {
        close_new_windows(desktop, &before).await;
        return finish(r);
    }

    // The session.
    let mut recorder =
        match crate::recorder::FileRecorder::create_with(&trajectory, console.clone(), false) {
            Ok(rec) => rec,
            Err(e) => {
                r.reason = format!("cannot create {}: {e}", trajectory.display());
                close_new_windows(desktop, &before).await;
                return finish(r);
            }
        };
    crate::logging::init(&console, Some(&trajectory.join("ufo.log")));
    run_session(desktop, &prepared, &task, &mut recorder, cancel, &mut r).await;
    r.model_time_s = model_seconds(&trajectory.join("events.jsonl"));
    judge_and_learn(
        desktop,
        device,
        &task,
        &opts,
        home,
        &prepared,
        &trajectory,
        &mut recorder,
        &mut r,
        args.eval_llm.as_deref(),
    )
    .await;
    close_task_windows(desktop, &before, &mut r).await;
    finish(r)
}

/// Close the windows the task opened; those that would not close go into its log.
async fn close_task_windows(
    desktop: &dyn Desktop,
    before: &[(WindowId, Option<u32>)],
    r: &mut TaskResult,
) {
    let stuck = close_new_windows(desktop, before).await;
    if !stuck.is_empty() {
        r.log.push(format!(
            "windows of the task that would not close: {stuck:?}"
        ));
    }
}

/// The model a task runs with: its own script, else `--llm`; `Err` says why it is skipped.
fn task_model(task: &Task, llm: Option<&str>) -> Result<String, String> {
    if let Some(why) = task.unsupported() {
        return Err(why);
    }
    match (task.script_path(), llm) {
        (Some(p), _) => Ok(format!("script:{}", p.display())),
        (None, Some(l)) => Ok(l.to_string()),
        (None, None) => Err("no model: the task has no ufo_script and no --llm was given".into()),
    }
}

/// The task's settings, models and person ([`crate::session::prepare`]) and its desktop with
/// the commands it launches by; `Err` is the task's error.
async fn open_task(
    args: &BatchPlan,
    run_args: &SessionPlan,
    console: &Arc<Console>,
    cancel: &Arc<AtomicBool>,
) -> Result<(crate::session::Prepared, Arc<dyn Desktop>, Vec<String>), String> {
    let prepared = crate::session::prepare(run_args, console, cancel)
        .map_err(|crate::session::Usage(e)| format!("configuration: {e:#}"))?;
    let (served, launch_commands) = task_desktop(args, &prepared)
        .await
        .map_err(|e| format!("{e:#}"))?;
    Ok((prepared, served, launch_commands))
}

/// Where the task's files are: on a served desktop, `/home/user` is its user's home and the
/// getters read it there (the device); else the task folder's own. With the options its set-up
/// runs with.
async fn task_home(
    args: &BatchPlan,
    served: &Arc<dyn Desktop>,
    dir: &Path,
    launch_commands: Vec<String>,
) -> (Option<ufo_batch::Device>, ufo_batch::SetupOptions) {
    let device = is_remote(args).then(|| ufo_batch::Device {
        desktop: served.clone(),
        copies: dir.join("device-files"),
    });
    let home = match &device {
        Some(_) => device_home(served.as_ref())
            .await
            .unwrap_or_else(|| local_home(dir)),
        None => local_home(dir),
    };
    let opts = ufo_batch::SetupOptions {
        home,
        launch_commands,
        window_timeout: Duration::from_secs(20),
    };
    (device, opts)
}

/// After the session: the task's evaluator (and, with `--eval-llm`, the LLM's verdict), then
/// the experience saved as the `[knowledge]` policy says for a task that ended so.
#[allow(clippy::too_many_arguments)] // the task, its desktop and its folder, each once
async fn judge_and_learn(
    desktop: &dyn Desktop,
    device: Option<ufo_batch::Device>,
    task: &Task,
    opts: &ufo_batch::SetupOptions,
    home: PathBuf,
    prepared: &crate::session::Prepared,
    trajectory: &Path,
    recorder: &mut crate::recorder::FileRecorder,
    r: &mut TaskResult,
    eval_llm: Option<&str>,
) {
    // Evaluation.
    let t = Instant::now();
    evaluate_task(desktop, device, task, opts, home, r).await;
    r.eval_s = t.elapsed().as_secs_f64();
    if let Some(spec) = eval_llm {
        r.llm_eval =
            Some(llm_verdict(spec, &prepared.settings, &task.instruction, trajectory).await);
    }
    let ending = crate::experience::Ending {
        finished: r.session_status == ufo_core::SessionStatus::Finish.as_str(),
        evaluator_passed: Some(r.status == TaskStatus::Passed),
    };
    r.log.extend(
        crate::experience::after_session(
            prepared.settings.knowledge.as_ref(),
            &prepared.settings.prices,
            &prepared.settings.answers(),
            trajectory,
            ending,
            recorder,
        )
        .await,
    );
}

/// The session of one task: its instruction on the batch's desktop with the task's model,
/// one round, quiet, in the task's `trajectory` folder.
fn task_session(args: &BatchPlan, task: &Task, llm: String, trajectory: &Path) -> SessionPlan {
    SessionPlan {
        request: task.instruction.clone(),
        start: Start::New,
        desktop: args.desktop.clone(),
        devices: Vec::new(),
        recorded_devices: Vec::new(),
        llm: Some(llm),
        structured_output: args.structured_output,
        out: Some(trajectory.to_path_buf()),
        force: false,
        max_steps: args.max_steps,
        max_rounds: Some(1),
        confirm: args.confirm,
        answers: None,
        requests: None,
        config: args.config.clone(),
        vision: None,
        record: None,
        remote: args.remote.clone(),
        access: Access::default(),
        output: Output {
            quiet: true,
            ..Default::default()
        },
    }
}

/// The desktop a task runs on and the launch commands its set-up may run as launches: this
/// session's (with the `[launch]` table's commands), or the served one of `--desktop
/// remote:URL` (which launches by name).
async fn task_desktop(
    args: &BatchPlan,
    prepared: &crate::session::Prepared,
) -> Result<(Arc<dyn Desktop>, Vec<String>)> {
    if let Some(url) = args.desktop.strip_prefix("remote:") {
        let remote = crate::desktop::connect_remote(url, &args.remote.clone()).await?;
        return Ok((Arc::new(remote), Vec::new()));
    }
    let display = crate::desktop::live_display(&args.desktop).unwrap_or_default();
    let live = crate::desktop::connect_linux(
        display,
        &prepared.settings.launch,
        &prepared.settings.vision,
    )
    .await?;
    let launch = live
        .config()
        .launch
        .iter()
        .map(|(_, c)| c.clone())
        .collect();
    Ok((Arc::new(live), launch))
}

/// The worker's own `HOME` (the task's fresh one), else a folder in the task's.
fn local_home(dir: &Path) -> PathBuf {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| dir.join("home"))
}

/// The `HOME` of a served desktop's user, asked through its shell; `None` when it runs no
/// shell commands (then no task step or getter can reach its files either).
async fn device_home(desktop: &dyn Desktop) -> Option<PathBuf> {
    let out = desktop.shell("printf '%s' \"$HOME\"").await.ok()?;
    let home = out.stdout.trim();
    (out.code == Some(0) && home.starts_with('/')).then(|| PathBuf::from(home))
}

/// Run a task's setup steps; a failed one sets the result (skipped when unsupported, else
/// error) and ends the task.
async fn run_setup(
    desktop: &dyn Desktop,
    task: &Task,
    opts: &ufo_batch::SetupOptions,
    r: &mut TaskResult,
) -> Result<(), ()> {
    for step in &task.config {
        match ufo_batch::run_step(desktop, step, opts).await {
            Ok(line) => r.log.push(line),
            Err(e) => {
                r.status = if matches!(e, ufo_batch::BatchError::Unsupported(_)) {
                    TaskStatus::Skipped
                } else {
                    TaskStatus::Error
                };
                r.reason = format!("setup: {e}");
                return Err(());
            }
        }
    }
    Ok(())
}

/// Run the task's session on the live desktop, recording into `recorder`; its outcome and
/// model use go into the result.
async fn run_session(
    desktop: &dyn Desktop,
    prepared: &crate::session::Prepared,
    task: &Task,
    recorder: &mut crate::recorder::FileRecorder,
    cancel: Arc<AtomicBool>,
    r: &mut TaskResult,
) {
    // The first Ctrl-C also cuts a model call in flight (and its retries).
    let host_llm = crate::cancel::CancellableLlm::new(prepared.llm.host(), cancel.clone());
    let app_llm = crate::cancel::CancellableLlm::new(prepared.llm.app(), cancel.clone());
    let knowledge = match crate::session_knowledge::SessionKnowledge::open(
        prepared.settings.knowledge.as_ref(),
    ) {
        Ok(k) => k,
        Err(e) => {
            r.log
                .push(format!("the session goes without knowledge: {e}"));
            None
        }
    };
    let rerank_model = crate::session_knowledge::RerankModel::new(&host_llm);
    let services = Services {
        desktop,
        host_llm: &host_llm,
        app_llm: &app_llm,
        user: &prepared.user,
        config: &prepared.settings.config,
        prompts: &prepared.prompts,
        tools: None,
        knowledge: knowledge.as_ref().map(|k| k.access(&rerank_model)),
    };
    let outcome = Session::new(services, Box::new(AppAgentFactory))
        .with_cancel(cancel)
        .run(&task.instruction, recorder)
        .await;
    r.session_status = outcome.status.as_str().to_string();
    r.session_reason = outcome.reason.clone();
    r.steps = outcome.steps;
    r.model_calls = outcome.llm.calls;
    r.prompt_tokens = outcome.llm.prompt_tokens;
    r.completion_tokens = outcome.llm.completion_tokens;
    r.cost = outcome.llm.cost;
    if let Some(m) = &outcome.message {
        r.log.push(format!(
            "session ended {} ({}): {m}",
            r.session_status, r.session_reason
        ));
    }
}

/// Run the evaluator's postconfig steps and the evaluator itself; the verdict (passed,
/// failed, skipped when unsupported, error) and its details go into the result.
async fn evaluate_task(
    desktop: &dyn Desktop,
    device: Option<ufo_batch::Device>,
    task: &Task,
    opts: &ufo_batch::SetupOptions,
    home: PathBuf,
    r: &mut TaskResult,
) {
    let mut post_error = None;
    for step in &task.evaluator.postconfig {
        match ufo_batch::run_step(desktop, step, opts).await {
            Ok(line) => r.log.push(line),
            Err(e) => {
                post_error = Some(e);
                break;
            }
        }
    }
    let env = ufo_batch::GetterEnv {
        home,
        task_dir: task.dir(),
        // `ufo` itself is on the PATH of getter commands (e.g. `ufo inspect WINDOW`)
        env: own_path().into_iter().collect(),
        timeout: Duration::from_secs(30),
        device,
    };
    let facts = ufo_batch::RunFacts {
        status: r.session_status.clone(),
        reason: r.session_reason.clone(),
    };
    let verdict = match post_error {
        Some(e) => Err(e),
        None => ufo_batch::evaluate(&task.evaluator, &env, &facts).await,
    };
    match verdict {
        Ok(ev) => {
            r.score = Some(ev.score);
            r.status = if ev.score >= 1.0 {
                TaskStatus::Passed
            } else {
                TaskStatus::Failed
            };
            r.reason = ev.details.join("; ");
        }
        Err(ufo_batch::BatchError::Unsupported(why)) => {
            r.status = TaskStatus::Skipped;
            r.reason = why;
        }
        Err(e) => {
            r.status = TaskStatus::Error;
            r.reason = format!("evaluation: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_job_without_a_display_is_refused_before_any_task() {
        let none = |_: &str| None;
        let bare = Job {
            set: Vec::new(),
            unset: Vec::new(),
        };
        let e = job_display(&bare, 0, &none).expect_err("no DISPLAY");
        assert!(e.to_string().contains("DISPLAY is not set"), "{e}");
        let gone = Job {
            set: vec![("DISPLAY".into(), ":4242".into())],
            unset: Vec::new(),
        };
        let e = job_display(&gone, 1, &none).expect_err("no X server");
        assert!(e.to_string().contains("job 2"), "{e}");
        assert!(e.to_string().contains("X4242"), "{e}");
        let unset = Job {
            set: Vec::new(),
            unset: vec!["DISPLAY".into()],
        };
        let outer = |k: &str| (k == "DISPLAY").then(|| ":0".to_string());
        assert!(job_display(&unset, 0, &outer).is_err());
        let remote = |k: &str| (k == "DISPLAY").then(|| "otherhost:0".to_string());
        assert_eq!(
            job_display(&bare, 0, &remote).expect("remote"),
            "otherhost:0"
        );
    }

    #[test]
    fn a_job_of_a_private_wayland_desktop_runs_on_its_compositor() {
        let outer = |k: &str| (k == "DISPLAY").then(|| ":0".to_string());
        let dir = tempfile::tempdir().expect("a folder");
        let socket = dir.path().join("wayland-1");
        std::fs::write(&socket, "").expect("a stand-in socket");
        let job = Job {
            set: vec![("WAYLAND_DISPLAY".into(), socket.display().to_string())],
            unset: vec!["DISPLAY".into()],
        };
        assert_eq!(
            job_display(&job, 0, &outer).expect("wayland"),
            socket.display().to_string()
        );
        std::fs::remove_file(&socket).expect("gone");
        let e = job_display(&job, 2, &outer).expect_err("no compositor");
        assert!(e.to_string().contains("job 3") && e.to_string().contains("WAYLAND_DISPLAY"));
        // the X display wins where both are set, as for `live`
        let both = Job {
            set: vec![
                ("DISPLAY".into(), ":4243".into()),
                ("WAYLAND_DISPLAY".into(), "wayland-9".into()),
            ],
            unset: Vec::new(),
        };
        assert!(job_display(&both, 0, &|_| None).is_err_and(|e| e.to_string().contains("X4243")));
    }

    #[test]
    fn a_session_env_file_becomes_a_job_without_its_home() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("env");
        std::fs::write(
            &p,
            "export DISPLAY=':101'\nexport HOME='/tmp/s/home'\nexport GTK_A11Y=atspi\n\
             unset NO_AT_BRIDGE WAYLAND_DISPLAY\n",
        )
        .unwrap();
        let job = read_env_file(&p).unwrap();
        assert_eq!(
            job.set,
            vec![
                ("DISPLAY".to_string(), ":101".to_string()),
                ("GTK_A11Y".to_string(), "atspi".to_string())
            ]
        );
        assert_eq!(job.unset, vec!["NO_AT_BRIDGE", "WAYLAND_DISPLAY"]);
        assert!(read_env_file(&tmp.path().join("missing")).is_err());
        let out = Path::new("/o");
        for id in ["..", ".", "", "a/b", "../../x", "/abs"] {
            let dir = task_dir(out, id);
            assert_eq!(
                dir.parent(),
                Some(Path::new("/o/tasks")),
                "{id:?} -> {dir:?}"
            );
            assert!(
                matches!(
                    dir.components().next_back(),
                    Some(std::path::Component::Normal(_))
                ),
                "{id:?} -> {dir:?}"
            );
        }
    }

    #[test]
    fn a_tasks_folder_that_is_a_link_is_refused() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let elsewhere = tmp.path().join("home");
        std::fs::create_dir(&elsewhere).expect("mkdir");
        let out = tmp.path().join("out");
        std::fs::create_dir(&out).expect("mkdir");
        std::os::unix::fs::symlink(&elsewhere, out.join("tasks")).expect("symlink");
        let e = check_tasks_folder(&out).expect_err("refused");
        assert!(e.to_string().contains("symbolic link"), "{e}");
        std::fs::remove_file(out.join("tasks")).expect("rm");
        std::fs::create_dir(out.join("tasks")).expect("mkdir");
        assert!(check_tasks_folder(&out).is_ok());
    }
}
