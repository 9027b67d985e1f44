//! A display's windows, display-free: their ids ([`WinId`]), what a display says of each
//! ([`DisplayWindow`], whose client area may be unknown), and where AT-SPI extents live on a
//! display ([`CoordSpace`], [`extents_origin`]).

use ufo_core::Rect;

use crate::LinuxError;

/// A window's id on the display: the X window id on X11; a Wayland display numbers its
/// toplevels. Written in hex (`0x600004`), the form the agents and `ufo inspect` use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct WinId(pub u32);

impl WinId {
    /// Parse a window id (`0x1a00004` or decimal); an id that is neither names no window.
    pub(crate) fn parse(id: &str) -> Result<WinId, LinuxError> {
        let t = id.trim();
        let parsed = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
            Some(hex) => u32::from_str_radix(hex, 16).ok(),
            None => t.parse::<u32>().ok(),
        };
        parsed
            .map(WinId)
            .ok_or_else(|| LinuxError::NoWindow(id.to_string()))
    }
}

impl std::fmt::Display for WinId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:#x}", self.0)
    }
}

/// Where a display puts the extents AT-SPI reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CoordSpace {
    /// Screen coordinates (X11), except for toolkits that report window-relative extents
    /// anyway (GTK 4: its extents are within the toolkit's window, which sits centred in the
    /// X window, its shadow around it).
    Screen,
    /// Relative to the window's client area, whatever the toolkit (Wayland).
    ClientArea,
}

/// A top-level client window as the display knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DisplayWindow {
    pub id: WinId,
    pub title: String,
    pub pid: Option<u32>,
    /// The application's class (X11: `WM_CLASS`'s instance; Wayland: its app id).
    pub app_id: String,
    /// Its client area on the screen; `None` when the display does not say where it is.
    pub area: Option<Rect>,
    /// The window it belongs to (a dialog's parent).
    pub transient_for: Option<WinId>,
    /// The display calls it a dialog (X11: `_NET_WM_WINDOW_TYPE_DIALOG`).
    pub dialog: bool,
    /// The window manager is told it is modal (X11: `_NET_WM_STATE_MODAL`).
    pub wm_modal: bool,
}

/// Why a window's position is needed and unknown: the error a coordinate operation gets.
pub(crate) fn position_unknown(w: &DisplayWindow) -> LinuxError {
    LinuxError::Unsupported(format!(
        "the position of window {} ({:?}) is unknown on this display; act on its controls \
         through their actions instead of screen coordinates",
        w.id, w.title
    ))
}

/// Where a window's AT-SPI extents have their origin on the screen: `(0, 0)` for screen
/// extents; the client area's corner on a display whose space is the client area (every
/// toolkit there); for a toolkit that reports window-relative extents on a screen-space
/// display (`toolkit_relative`: GTK 4 on X11), the point that puts its own window (`frame`,
/// its extents as reported) centred in the client area `area`, its shadow around it. `None`
/// when the extents are relative and the window's position is unknown.
pub(crate) fn extents_origin(
    space: CoordSpace,
    toolkit_relative: bool,
    area: Option<Rect>,
    frame: (i32, i32, i32, i32),
) -> Option<(i32, i32)> {
    let (fx, fy, fw, fh) = frame;
    match (space, toolkit_relative) {
        (CoordSpace::Screen, false) => Some((0, 0)),
        (CoordSpace::Screen, true) => {
            let w = area?;
            Some((
                w.x + ((w.w as i32 - fw) / 2).max(0) - fx,
                w.y + ((w.h as i32 - fh) / 2).max(0) - fy,
            ))
        }
        (CoordSpace::ClientArea, _) => area.map(|w| (w.x, w.y)),
    }
}

/// Whether a window's extents are relative to its window (read the frame's extents to place
/// them): on a display whose space is the client area, or for a toolkit that reports them so.
pub(crate) fn extents_relative(space: CoordSpace, toolkit_relative: bool) -> bool {
    toolkit_relative || space == CoordSpace::ClientArea
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_ids_read_in_hex_or_decimal_and_write_in_hex() {
        assert_eq!(WinId::parse("0x600004").expect("hex"), WinId(0x600004));
        assert_eq!(WinId::parse(" 0X1A ").expect("hex"), WinId(26));
        assert_eq!(WinId::parse("26").expect("decimal"), WinId(26));
        assert!(matches!(WinId::parse("calc"), Err(LinuxError::NoWindow(w)) if w == "calc"));
        assert_eq!(WinId(0x600004).to_string(), "0x600004");
    }

    /// X11: screen extents stay where they are; GTK 4's window-relative ones are moved to
    /// where its window sits centred in the X window (its shadow around it).
    #[test]
    fn extents_are_placed_by_the_display_and_the_toolkit() {
        let area = Some(Rect::new(100, 50, 400, 300));
        assert_eq!(
            extents_origin(CoordSpace::Screen, false, None, (5, 5, 1, 1)),
            Some((0, 0))
        );
        // a 360x260 toolkit window (shadow of 20 on each side) reporting itself at (20, 20)
        assert_eq!(
            extents_origin(CoordSpace::Screen, true, area, (20, 20, 360, 260)),
            Some((100, 50))
        );
        // a toolkit window larger than the X window is not centred off the window
        assert_eq!(
            extents_origin(CoordSpace::Screen, true, area, (0, 0, 500, 400)),
            Some((100, 50))
        );
        // Wayland: relative to the client area for every toolkit
        assert_eq!(
            extents_origin(CoordSpace::ClientArea, false, area, (0, 0, 400, 300)),
            Some((100, 50))
        );
        // a window placed nowhere cannot have its relative extents placed
        assert_eq!(
            extents_origin(CoordSpace::ClientArea, false, None, (0, 0, 1, 1)),
            None
        );
        assert!(extents_relative(CoordSpace::ClientArea, false));
        assert!(extents_relative(CoordSpace::Screen, true));
        assert!(!extents_relative(CoordSpace::Screen, false));
    }

    proptest::proptest! {
        /// GTK 4's window lands inside the client area whenever it fits there.
        #[test]
        fn relative_extents_of_a_fitting_window_land_in_the_area(
            x in -2000i32..2000, y in -2000i32..2000, w in 1u32..3000, h in 1u32..3000,
            fw in 1i32..3000, fh in 1i32..3000, fx in -50i32..50, fy in -50i32..50,
        ) {
            proptest::prop_assume!(fw as u32 <= w && fh as u32 <= h);
            let area = Rect::new(x, y, w, h);
            let (ox, oy) = extents_origin(CoordSpace::Screen, true, Some(area), (fx, fy, fw, fh))
                .expect("a placed window");
            // the toolkit window lands inside the client area
            proptest::prop_assert!(ox + fx >= x && oy + fy >= y);
            proptest::prop_assert!(ox + fx + fw <= x + w as i32);
            proptest::prop_assert!(oy + fy + fh <= y + h as i32);
        }
    }
}
