//! `ufo mcp serve`: this desktop served to any MCP client over stdio. (The MCP servers a
//! session uses, `[mcp.servers.<name>]` in `ufo.toml`, are in [`crate::extensions`].)

use std::process::ExitCode;
use std::sync::Arc;

use crate::config::plan::McpServePlan;

/// Run `ufo mcp serve`.
pub async fn run(a: McpServePlan) -> ExitCode {
    let launch = match crate::config::settings::launch_from_file(a.config.as_deref()) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("error: {e:#}");
            return ExitCode::from(2);
        }
    };
    let desktop: Arc<dyn ufo_core::Desktop> = match crate::desktop::open_desktop(
        &a.desktop,
        &launch,
        &crate::desktop::Remote::default(),
        &crate::sight::VisionSettings::from_env(None).unwrap_or_default(),
    )
    .await
    {
        Ok(d) => Arc::from(d),
        Err(e) => {
            eprintln!("error: {e:#}");
            return ExitCode::from(2);
        }
    };
    match ufo_mcp::serve_stdio(desktop, a.allow_actions, a.allow_shell).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(3)
        }
    }
}
