//! Which display to open (docs/desktop.md, "Choosing the display"), pure: X11 as before when
//! `DISPLAY` is set and Wayland is not asked for; Wayland when asked, or when only
//! `WAYLAND_DISPLAY` is set (GNOME's Mutter through its own D-Bus interfaces on a private GNOME
//! desktop ufo started); and which compositor a Wayland display is, from the globals it offers.

use std::path::PathBuf;

use crate::{DisplayChoice, LinuxError};

/// The display a choice comes to in an environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Opened {
    X11,
    Wayland(Option<PathBuf>),
    /// GNOME's Mutter through its RemoteDesktop and ScreenCast D-Bus interfaces: only on a
    /// private GNOME desktop ufo started (on a person's session they would bypass the consent
    /// GNOME asks through its portals).
    Mutter,
}

/// The variable the private desktops set for the ufo inside them: which kind of desktop it is
/// (`private:gnome`, ...).
pub const DESKTOP_KIND_VAR: &str = "UFO_PRIVATE_KIND";

/// The variable that makes ufo take the portals' path on a GNOME desktop it started too
/// (`1`): how the portal path is tested on a headless shell (docs/desktop.md, "GNOME").
pub const GNOME_PORTAL_VAR: &str = "UFO_GNOME_PORTAL";

/// The variable that chooses what a person shares on GNOME's portal path: `monitor` (the
/// default) or `window` (one window, picked in GNOME's dialog; docs/security.md, "GNOME's
/// portals").
pub const GNOME_PORTAL_SOURCE_VAR: &str = "UFO_GNOME_PORTAL_SOURCE";

/// What the person is asked to share on the portal path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PortalSource {
    /// One monitor: every window on it is seen and acted in.
    #[default]
    Monitor,
    /// One window, the person's pick: ufo sees and acts in that window only.
    Window,
}

impl PortalSource {
    /// The source a setting names (`monitor` or `window`, any case); an error says the
    /// choices.
    pub fn parse(v: &str) -> Result<PortalSource, LinuxError> {
        match v.trim().to_ascii_lowercase().as_str() {
            "" | "monitor" => Ok(PortalSource::Monitor),
            "window" => Ok(PortalSource::Window),
            other => Err(LinuxError::Unsupported(format!(
                "{GNOME_PORTAL_SOURCE_VAR}={other:?} is no portal source: set it to \"monitor\" \
                 or \"window\""
            ))),
        }
    }

    /// The source this process's environment asks for.
    pub fn of_env() -> Result<PortalSource, LinuxError> {
        std::env::var(GNOME_PORTAL_SOURCE_VAR)
            .map_or(Ok(PortalSource::Monitor), |v| PortalSource::parse(&v))
    }

    /// The ScreenCast portal's source type bit (`SelectSources`' `types`).
    pub(crate) fn portal_type(self) -> u32 {
        match self {
            PortalSource::Monitor => 1,
            PortalSource::Window => 2,
        }
    }

    /// What the person shares, for the log and `ufo doctor`.
    pub fn describe(self) -> &'static str {
        match self {
            PortalSource::Monitor => "one monitor (every window on it)",
            PortalSource::Window => "one window the person picks (ufo sees and acts in it only)",
        }
    }
}

/// Which remote-desktop session drives a GNOME display.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum GnomePath {
    /// Mutter's own RemoteDesktop and ScreenCast: only on a private GNOME desktop ufo started.
    Mutter,
    /// The RemoteDesktop and ScreenCast portals, the person asked in GNOME's dialog.
    Portal {
        /// Taken because [`GNOME_PORTAL_VAR`] asked for it on a desktop ufo started.
        forced: bool,
    },
}

impl GnomePath {
    /// The path for a GNOME desktop: Mutter's on a private one ufo started (`private`) unless
    /// the portals are asked for (`portal_asked`), the portals on a person's session.
    pub(crate) fn choose(private: bool, portal_asked: bool) -> GnomePath {
        match (private, portal_asked) {
            (true, false) => GnomePath::Mutter,
            (true, true) => GnomePath::Portal { forced: true },
            (false, _) => GnomePath::Portal { forced: false },
        }
    }

    /// The path this process takes, by its environment.
    pub(crate) fn of_env() -> GnomePath {
        let asked = std::env::var(GNOME_PORTAL_VAR).is_ok_and(|v| v.trim() == "1");
        GnomePath::choose(private_gnome(), asked)
    }

    /// Which path and why, for the log and `ufo doctor`.
    pub(crate) fn reason(self) -> &'static str {
        match self {
            GnomePath::Mutter => {
                "Mutter's own RemoteDesktop and ScreenCast: a private GNOME desktop ufo \
                 started, nobody to ask"
            }
            GnomePath::Portal { forced: false } => {
                "the RemoteDesktop and ScreenCast portals: a person's own GNOME session, so \
                 GNOME asks the person first (Mutter's own interfaces would skip that consent)"
            }
            GnomePath::Portal { forced: true } => {
                "the RemoteDesktop and ScreenCast portals, asked for by UFO_GNOME_PORTAL=1 on \
                 a GNOME desktop ufo started (GNOME's dialog asks as on a person's session)"
            }
        }
    }
}

/// Whether this process runs inside a private GNOME desktop ufo started (its kind variable).
pub(crate) fn private_gnome() -> bool {
    std::env::var(DESKTOP_KIND_VAR).is_ok_and(|k| k.trim() == "private:gnome")
}

/// What to open for a choice, given whether `DISPLAY` and `WAYLAND_DISPLAY` are set and
/// whether this is a private GNOME desktop (its default Wayland display is Mutter's).
pub(crate) fn resolve(
    choice: &DisplayChoice,
    display: bool,
    wayland: bool,
    private_gnome: bool,
) -> Result<Opened, LinuxError> {
    match choice {
        DisplayChoice::X11 => Ok(Opened::X11),
        DisplayChoice::Wayland { socket: None } if private_gnome => Ok(Opened::Mutter),
        DisplayChoice::Wayland { socket } => Ok(Opened::Wayland(socket.clone())),
        DisplayChoice::Auto if display => Ok(Opened::X11),
        DisplayChoice::Auto if wayland && private_gnome => Ok(Opened::Mutter),
        DisplayChoice::Auto if wayland => Ok(Opened::Wayland(None)),
        DisplayChoice::Auto => Err(LinuxError::NoDisplay),
    }
}

/// The globals the wlroots display binds: windows, capture, keyboard, pointer.
pub(crate) const WLROOTS_NEEDS: [&str; 4] = [
    "zwlr_foreign_toplevel_manager_v1",
    "zwlr_screencopy_manager_v1",
    "zwp_virtual_keyboard_manager_v1",
    "zwlr_virtual_pointer_manager_v1",
];

/// Which compositor a Wayland display is, by what it offers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Compositor {
    /// Every wlroots protocol the display needs is offered (sway, and other wlroots
    /// compositors).
    Wlroots,
    /// KDE's KWin (its `org_kde_kwin_*` or `org_kde_plasma_*` globals).
    Kwin,
    /// GNOME's Mutter (its `gtk_shell1` global).
    Mutter,
    /// Neither: the wlroots protocols it lacks.
    Other {
        /// The needed globals not offered.
        missing: Vec<&'static str>,
    },
}

/// The compositor offering these globals (interface names).
pub(crate) fn compositor_of(globals: &[String]) -> Compositor {
    let offered = |name: &str| globals.iter().any(|g| g == name);
    let missing: Vec<&'static str> = WLROOTS_NEEDS
        .iter()
        .copied()
        .filter(|n| !offered(n))
        .collect();
    if missing.is_empty() {
        Compositor::Wlroots
    } else if globals
        .iter()
        .any(|g| g.starts_with("org_kde_kwin_") || g.starts_with("org_kde_plasma_"))
    {
        Compositor::Kwin
    } else if offered("gtk_shell1") {
        Compositor::Mutter
    } else {
        Compositor::Other { missing }
    }
}

impl Compositor {
    /// Why ufo cannot drive this compositor (yet), and what to do.
    pub(crate) fn unsupported_reason(&self) -> String {
        match self {
            Compositor::Wlroots => "a wlroots compositor".into(),
            Compositor::Kwin => "KWin, driven through its own display (fake input, ScreenShot2, \
                 scripting), not the wlroots protocols"
                .into(),
            Compositor::Mutter => {
                "GNOME's Mutter, which offers no Wayland protocol for input, captures or \
                 the window list to programs: ufo drives it over D-Bus (its portals on a \
                 person's session, --desktop private:gnome for a desktop of ufo's own)"
                    .into()
            }
            Compositor::Other { missing } => format!(
                "the compositor lacks the Wayland protocols ufo needs: {}; use a wlroots \
                 compositor such as sway, or an X11 session (set DISPLAY)",
                missing.join(", ")
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn x11_stays_when_display_is_set_and_wayland_is_not_asked() {
        let auto = DisplayChoice::Auto;
        assert_eq!(resolve(&auto, true, true, false).expect("x11"), Opened::X11);
        assert_eq!(
            resolve(&auto, true, false, false).expect("x11"),
            Opened::X11
        );
        assert_eq!(
            resolve(&auto, false, true, false).expect("wl"),
            Opened::Wayland(None)
        );
        assert!(matches!(
            resolve(&auto, false, false, false),
            Err(LinuxError::NoDisplay)
        ));
        // inside a private GNOME desktop the Wayland display is Mutter's own session
        assert_eq!(
            resolve(&auto, false, true, true).expect("gnome"),
            Opened::Mutter
        );
        let wayland = DisplayChoice::Wayland { socket: None };
        assert_eq!(
            resolve(&wayland, false, true, true).expect("gnome"),
            Opened::Mutter
        );
        assert_eq!(
            resolve(&wayland, false, true, false).expect("wl"),
            Opened::Wayland(None)
        );
        let asked = DisplayChoice::Wayland {
            socket: Some("/run/user/1000/wayland-1".into()),
        };
        assert_eq!(
            resolve(&asked, true, false, true).expect("asked"),
            Opened::Wayland(Some("/run/user/1000/wayland-1".into()))
        );
        assert_eq!(
            resolve(&DisplayChoice::X11, false, true, true).expect("x11"),
            Opened::X11
        );
    }

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_compositor_is_told_by_its_globals() {
        let mut sway = names(&["wl_seat", "wl_output", "wl_shm"]);
        sway.extend(names(&WLROOTS_NEEDS));
        assert_eq!(compositor_of(&sway), Compositor::Wlroots);
        let kwin = names(&["wl_seat", "org_kde_kwin_server_decoration_manager"]);
        assert_eq!(compositor_of(&kwin), Compositor::Kwin);
        let other = names(&["wl_seat", "zwlr_screencopy_manager_v1"]);
        let c = compositor_of(&other);
        assert_eq!(
            c,
            Compositor::Other {
                missing: vec![
                    "zwlr_foreign_toplevel_manager_v1",
                    "zwp_virtual_keyboard_manager_v1",
                    "zwlr_virtual_pointer_manager_v1"
                ]
            }
        );
        assert!(c
            .unsupported_reason()
            .contains("zwlr_virtual_pointer_manager_v1"));
        assert!(Compositor::Kwin.unsupported_reason().contains("KWin"));
        let mutter = names(&["wl_seat", "gtk_shell1", "zwp_tablet_manager_v2"]);
        assert_eq!(compositor_of(&mutter), Compositor::Mutter);
        assert!(Compositor::Mutter
            .unsupported_reason()
            .contains("private:gnome"));
    }

    #[test]
    fn gnome_takes_the_portals_on_a_persons_session_and_mutter_only_on_ufos_own() {
        assert_eq!(GnomePath::choose(true, false), GnomePath::Mutter);
        assert_eq!(
            GnomePath::choose(false, false),
            GnomePath::Portal { forced: false }
        );
        // the switch cannot take a person's session to Mutter's own interfaces
        assert_eq!(
            GnomePath::choose(false, true),
            GnomePath::Portal { forced: false }
        );
        assert_eq!(
            GnomePath::choose(true, true),
            GnomePath::Portal { forced: true }
        );
        assert!(GnomePath::Mutter.reason().contains("nobody to ask"));
        assert!(matches!(
            PortalSource::parse(" Window "),
            Ok(PortalSource::Window)
        ));
        assert!(matches!(PortalSource::parse(""), Ok(PortalSource::Monitor)));
        assert_eq!(PortalSource::Monitor.portal_type(), 1);
        assert_eq!(PortalSource::Window.portal_type(), 2);
        let e = PortalSource::parse("screen").unwrap_err().to_string();
        assert!(e.contains("\"monitor\"") && e.contains("\"window\""), "{e}");
        assert!(GnomePath::choose(false, false).reason().contains("consent"));
        assert!(GnomePath::choose(true, true)
            .reason()
            .contains("UFO_GNOME_PORTAL"));
    }
}
