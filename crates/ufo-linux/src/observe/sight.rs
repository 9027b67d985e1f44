//! Sight in the observation (docs/sight.md, "When" and "Merged with the tree"): after the
//! tree's controls are arranged, the window's capture is read where `when_to_detect` says,
//! and what the detector finds where no tree control lies is listed after the tree's
//! controls, with source `ocr`. The capture is the one the observation already took through
//! the display seam, so X11 and the Wayland displays get the same.

use std::time::Instant;

use ufo_core::vision::pixel_changes::{self, PixelChange, ReadThere};
use ufo_core::vision::{
    merge_with_tree, when_to_detect, DetectDecision, DetectError, DetectRequest, DetectedBox,
    Hints, PixelFormat, RegionImage, VisionMode,
};
use ufo_core::{Control, Rect};

use super::candidates::silent_nodes;
use super::observer::{ObservationStats, Observer};
use crate::a11y::bus::AppTree;
use crate::controls::{self, ControlDetail, CtlInfo, Fetched};
use crate::display::pixels::RgbImage;
use crate::display::{DisplayWindow, WinId};

/// The prefix of a detected control's id (`ufo_core::vision::merge::detected_id`): the
/// actions know it has no tree node and act at its rectangle.
pub(crate) const DETECTED_ID_PREFIX: &str = "ocr:";

/// The most silent nodes (a canvas, an image the tree does not list) of a window whose
/// extents are asked for: each costs a call, and each region read costs a detection.
const MAX_SILENT: usize = 8;

/// Whether a control known to the actions was read in the pixels (no tree node behind it).
pub(crate) fn is_detected(c: &CtlInfo) -> bool {
    c.bus.is_empty() && c.path.starts_with(DETECTED_ID_PREFIX)
}

/// What the observation saw of the window, for [`Observer::add_detected`].
pub(super) struct Seen<'a> {
    /// Its capture (`None`: no screenshot, nothing to read).
    pub img: Option<&'a RgbImage>,
    /// Where it is on the screen.
    pub area: Rect,
    /// Its id.
    pub window: WinId,
    /// Its attached dialogs: their controls come from their own trees.
    pub attached: &'a [DisplayWindow],
    /// A modal dialog is open: the window's own controls are not listed, read or not.
    pub modal: bool,
    /// Screen rectangles of drawn nodes the tree does not list ([`Observer::silent_regions`]).
    pub silent: &'a [Rect],
}

/// Whether `r`'s centre lies inside `d`.
fn centre_inside(r: Rect, d: Rect) -> bool {
    let (cx, cy) = (
        2 * i64::from(r.x) + i64::from(r.w),
        2 * i64::from(r.y) + i64::from(r.h),
    );
    cx >= 2 * i64::from(d.x)
        && cy >= 2 * i64::from(d.y)
        && cx < 2 * (i64::from(d.x) + i64::from(d.w))
        && cy < 2 * (i64::from(d.y) + i64::from(d.h))
}

impl Observer<'_> {
    /// Add what the pixels show where the tree is silent to `fetched` (arranged tree
    /// controls of the window at `area`, captured as `img`). A failed read is a warning: the
    /// tree's controls stand.
    pub(super) async fn add_detected(
        &self,
        seen: Seen<'_>,
        fetched: &mut Vec<Fetched>,
        warnings: &mut Vec<String>,
        stats: &mut ObservationStats,
    ) {
        let Seen {
            img,
            area,
            window,
            attached,
            modal,
            silent,
        } = seen;
        let asked = self.pixels_asked.lock().take(window);
        let (Some(sight), Some(img), false) = (&self.config.sight, img, modal) else {
            return;
        };
        let dialogs: Vec<Rect> = attached.iter().filter_map(|w| w.area).collect();
        let tree: Vec<Control> = fetched.iter().map(|f| f.detail.control.clone()).collect();
        let silent: Vec<Rect> = silent
            .iter()
            .filter(|r| !dialogs.iter().any(|d| centre_inside(**r, *d)))
            .copied()
            .collect();
        let hints = Hints {
            model_asked: asked,
            silent: &silent,
        };
        let regions = match when_to_detect(sight.mode, area, &tree, hints, &sight.policy) {
            DetectDecision::Detect { regions, .. } => regions,
            DetectDecision::Skip(_) => return,
        };
        stats.pixels_read = true;
        let t = Instant::now();
        let mut boxes: Vec<DetectedBox> = Vec::new();
        for region in regions {
            let Some(pixels) = crop(img, area, region) else {
                continue;
            };
            match sight
                .detector
                .detect(&pixels, DetectRequest::Controls)
                .await
            {
                Ok(mut b) => boxes.append(&mut b),
                Err(e) => {
                    warnings.push(detect_warning(&e));
                    break;
                }
            }
        }
        boxes.retain(|b| !dialogs.iter().any(|d| centre_inside(b.rect, *d)));
        let n_tree = tree.len();
        let added: Vec<Control> = merge_with_tree(tree, &boxes)
            .into_iter()
            .skip(n_tree)
            .collect();
        stats.detected = added.len();
        stats.sight = t.elapsed();
        fetched.extend(added.into_iter().map(|c| detected_fetched(c, window)));
    }
}

impl Observer<'_> {
    /// The change evidence in pixels of window `window` captured as `img` at `area`: where
    /// it differs from its capture before the last action on it, and the text read there
    /// (docs/sight.md, "Change evidence"). `None` when sight did not read this window's
    /// pixels (`pixels_read`: a window with a full tree is observed as fast as without the
    /// evidence, its controls' changes say what changed), there is no capture before, or the
    /// window changed size. At most three reads of the cached detector, each of at most half
    /// the window.
    pub(super) async fn pixel_evidence(
        &self,
        window: WinId,
        img: Option<&RgbImage>,
        area: Option<Rect>,
        pixels_read: bool,
    ) -> Option<Vec<PixelChange>> {
        let sight =
            self.config.sight.as_ref().filter(|s| {
                s.mode != VisionMode::Off && self.config.pixel_evidence && pixels_read
            })?;
        let area = area?;
        let now = crop(img?, area, area)?;
        let (before, pointer) = {
            let mut trail = self.pixel_trail.lock();
            (trail.seen(window, now.clone()), trail.pointer())
        };
        let ignore = pointer
            .filter(|_| self.display.captures_may_show_pointer())
            .map(|(x, y)| pixel_changes::around_pointer(x, y));
        let rects = pixel_changes::changed_areas(&before?, &now, ignore)?;
        let whole = now.rect();
        let mut out = Vec::with_capacity(rects.len());
        for rect in rects {
            let part = pixel_changes::reading_area(rect, whole)
                .filter(|_| pixel_changes::worth_reading(rect, whole))
                .and_then(|a| now.part(a));
            let read = match part {
                None => ReadThere::NotRead,
                Some(p) => match sight.detector.detect(&p, DetectRequest::ReadText).await {
                    Ok(boxes) => {
                        let text = boxes
                            .into_iter()
                            .map(|b| b.text)
                            .filter(|t| !t.trim().is_empty())
                            .collect::<Vec<_>>()
                            .join("\n");
                        if text.is_empty() {
                            ReadThere::Nothing
                        } else {
                            ReadThere::Text(text)
                        }
                    }
                    Err(e) => {
                        tracing::debug!(error = %e, "the changed pixels were not read");
                        ReadThere::NotRead
                    }
                },
            };
            out.push(PixelChange { rect, read });
        }
        Some(out)
    }

    /// `read_pixels` on window `xid`: its next observation reads the whole window (the
    /// model asked, docs/sight.md "When"); refused, saying why, where nothing can be read.
    pub(crate) fn ask_for_pixels(&self, xid: WinId) -> Result<String, crate::LinuxError> {
        if !self.pixels_readable() {
            return Err(crate::LinuxError::Unsupported(
                "read_pixels: text detection is off here (no ufo-sight worker, or [vision] mode \
                 = off); `ufo doctor` says which and how to turn it on"
                    .into(),
            ));
        }
        self.pixels_asked.lock().ask(xid);
        Ok(
            "the window's pixels are read in the next observation: what is found there is \
            listed as controls with source ocr"
                .into(),
        )
    }

    /// Whether this desktop reads pixels when the model asks (the prompt offers
    /// `read_pixels` only then).
    pub(crate) fn pixels_readable(&self) -> bool {
        self.config
            .sight
            .as_ref()
            .is_some_and(|s| s.mode != VisionMode::Off)
    }

    /// Screen rectangles of the shown nodes under `frame` that the tree marks as drawn content
    /// and does not list as controls (a web page's `<canvas>`, an image), clipped to the
    /// window `win`; `offset` places the toolkit's extents on the screen. Asked only in `auto`
    /// (in `always` the whole window is read, `off` reads nothing), at most [`MAX_SILENT`].
    pub(super) async fn silent_regions(
        &self,
        bus: &str,
        (tree, frame): (&AppTree, &str),
        offset: (i32, i32),
        win: Rect,
    ) -> Vec<Rect> {
        let auto = matches!(&self.config.sight, Some(s) if s.mode == VisionMode::Auto);
        if !auto {
            return Vec::new();
        }
        let nodes = silent_nodes(tree, frame, self.config.walk_max_nodes, MAX_SILENT);
        let extents =
            futures::future::join_all(nodes.iter().map(|n| self.bus.extents(bus, &n.path))).await;
        extents
            .into_iter()
            .filter_map(Result::ok)
            .filter(|&(x, y, w, h)| x != i32::MIN && y != i32::MIN && w >= 2 && h >= 2)
            .filter_map(|(x, y, w, h)| {
                let r = Rect::new(
                    x.saturating_add(offset.0),
                    y.saturating_add(offset.1),
                    w as u32,
                    h as u32,
                );
                crate::display::pixels::intersect(r, win)
            })
            .collect()
    }
}

/// The warning for a failed read: the error already says what to do.
fn detect_warning(e: &DetectError) -> String {
    format!("the window's pixels were not read, only its accessibility tree is listed: {e}")
}

/// A detected control as the actions know it: no bus or path (the id, in `path`, marks it),
/// its rectangle, its window.
fn detected_fetched(control: Control, window: WinId) -> Fetched {
    let info = CtlInfo {
        place: Default::default(),
        bus: String::new(),
        path: control.id.clone(),
        name: control.name.clone(),
        rect: control.rect,
        actions: Vec::new(),
        ifaces: 0,
        states: 0,
        window,
        seen: controls::Seen {
            role: 0,
            name: control.name.clone(),
            label: 0,
        },
        part: None,
        shown_on_hover: false,
    };
    Fetched {
        detail: ControlDetail {
            control,
            states: Vec::new(),
            actions: Vec::new(),
        },
        info,
        by_container: None,
    }
}

/// The pixels of `region` (screen coordinates) cut from `img`, the capture of `area`; `None`
/// when they do not overlap.
pub(crate) fn crop(img: &RgbImage, area: Rect, region: Rect) -> Option<RegionImage> {
    let x0 = region.x.max(area.x);
    let y0 = region.y.max(area.y);
    let right = |r: Rect| i64::from(r.x) + i64::from(r.w);
    let bottom = |r: Rect| i64::from(r.y) + i64::from(r.h);
    let x1 = right(region)
        .min(right(area))
        .min(i64::from(area.x) + i64::from(img.width));
    let y1 = bottom(region)
        .min(bottom(area))
        .min(i64::from(area.y) + i64::from(img.height));
    let (w, h) = (x1 - i64::from(x0), y1 - i64::from(y0));
    if w <= 0 || h <= 0 {
        return None;
    }
    let (w, h) = (w as usize, h as usize);
    let (ox, oy) = ((x0 - area.x) as usize, (y0 - area.y) as usize);
    let stride = img.width as usize * 3;
    let mut out = Vec::with_capacity(w * h * 3);
    for row in oy..oy + h {
        let start = row * stride + ox * 3;
        out.extend_from_slice(img.data.get(start..start + w * 3)?);
    }
    RegionImage::new((x0, y0), w as u32, h as u32, PixelFormat::Rgb8, out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn img(w: u32, h: u32) -> RgbImage {
        // each pixel's red is its x, green its y
        let mut data = Vec::new();
        for y in 0..h {
            for x in 0..w {
                data.extend_from_slice(&[x as u8, y as u8, 0]);
            }
        }
        RgbImage {
            width: w,
            height: h,
            data,
        }
    }

    #[test]
    fn a_region_is_cut_from_the_capture_in_screen_coordinates() {
        let area = Rect::new(100, 50, 20, 10);
        let r = crop(&img(20, 10), area, Rect::new(105, 52, 3, 2)).expect("inside");
        assert_eq!(r.rect(), Rect::new(105, 52, 3, 2));
        assert_eq!(
            &r.pixels()[..3],
            &[5, 2, 0],
            "its first pixel is the capture's (5, 2)"
        );
        assert_eq!(
            &r.pixels()[15..],
            &[7, 3, 0],
            "its last the capture's (7, 3)"
        );
    }

    #[test]
    fn a_region_is_clipped_to_the_capture_and_outside_is_nothing() {
        let area = Rect::new(0, 0, 20, 10);
        let r = crop(&img(20, 10), area, Rect::new(15, -5, 50, 50)).expect("overlaps");
        assert_eq!(r.rect(), Rect::new(15, 0, 5, 10));
        assert!(crop(&img(20, 10), area, Rect::new(30, 0, 5, 5)).is_none());
        // a capture smaller than the area it claims does not read past its end
        let r = crop(&img(10, 10), area, area).expect("the captured part");
        assert_eq!(r.rect(), Rect::new(0, 0, 10, 10));
    }

    #[test]
    fn a_box_is_inside_a_dialog_by_its_centre() {
        let dialog = Rect::new(100, 100, 200, 100);
        assert!(centre_inside(Rect::new(90, 140, 40, 10), dialog));
        assert!(!centre_inside(Rect::new(60, 140, 40, 10), dialog));
        assert!(!centre_inside(Rect::new(150, 195, 20, 20), dialog));
    }

    #[test]
    fn a_detected_control_is_known_by_its_id_without_a_node() {
        let c = ufo_core::vision::merge::detected_control(&DetectedBox {
            text: "7".into(),
            rect: Rect::new(1, 2, 3, 4),
            confidence: 0.9,
            kind: ufo_core::vision::DetectedKind::FramedText,
            words: Vec::new(),
        });
        let f = detected_fetched(c, WinId(5));
        assert!(is_detected(&f.info));
        assert_eq!(f.info.path, "ocr:1,2,3,4");
        assert_eq!(f.detail.control.role, "button");
    }
}
