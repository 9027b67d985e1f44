//! The subcommands of `ufo`, one thin module each: `main.rs` hands each the plan (or, for the
//! commands that have no session, the options) `crate::cli` resolved, and the command calls
//! the services beside this folder (the session pipeline, the batch runner, the trajectory
//! reader and report, settings, the desktops). No command imports another.

pub(crate) mod batch;
pub(crate) mod demo;
pub(crate) mod doctor;
pub(crate) mod follow;
pub(crate) mod inspect;
pub(crate) mod knowledge;
pub(crate) mod mcp;
pub(crate) mod report;
pub(crate) mod resume;
pub(crate) mod run;
pub(crate) mod runs;
pub(crate) mod serve;
