//! Opening the desktop a command names (`--desktop`): the simulated one from its scenario
//! file, or this Linux session's with the `[launch]` table of `ufo.toml`.

use anyhow::{anyhow, Result};
use ufo_core::Desktop;

/// Open the desktop named by `--desktop`.
pub(crate) async fn open_desktop(
    spec: &str,
    launch: &[(String, String)],
) -> Result<Box<dyn Desktop>> {
    if let Some(file) = spec.strip_prefix("sim:") {
        let sim =
            ufo_desktop::SimDesktop::load(file).map_err(|e| anyhow!("--desktop {spec}: {e}"))?;
        return Ok(Box::new(sim));
    }
    match spec {
        "live" => Ok(Box::new(connect_live(launch).await?)),
        "private" => Err(anyhow!(
            "--desktop private is started by ufo itself for run, resume, follow, mcp serve and \
             batch; this command cannot use it"
        )),
        other => Err(anyhow!(
            "--desktop {other:?} is not a desktop; use live, private or sim:<SCENARIO.json>"
        )),
    }
}

/// Connect to this Linux session's accessibility bus and X server.
pub(crate) async fn connect_live(launch: &[(String, String)]) -> Result<ufo_linux::LinuxDesktop> {
    let mut config = ufo_linux::LinuxConfig::default();
    // Entries of ufo.toml's [launch] table come first, so they win over the built-in ones.
    let mut table = launch.to_vec();
    table.extend(config.launch);
    config.launch = table;
    ufo_linux::LinuxDesktop::connect(config).await.map_err(|e| {
        anyhow!(
            "cannot reach the live desktop: {e}; is a desktop session running? (for a headless \
             one: scripts/desktop-session.sh up && source /tmp/ufo-desktop-session/env)"
        )
    })
}
