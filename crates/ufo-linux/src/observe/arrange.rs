//! Steps 3 to 5 of an observation, without a call: the controls in reading order without
//! what a dialog covers ([`arrange`]), alike unnamed items grouped and table rows folded, the
//! labels drawn on the screenshot, and the labels the actions will use ([`labelled`]).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use ufo_core::{Rect, Screenshot};

use super::noise;
use crate::apps::office;
use crate::controls::{Fetched, Labelled};
use crate::display::annotate::{self, Mark};
use crate::display::pixels::RgbImage;
use crate::LinuxError;

/// Reading order: rows top to bottom (a control joins a row when its top is above the middle
/// of the row's first control), left to right within a row. Returns the permutation.
pub(crate) fn reading_order(rects: &[Rect]) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..rects.len()).collect();
    idx.sort_by_key(|&i| (rects[i].y, rects[i].x, i));
    let mut out = Vec::with_capacity(idx.len());
    let mut row: Vec<usize> = Vec::new();
    let mut anchor: Option<Rect> = None;
    for i in idx {
        let r = rects[i];
        let joins = anchor.is_some_and(|a| {
            let half = (a.h.min(r.h) / 2).max(1) as i32;
            r.y < a.y + half
        });
        if !joins {
            row.sort_by_key(|&j| (rects[j].x, rects[j].y, j));
            out.append(&mut row);
            anchor = Some(r);
        }
        row.push(i);
    }
    row.sort_by_key(|&j| (rects[j].x, rects[j].y, j));
    out.append(&mut row);
    out
}

/// Step 5: the controls of this observation, by id, each with its label, for the actions
/// that name them once it is handed out (those of the window's earlier observation are
/// forgotten then).
pub(super) fn labelled(fetched: &[Fetched]) -> Labelled {
    fetched
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let mut info = f.info.clone();
            info.seen.label = i + 1;
            (f.detail.control.id.clone(), info)
        })
        .collect()
}

/// Step 3: the controls in label order: each group in reading order, without LibreOffice's
/// shadow menus and what an open menu covers, and without the main window's controls that a
/// dialog or a popup covers (`covers`: where they lie; all of them under a modal dialog).
pub(super) fn arrange(groups: Vec<Vec<Fetched>>, covers: &[Rect], modal: bool) -> Vec<Fetched> {
    let dialog_rects = covers;
    let n_groups = groups.len();
    let mut fetched: Vec<Fetched> = Vec::new();
    for (gi, group) in groups.into_iter().enumerate() {
        let group = without_shadows_and_covered(group);
        let is_main = gi + 1 == n_groups && !dialog_rects.is_empty();
        if is_main && modal {
            continue;
        }
        let rects: Vec<Rect> = group.iter().map(|f| f.detail.control.rect).collect();
        let order = reading_order(&rects);
        let mut group: Vec<Option<Fetched>> = group.into_iter().map(Some).collect();
        for i in order {
            let Some(f) = group[i].take() else { continue };
            if is_main {
                let r = f.detail.control.rect;
                let (cx, cy) = (r.x + r.w as i32 / 2, r.y + r.h as i32 / 2);
                if dialog_rects.iter().any(|d| {
                    cx >= d.x && cy >= d.y && cx < d.x + d.w as i32 && cy < d.y + d.h as i32
                }) {
                    continue;
                }
            }
            fetched.push(f);
        }
    }
    nearest_out_of_view(fetched)
}

/// Most controls out of view listed below the visible part of a page, above it, and aside.
pub(super) const OUT_OF_VIEW_MAX: (usize, usize, usize) = (40, 20, 10);

/// The controls with those out of view in a page kept only up to [`OUT_OF_VIEW_MAX`], the
/// nearest to the visible part of each place (a long page lists what a scroll or two
/// reaches, not its whole length).
pub(super) fn nearest_out_of_view(fetched: Vec<Fetched>) -> Vec<Fetched> {
    use ufo_core::Place;
    let rect_of = |i: usize| fetched[i].detail.control.rect;
    let of = |place: Place| -> Vec<usize> {
        (0..fetched.len())
            .filter(|&i| fetched[i].detail.control.states.place == place)
            .collect()
    };
    let (mut below, mut above, aside) = (of(Place::Below), of(Place::Above), of(Place::Aside));
    below.sort_by_key(|&i| (rect_of(i).y, i));
    above.sort_by_key(|&i| (std::cmp::Reverse(rect_of(i).y), i));
    let (b, a, s) = OUT_OF_VIEW_MAX;
    let dropped: HashSet<usize> = below
        .into_iter()
        .skip(b)
        .chain(above.into_iter().skip(a))
        .chain(aside.into_iter().skip(s))
        .collect();
    fetched
        .into_iter()
        .enumerate()
        .filter_map(|(i, f)| (!dropped.contains(&i)).then_some(f))
        .collect()
}

/// Step 4: the screenshot and the annotated screenshot (the labels drawn where the controls
/// are, relative to the captured `area`); a failure is a warning.
pub(super) async fn labelled_screenshots(
    img: Result<RgbImage, LinuxError>,
    clean: Option<Vec<u8>>,
    fetched: &[Fetched],
    area: Rect,
    warnings: &mut Vec<String>,
) -> (Option<Screenshot>, Option<Screenshot>) {
    let img = match img {
        Ok(img) => img,
        Err(e) => {
            warnings.push(format!("no screenshot: {e}"));
            return (None, None);
        }
    };
    let marks: Vec<Mark> = fetched
        .iter()
        .enumerate()
        // (a control out of view has no place on the screenshot)
        .filter(|(_, f)| f.detail.control.states.place.is_in_view())
        .map(|(i, f)| {
            let r = f.detail.control.rect;
            Mark {
                x: r.x - area.x,
                y: r.y - area.y,
                w: r.w,
                h: r.h,
                label: i + 1,
                detected: !f.detail.control.source.is_tree(),
            }
        })
        .collect();
    match encode_pair(img, clean, marks).await {
        Ok((a, b)) => (Some(a), Some(b)),
        Err(e) => {
            warnings.push(format!("screenshot could not be encoded: {e}"));
            (None, None)
        }
    }
}

/// Drop LibreOffice's shadow menus and the controls an open menu covers (office.rs).
fn without_shadows_and_covered(group: Vec<Fetched>) -> Vec<Fetched> {
    let placed: Vec<office::Placed> = group
        .iter()
        .map(|f| office::Placed {
            role: f.detail.control.role.clone(),
            name: f.detail.control.name.clone(),
            has_action: f.info.actions.iter().any(|a| !a.trim().is_empty()),
            rect: f.detail.control.rect,
        })
        .collect();
    let keep = office::keep_mask(&placed);
    group
        .into_iter()
        .zip(keep)
        .filter_map(|(f, k)| k.then_some(f))
        .collect()
}

/// Many unnamed alike items (not table cells: their rows are folded) as one control
/// (noise.rs, `unnamed_groups`): named by their count and role, over all of them, acting on
/// the first. `tables` and `parents` go along with `out`, and are returned so too.
pub(super) fn group_unnamed(
    out: Vec<Fetched>,
    tables: &[Option<String>],
    parents: &[String],
) -> Vec<Fetched> {
    let items: Vec<noise::Item> = out
        .iter()
        .zip(parents)
        .zip(tables)
        .map(|((f, p), t)| noise::Item {
            // (a table cell is never grouped here: its parent is made unique)
            parent: if t.is_some() {
                format!("{p}\0cell")
            } else {
                p.clone()
            },
            role: f.detail.control.role.clone(),
            name: if t.is_some() {
                "\u{1}cell".into()
            } else {
                f.detail.control.name.clone()
            },
            rect: f.detail.control.rect,
        })
        .collect();
    let groups = noise::unnamed_groups(&items);
    if groups.is_empty() {
        return out;
    }
    let mut drop = HashSet::new();
    let mut renamed: HashMap<usize, (String, Rect)> = HashMap::new();
    for g in &groups {
        let rect = noise::union_all(g.iter().map(|&i| items[i].rect)).unwrap_or(items[g[0]].rect);
        renamed.insert(g[0], (noise::group_name(g.len(), &items[g[0]].role), rect));
        drop.extend(g[1..].iter().copied());
    }
    out.into_iter()
        .enumerate()
        .filter(|(i, _)| !drop.contains(i))
        .map(|(i, mut f)| {
            if let Some((name, rect)) = renamed.remove(&i) {
                f.detail.control.name = name.clone();
                f.info.name = name;
                f.detail.control.rect = rect;
                f.info.rect = rect;
            }
            f
        })
        .collect()
}

/// A composite's part (a combo box's entry: composite.rs) folded
/// into the line of the control around it: that control's role and name (else the part's),
/// the part's text as its value, focused or editable when the part is, the part kept for the
/// actions that take text.
pub(super) fn merge_part(outer: &mut Fetched, part: Fetched) {
    let c = &mut outer.detail.control;
    let p = &part.detail.control;
    if c.name.trim().is_empty() {
        c.name = p.name.clone();
        outer.info.name = p.name.clone();
    }
    if p.value.is_some() {
        c.value = p.value.clone();
    }
    c.states.focused |= p.states.focused;
    c.states.editable |= p.states.editable;
    for s in ["focused", "editable"] {
        if part.detail.states.contains(&s) && !outer.detail.states.contains(&s) {
            outer.detail.states.push(s);
        }
    }
    outer.info.part = Some(Box::new(part.info));
}

/// The cells of one table row as one control (noise.rs, `fold_rows`): named by the row's
/// first text, its whole text as its value, over the whole row, acting on its named cell.
/// Unnamed arrow buttons beside a named field are named after it (noise.rs,
/// `field_arrows`: LibreOffice's Name Box toggle).
pub(super) fn name_field_arrows(mut out: Vec<Fetched>) -> Vec<Fetched> {
    let items: Vec<noise::Item> = out
        .iter()
        .map(|f| noise::Item {
            parent: String::new(),
            role: f.detail.control.role.clone(),
            name: f.detail.control.name.clone(),
            rect: f.detail.control.rect,
        })
        .collect();
    for (i, name) in noise::field_arrows(&items) {
        out[i].detail.control.name = name.clone();
        out[i].info.name = name;
    }
    out
}

pub(super) fn rows_as_controls(out: Vec<Fetched>, tables: &[Option<String>]) -> Vec<Fetched> {
    let cells: Vec<(usize, noise::Cell)> = out
        .iter()
        .zip(tables)
        .enumerate()
        .filter_map(|(i, (f, t))| {
            Some((
                i,
                noise::Cell {
                    table: t.clone()?,
                    rect: f.detail.control.rect,
                    name: f.detail.control.name.clone(),
                },
            ))
        })
        .collect();
    if cells.is_empty() {
        return out;
    }
    let plain: Vec<noise::Cell> = cells.iter().map(|(_, c)| c.clone()).collect();
    let rows = noise::fold_rows(&plain);
    let mut slots: Vec<Option<Fetched>> = out.into_iter().map(Some).collect();
    let mut kept_rows: HashMap<usize, Fetched> = HashMap::new();
    for row in rows {
        let members: Vec<usize> = row.cells.iter().map(|&k| cells[k].0).collect();
        let Some(mut f) = slots[members[0]].take() else {
            continue;
        };
        for &m in &members[1..] {
            if let Some(other) = slots[m].take() {
                let c = &mut f.detail.control;
                c.states.focused |= other.detail.control.states.focused;
                c.states.selected |= other.detail.control.states.selected;
            }
        }
        f.detail.control.name = row.name.clone();
        f.info.name = row.name;
        f.detail.control.value = row.text;
        f.detail.control.rect = row.rect;
        f.info.rect = row.rect;
        kept_rows.insert(members[0], f);
    }
    slots
        .into_iter()
        .enumerate()
        .filter_map(|(i, s)| s.or_else(|| kept_rows.remove(&i)))
        .collect()
}

/// The clean PNG (`clean` when it was encoded already, while the controls were read) and the
/// annotated one, each encoded in a blocking task of its own.
async fn encode_pair(
    img: RgbImage,
    clean: Option<Vec<u8>>,
    marks: Vec<Mark>,
) -> Result<(Screenshot, Screenshot), LinuxError> {
    let (w, h) = (img.width, img.height);
    let img = Arc::new(img);
    let img2 = img.clone();
    let clean = async move {
        match clean {
            Some(png) => Ok(png),
            None => tokio::task::spawn_blocking(move || annotate::encode_png(&img2)).await?,
        }
    };
    let marked = tokio::task::spawn_blocking(move || annotate::annotated_png(&img, &marks));
    let (clean, marked) = tokio::join!(clean, marked);
    let clean = clean?;
    let marked = marked??;
    Ok((
        Screenshot {
            png: Arc::new(clean),
            width: w,
            height: h,
        },
        Screenshot {
            png: Arc::new(marked),
            width: w,
            height: h,
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reading_order_rows_then_columns() {
        let r = |x, y, w, h| Rect { x, y, w, h };
        // a 2x2 grid given shuffled, plus a tall button spanning both rows on the right
        let rects = vec![
            r(60, 50, 40, 40), // 0: row 2 col 2
            r(10, 0, 40, 40),  // 1: row 1 col 1
            r(110, 0, 40, 90), // 2: tall, row 1 col 3
            r(10, 50, 40, 40), // 3: row 2 col 1
            r(60, 0, 40, 40),  // 4: row 1 col 2
        ];
        assert_eq!(reading_order(&rects), vec![1, 4, 2, 3, 0]);
    }
}
