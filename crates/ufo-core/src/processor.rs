//! The four-phase processor (Strategy layer).
//!
//! One processor run is one *step*: DATA_COLLECTION → LLM_INTERACTION → ACTION_EXECUTION →
//! MEMORY_UPDATE, each phase a list of strategies run in order. A strategy that fails stops
//! the run; the phase and error are kept so the state machine can move to ERROR. Each agent
//! kind names its strategies in its own enum and implements [`StepRunner`] for its step data.

use std::time::Instant;

use serde_json::{Map, Value};

use crate::ports::{DesktopError, LlmError};
use crate::prompt::PromptError;

/// The four phases, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Phase {
    /// Observe: screenshots, windows, controls.
    DataCollection,
    /// Build the prompt, ask the model, parse and validate.
    LlmInteraction,
    /// Run the chosen action.
    ActionExecution,
    /// Record the step in memory and on the blackboard.
    MemoryUpdate,
}

impl Phase {
    /// The phases in execution order.
    pub const ORDER: [Phase; 4] = [
        Phase::DataCollection,
        Phase::LlmInteraction,
        Phase::ActionExecution,
        Phase::MemoryUpdate,
    ];

    /// snake_case name used in `timings_ms`.
    pub fn key(self) -> &'static str {
        match self {
            Phase::DataCollection => "data_collection",
            Phase::LlmInteraction => "llm_interaction",
            Phase::ActionExecution => "action_execution",
            Phase::MemoryUpdate => "memory_update",
        }
    }
}

/// Why a strategy stopped a processor run (the agent goes to ERROR). Answers the model can
/// fix are not errors of this kind: they are sent back to the model as text (see
/// [`ask_model`](crate::agent::ask_model)).
#[derive(Debug, thiserror::Error)]
pub enum StepError {
    /// The desktop failed (observing the window, listing windows, a screenshot); its own
    /// message says what to do.
    #[error(transparent)]
    Desktop(#[from] DesktopError),
    /// A prompt template did not render; its message names the template and the fix.
    #[error(transparent)]
    Prompt(#[from] PromptError),
    /// The model call failed after the backend's own retries.
    #[error("model call failed: {0}")]
    Model(#[source] LlmError),
    /// The model's answer was still invalid after the configured re-asks.
    #[error(
        "the model's answer was still invalid after {retries} re-asks: {reason}; \
         raise json_parsing_retry or use a model that follows the answer format"
    )]
    InvalidAnswer {
        /// The re-asks made (`json_parsing_retry`).
        retries: u32,
        /// What was wrong with the last answer, as told to the model.
        reason: String,
    },
    /// The model was to be asked about a window that was not observed.
    #[error("no observation of the window; the Observe strategy must run before AskModel")]
    NoObservation,
}

/// A strategy that failed, stopping the processor.
#[derive(Debug, thiserror::Error)]
#[error("{} phase, strategy {strategy}: {error}", phase.key())]
pub struct PhaseError {
    /// The phase it ran in.
    pub phase: Phase,
    /// The strategy's name.
    pub strategy: String,
    /// What went wrong.
    #[source]
    pub error: StepError,
}

/// The step data of an agent kind, able to run each of its strategies.
pub trait StepRunner {
    /// The agent kind's strategy names.
    type Strategy: Copy + std::fmt::Debug;

    /// Run one strategy. An `Err` stops the processor.
    fn run(
        &mut self,
        strategy: Self::Strategy,
    ) -> impl std::future::Future<Output = Result<(), StepError>>;
}

/// What a processor run reports.
#[derive(Debug, Default)]
pub struct ProcessReport {
    /// Milliseconds per phase (and `total`).
    pub timings_ms: Map<String, Value>,
    /// The failure that stopped the run, if any.
    pub error: Option<PhaseError>,
}

/// An ordered list of strategies per phase.
#[derive(Debug, Clone)]
pub struct Processor<S> {
    phases: Vec<(Phase, Vec<S>)>,
}

impl<S: Copy + std::fmt::Debug> Processor<S> {
    /// A processor with these strategies for each phase (any phase left out runs nothing).
    pub fn new(
        data_collection: Vec<S>,
        llm_interaction: Vec<S>,
        action_execution: Vec<S>,
        memory_update: Vec<S>,
    ) -> Self {
        Self {
            phases: vec![
                (Phase::DataCollection, data_collection),
                (Phase::LlmInteraction, llm_interaction),
                (Phase::ActionExecution, action_execution),
                (Phase::MemoryUpdate, memory_update),
            ],
        }
    }

    /// The strategies of one phase.
    pub fn strategies(&self, phase: Phase) -> &[S] {
        self.phases
            .iter()
            .find(|(p, _)| *p == phase)
            .map(|(_, s)| s.as_slice())
            .unwrap_or(&[])
    }

    /// Run the phases in order on `runner`.
    pub async fn run<R: StepRunner<Strategy = S>>(&self, runner: &mut R) -> ProcessReport {
        let mut report = ProcessReport::default();
        let start = Instant::now();
        'phases: for (phase, strategies) in &self.phases {
            let t = Instant::now();
            for s in strategies {
                if let Err(error) = runner.run(*s).await {
                    report.error = Some(PhaseError {
                        phase: *phase,
                        strategy: format!("{s:?}"),
                        error,
                    });
                    report
                        .timings_ms
                        .insert(phase.key().into(), ms(t.elapsed()).into());
                    break 'phases;
                }
            }
            report
                .timings_ms
                .insert(phase.key().into(), ms(t.elapsed()).into());
        }
        report
            .timings_ms
            .insert("total".into(), ms(start.elapsed()).into());
        report
    }
}

fn ms(d: std::time::Duration) -> f64 {
    (d.as_secs_f64() * 1000.0 * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, Copy)]
    enum S {
        A,
        B,
        Boom,
        C,
    }

    struct R(Vec<&'static str>);

    impl StepRunner for R {
        type Strategy = S;
        async fn run(&mut self, s: S) -> Result<(), StepError> {
            match s {
                S::A => self.0.push("a"),
                S::B => self.0.push("b"),
                S::C => self.0.push("c"),
                S::Boom => return Err(StepError::NoObservation),
            }
            Ok(())
        }
    }

    #[tokio::test]
    async fn phases_run_in_order_and_stop_at_an_error() {
        let p = Processor::new(vec![S::A], vec![S::B], vec![S::Boom, S::C], vec![S::C]);
        let mut r = R(vec![]);
        let rep = p.run(&mut r).await;
        assert_eq!(r.0, vec!["a", "b"]);
        let e = rep.error.expect("error kept");
        assert_eq!(e.phase, Phase::ActionExecution);
        assert!(matches!(e.error, StepError::NoObservation), "{e}");
        assert!(e
            .to_string()
            .starts_with("action_execution phase, strategy Boom: no observation"));
        assert!(rep.timings_ms.contains_key("data_collection"));
        assert!(rep.timings_ms.contains_key("action_execution"));
        assert!(!rep.timings_ms.contains_key("memory_update"));
        assert!(rep.timings_ms.contains_key("total"));
    }

    #[tokio::test]
    async fn a_clean_run_times_all_phases() {
        let p = Processor::new(vec![S::A], vec![S::B], vec![S::C], vec![]);
        let rep = p.run(&mut R(vec![])).await;
        assert!(rep.error.is_none());
        for ph in Phase::ORDER {
            assert!(rep.timings_ms.contains_key(ph.key()));
        }
    }
}
