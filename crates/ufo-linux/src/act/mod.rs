//! Actions on controls: AT-SPI where the control supports it, XTEST otherwise; each returns
//! once the window has reacted or the settle time has passed. An action is an [`Actor`]'s,
//! borrowing what it needs from the desktop (the bus, the display, the controls the last
//! observation labelled, the observation itself to look again); settling is a [`Settler`]'s,
//! and gives its observation made ahead back as a value (`settle::Settled`).

mod aim;
mod cells;
mod detected;
mod dropdown;
mod input;
pub(crate) mod modal;
mod perform;
mod reach;
pub(crate) mod screen;
mod search;
mod select;
pub(crate) mod settle;
mod slides;
pub(crate) mod verify;
mod wait;

use std::sync::Arc;

use crate::a11y::apps::KnownApps;
use crate::a11y::bus::A11yBus;
use crate::apps::sheets::SheetCache;
use crate::controls::KnownControls;
use crate::display::watch::ChangeWatch;
use crate::display::{self, Display, DisplayWindow, WinId};
use crate::observe::Observer;
use crate::part::Part;
use crate::{LinuxConfig, LinuxError};
use settle::{Prefetched, SettleState};

/// The waits around an action, over what they borrow from the desktop: the display's change
/// watch and looks, the application's answers, and the observation to make while waiting.
#[derive(Clone, Copy)]
pub(crate) struct Settler<'a> {
    pub bus: &'a A11yBus,
    pub display: &'a Arc<dyn Display>,
    pub config: &'a LinuxConfig,
    /// what settling keeps between actions
    pub settling: &'a Part<SettleState>,
    /// the display's change watch (`None`: settling compares pixels)
    pub watch: &'a Option<Arc<dyn ChangeWatch>>,
    pub observer: Observer<'a>,
}

/// An action on a window, over what it borrows from the desktop.
#[derive(Clone, Copy)]
pub(crate) struct Actor<'a> {
    pub bus: &'a A11yBus,
    pub display: &'a Arc<dyn Display>,
    pub config: &'a LinuxConfig,
    pub apps: &'a KnownApps,
    /// the controls the last observations labelled
    pub controls: &'a Part<KnownControls>,
    /// the spreadsheet cells read before (an action may change them)
    pub sheets: &'a SheetCache,
    /// what settling keeps between actions
    pub settling: &'a Part<SettleState>,
    /// where the observation made while the action settled is kept for the next step
    pub ahead: &'a Part<Option<Prefetched>>,
    pub observer: Observer<'a>,
    pub settler: Settler<'a>,
}

impl Settler<'_> {
    /// Run display calls on a blocking thread (`display::run`).
    async fn run<T, F>(&self, f: F) -> Result<T, LinuxError>
    where
        T: Send + 'static,
        F: FnOnce(&dyn Display) -> Result<T, LinuxError> + Send + 'static,
    {
        display::run(self.display, f).await
    }

    async fn fingerprint(&self, id: WinId) -> Option<u64> {
        display::fingerprint_of(self.display, id).await
    }

    /// Wait until the window stops changing after an action, by its pixels: first a change
    /// (or the settle time), then two unchanged looks. `before` is the fingerprint taken
    /// before the action.
    pub(crate) async fn settle_window(&self, id: WinId, before: Option<u64>) {
        let (poll, time) = (self.config.settle_poll, self.config.settle_time);
        display::settle_pixels(self.display, id, before, poll, time).await
    }
}

impl Actor<'_> {
    /// Run display calls on a blocking thread (`display::run`).
    async fn run<T, F>(&self, f: F) -> Result<T, LinuxError>
    where
        T: Send + 'static,
        F: FnOnce(&dyn Display) -> Result<T, LinuxError> + Send + 'static,
    {
        display::run(self.display, f).await
    }

    /// Bring a window to the front and wait (bounded) until the window manager says it is
    /// active.
    async fn activate(&self, id: WinId) -> Result<(), LinuxError> {
        display::activate(self.display, id).await
    }

    async fn fingerprint(&self, id: WinId) -> Option<u64> {
        display::fingerprint_of(self.display, id).await
    }

    /// The window `window_id` names, now.
    async fn window(&self, window_id: &str) -> Result<DisplayWindow, LinuxError> {
        let id = WinId::parse(window_id)?;
        self.run(move |d| d.window(id))
            .await
            .ok()
            .flatten()
            .ok_or_else(|| LinuxError::NoWindow(window_id.to_string()))
    }
}
