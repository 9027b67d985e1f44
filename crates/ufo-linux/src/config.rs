//! Configuration of the Linux backend.

use std::time::Duration;

/// How the live Linux desktop behaves: timeouts, settle time and the launch table.
#[derive(Debug, Clone)]
pub struct LinuxConfig {
    /// Bound on every single D-Bus call (a hung application would otherwise stall for
    /// zbus's default 25 s).
    pub call_timeout: Duration,
    /// Longest wait, after an action, for the window to change and then stop changing.
    pub settle_time: Duration,
    /// Interval between two looks at the window while settling.
    pub settle_poll: Duration,
    /// Longest wait for a launched application's window to appear on the accessibility bus.
    pub launch_timeout: Duration,
    /// Longest time a `shell` command may run.
    pub shell_timeout: Duration,
    /// Time budget of the fallback tree walk (used when the application's cache is
    /// incomplete, e.g. GTK4 before its first walk).
    pub walk_budget: Duration,
    /// Most nodes the fallback walk visits.
    pub walk_max_nodes: usize,
    /// Launch table: application name (matched case-insensitively) → shell command.
    pub launch: Vec<(String, String)>,
    /// Extra environment for launched applications and shell commands (tests give each run a
    /// fresh `HOME` this way).
    pub launch_env: Vec<(String, String)>,
}

impl Default for LinuxConfig {
    fn default() -> Self {
        Self {
            call_timeout: Duration::from_millis(2000),
            settle_time: Duration::from_millis(800),
            settle_poll: Duration::from_millis(25),
            launch_timeout: Duration::from_secs(20),
            shell_timeout: Duration::from_secs(60),
            walk_budget: Duration::from_secs(3),
            walk_max_nodes: 5000,
            launch: vec![
                ("calculator".into(), "gnome-calculator".into()),
                ("gnome-calculator".into(), "gnome-calculator".into()),
                ("text editor".into(), "mousepad".into()),
                ("mousepad".into(), "mousepad".into()),
            ],
            launch_env: Vec::new(),
        }
    }
}

impl LinuxConfig {
    /// The command that launches `app`, by name (case-insensitive) or by command.
    pub fn command_for(&self, app: &str) -> Option<(&str, &str)> {
        let want = app.trim().to_lowercase();
        self.launch
            .iter()
            .find(|(name, _)| name.to_lowercase() == want)
            .or_else(|| {
                self.launch
                    .iter()
                    .find(|(_, cmd)| cmd.trim().to_lowercase() == want)
            })
            .map(|(n, c)| (n.as_str(), c.as_str()))
    }
}
