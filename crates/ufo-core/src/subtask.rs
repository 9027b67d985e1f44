//! Subtasks as the host remembers them: how one ended ([`SubtaskOutcome`]), what it handed
//! back, and the bounded history of finished ones ([`SubtaskHistory`]) with its limits, which
//! the blackboard's trajectories share.

use serde::{Deserialize, Serialize};

use crate::text::clip_chars;

/// How a subtask ended, as archived for the host and on the blackboard.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum SubtaskOutcome {
    /// The agent finished it.
    Finish,
    /// The agent gave up.
    Fail,
    /// The system could not go on (no observation, the model unreachable, ...).
    Error,
    /// The person rejected the action the agent held for confirmation.
    Rejected,
    /// The person cancelled the session during it.
    Cancelled,
}

impl SubtaskOutcome {
    /// The name written in the trajectory and shown to the host: `FINISH`, `FAIL`, ...
    pub fn as_str(self) -> &'static str {
        match self {
            SubtaskOutcome::Finish => "FINISH",
            SubtaskOutcome::Fail => "FAIL",
            SubtaskOutcome::Error => "ERROR",
            SubtaskOutcome::Rejected => "REJECTED",
            SubtaskOutcome::Cancelled => "CANCELLED",
        }
    }
}

impl std::fmt::Display for SubtaskOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What an ended subtask hands back: for ERROR the error, otherwise the model's `Result`, and
/// without one the result of the agent's last action. Every agent kind archives this.
pub fn subtask_result(
    outcome: SubtaskOutcome,
    error: Option<&str>,
    result: &str,
    last_result: Option<&str>,
) -> String {
    match (error, outcome) {
        (Some(e), SubtaskOutcome::Error) => e.to_string(),
        _ if !result.is_empty() => result.to_string(),
        _ => last_result.unwrap_or_default().to_string(),
    }
}

/// A finished subtask, as the host sees it in "previous subtasks".
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubtaskRecord {
    /// The agent that ran it.
    pub agent: String,
    /// The subtask.
    pub subtask: String,
    /// How it ended.
    pub status: SubtaskOutcome,
    /// Result or error.
    pub result: String,
}

/// Newest subtasks shown whole (results clipped) in the host's prompt.
pub const RECENT_SUBTASKS: usize = 10;
/// Subtasks before those, one line each, before they are only counted.
pub const SUMMARISED_SUBTASKS: usize = 20;
/// Most characters of a subtask's result kept for the host.
pub const SUBTASK_RESULT_CHARS: usize = 1_000;
/// Most characters of a subtask's text kept for the host.
pub const SUBTASK_TEXT_CHARS: usize = 500;
/// Most characters of a subtask's text in its one-line summary.
const SUMMARY_TEXT_CHARS: usize = 150;

/// How many of the oldest subtasks ended which way (they are only counted).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubtaskCounts {
    /// FINISH.
    pub finished: u64,
    /// FAIL, ERROR or REJECTED.
    pub failed: u64,
    /// Any other ending (e.g. CANCELLED).
    pub other: u64,
}

impl SubtaskCounts {
    fn total(&self) -> u64 {
        self.finished + self.failed + self.other
    }
}

/// The subtasks finished so far in a session, bounded by entries and bytes (docs/states.md "The blackboard": the
/// host's memory of earlier subtasks must not grow without bound): the newest
/// [`RECENT_SUBTASKS`] kept with results clipped to [`SUBTASK_RESULT_CHARS`], the
/// [`SUMMARISED_SUBTASKS`] before them as one line each, the rest only counted. The whole
/// results stay in `events.jsonl`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "HistoryRepr")]
pub struct SubtaskHistory {
    /// The newest subtasks, oldest first.
    pub recent: Vec<SubtaskRecord>,
    /// The ones before them (results dropped), oldest first.
    pub summarised: Vec<SubtaskRecord>,
    /// The oldest, counted.
    pub counted: SubtaskCounts,
}

/// A saved history: a bare list in checkpoints written before it was bounded.
#[derive(Deserialize)]
#[serde(untagged)]
enum HistoryRepr {
    Bounded {
        recent: Vec<SubtaskRecord>,
        #[serde(default)]
        summarised: Vec<SubtaskRecord>,
        #[serde(default)]
        counted: SubtaskCounts,
    },
    List(Vec<SubtaskRecord>),
}

impl From<HistoryRepr> for SubtaskHistory {
    fn from(r: HistoryRepr) -> Self {
        let (list, counted, clipped): (Vec<SubtaskRecord>, _, _) = match r {
            HistoryRepr::Bounded {
                recent,
                summarised,
                counted,
            } => (
                summarised.into_iter().chain(recent).collect(),
                counted,
                true,
            ),
            HistoryRepr::List(list) => (list, SubtaskCounts::default(), false),
        };
        // Re-apply the bounds: a file may hold more than they allow.
        let mut h = SubtaskHistory {
            counted,
            ..SubtaskHistory::default()
        };
        for mut record in list {
            // Texts clipped before carry the "… (N chars more)" mark: clip them only if
            // they are longer than a clipped text can be.
            let slack = if clipped { CLIP_MARK_CHARS } else { 0 };
            record.subtask = clip_chars(&record.subtask, SUBTASK_TEXT_CHARS + slack);
            record.result = clip_chars(&record.result, SUBTASK_RESULT_CHARS + slack);
            h.push_clipped(record);
        }
        h
    }
}

/// The most characters [`clip_chars`] adds.
const CLIP_MARK_CHARS: usize = 40;

impl SubtaskHistory {
    /// Add a finished subtask, clipping its texts and moving the oldest ones down.
    pub fn push(&mut self, mut record: SubtaskRecord) {
        record.subtask = clip_chars(&record.subtask, SUBTASK_TEXT_CHARS);
        record.result = clip_chars(&record.result, SUBTASK_RESULT_CHARS);
        self.push_clipped(record);
    }

    fn push_clipped(&mut self, record: SubtaskRecord) {
        self.recent.push(record);
        if self.recent.len() > RECENT_SUBTASKS {
            let mut old = self.recent.remove(0);
            if old.subtask.chars().count() > SUMMARY_TEXT_CHARS + CLIP_MARK_CHARS {
                old.subtask = clip_chars(&old.subtask, SUMMARY_TEXT_CHARS);
            }
            old.result.clear();
            self.summarised.push(old);
        }
        if self.summarised.len() > SUMMARISED_SUBTASKS {
            let old = self.summarised.remove(0);
            match old.status {
                SubtaskOutcome::Finish => self.counted.finished += 1,
                SubtaskOutcome::Fail | SubtaskOutcome::Error | SubtaskOutcome::Rejected => {
                    self.counted.failed += 1
                }
                SubtaskOutcome::Cancelled => self.counted.other += 1,
            }
        }
    }

    /// Subtasks recorded in all, counted ones included.
    pub fn len(&self) -> u64 {
        self.counted.total() + (self.recent.len() + self.summarised.len()) as u64
    }

    /// Whether no subtask has finished yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// One line on the subtasks that are only counted, if any.
    pub fn summary(&self) -> Option<String> {
        let c = &self.counted;
        (c.total() > 0).then(|| {
            let mut s = format!(
                "{} earlier subtasks, not listed: {} finished, {} failed",
                c.total(),
                c.finished,
                c.failed
            );
            if c.other > 0 {
                s.push_str(&format!(", {} ended otherwise", c.other));
            }
            s
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_subtask_hands_back_its_error_its_result_or_its_last_action_result() {
        use SubtaskOutcome::*;
        assert_eq!(
            subtask_result(Error, Some("no window"), "r", Some("l")),
            "no window"
        );
        assert_eq!(
            subtask_result(Finish, Some("old error"), "r", Some("l")),
            "r"
        );
        assert_eq!(subtask_result(Fail, None, "", Some("l")), "l");
        assert_eq!(subtask_result(Rejected, None, "", None), "");
        // the names of the trajectory and the checkpoint are unchanged
        assert_eq!(
            serde_json::to_value(Rejected).unwrap_or_default(),
            "REJECTED"
        );
        assert_eq!(Cancelled.as_str(), "CANCELLED");
    }
}
