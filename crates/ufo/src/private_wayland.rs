//! `--desktop private:sway`, `private:kwin` and `private:gnome`: a headless Wayland compositor
//! of ufo's own (docs/desktop.md, "Private Wayland desktops").
//!
//! Compositors refuse to run as root, so when ufo runs as root the desktop runs as an
//! unprivileged user (`UFO_PRIVATE_USER`, default [`DEFAULT_USER`]), with its own 0700
//! `XDG_RUNTIME_DIR` and its own session bus (which lets root in, so that ufo reads the
//! accessibility bus of that session). The caller (`crate::private`) owns the mark, the
//! state folder and the reaper: every process started here carries the mark in its
//! environment, so nothing is left after ufo ends, even by SIGKILL.

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};

use crate::desktop::{PrivateKind, LAUNCH_USER_VAR};

#[path = "private_gnome.rs"]
mod gnome;
use gnome::SOCKET as GNOME_SOCKET;

/// The variable naming the user a private Wayland desktop runs as when ufo runs as root.
pub const USER_VAR: &str = "UFO_PRIVATE_USER";
/// The user a private Wayland desktop runs as when ufo runs as root and [`USER_VAR`] is unset.
pub const DEFAULT_USER: &str = "ufo";
/// The variable naming the KWin binary (the packaged one may carry a file capability the
/// machine's bounding set refuses; a copy without it runs).
pub const KWIN_BIN_VAR: &str = "UFO_KWIN_BIN";
/// Set for the command inside: the `--desktop` value a resume starts again.
pub const KIND_VAR: &str = ufo_linux::DESKTOP_KIND_VAR;
/// Screen of the private compositor.
const SCREEN: (u32, u32) = (1280, 800);
/// Longest wait for each part to come up.
const START_TIMEOUT: Duration = Duration::from_secs(15);
/// Longest wait for PipeWire's socket before WirePlumber and KWin start (without it KWin refuses
/// its screencast, and captures are ScreenShot2's).
const MEDIA_WAIT: Duration = Duration::from_secs(3);

/// Who the desktop's processes run as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RunAs {
    /// The user's name.
    pub(crate) name: String,
    /// Its ids, when ufo switches to it (root); `None`: ufo's own user.
    pub(crate) ids: Option<(u32, u32)>,
    /// Its HOME.
    pub(crate) home: PathBuf,
}

/// Which user to run as: ufo's own when not root; else the named one (`named`, else
/// [`DEFAULT_USER`]), which must exist.
pub(crate) fn run_as(root: bool, named: Option<&str>) -> Result<RunAs> {
    if !root {
        let me = nix::unistd::User::from_uid(nix::unistd::geteuid())
            .ok()
            .flatten();
        return Ok(RunAs {
            name: me.as_ref().map_or_else(String::new, |u| u.name.clone()),
            ids: None,
            home: me.map_or_else(|| PathBuf::from("/"), |u| u.dir),
        });
    }
    let name = named
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .unwrap_or(DEFAULT_USER);
    if name == "root" {
        bail!("{USER_VAR}=root: compositors refuse to run as root; name an unprivileged user");
    }
    let user = nix::unistd::User::from_name(name)
        .map_err(|e| anyhow!("cannot look up the user {name:?} ({USER_VAR}): {e}"))?
        .ok_or_else(|| {
            anyhow!(
                "a private Wayland desktop runs its compositor as an unprivileged user, and the \
                 user {name:?} does not exist; create it (useradd -m {name}) or name another \
                 with {USER_VAR}=NAME"
            )
        })?;
    Ok(RunAs {
        name: name.to_string(),
        ids: Some((user.uid.as_raw(), user.gid.as_raw())),
        home: user.dir,
    })
}

/// A compositor's program, its arguments and its own environment.
type CompositorCommand = (String, Vec<String>, Vec<(&'static str, &'static str)>);

/// The compositor's program and arguments, and its own environment.
pub(crate) fn compositor_command(
    kind: PrivateKind,
    config: &Path,
    kwin_bin: Option<&str>,
) -> Result<CompositorCommand> {
    let (w, h) = SCREEN;
    match kind {
        PrivateKind::Sway => Ok((
            "sway".into(),
            vec!["-c".into(), config.display().to_string()],
            vec![
                ("WLR_BACKENDS", "headless"),
                ("WLR_RENDERER", "pixman"),
                ("WLR_LIBINPUT_NO_DEVICES", "1"),
            ],
        )),
        PrivateKind::Kwin => Ok((
            kwin_bin
                .filter(|b| !b.trim().is_empty())
                .unwrap_or("kwin_wayland")
                .to_string(),
            vec![
                "--virtual".into(),
                "--width".into(),
                w.to_string(),
                "--height".into(),
                h.to_string(),
                "--no-lockscreen".into(),
                "--socket".into(),
                "wayland-ufo".into(),
            ],
            // a private KWin serves only ufo: its captures need no grant; its fake input still
            // does (the switch does not cover it): `Start::kwin_folders` writes it
            vec![
                ("KWIN_WAYLAND_NO_PERMISSION_CHECKS", "1"),
                ("KWIN_SCREENSHOT_NO_PERMISSION_CHECKS", "1"),
            ],
        )),
        PrivateKind::Gnome => Ok((
            "gnome-shell".into(),
            vec![
                "--headless".into(),
                "--wayland".into(),
                "--no-x11".into(),
                format!("--wayland-display={GNOME_SOCKET}"),
                "--virtual-monitor".into(),
                format!("{w}x{h}"),
            ],
            vec![("XDG_CURRENT_DESKTOP", "GNOME")],
        )),
        PrivateKind::X => bail!("the private X desktop is not a Wayland compositor"),
    }
}

/// sway's generated configuration: one headless output, no idle or lock. The output runs at
/// 240 Hz: a toolkit draws its next frame only once the compositor has shown the last one, so
/// the refresh bounds how soon an action's result is drawn (one click on gnome-calculator and
/// the observation after it: p50 86 ms at 60 Hz, 77 ms at 240 Hz, against 59–65 ms on Xvfb;
/// idle, sway takes 1.2 % of a core at 240 Hz, 0.2 % at 60 Hz; docs/desktop.md).
fn sway_config() -> String {
    let (w, h) = SCREEN;
    format!(
        "output HEADLESS-1 resolution {w}x{h}@{SWAY_HZ}Hz position 0 0 bg #335577 solid_color\n\
         default_border normal 2\nfocus_follows_mouse no\nseat seat0 fallback true\n"
    )
}

/// The refresh of the private sway's headless output (see [`sway_config`]).
const SWAY_HZ: u32 = 240;

/// The session bus's configuration: the standard session bus, which root (ufo) may join.
const BUS_CONFIG: &str = r#"<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <include>/usr/share/dbus-1/session.conf</include>
  <policy context="default">
    <allow user="root"/>
  </policy>
</busconfig>
"#;

/// A Wayland compositor's socket in `runtime` (`wayland-N` or `wayland-ufo`; not its lock).
fn socket_in(runtime: &Path) -> Option<PathBuf> {
    use std::os::unix::fs::FileTypeExt;
    std::fs::read_dir(runtime)
        .ok()?
        .filter_map(|e| e.ok())
        .find(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.starts_with("wayland-")
                && !name.ends_with(".lock")
                && e.file_type().is_ok_and(|t| t.is_socket())
        })
        .map(|e| e.path())
}

/// The parts of a starting private Wayland desktop: what it has started so far is in
/// `children` (ended by the caller, pass or fail), what a program needs to run in it in `env`.
pub(crate) struct Start<'a> {
    /// The kind of compositor.
    pub(crate) kind: PrivateKind,
    /// The mark every process carries (`crate::private::MARK_VAR`, `mark`).
    pub(crate) mark: (&'a str, &'a str),
    /// The state folder.
    pub(crate) dir: &'a Path,
    /// The processes started.
    pub(crate) children: &'a mut Vec<Child>,
    /// The desktop's environment (for the command inside), extended here.
    pub(crate) env: &'a mut Vec<(String, String)>,
    /// What every process of the desktop gets besides the basics (GNOME's folders and
    /// buses), filled in here.
    pub(crate) shared_env: Vec<(&'static str, String)>,
}

impl Start<'_> {
    /// Start the session bus and the compositor as the user; fill in the environment of the
    /// command inside.
    pub(crate) fn run(&mut self) -> Result<()> {
        check_programs(self.kind)?;
        let root = nix::unistd::geteuid().is_root();
        let named = std::env::var(USER_VAR).ok();
        let user = run_as(root, named.as_deref())?;
        let runtime = self.runtime_dir(&user)?;
        if self.kind == PrivateKind::Gnome {
            self.gnome_before(&user, &runtime)?;
        }
        let bus = self.session_bus(&user, &runtime)?;
        match self.kind {
            PrivateKind::Kwin | PrivateKind::Gnome => self.media(&user, &runtime, &bus),
            PrivateKind::Sway | PrivateKind::X => {}
        }
        let socket = self.compositor(&user, &runtime, &bus)?;
        if self.kind == PrivateKind::Gnome {
            // `setpriv` execs the shell: the compositor's child is the shell
            let shell = self
                .children
                .last()
                .map(|c| c.id())
                .context("GNOME Shell was not started")?;
            let log = self.dir.join("compositor.log");
            gnome::shell_ready(&bus, shell, &log, START_TIMEOUT)?;
        }
        self.inside_env(&user, &runtime, &bus, &socket);
        Ok(())
    }

    /// Before GNOME's session bus: the shell's folders in the state folder (its settings,
    /// state and caches go there, not into the user's home), the stand-in system bus, and the
    /// Wayland display's name, so that what the session bus activates later (portals, GTK
    /// services) finds the display.
    fn gnome_before(&mut self, user: &RunAs, runtime: &Path) -> Result<()> {
        for (var, name) in gnome::FOLDERS {
            let dir = self.dir.join(name);
            std::fs::create_dir(&dir).with_context(|| format!("cannot make GNOME's {name}"))?;
            self.give(user, &dir)?;
            self.shared_env.push((var, dir.display().to_string()));
        }
        // the shell warns once per data folder, in a banner over the top of the windows for
        // its first seconds, that it cannot lock the screen without GDM: said already
        let shell_data = self.dir.join(gnome::LOCK_WARNING.0);
        std::fs::create_dir(&shell_data).context("cannot make GNOME Shell's data folder")?;
        self.give(user, &shell_data)?;
        let warned = shell_data.join(gnome::LOCK_WARNING.1);
        std::fs::write(&warned, "").context("cannot write GNOME Shell's lock warning mark")?;
        self.give(user, &warned)?;
        self.shared_env.extend([
            ("XDG_CURRENT_DESKTOP", "GNOME".to_string()),
            ("WAYLAND_DISPLAY", GNOME_SOCKET.to_string()),
            ("GDK_BACKEND", "wayland".to_string()),
        ]);
        let config = gnome::system_bus_config(&runtime.join("system_bus_socket"));
        let address = self.bus_daemon(user, runtime, "system-bus", &config, "system-bus")?;
        self.shared_env.push(("DBUS_SYSTEM_BUS_ADDRESS", address));
        Ok(())
    }

    /// Give a file or folder of the state folder to the desktop's user (when ufo is another).
    fn give(&self, user: &RunAs, path: &Path) -> Result<()> {
        if let Some((uid, gid)) = user.ids {
            std::os::unix::fs::chown(path, Some(uid), Some(gid))
                .with_context(|| format!("cannot give {} to {}", path.display(), user.name))?;
        }
        Ok(())
    }

    /// The user's 0700 runtime folder in the state folder (which it may cross).
    fn runtime_dir(&self, user: &RunAs) -> Result<PathBuf> {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(self.dir, std::fs::Permissions::from_mode(0o711))
            .context("cannot open the private desktop's folder to its user")?;
        let runtime = self.dir.join("wayland-runtime");
        std::fs::create_dir(&runtime).context("cannot make the private runtime folder")?;
        if let Some((uid, gid)) = user.ids {
            std::os::unix::fs::chown(&runtime, Some(uid), Some(gid)).with_context(|| {
                format!("cannot give the private runtime folder to {}", user.name)
            })?;
        }
        std::fs::set_permissions(&runtime, std::fs::Permissions::from_mode(0o700))
            .context("cannot protect the private runtime folder")?;
        Ok(runtime)
    }

    /// A program run as the user with a clean environment: the mark, HOME, the runtime
    /// folder; in a process group of its own so that a Ctrl-C meant for ufo does not end it.
    /// On GNOME each one also gets SIGKILL when ufo's thread that started it ends
    /// (`setpriv --pdeathsig`: the D-Bus-activated services of a GNOME session outlive a
    /// killed starter otherwise until the reaper's sweep; no `unsafe` hook needed).
    fn command(&self, user: &RunAs, runtime: &Path, program: &str) -> Command {
        let mut c = match self.kind {
            PrivateKind::Gnome => {
                let mut c = Command::new("setpriv");
                c.args(["--pdeathsig", "KILL", "--", program]);
                c
            }
            PrivateKind::Sway | PrivateKind::Kwin | PrivateKind::X => Command::new(program),
        };
        c.env_clear()
            .env(self.mark.0, self.mark.1)
            .env("HOME", &user.home)
            .env("USER", &user.name)
            .env("LOGNAME", &user.name)
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .env("XDG_RUNTIME_DIR", runtime)
            .env("XDG_SESSION_TYPE", "wayland")
            .envs(self.shared_env.iter().map(|(k, v)| (*k, v.as_str())))
            .current_dir(&user.home)
            .stdin(Stdio::null())
            .process_group(0);
        if let Some((uid, gid)) = user.ids {
            // std drops root's supplementary groups with the uid
            c.uid(uid).gid(gid);
        }
        c
    }

    fn log(&self, name: &str) -> Result<(std::fs::File, std::fs::File)> {
        let log = std::fs::File::create(self.dir.join(format!("{name}.log")))
            .with_context(|| format!("cannot write the {name} log"))?;
        let err = log.try_clone().context("cannot share the log file")?;
        Ok((log, err))
    }

    /// The session bus (dbus-daemon, as the user); its address.
    fn session_bus(&mut self, user: &RunAs, runtime: &Path) -> Result<String> {
        self.bus_daemon(user, runtime, "session-bus", BUS_CONFIG, "dbus")
    }

    /// A dbus-daemon as the user, with the configuration `text` (written to `name.conf`) and
    /// its output in `log.log`; its address.
    fn bus_daemon(
        &mut self,
        user: &RunAs,
        runtime: &Path,
        name: &str,
        text: &str,
        log: &str,
    ) -> Result<String> {
        let config = self.dir.join(format!("{name}.conf"));
        std::fs::write(&config, text).with_context(|| format!("cannot write {name}.conf"))?;
        let (_, err) = self.log(log)?;
        let mut bus = self.command(user, runtime, "dbus-daemon");
        bus.arg(format!("--config-file={}", config.display()))
            .args(["--nofork", "--print-address=1"])
            .stdout(Stdio::piped())
            .stderr(err);
        let mut child = bus.spawn().context("cannot start dbus-daemon")?;
        let out = child.stdout.take();
        self.children.push(child);
        let out = out.ok_or_else(|| anyhow!("dbus-daemon gave no output pipe"))?;
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(out).read_line(&mut line);
            let _ = tx.send(line);
        });
        let address = rx
            .recv_timeout(START_TIMEOUT)
            .map_err(|_| anyhow!("dbus-daemon ({name}) did not print its address; see {log}.log"))?
            .trim()
            .to_string();
        if address.is_empty() {
            bail!(
                "dbus-daemon ({name}) ended without an address; see {}",
                self.dir.join(format!("{log}.log")).display()
            );
        }
        Ok(address)
    }

    /// PipeWire and WirePlumber for a private KWin, when installed: KWin's screencast streams
    /// through them (the fast looks, docs/desktop.md "KWin"). Best effort: without them
    /// captures are ScreenShot2's, which `ufo doctor` says.
    fn media(&mut self, user: &RunAs, runtime: &Path, bus: &str) {
        let missing: Vec<&str> = ["pipewire", "wireplumber"]
            .into_iter()
            .filter(|p| ufo_proc::which(p, None).is_none())
            .collect();
        if !missing.is_empty() {
            tracing::info!(
                "no {} installed: the private KWin captures through ScreenShot2 (install \
                 pipewire and wireplumber for faster steps)",
                missing.join(" or ")
            );
            return;
        }
        for program in ["pipewire", "wireplumber"] {
            let logs = self.log(program);
            let started = logs.and_then(|(log, err)| {
                let mut c = self.command(user, runtime, program);
                c.env("DBUS_SESSION_BUS_ADDRESS", bus)
                    .stdout(log)
                    .stderr(err);
                c.spawn().with_context(|| format!("cannot start {program}"))
            });
            match started {
                Ok(child) => self.children.push(child),
                Err(e) => {
                    tracing::warn!("{e:#}: the private KWin captures through ScreenShot2");
                    return;
                }
            }
            // WirePlumber and KWin connect to PipeWire's socket once it is there (bounded)
            let deadline = Instant::now() + MEDIA_WAIT;
            while program == "pipewire"
                && !runtime.join("pipewire-0").exists()
                && Instant::now() < deadline
            {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }

    /// The compositor, as the user on its session bus; its socket once it is up.
    fn compositor(&mut self, user: &RunAs, runtime: &Path, bus: &str) -> Result<PathBuf> {
        let config = self.dir.join("sway.conf");
        std::fs::write(&config, sway_config()).context("cannot write sway's config")?;
        let kwin_bin = std::env::var(KWIN_BIN_VAR).ok();
        let (program, args, env) = compositor_command(self.kind, &config, kwin_bin.as_deref())?;
        let own = match self.kind {
            PrivateKind::Kwin => self.kwin_folders(user)?,
            PrivateKind::Sway | PrivateKind::Gnome | PrivateKind::X => Vec::new(),
        };
        let (log, err) = self.log("compositor")?;
        let mut c = self.command(user, runtime, &program);
        c.args(&args)
            .envs(env)
            .envs(own)
            .env("DBUS_SESSION_BUS_ADDRESS", bus)
            .stdout(log)
            .stderr(err);
        let child = c
            .spawn()
            .with_context(|| format!("cannot start {program} (see {KWIN_BIN_VAR} for KWin)"))?;
        self.children.push(child);
        let log = self.dir.join("compositor.log");
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if let Some(socket) = socket_in(runtime) {
                return Ok(socket);
            }
            let ended = self
                .children
                .last_mut()
                .is_some_and(|c| matches!(c.try_wait(), Ok(Some(_))));
            if ended {
                bail!(
                    "{program} ended at once; see {}{}",
                    log.display(),
                    kwin_hint(self.kind)
                );
            }
            if Instant::now() > deadline {
                bail!(
                    "{program} did not open its Wayland socket within {} s; see {}",
                    START_TIMEOUT.as_secs(),
                    log.display()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// KWin's folders in the state folder, as its environment: the data folder with the
    /// `.desktop` file that grants ufo's executable fake input (`XDG_DATA_DIRS`, before the
    /// system's), and its cache (the application database built from it) and configuration
    /// (`XDG_CACHE_HOME`, `XDG_CONFIG_HOME`), so that nothing is written to the user's home.
    fn kwin_folders(&self, user: &RunAs) -> Result<Vec<(&'static str, String)>> {
        let exe = std::env::current_exe()
            .and_then(std::fs::canonicalize)
            .context("cannot find ufo's executable to grant it KWin's input")?;
        let data = self.dir.join("kwin-data");
        let apps = data.join("applications");
        std::fs::create_dir_all(&apps).context("cannot make KWin's data folder")?;
        std::fs::write(apps.join("ufo.desktop"), ufo_linux::kwin_grant_file(&exe))
            .context("cannot write ufo's grant for KWin")?;
        let mut env = vec![(
            "XDG_DATA_DIRS",
            format!("{}:/usr/local/share:/usr/share", data.display()),
        )];
        for (var, name) in [
            ("XDG_CACHE_HOME", "kwin-cache"),
            ("XDG_CONFIG_HOME", "kwin-config"),
        ] {
            let dir = self.dir.join(name);
            std::fs::create_dir(&dir).with_context(|| format!("cannot make KWin's {name}"))?;
            if let Some((uid, gid)) = user.ids {
                std::os::unix::fs::chown(&dir, Some(uid), Some(gid))
                    .with_context(|| format!("cannot give KWin's {name} to {}", user.name))?;
            }
            env.push((var, dir.display().to_string()));
        }
        Ok(env)
    }

    /// What the command inside needs: the compositor's socket (as a path), the session bus,
    /// the runtime folder, the toolkits' Wayland and accessibility switches, no `DISPLAY`
    /// (removed by the caller), and the user to launch applications as.
    fn inside_env(&mut self, user: &RunAs, runtime: &Path, bus: &str, socket: &Path) {
        let mut add = |k: &str, v: String| self.env.push((k.to_string(), v));
        add("WAYLAND_DISPLAY", socket.display().to_string());
        add("DBUS_SESSION_BUS_ADDRESS", bus.to_string());
        add("XDG_RUNTIME_DIR", runtime.display().to_string());
        add("XDG_SESSION_TYPE", "wayland".into());
        add("GDK_BACKEND", "wayland".into());
        add("QT_QPA_PLATFORM", "wayland".into());
        add("GSETTINGS_BACKEND", "memory".into());
        add("GTK_A11Y", "atspi".into());
        add(KIND_VAR, self.kind.spec().to_string());
        if self.kind == PrivateKind::Gnome {
            add("XDG_CURRENT_DESKTOP", "GNOME".into());
        }
        for (k, v) in ufo_linux::toolkit::A11Y_ENV {
            add(k, v.to_string());
        }
        if user.ids.is_some() {
            add(LAUNCH_USER_VAR, user.name.clone());
        }
    }
}

/// For KWin: why the packaged binary may fail to start, and what to do.
fn kwin_hint(kind: PrivateKind) -> String {
    match kind {
        PrivateKind::Kwin => format!(
            " (the packaged kwin_wayland may carry a file capability, cap_sys_resource, that \
             this machine refuses: copy it without it, `cp /usr/bin/kwin_wayland \
             /opt/ufo-kwin/`, and set {KWIN_BIN_VAR}=/opt/ufo-kwin/kwin_wayland)"
        ),
        PrivateKind::Sway | PrivateKind::Gnome | PrivateKind::X => String::new(),
    }
}

/// The programs the compositor's desktop needs are installed; else which packages to install.
fn check_programs(kind: PrivateKind) -> Result<()> {
    let compositor = match kind {
        PrivateKind::Sway => ("sway", "sway"),
        PrivateKind::Kwin => ("kwin_wayland", "kwin-wayland"),
        PrivateKind::Gnome => ("gnome-shell", "gnome-shell"),
        PrivateKind::X => return Ok(()),
    };
    let kwin_bin = std::env::var(KWIN_BIN_VAR).ok().filter(|b| !b.is_empty());
    let mut missing = Vec::new();
    let present = |p: &str| ufo_proc::which(p, None).is_some();
    let compositor_there = match (&kwin_bin, kind) {
        (Some(bin), PrivateKind::Kwin) => Path::new(bin).exists() || present(bin),
        _ => present(compositor.0),
    };
    if !compositor_there {
        missing.push(compositor.1);
    }
    if !present("dbus-daemon") {
        missing.push("dbus");
    }
    if !Path::new("/usr/libexec/at-spi-bus-launcher").exists() {
        missing.push("at-spi2-core");
    }
    if kind == PrivateKind::Gnome {
        // Mutter's pointer needs a ScreenCast stream, which needs PipeWire and WirePlumber;
        // setpriv gives each process its parent-death signal; dbus-send leaves the overview
        for (program, package) in [
            ("pipewire", "pipewire"),
            ("wireplumber", "wireplumber"),
            ("setpriv", "util-linux"),
            ("dbus-send", "dbus-bin"),
        ] {
            if !present(program) {
                missing.push(package);
            }
        }
    }
    if !missing.is_empty() {
        bail!(
            "--desktop {} needs programs that are not installed; install them (as root: \
             apt-get install --no-install-recommends {})",
            kind.spec(),
            missing.join(" ")
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_root_runs_as_ufos_own_user_and_root_needs_an_existing_one() {
        let me = run_as(false, Some("whoever")).expect("own user");
        assert_eq!(me.ids, None);
        let err = run_as(true, Some("no-such-user-ufo-test"))
            .expect_err("a missing user")
            .to_string();
        assert!(
            err.contains("no-such-user-ufo-test") && err.contains(USER_VAR),
            "{err}"
        );
        assert!(run_as(true, Some("root")).is_err());
    }

    #[test]
    fn compositors_start_headless_with_their_switches() {
        let conf = Path::new("/s/sway.conf");
        let (prog, args, env) = compositor_command(PrivateKind::Sway, conf, None).expect("sway");
        assert_eq!(prog, "sway");
        assert_eq!(args, ["-c", "/s/sway.conf"]);
        assert!(env.contains(&("WLR_BACKENDS", "headless")));
        assert!(env.contains(&("WLR_RENDERER", "pixman")));
        let (prog, args, env) =
            compositor_command(PrivateKind::Kwin, conf, Some("/opt/k/kwin_wayland")).expect("kwin");
        assert_eq!(prog, "/opt/k/kwin_wayland");
        assert!(
            args.iter().any(|a| a == "--virtual") && args.iter().any(|a| a == "--no-lockscreen")
        );
        assert!(env.contains(&("KWIN_WAYLAND_NO_PERMISSION_CHECKS", "1")));
        let (prog, _, _) = compositor_command(PrivateKind::Kwin, conf, Some(" ")).expect("kwin");
        assert_eq!(prog, "kwin_wayland");
        let (prog, args, env) = compositor_command(PrivateKind::Gnome, conf, None).expect("gnome");
        assert_eq!(prog, "gnome-shell");
        for a in [
            "--headless",
            "--wayland",
            "--no-x11",
            "--wayland-display=wayland-ufo",
        ] {
            assert!(args.iter().any(|x| x == a), "{a} in {args:?}");
        }
        assert!(args
            .windows(2)
            .any(|w| w == ["--virtual-monitor", "1280x800"]));
        assert!(env.contains(&("XDG_CURRENT_DESKTOP", "GNOME")));
        assert!(compositor_command(PrivateKind::X, conf, None).is_err());
        assert!(sway_config().contains("HEADLESS-1 resolution 1280x800"));
    }
}
