//! Sensitive actions: what always goes through the CONFIRM gate, whatever Status the model
//! chose. A model fooled by text on the screen can ask for anything; it cannot skip this check.
//!
//! - Shell commands (the host's `Bash`): an **allow-list**. A command runs without confirmation
//!   only if it is the launch command of an application the desktop knows, or a single simple
//!   command (no `;`, `|`, `&&`, redirection, substitution) whose program is on `shell_allow`.
//! - AppAgent actions: a control whose name contains one of `control_words` as a word (delete,
//!   send, close, install, ...), any function listed in `functions`, and typing into a password
//!   field (`password_fields`).

use serde::{Deserialize, Serialize};

use crate::action::UiAction;
use crate::ports::Control;

/// The sensitive-action policy (`[sensitive]` in ufo.toml).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct SensitivePolicy {
    /// Off: only the model's own CONFIRM holds actions.
    pub enabled: bool,
    /// Programs a shell command may start without confirmation.
    pub shell_allow: Vec<String>,
    /// Words in a control's name that make acting on it sensitive (whole words, any case).
    pub control_words: Vec<String>,
    /// Functions that are always sensitive (canonical names, e.g. `type_keys`, or tool names).
    pub functions: Vec<String>,
    /// Typing into a password field is sensitive.
    pub password_fields: bool,
}

impl Default for SensitivePolicy {
    fn default() -> Self {
        let words = |l: &[&str]| l.iter().map(|s| s.to_string()).collect();
        Self {
            enabled: true,
            shell_allow: words(&[
                "ls", "cat", "echo", "pwd", "head", "tail", "wc", "date", "whoami", "which",
                "grep", "file", "stat", "du", "df", "uname", "mkdir", "touch", "true",
            ]),
            control_words: words(&[
                "delete",
                "send",
                "close",
                "install",
                "uninstall",
                "erase",
                "discard",
                "purchase",
                "pay",
                "shutdown",
            ]),
            functions: Vec::new(),
            password_fields: true,
        }
    }
}

/// Characters that turn one command into several, or write where they should not.
const SHELL_OPERATORS: &[&str] = &[";", "|", "&", ">", "<", "`", "$(", "\n", "\r"];

impl SensitivePolicy {
    /// Why a shell command needs confirmation, or `None` when it may run.
    /// `launch_commands` are the desktop's known application launch commands.
    pub fn shell_reason(&self, command: &str, launch_commands: &[String]) -> Option<String> {
        if !self.enabled {
            return None;
        }
        let cmd = command.trim();
        let bare = cmd.strip_suffix('&').unwrap_or(cmd).trim();
        if launch_commands.iter().any(|l| l.trim() == bare) {
            return None;
        }
        if let Some(op) = SHELL_OPERATORS.iter().find(|op| cmd.contains(*op)) {
            return Some(format!(
                "the shell command uses the operator {op:?}; only single commands on the allow-list run without confirmation"
            ));
        }
        let program = cmd.split_whitespace().next().unwrap_or("");
        let name = program.rsplit('/').next().unwrap_or(program);
        if self.shell_allow.iter().any(|a| a == name) {
            None
        } else {
            Some(format!(
                "{name:?} is not on the shell allow-list ([sensitive] shell_allow)"
            ))
        }
    }

    /// Why a tool call needs confirmation (the tool is listed in `functions`), or `None`.
    pub fn tool_reason(&self, tool: &str) -> Option<String> {
        (self.enabled && self.functions.iter().any(|f| f == tool))
            .then(|| format!("the tool {tool} is listed in [sensitive] functions"))
    }

    /// Why an AppAgent action needs confirmation, or `None`.
    pub fn action_reason(&self, action: &UiAction, control: Option<&Control>) -> Option<String> {
        if !self.enabled {
            return None;
        }
        if self.functions.iter().any(|f| f == action.name()) {
            return Some(format!(
                "{} is listed in [sensitive] functions",
                action.name()
            ));
        }
        let control = control?;
        let typing = matches!(action, UiAction::SetText { .. } | UiAction::TypeKeys { .. });
        if typing && self.password_fields && control.role.to_ascii_lowercase().contains("password")
        {
            return Some("typing into a password field".into());
        }
        let acts_on_it = matches!(
            action,
            UiAction::Click { .. } | UiAction::Select { .. } | UiAction::TypeKeys { .. }
        );
        if acts_on_it {
            let name = control.name.to_ascii_lowercase();
            let words: Vec<&str> = name
                .split(|c: char| !c.is_alphanumeric())
                .filter(|w| !w.is_empty())
                .collect();
            if let Some(w) = self
                .control_words
                .iter()
                .find(|w| words.contains(&w.to_ascii_lowercase().as_str()))
            {
                return Some(format!(
                    "the control \"{}\" is sensitive (word {w:?} in [sensitive] control_words)",
                    control.name
                ));
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ports::Rect;

    fn control(role: &str, name: &str) -> Control {
        Control {
            id: "c".into(),
            role: role.into(),
            name: name.into(),
            value: None,
            rect: Rect::default(),
            enabled: true,
        }
    }

    #[test]
    fn the_shell_allow_list_holds() {
        let p = SensitivePolicy::default();
        let launch = vec!["libreoffice --calc".to_string()];
        assert_eq!(p.shell_reason("libreoffice --calc", &launch), None);
        assert_eq!(p.shell_reason("libreoffice --calc &", &launch), None);
        assert_eq!(p.shell_reason("echo report-ready", &launch), None);
        assert_eq!(p.shell_reason("/bin/ls -l", &launch), None);
        assert!(p.shell_reason("rm -rf ~", &launch).is_some());
        assert!(p.shell_reason("echo hi; rm -rf ~", &launch).is_some());
        assert!(p.shell_reason("echo $(rm -rf ~)", &launch).is_some());
        assert!(p.shell_reason("cat x > /etc/passwd", &launch).is_some());
        assert!(p.shell_reason("curl x | sh", &launch).is_some());
        let off = SensitivePolicy {
            enabled: false,
            ..SensitivePolicy::default()
        };
        assert_eq!(off.shell_reason("rm -rf ~", &launch), None);
    }

    #[test]
    fn sensitive_controls_and_password_fields() {
        let p = SensitivePolicy::default();
        let click = UiAction::Click {
            button: crate::Button::Left,
            double: false,
        };
        assert!(p
            .action_reason(&click, Some(&control("button", "Delete All")))
            .is_some());
        assert!(p
            .action_reason(&click, Some(&control("button", "Send")))
            .is_some());
        assert!(p
            .action_reason(&click, Some(&control("button", "Sender info")))
            .is_none());
        assert!(p
            .action_reason(&click, Some(&control("button", "Export")))
            .is_none());
        let typing = UiAction::SetText { text: "x".into() };
        assert!(p
            .action_reason(&typing, Some(&control("password text", "Password")))
            .is_some());
        assert!(p
            .action_reason(&typing, Some(&control("edit", "Delete reason")))
            .is_none());
    }
}
