//! Detection cached by the region's pixels (docs/sight.md, "Cache"): an unchanged window costs
//! a hash (well under a millisecond for 1280×800) instead of a read (hundreds of
//! milliseconds). Results are kept relative to the region, so a moved window still hits.
//! A region read before whose pixels changed in part (the same place and size) has only the
//! changed part read again ([`super::reread`], by [`TileHashes`] of [`TILE`] pixels); the
//! boxes outside it stand.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use async_trait::async_trait;
use xxhash_rust::xxh3::{xxh3_128, xxh3_64};

use super::reread::{self, Reread};
use super::{DetectError, DetectRequest, DetectedBox, Detector, PixelFormat, RegionImage};
use crate::ports::Rect;

/// What identifies one detection: the pixels (every byte hashed: a sample would miss a
/// changed digit), their layout, the request and the detector's settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Key {
    pixels: u128,
    width: u32,
    height: u32,
    format: PixelFormat,
    request: DetectRequest,
    settings: u64,
}

/// The side of the tiles a changed region is compared in, in pixels.
pub const TILE: u32 = 64;

/// Where a region was read: its place, size and request (a window read again at the same
/// place is compared tile by tile with its last read).
type Place = ((i32, i32), u32, u32, DetectRequest, u64);

/// How a [`CachedDetector`] has answered so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Answers from memory.
    pub hits: u64,
    /// Answers from the inner detector.
    pub misses: u64,
    /// Of the misses, those where only a changed part of the region was read.
    pub partial: u64,
    /// Entries held now.
    pub entries: usize,
}

#[derive(Default)]
struct State {
    /// Each entry: when it was last used, and the boxes relative to the region's origin.
    map: HashMap<Key, (u64, Arc<Vec<DetectedBox>>)>,
    /// The last read at each place: when, its tiles, and its boxes (screen pixels).
    last: HashMap<Place, (u64, TileHashes, Arc<Vec<DetectedBox>>)>,
    clock: u64,
    hits: u64,
    misses: u64,
    partial: u64,
}

/// A [`Detector`] that answers a region whose pixels it has seen from memory; at most
/// `capacity` regions are kept, the least recently used dropped first. Failures are not kept.
pub struct CachedDetector<D> {
    inner: D,
    capacity: usize,
    state: Mutex<State>,
}

impl<D: Detector> CachedDetector<D> {
    /// `inner` behind a cache of at most `capacity` regions (at least one).
    pub fn new(inner: D, capacity: usize) -> Self {
        Self {
            inner,
            capacity: capacity.max(1),
            state: Mutex::new(State::default()),
        }
    }

    /// The detector behind the cache.
    pub fn inner(&self) -> &D {
        &self.inner
    }

    /// Hits, misses and entries so far.
    pub fn stats(&self) -> CacheStats {
        let s = self.lock();
        CacheStats {
            hits: s.hits,
            misses: s.misses,
            partial: s.partial,
            entries: s.map.len(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic elsewhere while holding the lock leaves a usable map: recover it.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn key(&self, region: &RegionImage, request: DetectRequest) -> Key {
        Key {
            pixels: xxh3_128(region.pixels()),
            width: region.width(),
            height: region.height(),
            format: region.format(),
            request,
            settings: self.inner.settings_version(),
        }
    }

    fn remember(&self, key: Key, boxes: Arc<Vec<DetectedBox>>) {
        let mut s = self.lock();
        s.clock += 1;
        let now = s.clock;
        s.map.insert(key, (now, boxes));
        while s.map.len() > self.capacity {
            let oldest = s
                .map
                .iter()
                .min_by_key(|(_, (used, _))| *used)
                .map(|(k, _)| *k);
            match oldest {
                Some(k) => s.map.remove(&k),
                None => break,
            };
        }
    }

    fn place(&self, region: &RegionImage, request: DetectRequest) -> Place {
        let settings = self.inner.settings_version();
        let (w, h) = (region.width(), region.height());
        (region.origin(), w, h, request, settings)
    }

    /// What to read of a region not in memory: the changed part of its last read at the
    /// same place, else the whole. Only controls are read in part: a region's text is one
    /// reading of all of it.
    fn plan(&self, place: &Place, tiles: &TileHashes, region: &RegionImage) -> Reread {
        if place.3 != DetectRequest::Controls {
            return Reread::Whole;
        }
        let s = self.lock();
        let Some((_, before, boxes)) = s.last.get(place) else {
            return Reread::Whole;
        };
        match tiles.changed_since(before) {
            Some(changed) => reread::plan(region.rect(), boxes, &changed),
            None => Reread::Whole,
        }
    }

    /// Keep the read at `place` (at most `capacity` places, the least recent dropped).
    fn remember_place(&self, place: Place, tiles: TileHashes, boxes: Arc<Vec<DetectedBox>>) {
        let mut s = self.lock();
        s.clock += 1;
        let now = s.clock;
        s.last.insert(place, (now, tiles, boxes));
        while s.last.len() > self.capacity {
            let oldest = s
                .last
                .iter()
                .min_by_key(|(_, (used, _, _))| *used)
                .map(|(k, _)| *k);
            match oldest {
                Some(k) => s.last.remove(&k),
                None => break,
            };
        }
    }

    /// Read `region` through the inner detector: the changed part only when [`Self::plan`]
    /// says so, its boxes then joined to the ones that stand, in reading order.
    async fn read(
        &self,
        region: &RegionImage,
        request: DetectRequest,
    ) -> Result<Vec<DetectedBox>, DetectError> {
        let place = self.place(region, request);
        let tiles = TileHashes::of(region, TILE);
        let boxes = match self.plan(&place, &tiles, region) {
            Reread::Part { area, mut keep } => match region.part(area) {
                Some(part) => {
                    keep.extend(self.inner.detect(&part, request).await?);
                    keep.sort_by_key(|b| (b.rect.y, b.rect.x));
                    self.lock().partial += 1;
                    keep
                }
                None => self.inner.detect(region, request).await?,
            },
            Reread::Whole => self.inner.detect(region, request).await?,
        };
        self.remember_place(place, tiles, Arc::new(boxes.clone()));
        Ok(boxes)
    }
}

#[async_trait]
impl<D: Detector> Detector for CachedDetector<D> {
    async fn detect(
        &self,
        region: &RegionImage,
        request: DetectRequest,
    ) -> Result<Vec<DetectedBox>, DetectError> {
        let key = self.key(region, request);
        let (ox, oy) = region.origin();
        let cached = {
            let mut s = self.lock();
            s.clock += 1;
            let now = s.clock;
            let found = s.map.get_mut(&key).map(|(used, boxes)| {
                *used = now;
                Arc::clone(boxes)
            });
            match found {
                Some(_) => s.hits += 1,
                None => s.misses += 1,
            }
            found
        };
        if let Some(boxes) = cached {
            return Ok(boxes.iter().map(|b| b.translated(ox, oy)).collect());
        }
        let boxes = self.read(region, request).await?;
        let relative: Vec<DetectedBox> = boxes
            .iter()
            .map(|b| b.translated(ox.saturating_neg(), oy.saturating_neg()))
            .collect();
        self.remember(key, Arc::new(relative));
        Ok(boxes)
    }

    fn settings_version(&self) -> u64 {
        self.inner.settings_version()
    }
}

/// The hashes of a region's square tiles: two of the same grid name the tiles that changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TileHashes {
    origin: (i32, i32),
    width: u32,
    height: u32,
    tile: u32,
    hashes: Vec<u64>,
}

impl TileHashes {
    /// Hash `region` in tiles of `tile` × `tile` pixels (the last row and column may be
    /// smaller).
    pub fn of(region: &RegionImage, tile: u32) -> Self {
        let tile = tile.max(1);
        let bpp = region.format().bytes_per_pixel();
        let (w, h) = (region.width(), region.height());
        let stride = w as usize * bpp;
        let (cols, rows) = (w.div_ceil(tile), h.div_ceil(tile));
        let mut hashes = Vec::with_capacity(cols as usize * rows as usize);
        let mut buf = Vec::with_capacity(tile as usize * tile as usize * bpp);
        for ty in 0..rows {
            for tx in 0..cols {
                buf.clear();
                let x0 = (tx * tile) as usize * bpp;
                let x1 = (((tx + 1) * tile).min(w)) as usize * bpp;
                for y in ty * tile..((ty + 1) * tile).min(h) {
                    let row = y as usize * stride;
                    buf.extend_from_slice(&region.pixels()[row + x0..row + x1]);
                }
                hashes.push(xxh3_64(&buf));
            }
        }
        Self {
            origin: region.origin(),
            width: w,
            height: h,
            tile,
            hashes,
        }
    }

    /// The screen rectangles of the tiles that differ from `before`, one per changed tile;
    /// `None` when the two grids differ in size or tile (read the whole region).
    pub fn changed_since(&self, before: &TileHashes) -> Option<Vec<Rect>> {
        if (self.width, self.height, self.tile) != (before.width, before.height, before.tile) {
            return None;
        }
        let cols = self.width.div_ceil(self.tile);
        let changed = self
            .hashes
            .iter()
            .zip(&before.hashes)
            .enumerate()
            .filter(|(_, (a, b))| a != b)
            .map(|(i, _)| {
                let (tx, ty) = (i as u32 % cols, i as u32 / cols);
                let (x, y) = (tx * self.tile, ty * self.tile);
                Rect::new(
                    self.origin.0.saturating_add(x as i32),
                    self.origin.1.saturating_add(y as i32),
                    self.tile.min(self.width - x),
                    self.tile.min(self.height - y),
                )
            })
            .collect();
        Some(changed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vision::{DetectedKind, DetectedWord};
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Reads one box at the region's origin + (1, 1), and counts its calls.
    #[derive(Default)]
    struct Counting(AtomicUsize);

    #[async_trait]
    impl Detector for Counting {
        async fn detect(
            &self,
            region: &RegionImage,
            _request: DetectRequest,
        ) -> Result<Vec<DetectedBox>, DetectError> {
            self.0.fetch_add(1, Ordering::SeqCst);
            let (x, y) = region.origin();
            let r = Rect::new(x + 1, y + 1, 5, 5);
            Ok(vec![DetectedBox {
                text: format!("v{}", region.pixels()[0]),
                rect: r,
                confidence: 1.0,
                kind: DetectedKind::Text,
                words: vec![DetectedWord {
                    text: "x".into(),
                    rect: r,
                    confidence: 1.0,
                }],
            }])
        }
    }

    fn region(origin: (i32, i32), fill: u8) -> RegionImage {
        RegionImage::new(origin, 4, 4, PixelFormat::Gray8, vec![fill; 16])
            .expect("16 bytes of gray")
    }

    #[tokio::test]
    async fn unchanged_pixels_are_read_once_even_when_the_window_moved() {
        let cached = CachedDetector::new(Counting::default(), 8);
        let first = cached
            .detect(&region((10, 10), 7), DetectRequest::Controls)
            .await
            .expect("the fake reads");
        let moved = cached
            .detect(&region((110, 50), 7), DetectRequest::Controls)
            .await
            .expect("from memory");
        assert_eq!(cached.inner().0.load(Ordering::SeqCst), 1);
        assert_eq!(first[0].rect, Rect::new(11, 11, 5, 5));
        assert_eq!(moved[0].rect, Rect::new(111, 51, 5, 5));
        assert_eq!(moved[0].words[0].rect, Rect::new(111, 51, 5, 5));
        // Changed pixels, or another request, are read again.
        cached
            .detect(&region((10, 10), 8), DetectRequest::Controls)
            .await
            .expect("read");
        cached
            .detect(&region((10, 10), 7), DetectRequest::ReadText)
            .await
            .expect("read");
        assert_eq!(cached.inner().0.load(Ordering::SeqCst), 3);
        let stats = cached.stats();
        assert_eq!((stats.hits, stats.misses, stats.entries), (1, 3, 3));
    }

    #[tokio::test]
    async fn the_cache_holds_at_most_its_capacity_dropping_the_least_recent() {
        let cached = CachedDetector::new(Counting::default(), 2);
        for fill in [1, 2, 1, 3, 1, 2] {
            cached
                .detect(&region((0, 0), fill), DetectRequest::Controls)
                .await
                .expect("read");
        }
        // 1 miss, 2 miss, 1 hit, 3 miss (drops 2), 1 hit, 2 miss (drops 3).
        let stats = cached.stats();
        assert_eq!((stats.hits, stats.misses, stats.entries), (2, 4, 2));
    }

    /// Reads one box per 64-pixel column band of the region it is given, and keeps the
    /// rectangles it was asked to read.
    #[derive(Default)]
    struct Bands(Mutex<Vec<Rect>>);

    #[async_trait]
    impl Detector for Bands {
        async fn detect(
            &self,
            region: &RegionImage,
            _request: DetectRequest,
        ) -> Result<Vec<DetectedBox>, DetectError> {
            self.0.lock().expect("not poisoned").push(region.rect());
            let (x0, y0) = region.origin();
            Ok((0..region.width().div_ceil(64))
                .map(|i| {
                    let r = Rect::new(x0 + 2 + 64 * i as i32, y0 + 2, 20, 10);
                    DetectedBox {
                        text: format!("w{}", r.x),
                        rect: r,
                        confidence: 1.0,
                        kind: DetectedKind::Text,
                        words: Vec::new(),
                    }
                })
                .collect())
        }
    }

    #[tokio::test]
    async fn a_region_changed_in_part_has_only_that_part_read_again() {
        let cached = CachedDetector::new(Bands::default(), 8);
        let mut px = vec![0u8; 512 * 256];
        let at = |px: Vec<u8>| RegionImage::new((100, 50), 512, 256, PixelFormat::Gray8, px);
        let first = cached
            .detect(&at(px.clone()).expect("gray"), DetectRequest::Controls)
            .await
            .expect("read");
        assert_eq!(first.len(), 8);
        // one pixel of the tile at column 5, row 2 (x 320..384, y 128..192)
        px[150 * 512 + 330] = 9;
        let again = cached
            .detect(&at(px).expect("gray"), DetectRequest::Controls)
            .await
            .expect("read");
        let asked = cached.inner().0.lock().expect("not poisoned").clone();
        assert_eq!(asked.len(), 2);
        assert_eq!(asked[0], Rect::new(100, 50, 512, 256));
        let part = asked[1];
        assert!(
            part.w < 512 / 2 && part.h < 256,
            "only the changed part: {part:?}"
        );
        assert!(part.x <= 100 + 320 && part.y <= 50 + 128, "{part:?}");
        // the earlier boxes stand; the part's own box is added
        let added = part.w.div_ceil(64) as usize;
        assert_eq!(again.len(), first.len() + added, "{again:?}");
        assert!(first.iter().all(|b| again.contains(b)));
        assert_eq!(cached.stats().partial, 1);
        // a region's text is always read whole
        let text = cached
            .detect(&region((0, 0), 1), DetectRequest::ReadText)
            .await;
        assert!(text.is_ok());
        assert_eq!(cached.stats().partial, 1);
    }

    #[test]
    fn tiles_name_exactly_the_changed_part() {
        let mut px = vec![0u8; 100 * 70 * 3];
        let before = TileHashes::of(
            &RegionImage::new((5, 5), 100, 70, PixelFormat::Rgb8, px.clone()).expect("rgb"),
            32,
        );
        // One pixel in the tile of column 3 (x 96..100), row 1 (y 32..64).
        px[(40 * 100 + 97) * 3] = 255;
        let after = TileHashes::of(
            &RegionImage::new((5, 5), 100, 70, PixelFormat::Rgb8, px).expect("rgb"),
            32,
        );
        assert_eq!(
            after.changed_since(&before),
            Some(vec![Rect::new(5 + 96, 5 + 32, 4, 32)])
        );
        assert_eq!(before.changed_since(&before), Some(vec![]));
        let other = TileHashes::of(&region((0, 0), 0), 32);
        assert_eq!(other.changed_since(&before), None);
    }
}
