//! An [`AgentFactory`] that composes the AppAgent factory with this crate's agents.

use ufo_core::agent::{AgentFactory, AgentTarget, AppAgentFactory, SubAgent};
use ufo_core::WindowInfo;

use crate::operator::OperatorAgent;
use crate::shell::{ShellAgent, ShellConfig, SHELL_AGENT};

/// What the shell agent is good for, as the host sees it.
pub const SHELL_DESCRIPTION: &str = "a Linux shell agent: runs shell commands in its working \
directory and reads their output (files, text processing, scripts, system information); \
assign it subtasks that need no application window";

/// Windows get an AppAgent, or an operator agent for the configured applications; the shell
/// agent is offered as a third-party target when enabled.
#[derive(Debug, Clone, Default)]
pub struct AgentsFactory {
    shell: Option<ShellConfig>,
    operator_apps: Vec<String>,
}

impl AgentsFactory {
    /// AppAgents only (as [`AppAgentFactory`]) until configured.
    pub fn new() -> Self {
        Self::default()
    }

    /// Offer the shell agent with these settings.
    pub fn with_shell(mut self, config: ShellConfig) -> Self {
        self.shell = Some(config);
        self
    }

    /// Use the operator agent instead of the AppAgent for these applications (names compared
    /// case-insensitively with the window's application or process name).
    pub fn with_operator_apps(mut self, apps: Vec<String>) -> Self {
        self.operator_apps = apps;
        self
    }

    fn is_operator_app(&self, window: &WindowInfo) -> bool {
        self.operator_apps.iter().any(|a| {
            a.eq_ignore_ascii_case(&window.app_name) || a.eq_ignore_ascii_case(&window.process)
        })
    }
}

impl AgentFactory for AgentsFactory {
    fn create(&self, window: &WindowInfo) -> Box<dyn SubAgent> {
        if self.is_operator_app(window) {
            Box::new(OperatorAgent::new(window.clone()))
        } else {
            AppAgentFactory.create(window)
        }
    }

    fn agents(&self) -> Vec<AgentTarget> {
        match &self.shell {
            Some(_) => vec![AgentTarget {
                name: SHELL_AGENT.into(),
                description: SHELL_DESCRIPTION.into(),
            }],
            None => Vec::new(),
        }
    }

    fn create_agent(&self, name: &str) -> Option<Box<dyn SubAgent>> {
        match &self.shell {
            Some(config) if name.eq_ignore_ascii_case(SHELL_AGENT) => {
                Some(Box::new(ShellAgent::new(config.clone())))
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window(app: &str) -> WindowInfo {
        WindowInfo {
            id: app.into(),
            title: format!("{app} window"),
            app_name: app.into(),
            process: app.to_ascii_lowercase(),
            pid: None,
            rect: None,
        }
    }

    #[test]
    fn windows_get_app_or_operator_agents_and_the_shell_is_a_target() {
        let plain = AgentsFactory::new();
        assert!(plain.agents().is_empty());
        assert!(plain.create_agent("shell").is_none());
        assert_eq!(plain.create(&window("Writer")).role(), "app");

        let f = AgentsFactory::new()
            .with_shell(ShellConfig::new("/tmp"))
            .with_operator_apps(vec!["paint".into()]);
        let targets = f.agents();
        assert_eq!(targets.len(), 1);
        assert_eq!(targets[0].name, "shell");
        assert_eq!(f.create_agent("Shell").map(|a| a.role()), Some("shell"));
        assert!(f.create_agent("browser").is_none());
        let op = f.create(&window("Paint"));
        assert_eq!(
            (op.role(), op.name()),
            ("operator", "OperatorAgent/Paint".to_string())
        );
        assert_eq!(f.create(&window("Writer")).role(), "app");
    }
}
