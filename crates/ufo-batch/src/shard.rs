//! Shards: one batch split across machines by the engines' array indexes.
//!
//! - [`Shard`]: slice `index` of `count` (0-based, as every engine counts), from `--shard K/N`;
//! - [`select`]: the tasks of a shard, a stable split of the sorted task ids (the same on every
//!   machine, whatever order the files were found in);
//! - [`from_env`]: `--shard auto`, the index and count from the engine's environment
//!   (Kubernetes Indexed Jobs, Slurm job arrays, GCP Batch, AWS Batch);
//! - [`SuiteId`]: what identifies a suite (its sorted ids and their digest), written into every
//!   shard's folder so that `ufo batch merge` refuses shards of different suites.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::results::{TaskResult, TaskStatus};
use crate::task::MAX_ID_BYTES;

/// Most shards of one batch: far beyond any cluster's array, small enough to bound the
/// bookkeeping.
pub const MAX_SHARDS: usize = 100_000;

/// Name of a shard's description in its folder.
pub const SHARD_FILE: &str = "shard.json";

/// The variable a manifest sets to the number of shards when the engine does not give it
/// (Kubernetes: the Job's `completions`; AWS Batch: the array size).
pub const COUNT_VAR: &str = "UFO_SHARD_COUNT";

/// Slice `index` of `count` (0-based).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    /// This shard, `0..count`.
    pub index: usize,
    /// How many shards the batch is split into.
    pub count: usize,
}

/// A shard that cannot be used, saying which value is wrong and what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShardError {
    /// `--shard` that is neither `K/N` nor `auto`.
    #[error("--shard {0:?}: give K/N (shard K of N, 0-based: 0/3, 1/3, 2/3) or auto")]
    Syntax(String),
    /// A value out of range or not a number.
    #[error("{var}={value:?}: {why}")]
    Bad {
        /// The variable (or `--shard`).
        var: String,
        /// Its value.
        value: String,
        /// What is wrong with it.
        why: String,
    },
    /// `--shard auto` outside any engine, or an engine variable without its companion.
    #[error("--shard auto: {0}")]
    Missing(String),
}

impl Shard {
    /// A checked shard: `count` 1 to [`MAX_SHARDS`], `index < count`; `index_var` and
    /// `count_var` name where the values came from, for the message.
    pub fn new(
        index: usize,
        count: usize,
        index_var: &str,
        count_var: &str,
    ) -> Result<Shard, ShardError> {
        if count == 0 || count > MAX_SHARDS {
            return Err(ShardError::Bad {
                var: count_var.to_string(),
                value: count.to_string(),
                why: format!("the number of shards must be 1 to {MAX_SHARDS}"),
            });
        }
        if index >= count {
            return Err(ShardError::Bad {
                var: index_var.to_string(),
                value: index.to_string(),
                why: format!("shard index {index} is not below the number of shards {count} (indexes are 0-based)"),
            });
        }
        Ok(Shard { index, count })
    }

    /// The shard's folder inside the batch folder: `shard-<K>-of-<N>`.
    pub fn folder(&self) -> String {
        format!("shard-{}-of-{}", self.index, self.count)
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// What `--shard` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShardSpec {
    /// `K/N`.
    Fixed(Shard),
    /// `auto`: from the engine's environment.
    Auto,
}

impl FromStr for ShardSpec {
    type Err = ShardError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        if s == "auto" {
            return Ok(ShardSpec::Auto);
        }
        let (k, n) = s
            .split_once('/')
            .ok_or_else(|| ShardError::Syntax(s.to_string()))?;
        let k = number("--shard", k)?;
        let n = number("--shard", n)?;
        Ok(ShardSpec::Fixed(Shard::new(k, n, "--shard", "--shard")?))
    }
}

/// A decimal number (no sign, no spaces inside), or an error naming the variable.
fn number(var: &str, value: &str) -> Result<usize, ShardError> {
    let v = value.trim();
    if v.is_empty() || !v.bytes().all(|b| b.is_ascii_digit()) {
        return Err(ShardError::Bad {
            var: var.to_string(),
            value: value.to_string(),
            why: "not a whole number".into(),
        });
    }
    v.parse().map_err(|_| ShardError::Bad {
        var: var.to_string(),
        value: value.to_string(),
        why: "too large".into(),
    })
}

/// `--shard auto`: the shard from the engine's environment (`env` reads a variable).
///
/// In this order, the first engine whose index variable is set:
/// - Kubernetes Indexed Job: `JOB_COMPLETION_INDEX`, the count from [`COUNT_VAR`] (the
///   manifest sets it to the Job's `completions`);
/// - Slurm job array: `SLURM_ARRAY_TASK_ID` minus `SLURM_ARRAY_TASK_MIN` (divided by
///   `SLURM_ARRAY_TASK_STEP` when set), of `SLURM_ARRAY_TASK_COUNT`;
/// - GCP Batch: `BATCH_TASK_INDEX` of `BATCH_TASK_COUNT`;
/// - AWS Batch array job: `AWS_BATCH_JOB_ARRAY_INDEX`, the count from [`COUNT_VAR`].
///
/// When the engine gives its own count and [`COUNT_VAR`] is set too, they must agree. A
/// missing or inconsistent value is an error naming the variable.
pub fn from_env(env: &dyn Fn(&str) -> Option<String>) -> Result<Shard, ShardError> {
    let given_count = || -> Result<Option<usize>, ShardError> {
        env(COUNT_VAR).map(|v| number(COUNT_VAR, &v)).transpose()
    };
    let need_count = |index_var: &str| -> Result<usize, ShardError> {
        given_count()?.ok_or_else(|| {
            ShardError::Missing(format!(
                "{index_var} is set but {COUNT_VAR} is not; set {COUNT_VAR} to the number of \
                 shards (the Job's completions, the array's size) in the manifest"
            ))
        })
    };
    let agree = |count: usize, count_var: &str| -> Result<usize, ShardError> {
        match given_count()? {
            Some(c) if c != count => Err(ShardError::Bad {
                var: COUNT_VAR.into(),
                value: c.to_string(),
                why: format!(
                    "disagrees with {count_var}={count}; remove {COUNT_VAR} or make them equal"
                ),
            }),
            _ => Ok(count),
        }
    };
    if let Some(v) = env("JOB_COMPLETION_INDEX") {
        let index = number("JOB_COMPLETION_INDEX", &v)?;
        let count = need_count("JOB_COMPLETION_INDEX")?;
        return Shard::new(index, count, "JOB_COMPLETION_INDEX", COUNT_VAR);
    }
    if let Some(v) = env("SLURM_ARRAY_TASK_ID") {
        return slurm(env, &v, &agree);
    }
    if let Some(v) = env("BATCH_TASK_INDEX") {
        let index = number("BATCH_TASK_INDEX", &v)?;
        let count = env("BATCH_TASK_COUNT").ok_or_else(|| {
            ShardError::Missing("BATCH_TASK_INDEX is set but BATCH_TASK_COUNT is not".into())
        })?;
        let count = agree(number("BATCH_TASK_COUNT", &count)?, "BATCH_TASK_COUNT")?;
        return Shard::new(index, count, "BATCH_TASK_INDEX", "BATCH_TASK_COUNT");
    }
    if let Some(v) = env("AWS_BATCH_JOB_ARRAY_INDEX") {
        let index = number("AWS_BATCH_JOB_ARRAY_INDEX", &v)?;
        let count = need_count("AWS_BATCH_JOB_ARRAY_INDEX")?;
        return Shard::new(index, count, "AWS_BATCH_JOB_ARRAY_INDEX", COUNT_VAR);
    }
    Err(ShardError::Missing(
        "no engine's array index in the environment (JOB_COMPLETION_INDEX, SLURM_ARRAY_TASK_ID, \
         BATCH_TASK_INDEX, AWS_BATCH_JOB_ARRAY_INDEX); run it as an array task, or give \
         --shard K/N"
            .into(),
    ))
}

/// A Slurm array task: `(ID - MIN) / STEP` of `COUNT`.
fn slurm(
    env: &dyn Fn(&str) -> Option<String>,
    id: &str,
    agree: &dyn Fn(usize, &str) -> Result<usize, ShardError>,
) -> Result<Shard, ShardError> {
    let id = number("SLURM_ARRAY_TASK_ID", id)?;
    let var = |name: &str| -> Result<usize, ShardError> {
        let v = env(name).ok_or_else(|| {
            ShardError::Missing(format!("SLURM_ARRAY_TASK_ID is set but {name} is not"))
        })?;
        number(name, &v)
    };
    let min = var("SLURM_ARRAY_TASK_MIN")?;
    let count = agree(var("SLURM_ARRAY_TASK_COUNT")?, "SLURM_ARRAY_TASK_COUNT")?;
    let step = match env("SLURM_ARRAY_TASK_STEP") {
        Some(v) => number("SLURM_ARRAY_TASK_STEP", &v)?.max(1),
        None => 1,
    };
    let offset = id.checked_sub(min).ok_or_else(|| ShardError::Bad {
        var: "SLURM_ARRAY_TASK_ID".into(),
        value: id.to_string(),
        why: format!("below SLURM_ARRAY_TASK_MIN={min}"),
    })?;
    if offset % step != 0 {
        return Err(ShardError::Bad {
            var: "SLURM_ARRAY_TASK_ID".into(),
            value: id.to_string(),
            why: format!("not on the array's step SLURM_ARRAY_TASK_STEP={step} from {min}; give the array as a range (--array=0-N)"),
        });
    }
    Shard::new(
        offset / step,
        count,
        "SLURM_ARRAY_TASK_ID",
        "SLURM_ARRAY_TASK_COUNT",
    )
}

/// The positions (into `ids`) of the tasks of `shard`: the ids are sorted (ties by position
/// key `tie`, e.g. the file name) and dealt round-robin, so each shard gets an even mix and
/// the split does not depend on the order the tasks were found in. Returned in input order.
pub fn select(ids: &[(String, String)], shard: Shard) -> Vec<usize> {
    let mut order: Vec<usize> = (0..ids.len()).collect();
    order.sort_by(|&a, &b| ids[a].cmp(&ids[b]));
    let mut mine: Vec<usize> = order
        .into_iter()
        .enumerate()
        .filter(|(rank, _)| rank % shard.count == shard.index)
        .map(|(_, i)| i)
        .collect();
    mine.sort_unstable();
    mine
}

/// What identifies a suite: its task ids, sorted, and their digest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SuiteId {
    /// FNV-1a of the sorted ids (each followed by a NUL), hexadecimal.
    pub digest: String,
    /// The sorted ids.
    pub ids: Vec<String>,
}

impl SuiteId {
    /// The suite of these ids (any order).
    pub fn of(ids: impl IntoIterator<Item = String>) -> SuiteId {
        let mut ids: Vec<String> = ids.into_iter().collect();
        ids.sort();
        // FNV-1a: stable across runs, machines and versions, unlike the standard hasher
        let mut h = 0xcbf2_9ce4_8422_2325_u64;
        for b in ids.iter().flat_map(|id| id.bytes().chain([0])) {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
        SuiteId {
            digest: format!("{h:016x}"),
            ids,
        }
    }
}

/// A shard folder's `shard.json`: which shard of which suite, and its tasks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShardInfo {
    /// This shard.
    pub shard: Shard,
    /// The whole suite.
    pub suite: SuiteId,
    /// The ids of this shard's tasks.
    pub tasks: Vec<String>,
}

/// Most task ids a `shard.json` may list (its suite's, its own): ten times the most shards,
/// far beyond any suite, small enough to bound what a merge holds.
pub const MAX_SUITE_TASKS: usize = 1_000_000;

/// A `shard.json` that cannot be used: what is wrong with it. The reader adds the file's name
/// and what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShardFileError {
    /// Not JSON of the shard description's shape (the parser's message).
    #[error("not a shard description ({0})")]
    Json(String),
    /// A shard count out of `1..=MAX_SHARDS`.
    #[error("its shard count is {0}; a batch has 1 to {MAX_SHARDS} shards")]
    Count(usize),
    /// A shard index not below the count.
    #[error("its shard index {index} is not below its shard count {count} (indexes are 0-based)")]
    Index {
        /// The index.
        index: usize,
        /// The count.
        count: usize,
    },
    /// More ids than [`MAX_SUITE_TASKS`] (`suite` or `tasks`).
    #[error("its {list} list {count} task ids, more than the {MAX_SUITE_TASKS} a suite may have")]
    TooManyIds {
        /// Which list.
        list: &'static str,
        /// How many it has.
        count: usize,
    },
    /// An id longer than a task id may be.
    #[error(
        "its {list} hold an id of {len} bytes, longer than the {MAX_ID_BYTES} bytes of a task id"
    )]
    LongId {
        /// Which list.
        list: &'static str,
        /// The id's length.
        len: usize,
    },
    /// The suite's ids out of order (the owner of a task is its rank in the sorted suite).
    #[error("its suite's ids are not sorted (at position {0}), as ufo batch writes them")]
    Unsorted(usize),
    /// A digest that is not the digest of the ids beside it.
    #[error("its suite digest {given} is not the digest of its ids ({computed})")]
    Digest {
        /// The digest the file gives.
        given: String,
        /// The digest of its ids.
        computed: String,
    },
}

impl ShardInfo {
    /// Read a `shard.json`: any bytes give a checked description or an error, never a panic.
    pub fn from_json(bytes: &[u8]) -> Result<ShardInfo, ShardFileError> {
        let info: ShardInfo =
            serde_json::from_slice(bytes).map_err(|e| ShardFileError::Json(e.to_string()))?;
        info.check()?;
        Ok(info)
    }

    /// Whether the description can be merged: a count of 1 to [`MAX_SHARDS`], an index below
    /// it, at most [`MAX_SUITE_TASKS`] ids of at most [`MAX_ID_BYTES`] bytes each, the suite
    /// sorted and its digest the digest of its ids.
    pub fn check(&self) -> Result<(), ShardFileError> {
        let Shard { index, count } = self.shard;
        if count == 0 || count > MAX_SHARDS {
            return Err(ShardFileError::Count(count));
        }
        if index >= count {
            return Err(ShardFileError::Index { index, count });
        }
        for (list, ids) in [("suite", &self.suite.ids), ("tasks", &self.tasks)] {
            if ids.len() > MAX_SUITE_TASKS {
                return Err(ShardFileError::TooManyIds {
                    list,
                    count: ids.len(),
                });
            }
            if let Some(long) = ids.iter().find(|id| id.len() > MAX_ID_BYTES) {
                return Err(ShardFileError::LongId {
                    list,
                    len: long.len(),
                });
            }
        }
        if let Some(pos) = self.suite.ids.windows(2).position(|w| w[0] > w[1]) {
            return Err(ShardFileError::Unsorted(pos + 1));
        }
        let computed = SuiteId::of(self.suite.ids.iter().cloned()).digest;
        if computed != self.suite.digest {
            return Err(ShardFileError::Digest {
                given: self.suite.digest.clone(),
                computed,
            });
        }
        Ok(())
    }
}

/// One shard's folder as read for a merge: where it is, its `shard.json`, its results.
#[derive(Debug, Clone)]
pub struct ShardResults {
    /// The folder, for messages.
    pub folder: String,
    /// Its `shard.json`.
    pub info: ShardInfo,
    /// Its `results.jsonl` (none when the shard did not finish: then its task folders'
    /// results, as far as they got).
    pub results: Vec<TaskResult>,
}

/// Shards that cannot be merged.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MergeError {
    /// No shard given.
    #[error("no shard folders to merge; give the shards' folders (shard-K-of-N, with shard.json) or the folder holding them")]
    Empty,
    /// A shard whose description does not hold.
    #[error("{folder}: {why}; run that shard again with --force, or leave its folder out")]
    BadShard {
        /// The shard's folder.
        folder: String,
        /// What is wrong.
        why: ShardFileError,
    },
    /// Shards of different suites, or of different splits.
    #[error(
        "{first} and {other} are shards of different {what}; merge only the shards of one batch"
    )]
    Mismatch {
        /// The first shard's folder.
        first: String,
        /// The disagreeing one.
        other: String,
        /// `suites (...)` or `splits (...)`.
        what: String,
    },
}

/// A result from a shard that does not own its task: set aside, never merged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Foreign {
    /// The task.
    pub id: String,
    /// The folder of the shard that reported it.
    pub folder: String,
    /// The index of the shard the split gives the task to.
    pub owner: usize,
}

/// The merged batch: every task of the suite once, in the suite's (sorted id) order.
#[derive(Debug, Clone, Default)]
pub struct Merged {
    /// One result per task of the suite; a task no shard reported is an `error`.
    pub results: Vec<TaskResult>,
    /// Ids reported by more than one folder of their owning shard (the first folder's result
    /// is kept), with the folders.
    pub duplicates: Vec<(String, Vec<String>)>,
    /// Ids no shard reported.
    pub missing: Vec<String>,
    /// Shard indexes of the split with no folder.
    pub missing_shards: Vec<usize>,
    /// Results of shards that do not own the task (never merged).
    pub foreign: Vec<Foreign>,
    /// Results whose id is not in the suite, with their folder (never merged).
    pub unknown: Vec<(String, String)>,
}

/// Merge shards of one suite: each description must hold ([`ShardInfo::check`]) and all must
/// have the same suite and split. A result counts only from the shard that owns its task
/// (the split of [`select`]: the task at rank `r` of the sorted suite belongs to shard
/// `r % N`); another shard's result for it is set aside as [`Foreign`], one for an id not in
/// the suite as unknown. A task its owner reported from two folders is kept once (the first
/// folder's); a task its owner did not report becomes an `error` result naming that shard.
pub fn merge(mut shards: Vec<ShardResults>) -> Result<Merged, MergeError> {
    for s in &shards {
        s.info.check().map_err(|why| MergeError::BadShard {
            folder: s.folder.clone(),
            why,
        })?;
    }
    shards.sort_by_key(|s| s.info.shard.index);
    let (first, others) = shards.split_first().ok_or(MergeError::Empty)?;
    same_suite_and_split(first, others)?;
    let first = &first.info;
    let count = first.shard.count;
    let present: BTreeSet<usize> = shards.iter().map(|s| s.info.shard.index).collect();
    let mut merged = Merged {
        missing_shards: (0..count).filter(|i| !present.contains(i)).collect(),
        ..Merged::default()
    };
    let owners = owners(&first.suite.ids, count);
    let found = owned_results(&shards, &owners, &mut merged);
    one_result_per_task(&first.suite.ids, count, &found, &mut merged);
    Ok(merged)
}

/// Whether the `others` shards are of `first`'s suite and split.
fn same_suite_and_split(first: &ShardResults, others: &[ShardResults]) -> Result<(), MergeError> {
    for s in others {
        let mismatch = |what: String| MergeError::Mismatch {
            first: first.folder.clone(),
            other: s.folder.clone(),
            what,
        };
        let (a, b) = (&first.info, &s.info);
        if b.suite.digest != a.suite.digest || b.suite.ids != a.suite.ids {
            return Err(mismatch(format!(
                "suites ({} tasks, digest {} against {} tasks, digest {})",
                a.suite.ids.len(),
                a.suite.digest,
                b.suite.ids.len(),
                b.suite.digest
            )));
        }
        if b.shard.count != a.shard.count {
            return Err(mismatch(format!(
                "splits ({} against {} shards)",
                a.shard.count, b.shard.count
            )));
        }
    }
    Ok(())
}

/// The shard that owns the task at rank `pos` of the sorted suite (the split of [`select`]).
fn owner(pos: usize, count: usize) -> usize {
    pos % count
}

/// Each id's owning shards (an id twice in the suite, from two task files, has an owner for
/// each).
fn owners(ids: &[String], count: usize) -> BTreeMap<&str, BTreeSet<usize>> {
    let mut owners: BTreeMap<&str, BTreeSet<usize>> = BTreeMap::new();
    for (pos, id) in ids.iter().enumerate() {
        owners
            .entry(id.as_str())
            .or_default()
            .insert(owner(pos, count));
    }
    owners
}

/// The results their owning shards reported, each with the folders that reported it; the
/// others are set aside in `merged` (foreign or unknown).
fn owned_results<'a>(
    shards: &'a [ShardResults],
    owners: &BTreeMap<&str, BTreeSet<usize>>,
    merged: &mut Merged,
) -> BTreeMap<&'a str, (&'a TaskResult, Vec<String>)> {
    let mut found: BTreeMap<&str, (&TaskResult, Vec<String>)> = BTreeMap::new();
    for s in shards {
        for r in &s.results {
            match owners.get(r.id.as_str()) {
                None => merged.unknown.push((r.id.clone(), s.folder.clone())),
                Some(own) if !own.contains(&s.info.shard.index) => merged.foreign.push(Foreign {
                    id: r.id.clone(),
                    folder: s.folder.clone(),
                    owner: own.first().copied().unwrap_or_default(),
                }),
                Some(_) => {
                    found
                        .entry(r.id.as_str())
                        .and_modify(|(_, folders)| folders.push(s.folder.clone()))
                        .or_insert((r, vec![s.folder.clone()]));
                }
            }
        }
    }
    found
}

/// One result per task of the suite, in its order: the owner's (noting duplicates), or an
/// `error` naming the shard that should have reported it.
fn one_result_per_task(
    ids: &[String],
    count: usize,
    found: &BTreeMap<&str, (&TaskResult, Vec<String>)>,
    merged: &mut Merged,
) {
    let mut done: BTreeSet<&str> = BTreeSet::new();
    for (pos, id) in ids.iter().enumerate() {
        if !done.insert(id.as_str()) {
            continue;
        }
        match found.get(id.as_str()) {
            Some((r, folders)) => {
                if folders.len() > 1 {
                    merged.duplicates.push((id.clone(), folders.clone()));
                }
                merged.results.push((*r).clone());
            }
            None => {
                merged.missing.push(id.clone());
                merged.results.push(TaskResult::early(
                    id,
                    "other",
                    TaskStatus::Error,
                    format!(
                        "missing: no shard reported it (it belongs to shard {} of {count}); run that shard again, it resumes",
                        owner(pos, count)
                    ),
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::Value;
    use std::collections::HashMap;

    fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| map.get(k).cloned()
    }

    #[test]
    fn the_flag_takes_k_of_n_or_auto() {
        assert_eq!(
            "1/3".parse::<ShardSpec>(),
            Ok(ShardSpec::Fixed(Shard { index: 1, count: 3 }))
        );
        assert_eq!("auto".parse::<ShardSpec>(), Ok(ShardSpec::Auto));
        for bad in ["3/3", "0/0", "1", "a/3", "-1/3", "1/3/4", "", "1/1000001"] {
            let e = bad.parse::<ShardSpec>().expect_err(bad);
            assert!(e.to_string().contains("--shard"), "{bad}: {e}");
        }
        assert_eq!(Shard { index: 2, count: 3 }.folder(), "shard-2-of-3");
    }

    #[test]
    fn each_engine_gives_its_index_and_count() {
        let cases: &[(&[(&str, &str)], Shard)] = &[
            (
                &[("JOB_COMPLETION_INDEX", "2"), (COUNT_VAR, "3")],
                Shard { index: 2, count: 3 },
            ),
            (
                &[
                    ("SLURM_ARRAY_TASK_ID", "5"),
                    ("SLURM_ARRAY_TASK_MIN", "4"),
                    ("SLURM_ARRAY_TASK_COUNT", "3"),
                ],
                Shard { index: 1, count: 3 },
            ),
            (
                &[
                    ("SLURM_ARRAY_TASK_ID", "14"),
                    ("SLURM_ARRAY_TASK_MIN", "10"),
                    ("SLURM_ARRAY_TASK_STEP", "2"),
                    ("SLURM_ARRAY_TASK_COUNT", "3"),
                ],
                Shard { index: 2, count: 3 },
            ),
            (
                &[("BATCH_TASK_INDEX", "0"), ("BATCH_TASK_COUNT", "4")],
                Shard { index: 0, count: 4 },
            ),
            (
                &[("AWS_BATCH_JOB_ARRAY_INDEX", "7"), (COUNT_VAR, "8")],
                Shard { index: 7, count: 8 },
            ),
        ];
        for (pairs, want) in cases {
            assert_eq!(from_env(&env_of(pairs)), Ok(*want), "{pairs:?}");
        }
    }

    #[test]
    fn a_missing_or_inconsistent_value_names_the_variable() {
        let cases: &[(&[(&str, &str)], &str)] = &[
            (&[], "JOB_COMPLETION_INDEX"),
            (&[("JOB_COMPLETION_INDEX", "0")], COUNT_VAR),
            (
                &[("JOB_COMPLETION_INDEX", "x"), (COUNT_VAR, "3")],
                "JOB_COMPLETION_INDEX",
            ),
            (
                &[("JOB_COMPLETION_INDEX", "3"), (COUNT_VAR, "3")],
                "JOB_COMPLETION_INDEX",
            ),
            (
                &[("JOB_COMPLETION_INDEX", "0"), (COUNT_VAR, "0")],
                COUNT_VAR,
            ),
            (
                &[
                    ("SLURM_ARRAY_TASK_ID", "1"),
                    ("SLURM_ARRAY_TASK_COUNT", "3"),
                ],
                "SLURM_ARRAY_TASK_MIN",
            ),
            (
                &[("SLURM_ARRAY_TASK_ID", "1"), ("SLURM_ARRAY_TASK_MIN", "0")],
                "SLURM_ARRAY_TASK_COUNT",
            ),
            (
                &[
                    ("SLURM_ARRAY_TASK_ID", "1"),
                    ("SLURM_ARRAY_TASK_MIN", "2"),
                    ("SLURM_ARRAY_TASK_COUNT", "3"),
                ],
                "SLURM_ARRAY_TASK_ID",
            ),
            (
                // a sparse array (--array=0,5,9): the ids are not 0..COUNT
                &[
                    ("SLURM_ARRAY_TASK_ID", "9"),
                    ("SLURM_ARRAY_TASK_MIN", "0"),
                    ("SLURM_ARRAY_TASK_COUNT", "3"),
                ],
                "SLURM_ARRAY_TASK_ID",
            ),
            (
                &[
                    ("SLURM_ARRAY_TASK_ID", "1"),
                    ("SLURM_ARRAY_TASK_MIN", "0"),
                    ("SLURM_ARRAY_TASK_COUNT", "3"),
                    (COUNT_VAR, "4"),
                ],
                COUNT_VAR,
            ),
            (&[("BATCH_TASK_INDEX", "1")], "BATCH_TASK_COUNT"),
            (
                &[("BATCH_TASK_INDEX", "1"), ("BATCH_TASK_COUNT", "1 ")],
                "BATCH_TASK_INDEX",
            ),
            (&[("AWS_BATCH_JOB_ARRAY_INDEX", "1")], COUNT_VAR),
        ];
        for (pairs, var) in cases {
            let e = from_env(&env_of(pairs)).expect_err(&format!("{pairs:?}"));
            assert!(e.to_string().contains(var), "{pairs:?}: {e}");
        }
    }

    #[test]
    fn the_suite_digest_ignores_order_and_tells_suites_apart() {
        let a = SuiteId::of(["b".to_string(), "a".to_string()]);
        let b = SuiteId::of(["a".to_string(), "b".to_string()]);
        assert_eq!(a, b);
        assert_eq!(a.ids, ["a", "b"]);
        // the separator keeps ["ab"] and ["a", "b"] apart
        assert_ne!(SuiteId::of(["ab".to_string()]).digest, a.digest);
    }

    fn keyed(ids: &[String]) -> Vec<(String, String)> {
        ids.iter().map(|i| (i.clone(), String::new())).collect()
    }

    fn shard_of(suite: &[&str], index: usize, count: usize, done: &[&str]) -> ShardResults {
        let suite = SuiteId::of(suite.iter().map(|s| s.to_string()));
        ShardResults {
            folder: format!("s{index}"),
            info: ShardInfo {
                shard: Shard { index, count },
                suite,
                tasks: Vec::new(),
            },
            results: done
                .iter()
                .map(|id| TaskResult::early(id, "shell", TaskStatus::Passed, format!("by {index}")))
                .collect(),
        }
    }

    #[test]
    fn merging_reports_duplicates_and_missing_tasks_and_shards() {
        let suite = ["a", "b", "c", "d"];
        // sorted a b c d dealt to 3 shards: a and d to 0, b to 1, c to 2
        let mut again = shard_of(&suite, 0, 3, &["a"]);
        again.folder = "s0-again".into();
        again.results[0].reason = "by 0 again".into();
        let m = merge(vec![
            shard_of(&suite, 1, 3, &["b"]),
            shard_of(&suite, 0, 3, &["a"]),
            again,
        ])
        .unwrap();
        let ids: Vec<&str> = m.results.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids, ["a", "b", "c", "d"]);
        assert_eq!(
            m.duplicates,
            vec![(
                "a".to_string(),
                vec!["s0".to_string(), "s0-again".to_string()]
            )]
        );
        assert_eq!(
            m.results[0].reason, "by 0",
            "the first folder's result is kept"
        );
        assert_eq!(m.missing, ["c", "d"]);
        assert_eq!(m.missing_shards, [2]);
        assert_eq!(m.results[3].status, TaskStatus::Error);
        // d is the 4th sorted id: dealt to shard 3 % 3 = 0
        assert!(
            m.results[3].reason.contains("shard 0 of 3"),
            "{}",
            m.results[3].reason
        );
        assert!(m.foreign.is_empty() && m.unknown.is_empty());
    }

    #[test]
    fn a_result_counts_only_from_the_shard_that_owns_its_task() {
        let suite = ["a", "b", "c", "d"];
        // 2 shards: a and c to 0, b and d to 1
        let mut zero = shard_of(&suite, 0, 2, &["a", "c"]);
        zero.results[1].status = TaskStatus::Failed;
        // shard 1 also says c passed, and reports a task of no suite
        let one = shard_of(&suite, 1, 2, &["c", "b", "d", "zz"]);
        for shards in [vec![zero.clone(), one.clone()], vec![one, zero]] {
            let m = merge(shards).unwrap();
            let c = &m.results[2];
            assert_eq!((c.id.as_str(), c.status), ("c", TaskStatus::Failed));
            assert_eq!(
                c.reason, "by 0",
                "the owner's result, never another shard's"
            );
            assert_eq!(
                m.foreign,
                vec![Foreign {
                    id: "c".into(),
                    folder: "s1".into(),
                    owner: 0
                }]
            );
            assert_eq!(m.unknown, vec![("zz".to_string(), "s1".to_string())]);
            assert!(m.duplicates.is_empty() && m.missing.is_empty());
            assert_eq!(m.results.len(), 4, "the unknown id is not merged");
        }
        // the owner did not report it: missing, however many others did
        let m = merge(vec![
            shard_of(&suite, 0, 2, &["a"]),
            shard_of(&suite, 1, 2, &["b", "c", "d"]),
        ])
        .unwrap();
        assert_eq!(m.missing, ["c"]);
        assert_eq!(m.results[2].status, TaskStatus::Error);
        assert!(m.results[2].reason.contains("shard 0 of 2"));
    }

    #[test]
    fn a_shard_description_out_of_range_is_refused_never_a_panic() {
        let good = shard_of(&["a", "b"], 1, 2, &[]).info;
        let json = |f: &dyn Fn(&mut Value)| {
            let mut v = serde_json::to_value(&good).unwrap();
            f(&mut v);
            v.to_string()
        };
        assert_eq!(
            ShardInfo::from_json(json(&|_| {}).as_bytes()),
            Ok(good.clone())
        );
        let cases: Vec<(String, &str)> = vec![
            (
                json(&|v| v["shard"]["count"] = 0.into()),
                "shard count is 0",
            ),
            (
                json(&|v| v["shard"]["count"] = 1_000_000_000_000_000u64.into()),
                "shard count is 1000000000000000",
            ),
            (
                json(&|v| v["shard"]["count"] = 1e15.into()),
                "not a shard description",
            ),
            (
                json(&|v| v["shard"]["index"] = 2.into()),
                "index 2 is not below",
            ),
            (
                json(&|v| v["shard"]["index"] = (-1).into()),
                "not a shard description",
            ),
            (
                json(&|v| v["suite"]["ids"] = serde_json::json!(["b", "a"])),
                "not sorted",
            ),
            (json(&|v| v["suite"]["digest"] = "0".into()), "digest 0"),
            (
                json(&|v| v["tasks"] = serde_json::json!(["x".repeat(MAX_ID_BYTES + 1)])),
                "513 bytes",
            ),
            ("{\"shard\":".to_string(), "not a shard description"),
            ("[".repeat(100_000), "not a shard description"),
        ];
        for (text, says) in cases {
            let e = ShardInfo::from_json(text.as_bytes()).expect_err(says);
            assert!(e.to_string().contains(says), "{says}: {e}");
        }
        // a description built by hand is checked by the merge too
        let mut zero = shard_of(&["a"], 0, 1, &["a"]);
        zero.info.shard.count = 0;
        let e = merge(vec![zero]).expect_err("count 0");
        assert!(e.to_string().contains("s0: its shard count is 0"), "{e}");
    }

    #[test]
    fn shards_of_different_suites_or_splits_are_refused() {
        let e = merge(vec![
            shard_of(&["a", "b"], 0, 2, &["a"]),
            shard_of(&["a", "c"], 1, 2, &["c"]),
        ])
        .expect_err("different suites");
        assert!(e.to_string().contains("different suites"), "{e}");
        let e = merge(vec![
            shard_of(&["a", "b"], 0, 2, &["a"]),
            shard_of(&["a", "b"], 1, 3, &["b"]),
        ])
        .expect_err("different splits");
        assert!(e.to_string().contains("different splits"), "{e}");
        assert_eq!(merge(Vec::new()).expect_err("none"), MergeError::Empty);
    }

    proptest! {
        #[test]
        fn every_task_is_in_exactly_one_shard(
            ids in proptest::collection::vec("[a-c]{0,3}", 0..40),
            count in 1usize..12,
        ) {
            let keys = keyed(&ids);
            let mut seen = vec![0u32; ids.len()];
            let mut sizes = Vec::new();
            for index in 0..count {
                let mine = select(&keys, Shard { index, count });
                sizes.push(mine.len());
                for i in mine {
                    seen[i] += 1;
                }
            }
            prop_assert!(seen.iter().all(|&n| n == 1), "{seen:?}");
            // an even split: sizes differ by at most one
            let (lo, hi) = (sizes.iter().min().copied(), sizes.iter().max().copied());
            prop_assert!(hi.unwrap_or(0) - lo.unwrap_or(0) <= 1, "{sizes:?}");
        }

        #[test]
        fn the_split_does_not_depend_on_the_input_order(
            ids in proptest::collection::vec("[a-d]{1,3}", 0..30),
            count in 1usize..6,
            seed in any::<u64>(),
        ) {
            let mut shuffled = ids.clone();
            // a deterministic shuffle from the seed
            let mut s = seed | 1;
            for i in (1..shuffled.len()).rev() {
                s ^= s << 13; s ^= s >> 7; s ^= s << 17;
                let j = (s % (i as u64 + 1)) as usize;
                shuffled.swap(i, j);
            }
            for index in 0..count {
                let shard = Shard { index, count };
                let pick = |v: &[String]| {
                    let mut got: Vec<String> =
                        select(&keyed(v), shard).into_iter().map(|i| v[i].clone()).collect();
                    got.sort();
                    got
                };
                prop_assert_eq!(pick(&ids), pick(&shuffled));
            }
        }

        #[test]
        fn any_text_for_the_flag_or_the_environment_is_an_answer_never_a_panic(
            flag in ".{0,12}",
            index in ".{0,6}",
            count in ".{0,6}",
        ) {
            let _ = flag.parse::<ShardSpec>();
            let env = env_of(&[
                ("SLURM_ARRAY_TASK_ID", index.as_str()),
                ("SLURM_ARRAY_TASK_MIN", "0"),
                ("SLURM_ARRAY_TASK_COUNT", count.as_str()),
            ]);
            if let Ok(s) = from_env(&env) {
                prop_assert!(s.index < s.count);
            }
        }
    }
}
