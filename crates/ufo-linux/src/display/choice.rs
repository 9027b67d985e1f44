//! Which display to open (docs/desktop.md, "Choosing the display"), pure: X11 as before when
//! `DISPLAY` is set and Wayland is not asked for; Wayland when asked, or when only
//! `WAYLAND_DISPLAY` is set; and which compositor a Wayland display is, from the globals it
//! offers.

use std::path::PathBuf;

use crate::{DisplayChoice, LinuxError};

/// The display a choice comes to in an environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Opened {
    X11,
    Wayland(Option<PathBuf>),
}

/// What to open for a choice, given whether `DISPLAY` and `WAYLAND_DISPLAY` are set.
pub(crate) fn resolve(
    choice: &DisplayChoice,
    display: bool,
    wayland: bool,
) -> Result<Opened, LinuxError> {
    match choice {
        DisplayChoice::X11 => Ok(Opened::X11),
        DisplayChoice::Wayland { socket } => Ok(Opened::Wayland(socket.clone())),
        DisplayChoice::Auto if display => Ok(Opened::X11),
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
        assert_eq!(resolve(&auto, true, true).expect("x11"), Opened::X11);
        assert_eq!(resolve(&auto, true, false).expect("x11"), Opened::X11);
        assert_eq!(
            resolve(&auto, false, true).expect("wl"),
            Opened::Wayland(None)
        );
        assert!(matches!(
            resolve(&auto, false, false),
            Err(LinuxError::NoDisplay)
        ));
        let asked = DisplayChoice::Wayland {
            socket: Some("/run/user/1000/wayland-1".into()),
        };
        assert_eq!(
            resolve(&asked, true, false).expect("asked"),
            Opened::Wayland(Some("/run/user/1000/wayland-1".into()))
        );
        assert_eq!(
            resolve(&DisplayChoice::X11, false, true).expect("x11"),
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
    }
}
