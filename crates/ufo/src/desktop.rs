//! Opening the desktop a command names (`--desktop`): the simulated one from its scenario
//! file, one served by `ufo serve` (`remote:URL`), or this Linux session's with the `[launch]`
//! table of `ufo.toml`.

use anyhow::{anyhow, Context, Result};
use ufo_core::Desktop;

/// How a remote desktop (`remote:URL`, served by `ufo serve`) is reached: the token file
/// (else [`REMOTE_TOKEN_VAR`]) and the certificate fingerprint to pin, if any.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Remote {
    /// The file holding the token.
    pub(crate) token_file: Option<std::path::PathBuf>,
    /// The SHA-256 fingerprint of the server's certificate (`AB:CD:…`).
    pub(crate) fingerprint: Option<String>,
}

/// The environment variable holding the remote desktop's token when `--token-file` is not
/// given.
pub(crate) const REMOTE_TOKEN_VAR: &str = "UFO_REMOTE_TOKEN";

/// The environment variable bounding each call to a remote desktop, in milliseconds.
pub(crate) const REMOTE_TIMEOUT_VAR: &str = "UFO_REMOTE_TIMEOUT_MS";

/// Open the desktop named by `--desktop`.
pub(crate) async fn open_desktop(
    spec: &str,
    launch: &[(String, String)],
    remote: &Remote,
) -> Result<Box<dyn Desktop>> {
    if let Some(url) = spec.strip_prefix("remote:") {
        return Ok(Box::new(connect_remote(url, remote).await?));
    }
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
            "--desktop {other:?} is not a desktop; use live, private, sim:<SCENARIO.json> or \
             remote:https://HOST:PORT"
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

/// Connect to the desktop `ufo serve` serves at `url`, with the token of `--token-file` (or
/// UFO_REMOTE_TOKEN) and the pinned `--fingerprint`, if any.
pub(crate) async fn connect_remote(
    url: &str,
    remote: &Remote,
) -> Result<ufo_mcp::remote::RemoteDesktop> {
    let token = match &remote.token_file {
        Some(file) => std::fs::read_to_string(file)
            .with_context(|| {
                format!(
                    "--desktop remote:{url}: cannot read the token file {} (--token-file)",
                    file.display()
                )
            })?
            .trim()
            .to_string(),
        // a secret: taken out of the environment at start and held in memory
        // (ufo_core::secrets), so that no child inherits it
        None => ufo_core::secrets::held(REMOTE_TOKEN_VAR)
            .or_else(|| std::env::var(REMOTE_TOKEN_VAR).ok())
            .unwrap_or_default()
            .trim()
            .to_string(),
    };
    // a secret from the moment it is read, wherever it came from: a server that echoes it
    // (a title, a control, an error) never gets it into a prompt, a record or a printed line
    // (docs/security.md)
    ufo_core::secrets::hold_value(&token);
    if token.is_empty() {
        return Err(anyhow!(
            "--desktop remote:{url} needs a token: give --token-file FILE or set \
             {REMOTE_TOKEN_VAR} (make one on the served machine with `ufo serve token add NAME`)"
        ));
    }
    let fingerprint = match &remote.fingerprint {
        Some(f) => Some(ufo_mcp::http::tls::parse_fingerprint(f).map_err(|e| {
            anyhow!(
                "--fingerprint: {e}; copy the `fingerprint AB:CD:…` line `ufo serve --tls` printed"
            )
        })?),
        None => None,
    };
    let timeout =
        match std::env::var(REMOTE_TIMEOUT_VAR) {
            Ok(ms) => std::time::Duration::from_millis(ms.trim().parse::<u64>().map_err(|_| {
                anyhow!("{REMOTE_TIMEOUT_VAR}={ms:?} is not a number of milliseconds")
            })?),
            Err(_) => ufo_mcp::remote::DEFAULT_REMOTE_TIMEOUT,
        };
    let config = ufo_mcp::remote::RemoteConfig {
        url: url.to_string(),
        token,
        fingerprint,
        timeout,
    };
    ufo_mcp::remote::RemoteDesktop::connect(config)
        .await
        .map_err(|e| anyhow!("--desktop remote:{url}: {e}"))
}
