//! `ufo doctor`: is this session fit for the agent, and is each window readable? Every check
//! says what it found, and every problem comes with its fix.

use std::time::Duration;

use atspi::proxy::bus::{BusProxy, StatusProxy};

use crate::display::choice::{
    compositor_of, Compositor, GnomePath, PortalSource, GNOME_PORTAL_SOURCE_VAR, WLROOTS_NEEDS,
};
use crate::display::gnome::consent::TokenFile;
use crate::display::gnome::portal::{self, Versions, RD_PERSISTS_FROM};
use crate::display::kwin::cast;
use crate::display::kwin_grant::{find_grant, grant_file, Grant, FAKE_INPUT, SCREENCAST};
use crate::display::wlroots::{probe, Probe};
use crate::display::x11::atspi_bus::BusProperty;
use crate::display::x11::doctor::{check_server, published_bus_address, WindowManager, XServer};
use crate::launch::toolkit;
use crate::{LinuxDesktop, LinuxError};

/// One check's outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// Whether the check passed.
    pub ok: bool,
    /// What was checked and found.
    pub what: String,
    /// For a problem: how to fix it.
    pub fix: Option<String>,
}

impl Finding {
    fn ok(what: impl Into<String>) -> Self {
        Self {
            ok: true,
            what: what.into(),
            fix: None,
        }
    }

    fn problem(what: impl Into<String>, fix: impl Into<String>) -> Self {
        Self {
            ok: false,
            what: what.into(),
            fix: Some(fix.into()),
        }
    }
}

const SESSION_FIX: &str = "start a session with `scripts/desktop-session.sh up` and `source` the env file it prints, or run ufo inside your desktop session";

/// The session checks: `DISPLAY` set and reachable, XTEST, a window manager (or, with only
/// `WAYLAND_DISPLAY` set, the Wayland checks of [`check_wayland`]), the session bus, the
/// accessibility bus and its `IsEnabled`. Read-only: nothing is switched on. `connector`: as
/// for [`check_wayland`].
pub async fn check_session(
    timeout: Duration,
    connector: Option<std::sync::Arc<dyn crate::WaylandConnector>>,
) -> Vec<Finding> {
    let mut out = Vec::new();
    let wayland = std::env::var_os("WAYLAND_DISPLAY").is_some_and(|v| !v.is_empty());
    match std::env::var("DISPLAY") {
        Err(_) if wayland => out.extend(check_wayland(None, timeout, connector).await),
        Err(_) => out.push(Finding::problem("DISPLAY is not set", SESSION_FIX)),
        Ok(display) => {
            let d = display.clone();
            let x = tokio::time::timeout(timeout, tokio::task::spawn_blocking(move || check_x(&d)))
                .await;
            match x {
                Ok(Ok(findings)) => out.extend(findings),
                _ => out.push(Finding::problem(
                    format!(
                        "the X server {display} did not answer within {} ms",
                        timeout.as_millis()
                    ),
                    SESSION_FIX,
                )),
            }
        }
    }
    out.extend(check_buses(timeout).await);
    out
}

const WAYLAND_FIX: &str = "check WAYLAND_DISPLAY and XDG_RUNTIME_DIR, or start a compositor with `scripts/wayland-session.sh up sway` (or `up kwin`) and `source` the env file it prints";

/// The Wayland checks (docs/desktop.md, "Wayland"): the compositor at `socket` (else
/// `WAYLAND_DISPLAY`'s) reachable, which compositor it is, which of the protocols ufo uses
/// it offers, what is missing and how to get it. `connector`: how the display will connect
/// (KWin filters what it offers by the connecting process: the findings are what a connection
/// made by it is offered).
pub async fn check_wayland(
    socket: Option<std::path::PathBuf>,
    timeout: Duration,
    connector: Option<std::sync::Arc<dyn crate::WaylandConnector>>,
) -> Vec<Finding> {
    let probed = tokio::task::spawn_blocking(move || {
        let mut p = probe(socket.as_deref(), timeout)?;
        if let (Compositor::Kwin, Some(c)) = (compositor_of(&p.globals), connector) {
            p.globals = crate::display::kwin::input::offered_via(&p.socket, c.as_ref())?;
        }
        // KWin grants its input and captures by a .desktop file naming this executable
        let grant = (compositor_of(&p.globals) == Compositor::Kwin)
            .then(|| {
                let exe = std::env::current_exe().ok()?;
                let exe = std::fs::canonicalize(&exe).unwrap_or(exe);
                let found = find_grant(&exe);
                Some((exe, found))
            })
            .flatten();
        Ok::<_, LinuxError>((p, grant))
    })
    .await;
    match probed {
        Ok(Ok((p, grant))) => {
            let mut out = wayland_findings(&p);
            let gnome = compositor_of(&p.globals) == Compositor::Mutter;
            if gnome && matches!(GnomePath::of_env(), GnomePath::Portal { .. }) {
                out.extend(check_portals(timeout).await);
            }
            if grant.is_some() {
                out.extend(kwin_bus_findings(timeout).await);
            }
            out.extend(grant.map(|(exe, (g, file))| kwin_grant_finding(&exe, g, file)));
            out
        }
        Ok(Err(e)) => vec![Finding::problem(
            format!("cannot reach the Wayland compositor: {e}"),
            WAYLAND_FIX,
        )],
        Err(e) => vec![Finding::problem(
            format!("the Wayland check failed: {e}"),
            WAYLAND_FIX,
        )],
    }
}

/// KWin's D-Bus interfaces ufo uses, and what for.
const KWIN_DBUS: [(&str, &str, &str); 2] = [
    (
        "/org/kde/KWin/ScreenShot2",
        "org.kde.KWin.ScreenShot2",
        "screenshots",
    ),
    (
        "/Scripting",
        "org.kde.kwin.Scripting",
        "the window list, activating and closing windows",
    ),
];

/// Whether KWin offers its screenshot and scripting interfaces on the session bus.
async fn kwin_bus_findings(timeout: Duration) -> Vec<Finding> {
    const FIX: &str = "run ufo in KWin's own session (DBUS_SESSION_BUS_ADDRESS its bus); KWin 5.27 or later offers both";
    let session = tokio::time::timeout(timeout, async {
        zbus::connection::Builder::session()?
            .method_timeout(timeout)
            .build()
            .await
    })
    .await;
    let Ok(Ok(session)) = session else {
        return vec![Finding::problem(
            "cannot reach the session bus to ask KWin for its interfaces",
            FIX,
        )];
    };
    let mut out = Vec::new();
    for (path, iface, what) in KWIN_DBUS {
        let xml = tokio::time::timeout(
            timeout,
            session.call_method(
                Some("org.kde.KWin"),
                path,
                Some("org.freedesktop.DBus.Introspectable"),
                "Introspect",
                &(),
            ),
        )
        .await;
        let offered = match xml {
            Ok(Ok(m)) => m
                .body()
                .deserialize::<String>()
                .is_ok_and(|x| x.contains(&format!("\"{iface}\""))),
            _ => false,
        };
        out.push(if offered {
            Finding::ok(format!("{iface} on the session bus ({what})"))
        } else {
            Finding::problem(
                format!("KWin offers no {iface} on the session bus, so ufo has no {what}"),
                FIX,
            )
        });
    }
    out
}

/// What each protocol the wlroots display binds is for.
fn protocol_use(name: &str) -> &'static str {
    match name {
        "zwlr_foreign_toplevel_manager_v1" => "the window list, activating and closing windows",
        "zwlr_screencopy_manager_v1" => "screenshots",
        "zwp_virtual_keyboard_manager_v1" => "typing",
        "zwlr_virtual_pointer_manager_v1" => "clicks",
        _ => "",
    }
}

/// Whether KWin grants ufo (the executable `exe`) its input and captures: the `.desktop`
/// file that does, or what to install.
fn kwin_grant_finding(
    exe: &std::path::Path,
    g: Grant,
    file: Option<std::path::PathBuf>,
) -> Finding {
    match (g.whole(), file) {
        (true, Some(f)) => Finding::ok(format!(
            "KWin grant: {} lets {} use fake input{} and ScreenShot2",
            f.display(),
            exe.display(),
            if g.screencast {
                ", the screencast"
            } else {
                " (not the screencast: its looks are ScreenShot2's)"
            }
        )),
        (_, found) => Finding::problem(
            format!(
                "no .desktop file grants {} KWin's fake input and ScreenShot2{}: KWin refuses ufo's input and captures",
                exe.display(),
                found
                    .map(|f| format!(" ({} grants part)", f.display()))
                    .unwrap_or_default()
            ),
            format!(
                "install this as ~/.local/share/applications/ufo.desktop (or under /usr/share/applications; deploy/kwin/ufo.desktop is the same for /usr/local/bin/ufo), its Exec= must be this executable:\n{}",
                grant_file(exe)
            ),
        ),
    }
}

/// KWin's Wayland protocols ufo uses: fake input (offered to granted programs only) and the
/// clipboard (pasting what the keyboard layout lacks).
fn kwin_protocol_findings(p: &Probe) -> Vec<Finding> {
    let offered = |name: &str| p.globals.iter().any(|g| g == name);
    let mut out = vec![if offered(FAKE_INPUT) {
        Finding::ok(format!("{FAKE_INPUT} offered (keys and clicks)"))
    } else {
        Finding::problem(
            format!("KWin does not offer {FAKE_INPUT} to this program, so ufo cannot type or click"),
            "KWin offers it only to a program a .desktop file grants it to: see the KWin grant below",
        )
    }];
    out.push(kwin_capture_finding(offered(SCREENCAST), pipewire_daemon()));
    out.push(if offered(DATA_CONTROL) {
        Finding::ok(format!(
            "{DATA_CONTROL} offered (characters the keyboard layout lacks are pasted)"
        ))
    } else {
        Finding::problem(
            format!("{DATA_CONTROL} is not offered, so characters the keyboard layout lacks cannot be typed"),
            "use KWin 5.27 or later, or set such text through the control's actions",
        )
    });
    out
}

/// Whether a PipeWire daemon listens in this session (`PIPEWIRE_REMOTE`, else
/// `$XDG_RUNTIME_DIR/pipewire-0`).
fn pipewire_daemon() -> bool {
    let socket = match std::env::var_os("PIPEWIRE_REMOTE") {
        Some(r) if !r.is_empty() => std::path::PathBuf::from(r),
        _ => match std::env::var_os("XDG_RUNTIME_DIR") {
            Some(d) => std::path::Path::new(&d).join("pipewire-0"),
            None => return false,
        },
    };
    // a bare name is looked up in the runtime folder
    let socket = if socket.is_absolute() {
        socket
    } else {
        std::env::var_os("XDG_RUNTIME_DIR")
            .map(|d| std::path::Path::new(&d).join(&socket))
            .unwrap_or(socket)
    };
    socket.exists()
}

/// How KWin's display will capture: the screencast (KWin offers it, a PipeWire daemon runs,
/// this ufo has PipeWire), else ScreenShot2, and how to get the faster path. Never a problem:
/// ScreenShot2 works, slower.
fn kwin_capture_finding(offered: bool, daemon: bool) -> Finding {
    const FAST: &str = "for faster steps: a ufo built with `--features pipewire`, the grant \
                        listing zkde_screencast_unstable_v1, and pipewire with wireplumber \
                        running in the session (docs/desktop.md, \"KWin\")";
    match cast::path(offered) {
        cast::Path::Screencast if daemon => {
            Finding::ok(format!("captures: {}", cast::Path::Screencast.describe()))
        }
        cast::Path::Screencast => Finding::ok(format!(
            "captures: ScreenShot2, because no PipeWire daemon runs in this session; {FAST}"
        )),
        p @ cast::Path::ScreenShot2 { .. } => {
            Finding::ok(format!("captures: {}; {FAST}", p.describe()))
        }
    }
}

/// PipeWire's socket in this session (`PIPEWIRE_REMOTE`, else `pipewire-0` in the runtime
/// folder), when it is there.
fn pipewire_socket() -> Option<std::path::PathBuf> {
    let path = match std::env::var_os("PIPEWIRE_REMOTE") {
        Some(r) if std::path::Path::new(&r).is_absolute() => std::path::PathBuf::from(r),
        Some(r) => std::path::PathBuf::from(std::env::var_os("XDG_RUNTIME_DIR")?).join(r),
        None => std::path::PathBuf::from(std::env::var_os("XDG_RUNTIME_DIR")?).join("pipewire-0"),
    };
    path.exists().then_some(path)
}

/// What ufo does on GNOME, and why: which remote-desktop session it takes (`path`: Mutter's own
/// on a private GNOME desktop ufo started, the portals on a person's session), whose pointer
/// and captures need PipeWire (`pipewire`: its socket is there; on the portals' path the portal
/// opens the connection). The portals' own findings come from [`portal_findings`].
pub(crate) fn gnome_findings(path: GnomePath, pipewire: bool) -> Vec<Finding> {
    let mut out = vec![
        Finding::ok(
            "the compositor is GNOME's Mutter (no Wayland protocol for input, captures or \
             windows: GNOME is driven over D-Bus, the windows read from AT-SPI)",
        ),
        Finding::ok(format!(
            "path: {}; keys as keysyms, non-ASCII through GTK's Ctrl+Shift+U entry; windows \
             placed only when maximized",
            path.reason()
        )),
    ];
    out.push(if pipewire {
        Finding::ok("PipeWire runs: the pointer and captures use the monitor's stream")
    } else {
        Finding::problem(
            "no PipeWire daemon in this session: the pointer and captures need the monitor's \
             stream",
            "start pipewire and wireplumber in the session (ufo's private GNOME desktop does)",
        )
    });
    out
}

/// The portals on GNOME: whether xdg-desktop-portal answers (`versions`: their versions, or
/// why not), whether a grant persists, and where a restore token is kept (`token`: its file
/// and whether one is there).
pub(crate) fn portal_findings(
    versions: Result<Versions, String>,
    token: Option<(&std::path::Path, bool)>,
) -> Vec<Finding> {
    let v = match versions {
        Ok(v) => v,
        Err(e) => {
            return vec![Finding::problem(
                format!("the RemoteDesktop and ScreenCast portals do not answer: {e}"),
                "install xdg-desktop-portal and xdg-desktop-portal-gnome (the session bus \
                 starts them)",
            )]
        }
    };
    let mut out = vec![Finding::ok(format!(
        "portals: RemoteDesktop version {}, ScreenCast version {} (GNOME asks the person in \
         a dialog: choose what to share, tick \"Allow remote interaction\", Share)",
        v.remote_desktop, v.screen_cast
    ))];
    out.push(if v.persists() {
        Finding::ok(match token {
            Some((path, true)) => format!(
                "the grant persists: a restore token is kept at {} (delete it to be asked \
                 again)",
                path.display()
            ),
            Some((path, false)) => format!(
                "the grant persists: the first session asks, its restore token is kept at {}",
                path.display()
            ),
            None => "the grant could persist, but there is no data folder to keep its token \
                     (set XDG_DATA_HOME or HOME): the dialog asks every session"
                .into(),
        })
    } else {
        Finding::ok(format!(
            "the input grant cannot persist: RemoteDesktop version {} keeps no remote-desktop \
             session (persistence needs version {}; its ScreenCast refuses persist_mode for a \
             remote-desktop session), so GNOME's dialog asks once per ufo session",
            v.remote_desktop, RD_PERSISTS_FROM
        ))
    });
    out
}

/// The portals' findings, asked on the session bus (bounded by `timeout`).
async fn check_portals(timeout: Duration) -> Vec<Finding> {
    let versions = async {
        let conn = tokio::time::timeout(timeout, zbus::Connection::session())
            .await
            .map_err(|_| "the session bus did not answer".to_string())?
            .map_err(|e| format!("no session bus ({e})"))?;
        tokio::time::timeout(timeout, portal::versions(&conn))
            .await
            .map_err(|_| "xdg-desktop-portal did not answer in time".to_string())?
            .map_err(|e| e.to_string())
    }
    .await;
    let tokens = TokenFile::of_user();
    let token = tokens.path().map(|p| (p, tokens.load().is_some()));
    let mut out = portal_findings(versions, token);
    out.push(source_finding(PortalSource::of_env()));
    out
}

/// What the person is asked to share on the portal path ([`GNOME_PORTAL_SOURCE_VAR`]).
pub(crate) fn source_finding(source: Result<PortalSource, LinuxError>) -> Finding {
    match source {
        Ok(s) => Finding::ok(format!(
            "portal source: {} ({GNOME_PORTAL_SOURCE_VAR}=monitor or window)",
            s.describe()
        )),
        Err(e) => Finding::problem(
            format!("portal source: {e}"),
            format!("set {GNOME_PORTAL_SOURCE_VAR} to monitor or window, or unset it"),
        ),
    }
}

/// The clipboard protocol KWin's display pastes with.
const DATA_CONTROL: &str = "zwlr_data_control_manager_v1";

/// The findings of a probed compositor.
fn wayland_findings(p: &Probe) -> Vec<Finding> {
    let socket = p.socket.display();
    let mut out = vec![Finding::ok(format!(
        "Wayland compositor at {socket} reachable"
    ))];
    match compositor_of(&p.globals) {
        Compositor::Kwin => {
            out.push(Finding::ok(
                "the compositor is KWin (fake input, ScreenShot2, scripting)",
            ));
            out.extend(kwin_protocol_findings(p));
            return out;
        }
        Compositor::Mutter => {
            out.extend(gnome_findings(
                GnomePath::of_env(),
                pipewire_socket().is_some(),
            ));
            return out;
        }
        Compositor::Wlroots | Compositor::Other { .. } => {}
    }
    for name in WLROOTS_NEEDS {
        out.push(if p.globals.iter().any(|g| g == name) {
            Finding::ok(format!("{name} offered ({})", protocol_use(name)))
        } else {
            Finding::problem(
                format!("{name} is not offered, so ufo has no {}", protocol_use(name)),
                "use a wlroots compositor that offers it (sway 1.5 or later), or an X11 session (set DISPLAY)",
            )
        });
    }
    out.push(match &p.ipc {
        Some(ipc) => Finding::ok(format!("sway IPC at {} (window positions and processes)", ipc.display())),
        None => Finding::problem(
            "no sway IPC socket found: window positions are unknown, so clicks go through the controls' actions and windows have no screenshot",
            "set SWAYSOCK to sway's IPC socket (sway sets it in its session)",
        ),
    });
    out
}

fn check_x(display: &str) -> Vec<Finding> {
    let (xtest, wm) = match check_server(display) {
        XServer::Unreachable(e) => {
            return vec![Finding::problem(
                format!("cannot connect to the X server {display}: {e}"),
                SESSION_FIX,
            )]
        }
        XServer::Reached { xtest, wm } => (xtest, wm),
    };
    let mut out = vec![Finding::ok(format!("X server {display} reachable"))];
    out.push(if xtest {
        Finding::ok("XTEST extension present (input)")
    } else {
        Finding::problem(
            "the X server lacks the XTEST extension, so ufo cannot type or click",
            "use an X server with XTEST (Xvfb and Xorg have it unless started with -extension XTEST)",
        )
    });
    match wm {
        WindowManager::Running(name) => out.push(Finding::ok(format!("window manager: {name}"))),
        WindowManager::Missing => out.push(Finding::problem(
            "no window manager (no _NET_SUPPORTING_WM_CHECK on the root window): windows cannot be raised or listed",
            "start an EWMH window manager, e.g. `openbox --sm-disable &` (scripts/desktop-session.sh up starts one)",
        )),
        WindowManager::Unknown => {}
    }
    out
}

async fn check_buses(timeout: Duration) -> Vec<Finding> {
    if std::env::var_os("DBUS_SESSION_BUS_ADDRESS").is_none() {
        return vec![Finding::problem(
            "DBUS_SESSION_BUS_ADDRESS is not set: no session bus, so no accessibility bus",
            SESSION_FIX,
        )];
    }
    let session = tokio::time::timeout(timeout, async {
        zbus::connection::Builder::session()?
            .method_timeout(timeout)
            .build()
            .await
    })
    .await;
    let session = match session {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => {
            return vec![Finding::problem(
                format!("cannot connect to the session bus: {e}"),
                SESSION_FIX,
            )]
        }
        Err(_) => {
            return vec![Finding::problem(
                "the session bus did not answer",
                SESSION_FIX,
            )]
        }
    };
    let mut out = vec![Finding::ok("session bus reachable")];
    let address = tokio::time::timeout(timeout, async {
        BusProxy::new(&session).await?.get_address().await
    })
    .await;
    match address {
        Ok(Ok(a)) if !a.is_empty() => {
            out.push(Finding::ok("accessibility bus (org.a11y.Bus) running"));
            let live = a.to_string();
            let published =
                tokio::time::timeout(timeout, tokio::task::spawn_blocking(published_bus_address))
                    .await;
            // No X display to read it from (a Wayland session): nothing to say.
            if let Ok(Ok(Ok(p))) = published {
                let wayland = std::env::var_os("WAYLAND_DISPLAY").is_some_and(|w| !w.is_empty());
                out.extend(bus_property_finding(
                    &BusProperty::judge(p.as_deref(), &live),
                    &live,
                    wayland,
                ));
            }
        }
        _ => {
            out.push(Finding::problem(
                "the accessibility bus (org.a11y.Bus) is not running",
                "install at-spi2-core and start /usr/libexec/at-spi-bus-launcher --launch-immediately (scripts/desktop-session.sh up does)",
            ));
            return out;
        }
    }
    let enabled = tokio::time::timeout(timeout, async {
        StatusProxy::new(&session).await?.is_enabled().await
    })
    .await;
    out.push(match enabled {
        Ok(Ok(true)) => Finding::ok("accessibility switched on (org.a11y.Status IsEnabled)"),
        Ok(Ok(false)) => Finding::problem(
            "accessibility is switched off (org.a11y.Status IsEnabled is false): applications started now stay off the accessibility bus",
            "switch it on: `dbus-send --session --dest=org.a11y.Bus /org/a11y/bus org.freedesktop.DBus.Properties.Set string:org.a11y.Status string:IsEnabled variant:boolean:true` (ufo does so when it connects), then restart the applications",
        ),
        _ => Finding::problem(
            "org.a11y.Status IsEnabled could not be read",
            "check that at-spi-bus-launcher runs (scripts/desktop-session.sh up starts it)",
        ),
    });
    out
}

/// What the display's `AT_SPI_BUS` property (`property`, judged against the `live` bus) means
/// for Qt applications started now, with the fix when it keeps them off the bus. In a Wayland
/// session (`wayland`) Qt applications do not read it, so a missing one is no problem there.
fn bus_property_finding(property: &BusProperty, live: &str, wayland: bool) -> Option<Finding> {
    let set = format!(
        "`xprop -root -f AT_SPI_BUS 8s -set AT_SPI_BUS '{live}'` (ufo does so before it launches an application), then restart the Qt applications"
    );
    match property {
        BusProperty::Live => Some(Finding::ok(
            "the display's AT_SPI_BUS property names the live accessibility bus",
        )),
        BusProperty::Missing if wayland => None,
        BusProperty::Missing => Some(Finding::problem(
            "the display has no AT_SPI_BUS property: Qt 5 applications started now outside ufo stay off the accessibility bus (Qt on X reads the bus address there first)",
            format!("publish the live bus: {set}"),
        )),
        BusProperty::Stale { published } => Some(Finding::problem(
            format!("the display's AT_SPI_BUS property names {published:?}, not the live accessibility bus {live:?}: Qt applications started now stay off the bus"),
            format!("point it at the live bus: {set}"),
        )),
        BusProperty::Unknown { .. } => None,
    }
}

/// The window checks: for each window (or the one `window` names, as `ufo inspect` matches
/// it), whether it is on the accessibility bus and how many controls it has; a window
/// without controls gets its toolkit and the fix.
pub async fn check_windows(
    desktop: &LinuxDesktop,
    window: Option<&str>,
) -> Result<Vec<Finding>, LinuxError> {
    let windows = match window {
        Some(w) => vec![crate::find_window(desktop, Some(w)).await?],
        None => desktop.list_windows().await?,
    };
    let by_pid = crate::a11y::apps::KnownApps::by_pid(&desktop.bus)
        .await
        .unwrap_or_default();
    let mut out = Vec::new();
    for w in windows {
        let tk = w
            .pid
            .map(toolkit::detect)
            .unwrap_or(toolkit::Toolkit::Unknown);
        let name = format!(
            "window {} {:?} ({}, {})",
            w.id,
            w.title,
            if w.process.is_empty() {
                "?"
            } else {
                &w.process
            },
            tk.name()
        );
        let on_bus = w.pid.is_some_and(|p| by_pid.contains_key(&p));
        if !on_bus {
            out.push(Finding::problem(
                format!("{name}: not on the accessibility bus, the agent sees only pixels"),
                toolkit::not_on_bus_hint_on(w.pid, &desktop.bus.address),
            ));
            continue;
        }
        match desktop.observe_with(w.id.as_str(), false).await {
            Ok(full) => {
                let n = full.observation.controls.len();
                if n == 0 {
                    out.push(Finding::problem(
                        format!("{name}: on the accessibility bus but no controls"),
                        toolkit::fix_for(w.pid, tk),
                    ));
                } else {
                    let notes: Vec<&String> = full
                        .observation
                        .warnings
                        .iter()
                        .filter(|m| m.contains("exposes no items"))
                        .collect();
                    let mut what = format!("{name}: {n} controls");
                    for m in notes {
                        what.push_str(&format!("; note: {m}"));
                    }
                    out.push(Finding::ok(what));
                }
            }
            Err(e) => out.push(Finding::problem(
                format!("{name}: could not be observed: {e}"),
                "run `ufo inspect` on it for details; if the application is hung, restart it",
            )),
        }
    }
    if out.is_empty() {
        out.push(Finding::ok("no windows open"));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probe_of(globals: &[&str], ipc: bool) -> Probe {
        Probe {
            socket: "/run/user/1000/wayland-1".into(),
            globals: globals.iter().map(|g| g.to_string()).collect(),
            ipc: ipc.then(|| "/run/user/1000/sway-ipc.1000.7.sock".into()),
        }
    }

    /// Issue 46: a missing AT_SPI_BUS property is said to be missing (not "a bus that is
    /// gone"), with the command that publishes the live bus; in a Wayland session it is no
    /// problem; a live one is fine.
    #[test]
    fn the_bus_property_finding_says_what_was_found() {
        let live = "unix:path=/run/user/0/at-spi/bus_1,guid=aa";
        let f = bus_property_finding(&BusProperty::Missing, live, false).expect("a finding");
        assert!(!f.ok, "{f:?}");
        assert!(f.what.contains("no AT_SPI_BUS property"), "{f:?}");
        assert!(!f.what.contains("gone"), "{f:?}");
        assert!(f.fix.as_deref().is_some_and(|x| x.contains(live)), "{f:?}");
        assert!(bus_property_finding(&BusProperty::Missing, live, true).is_none());
        let stale = BusProperty::Stale {
            published: "unix:path=/tmp/gone".into(),
        };
        let f = bus_property_finding(&stale, live, false).expect("a finding");
        assert!(!f.ok && f.what.contains("/tmp/gone"), "{f:?}");
        let f = bus_property_finding(&BusProperty::Live, live, false).expect("a finding");
        assert!(f.ok, "{f:?}");
    }

    /// GNOME: doctor says which path ufo takes and why, and on the portals' path whether the
    /// grant persists and where its token is kept.
    #[test]
    fn gnome_says_which_path_and_why() {
        let person = gnome_findings(GnomePath::Portal { forced: false }, true);
        assert!(person[0].ok && person[0].what.contains("Mutter"));
        assert!(person[1].what.contains("portals") && person[1].what.contains("consent"));
        let private = gnome_findings(GnomePath::Mutter, true);
        assert!(private.iter().all(|f| f.ok), "{private:?}");
        assert!(private.iter().any(|f| f.what.contains("nobody to ask")));
        let no_pw = gnome_findings(GnomePath::Mutter, false);
        assert!(no_pw.iter().any(|f| !f.ok && f.what.contains("PipeWire")));
        let mutter = wayland_findings(&probe_of(&["wl_seat", "gtk_shell1"], false));
        assert!(mutter.iter().any(|f| f.what.contains("GNOME's Mutter")));

        let v = |rd| Versions {
            remote_desktop: rd,
            screen_cast: 4,
        };
        let place = std::path::Path::new("/home/a/.local/share/ufo/gnome-portal-token");
        let debian12 = portal_findings(Ok(v(1)), Some((place, false)));
        assert!(debian12.iter().all(|f| f.ok));
        assert!(debian12
            .iter()
            .any(|f| f.what.contains("cannot persist") && f.what.contains("once per")));
        let later = portal_findings(Ok(v(2)), Some((place, true)));
        assert!(later
            .iter()
            .any(|f| f.what.contains("persists") && f.what.contains("gnome-portal-token")));
        let none = portal_findings(Err("no session bus".into()), None);
        assert!(none.iter().any(|f| !f.ok
            && f.fix
                .as_deref()
                .is_some_and(|x| x.contains("xdg-desktop-portal-gnome"))));

        let window = source_finding(Ok(PortalSource::Window));
        assert!(
            window.ok && window.what.contains("one window"),
            "{window:?}"
        );
        let monitor = source_finding(Ok(PortalSource::Monitor));
        assert!(monitor.what.contains("one monitor"), "{monitor:?}");
        let bad = source_finding(PortalSource::parse("screen"));
        assert!(!bad.ok && bad.fix.as_deref().is_some_and(|f| f.contains("window")));
    }

    #[test]
    fn the_wayland_checks_name_what_is_missing_and_how_to_get_it() {
        let mut all: Vec<&str> = WLROOTS_NEEDS.to_vec();
        all.push("wl_seat");
        let sway = wayland_findings(&probe_of(&all, true));
        assert!(sway.iter().all(|f| f.ok), "{sway:?}");
        assert_eq!(sway.len(), 2 + WLROOTS_NEEDS.len());

        let bare = wayland_findings(&probe_of(&["wl_seat", "zwlr_screencopy_manager_v1"], false));
        let problems: Vec<&Finding> = bare.iter().filter(|f| !f.ok).collect();
        assert_eq!(problems.len(), 4, "{bare:?}");
        assert!(problems.iter().all(|f| f.fix.is_some()));
        assert!(problems.iter().any(
            |f| f.what.contains("zwlr_virtual_pointer_manager_v1") && f.what.contains("clicks")
        ));
        assert!(problems.iter().any(|f| f.what.contains("sway IPC")));

        // KWin: which compositor, and the fake input its grant gives
        let kwin = wayland_findings(&probe_of(
            &["org_kde_kwin_server_decoration_manager", DATA_CONTROL],
            false,
        ));
        assert!(kwin.iter().any(|f| f.ok && f.what.contains("KWin")));
        assert!(kwin
            .iter()
            .any(|f| !f.ok && f.what.contains(FAKE_INPUT) && f.fix.is_some()));
        let granted = wayland_findings(&probe_of(
            &[
                "org_kde_kwin_server_decoration_manager",
                FAKE_INPUT,
                DATA_CONTROL,
            ],
            false,
        ));
        assert!(granted.iter().all(|f| f.ok), "{granted:?}");
    }

    #[test]
    fn the_capture_finding_says_which_path_captures_and_how_to_get_the_fast_one() {
        let fast = kwin_capture_finding(true, true);
        let no_daemon = kwin_capture_finding(true, false);
        let no_grant = kwin_capture_finding(false, true);
        assert!(
            fast.ok && no_daemon.ok && no_grant.ok,
            "ScreenShot2 still captures"
        );
        if cfg!(feature = "pipewire") {
            assert!(fast.what.contains("screencast") && !fast.what.contains("faster"));
            assert!(
                no_daemon.what.contains("no PipeWire daemon"),
                "{no_daemon:?}"
            );
            assert!(no_grant.what.contains(SCREENCAST), "{no_grant:?}");
        } else {
            assert!(fast.what.contains("--features pipewire"), "{fast:?}");
        }
        assert!(no_grant.what.contains("wireplumber"));
    }

    #[test]
    fn a_missing_kwin_grant_says_which_file_to_install() {
        let exe = std::path::Path::new("/usr/local/bin/ufo");
        let whole = Grant {
            fake_input: true,
            screenshot: true,
            screencast: true,
        };
        assert!(
            kwin_grant_finding(
                exe,
                whole,
                Some("/usr/share/applications/ufo.desktop".into())
            )
            .ok
        );
        let missing = kwin_grant_finding(exe, Grant::default(), None);
        assert!(!missing.ok);
        let fix = missing.fix.expect("a fix");
        assert!(
            fix.contains("Exec=/usr/local/bin/ufo")
                && fix.contains("X-KDE-Wayland-Interfaces=org_kde_kwin_fake_input"),
            "{fix}"
        );
    }
}
