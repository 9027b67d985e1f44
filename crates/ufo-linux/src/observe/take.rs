//! Taking an observation: the window found and read while the first look at its loading
//! runs, read again as the loading's decisions say (`loading::reread`), then its controls in
//! label order and its labelled screenshot.

use std::sync::Arc;
use std::time::{Duration, Instant};

use ufo_core::{Rect, WindowObservation};

use super::arrange::{arrange, labelled, labelled_screenshots};
use super::loading;
use super::locate::Located;
use super::observer::{FullObservation, Observation, Observer, Pace};
use super::read::ReadWindows;
use crate::apps::inked::{SheetPixels, Shot};
use crate::controls::ControlDetail;
use crate::display::annotate::encode_png;
use crate::display::pixels::RgbImage;
use crate::display::{self, position_unknown};
use crate::LinuxError;

/// A window's read, and what the load wait said of it.
struct Loaded {
    located: Located,
    load: loading::LoadWait,
    read: Read,
    /// Time from the start of the observation to the end of its last wait for the load.
    load_wait: Duration,
}

/// A located window's capture (and how long it took) and its controls.
type Read = (Captured, ReadWindows);

/// A window's capture, how long it took, and its clean PNG, encoded while the controls were
/// read (it does not depend on them: the first observation of a Calc sheet spent 40–50 ms
/// encoding its two screenshots after the read, in a debug build; `None` when it failed).
pub(super) struct Captured {
    img: Result<RgbImage, LinuxError>,
    took: Duration,
    clean: Option<Vec<u8>>,
}

impl Observer<'_> {
    /// Observe a window for the step that asks, and hand it out: its labels are the ones the
    /// actions use from now on. `with_actions` also fetches every control's action names (for
    /// `inspect`; the engine's observation leaves them to the action that needs them).
    pub(crate) async fn observe(
        &self,
        window_id: &str,
        with_actions: bool,
    ) -> Result<FullObservation, LinuxError> {
        let o = self.take(window_id, with_actions, Pace::Now).await?;
        let (xid, labelled) = o.labelled;
        self.controls.lock().install(xid, labelled);
        Ok(o.full)
    }

    /// Observe a window ahead of the next step (while an action settles), not handed out: a
    /// window still loading is an error rather than a wait.
    pub(crate) async fn observe_ahead(&self, window_id: &str) -> Result<Observation, LinuxError> {
        self.take(window_id, false, Pace::Ahead).await
    }

    /// Observe a window at `pace`.
    ///
    /// The steps: find the window and its dialogs (raising it), then read its controls and
    /// capture it at the same time, read it again while its page or document loads, then put
    /// the controls in reading order without what a dialog covers, draw the labels, and label
    /// the controls for the actions.
    pub(super) async fn take(
        &self,
        window_id: &str,
        with_actions: bool,
        pace: Pace,
    ) -> Result<Observation, LinuxError> {
        let t0 = Instant::now();
        let read = self.read_loaded(window_id, with_actions, pace, t0).await?;
        self.finish(read, t0).await
    }

    /// The window found and read once its page or document has loaded (bounded by
    /// `LinuxConfig::load_wait`), with what the load wait says.
    async fn read_loaded(
        &self,
        window_id: &str,
        with_actions: bool,
        pace: Pace,
        t0: Instant,
    ) -> Result<Loaded, LinuxError> {
        let located = self.locate(window_id).await?;
        // is the page or document still loading (loading.rs)? Asked while the window is read,
        // so that a loaded window costs nothing; a loading one is waited for (bounded), then
        // found and read again (its title, its size, its content may have changed)
        let (first, read) = tokio::join!(
            self.load_first_look(&located.main, pace),
            self.read_located(&located, with_actions)
        );
        let mut r = match first? {
            Some(load) => Loaded {
                located,
                load,
                read,
                load_wait: Duration::ZERO,
            },
            None => {
                let load = self.wait_loaded(&located.main).await?;
                let load_wait = t0.elapsed();
                let located = self.locate(window_id).await?;
                let read = self.read_located(&located, with_actions).await;
                Loaded {
                    located,
                    load,
                    read,
                    load_wait,
                }
            }
        };
        let mut done = loading::Rereads::default();
        loop {
            let facts = loading::ReadFacts {
                office_unbuilt: self.office_unbuilt_after(&r.located.main),
                pages: r.load.pages,
                candidates: r.read.1.stats.document_candidates,
                on_screen: r.read.1.stats.document_controls,
                walk_cut: r.read.1.stats.walk_cut,
                frame_missing: r.read.1.frame_missing,
                route_pending: r.read.1.route_pending,
            };
            let again =
                loading::reread(&facts, &mut done, t0.elapsed(), self.config.load_wait, pace);
            if !self
                .read_again(&mut r, again, window_id, with_actions, t0)
                .await?
            {
                break;
            }
        }
        if self.office_unbuilt_after(&r.located.main) {
            r.load.notes.push(loading::gave_up_note(
                loading::Loading::NotBuilt,
                t0.elapsed(),
            ));
        }
        Ok(r)
    }

    /// A step of [`Self::read_loaded`]: what `again` says, done (`false`: the read stands).
    async fn read_again(
        &self,
        r: &mut Loaded,
        again: loading::Reread,
        window_id: &str,
        with_actions: bool,
        t0: Instant,
    ) -> Result<bool, LinuxError> {
        use loading::Reread;
        match again {
            Reread::Done => return Ok(false),
            Reread::NotYet => {
                return Err(LinuxError::ActionFailed(
                    "the document is not in its window yet: observed once it is".into(),
                ))
            }
            // LibreOffice maps a document window before it puts the document in it
            Reread::Office => {
                tokio::time::sleep(loading::OFFICE_POLL).await;
                r.load = self.wait_loaded(&r.located.main).await?;
                r.load_wait = t0.elapsed();
            }
            // Firefox lays a new window's page out for accessibility after it has loaded
            Reread::Page => {
                tracing::debug!("the loaded page is not in the read: reading again");
                tokio::time::sleep(loading::PAGE_REREAD_PAUSE).await;
            }
            // a browser just started on its page still answers slowly: Firefox's first walk
            // of `about:preferences` took over 3 s under load, its next one 0.6 s
            Reread::Cut => {
                tracing::debug!("the walk of a loaded page stopped at its budget: reading again");
            }
            // a browser's own page draws its route's section after the load (route.rs)
            Reread::Route => {
                tracing::debug!("the page's route is not rendered yet: reading again");
                tokio::time::sleep(loading::ROUTE_POLL).await;
            }
            // a popup being built: shown without controls after the wait, with the warning,
            // rather than another window's controls
            Reread::Frame => {
                tracing::debug!("the window's accessible frame is not found yet: reading again");
                tokio::time::sleep(loading::FRAME_POLL).await;
            }
        }
        r.located = self.locate(window_id).await?;
        r.read = self.read_located(&r.located, with_actions).await;
        if matches!(again, Reread::Page | Reread::Cut | Reread::Route) {
            r.load_wait = t0.elapsed();
        }
        Ok(true)
    }

    /// The observation from the window's last read: its controls in label order, the
    /// screenshot with their labels, the warnings and timings (long: the read's parts are
    /// taken apart once and each goes to its step in order).
    async fn finish(&self, r: Loaded, t0: Instant) -> Result<Observation, LinuxError> {
        let Loaded {
            located,
            mut load,
            read: (shot, read),
            load_wait,
        } = r;
        let Located {
            main,
            attached,
            area,
            warnings: _,
            windows: _,
            raised: _,
        } = located;
        let ReadWindows {
            groups,
            mut warnings,
            mut stats,
            main_bus,
            modal,
            frame_missing: _,
            silent,
            popups,
            route_pending: _,
        } = read;
        if let Some(title) = &modal {
            warnings.push(format!(
                "the modal dialog {title:?} is open: the controls of the window under it are not \
                 listed (it takes no input until the dialog is closed)"
            ));
        }
        stats.capture = shot.took;
        stats.load_wait = load_wait;
        warnings.append(&mut load.notes);
        let mut fetched = arrange(groups, &covers(&attached, popups), modal.is_some());
        // the toolkit's fix is said for an empty tree, whatever the pixels show
        if fetched.is_empty() && main_bus.is_some() {
            warnings.extend(established_hint(main.pid, stats.document_nodes));
        }
        let shown = area.unwrap_or_default();
        let seen = super::sight::Seen {
            img: shot.img.as_ref().ok(),
            area: shown,
            window: main.id,
            attached: &attached,
            modal: modal.is_some(),
            silent: &silent,
        };
        self.add_detected(seen, &mut fetched, &mut warnings, &mut stats)
            .await;
        let t_px = Instant::now();
        let pixel_changes = self
            .pixel_evidence(main.id, shot.img.as_ref().ok(), area, stats.pixels_read)
            .await;
        stats.pixel_evidence = t_px.elapsed();
        let t_enc = Instant::now();
        let (screenshot, annotated) =
            labelled_screenshots(shot.img, shot.clean, &fetched, shown, &mut warnings).await;
        stats.encode = t_enc.elapsed();
        let labelled = (main.id, labelled(&fetched));
        let window = self.window_info(&main, main_bus).await;
        let details: Vec<ControlDetail> = fetched.into_iter().map(|f| f.detail).collect();
        stats.total = t0.elapsed();
        log_phases(&stats);
        Ok(Observation {
            full: FullObservation {
                observation: WindowObservation {
                    window,
                    controls: details.iter().map(|d| d.control.clone()).collect(),
                    screenshot,
                    annotated,
                    warnings,
                    pixels_readable: self.pixels_readable(),
                    pixel_changes,
                },
                details,
                stats,
            },
            labelled,
        })
    }

    /// Steps 2 and 3 of a located window: its capture (and how long it took) and its controls.
    /// The capture is handed to the controls' read as soon as it is taken: a sheet's cells
    /// that show nothing in it are not read (apps/inked.rs).
    pub(super) async fn read_located(&self, located: &Located, with_actions: bool) -> Read {
        let area = located.area;
        let (shot_tx, shot_rx) = tokio::sync::watch::channel(Shot::Pending);
        let capture = async move {
            let t = Instant::now();
            let img = match area {
                Some(area) => display::run(self.display, move |d| d.capture(area)).await,
                None => Err(position_unknown(&located.main)),
            };
            let took = t.elapsed();
            let (img, clean) = match (img, area) {
                (Ok(shot), Some(area)) => {
                    // shared with the sheets' read and the encoding task, and back once both
                    // are done
                    let shot = Arc::new(shot);
                    shot_tx.send_replace(Shot::Taken(shot.clone(), area));
                    drop(shot_tx);
                    let shared = shot.clone();
                    let png = tokio::task::spawn_blocking(move || encode_png(&shared)).await;
                    (Ok(shot), png.ok().and_then(Result::ok))
                }
                (Err(e), _) => {
                    shot_tx.send_replace(Shot::Missing);
                    (Err(e), None)
                }
                (Ok(_), None) => {
                    shot_tx.send_replace(Shot::Missing);
                    (Err(position_unknown(&located.main)), None)
                }
            };
            (img, took, clean)
        };
        // the pixels of a window raised now may still show what covered it
        let pixels = match located.raised {
            true => {
                drop(shot_rx);
                None
            }
            false => Some(SheetPixels {
                shot: shot_rx,
                covered: located.attached.iter().filter_map(|w| w.area).collect(),
            }),
        };
        let controls = self.read_windows(located, with_actions, located.warnings.clone(), pixels);
        let ((img, took, clean), read) = tokio::join!(capture, controls);
        // (the channel is gone with both reads: the capture is this one's alone again)
        let img = img.map(|shot| Arc::try_unwrap(shot).unwrap_or_else(|shared| (*shared).clone()));
        (Captured { img, took, clean }, read)
    }
}

/// For a window on the bus without controls: the toolkit's fix, only when its cause is
/// established: the page shows no node to accessibility and the process lacks what turns it
/// on (Chromium: the renderer switch on its command line; Firefox: `GNOME_ACCESSIBILITY=1` in
/// its environment). A page that is still loading, or a window with its switch set, gets no
/// hint.
fn established_hint(pid: Option<u32>, document_nodes: usize) -> Option<String> {
    use crate::launch::toolkit::{detect, no_controls_hint, Toolkit, CHROMIUM_A11Y_FLAG};
    let pid = pid?;
    if document_nodes > 0 {
        return None;
    }
    let lacks = |file: &str, arg: &str| {
        std::fs::read(format!("/proc/{pid}/{file}"))
            .map(|text| !has_arg(&text, arg))
            .unwrap_or(false)
    };
    let established = match detect(pid) {
        Toolkit::Chromium => lacks("cmdline", CHROMIUM_A11Y_FLAG),
        Toolkit::Firefox => lacks("environ", "GNOME_ACCESSIBILITY=1"),
        Toolkit::Gtk2
        | Toolkit::Gtk3
        | Toolkit::Gtk4
        | Toolkit::Qt
        | Toolkit::LibreOffice
        | Toolkit::Java
        | Toolkit::Unknown => false,
    };
    if established {
        no_controls_hint(Some(pid))
    } else {
        None
    }
}

/// Whether a `/proc` argument or environment list (NUL-separated; a process that rewrote
/// its title may separate them by spaces) holds `arg` (or `arg=…`).
fn has_arg(list: &[u8], arg: &str) -> bool {
    list.split(|b| *b == 0 || *b == b' ').any(|a| {
        a == arg.as_bytes()
            || a.strip_prefix(arg.as_bytes())
                .is_some_and(|rest| rest.first() == Some(&b'='))
    })
}

/// The phases of an observation, in the debug log.
fn log_phases(stats: &super::observer::ObservationStats) {
    tracing::debug!(
        tree_ms = stats.tree.as_secs_f64() * 1e3,
        details_ms = stats.details.as_secs_f64() * 1e3,
        capture_ms = stats.capture.as_secs_f64() * 1e3,
        encode_ms = stats.encode.as_secs_f64() * 1e3,
        load_wait_ms = stats.load_wait.as_secs_f64() * 1e3,
        pixel_evidence_ms = stats.pixel_evidence.as_secs_f64() * 1e3,
        total_ms = stats.total.as_secs_f64() * 1e3,
        "observation phases"
    );
}

/// Where what covers the window lies: its dialogs, and the popups drawn in it (they cover it
/// as its dialogs do).
fn covers(attached: &[crate::display::DisplayWindow], popups: Vec<Rect>) -> Vec<Rect> {
    attached
        .iter()
        .filter_map(|w| w.area)
        .chain(popups)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The renderer switch is found on a command line however it is separated.
    #[test]
    fn a_switch_is_found_on_a_command_line() {
        let flag = "--force-renderer-accessibility";
        assert!(has_arg(
            b"chromium\0--no-sandbox\0--force-renderer-accessibility\0",
            flag
        ));
        assert!(has_arg(
            b"chromium --force-renderer-accessibility=complete",
            flag
        ));
        assert!(!has_arg(b"chromium\0--no-sandbox\0about:blank\0", flag));
        assert!(!has_arg(
            b"chromium\0--force-renderer-accessibility-x\0",
            flag
        ));
        assert!(has_arg(
            b"A=1\0GNOME_ACCESSIBILITY=1\0",
            "GNOME_ACCESSIBILITY=1"
        ));
        // no process: nothing is established
        assert_eq!(established_hint(None, 0), None);
        // this test's own process is neither Chromium nor Firefox
        assert_eq!(established_hint(Some(std::process::id()), 0), None);
    }
}
