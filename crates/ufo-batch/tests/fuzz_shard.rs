//! Fuzzing what `ufo batch merge` reads: a shard's description ([`ShardInfo::from_json`],
//! `shard.json`) and its results ([`parse_results`], `results.jsonl`). No bytes may panic or
//! abort; a valid description and valid results round-trip; a file cut anywhere costs at most
//! the line it was cut in; the merge of any checked shards never panics and takes a task's
//! result only from the shard that owns it.
//!
//! `UFO_FUZZ_CASES=N` sets the cases per property (see ufo-core's `tests/support/fuzz.rs`).

#[path = "../../ufo-core/tests/support/fuzz.rs"]
mod fuzz;

use std::collections::{BTreeMap, BTreeSet};

use fuzz::{adversarial, config, json_value};
use proptest::collection::vec;
use proptest::prelude::*;
use serde_json::{json, Value};
use ufo_batch::results::{parse_results, LineProblem};
use ufo_batch::shard::{merge, select, Shard, ShardInfo, ShardResults, SuiteId};
use ufo_batch::{TaskResult, TaskStatus};

/// Shard-shaped JSON: the description's keys, with values of every type and size (counts of
/// zero, of 10^15, negative, fractional), the suite sometimes consistent.
fn shard_like() -> impl Strategy<Value = Value> {
    let number = prop_oneof![
        (0u64..4).prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        Just(json!(1_000_000_000_000_000u64)),
        Just(json!(1e15)),
        Just(json!(-1)),
        json_value(),
    ];
    let ids = vec("[a-c]{0,2}", 0..8);
    (number.clone(), number, ids, any::<bool>(), json_value()).prop_map(
        |(index, count, ids, consistent, other)| {
            let suite = SuiteId::of(ids.clone());
            let (digest, listed) = if consistent {
                (json!(suite.digest), json!(suite.ids))
            } else {
                (other, json!(ids))
            };
            json!({"shard": {"index": index, "count": count},
                   "suite": {"digest": digest, "ids": listed},
                   "tasks": ids})
        },
    )
}

/// A task result whose every field survives JSON exactly (times in quarter seconds: serde_json
/// reads back only short decimals bit for bit).
fn result_of(id: String) -> impl Strategy<Value = TaskResult> {
    let status = prop_oneof![
        Just(TaskStatus::Passed),
        Just(TaskStatus::Failed),
        Just(TaskStatus::Skipped),
        Just(TaskStatus::Error),
    ];
    (
        status,
        any::<String>(),
        vec(any::<String>(), 0..3),
        (0u32..4_000_000).prop_map(|q| f64::from(q) / 4.0),
        any::<u32>(),
    )
        .prop_map(move |(status, reason, log, time, steps)| {
            let mut r = TaskResult::early(&id, "app", status, reason);
            r.log = log;
            r.time_s = time;
            r.steps = steps;
            r
        })
}

fn results() -> impl Strategy<Value = Vec<TaskResult>> {
    vec(any::<String>().prop_flat_map(result_of), 0..6)
}

fn jsonl(results: &[TaskResult]) -> String {
    results
        .iter()
        .map(|r| format!("{}\n", serde_json::to_string(r).unwrap_or_default()))
        .collect()
}

/// The shards of a suite: for each index, whether its folder is there and the ids it reports
/// (any of the suite's, and ids of no suite).
fn shards_of(
    ids: Vec<String>,
    count: usize,
    reports: Vec<(bool, Vec<usize>)>,
) -> Vec<ShardResults> {
    let suite = SuiteId::of(ids.clone());
    let keyed: Vec<(String, String)> = ids.iter().map(|i| (i.clone(), String::new())).collect();
    reports
        .into_iter()
        .take(count)
        .enumerate()
        .filter(|(_, (present, _))| *present)
        .map(|(index, (_, picks))| {
            let shard = Shard { index, count };
            let tasks = select(&keyed, shard)
                .into_iter()
                .map(|i| ids[i].clone())
                .collect();
            let results = picks
                .into_iter()
                .map(|p| {
                    let id = ids.get(p).cloned().unwrap_or_else(|| format!("stray{p}"));
                    TaskResult::early(&id, "app", TaskStatus::Passed, format!("{index}"))
                })
                .collect();
            ShardResults {
                folder: format!("shard-{index}-of-{count}"),
                info: ShardInfo {
                    shard,
                    suite: suite.clone(),
                    tasks,
                },
                results,
            }
        })
        .collect()
}

proptest! {
    #![proptest_config(config(400))]

    #[test]
    fn shard_description_bytes_never_panic(text in adversarial()) {
        if let Ok(info) = ShardInfo::from_json(text.as_bytes()) {
            prop_assert!(info.shard.index < info.shard.count);
        }
    }

    #[test]
    fn shard_shaped_json_never_panics_and_what_passes_merges(v in shard_like()) {
        if let Ok(info) = ShardInfo::from_json(v.to_string().as_bytes()) {
            prop_assert!(info.shard.count >= 1 && info.shard.index < info.shard.count);
            let distinct: BTreeSet<&String> = info.suite.ids.iter().collect();
            let n = distinct.len();
            let m = merge(vec![ShardResults {
                folder: "s".into(),
                info: info.clone(),
                results: Vec::new(),
            }])
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(m.results.len(), n);
        }
    }

    #[test]
    fn valid_descriptions_round_trip(
        ids in vec("[a-z0-9-]{1,12}", 0..20),
        count in 1usize..6,
        index in 0usize..6,
    ) {
        let index = index % count;
        let keyed: Vec<(String, String)> = ids.iter().map(|i| (i.clone(), String::new())).collect();
        let shard = Shard { index, count };
        let info = ShardInfo {
            shard,
            suite: SuiteId::of(ids.clone()),
            tasks: select(&keyed, shard).into_iter().map(|i| ids[i].clone()).collect(),
        };
        let text = serde_json::to_string_pretty(&info).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(ShardInfo::from_json(text.as_bytes()), Ok(info));
    }

    #[test]
    fn results_bytes_never_panic(text in adversarial()) {
        let lines = text.split('\n').count();
        let (results, problems) = parse_results(text.as_bytes());
        prop_assert!(results.len() + problems.len() <= lines);
        prop_assert!(problems.iter().all(|(n, _)| (1..=lines).contains(n)));
    }

    #[test]
    fn valid_results_round_trip_and_a_cut_costs_at_most_its_line(
        rs in results(),
        cut in any::<proptest::sample::Index>(),
    ) {
        let text = jsonl(&rs);
        prop_assert_eq!(parse_results(text.as_bytes()), (rs.clone(), Vec::new()));
        // the file cut at any byte: every line whose JSON is whole still counts
        let at = cut.index(text.len() + 1);
        let (got, problems) = parse_results(&text.as_bytes()[..at]);
        let mut end = 0;
        let mut whole = 0;
        for r in &rs {
            end += serde_json::to_string(r).map(|l| l.len()).unwrap_or(0);
            if end <= at {
                whole += 1;
            }
            end += 1;
        }
        prop_assert_eq!(&got[..], &rs[..whole]);
        prop_assert!(problems.len() <= 1, "{:?}", problems);
        prop_assert!(problems.iter().all(|(_, p)| *p == LineProblem::Cut), "{:?}", problems);
    }

    #[test]
    fn a_merged_result_comes_only_from_the_shard_that_owns_its_task(
        ids in vec("[a-e]{1,2}", 1..12),
        count in 1usize..5,
        reports in vec((any::<bool>(), vec(0usize..14, 0..8)), 5),
    ) {
        let shards = shards_of(ids.clone(), count, reports);
        let Ok(m) = merge(shards) else {
            // only no shard at all is refused
            return Ok(());
        };
        let sorted: Vec<String> = SuiteId::of(ids.clone()).ids;
        let mut owners: BTreeMap<&str, BTreeSet<usize>> = BTreeMap::new();
        for (pos, id) in sorted.iter().enumerate() {
            owners.entry(id).or_default().insert(pos % count);
        }
        prop_assert_eq!(m.results.len(), owners.len(), "every task of the suite once");
        for r in &m.results {
            let own = &owners[r.id.as_str()];
            match r.status {
                TaskStatus::Passed => {
                    let from: usize = r.reason.parse().map_err(|_| TestCaseError::fail(r.reason.clone()))?;
                    prop_assert!(own.contains(&from), "{} from shard {} owned by {:?}", r.id, from, own);
                }
                _ => prop_assert!(m.missing.contains(&r.id)),
            }
        }
        prop_assert!(m.foreign.iter().all(|f| !owners[f.id.as_str()].contains(&shard_index(&f.folder))));
        prop_assert!(m.unknown.iter().all(|(id, _)| id.starts_with("stray")));
    }
}

/// The index of a `shard-K-of-N` folder name.
fn shard_index(folder: &str) -> usize {
    folder
        .strip_prefix("shard-")
        .and_then(|rest| rest.split('-').next())
        .and_then(|k| k.parse().ok())
        .unwrap_or(usize::MAX)
}
