//! The live Linux desktop backend of ufo-rs.
//!
//! Controls come from the accessibility bus (AT-SPI2, spoken over zbus): one
//! `org.a11y.atspi.Cache.GetItems` call gives an application's whole tree, the per-control
//! details (extents, actions, text) are fetched concurrently, and a bounded walk fills in what
//! the cache lacks (GTK4 before its first walk). Windows, screenshots and input go through a
//! display (`display::Display`): X11 (x11rb: `_NET_CLIENT_LIST`, `GetImage`, XTEST), or a
//! wlroots Wayland compositor such as sway (foreign-toplevel, screencopy, virtual keyboard and
//! pointer, sway's IPC), or KDE's KWin (fake input, ScreenShot2, scripting over D-Bus), chosen
//! by [`LinuxConfig::display`].
//!
//! Entry points: [`LinuxDesktop::connect`] (implements [`ufo_core::Desktop`]) and [`inspect`].
//! See `crates/ufo-linux/README.md` for the session setup and the key syntax.
//!
//! # Map
//!
//! Lower layers never import higher ones; read from the bottom up (`crates/ufo/tests/
//! structure.rs` checks it, and that no files import each other in a circle). Every layer
//! but `display/x11/`, `display/wlroots/` and `display/kwin/` is display-free: it talks to the window system
//! only through the `display::Display` trait, so the Wayland display changed nothing above it.
//!
//! | layer | what | state it owns |
//! |---|---|---|
//! | `error.rs`, `config.rs`, `vocab.rs`, `names.rs`, `part.rs` | [`LinuxError`]; [`LinuxConfig`] and the launch table; the AT-SPI vocabulary (roles, states, interfaces, every role set the crate sorts nodes by, click and action names); the names an agent sees (pure text rules); `Part<T>`, one feature's state behind its own lock | |
//! | `a11y/` | the accessibility bus: bounded calls and `Cache.GetItems` (`bus`), what is known of the applications on it (`apps`), the node and the cache item (`node`), the applications' event logs and the objects they announced (`events`), the objects announced during a walk (`announced`), nodes read one by one before (`nodecache`) | `KnownApps`, `KnownNodes` |
//! | `display/` | the display seam: the `Display` trait and its windows (`mod`, `window`: ids, client areas that may be unknown, where AT-SPI extents live), pixels and their comparison (`pixels`), keysyms (`keys`), the screenshot annotation (`annotate`), what the watches report (`watch`: the change log settling waits on, the person's take-over), which display to open and which compositor a Wayland one is (`choice`); X11 (`x11/`: windows, XTEST, X Damage and pings in `changes`, XInput take-over in `takeover`, the demonstration recorder in `demo`, what `ufo doctor` reads of the server in `doctor`); a wlroots compositor (`wlroots/`: the connection's thread and the display in `mod`, the one Wayland connection in `session`, the keymap made for the keys in `keymap`, sway's IPC in `sway`); KWin (`kwin/`: the thread and the display in `mod`, fake input and pastes in `input`, the keyboard layout in `layout`, ScreenShot2 and scripts over D-Bus in `bus`, the scripts and their replies in `script`, the change watch from KWin's signals and the window numbers in `watch`) | the X connections; the Wayland connection's thread; the KWin thread |
//! | `controls.rs` | what an observation learnt of each control, for the actions | `KnownControls` |
//! | `launch/` | the children launched and `Launcher` (`mod`), starting applications and waiting for their windows (`start`), the host's shell commands (`shell`), toolkit detection and accessibility switches (`toolkit`) | `Launched` |
//! | `apps/` | what some applications need beyond the generic observation: Calc's sheets read (`table`, `SheetReader`) and the cells read before (`sheets`), office documents (`office`), web pages (`web`), GTK2's open menus (`menus`), GTK 4's drop-downs (`gtk4`), Gnumeric (`gnumeric`) | `SheetCache` |
//! | `observe/` | the observation, an `Observer` over the parts it borrows (`observer`): taking it (`take`), the window located (`locate`), its controls read (`read`, `fields`, `candidates`), the tree completed (`tree`, `walk`), ordered and labelled (`arrange`), the frame (`frames`), modal dialogs (`modal`), loading pages and documents (`loading` decides, `look` asks), LibreOffice's kept trees (`changes`, `refresh`) | `KeptTrees`, `LoadFacts`, `SeenWindows` |
//! | `act/` | the actions, an `Actor`, and the waits around them, a `Settler` (`mod`): performing (`perform`), input (`input`), `select` (`select`), GTK4 drop-downs (`dropdown`), Calc's cells (`cells`), modal dialogs opened by an action (`modal`), search boxes (`search`), the label check (`verify`), the person's input on the whole screen (`screen`), what settling decides and keeps (`settle`) and the waits (`wait`) | `SettleState` |
//! | `desktop.rs`, `demo.rs`, `doctor.rs` | [`LinuxDesktop`]: the parts, the features built over them, and the [`ufo_core::Desktop`] port, a thin layer wiring them together; a demonstration's presses resolved to controls; `ufo doctor`'s checks | the observation made while the last action settled |
//!
//! Each part is a type of its own that owns its lock and the operations on its state
//! (`self.kept.keep(...)`, `self.sheets.cell_path(...)`, `self.apps.name(...)`), or plain
//! state behind a `Part` lock (`KnownControls`, `SettleState`, `LoadFacts`). The work that
//! crosses parts is done by feature types that borrow the parts they need and return values:
//! [`LinuxDesktop`] builds them (`observer()`, `actor()`, `settler()`, `launcher()`) and its
//! own methods live in `desktop.rs` and `demo.rs` only. Settling observes the window while it
//! waits (`Observer::observe_ahead`) and returns that observation (`act::settle::Settled`);
//! the desktop keeps it for the next `observe`, which hands it out when it still holds.
#![cfg_attr(test, allow(clippy::unwrap_used))]

mod a11y;
mod act;
mod apps;
mod config;
mod controls;
mod demo;
mod desktop;
mod display;
pub mod doctor;
mod error;
mod launch;
mod names;
mod observe;
mod part;
mod vocab;

pub use display::choice::{PortalSource, DESKTOP_KIND_VAR, GNOME_PORTAL_SOURCE_VAR};
pub use display::x11::{demo as demo_input, takeover};
pub use launch::toolkit;

pub use config::{
    default_launch_table, libreoffice_gtk3_installed, program_of, DisplayChoice, LaunchUser,
    LinuxConfig, Sight, WaylandConnector, WaylandStream,
};
pub use controls::ControlDetail;
pub use desktop::LinuxDesktop;
pub use error::{cause, Cause, LinuxError};
pub use observe::{FullObservation, ObservationStats};

use ufo_core::WindowInfo;

/// The `.desktop` file that grants the executable `exe` (its canonical path) KWin's fake
/// input and ScreenShot2 (docs/desktop.md, "Wayland").
pub fn kwin_grant_file(exe: &std::path::Path) -> String {
    display::kwin_grant::grant_file(exe)
}

/// What `ufo inspect` shows: a window's controls as the agent sees them, and the annotated
/// screenshot.
#[derive(Debug, Clone)]
pub struct InspectReport {
    /// The window inspected.
    pub window: WindowInfo,
    /// One line per control, `[label] role "name" ...`, in label order, after a header line.
    pub lines: Vec<String>,
    /// The annotated screenshot (PNG), empty when no screenshot could be taken.
    pub annotated_png: Vec<u8>,
    /// Non-fatal problems met while observing.
    pub warnings: Vec<String>,
}

/// Pick a window by id, exact title, title in any case, application or process name, or
/// title substring (case-insensitive), as the agents do; a name several windows fit equally
/// is an error listing them; `None` picks the active window (else the first).
pub async fn find_window(
    desktop: &LinuxDesktop,
    window: Option<&str>,
) -> Result<WindowInfo, LinuxError> {
    let windows = desktop.list_windows().await?;
    let Some(want) = window.map(str::trim).filter(|w| !w.is_empty()) else {
        let active = desktop.run(|d| d.active_window()).await.ok().flatten();
        return active
            .and_then(|a| windows.iter().find(|w| w.id == a.to_string()))
            .or_else(|| windows.first())
            .cloned()
            .ok_or_else(|| LinuxError::NoWindow("(any window)".into()));
    };
    // the agents' rule (docs/resolution.md, "Window resolution"): several equal fits are an error
    let keys: Vec<ufo_core::agent::WindowKey<'_>> = windows.iter().map(Into::into).collect();
    match ufo_core::agent::resolve_window("", want, &keys) {
        Ok((i, _)) => return Ok(windows[i].clone()),
        Err(ufo_core::agent::WindowUnresolved::Ambiguous { fit, candidates }) => {
            return Err(LinuxError::Unsupported(
                ufo_core::agent::ambiguous_windows_message(
                    want,
                    fit,
                    &candidates,
                    &keys,
                    false,
                    "give the id (or the whole title) of the window you mean",
                ),
            ))
        }
        Err(ufo_core::agent::WindowUnresolved::NoMatch) => {}
    }
    if let Ok(xid) = crate::display::WinId::parse(want) {
        if let Some(w) = windows.iter().find(|w| w.id == xid.to_string()) {
            return Ok(w.clone());
        }
    }
    let names: Vec<String> = windows
        .iter()
        .map(|w| format!("{} {:?} ({})", w.id, w.title, w.app_name))
        .collect();
    Err(LinuxError::NoWindow(format!(
        "{want}; open windows: {}",
        if names.is_empty() {
            "none".to_string()
        } else {
            names.join(", ")
        }
    )))
}

/// Observe a window (see [`find_window`] for how `window` is matched) and describe its controls
/// as the agent sees them.
pub async fn inspect(
    desktop: &LinuxDesktop,
    window: Option<&str>,
) -> Result<InspectReport, LinuxError> {
    let w = find_window(desktop, window).await?;
    let full = desktop.observe_full(w.id.as_str()).await?;
    let obs = &full.observation;
    let mut lines = vec![format!(
        "window {} {:?} app {:?} process {} pid {} — {} controls",
        obs.window.id,
        obs.window.title,
        obs.window.app_name,
        obs.window.process,
        obs.window
            .pid
            .map(|p| p.to_string())
            .unwrap_or_else(|| "?".into()),
        obs.controls.len()
    )];
    for (i, d) in full.details.iter().enumerate() {
        let c = &d.control;
        let mut line = format!(
            "[{}] {} {:?} @{},{} {}x{}",
            i + 1,
            c.role,
            c.name,
            c.rect.x,
            c.rect.y,
            c.rect.w,
            c.rect.h
        );
        if let Some(v) = &c.value {
            let short: String = v.chars().take(60).collect();
            let more = if v.chars().count() > 60 { "…" } else { "" };
            line.push_str(&format!(" value={short:?}{more}"));
        }
        if !d.states.is_empty() {
            line.push_str(&format!(" [{}]", d.states.join(",")));
        }
        if !d.actions.is_empty() {
            line.push_str(&format!(" actions={}", d.actions.join("|")));
        }
        // read in the pixels, not named by the tree (docs/sight.md)
        if !c.source.is_tree() {
            line.push_str(" source=ocr");
        }
        lines.push(line);
    }
    Ok(InspectReport {
        window: obs.window.clone(),
        lines,
        annotated_png: obs
            .annotated
            .as_ref()
            .map(|s| s.png.as_ref().clone())
            .unwrap_or_default(),
        warnings: obs.warnings.clone(),
    })
}
