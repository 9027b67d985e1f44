//! The live Linux desktop backend of ufo-rs.
//!
//! Controls come from the accessibility bus (AT-SPI2, spoken over zbus): one
//! `org.a11y.atspi.Cache.GetItems` call gives an application's whole tree, the per-control
//! details (extents, actions, text) are fetched concurrently, and a bounded walk fills in what
//! the cache lacks (GTK4 before its first walk). Windows, screenshots and input go through
//! X11 (x11rb: `_NET_CLIENT_LIST`, `GetImage`, XTEST).
//!
//! Entry points: [`LinuxDesktop::connect`] (implements [`ufo_core::Desktop`]) and [`inspect`].
//! See `crates/ufo-linux/README.md` for the session setup and the key syntax.
//!
//! # Map
//!
//! Lower layers never import higher ones; read from the bottom up.
//!
//! | folder | what | state it owns |
//! |---|---|---|
//! | `a11y/` | the accessibility bus: bounded calls and `Cache.GetItems` (`bus`), the AT-SPI vocabulary from the `atspi` crate (`vocab`), the applications' event logs (`events`), nodes read one by one before (`nodecache`) | `KnownNodes` |
//! | `x11/` | the X connection: windows, window ids, screenshots, XTEST input (`mod`), keys, the screenshot annotation, the person's take-over watch | |
//! | `launch/` | the children launched (`mod`), starting applications and waiting for their windows (`start`), toolkit detection and accessibility switches (`toolkit`), `ufo doctor` (`doctor`) | `Launched` |
//! | `apps/` | what some applications need beyond the generic observation: Calc's sheets (`table`) and the cells read before (`sheets`), office documents (`office`), web pages (`web`), GTK2's open menus (`menus`) | `SheetCache` |
//! | `observe/` | the observation pipeline (`mod`), the controls it learnt (`controls`), the names an agent sees (`names`), LibreOffice's kept trees (`changes`) and bringing them up to date (`refresh`) | `KnownControls`, `KeptTrees` |
//! | `act/` | actions on controls (`mod`), the check that a label still means its control (`verify`), modal dialogs (`modal`), what settling decides and keeps and the X change watch (`settle`), the waits around an action (`wait`) | `SettleState` |
//! | `desktop.rs` | [`LinuxDesktop`]: the bus, the X connection, the configuration and the parts above, and the [`ufo_core::Desktop`] port | `AppFacts` |
//! | `config.rs`, `error.rs` | [`LinuxConfig`] and the launch table; [`LinuxError`] | |
//!
//! Each part is a type in a file of its own below `desktop.rs`, which imports nothing of the
//! desktop: `KnownNodes`, `Launched`, `KeptTrees` and `SheetCache` own their lock and the
//! operations on their state (`self.kept.keep(...)`, `self.sheets.cell_path(...)`);
//! `KnownControls`, `SettleState` and `AppFacts` are plain state behind a `Part` lock. The
//! work that crosses parts (observing, acting, settling, reading a sheet, launching) is
//! methods of [`LinuxDesktop`] in the feature's files above `desktop.rs` (`observe/mod.rs`,
//! `observe/refresh.rs`, `act/mod.rs`, `act/wait.rs`, `apps/table.rs`, `launch/start.rs`,
//! ...): settling observes the window while it waits, Calc acts and observes, the kept trees
//! age the sheet cache, launching reads the applications on the bus. No file imports
//! `desktop.rs` that `desktop.rs` imports. Where a feature touches another's part it names it
//! (`self.controls`, `self.settling`, ...). Features that need only the bus and the
//! configuration are functions over them, not methods of the desktop: the label check
//! (`act::verify::check_unchanged`), web pages (`apps::web`), office documents
//! (`apps::office::Office`, the bus, node cache and configuration the desktop lends).
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

pub use display::x11::{demo as demo_input, takeover};
pub use launch::toolkit;

pub use config::{default_launch_table, libreoffice_gtk3_installed, program_of, LinuxConfig};
pub use controls::ControlDetail;
pub use desktop::LinuxDesktop;
pub use error::{cause, Cause, LinuxError};
pub use observe::{FullObservation, ObservationStats};

use ufo_core::WindowInfo;

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
    let full = desktop.observe_full(&w.id).await?;
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
