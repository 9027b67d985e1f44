//! The blackboard: memory shared by every agent of a session, owned by the host.
//!
//! It holds the person's requests, questions and answers, the trajectories of finished
//! subtasks and the screenshots saved on the way. It is rendered into every prompt and saved
//! with the trajectory. It is bounded: when over its entry or byte limit, the oldest
//! trajectories are summarised into a count first, then the oldest screenshots and questions
//! are dropped; requests are kept.

use serde::{Deserialize, Serialize};

use crate::config::BlackboardLimits;
use crate::subtask::{SubtaskOutcome, SUBTASK_RESULT_CHARS, SUBTASK_TEXT_CHARS};
use crate::text::clip_chars;

/// Most actions kept per trajectory (the latest).
const TRAJECTORY_ACTIONS: usize = 20;
/// Most characters of one action line.
const ACTION_CHARS: usize = 200;

/// A question asked of the person and the answer, if any.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuestionAnswer {
    /// Who asked.
    pub agent: String,
    /// The question.
    pub question: String,
    /// The answer; `None` when none came.
    pub answer: Option<String>,
}

/// What one finished subtask did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Trajectory {
    /// The agent that ran it.
    pub agent: String,
    /// The subtask.
    pub subtask: String,
    /// How it ended.
    pub status: SubtaskOutcome,
    /// Its result or the error.
    pub result: String,
    /// Actions it took, one line each.
    pub actions: Vec<String>,
}

/// The shared memory of a session.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Blackboard {
    /// The person's requests, oldest first.
    pub requests: Vec<String>,
    /// Questions and answers.
    pub questions: Vec<QuestionAnswer>,
    /// Finished subtasks.
    pub trajectories: Vec<Trajectory>,
    /// Saved screenshots (paths relative to the output folder).
    pub screenshots: Vec<String>,
    /// Trajectories dropped to stay within the bounds.
    pub dropped_trajectories: usize,
    /// Other entries dropped to stay within the bounds.
    pub dropped_other: usize,
    #[serde(skip)]
    limits: BlackboardLimits,
}

impl Blackboard {
    /// An empty blackboard with these bounds.
    pub fn new(limits: BlackboardLimits) -> Self {
        Self {
            limits,
            ..Self::default()
        }
    }

    /// Set the bounds (after loading a saved blackboard) and enforce them.
    pub fn set_limits(&mut self, limits: BlackboardLimits) {
        self.limits = limits;
        self.enforce();
    }

    /// Add a request of the person.
    pub fn add_request(&mut self, request: impl Into<String>) {
        self.requests.push(request.into());
        self.enforce();
    }

    /// Add a question and its answer.
    pub fn add_question(&mut self, qa: QuestionAnswer) {
        self.questions.push(qa);
        self.enforce();
    }

    /// Add a finished subtask, its texts clipped (the whole result stays in the events) so
    /// that one large result cannot push every other entry out.
    pub fn add_trajectory(&mut self, mut t: Trajectory) {
        t.subtask = clip_chars(&t.subtask, SUBTASK_TEXT_CHARS);
        t.result = clip_chars(&t.result, SUBTASK_RESULT_CHARS);
        if t.actions.len() > TRAJECTORY_ACTIONS {
            let cut = t.actions.len() - TRAJECTORY_ACTIONS;
            t.actions.drain(..cut);
            t.actions
                .insert(0, format!("({cut} earlier actions not kept)"));
        }
        for a in &mut t.actions {
            *a = clip_chars(a, ACTION_CHARS);
        }
        self.trajectories.push(t);
        self.enforce();
    }

    /// Add a saved screenshot.
    pub fn add_screenshot(&mut self, path: impl Into<String>) {
        self.screenshots.push(path.into());
        self.enforce();
    }

    fn entries(&self) -> usize {
        self.requests.len()
            + self.questions.len()
            + self.trajectories.len()
            + self.screenshots.len()
    }

    fn enforce(&mut self) {
        while self.entries() > self.limits.max_entries
            || self.render().len() > self.limits.max_bytes
        {
            if !self.trajectories.is_empty() {
                self.trajectories.remove(0);
                self.dropped_trajectories += 1;
            } else if !self.screenshots.is_empty() {
                self.screenshots.remove(0);
                self.dropped_other += 1;
            } else if !self.questions.is_empty() {
                self.questions.remove(0);
                self.dropped_other += 1;
            } else {
                // Only requests are left: they are the person's words and stay.
                break;
            }
        }
    }

    /// Whether nothing has been written yet.
    pub fn is_empty(&self) -> bool {
        self.entries() == 0
    }

    /// The blackboard as prompt text.
    pub fn render(&self) -> String {
        let mut s = String::new();
        if !self.requests.is_empty() {
            s.push_str("Requests:\n");
            for (i, r) in self.requests.iter().enumerate() {
                s.push_str(&format!("  {}. {}\n", i + 1, r));
            }
        }
        if !self.questions.is_empty() {
            s.push_str("Questions and answers:\n");
            for q in &self.questions {
                let a = q.answer.as_deref().unwrap_or("(no answer was given)");
                s.push_str(&format!("  Q ({}): {}\n  A: {}\n", q.agent, q.question, a));
            }
        }
        if self.dropped_trajectories > 0 {
            s.push_str(&format!(
                "({} earlier subtask trajectories were dropped to keep this short)\n",
                self.dropped_trajectories
            ));
        }
        if !self.trajectories.is_empty() {
            s.push_str("Finished subtasks:\n");
            for t in &self.trajectories {
                s.push_str(&format!(
                    "  - [{}] {} ({}): {}\n",
                    t.status, t.subtask, t.agent, t.result
                ));
                for a in &t.actions {
                    s.push_str(&format!("      * {a}\n"));
                }
            }
        }
        if !self.screenshots.is_empty() {
            s.push_str(&format!(
                "Saved screenshots: {}\n",
                self.screenshots.join(", ")
            ));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn traj(i: usize) -> Trajectory {
        Trajectory {
            agent: "AppAgent/X".into(),
            subtask: format!("subtask {i}"),
            status: SubtaskOutcome::Finish,
            result: "x".repeat(100),
            actions: vec![],
        }
    }

    #[test]
    fn oldest_trajectories_go_first_and_requests_stay() {
        let mut b = Blackboard::new(BlackboardLimits {
            max_entries: 4,
            max_bytes: 100_000,
        });
        b.add_request("do it");
        for i in 0..10 {
            b.add_trajectory(traj(i));
        }
        assert_eq!(b.requests, vec!["do it".to_string()]);
        assert_eq!(b.trajectories.len(), 3);
        assert_eq!(b.trajectories[0].subtask, "subtask 7");
        assert_eq!(b.dropped_trajectories, 7);
        assert!(b
            .render()
            .contains("7 earlier subtask trajectories were dropped"));
    }

    #[test]
    fn byte_bound_holds() {
        let mut b = Blackboard::new(BlackboardLimits {
            max_entries: 1000,
            max_bytes: 1000,
        });
        for i in 0..50 {
            b.add_trajectory(traj(i));
            assert!(b.render().len() <= 1000);
        }
        assert!(b.trajectories.len() < 10);
    }

    #[test]
    fn unanswered_questions_are_noted() {
        let mut b = Blackboard::new(BlackboardLimits::default());
        b.add_question(QuestionAnswer {
            agent: "HostAgent".into(),
            question: "Which file?".into(),
            answer: None,
        });
        assert!(b.render().contains("no answer was given"));
    }
}
