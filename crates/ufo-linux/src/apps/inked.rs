//! Which visible cells of a sheet show nothing on the screen (issue 48, the first look).
//! Asking LibreOffice a cell's text makes it build the cell's object, the most of what reading
//! a sheet costs: the 690 visible cells of a fresh sheet took 47 ms of a first look's 135 ms
//! (release build, docs/desktop.md). A cell whose inside is one colour in the window's
//! capture shows no text to a person, so its text is not asked: it is taken as empty, and
//! kept as not read (`Cell::unread`), to be read when an action enters text into it or a
//! later capture shows something there.
//!
//! The pixels are trusted only when they match the grid: the sheet's grid lines must lie
//! where the cells' extents say (a capture taken before LibreOffice drew the sheet, a sheet
//! without grid lines, extents off by a pixel: every cell is read), and the cells under
//! another window (a dialog of the window) are read. Nothing here asks the bus or the
//! display.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use ufo_core::Rect;

use crate::display::pixels::{intersect, RgbImage};

/// The window's capture as a sheet read is handed it while it is taken (beside the read).
#[derive(Clone)]
pub(crate) enum Shot {
    /// Not taken yet.
    Pending,
    /// Taken: the screen rectangle `area` it shows.
    Taken(Arc<RgbImage>, Rect),
    /// Not taken (the window is placed nowhere, the display failed): every cell is read.
    Missing,
}

/// What a sheet read needs to tell from the pixels which cells show nothing.
pub(crate) struct SheetPixels {
    /// The window's capture, sent once it is taken.
    pub shot: tokio::sync::watch::Receiver<Shot>,
    /// What lies on top of the window in the capture (its dialogs): the cells there are read.
    pub covered: Vec<Rect>,
}

/// The most columns and rows whose grid lines are sampled (a sheet's read is cut to 30
/// columns and 60 rows).
const MAX_LINES: usize = 64;

/// Share of the places sampled on the grid lines that must show a line for the pixels to be
/// trusted (text running over a boundary hides the line there; the cell cursor draws over
/// a few).
const LINES_NEEDED: f64 = 0.8;

/// A cell on the screen: its (row, column) and its rectangle (screen coordinates, grid
/// lines included).
pub(crate) type PlacedCell = ((u32, u32), Rect);

/// Where the inside of a cell at `cell` (screen coordinates) lies in a capture of `area`:
/// image coordinates `(x0, y0, x1, y1)`, end exclusive, without the grid lines LibreOffice
/// draws on its last column and last row of pixels nor the pixel next to them (the cell
/// cursor's frame). `None` when the pixels cannot tell: the cell is not wholly in the
/// capture, lies under a window on top (`covered`), or has no inside.
pub(crate) fn inside(cell: Rect, area: Rect, covered: &[Rect]) -> Option<(u32, u32, u32, u32)> {
    if intersect(cell, area) != Some(cell) || covered.iter().any(|c| intersect(cell, *c).is_some())
    {
        return None;
    }
    let (x0, y0) = ((cell.x - area.x + 1) as u32, (cell.y - area.y + 1) as u32);
    let (x1, y1) = (
        (cell.x - area.x) as u32 + cell.w.checked_sub(2)?,
        (cell.y - area.y) as u32 + cell.h.checked_sub(2)?,
    );
    (x1 > x0 && y1 > y0).then_some((x0, y0, x1, y1))
}

/// The colour of pixel (x, y) of `img`; `None` outside it.
fn pixel(img: &RgbImage, x: u32, y: u32) -> Option<[u8; 3]> {
    if x >= img.width || y >= img.height {
        return None;
    }
    let i = (y as usize * img.width as usize + x as usize) * 3;
    Some([
        *img.data.get(i)?,
        *img.data.get(i + 1)?,
        *img.data.get(i + 2)?,
    ])
}

/// Whether every pixel of `(x0, y0, x1, y1)` (end exclusive) in `img` is of one colour.
pub(crate) fn one_colour(img: &RgbImage, (x0, y0, x1, y1): (u32, u32, u32, u32)) -> bool {
    let Some(first) = pixel(img, x0, y0) else {
        return false;
    };
    if x1 > img.width || y1 > img.height {
        return false;
    }
    let row = img.width as usize * 3;
    (y0..y1).all(|y| {
        let start = y as usize * row;
        img.data
            .get(start + x0 as usize * 3..start + x1 as usize * 3)
            .is_some_and(|px| px.chunks_exact(3).all(|p| p == first.as_slice()))
    })
}

/// Whether the grid lines lie where `cells` say, in a capture `img` of `area`: at enough of
/// the places sampled ([`LINES_NEEDED`]), the pixel on a column's right edge differs from
/// the one left of it (its vertical line) and the one on a row's bottom edge from the one
/// above it (its horizontal line), each line sampled in the middle of every row or column
/// (at most [`MAX_LINES`] of each). Both kinds of line must be sampled.
pub(crate) fn grid_seen(img: &RgbImage, area: Rect, cells: &[PlacedCell]) -> bool {
    let at = |x: i32, y: i32| {
        let (x, y) = (x - area.x, y - area.y);
        (x >= 0 && y >= 0)
            .then(|| pixel(img, x as u32, y as u32))
            .flatten()
    };
    // the columns' (x, width) and the rows' (y, height)
    let mut cols: BTreeMap<u32, (i32, u32)> = BTreeMap::new();
    let mut rows: BTreeMap<u32, (i32, u32)> = BTreeMap::new();
    for &((r, c), rect) in cells {
        cols.entry(c).or_insert((rect.x, rect.w));
        rows.entry(r).or_insert((rect.y, rect.h));
    }
    let cols: Vec<(i32, u32)> = cols
        .into_values()
        .filter(|s| s.1 >= 3)
        .take(MAX_LINES)
        .collect();
    let rows: Vec<(i32, u32)> = rows
        .into_values()
        .filter(|s| s.1 >= 3)
        .take(MAX_LINES)
        .collect();
    let line =
        |a: Option<[u8; 3]>, b: Option<[u8; 3]>| matches!((a, b), (Some(a), Some(b)) if a != b);
    let share = |seen: usize, of: usize| of > 0 && seen as f64 >= LINES_NEEDED * of as f64;
    let mut vertical = 0;
    let mut horizontal = 0;
    for &(x, w) in &cols {
        for &(y, h) in &rows {
            let (right, mid_y) = (x + w as i32 - 1, y + h as i32 / 2);
            vertical += usize::from(line(at(right, mid_y), at(right - 1, mid_y)));
            let (bottom, mid_x) = (y + h as i32 - 1, x + w as i32 / 2);
            horizontal += usize::from(line(at(mid_x, bottom), at(mid_x, bottom - 1)));
        }
    }
    let of = cols.len() * rows.len();
    share(vertical, of) && share(horizontal, of)
}

/// The cells among `cells` (screen rectangles) that show nothing in a capture `img` of
/// `area`: their inside is of one colour. Empty when the grid is not seen where the cells
/// say ([`grid_seen`]: then the pixels are not trusted and every cell is read); a cell the
/// pixels cannot tell ([`inside`]) is never among them.
pub(crate) fn blank_cells(
    img: &RgbImage,
    area: Rect,
    covered: &[Rect],
    cells: &[PlacedCell],
) -> HashSet<(u32, u32)> {
    if !grid_seen(img, area, cells) {
        return HashSet::new();
    }
    cells
        .iter()
        .filter(|(_, rect)| inside(*rect, area, covered).is_some_and(|r| one_colour(img, r)))
        .map(|(cell, _)| *cell)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const GRID: [u8; 3] = [192, 192, 192];
    const INK: [u8; 3] = [20, 20, 20];

    /// A capture of a sheet of `rows` × `cols` cells of 20 × 10 pixels from (0, 0), grid lines
    /// on each cell's last column and row of pixels, `ink` pixels drawn black.
    fn sheet(rows: u32, cols: u32, ink: &[(u32, u32)]) -> (RgbImage, Vec<PlacedCell>) {
        let (w, h) = (cols * 20, rows * 10);
        let mut img = RgbImage {
            width: w,
            height: h,
            data: vec![255; (w * h * 3) as usize],
        };
        let mut set = |x: u32, y: u32, c: [u8; 3]| {
            let i = ((y * w + x) * 3) as usize;
            img.data[i..i + 3].copy_from_slice(&c);
        };
        for y in 0..h {
            for x in 0..w {
                if x % 20 == 19 || y % 10 == 9 {
                    set(x, y, GRID);
                }
            }
        }
        for &(x, y) in ink {
            set(x, y, INK);
        }
        let cells = (0..rows)
            .flat_map(|r| (0..cols).map(move |c| (r, c)))
            .map(|(r, c)| {
                let rect = Rect {
                    x: c as i32 * 20,
                    y: r as i32 * 10,
                    w: 20,
                    h: 10,
                };
                ((r, c), rect)
            })
            .collect();
        (img, cells)
    }

    fn area(img: &RgbImage) -> Rect {
        Rect {
            x: 0,
            y: 0,
            w: img.width,
            h: img.height,
        }
    }

    /// A cell's inside leaves out its grid lines and the pixel next to them; a cell not wholly
    /// captured, covered or too small has none.
    #[test]
    fn a_cells_inside_leaves_its_grid_lines_out() {
        let area = Rect {
            x: 100,
            y: 50,
            w: 200,
            h: 100,
        };
        let cell = Rect {
            x: 120,
            y: 60,
            w: 20,
            h: 10,
        };
        assert_eq!(inside(cell, area, &[]), Some((21, 11, 38, 18)));
        let half_out = Rect { x: 290, ..cell };
        assert_eq!(inside(half_out, area, &[]), None, "not wholly captured");
        let dialog = Rect {
            x: 135,
            y: 65,
            w: 50,
            h: 50,
        };
        assert_eq!(inside(cell, area, &[dialog]), None, "under a dialog");
        let thin = Rect { h: 3, ..cell };
        assert_eq!(inside(thin, area, &[]), None, "no inside");
    }

    /// Text anywhere inside a cell, even a dot next to its left edge, makes it a cell that
    /// shows something; the others show nothing.
    #[test]
    fn cells_with_ink_are_read_the_others_not() {
        // B1 a dot at its left edge, A2 a glyph by its right edge, C3 a pixel at its top
        let (img, cells) = sheet(3, 3, &[(21, 5), (17, 14), (18, 15), (45, 21)]);
        let blank = blank_cells(&img, area(&img), &[], &cells);
        let mut shows: Vec<(u32, u32)> = cells
            .iter()
            .map(|(c, _)| *c)
            .filter(|c| !blank.contains(c))
            .collect();
        shows.sort();
        assert_eq!(shows, [(0, 1), (1, 0), (2, 2)]);
        assert_eq!(blank.len(), 6);
    }

    /// A uniform background other than white (a filled cell) shows nothing; two colours do.
    #[test]
    fn one_colour_is_any_colour() {
        let (mut img, _) = sheet(1, 1, &[]);
        for px in img.data.chunks_exact_mut(3) {
            px.copy_from_slice(&[200, 230, 250]);
        }
        assert!(one_colour(&img, (1, 1, 18, 8)));
        img.data[(5 * 20 + 5) * 3] = 0;
        assert!(!one_colour(&img, (1, 1, 18, 8)));
        assert!(!one_colour(&img, (30, 1, 40, 8)), "outside the image");
    }

    /// A capture without the grid where the cells say (not drawn yet, grid lines hidden,
    /// extents a pixel off) is not trusted: no cell is taken as blank.
    #[test]
    fn pixels_off_the_grid_are_not_trusted() {
        let (img, cells) = sheet(4, 4, &[]);
        assert_eq!(blank_cells(&img, area(&img), &[], &cells).len(), 16);
        // a sheet not drawn yet: one colour everywhere
        let empty = RgbImage {
            width: img.width,
            height: img.height,
            data: vec![255; img.data.len()],
        };
        assert!(blank_cells(&empty, area(&empty), &[], &cells).is_empty());
        // the extents a pixel off the lines
        let moved: Vec<PlacedCell> = cells
            .iter()
            .map(|(c, r)| (*c, Rect { x: r.x + 1, ..*r }))
            .collect();
        assert!(!grid_seen(&img, area(&img), &moved));
        assert!(blank_cells(&img, area(&img), &[], &moved).is_empty());
        // a title over the first row's boundaries hides its lines there: still trusted
        let title: Vec<(u32, u32)> = (0..120).map(|x| (x, 5)).collect();
        let (img, cells) = sheet(6, 6, &title);
        assert!(grid_seen(&img, area(&img), &cells));
        // text over the boundaries of two rows of three: not
        let (img, cells) = sheet(
            3,
            6,
            &[title.clone(), title.iter().map(|&(x, _)| (x, 15)).collect()].concat(),
        );
        assert!(!grid_seen(&img, area(&img), &cells));
    }
}
