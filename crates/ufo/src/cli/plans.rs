//! The command line resolved into plans (`crate::config::plan`): each subcommand's options
//! become the plain values its command takes, here and nowhere else.

use crate::config::plan::{
    Access, BatchPlan, FollowPlan, InspectPlan, McpServePlan, MergePlan, Output, ResumePlan,
    SessionPlan, Start,
};
use crate::desktop::Remote;

use super::{
    AccessArgs, BatchArgs, FollowArgs, InspectArgs, McpArgs, McpCommand, MergeArgs, OutputArgs,
    RemoteArgs, ResumeArgs, RunArgs,
};

impl RemoteArgs {
    /// How the remote desktop is reached, and the `--device` values.
    pub fn plan(self) -> (Remote, Vec<String>) {
        let remote = Remote {
            token_file: self.token_file,
            fingerprint: self.fingerprint,
        };
        (remote, self.device)
    }
}

impl From<AccessArgs> for Access {
    fn from(a: AccessArgs) -> Self {
        Access {
            share: a.share,
            no_shell: a.no_shell,
        }
    }
}

impl From<OutputArgs> for Output {
    fn from(o: OutputArgs) -> Self {
        Output {
            quiet: o.quiet,
            verbose: o.verbose,
            report: o.report,
        }
    }
}

impl RunArgs {
    /// `ufo run`: a new session on the request.
    pub fn plan(self) -> SessionPlan {
        let (remote, devices) = self.remote.plan();
        SessionPlan {
            request: self.request,
            start: Start::New,
            desktop: self.desktop,
            remote,
            devices,
            recorded_devices: Vec::new(),
            llm: self.llm,
            structured_output: self.structured_output,
            out: self.out,
            force: self.force,
            max_steps: self.max_steps,
            max_rounds: self.max_rounds,
            confirm: self.confirm.map(Into::into),
            answers: self.answers,
            requests: self.requests,
            config: self.config,
            vision: self.vision,
            record: self.record,
            access: self.access.into(),
            output: self.output.into(),
        }
    }
}

impl ResumeArgs {
    /// `ufo resume`: what was given; the command fills in the rest from `run.json`.
    pub fn plan(self) -> ResumePlan {
        let (remote, devices) = self.remote.plan();
        ResumePlan {
            out: self.out,
            desktop: self.desktop,
            llm: self.llm,
            structured_output: self.structured_output,
            max_steps: self.max_steps,
            confirm: self.confirm.map(Into::into),
            answers: self.answers,
            config: self.config,
            remote,
            devices,
            access: self.access.into(),
            output: self.output.into(),
        }
    }
}

impl FollowArgs {
    /// `ufo follow`: the plan file and the one-round session it runs in.
    pub fn plan(self) -> FollowPlan {
        let (remote, devices) = self.remote.plan();
        FollowPlan {
            plan: self.plan,
            session: SessionPlan {
                // set from the plan file by the command
                request: String::new(),
                start: Start::Follow(Vec::new()),
                desktop: self.desktop,
                remote,
                devices,
                recorded_devices: Vec::new(),
                llm: self.llm,
                structured_output: self.structured_output,
                out: self.out,
                force: self.force,
                max_steps: self.max_steps,
                max_rounds: Some(1),
                vision: None,
                confirm: self.confirm.map(Into::into),
                answers: None,
                requests: None,
                config: self.config,
                record: None,
                access: self.access.into(),
                output: self.output.into(),
            },
        }
    }
}

/// What `ufo batch ...` asks: a batch (or one worker's task), or a merge of shards.
pub enum BatchRequest {
    /// `ufo batch TASKS...`.
    Run(Box<BatchPlan>),
    /// `ufo batch merge OUT DIR...`.
    Merge(MergePlan),
}

impl From<MergeArgs> for MergePlan {
    fn from(m: MergeArgs) -> Self {
        MergePlan {
            out: m.out,
            dirs: m.dirs,
            force: m.force,
            quiet: m.quiet,
        }
    }
}

impl BatchArgs {
    /// `ufo batch`: the batch, or the merge its subcommand asks for.
    pub fn plan(self) -> BatchRequest {
        if let Some(super::BatchAction::Merge(m)) = self.action {
            return BatchRequest::Merge(m.into());
        }
        BatchRequest::Run(Box::new(BatchPlan {
            tasks: self.tasks,
            shard: self.shard,
            llm: self.llm,
            structured_output: self.structured_output,
            out: self.out,
            force: self.force,
            desktop: self.desktop,
            remote: Remote {
                token_file: self.token_file,
                fingerprint: self.fingerprint,
            },
            jobs: self.jobs,
            display_env: self.display_env,
            config: self.config,
            max_steps: self.max_steps,
            confirm: self.confirm.map(Into::into),
            eval_llm: self.eval_llm,
            task_timeout: self.task_timeout,
            quiet: self.quiet,
            share: self.share,
            worker: self.worker,
            worker_out: self.worker_out,
        }))
    }
}

impl InspectArgs {
    /// `ufo inspect`.
    pub fn plan(self) -> InspectPlan {
        let (remote, devices) = self.remote.plan();
        InspectPlan {
            window: self.window,
            png: self.png,
            desktop: self.desktop,
            remote,
            devices,
            vision: self.vision,
        }
    }
}

impl McpArgs {
    /// `ufo mcp serve`.
    pub fn plan(self) -> McpServePlan {
        match self.command {
            McpCommand::Serve(a) => McpServePlan {
                desktop: a.desktop,
                allow_actions: a.allow_actions,
                allow_shell: a.allow_shell,
                config: a.config,
            },
        }
    }
}
