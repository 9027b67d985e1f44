//! The simulated screen: where windows and controls are, and the pictures of them.

use ufo_core::{Rect, WindowId, WindowInfo};

use super::world::*;
use crate::annotate::RgbaImage;

pub(crate) const WIN_W: u32 = 480;
pub(crate) const TITLE_H: u32 = 28;
pub(crate) const MARGIN: u32 = 12;
pub(crate) const SLOT_H: u32 = 30;
pub(crate) const CTRL_H: u32 = 24;
pub(crate) const FIRST_PID: u32 = 1000;

pub(crate) fn window_rect(index: usize, n_controls: usize) -> Rect {
    let offset = 40 + 30 * (index.min(20) as i32);
    let slots = n_controls.clamp(1, 200) as u32;
    Rect {
        x: offset,
        y: offset,
        w: WIN_W,
        h: TITLE_H + 2 * MARGIN + slots * SLOT_H - (SLOT_H - CTRL_H),
    }
}

/// The rectangle of control slot `slot`, in window pixels.
pub(crate) fn slot_rect(slot: usize) -> Rect {
    Rect {
        x: MARGIN as i32,
        y: (TITLE_H + MARGIN) as i32 + (slot.min(MAX_SLOT) as i32) * SLOT_H as i32,
        w: WIN_W - 2 * MARGIN,
        h: CTRL_H,
    }
}

pub(crate) fn on_screen(r: Rect, win: Rect) -> Rect {
    Rect {
        x: win.x + r.x,
        y: win.y + r.y,
        ..r
    }
}

pub(crate) fn window_info(index: usize, app: &SimApp) -> WindowInfo {
    WindowInfo {
        id: WindowId::new(app.name.clone()),
        title: app.title.clone(),
        app_name: app.app_name().to_string(),
        process: app.process.clone(),
        // a further window shares its application's process
        pid: Some(FIRST_PID + app.owner.as_ref().map_or(index, |(_, main)| *main) as u32),
        rect: Some(window_rect(index, app.controls.len())),
    }
}

/// Draw a window: title bar, then each visible control as a box in its slot, with a dark bar
/// standing for its value (so typing shows in the picture).
pub(crate) fn render_window(app: &SimApp, index: usize) -> RgbaImage {
    let win = window_rect(index, app.controls.len());
    let mut img = RgbaImage::new(win.w, win.h, [240, 240, 240, 255]);
    img.fill_rect(
        Rect {
            x: 0,
            y: 0,
            w: win.w,
            h: TITLE_H,
        },
        [60, 90, 140, 255],
    );
    img.stroke_rect(
        Rect {
            x: 0,
            y: 0,
            w: win.w,
            h: win.h,
        },
        1,
        [60, 90, 140, 255],
    );
    let last = last_visible(&app.controls);
    for (slot, c) in app.controls.iter().enumerate() {
        if !drawn(&app.controls, slot, last) {
            continue;
        }
        let r = slot_rect(slot);
        let fill = if !c.enabled {
            [200, 200, 200, 255]
        } else {
            match c.role.to_ascii_lowercase().as_str() {
                "button" | "menu item" | "menuitem" | "tab" => [225, 225, 225, 255],
                "edit" | "text" | "document" | "entry" => [255, 255, 255, 255],
                "table" | "list" | "tree" | "grid" => [232, 240, 255, 255],
                _ => [245, 245, 228, 255],
            }
        };
        img.fill_rect(r, fill);
        img.stroke_rect(r, 1, [120, 120, 120, 255]);
        let text_len = c.value.as_deref().unwrap_or(&c.name).chars().count() as u32;
        if text_len > 0 {
            img.fill_rect(
                Rect {
                    x: r.x + 40,
                    y: r.y + 9,
                    w: (text_len * 5).min(r.w - 46),
                    h: 6,
                },
                [50, 50, 50, 255],
            );
        }
    }
    img
}
