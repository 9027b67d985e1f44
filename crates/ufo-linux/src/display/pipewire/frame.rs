//! The pure side of a PipeWire video stream (docs/desktop.md, "KWin"): which raw formats are
//! taken, a frame's rows packed and cut, and whether a frame changed anything.

use ufo_core::Rect;

/// The byte order of a frame's pixels, 4 bytes each (the fourth ignored).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Order {
    /// B, G, R, X in memory (`BGRx`, `BGRA`): what captures hand out.
    Bgrx,
    /// R, G, B, X in memory (`RGBx`, `RGBA`): red and blue swapped on reading.
    Rgbx,
}

/// The raw video formats the stream takes, as their names in SPA (`BGRx`, `BGRA`, `RGBx`,
/// `RGBA`), and the byte order of each (`None`: a format ufo does not read, e.g. YUV).
pub(crate) fn order_of(format: &str) -> Option<Order> {
    match format {
        "BGRx" | "BGRA" => Some(Order::Bgrx),
        "RGBx" | "RGBA" => Some(Order::Rgbx),
        _ => None,
    }
}

/// One frame of the stream: its pixels packed (4 bytes a pixel, no row padding), when it
/// came and which parts of it changed.
#[derive(Debug, Clone)]
pub(crate) struct Frame {
    /// Counted from 1, one per frame received.
    pub(crate) seq: u64,
    pub(crate) width: u32,
    pub(crate) height: u32,
    pub(crate) order: Order,
    /// `width * height * 4` bytes, top row first.
    pub(crate) pixels: Vec<u8>,
    /// The parts the producer says changed since its last frame (`None`: it did not say).
    pub(crate) damage: Option<Vec<Rect>>,
}

impl Frame {
    /// `area` of the frame (clipped to it) as BGRX rows: where it lies and its rows (`None`:
    /// nothing of `area` is in the frame).
    pub(crate) fn cut(&self, area: Rect) -> Option<(Rect, Vec<u8>)> {
        let x0 = area.x.max(0);
        let y0 = area.y.max(0);
        let x1 = (i64::from(area.x) + i64::from(area.w)).min(i64::from(self.width));
        let y1 = (i64::from(area.y) + i64::from(area.h)).min(i64::from(self.height));
        let (x0, y0) = (i64::from(x0), i64::from(y0));
        if x1 <= x0 || y1 <= y0 {
            return None;
        }
        let (x0, y0, x1, y1) = (x0 as usize, y0 as usize, x1 as usize, y1 as usize);
        let stride = self.width as usize * 4;
        let mut out = Vec::with_capacity((x1 - x0) * (y1 - y0) * 4);
        for y in y0..y1 {
            let row = self.pixels.get(y * stride + x0 * 4..y * stride + x1 * 4)?;
            match self.order {
                Order::Bgrx => out.extend_from_slice(row),
                Order::Rgbx => {
                    for px in row.chunks_exact(4) {
                        out.extend_from_slice(&[px[2], px[1], px[0], px[3]]);
                    }
                }
            }
        }
        let r = Rect::new(x0 as i32, y0 as i32, (x1 - x0) as u32, (y1 - y0) as u32);
        Some((r, out))
    }

    /// Whether the frame changed anything: a frame whose damage the producer gives as
    /// empty changed no pixel (a cursor moved, say); without damage information, it did.
    pub(crate) fn changed(&self) -> bool {
        self.damage.as_ref().is_none_or(|d| !d.is_empty())
    }
}

/// The rows of a buffer (`stride` bytes apart, `offset` bytes in) packed to `width * 4` bytes
/// each (`None`: the buffer is shorter than its size says).
pub(crate) fn pack(
    data: &[u8],
    offset: usize,
    stride: usize,
    width: u32,
    height: u32,
    into: &mut Vec<u8>,
) -> Option<()> {
    let row = width as usize * 4;
    if stride < row {
        return None;
    }
    into.clear();
    into.reserve(row * height as usize);
    for y in 0..height as usize {
        let start = offset.checked_add(y.checked_mul(stride)?)?;
        into.extend_from_slice(data.get(start..start.checked_add(row)?)?);
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn frame(order: Order) -> Frame {
        // 3x2: pixel (x, y) is [x, y, 10, 255] in memory
        let mut pixels = Vec::new();
        for y in 0..2u8 {
            for x in 0..3u8 {
                pixels.extend_from_slice(&[x, y, 10, 255]);
            }
        }
        Frame {
            seq: 1,
            width: 3,
            height: 2,
            order,
            pixels,
            damage: None,
        }
    }

    #[test]
    fn the_formats_taken_are_the_4_byte_rgb_ones() {
        assert_eq!(order_of("BGRx"), Some(Order::Bgrx));
        assert_eq!(order_of("BGRA"), Some(Order::Bgrx));
        assert_eq!(order_of("RGBx"), Some(Order::Rgbx));
        assert_eq!(order_of("RGBA"), Some(Order::Rgbx));
        for other in ["RGB", "I420", "YUY2", "xRGB", ""] {
            assert_eq!(order_of(other), None, "{other}");
        }
    }

    #[test]
    fn a_cut_is_clipped_and_given_as_bgrx() {
        let f = frame(Order::Bgrx);
        let (r, rows) = f.cut(Rect::new(1, 1, 5, 5)).expect("inside");
        assert_eq!(r, Rect::new(1, 1, 2, 1));
        assert_eq!(rows, vec![1, 1, 10, 255, 2, 1, 10, 255]);
        assert!(f.cut(Rect::new(3, 0, 2, 2)).is_none(), "right of the frame");
        assert!(f.cut(Rect::new(-4, 0, 4, 2)).is_none(), "left of the frame");
        // red and blue swapped for RGBx
        let (_, rows) = frame(Order::Rgbx)
            .cut(Rect::new(2, 0, 1, 1))
            .expect("inside");
        assert_eq!(rows, vec![10, 0, 2, 255]);
    }

    #[test]
    fn a_frame_with_empty_damage_changed_nothing() {
        let mut f = frame(Order::Bgrx);
        assert!(f.changed(), "no damage said: it changed");
        f.damage = Some(vec![Rect::new(10, 10, 5, 5)]);
        assert!(f.changed());
        f.damage = Some(vec![]);
        assert!(!f.changed());
    }

    #[test]
    fn rows_are_packed_without_their_padding() {
        // 2x2 at stride 12, 3 bytes of offset
        let mut data = vec![0u8; 3];
        data.extend_from_slice(&[1, 1, 1, 1, 2, 2, 2, 2, 9, 9, 9, 9]);
        data.extend_from_slice(&[3, 3, 3, 3, 4, 4, 4, 4]);
        let mut out = Vec::new();
        assert_eq!(pack(&data, 3, 12, 2, 2, &mut out), Some(()));
        assert_eq!(out, vec![1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4]);
        assert_eq!(pack(&data, 3, 12, 2, 3, &mut out), None, "too short");
        assert_eq!(pack(&data, 0, 4, 2, 1, &mut out), None, "stride < row");
    }

    proptest! {
        #[test]
        fn packing_and_cutting_never_panic_and_stay_in_bounds(
            w in 0u32..20, h in 0u32..20, stride in 0usize..100, offset in 0usize..50,
            len in 0usize..2000, x in -30i32..30, y in -30i32..30, cw in 0u32..40, ch in 0u32..40,
        ) {
            let data = vec![7u8; len];
            let mut pixels = Vec::new();
            if pack(&data, offset, stride, w, h, &mut pixels).is_some() {
                prop_assert_eq!(pixels.len(), (w * h * 4) as usize);
                let f = Frame { seq: 1, width: w, height: h,
                    order: Order::Rgbx, pixels, damage: None };
                if let Some((r, rows)) = f.cut(Rect::new(x, y, cw, ch)) {
                    prop_assert_eq!(rows.len(), (r.w * r.h * 4) as usize);
                    prop_assert!(r.x >= 0 && r.y >= 0);
                    prop_assert!(r.x as u32 + r.w <= w && r.y as u32 + r.h <= h);
                }
            }
        }
    }
}
