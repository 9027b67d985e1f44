//! `--desktop private`: a desktop of ufo's own, so the agent works beside the person instead of
//! on top of them.
//!
//! ufo starts an X server (Xvfb; Xephyr in a window on the person's display with `--watch`), a
//! session D-Bus, the AT-SPI bus with accessibility switched on and a window manager, all with
//! the accessibility switches of every toolkit in their environment, then runs the same
//! command again inside that desktop with `--desktop live`, and ends every process of it when
//! the command ends. The person's display, pointer, keyboard focus and windows are never
//! touched: nothing of the session talks to their X server (except Xephyr's window when
//! watching).
//!
//! No leftovers: every process of the private desktop carries a mark in its environment
//! (`UFO_SESSION_MARK`), and a reaper process (`ufo private-reaper`, in its own process group)
//! watches ufo: when ufo ends, even by SIGKILL, it ends every process with the mark.

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};

use crate::desktop::PrivateKind;

/// The environment variable that marks every process of one private desktop.
pub const MARK_VAR: &str = crate::desktop::SESSION_MARK_VAR;
/// Set in the command ufo runs inside its private desktop (its value is the state folder), so
/// that `run.json` records `private` and a resume starts a private desktop again.
pub const INSIDE_VAR: &str = "UFO_PRIVATE_DESKTOP";
/// Longest wait for each part of the desktop to come up.
const START_TIMEOUT: Duration = Duration::from_secs(15);
/// Displays tried before giving up when other X servers keep taking them first.
const DISPLAY_TRIES: usize = 8;
/// Screen of the private X server.
const SCREEN: (u32, u32) = (1280, 1024);

/// How to start a private desktop.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Show it in a window on the person's display (Xephyr) instead of running it headless.
    pub watch: bool,
    /// A fresh, empty HOME instead of the person's.
    pub scratch_home: bool,
}

/// A running private desktop. Dropping it ends every process it started.
pub struct PrivateDesktop {
    /// The environment of the desktop: what a program needs to run inside it.
    pub env: Vec<(String, String)>,
    /// The state folder (runtime dir, logs, scratch HOME).
    pub dir: PathBuf,
    mark: String,
    children: Vec<Child>,
    reaper: Option<Child>,
    /// The variables a program inside must not inherit (the other display system's).
    unset: &'static [&'static str],
}

/// A program the private desktop needs, with the Debian package that has it.
const NEEDS: &[(&str, &str)] = &[
    ("dbus-daemon", "dbus"),
    ("dbus-send", "dbus-bin"),
    ("openbox", "openbox"),
    ("xprop", "x11-utils"),
];
const BUS_LAUNCHER: &str = "/usr/libexec/at-spi-bus-launcher";
/// What a program in the private X desktop must not inherit.
const X_UNSET: &[&str] = &["NO_AT_BRIDGE", "WAYLAND_DISPLAY"];
/// What a program in a private Wayland desktop must not inherit: X11 would win over Wayland.
const WAYLAND_UNSET: &[&str] = &["NO_AT_BRIDGE", "DISPLAY", "XAUTHORITY", "SWAYSOCK"];

fn which(program: &str) -> Option<PathBuf> {
    ufo_proc::which(program, None).map(PathBuf::from)
}

/// A display number nobody uses (no lock file, no socket), other than `tried`.
fn free_display(tried: &[u32]) -> Result<u32> {
    (200..400)
        .find(|n| {
            !tried.contains(n)
                && !Path::new(&format!("/tmp/.X{n}-lock")).exists()
                && !Path::new(&format!("/tmp/.X11-unix/X{n}")).exists()
        })
        .ok_or_else(|| {
            anyhow!("no free X display between :200 and :399; remove stale /tmp/.X*-lock files")
        })
}

/// Whether the X server of `display` (`:N`) is the process `pid`: X servers write their pid
/// into `/tmp/.X<N>-lock`, and a server that finds the lock taken exits.
fn x_server_is(display: &str, pid: u32) -> bool {
    std::fs::read_to_string(format!("/tmp/.X{}-lock", &display[1..]))
        .is_ok_and(|t| t.trim().parse::<u32>().ok() == Some(pid))
}

/// Wait until `ready()` holds, or fail with `what` after `timeout`.
fn wait_until(what: &str, timeout: Duration, mut ready: impl FnMut() -> bool) -> Result<()> {
    let deadline = Instant::now() + timeout;
    while !ready() {
        if Instant::now() > deadline {
            bail!("{what} did not come up within {} s", timeout.as_secs());
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    Ok(())
}

/// Every program a private desktop needs is installed (and, to watch, there is a display to
/// show it on); else an error that names the packages to install.
fn check_programs(server: &str, watch: bool) -> Result<()> {
    let server_pkg = if watch { "xserver-xephyr" } else { "xvfb" };
    let mut missing: Vec<&str> = Vec::new();
    if which(server).is_none() {
        missing.push(server_pkg);
    }
    for (prog, pkg) in NEEDS {
        if which(prog).is_none() {
            missing.push(pkg);
        }
    }
    if !Path::new(BUS_LAUNCHER).exists() {
        missing.push("at-spi2-core");
    }
    if !missing.is_empty() {
        bail!(
            "--desktop private needs programs that are not installed; install them (as root: \
             apt-get install --no-install-recommends {})",
            missing.join(" ")
        );
    }
    if watch && std::env::var_os("DISPLAY").is_none() {
        bail!("--watch shows the private desktop in a window on your display, but DISPLAY is not set; run without --watch");
    }
    Ok(())
}

/// A new mark, and the state folder named after it with its private runtime folder.
fn make_state_folder() -> Result<(String, PathBuf, PathBuf)> {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let mark = format!("ufo-private-{}-{nanos}", std::process::id());
    let dir = std::env::temp_dir().join(&mark);
    std::fs::create_dir(&dir)
        .with_context(|| format!("cannot make the private desktop's folder {}", dir.display()))?;
    let runtime = dir.join("runtime");
    std::fs::create_dir_all(&runtime).context("cannot make the private runtime folder")?;
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&runtime, std::fs::Permissions::from_mode(0o700))
            .context("cannot protect the private runtime folder")?;
    }
    Ok((mark, dir, runtime))
}

/// The environment of the desktop's programs: the mark, the display, the runtime folder, the
/// accessibility switches of every toolkit and, with `--scratch-home`, a fresh HOME.
fn desktop_env(
    mark: &str,
    dir: &Path,
    runtime: &Path,
    display: &str,
    opts: &Options,
) -> Result<Vec<(String, String)>> {
    let mut env: Vec<(String, String)> = vec![
        (MARK_VAR.into(), mark.to_string()),
        (INSIDE_VAR.into(), dir.display().to_string()),
        ("DISPLAY".into(), display.to_string()),
        ("XDG_RUNTIME_DIR".into(), runtime.display().to_string()),
        ("GSETTINGS_BACKEND".into(), "memory".into()),
        ("GTK_A11Y".into(), "atspi".into()),
    ];
    // what each toolkit needs to be on the accessibility bus (the live desktop's table)
    env.extend(
        ufo_linux::toolkit::A11Y_ENV
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string())),
    );
    if opts.watch {
        // the live desktop inside then tells the person's input from the agent's, and
        // pauses the agent while they use the window (ufo_linux::takeover)
        env.push((ufo_linux::takeover::WATCHED_VAR.into(), "1".into()));
    }
    if opts.scratch_home {
        let home = dir.join("home");
        std::fs::create_dir_all(&home).context("cannot make the scratch HOME")?;
        env.push(("HOME".into(), home.display().to_string()));
    }
    Ok(env)
}

impl PrivateDesktop {
    /// Start a private desktop of `kind`. `exe` is the ufo binary (for the reaper). Errors
    /// say which package to install when a program is missing.
    pub fn start(exe: &Path, kind: PrivateKind, opts: &Options) -> Result<PrivateDesktop> {
        if kind.wayland() {
            return Self::start_wayland(exe, kind);
        }
        let server = if opts.watch { "Xephyr" } else { "Xvfb" };
        check_programs(server, opts.watch)?;
        let (mark, dir, runtime) = make_state_folder()?;
        let display = format!(":{}", free_display(&[])?);
        let env = desktop_env(&mark, &dir, &runtime, &display, opts)?;
        let mut desk = PrivateDesktop {
            env,
            dir,
            mark,
            children: Vec::new(),
            reaper: None,
            unset: X_UNSET,
        };
        // the reaper first: whatever starts after it is ended with ufo, even a failed start
        desk.start_reaper(exe)?;
        // (a failed start removes the desktop's folder, the server's log with it: its end is
        // quoted in the error)
        desk.start_x_server(server, display, opts.watch)
            .map_err(|e| with_log_end(e, &desk.dir.join("xserver.log")))?;
        desk.start_session_bus()?;
        desk.start_accessibility_bus()?;
        desk.start_window_manager()?;
        Ok(desk)
    }

    /// A private Wayland desktop (`crate::private_wayland`): the reaper first, then the
    /// session bus and the compositor as an unprivileged user.
    fn start_wayland(exe: &Path, kind: PrivateKind) -> Result<PrivateDesktop> {
        let (mark, dir, _runtime) = make_state_folder()?;
        let env = vec![
            (MARK_VAR.to_string(), mark.clone()),
            (INSIDE_VAR.to_string(), dir.display().to_string()),
        ];
        let mut desk = PrivateDesktop {
            env,
            dir,
            mark,
            children: Vec::new(),
            reaper: None,
            unset: WAYLAND_UNSET,
        };
        desk.start_reaper(exe)?;
        crate::private_wayland::Start {
            kind,
            mark: (MARK_VAR, &desk.mark),
            dir: &desk.dir,
            children: &mut desk.children,
            env: &mut desk.env,
            shared_env: Vec::new(),
        }
        .run()
        .map_err(|e| with_log_end(e, &desk.dir.join("compositor.log")))?;
        Ok(desk)
    }

    /// The reaper (`ufo private-reaper`, in a process group of its own), which ends every
    /// process with the mark when ufo ends.
    fn start_reaper(&mut self, exe: &Path) -> Result<()> {
        let reaper = Command::new(exe)
            .arg("private-reaper")
            .arg(std::process::id().to_string())
            .arg(&self.mark)
            .arg(&self.dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .context("cannot start the private desktop's reaper")?;
        self.reaper = Some(reaper);
        Ok(())
    }

    /// The X server (`server`), headless or, when watching, in a window on the person's
    /// display; returns once it is up. Another process may pick the same free display at the
    /// same moment (shards of a batch started together on one node): the server that lost
    /// the display's lock exits, and ufo tries the next free display (at most
    /// [`DISPLAY_TRIES`] times) rather than run on the other process's server, which would
    /// vanish with it. The display taken goes into the desktop's environment.
    fn start_x_server(&mut self, server: &str, mut display: String, watch: bool) -> Result<()> {
        let mut tried = Vec::new();
        loop {
            if self.try_x_server(server, &display, watch)? {
                for (k, v) in &mut self.env {
                    if k == "DISPLAY" {
                        v.clone_from(&display);
                    }
                }
                return Ok(());
            }
            tried.push(display[1..].parse::<u32>().unwrap_or(0));
            if tried.len() >= DISPLAY_TRIES {
                bail!(
                    "the X server exited as it started, on display after display (tried :{}): \
                     other X servers starting at the same time took them (start fewer private \
                     desktops at once), or it cannot start here (its log says why)",
                    tried
                        .iter()
                        .map(u32::to_string)
                        .collect::<Vec<_>>()
                        .join(", :"),
                );
            }
            display = format!(":{}", free_display(&tried)?);
        }
    }

    /// Start the X server on `display`: true once it is up and the display is its own, false
    /// when it exited because another server took the display first.
    fn try_x_server(&mut self, server: &str, display: &str, watch: bool) -> Result<bool> {
        let (w, h) = SCREEN;
        let mut x = self.command(server);
        x.env("DISPLAY", display);
        x.arg(display);
        if watch {
            x.args(["-screen", &format!("{w}x{h}"), "-resizeable"]);
            // Xephyr opens its window on the person's display
            if let Some(outer) = std::env::var_os("DISPLAY") {
                x.env("DISPLAY", outer);
            }
        } else {
            x.args(["-screen", "0", &format!("{w}x{h}x24")]);
        }
        x.args(["-nolisten", "tcp", "-noreset"]);
        self.spawn_logged(x, "xserver")?;
        let socket = PathBuf::from(format!("/tmp/.X11-unix/X{}", &display[1..]));
        let mut lost = false;
        let child = self.children.len() - 1;
        wait_until(&format!("the X server {display}"), START_TIMEOUT, || {
            let Some(c) = self.children.get_mut(child) else {
                return true;
            };
            if matches!(c.try_wait(), Ok(Some(_))) {
                lost = true;
                return true;
            }
            socket.exists() && x_server_is(display, c.id())
        })?;
        if lost {
            // it has ended (reaped by try_wait): this returns at once
            let _ = self.children.remove(child).wait();
        }
        Ok(!lost)
    }

    /// The session D-Bus; its address joins the desktop's environment.
    fn start_session_bus(&mut self) -> Result<()> {
        let mut bus = self.command("dbus-daemon");
        let bus_log = std::fs::File::create(self.dir.join("dbus.log"))
            .context("cannot write the dbus log")?;
        bus.args(["--session", "--nofork", "--print-address=1"])
            .stdout(Stdio::piped())
            .stderr(bus_log);
        let mut bus_child = bus.spawn().context("cannot start dbus-daemon")?;
        let address = {
            let out = bus_child
                .stdout
                .take()
                .ok_or_else(|| anyhow!("dbus-daemon gave no output pipe"))?;
            let (tx, rx) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                let mut line = String::new();
                let _ = BufReader::new(out).read_line(&mut line);
                let _ = tx.send(line);
            });
            self.children.push(bus_child);
            rx.recv_timeout(START_TIMEOUT)
                .map_err(|_| anyhow!("dbus-daemon did not print its address"))?
                .trim()
                .to_string()
        };
        if address.is_empty() {
            bail!("dbus-daemon did not print its address");
        }
        self.env
            .push(("DBUS_SESSION_BUS_ADDRESS".into(), address.clone()));
        Ok(())
    }

    /// The AT-SPI bus, with accessibility switched on.
    fn start_accessibility_bus(&mut self) -> Result<()> {
        let mut launcher = self.command(BUS_LAUNCHER);
        launcher.arg("--launch-immediately");
        self.spawn_logged(launcher, "atspi")?;
        wait_until("the accessibility bus", START_TIMEOUT, || {
            self.quiet(
                "dbus-send",
                &[
                    "--session",
                    "--dest=org.a11y.Bus",
                    "--print-reply",
                    "/org/a11y/bus",
                    "org.a11y.Bus.GetAddress",
                ],
            )
        })?;
        if !self.quiet(
            "dbus-send",
            &[
                "--session",
                "--dest=org.a11y.Bus",
                "--print-reply",
                "/org/a11y/bus",
                "org.freedesktop.DBus.Properties.Set",
                "string:org.a11y.Status",
                "string:IsEnabled",
                "variant:boolean:true",
            ],
        ) {
            bail!("could not switch accessibility on in the private desktop (org.a11y.Status.IsEnabled)");
        }
        Ok(())
    }

    /// The window manager (openbox); returns once it has announced itself on the root window.
    fn start_window_manager(&mut self) -> Result<()> {
        let mut wm = self.command("openbox");
        wm.arg("--sm-disable");
        self.spawn_logged(wm, "openbox")?;
        wait_until("the window manager", START_TIMEOUT, || {
            self.quiet("xprop", &["-root", "_NET_SUPPORTING_WM_CHECK"])
        })
    }

    /// A command that runs inside the desktop (its environment, the mark), in a process group
    /// of its own so that a Ctrl-C meant for ufo does not end it.
    fn command(&self, program: &str) -> Command {
        let mut c = Command::new(program);
        ufo_proc::scrub_env_std(&mut c);
        c.env_remove("NO_AT_BRIDGE")
            .env_remove("WAYLAND_DISPLAY")
            .env_remove("SESSION_MANAGER");
        for (k, v) in &self.env {
            c.env(k, v);
        }
        c.stdin(Stdio::null()).process_group(0);
        c
    }

    fn spawn_logged(&mut self, mut c: Command, name: &str) -> Result<()> {
        let log = std::fs::File::create(self.dir.join(format!("{name}.log")))
            .with_context(|| format!("cannot write the {name} log"))?;
        let err = log.try_clone().context("cannot share the log file")?;
        c.stdout(log).stderr(err);
        let child = c
            .spawn()
            .with_context(|| format!("cannot start {name} of the private desktop"))?;
        self.children.push(child);
        Ok(())
    }

    /// Run a short helper inside the desktop; whether it succeeded (bounded to 5 s).
    fn quiet(&self, program: &str, args: &[&str]) -> bool {
        let mut c = self.command(program);
        c.args(args).stdout(Stdio::null()).stderr(Stdio::null());
        let Ok(mut child) = c.spawn() else {
            return false;
        };
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            match child.try_wait() {
                Ok(Some(status)) => return status.success(),
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(10))
                }
                _ => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return false;
                }
            }
        }
    }

    /// The desktop's environment as a desktop-session env file (`export K='V'` lines), as
    /// `ufo batch --display-env` reads it.
    pub fn write_env_file(&self) -> Result<PathBuf> {
        let mut text = String::new();
        for (k, v) in &self.env {
            text.push_str(&format!("export {k}='{}'\n", v.replace('\'', "'\\''")));
        }
        text.push_str(&format!("unset {}\n", self.unset.join(" ")));
        let path = self.dir.join("env");
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
        Ok(path)
    }

    /// End every process of the desktop: the ones it started, and every other process that
    /// carries its mark (applications the agent launched, services D-Bus started).
    pub fn stop(&mut self) {
        end_marked(&self.mark, Duration::from_secs(3));
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
        self.children.clear();
        if let Some(mut r) = self.reaper.take() {
            let _ = r.kill();
            let _ = r.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Drop for PrivateDesktop {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Most lines of the compositor's log a failed start quotes, and most bytes read of its end.
const LOG_END_LINES: usize = 20;
const LOG_END_BYTES: u64 = 8 * 1024;

/// A failed start's error with the end of the compositor's log at `log` (the desktop's folder,
/// the log in it, is removed when the start fails): what the compositor said last is what
/// tells why it did not come up.
fn with_log_end(e: anyhow::Error, log: &Path) -> anyhow::Error {
    match log_end(log) {
        Some(end) => anyhow!(
            "{e:#}\nthe end of {} (removed with the desktop that did not start):\n{end}",
            log.display()
        ),
        None => e,
    }
}

/// The last [`LOG_END_LINES`] lines of `path`'s last [`LOG_END_BYTES`] bytes, if it has any.
fn log_end(path: &Path) -> Option<String> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = std::fs::File::open(path).ok()?;
    let len = f.metadata().ok()?.len();
    f.seek(SeekFrom::Start(len.saturating_sub(LOG_END_BYTES)))
        .ok()?;
    let mut bytes = Vec::new();
    f.take(LOG_END_BYTES).read_to_end(&mut bytes).ok()?;
    let text = String::from_utf8_lossy(&bytes);
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let end = lines[lines.len().saturating_sub(LOG_END_LINES)..].join("\n");
    (!end.is_empty()).then_some(end)
}

/// The processes whose environment carries `MARK_VAR=mark`, this process excluded.
pub fn marked_processes(mark: &str) -> Vec<u32> {
    let needle = format!("{MARK_VAR}={mark}");
    let me = std::process::id();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| pid != me)
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .map(|env| env.split(|b| *b == 0).any(|kv| kv == needle.as_bytes()))
                .unwrap_or(false)
        })
        .collect()
}

/// Send SIGTERM to every marked process, then SIGKILL to what is left after `grace`.
pub fn end_marked(mark: &str, grace: Duration) {
    use nix::sys::signal::{kill, Signal};
    use nix::unistd::Pid;
    let signal_all = |sig: Signal| {
        let pids = marked_processes(mark);
        for pid in &pids {
            if let Ok(p) = i32::try_from(*pid) {
                let _ = kill(Pid::from_raw(p), sig);
            }
        }
        pids.len()
    };
    if signal_all(Signal::SIGTERM) == 0 {
        return;
    }
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline {
        if marked_processes(mark).is_empty() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    signal_all(Signal::SIGKILL);
}

/// `ufo private-reaper PID MARK DIR`: wait until process PID ends, then end every process
/// with the mark and remove DIR. Runs in its own process group, so it outlives a SIGKILL of
/// ufo and a Ctrl-C in ufo's terminal.
pub fn reaper(parent: u32, mark: &str, dir: &Path) -> ExitCode {
    use nix::sys::signal::kill;
    use nix::unistd::Pid;
    let Ok(pid) = i32::try_from(parent) else {
        return ExitCode::from(2);
    };
    while kill(Pid::from_raw(pid), None).is_ok() {
        std::thread::sleep(Duration::from_millis(200));
    }
    end_marked(mark, Duration::from_secs(3));
    let _ = std::fs::remove_dir_all(dir);
    ExitCode::SUCCESS
}

/// What the command line asks of private desktops.
#[derive(Debug, Clone)]
pub struct Plan {
    /// How to start them.
    pub opts: Options,
    /// Which desktop: X11 or a Wayland compositor.
    pub kind: PrivateKind,
    /// How many (one per batch job, else one).
    pub desktops: usize,
    /// `ufo batch`: the desktops are handed over as `--display-env` files.
    pub batch: bool,
    /// A person works in the desktop (`ufo demo record`): ufo says how to reach it, and the
    /// command inside runs in a process group of its own, so that each signal reaches it once,
    /// handed on by this process (a second Ctrl-C must still mean "abort").
    pub person: bool,
    /// `ufo serve`: it reads no terminal, so it too runs in a process group of its own and
    /// gets each signal handed on; a SIGTERM sent to this process alone (a service manager,
    /// `kill PID`) then stops the server at once instead of after the grace period.
    pub serves: bool,
}

impl Plan {
    /// The command inside runs in its own process group, every signal handed on once.
    fn own_group(&self) -> bool {
        self.person || self.serves
    }
}

/// The command line for the command ufo runs inside the private desktop(s): `--desktop
/// private` becomes `--desktop live` (for a batch: one `--display-env` per desktop), and the
/// private desktop's own options are dropped.
pub fn inner_args(
    args: &[std::ffi::OsString],
    plan: &Plan,
    env_files: &[PathBuf],
) -> Vec<std::ffi::OsString> {
    use std::ffi::OsString;
    let mut out: Vec<OsString> = Vec::new();
    let mut saw_desktop = false;
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        let text = a.to_string_lossy();
        if text == "--watch" || text == "--scratch-home" {
            i += 1;
            continue;
        }
        let (is_desktop, value_in_next) = if text == "--desktop" {
            (true, true)
        } else {
            (text.starts_with("--desktop="), false)
        };
        if is_desktop {
            saw_desktop = true;
            if !plan.batch {
                out.push(OsString::from("--desktop"));
                out.push(OsString::from("live"));
            }
            i += if value_in_next { 2 } else { 1 };
            continue;
        }
        out.push(a.clone());
        i += 1;
    }
    if !saw_desktop && !plan.batch {
        out.push(OsString::from("--desktop"));
        out.push(OsString::from("live"));
    }
    for f in env_files {
        out.push(OsString::from("--display-env"));
        out.push(f.clone().into_os_string());
    }
    out
}

/// Start the private desktop(s), run this command again inside them, end them, and return
/// the command's exit status (2 when a desktop cannot be started, with the package to install).
pub fn run_inside(plan: &Plan) -> ExitCode {
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => {
            eprintln!("error: cannot find the ufo binary to run inside the private desktop: {e}");
            return ExitCode::from(3);
        }
    };
    // what starting the desktops warns of (a compositor unwedged, a capture path missing)
    // reaches stderr (`UFO_LOG` sets the level); the command inside logs on its own
    crate::logging::init(
        &crate::console::Console::new(crate::console::Verbosity::Normal),
        None,
    );
    let signals = count_interrupts();
    let mut desktops = match start_desktops(&exe, plan) {
        Ok(d) => d,
        Err(code) => return code,
    };
    let child = match write_env_files(&desktops, plan)
        .and_then(|env_files| spawn_inner(&exe, plan, &desktops, &env_files))
    {
        Ok(c) => c,
        Err(code) => return code,
    };
    let status = wait_inner(child, plan, &signals);
    for d in &mut desktops {
        d.stop();
    }
    use std::os::unix::process::ExitStatusExt;
    match status {
        Some(s) => match (s.code(), s.signal()) {
            (Some(c), _) => ExitCode::from(u8::try_from(c).unwrap_or(3)),
            (None, Some(sig)) => ExitCode::from(u8::try_from(128 + sig).unwrap_or(3)),
            _ => ExitCode::from(3),
        },
        None => ExitCode::from(crate::exit::EXIT_CANCELLED),
    }
}

/// Counts the interrupts this process receives from now on.
fn count_interrupts() -> std::sync::Arc<std::sync::atomic::AtomicUsize> {
    // a Ctrl-C in the terminal reaches the inner ufo too (same process group), which cancels
    // its session; this process waits for it, then ends the desktop (a signal sent to this
    // process alone ends the inner one after a grace period)
    let signals = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let s = signals.clone();
    let _ = ctrlc::set_handler(move || {
        s.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    });
    signals
}

/// The plan's private desktops, started (exit code 2, said, when one cannot be).
fn start_desktops(exe: &Path, plan: &Plan) -> std::result::Result<Vec<PrivateDesktop>, ExitCode> {
    let mut desktops = Vec::new();
    for _ in 0..plan.desktops {
        match PrivateDesktop::start(exe, plan.kind, &plan.opts) {
            Ok(d) => desktops.push(d),
            Err(e) => {
                eprintln!("error: cannot start a private desktop: {e:#}");
                return Err(ExitCode::from(2));
            }
        }
    }
    Ok(desktops)
}

/// The environment files of the desktops: one for each desktop of a batch (its jobs run in
/// them), and for a person the first desktop's, announced (exit code 3, said, when one
/// cannot be written).
fn write_env_files(
    desktops: &[PrivateDesktop],
    plan: &Plan,
) -> std::result::Result<Vec<PathBuf>, ExitCode> {
    let mut env_files = Vec::new();
    if plan.batch {
        for d in desktops {
            match d.write_env_file() {
                Ok(f) => env_files.push(f),
                Err(e) => {
                    eprintln!("error: {e:#}");
                    return Err(ExitCode::from(3));
                }
            }
        }
    }
    if plan.person {
        match desktops[0].write_env_file() {
            Ok(f) => announce(&desktops[0], &f, plan.opts.watch),
            Err(e) => {
                eprintln!("error: {e:#}");
                return Err(ExitCode::from(3));
            }
        }
    }
    Ok(env_files)
}

/// Runs this command again (`exe` with this process's arguments) inside the desktops, the
/// model keys in an inherited memory file (exit code 3, said, when it cannot start).
fn spawn_inner(
    exe: &Path,
    plan: &Plan,
    desktops: &[PrivateDesktop],
    env_files: &[PathBuf],
) -> std::result::Result<Child, ExitCode> {
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    let mut inner = Command::new(exe);
    if plan.own_group() {
        inner.process_group(0);
    }
    inner.args(inner_args(&args, plan, env_files));
    if !plan.batch {
        // the session itself runs inside the desktop; a batch gives each job its desktop
        for (k, v) in &desktops[0].env {
            inner.env(k, v);
        }
        for k in desktops[0].unset {
            inner.env_remove(k);
        }
    } else {
        inner.env(INSIDE_VAR, &desktops[0].dir);
    }
    // the keys go in an inherited memory file (stdin stays the terminal), not the environment
    let handed = match crate::secret_env::pass_in_memfd(&mut inner) {
        Ok(fd) => fd,
        Err(e) => {
            eprintln!("error: cannot hand the model keys to ufo inside the private desktop: {e}");
            return Err(ExitCode::from(3));
        }
    };
    let spawned = inner.spawn();
    drop(handed);
    spawned.map_err(|e| {
        eprintln!("error: cannot run ufo inside the private desktop: {e}");
        ExitCode::from(3)
    })
}

/// Waits for the inner ufo, handing the interrupts counted in `signals` on to it and killing
/// it 10 s after the first: its exit status, `None` when it was killed or cannot be waited for.
fn wait_inner(
    mut child: Child,
    plan: &Plan,
    signals: &std::sync::atomic::AtomicUsize,
) -> Option<std::process::ExitStatus> {
    let mut deadline: Option<Instant> = None;
    let mut handed_on = 0;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Some(status),
            Ok(None) => {}
            Err(_) => return None,
        }
        let received = signals.load(std::sync::atomic::Ordering::SeqCst);
        if plan.own_group() && received > handed_on {
            // its own process group: the terminal's Ctrl-C reaches it only through here
            hand_on_signal(&child);
            handed_on = received;
        }
        if received > 0 && deadline.is_none() {
            deadline = Some(Instant::now() + Duration::from_secs(10));
        }
        if deadline.is_some_and(|d| Instant::now() > d) {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Tell the person where the private desktop is: its display, the environment file that
/// starts a program inside it (so the program is on its accessibility bus, and ended with it),
/// and, when watched, where it shows.
fn announce(desk: &PrivateDesktop, env_file: &Path, watch: bool) {
    // the X display, or the Wayland compositor's socket
    let display = ["DISPLAY", "WAYLAND_DISPLAY"]
        .iter()
        .find_map(|name| {
            desk.env
                .iter()
                .find(|(k, _)| k == name)
                .map(|(k, v)| format!("{k}={v}"))
        })
        .unwrap_or_else(|| "?".into());
    let shown = if watch {
        "it shows in a window on your display"
    } else {
        "add --watch to see it in a window on your display"
    };
    eprintln!(
        "private desktop: {display}; start a program in it with `. {} && PROGRAM &`; \
         {shown}",
        env_file.display()
    );
}

/// Hand a signal on to the command inside, as SIGTERM (its first one stops it cleanly, a
/// second aborts it).
fn hand_on_signal(child: &Child) {
    use nix::sys::signal::{kill, Signal};
    use nix::unistd::Pid;
    if let Ok(pid) = i32::try_from(child.id()) {
        let _ = kill(Pid::from_raw(pid), Signal::SIGTERM);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_start_quotes_the_end_of_the_compositors_log() {
        let dir = tempfile::tempdir().expect("tempdir");
        let log = dir.path().join("compositor.log");
        let e = || anyhow!("GNOME Shell did not answer");
        // no log, or an empty one: the error alone
        assert_eq!(
            format!("{:#}", with_log_end(e(), &log)),
            "GNOME Shell did not answer"
        );
        std::fs::write(&log, "\n\n").expect("log");
        assert_eq!(
            format!("{:#}", with_log_end(e(), &log)),
            "GNOME Shell did not answer"
        );
        // a long log: its last lines only, bounded
        let text: String = (0..5000).map(|i| format!("line {i}\n")).collect();
        std::fs::write(&log, text).expect("log");
        let said = format!("{:#}", with_log_end(e(), &log));
        assert!(
            said.starts_with("GNOME Shell did not answer\nthe end of "),
            "{said}"
        );
        assert!(said.contains("line 4980\n"), "{said}");
        assert!(said.ends_with("line 4999"), "{said}");
        assert!(!said.contains("line 4979\n"), "{said}");
        assert_eq!(said.lines().count(), 2 + LOG_END_LINES);
    }
    use std::ffi::OsString;

    fn os(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    #[test]
    fn the_inner_command_runs_on_the_live_desktop_inside() {
        let one = Plan {
            opts: Options::default(),
            kind: PrivateKind::X,
            desktops: 1,
            batch: false,
            person: false,
            serves: false,
        };
        assert_eq!(
            inner_args(
                &os(&["run", "--desktop", "private", "--watch", "x"]),
                &one,
                &[]
            ),
            os(&["run", "--desktop", "live", "x"])
        );
        assert_eq!(
            inner_args(
                &os(&["run", "--desktop=private", "--scratch-home", "x"]),
                &one,
                &[]
            ),
            os(&["run", "--desktop", "live", "x"])
        );
        // a resume that ran on a private desktop names none
        assert_eq!(
            inner_args(&os(&["resume", "out"]), &one, &[]),
            os(&["resume", "out", "--desktop", "live"])
        );
        let batch = Plan {
            opts: Options::default(),
            kind: PrivateKind::X,
            desktops: 2,
            batch: true,
            person: false,
            serves: false,
        };
        assert_eq!(
            inner_args(
                &os(&["batch", "t", "--jobs", "2", "--desktop", "private"]),
                &batch,
                &[PathBuf::from("/a/env"), PathBuf::from("/b/env")]
            ),
            os(&[
                "batch",
                "t",
                "--jobs",
                "2",
                "--display-env",
                "/a/env",
                "--display-env",
                "/b/env"
            ])
        );
    }
}
