//! Opening the desktop a command names (`--desktop`): the simulated one from its scenario
//! file, one served by `ufo serve` (`remote:URL`), or this Linux session's with the `[launch]`
//! table of `ufo.toml` (`live`: X11 or Wayland as the environment says, `wayland`: the
//! person's Wayland session); and what names a private desktop (`private`, `private:sway`,
//! `private:kwin`; docs/desktop.md).

use crate::sight::VisionSettings;
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

/// A private desktop of ufo's own (docs/desktop.md, "Private Wayland desktops").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PrivateKind {
    /// `private`: an X server (Xvfb, or Xephyr to watch) with a window manager.
    X,
    /// `private:sway`: a headless sway.
    Sway,
    /// `private:kwin`: a virtual KWin.
    Kwin,
    /// `private:gnome`: a headless GNOME Shell (Mutter), driven through Mutter's own
    /// RemoteDesktop and ScreenCast D-Bus interfaces.
    Gnome,
}

impl PrivateKind {
    /// The `--desktop` value naming it.
    pub(crate) fn spec(self) -> &'static str {
        match self {
            PrivateKind::X => "private",
            PrivateKind::Sway => "private:sway",
            PrivateKind::Kwin => "private:kwin",
            PrivateKind::Gnome => "private:gnome",
        }
    }

    /// Whether it is a Wayland compositor.
    pub(crate) fn wayland(self) -> bool {
        match self {
            PrivateKind::X => false,
            PrivateKind::Sway | PrivateKind::Kwin | PrivateKind::Gnome => true,
        }
    }
}

/// The private desktop `spec` names: `None` when it names none, `Err` (a usage error) for a
/// `private:` value ufo cannot start.
pub(crate) fn private_kind(spec: &str) -> Option<Result<PrivateKind>> {
    let spec = spec.trim();
    if spec == "private" {
        return Some(Ok(PrivateKind::X));
    }
    let compositor = spec.strip_prefix("private:")?;
    Some(match compositor {
        "sway" => Ok(PrivateKind::Sway),
        "kwin" => Ok(PrivateKind::Kwin),
        "gnome" => Ok(PrivateKind::Gnome),
        other => Err(anyhow!(
            "--desktop private:{other} is not a private desktop ufo can start; use private \
             (X11), private:sway, private:kwin or private:gnome"
        )),
    })
}

/// The display a live desktop spec opens: `live` as the environment says (X11 when `DISPLAY`
/// is set, else Wayland), `wayland` the Wayland compositor of `WAYLAND_DISPLAY`; `None` for
/// any other spec.
pub(crate) fn live_display(spec: &str) -> Option<ufo_linux::DisplayChoice> {
    match spec.trim() {
        "live" => Some(ufo_linux::DisplayChoice::Auto),
        "wayland" => Some(ufo_linux::DisplayChoice::Wayland { socket: None }),
        _ => None,
    }
}

/// Whether `spec` is this machine's own session (`live` or `wayland`).
pub(crate) fn is_live(spec: &str) -> bool {
    live_display(spec).is_some()
}

/// Set (to a user name) for the ufo that runs inside a private Wayland desktop started by
/// root: it launches applications as that user, into the user's session.
pub(crate) const LAUNCH_USER_VAR: &str = "UFO_PRIVATE_LAUNCH_USER";

/// The environment variable that marks every process of one private desktop (its reaper ends
/// them all).
pub(crate) const SESSION_MARK_VAR: &str = "UFO_SESSION_MARK";

/// Open the desktop named by `--desktop`.
pub(crate) async fn open_desktop(
    spec: &str,
    launch: &[(String, String)],
    remote: &Remote,
    vision: &VisionSettings,
) -> Result<Box<dyn Desktop>> {
    if let Some(url) = spec.strip_prefix("remote:") {
        return Ok(Box::new(connect_remote(url, remote).await?));
    }
    if let Some(file) = spec.strip_prefix("sim:") {
        let sim =
            ufo_desktop::SimDesktop::load(file).map_err(|e| anyhow!("--desktop {spec}: {e}"))?;
        return Ok(Box::new(sim));
    }
    if let Some(display) = live_display(spec) {
        return Ok(Box::new(connect_linux(display, launch, vision).await?));
    }
    if let Some(kind) = private_kind(spec) {
        let kind = kind?;
        return Err(anyhow!(
            "--desktop {} is started by ufo itself for run, resume, follow, mcp serve, serve \
             and batch; this command cannot use it",
            kind.spec()
        ));
    }
    Err(anyhow!(
        "--desktop {spec:?} is not a desktop; use live, wayland, private, private:sway, \
         private:kwin, private:gnome, sim:<SCENARIO.json> or remote:https://HOST:PORT"
    ))
}

/// Connect to this Linux session's accessibility bus and display (X11, else Wayland).
pub(crate) async fn connect_live(
    launch: &[(String, String)],
    vision: &VisionSettings,
) -> Result<ufo_linux::LinuxDesktop> {
    connect_linux(ufo_linux::DisplayChoice::Auto, launch, vision).await
}

/// Connect to this Linux session's accessibility bus and the `display` chosen.
pub(crate) async fn connect_linux(
    display: ufo_linux::DisplayChoice,
    launch: &[(String, String)],
    vision: &VisionSettings,
) -> Result<ufo_linux::LinuxDesktop> {
    let wayland = matches!(display, ufo_linux::DisplayChoice::Wayland { .. });
    let mut config = ufo_linux::LinuxConfig {
        display,
        ..ufo_linux::LinuxConfig::default()
    };
    // Entries of ufo.toml's [launch] table come first, so they win over the built-in ones.
    let mut table = launch.to_vec();
    table.extend(config.launch);
    config.launch = table;
    if let Ok(user) = std::env::var(LAUNCH_USER_VAR) {
        config.launch_as = Some(launch_user(&user)?);
    }
    config.wayland_connector = wayland_connector(config.launch_as.as_ref());
    config.sight = vision.sight();
    ufo_linux::LinuxDesktop::connect(config).await.map_err(|e| {
        let hint = if wayland {
            "is a Wayland compositor running, with WAYLAND_DISPLAY set? (for a headless one: \
             scripts/wayland-session.sh up sway && source /tmp/ufo-wayland-session/env, or use \
             --desktop private:sway)"
        } else {
            "is a desktop session running? (for a headless one: scripts/desktop-session.sh up \
             && source /tmp/ufo-desktop-session/env)"
        };
        anyhow!("cannot reach the live desktop: {e}; {hint}")
    })
}

/// KWin's connection goes through ufo's helper process (`crate::wayland_connect`), as the
/// user applications launch as when there is one: KWin identifies the client by that
/// process's executable. `None` when ufo cannot find its own executable.
pub(crate) fn wayland_connector(
    user: Option<&ufo_linux::LaunchUser>,
) -> Option<std::sync::Arc<dyn ufo_linux::WaylandConnector>> {
    let exe = std::env::current_exe().ok()?;
    Some(std::sync::Arc::new(
        crate::wayland_connect::HelperConnector {
            exe,
            user: user.map(|u| (u.uid, u.gid)),
            mark: std::env::var(SESSION_MARK_VAR)
                .ok()
                .map(|m| (SESSION_MARK_VAR.to_string(), m)),
        },
    ))
}

/// The user applications launch as inside a private Wayland desktop.
fn launch_user(name: &str) -> Result<ufo_linux::LaunchUser> {
    let user = nix::unistd::User::from_name(name)
        .map_err(|e| anyhow!("cannot look up the user {name:?} ({LAUNCH_USER_VAR}): {e}"))?
        .ok_or_else(|| {
            anyhow!("the user {name:?} ({LAUNCH_USER_VAR}) does not exist; create it or unset the variable")
        })?;
    Ok(ufo_linux::LaunchUser {
        uid: user.uid.as_raw(),
        gid: user.gid.as_raw(),
        name: name.to_string(),
        home: user.dir,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn desktop_specs_name_live_displays_and_private_desktops() {
        assert_eq!(live_display("live"), Some(ufo_linux::DisplayChoice::Auto));
        assert_eq!(
            live_display("wayland"),
            Some(ufo_linux::DisplayChoice::Wayland { socket: None })
        );
        assert!(is_live(" wayland ") && !is_live("private") && !is_live("sim:x"));
        let kind = |s: &str| private_kind(s).map(|r| r.map_err(|e| e.to_string()));
        assert_eq!(kind("private"), Some(Ok(PrivateKind::X)));
        assert_eq!(kind("private:sway"), Some(Ok(PrivateKind::Sway)));
        assert_eq!(kind("private:kwin"), Some(Ok(PrivateKind::Kwin)));
        assert_eq!(kind("live"), None);
        assert_eq!(kind("privately"), None);
        assert_eq!(kind("private:gnome"), Some(Ok(PrivateKind::Gnome)));
        let other = kind("private:weston")
            .and_then(Result::err)
            .expect("an error");
        assert!(other.contains("private:weston") && other.contains("private:kwin"));
        for k in [
            PrivateKind::X,
            PrivateKind::Sway,
            PrivateKind::Kwin,
            PrivateKind::Gnome,
        ] {
            assert_eq!(kind(k.spec()), Some(Ok(k)));
            assert_eq!(k.wayland(), k != PrivateKind::X);
        }
    }
}
