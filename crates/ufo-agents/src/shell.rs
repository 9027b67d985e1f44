//! The shell agent: a LinuxAgent the HostAgent can ASSIGN a subtask to like an application.
//! It runs one shell command per step in its working directory and reads the output, until the
//! model says FINISH or FAIL.
//!
//! Its states are [`ShellStatus`]: CONTINUE (ask the model, run its `Command`), CONFIRM (a
//! command held for the person), FINISH, FAIL, ERROR. Commands go through the same shell
//! policy as the host's `Bash` ([`SensitivePolicy::shell_reason`]): a command that is not a
//! single allow-listed program is held in CONFIRM and runs only after
//! [`UserIo::confirm`](ufo_core::UserIo::confirm) approves it; it never runs silently.
//! Commands run through [`ufo_proc`]: without ufo's secrets in their environment, in a
//! process group of their own that a timeout kills whole, their output capped.
//!
//! [`SensitivePolicy::shell_reason`]: ufo_core::sensitive::SensitivePolicy::shell_reason

use std::path::PathBuf;
use std::time::Duration;

use async_trait::async_trait;
use ufo_core::agent::{ask_model, Assignment, Cx, Handoff, ModelCall, StepReport, SubAgent};
use ufo_core::step_action::{Chosen, Outcome, ShellCommand, StepAction};
use ufo_core::{ConfirmRequest, Decision, SessionStatus};

use crate::common::{clip, hand_back, recent, Ending, Fields, SubtaskLog, SubtaskOutcome};

/// The shell agent's target name, as the host sees it.
pub const SHELL_AGENT: &str = "shell";

/// Settings of the shell agent (`[agents]` in `ufo.toml`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShellConfig {
    /// Where commands run.
    pub workdir: PathBuf,
    /// How long one command may run before it is killed.
    pub timeout: Duration,
    /// Most bytes of stdout/stderr kept per command.
    pub max_output: usize,
}

impl ShellConfig {
    /// Commands in `workdir`, 60 s each, 4000 bytes of output kept.
    pub fn new(workdir: impl Into<PathBuf>) -> Self {
        Self {
            workdir: workdir.into(),
            timeout: Duration::from_secs(60),
            max_output: 4000,
        }
    }
}

/// The shell agent's states (and the statuses its model may answer).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShellStatus {
    /// Ask the model for the next command and run it.
    Continue,
    /// A command is held until the person approves it.
    Confirm,
    /// The subtask is done.
    Finish,
    /// The subtask cannot be done.
    Fail,
    /// A system error (the model unreachable, answers still invalid): the round ends.
    Error,
}

impl ShellStatus {
    /// The upper-case name used in answers and trajectories.
    pub fn as_str(self) -> &'static str {
        match self {
            ShellStatus::Continue => "CONTINUE",
            ShellStatus::Confirm => "CONFIRM",
            ShellStatus::Finish => "FINISH",
            ShellStatus::Fail => "FAIL",
            ShellStatus::Error => "ERROR",
        }
    }

    /// Parse the model's `Status`; ERROR is the system's, not the model's.
    pub fn parse(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_uppercase().as_str() {
            "CONTINUE" => Ok(ShellStatus::Continue),
            "CONFIRM" => Ok(ShellStatus::Confirm),
            "FINISH" => Ok(ShellStatus::Finish),
            "FAIL" => Ok(ShellStatus::Fail),
            other => Err(format!(
                "unknown Status {other:?} for the shell agent; use CONTINUE, FINISH, FAIL or CONFIRM"
            )),
        }
    }
}

/// A captured stream for the model: at most `max` bytes, then how much was left out.
fn show(c: &ufo_proc::Captured, max: usize) -> String {
    c.shown(max).trim_end().to_string()
}

/// The shell agent's answer.
#[derive(Debug, Clone)]
struct ShellResponse {
    thought: String,
    command: String,
    status: ShellStatus,
    result: String,
}

fn parse_response(raw: &str) -> Result<ShellResponse, String> {
    let f = Fields::parse(raw)?;
    let status = ShellStatus::parse(&f.text("Status"))?;
    let command = f.text("Command");
    if status == ShellStatus::Confirm && command.is_empty() {
        return Err("Status CONFIRM needs the Command to confirm".into());
    }
    Ok(ShellResponse {
        thought: f.text("Thought"),
        command,
        status,
        result: f.text("Result"),
    })
}

const SYSTEM_PROMPT: &str = "You are the shell agent of a desktop automation system (a \
LinuxAgent). You carry out one subtask by running shell commands (sh -c), one per step, in \
your working directory, and reading their output.\n\
Answer with exactly one JSON object:\n\
{\"Observation\": \"what the last output shows\", \"Thought\": \"your reasoning\", \
\"Command\": \"the one shell command to run now, or empty\", \"Status\": \"CONTINUE|FINISH|FAIL|CONFIRM\", \
\"Comment\": \"a note for the person\", \"Result\": \"the subtask's result when you FINISH\"}\n\
Status: CONTINUE runs Command and shows you its output next step; FINISH runs Command (if any) \
and ends the subtask, with Result as its result; FAIL ends the subtask as impossible (Command \
is not run); CONFIRM asks the person before running Command (use it for anything risky). \
Commands that are not a single allow-listed program (pipes, redirections, ;, &&, rm, ...) are \
always shown to the person first.";

/// The shell agent.
pub struct ShellAgent {
    config: ShellConfig,
    state: ShellStatus,
    status: ShellStatus,
    log: SubtaskLog,
    held: Option<(String, Option<String>)>,
    rejected: bool,
}

impl ShellAgent {
    /// A shell agent with these settings.
    pub fn new(config: ShellConfig) -> Self {
        Self {
            config,
            state: ShellStatus::Continue,
            status: ShellStatus::Continue,
            log: SubtaskLog::default(),
            held: None,
            rejected: false,
        }
    }

    /// The current state.
    pub fn state(&self) -> ShellStatus {
        self.state
    }

    /// Run a command in the working directory, bounded by the timeout; describe the outcome.
    /// It runs without ufo's secrets in its environment, in its own process group (killed
    /// whole on timeout or cancel), its output read up to [`ufo_proc::DEFAULT_MAX_OUTPUT`].
    #[tracing::instrument(level = "debug", skip(self))]
    async fn run(&self, command: &str) -> String {
        let mut cmd = ufo_proc::shell_command(command);
        cmd.current_dir(&self.config.workdir);
        let out = match ufo_proc::run(cmd, ufo_proc::Limits::new(self.config.timeout)).await {
            Ok(o) => o,
            Err(e) => {
                return format!(
                    "command failed to start: {e} (working directory {})",
                    self.config.workdir.display()
                )
            }
        };
        tracing::debug!(code = ?out.code, timed_out = out.timed_out, "shell agent command ended");
        if out.timed_out {
            return format!(
                "command failed: it did not finish within {} ms and was killed (with every process it started)",
                self.config.timeout.as_millis()
            );
        }
        let mut s = format!(
            "exit {}",
            out.code.map_or("by signal".to_string(), |c| c.to_string())
        );
        for (name, stream) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
            let shown = show(stream, self.config.max_output);
            if !shown.trim().is_empty() {
                s.push_str(&format!("\n{name}:\n{shown}"));
            }
        }
        s
    }

    async fn handle_continue(&mut self, cx: &mut Cx<'_>) -> StepReport {
        let mut report = StepReport::default();
        let started = std::time::Instant::now();
        let asked = self.ask(cx, &mut report).await;
        let llm_ms = started.elapsed().as_millis() as u64;
        let r = match asked {
            Ok(r) => r,
            Err(e) => {
                // the step record and the subtask's result keep the error as text
                let e = e.to_string();
                self.status = ShellStatus::Error;
                self.log.error = Some(e.clone());
                report.error = Some(e);
                report.status = "ERROR".into();
                report.subtask = Some(self.log.subtask.clone());
                return report;
            }
        };
        report.thought = Some(r.thought.clone());
        let command = r.command.trim().to_string();
        let act_started = std::time::Instant::now();
        let status = if command.is_empty() {
            r.status
        } else {
            self.carry_out(cx, &command, r.status, &mut report).await
        };
        self.remember(&r, status, &command, &report);
        self.status = status;
        report
            .timings_ms
            .insert("llm_interaction".into(), llm_ms.into());
        report.timings_ms.insert(
            "action_execution".into(),
            (act_started.elapsed().as_millis() as u64).into(),
        );
        report.timings_ms.insert(
            "total".into(),
            (started.elapsed().as_millis() as u64).into(),
        );
        report.status = status.as_str().into();
        report.subtask = Some(self.log.subtask.clone());
        report
    }

    /// Ask the model for the next command; the prompt and every answer are saved as the
    /// step's `prompt` artifact.
    async fn ask(
        &self,
        cx: &mut Cx<'_>,
        report: &mut StepReport,
    ) -> Result<ShellResponse, ufo_core::processor::StepError> {
        let svc = cx.services;
        let user = format!(
            "Subtask: {}\n{}Whole request: {}\nWorking directory: {}\n\nBlackboard (shared by all agents):\n{}\n\nYour steps so far:\n{}\n\nResult of your last command: {}\n",
            self.log.subtask,
            if self.log.messages.is_empty() {
                String::new()
            } else {
                format!("Hints from the host: {}\n", self.log.messages.join("; "))
            },
            cx.request,
            self.config.workdir.display(),
            cx.blackboard.render(),
            recent(&self.log.memory, svc.config.memory_in_prompt),
            self.log.last_result.as_deref().unwrap_or("(none)"),
        );
        let mut transcript = String::new();
        let asked = ask_model(
            ModelCall {
                llm: svc.app_llm,
                agent_kind: SHELL_AGENT,
                retries: svc.config.json_parsing_retry,
                system: SYSTEM_PROMPT.to_string(),
                user,
                images: Vec::new(),
                schema: Some(ufo_core::response::shell_schema()),
            },
            parse_response,
            &mut report.llm,
            &mut transcript,
        )
        .await;
        let name = format!("step_{:04}_shell_prompt.txt", cx.seq);
        if let Some(p) = cx.save(&name, transcript.as_bytes()) {
            report.artifacts.insert("prompt".into(), p.into());
        }
        asked
    }

    /// Run `command`, hold it (CONFIRM, or a command the shell allow-list does not pass), or
    /// leave it (FAIL), and record it; the status after.
    async fn carry_out(
        &mut self,
        cx: &mut Cx<'_>,
        command: &str,
        mut status: ShellStatus,
        report: &mut StepReport,
    ) -> ShellStatus {
        let chosen = Chosen::Shell(ShellCommand {
            command: command.to_string(),
            workdir: Some(self.config.workdir.display().to_string()),
        });
        let sensitive = match status {
            ShellStatus::Continue | ShellStatus::Finish => {
                let find = |name: &str| ufo_proc::which(name, None);
                cx.services
                    .config
                    .sensitive
                    .shell_reason(command, &[], &find)
            }
            ShellStatus::Confirm | ShellStatus::Fail | ShellStatus::Error => None,
        };
        if sensitive.is_some() {
            status = ShellStatus::Confirm;
        }
        let outcome = match status {
            ShellStatus::Confirm => {
                // The gate: held, not run, until the person approves.
                self.held = Some((command.to_string(), sensitive.clone()));
                report.result = Some("held for confirmation".into());
                Outcome::Held { sensitive }
            }
            ShellStatus::Continue | ShellStatus::Finish => {
                let out = self.run(command).await;
                self.log
                    .actions
                    .push(format!("$ {command} -> {}", clip(&out, 300)));
                report.result = Some(out);
                Outcome::Ran { completed: None }
            }
            ShellStatus::Fail | ShellStatus::Error => Outcome::NotRun,
        };
        report.action = Some(StepAction::act(chosen, outcome));
        status
    }

    /// Note the step in the subtask's log: the model's result (or, finishing, the command's
    /// output), a memory line, the result the next prompt shows.
    fn remember(
        &mut self,
        r: &ShellResponse,
        status: ShellStatus,
        command: &str,
        report: &StepReport,
    ) {
        if !r.result.is_empty() {
            self.log.result = r.result.clone();
        } else if status == ShellStatus::Finish {
            if let Some(out) = &report.result {
                self.log.result = out.clone();
            }
        }
        let mut line = format!("Status {}", status.as_str());
        if !command.is_empty() {
            line.push_str(&format!(", command `{command}`"));
        }
        if let Some(res) = &report.result {
            line.push_str(&format!(" -> {}", clip(res, 400)));
        }
        self.log.memory.push(line);
        self.log.last_result = report.result.clone();
    }

    async fn handle_confirm(&mut self, cx: &mut Cx<'_>) -> StepReport {
        let mut report = StepReport {
            subtask: Some(self.log.subtask.clone()),
            ..StepReport::default()
        };
        let Some((command, sensitive)) = self.held.take() else {
            self.status = ShellStatus::Continue;
            report.status = "CONTINUE".into();
            report.result = Some("CONFIRM without a command; nothing to approve".into());
            return report;
        };
        let mut description = format!(
            "run shell command in {}: {command}",
            self.config.workdir.display()
        );
        if let Some(reason) = &sensitive {
            description.push_str(&format!(" ({reason})"));
        }
        let chosen = Chosen::Shell(ShellCommand {
            command: command.clone(),
            workdir: None,
        });
        let decision = if cx.services.config.safe_guard {
            cx.services
                .user
                .confirm(&ConfirmRequest {
                    agent: self.name(),
                    description,
                    action: chosen.to_value(),
                })
                .await
        } else {
            Decision::Approve
        };
        report.action = Some(StepAction::act(chosen, Outcome::Decided(decision)));
        match decision {
            Decision::Approve => {
                let out = self.run(&command).await;
                self.log
                    .actions
                    .push(format!("$ {command} (approved) -> {}", clip(&out, 300)));
                self.log.memory.push(format!(
                    "approved and ran `{command}` -> {}",
                    clip(&out, 400)
                ));
                self.log.last_result = Some(out.clone());
                report.result = Some(out);
                self.status = ShellStatus::Continue;
            }
            Decision::Reject => {
                self.rejected = true;
                self.log
                    .memory
                    .push(format!("the person rejected `{command}`"));
                self.log.result = format!("the person rejected the command: {command}");
                report.result = Some(self.log.result.clone());
                self.status = ShellStatus::Finish;
            }
        }
        report.status = self.status.as_str().into();
        report
    }

    fn archive_as(&mut self, cx: &mut Cx<'_>, status: SubtaskOutcome) -> StepReport {
        let name = self.name();
        self.log.archive(cx, &name, self.state.as_str(), status)
    }
}

#[async_trait]
impl SubAgent for ShellAgent {
    fn name(&self) -> String {
        "ShellAgent".into()
    }

    fn role(&self) -> &'static str {
        SHELL_AGENT
    }

    fn begin(&mut self, a: Assignment) {
        self.state = ShellStatus::Continue;
        self.status = ShellStatus::Continue;
        self.held = None;
        self.rejected = false;
        self.log.begin(a.subtask, a.messages);
    }

    fn state_name(&self) -> &'static str {
        self.state.as_str()
    }

    fn is_processing(&self) -> bool {
        match self.state {
            ShellStatus::Continue => true,
            ShellStatus::Confirm | ShellStatus::Finish | ShellStatus::Fail | ShellStatus::Error => {
                false
            }
        }
    }

    fn subtask(&self) -> &str {
        &self.log.subtask
    }

    async fn handle(&mut self, cx: &mut Cx<'_>) -> StepReport {
        match self.state {
            ShellStatus::Continue => self.handle_continue(cx).await,
            ShellStatus::Confirm => self.handle_confirm(cx).await,
            ShellStatus::Finish => {
                let status = if self.rejected {
                    SubtaskOutcome::Rejected
                } else {
                    SubtaskOutcome::Finish
                };
                self.archive_as(cx, status)
            }
            ShellStatus::Fail => {
                cx.round_failures += 1;
                self.archive_as(cx, SubtaskOutcome::Fail)
            }
            ShellStatus::Error => self.archive_as(cx, SubtaskOutcome::Error),
        }
    }

    fn round_end(&self) -> Option<(SessionStatus, String)> {
        match self.state {
            ShellStatus::Error => Some((SessionStatus::Error, "shell_error".into())),
            ShellStatus::Continue
            | ShellStatus::Confirm
            | ShellStatus::Finish
            | ShellStatus::Fail => None,
        }
    }

    fn is_subtask_end(&self) -> bool {
        match self.state {
            ShellStatus::Finish | ShellStatus::Fail | ShellStatus::Error => true,
            ShellStatus::Continue | ShellStatus::Confirm => false,
        }
    }

    fn next_state(&mut self, cx: &mut Cx<'_>) -> Handoff {
        let next = match self.state {
            ShellStatus::Continue | ShellStatus::Confirm => self.status,
            ShellStatus::Finish => return hand_back(cx, Ending::Finish),
            ShellStatus::Fail => return hand_back(cx, Ending::Fail),
            ShellStatus::Error => return hand_back(cx, Ending::Error),
        };
        self.state = next;
        Handoff::Stay
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A schema-constrained answer validates and parses; the fields the schema cannot leave
    /// out are the ones the parser requires; the schema's statuses are the parser's.
    #[test]
    fn the_schema_and_the_parser_agree() {
        let schema = ufo_core::response::shell_schema();
        let validator = jsonschema::validator_for(&schema.schema).expect("a schema");
        let answer = serde_json::json!({"Observation": "empty folder", "Thought": "list it",
            "Command": "ls -la", "Status": "CONTINUE", "Comment": null, "Result": null});
        assert!(validator.is_valid(&answer));
        let r = parse_response(&answer.to_string()).expect("parsed");
        assert_eq!(
            (r.command.as_str(), r.status),
            ("ls -la", ShellStatus::Continue)
        );
        crate::common::assert_schema_requires_the_parsers_fields(
            &schema.schema,
            &validator,
            &answer,
            parse_response,
        );
        for status in schema.schema["properties"]["Status"]["enum"]
            .as_array()
            .expect("statuses")
        {
            assert!(
                ShellStatus::parse(status.as_str().unwrap_or("")).is_ok(),
                "{status}"
            );
        }
    }

    #[test]
    fn answers_are_parsed_tolerantly() {
        let r = parse_response(
            "```json\n{\"observation\":\"o\",\"thought\":\"t\",\"command\":\"ls\",\"status\":\"continue\",}\n```",
        )
        .expect("valid");
        assert_eq!(r.command, "ls");
        assert_eq!(r.status, ShellStatus::Continue);
        assert!(
            parse_response(r#"{"Observation":"o","Thought":"t","Status":"SCREENSHOT"}"#)
                .expect_err("unknown status")
                .contains("unknown Status")
        );
        assert!(parse_response(r#"{"Observation":"o","Thought":"t","Status":"CONFIRM"}"#).is_err());
        assert!(parse_response(r#"{"Thought":"t","Status":"FINISH"}"#).is_err());
    }

    #[tokio::test]
    async fn commands_run_in_the_working_directory_with_a_timeout() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut config = ShellConfig::new(dir.path());
        config.timeout = Duration::from_millis(300);
        let agent = ShellAgent::new(config);
        let out = agent.run("pwd").await;
        assert!(out.starts_with("exit 0"), "{out}");
        assert!(out.contains(&dir.path().display().to_string()), "{out}");
        let out = agent.run("sleep 5").await;
        assert!(out.contains("did not finish"), "{out}");
        let out = agent.run("exit 3").await;
        assert!(out.starts_with("exit 3"), "{out}");
    }

    /// Defects 1, 4, 10 through the agent: no key in the output, bounded output, no child
    /// left behind by a timeout.
    #[tokio::test]
    async fn commands_see_no_keys_print_a_bounded_output_and_leave_no_child() {
        std::env::set_var("OPENAI_API_KEY", "sk-shell-agent-test-key");
        let dir = tempfile::tempdir().expect("tempdir");
        let mut config = ShellConfig::new(dir.path());
        config.timeout = Duration::from_secs(30);
        let agent = ShellAgent::new(config.clone());
        let out = agent.run("echo key=$OPENAI_API_KEY.").await;
        assert!(out.contains("key=."), "{out}");
        assert!(!out.contains("sk-shell-agent-test-key"), "{out}");
        let out = agent.run("cat /dev/zero").await;
        assert!(out.len() < 10_000, "{} bytes", out.len());
        assert!(out.contains("truncated"), "{out}");
        assert!(out.contains("stopped for printing too much"), "{out}");
        config.timeout = Duration::from_millis(300);
        let agent = ShellAgent::new(config);
        let out = agent.run("sleep 4646; echo done").await;
        assert!(out.contains("did not finish"), "{out}");
        let mut left = true;
        for _ in 0..100 {
            left = !ufo_proc::live_processes_with_arg("4646").is_empty();
            if !left {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(!left, "sleep 4646 outlived the timeout");
    }
}
