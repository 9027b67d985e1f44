//! The names a task file uses for what this crate runs: config steps, getters and metrics.
//!
//! One list each, as enums: [`Task::unsupported`](crate::Task::unsupported) checks a task
//! against them before it runs, and the runners ([`setup`](crate::setup),
//! [`getters`](crate::getters), [`eval`](crate::eval)) match on them exhaustively, so a name
//! cannot be accepted by one and unknown to the other.

/// An enum of the names a task file may use, with its list of names (`$list`), `ALL`,
/// `name()` and `named()`.
macro_rules! kinds {
    (
        $(#[$doc:meta])* $kind:ident, $(#[$list_doc:meta])* $list:ident {
            $($(#[$variant_doc:meta])* $variant:ident = $name:literal,)+
        }
    ) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum $kind {
            $($(#[$variant_doc])* $variant,)+
        }

        impl $kind {
            /// Every kind, in the order the docs list them.
            pub const ALL: &'static [$kind] = &[$($kind::$variant),+];

            /// The name a task file uses for it.
            pub const fn name(self) -> &'static str {
                match self {
                    $($kind::$variant => $name,)+
                }
            }

            /// The kind a task file's name means; `None` for a name this crate does not run.
            pub fn named(name: &str) -> Option<$kind> {
                match name {
                    $($name => Some($kind::$variant),)+
                    _ => None,
                }
            }
        }

        $(#[$list_doc])*
        pub const $list: &[&str] = &[$($name),+];
    };
}

kinds! {
    /// A config (setup) step kind: `{"type": "launch", ...}`.
    StepKind,
    /// The config-step kinds this crate runs.
    SUPPORTED_STEPS {
        /// Start an application (through the desktop's launcher when it knows the command).
        Launch = "launch",
        /// Run a shell command.
        Execute = "execute",
        /// Run a shell command (OSWorld's other name for `execute`).
        Command = "command",
        /// Open a file with its application.
        Open = "open",
        /// Wait some seconds.
        Sleep = "sleep",
        /// Bring a window to the front.
        ActivateWindow = "activate_window",
    }
}

kinds! {
    /// A getter type: how the evaluator reads a result or an expected value.
    GetterKind,
    /// The getter types this crate implements (`local_file` is a ufo-rs extension).
    SUPPORTED_GETTERS {
        /// A file of the machine the task ran on (null when missing).
        VmFile = "vm_file",
        /// A command's standard output.
        VmCommandLine = "vm_command_line",
        /// A command's standard error.
        VmCommandError = "vm_command_error",
        /// The rules written in the task.
        Rule = "rule",
        /// A file beside the task file.
        LocalFile = "local_file",
    }
}

kinds! {
    /// An evaluator (metric) function.
    MetricKind,
    /// The metric functions this crate implements.
    SUPPORTED_METRICS {
        /// The result is exactly the expected text.
        ExactMatch = "exact_match",
        /// The result holds every `include` and no `exclude` text.
        CheckIncludeExclude = "check_include_exclude",
        /// The result is one of the expected texts.
        MatchInList = "match_in_list",
        /// Two text files are equal (optionally ignoring blanks and case).
        CompareTextFile = "compare_text_file",
        /// A file's lines match every `expect` pattern and no `unexpect` one.
        CheckList = "check_list",
        /// The expected text is in the result (a list or a text).
        IsInList = "is_in_list",
        /// The agent gave up on its own.
        Infeasible = "infeasible",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_means_its_kind_and_no_other_name_means_one() {
        for k in StepKind::ALL {
            assert_eq!(StepKind::named(k.name()), Some(*k));
        }
        for k in GetterKind::ALL {
            assert_eq!(GetterKind::named(k.name()), Some(*k));
        }
        for k in MetricKind::ALL {
            assert_eq!(MetricKind::named(k.name()), Some(*k));
        }
        assert_eq!(SUPPORTED_STEPS.len(), StepKind::ALL.len());
        assert_eq!(SUPPORTED_GETTERS.len(), GetterKind::ALL.len());
        assert_eq!(SUPPORTED_METRICS.len(), MetricKind::ALL.len());
        for unknown in ["", "Launch", "download", "vm_file ", "fuzzy_match"] {
            assert_eq!(StepKind::named(unknown), None);
            assert_eq!(GetterKind::named(unknown), None);
            assert_eq!(MetricKind::named(unknown), None);
        }
    }
}
