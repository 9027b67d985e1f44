//! Shards of `ufo batch` (`--shard K/N`, `--shard auto`) and `ufo batch merge OUT DIR...`.
//!
//! A shard runs the tasks of its slice (see [`ufo_batch::shard::select`]) into
//! `<out>/shard-K-of-N`, with `shard.json` naming the suite and the slice. Run again, it takes
//! the results its workers already wrote (`tasks/<id>/result.json`) and runs only the rest, so
//! an engine that retries a failed array task (a preempted node, a pod evicted) loses no work.
//! The merge reads the shards' folders and writes one `results.jsonl` and `summary.txt`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{anyhow, Context, Result};
use ufo_batch::shard::{self, Shard, ShardInfo, ShardResults, ShardSpec, SuiteId, SHARD_FILE};
use ufo_batch::TaskResult;

use super::results::{task_dir, write_results, Queue, RESULT_FILE};
use crate::config::plan::MergePlan;

/// Largest `shard.json` or `results.jsonl` read (a suite of a hundred thousand long ids).
const MAX_FILE: u64 = 64 << 20;

/// Largest `result.json` read: one task's result, pretty-printed (its lines within
/// [`ufo_batch::results::MAX_RESULT_LINE`] when written as one line).
pub(crate) const MAX_RESULT_FILE: u64 = 8 << 20;

/// Most skipped lines named per `results.jsonl` (the rest are counted), and most ids named per
/// list of the merge's report: a damaged file must not flood the terminal or `summary.txt`.
const MAX_NAMED: usize = 20;

/// The shard this run is, from `--shard` (none without it); `env` reads the engine's variables.
pub fn resolve(flag: Option<&str>, env: &dyn Fn(&str) -> Option<String>) -> Result<Option<Shard>> {
    let Some(flag) = flag else {
        return Ok(None);
    };
    let shard = match flag.parse::<ShardSpec>()? {
        ShardSpec::Fixed(s) => s,
        ShardSpec::Auto => shard::from_env(env)?,
    };
    Ok(Some(shard))
}

/// Keep the tasks of `shard` (slots renumbered), write the shard's `shard.json`, and settle
/// the tasks a previous run of this shard finished with their results.
pub fn narrow(
    shard: Shard,
    out: &Path,
    files: &[PathBuf],
    results: Vec<Option<TaskResult>>,
    queue: Queue,
    force: bool,
) -> Result<(Vec<Option<TaskResult>>, Queue)> {
    let keys = slot_keys(files, &results, &queue);
    let suite = SuiteId::of(keys.iter().map(|(id, _)| id.clone()));
    let mine = shard::select(&keys, shard);
    let info = ShardInfo {
        shard,
        suite,
        tasks: mine.iter().map(|&i| keys[i].0.clone()).collect(),
    };
    // what a shard writes, the merge must be able to read
    info.check().map_err(|e| {
        anyhow!("this shard's description could not be merged later: {e}; split the suite")
    })?;
    check_same_suite(out, &info, force)?;
    let text = serde_json::to_string_pretty(&info)?;
    crate::folder::write_bytes(&out.join(SHARD_FILE), text.as_bytes())
        .with_context(|| format!("cannot write {}/{SHARD_FILE}", out.display()))?;

    let mut slot = vec![None; results.len()];
    let mut kept = Vec::with_capacity(mine.len());
    for (new, &old) in mine.iter().enumerate() {
        slot[old] = Some(new);
    }
    for (old, r) in results.into_iter().enumerate() {
        if slot[old].is_some() {
            kept.push(r);
        }
    }
    let mut rest = Queue::new();
    let mut resumed = 0;
    for (old, file, task) in queue {
        let Some(new) = slot[old] else { continue };
        match finished(out, &task.id) {
            Some(r) => {
                kept[new] = Some(r);
                resumed += 1;
            }
            None => rest.push_back((new, file, task)),
        }
    }
    eprintln!(
        "shard {shard}: {} of the suite's {} tasks{}",
        kept.len(),
        keys.len(),
        if resumed > 0 {
            format!(", {resumed} already finished in an earlier run (kept)")
        } else {
            String::new()
        }
    );
    Ok((kept, rest))
}

/// Each slot's id (the task's, or the file's stem for a task that did not load) and its
/// file name, which orders tasks with the same id the same way on every machine.
fn slot_keys(
    files: &[PathBuf],
    results: &[Option<TaskResult>],
    queue: &Queue,
) -> Vec<(String, String)> {
    let mut ids: Vec<String> = results
        .iter()
        .map(|r| r.as_ref().map(|r| r.id.clone()).unwrap_or_default())
        .collect();
    for (i, _, task) in queue {
        if let Some(id) = ids.get_mut(*i) {
            id.clone_from(&task.id);
        }
    }
    ids.into_iter()
        .zip(files)
        .map(|(id, f)| {
            let name = f
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            (id, name)
        })
        .collect()
}

/// A shard folder that holds another suite's shard is refused (unless `--force`): resuming
/// from it would mix two suites' results.
fn check_same_suite(out: &Path, info: &ShardInfo, force: bool) -> Result<()> {
    if force {
        return Ok(());
    }
    let old = match read_info(out) {
        Ok(None) => return Ok(()),
        Ok(Some(old)) => old,
        Err(e) => {
            return Err(e.context(format!(
                "{} holds a shard description ufo cannot use; choose another --out, or pass \
                 --force to start this shard over",
                out.display()
            )))
        }
    };
    if old.suite.digest == info.suite.digest && old.shard == info.shard {
        return Ok(());
    }
    Err(anyhow!(
        "{} holds shard {} of another suite ({} tasks, digest {}; this one has {} tasks, \
         digest {}); choose another --out, or pass --force to start this shard over",
        out.display(),
        old.shard,
        old.suite.ids.len(),
        old.suite.digest,
        info.suite.ids.len(),
        info.suite.digest
    ))
}

/// A folder's `shard.json`, checked ([`ShardInfo::from_json`]); `None` when there is none, an
/// error naming the file when it cannot be read or does not hold.
fn read_info(dir: &Path) -> Result<Option<ShardInfo>> {
    let file = dir.join(SHARD_FILE);
    let bytes = match crate::folder::read_capped(&file, MAX_FILE) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(anyhow!("cannot read {}: {e}", file.display())),
    };
    let info = ShardInfo::from_json(&bytes).map_err(|e| anyhow!("{}: {e}", file.display()))?;
    Ok(Some(info))
}

/// The result a worker wrote for task `id` in an earlier run of this shard.
fn finished(out: &Path, id: &str) -> Option<TaskResult> {
    let bytes =
        crate::folder::read_capped(&task_dir(out, id).join(RESULT_FILE), MAX_RESULT_FILE).ok()?;
    let r: TaskResult = serde_json::from_slice(&bytes).ok()?;
    (r.id == id).then_some(r)
}

/// `ufo batch merge OUT DIR...`.
pub fn merge_command(args: &MergePlan) -> ExitCode {
    match merge(args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(crate::exit::EXIT_USAGE)
        }
    }
}

fn merge(args: &MergePlan) -> Result<ExitCode> {
    let folders = shard_folders(&args.dirs)?;
    let mut shards = Vec::new();
    let mut warnings = Vec::new();
    for dir in &folders {
        let (s, w) = read_shard(dir)?;
        shards.push(s);
        warnings.extend(w);
    }
    let merged = shard::merge(shards)?;
    let _lock = crate::recorder::OutLock::open(&args.out, crate::recorder::OutMode::Append)?;
    if args.out.join("results.jsonl").exists() && !args.force {
        return Err(anyhow!(
            "{} already holds a batch's results (results.jsonl); choose another OUT, or pass \
             --force to replace them",
            args.out.display()
        ));
    }
    let notes = notes(&merged, &warnings);
    eprint!("{notes}");
    let code = write_results(args.quiet, &args.out, &merged.results, &notes)?;
    if merged.missing.is_empty() {
        Ok(code)
    } else {
        Ok(ExitCode::from(1))
    }
}

/// The merge's report: what reading the shards skipped, missing shards and tasks, duplicates,
/// and the results set aside (a shard's result for a task it does not own, an id not in the
/// suite). Every id and folder shown inert; long lists cut at [`MAX_NAMED`] with the count.
fn notes(m: &shard::Merged, warnings: &[String]) -> String {
    let inert = |s: &str| ufo_core::inert(s).into_owned();
    let mut text = String::new();
    for w in warnings {
        text.push_str(&format!("warning: {}\n", inert(w)));
    }
    if !m.missing_shards.is_empty() {
        let list: Vec<String> = m.missing_shards.iter().map(|i| i.to_string()).collect();
        text.push_str(&format!("missing shards: {}\n", named(&list)));
    }
    if !m.missing.is_empty() {
        let list: Vec<String> = m.missing.iter().map(|i| inert(i)).collect();
        text.push_str(&format!(
            "missing tasks ({}, counted as errors): {}\n",
            list.len(),
            named(&list)
        ));
    }
    for (id, folders) in m.duplicates.iter().take(MAX_NAMED) {
        text.push_str(&format!(
            "duplicate task {} (in {}): the first one's result is kept\n",
            inert(id),
            folders
                .iter()
                .map(|f| inert(f))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if m.duplicates.len() > MAX_NAMED {
        text.push_str(&format!(
            "... and {} more duplicate tasks\n",
            m.duplicates.len() - MAX_NAMED
        ));
    }
    if !m.foreign.is_empty() {
        let list: Vec<String> = m
            .foreign
            .iter()
            .map(|f| {
                format!(
                    "{} (from {}, owned by shard {})",
                    inert(&f.id),
                    inert(&f.folder),
                    f.owner
                )
            })
            .collect();
        text.push_str(&format!(
            "results of shards that do not own the task ({}, not merged: only the owning \
             shard's result counts): {}\n",
            list.len(),
            named(&list)
        ));
    }
    if !m.unknown.is_empty() {
        let list: Vec<String> = m
            .unknown
            .iter()
            .map(|(id, folder)| format!("{} (from {})", inert(id), inert(folder)))
            .collect();
        text.push_str(&format!(
            "results of tasks not in the suite ({}, not merged): {}\n",
            list.len(),
            named(&list)
        ));
    }
    if !text.is_empty() {
        text.push('\n');
    }
    text
}

/// The first [`MAX_NAMED`] items, comma-separated, and how many more there are.
fn named(items: &[String]) -> String {
    let mut text = items
        .iter()
        .take(MAX_NAMED)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if items.len() > MAX_NAMED {
        text.push_str(&format!(", ... and {} more", items.len() - MAX_NAMED));
    }
    text
}

/// The shard folders named by `dirs`: a folder with `shard.json`, or the folders with one
/// directly inside a given folder.
fn shard_folders(dirs: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for dir in dirs {
        if dir.join(SHARD_FILE).is_file() {
            out.push(dir.clone());
            continue;
        }
        let entries = std::fs::read_dir(dir).with_context(|| {
            format!(
                "cannot read {}; give the shards' folders (shard-K-of-N) or the folder holding them",
                dir.display()
            )
        })?;
        let mut inside: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.join(SHARD_FILE).is_file())
            .collect();
        if inside.is_empty() {
            return Err(anyhow!(
                "{} is not a shard folder (no {SHARD_FILE}) and holds none; give the folders \
                 `ufo batch --shard` wrote (<out>/shard-K-of-N)",
                dir.display()
            ));
        }
        inside.sort();
        out.extend(inside);
    }
    Ok(out)
}

/// A shard folder's description and results, with warnings about what was skipped: its
/// `results.jsonl` (a line that is cut or not a result is skipped, and the task's own
/// `result.json` taken when its worker wrote one), or, for a shard that has not finished, the
/// results its workers wrote so far. Each result's `out` points into this folder when the
/// recorded one is not on this machine (a shard run in a container).
fn read_shard(dir: &Path) -> Result<(ShardResults, Vec<String>)> {
    let info = read_info(dir)?.ok_or_else(|| {
        anyhow!(
            "{}/{SHARD_FILE} is missing; give the folders `ufo batch --shard` wrote \
             (<out>/shard-K-of-N)",
            dir.display()
        )
    })?;
    let (results, warnings) = shard_results(dir, &info);
    let results = results
        .into_iter()
        .map(|mut r| {
            let local = task_dir(dir, &r.id);
            if !Path::new(&r.out).exists() && local.exists() {
                r.out = local.display().to_string();
            }
            r
        })
        .collect();
    Ok((
        ShardResults {
            folder: dir.display().to_string(),
            info,
            results,
        },
        warnings,
    ))
}

/// The results of a shard folder (see [`read_shard`]) and the warnings of reading them.
fn shard_results(dir: &Path, info: &ShardInfo) -> (Vec<TaskResult>, Vec<String>) {
    let file = dir.join("results.jsonl");
    let from_tasks =
        |ids: &mut dyn Iterator<Item = &String>| ids.filter_map(|id| finished(dir, id)).collect();
    let (bytes, whole) = match crate::folder::read_prefix(&file, MAX_FILE) {
        Ok(read) => read,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return (from_tasks(&mut info.tasks.iter()), Vec::new());
        }
        Err(e) => {
            let warning = format!(
                "cannot read {}: {e}; its tasks' result.json files are used",
                file.display()
            );
            return (from_tasks(&mut info.tasks.iter()), vec![warning]);
        }
    };
    let mut warnings = Vec::new();
    if !whole {
        warnings.push(format!(
            "{} is larger than {MAX_FILE} bytes; only that much of it was read",
            file.display()
        ));
    }
    let (mut results, problems) = ufo_batch::results::parse_results(&bytes);
    for (line, why) in problems.iter().take(MAX_NAMED) {
        warnings.push(format!("{} line {line} skipped: {why}", file.display()));
    }
    if problems.len() > MAX_NAMED {
        warnings.push(format!(
            "{}: {} more lines skipped",
            file.display(),
            problems.len() - MAX_NAMED
        ));
    }
    if !problems.is_empty() || !whole {
        // a lost line's task may still have its worker's result.json
        let have: std::collections::BTreeSet<&str> =
            results.iter().map(|r| r.id.as_str()).collect();
        let lost: Vec<&String> = info
            .tasks
            .iter()
            .filter(|id| !have.contains(id.as_str()))
            .collect();
        let found: Vec<TaskResult> = from_tasks(&mut lost.into_iter());
        if !found.is_empty() {
            warnings.push(format!(
                "{}: {} task(s) missing from it taken from their tasks/<id>/{RESULT_FILE}",
                file.display(),
                found.len()
            ));
        }
        results.extend(found);
    }
    (results, warnings)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use ufo_batch::TaskStatus;

    #[test]
    fn the_flag_or_the_environment_gives_the_shard() {
        let none = |_: &str| None;
        assert_eq!(resolve(None, &none).unwrap(), None);
        assert_eq!(
            resolve(Some("2/3"), &none).unwrap(),
            Some(Shard { index: 2, count: 3 })
        );
        let e = resolve(Some("auto"), &none).unwrap_err();
        assert!(e.to_string().contains("JOB_COMPLETION_INDEX"), "{e}");
        let k8s = |k: &str| match k {
            "JOB_COMPLETION_INDEX" => Some("1".to_string()),
            "UFO_SHARD_COUNT" => Some("2".to_string()),
            _ => None,
        };
        assert_eq!(
            resolve(Some("auto"), &k8s).unwrap(),
            Some(Shard { index: 1, count: 2 })
        );
    }

    #[test]
    fn a_folder_with_a_damaged_shard_description_is_not_resumed_unless_forced() {
        let tmp = tempfile::tempdir().unwrap();
        let info = ShardInfo {
            shard: Shard { index: 0, count: 2 },
            suite: SuiteId::of(["a".to_string(), "b".to_string()]),
            tasks: vec!["a".into()],
        };
        assert!(
            check_same_suite(tmp.path(), &info, false).is_ok(),
            "no shard.json yet"
        );
        std::fs::write(
            tmp.path().join(SHARD_FILE),
            serde_json::to_string(&info).unwrap(),
        )
        .unwrap();
        assert!(
            check_same_suite(tmp.path(), &info, false).is_ok(),
            "the same shard"
        );
        std::fs::write(
            tmp.path().join(SHARD_FILE),
            r#"{"shard":{"index":0,"count":0},"suite":{"digest":"","ids":[]},"tasks":[]}"#,
        )
        .unwrap();
        let e = format!(
            "{:#}",
            check_same_suite(tmp.path(), &info, false).unwrap_err()
        );
        assert!(e.contains("shard count is 0"), "{e}");
        assert!(e.contains("--force"), "{e}");
        assert!(check_same_suite(tmp.path(), &info, true).is_ok());
    }

    #[test]
    fn a_finished_task_is_found_only_under_its_own_id() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = task_dir(tmp.path(), "a/b");
        std::fs::create_dir_all(&dir).unwrap();
        assert!(finished(tmp.path(), "a/b").is_none());
        let r = TaskResult::early("a/b", "shell", TaskStatus::Failed, "x");
        std::fs::write(dir.join(RESULT_FILE), serde_json::to_string(&r).unwrap()).unwrap();
        assert_eq!(finished(tmp.path(), "a/b"), Some(r.clone()));
        let other = TaskResult::early("other", "shell", TaskStatus::Passed, "");
        std::fs::write(
            dir.join(RESULT_FILE),
            serde_json::to_string(&other).unwrap(),
        )
        .unwrap();
        assert!(finished(tmp.path(), "a/b").is_none());
    }
}
