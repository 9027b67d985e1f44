//! UI scenes rendered with known words and boxes, for ufo-vision's tests and benchmark: a menu
//! bar, framed toolbar buttons, a list with a selected row, a form and a status line, in a
//! light or a dark theme, with one system font at one size (Debian's fonts-dejavu-core and
//! fonts-liberation2). Nothing is downloaded.

use ab_glyph::{point, Font, FontVec, PxScale, ScaleFont};
use ufo_core::vision::{DetectedBox, PixelFormat, RegionImage};
use ufo_core::Rect;

/// The fonts scenes are drawn in: (name, file).
pub const FONTS: &[(&str, &str)] = &[
    (
        "DejaVu Sans",
        "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    ),
    (
        "DejaVu Serif",
        "/usr/share/fonts/truetype/dejavu/DejaVuSerif.ttf",
    ),
    (
        "DejaVu Sans Mono",
        "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf",
    ),
    (
        "Liberation Sans",
        "/usr/share/fonts/truetype/liberation2/LiberationSans-Regular.ttf",
    ),
];

/// A scene's colours.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Theme {
    /// Dark text on a light window (Adwaita-like).
    Light,
    /// Light text on a dark window.
    Dark,
}

struct Palette {
    bg: [u8; 3],
    fg: [u8; 3],
    dim: [u8; 3],
    button: [u8; 3],
    frame: [u8; 3],
    accent: [u8; 3],
    on_accent: [u8; 3],
}

impl Theme {
    fn palette(self) -> Palette {
        match self {
            Theme::Light => Palette {
                bg: [246, 245, 244],
                fg: [36, 36, 36],
                dim: [120, 120, 120],
                button: [232, 232, 231],
                frame: [150, 150, 150],
                accent: [53, 132, 228],
                on_accent: [255, 255, 255],
            },
            Theme::Dark => Palette {
                bg: [36, 36, 36],
                fg: [236, 236, 236],
                dim: [160, 160, 160],
                button: [58, 58, 58],
                frame: [110, 110, 110],
                accent: [53, 132, 228],
                on_accent: [255, 255, 255],
            },
        }
    }
}

/// A word drawn, with the box of its ink.
#[derive(Debug, Clone, PartialEq)]
pub struct Truth {
    /// The word.
    pub text: String,
    /// Its ink's box.
    pub rect: Rect,
}

/// A rendered scene: RGB pixels and the words in it.
pub struct Scene {
    /// Width.
    pub w: u32,
    /// Height.
    pub h: u32,
    /// RGB bytes.
    pub rgb: Vec<u8>,
    /// Every word drawn.
    pub words: Vec<Truth>,
}

impl Scene {
    /// The scene as a region at the screen's origin.
    pub fn region(&self) -> RegionImage {
        RegionImage::new((0, 0), self.w, self.h, PixelFormat::Rgb8, self.rgb.clone())
            .expect("a scene holds exactly its pixels")
    }

    fn fill(&mut self, r: Rect, c: [u8; 3]) {
        for y in r.y.max(0)..(r.y + r.h as i32).min(self.h as i32) {
            for x in r.x.max(0)..(r.x + r.w as i32).min(self.w as i32) {
                let i = (y as usize * self.w as usize + x as usize) * 3;
                self.rgb[i..i + 3].copy_from_slice(&c);
            }
        }
    }

    fn frame(&mut self, r: Rect, c: [u8; 3]) {
        self.fill(Rect::new(r.x, r.y, r.w, 1), c);
        self.fill(Rect::new(r.x, r.y + r.h as i32 - 1, r.w, 1), c);
        self.fill(Rect::new(r.x, r.y, 1, r.h), c);
        self.fill(Rect::new(r.x + r.w as i32 - 1, r.y, 1, r.h), c);
    }

    /// Draw `text` with its top-left at (x, y); returns the advance width. Each word's ink
    /// box is recorded.
    fn text(&mut self, font: &FontVec, size: f32, x: f32, y: f32, text: &str, c: [u8; 3]) -> f32 {
        let scale = PxScale::from(size);
        let scaled = font.as_scaled(scale);
        let mut caret = point(x, y + scaled.ascent());
        let mut last = None;
        let mut word: Option<(String, Rect)> = None;
        for ch in text.chars().chain(std::iter::once(' ')) {
            if ch == ' ' {
                if let Some((t, r)) = word.take() {
                    self.words.push(Truth { text: t, rect: r });
                }
                caret.x += scaled.h_advance(scaled.glyph_id(' '));
                last = None;
                continue;
            }
            let id = scaled.glyph_id(ch);
            if let Some(prev) = last {
                caret.x += scaled.kern(prev, id);
            }
            last = Some(id);
            let glyph = id.with_scale_and_position(scale, caret);
            caret.x += scaled.h_advance(id);
            let Some(outline) = font.outline_glyph(glyph) else {
                continue;
            };
            let b = outline.px_bounds();
            let r = Rect::new(
                b.min.x as i32,
                b.min.y as i32,
                (b.max.x - b.min.x) as u32,
                (b.max.y - b.min.y) as u32,
            );
            let (w, h) = (self.w as i32, self.h as i32);
            let rgb = &mut self.rgb;
            outline.draw(|gx, gy, cov| {
                let (px, py) = (r.x + gx as i32, r.y + gy as i32);
                if px < 0 || py < 0 || px >= w || py >= h {
                    return;
                }
                let i = (py as usize * w as usize + px as usize) * 3;
                for (dst, &src) in rgb[i..i + 3].iter_mut().zip(c.iter()) {
                    let under = f32::from(*dst);
                    *dst = (under + (f32::from(src) - under) * cov.min(1.0)).round() as u8;
                }
            });
            word = Some(match word {
                None => (ch.to_string(), r),
                Some((mut t, u)) => {
                    t.push(ch);
                    (t, union(u, r))
                }
            });
        }
        caret.x - x
    }
}

fn union(a: Rect, b: Rect) -> Rect {
    let (x, y) = (a.x.min(b.x), a.y.min(b.y));
    let r = (a.x + a.w as i32).max(b.x + b.w as i32);
    let btm = (a.y + a.h as i32).max(b.y + b.h as i32);
    Rect::new(x, y, (r - x) as u32, (btm - y) as u32)
}

/// Load a font file.
pub fn font(path: &str) -> Option<FontVec> {
    FontVec::try_from_vec(std::fs::read(path).ok()?).ok()
}

const MENU: &[&str] = &["File", "Edit", "View", "Insert", "Format", "Tools", "Help"];
const BUTTONS: &[&str] = &[
    "Open",
    "Save",
    "Refresh",
    "Print Preview",
    "Export",
    "Share",
];
const ITEMS: &[&str] = &[
    "Inbox",
    "Drafts",
    "Sent Mail",
    "Archive",
    "Projects 2024",
    "Receipts",
    "Travel plans",
    "Family photos",
];
const FIELDS: &[(&str, &str)] = &[
    ("Name:", "Ada Lovelace"),
    ("Street:", "12 Analytical Road"),
    ("City:", "London"),
    ("Quantity:", "42"),
];
const CHECKS: &[&str] = &["Remember me", "Send a copy", "Privacy & Security"];
const DIALOG: &[&str] = &["Cancel", "Apply", "OK"];

/// A 1280×800 scene in `font` at `size` px in `theme`.
pub fn render(font: &FontVec, size: f32, theme: Theme) -> Scene {
    let (w, h) = (1280u32, 800u32);
    let p = theme.palette();
    let mut s = Scene {
        w,
        h,
        rgb: Vec::new(),
        words: Vec::new(),
    };
    s.rgb = [p.bg[0], p.bg[1], p.bg[2]].repeat((w * h) as usize);
    let line = (size * 2.2).ceil();
    // Menu bar: items two text heights apart.
    let mut x = 12.0;
    for item in MENU {
        x += s.text(font, size, x, 6.0, item, p.fg) + size * 1.6;
    }
    // Toolbar: framed buttons.
    let mut x = 12.0;
    let top = 6.0 + line;
    for label in BUTTONS {
        let adv = text_width(font, size, label);
        let r = Rect::new(x as i32, top as i32, (adv + size * 1.6) as u32, line as u32);
        s.fill(r, p.button);
        s.frame(r, p.frame);
        s.text(
            font,
            size,
            x + size * 0.8,
            top + (line - size * 1.2) / 2.0,
            label,
            p.fg,
        );
        x += r.w as f32 + size;
    }
    // Sidebar list with a selected row.
    let list_top = top + line * 1.8;
    for (i, item) in ITEMS.iter().enumerate() {
        let y = list_top + i as f32 * line;
        let colour = if i == 2 {
            s.fill(Rect::new(8, y as i32, 300, line as u32), p.accent);
            p.on_accent
        } else {
            p.fg
        };
        s.text(
            font,
            size,
            20.0,
            y + (line - size * 1.2) / 2.0,
            item,
            colour,
        );
    }
    // Form: labels, framed entries, placeholders dim.
    let fx = 360.0;
    for (i, (label, value)) in FIELDS.iter().enumerate() {
        let y = list_top + i as f32 * line * 1.4;
        s.text(font, size, fx, y + (line - size * 1.2) / 2.0, label, p.fg);
        let entry = Rect::new(
            (fx + size * 8.0) as i32,
            y as i32,
            (size * 16.0) as u32,
            line as u32,
        );
        s.frame(entry, p.frame);
        let colour = if i == 3 { p.dim } else { p.fg };
        s.text(
            font,
            size,
            entry.x as f32 + size * 0.5,
            y + (line - size * 1.2) / 2.0,
            value,
            colour,
        );
    }
    // Check boxes: a small framed square before each label.
    let cy = list_top + FIELDS.len() as f32 * line * 1.4 + line;
    for (i, label) in CHECKS.iter().enumerate() {
        let y = cy + i as f32 * line;
        let bx = Rect::new(
            fx as i32,
            (y + line * 0.25) as i32,
            (size * 0.9) as u32,
            (size * 0.9) as u32,
        );
        s.frame(bx, p.frame);
        s.text(
            font,
            size,
            fx + size * 1.6,
            y + (line - size * 1.2) / 2.0,
            label,
            p.fg,
        );
    }
    // Dialog buttons at the bottom right, and a status line.
    let by = h as f32 - line * 2.6;
    let mut x = w as f32 - 20.0;
    for label in DIALOG.iter().rev() {
        let adv = text_width(font, size, label);
        let bw = adv + size * 2.0;
        x -= bw;
        let r = Rect::new(x as i32, by as i32, bw as u32, line as u32);
        s.fill(r, p.button);
        s.frame(r, p.frame);
        s.text(
            font,
            size,
            x + size,
            by + (line - size * 1.2) / 2.0,
            label,
            p.fg,
        );
        x -= size;
    }
    s.fill(Rect::new(0, (h as f32 - line * 1.2) as i32, w, 1), p.frame);
    s.text(
        font,
        size,
        12.0,
        h as f32 - line,
        "Ready: 8 folders, 1024 messages",
        p.dim,
    );
    s
}

fn text_width(font: &FontVec, size: f32, text: &str) -> f32 {
    let scaled = font.as_scaled(PxScale::from(size));
    text.chars()
        .map(|c| scaled.h_advance(scaled.glyph_id(c)))
        .sum()
}

/// Letters and digits only, in lower case: the text two readings are compared by.
pub fn norm(s: &str) -> String {
    s.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

/// Intersection over union.
pub fn iou(a: Rect, b: Rect) -> f32 {
    ufo_core::vision::iou(a, b)
}

/// How a detection compares with a scene's words.
#[derive(Debug, Clone, Copy, Default)]
pub struct Score {
    /// Words drawn.
    pub truth: usize,
    /// Words found: same text (letters and digits, any case), IoU ≥ 0.5, one to one.
    pub found: usize,
    /// Detected words that hold a letter or digit.
    pub detected: usize,
    /// Sum of the found words' IoU.
    pub iou_sum: f32,
}

impl Score {
    /// Found / drawn.
    pub fn recall(&self) -> f32 {
        self.found as f32 / self.truth.max(1) as f32
    }
    /// Found / detected.
    pub fn precision(&self) -> f32 {
        self.found as f32 / self.detected.max(1) as f32
    }
    /// Mean IoU of the found words.
    pub fn mean_iou(&self) -> f32 {
        self.iou_sum / self.found.max(1) as f32
    }
    /// Both added.
    pub fn add(&mut self, o: Score) {
        self.truth += o.truth;
        self.found += o.found;
        self.detected += o.detected;
        self.iou_sum += o.iou_sum;
    }
}

/// Score `boxes` (their words) against `truth`.
pub fn score(truth: &[Truth], boxes: &[DetectedBox]) -> Score {
    let detected: Vec<(String, Rect)> = boxes
        .iter()
        .flat_map(|b| b.words.iter())
        .map(|w| (norm(&w.text), w.rect))
        .filter(|(t, _)| !t.is_empty())
        .collect();
    let mut used = vec![false; detected.len()];
    let truth: Vec<&Truth> = truth.iter().filter(|t| !norm(&t.text).is_empty()).collect();
    let mut s = Score {
        truth: truth.len(),
        detected: detected.len(),
        ..Score::default()
    };
    for t in truth {
        let want = norm(&t.text);
        let best = detected
            .iter()
            .enumerate()
            .filter(|(i, (text, _))| !used[*i] && *text == want)
            .map(|(i, (_, r))| (i, iou(t.rect, *r)))
            .filter(|(_, v)| *v >= 0.5)
            .max_by(|a, b| a.1.total_cmp(&b.1));
        if let Some((i, v)) = best {
            used[i] = true;
            s.found += 1;
            s.iou_sum += v;
        }
    }
    s
}

/// A 240×64 framed display (a calculator's) showing `text` at `size` px, dark on light.
pub fn render_display(font: &FontVec, size: f32, text: &str) -> Scene {
    let (w, h) = (240u32, 64u32);
    let mut s = Scene {
        w,
        h,
        rgb: [250u8, 250, 250].repeat((w * h) as usize),
        words: Vec::new(),
    };
    s.frame(Rect::new(4, 4, w - 8, h - 8), [0, 0, 0]);
    let adv = text_width(font, size, text);
    s.text(
        font,
        size,
        w as f32 - 20.0 - adv,
        (h as f32 - size * 1.2) / 2.0,
        text,
        [0, 0, 0],
    );
    s
}
