//! Where a wheel notch is aimed: at the part of the control a person can see. A list row half
//! scrolled out of its list has a box that reaches past the list; its centre may lie outside
//! the list (over a toolbar, another pane, or off the window), where the notch scrolls nothing
//! ("scrolled … 5", and nothing moved). The box is clipped to each scrolling ancestor's box
//! and to the window, and the notch goes to the centre of what is left; a row wholly outside
//! its list sends it to the centre of the list, which is what scrolls.

use ufo_core::Rect;
use zbus::zvariant::OwnedObjectPath;

use crate::a11y::bus::A11yBus;
use crate::controls::CtlInfo;
use crate::display::pixels::intersect;
use crate::vocab::role;

/// How many ancestors are walked looking for scrolling boxes (a row sits a few levels under
/// its list: GTK's tree view 1-2, Qt's item views 2, LibreOffice's lists 3).
const ANCESTORS: usize = 12;

/// Roles whose box is a scrolled view that clips what is inside it.
const SCROLLING: &[u32] = &[
    role::SCROLL_PANE,
    role::VIEWPORT,
    role::LIST,
    role::LIST_BOX,
    role::TABLE,
    role::TREE,
    role::TREE_TABLE,
];

/// The point to aim at in `target`, clipped by `clips` in order, innermost first (the
/// scrolling ancestors' boxes, then the window's area): the centre of the visible part; when
/// nothing of it is visible in a clip, the centre of that clip's visible part (the view that
/// scrolls), clipped further by the outer ones.
pub(crate) fn aim(target: Rect, clips: &[Rect]) -> (i32, i32) {
    let mut visible = target;
    for clip in clips.iter().filter(|c| c.w > 1 && c.h > 1) {
        visible = match intersect(visible, *clip) {
            Some(v) => v,
            // the view itself scrolls: its part inside the outer clips
            None => clips
                .iter()
                .skip_while(|c| *c != clip)
                .filter(|c| c.w > 1 && c.h > 1)
                .try_fold(*clip, |v, c| intersect(v, *c))
                .unwrap_or(*clip),
        };
    }
    (
        visible.x + visible.w as i32 / 2,
        visible.y + visible.h as i32 / 2,
    )
}

/// The boxes of `c`'s scrolling ancestors, innermost first, where `c.rect` is (bounded by
/// [`ANCESTORS`]; an ancestor that does not answer ends the walk). AT-SPI's extents are moved
/// by what moved `c`'s own into `c.rect` (GTK 4 and Wayland report them relative to the
/// window), so both are in one space.
pub(crate) async fn scrolling_boxes(bus: &A11yBus, c: &CtlInfo) -> Vec<Rect> {
    const ACC: &str = "org.a11y.atspi.Accessible";
    let mut out = Vec::new();
    let Ok((cx, cy, _, _)) = bus.extents(&c.bus, &c.path).await else {
        return out;
    };
    if cx == i32::MIN || cy == i32::MIN {
        return out;
    }
    let (dx, dy) = (c.rect.x - cx, c.rect.y - cy);
    let mut path = c.path.clone();
    for _ in 0..ANCESTORS {
        let parent: Result<(String, OwnedObjectPath), _> =
            bus.prop(&c.bus, &path, ACC, "Parent").await;
        let Ok((app, next)) = parent else { break };
        let next = next.as_str().to_string();
        if app != c.bus || next == path || next == crate::vocab::ROOT_PATH {
            break;
        }
        let r = bus.call::<_, u32>(&c.bus, &next, ACC, "GetRole", &()).await;
        if r.is_ok_and(|r| SCROLLING.contains(&r)) {
            if let Ok((x, y, w, h)) = bus.extents(&c.bus, &next).await {
                if w > 1 && h > 1 && x != i32::MIN && y != i32::MIN {
                    out.push(Rect::new(x + dx, y + dy, w as u32, h as u32));
                }
            }
        }
        path = next;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 46: a row half below its list is aimed at its visible half, inside the list.
    #[test]
    fn a_half_visible_row_is_aimed_at_its_visible_part() {
        let list = Rect::new(100, 100, 300, 200); // y 100..300
        let row = Rect::new(100, 280, 300, 40); // y 280..320: half below the list
        let (x, y) = aim(row, &[list]);
        assert_eq!(x, 250);
        assert!(
            (280..300).contains(&y),
            "y {y} is outside the list's visible rows"
        );
        assert_eq!(y, 290);
        // a whole row: its centre
        assert_eq!(aim(Rect::new(100, 140, 300, 20), &[list]), (250, 150));
        // no scrolling ancestor: the centre, clipped to the window
        let window = Rect::new(0, 0, 800, 600);
        assert_eq!(aim(Rect::new(0, 580, 100, 40), &[window]), (50, 590));
        // a row wholly below its list: the list (which scrolls) is aimed at
        assert_eq!(
            aim(Rect::new(100, 320, 300, 20), &[list, window]),
            (250, 200)
        );
        // nested views: the innermost clip first, then the outer ones
        let pane = Rect::new(100, 100, 300, 150); // y 100..250
        assert_eq!(aim(row, &[list, pane, window]), (250, 175));
        // degenerate clips are ignored
        assert_eq!(aim(row, &[Rect::new(0, 0, 0, 0)]), (250, 300));
    }
}
