//! Live: `xcalc` (Athena widgets: no accessibility tree at all) read by its pixels. The
//! window is captured with X11 directly, not by ufo, and its keys must come back by their
//! labels. Skipped without a desktop like the other live tests (UFO_LIVE_TESTS=1 makes a
//! missing desktop a failure); start one with scripts/desktop-session.sh.

use std::path::PathBuf;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use ufo_core::vision::{DetectRequest, DetectedKind, PixelFormat, RegionImage};
use ufo_desktop::testing::{require_live, require_peer};
use ufo_vision::TesseractDetector;
use x11rb::connection::Connection;
use x11rb::protocol::xproto::{AtomEnum, ConnectionExt, ImageFormat, Window};

/// Kills the child on drop, so a failed assertion leaves no calculator behind.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The window whose WM_CLASS names `class`, searched two levels deep (a window manager
/// reparents clients into frames).
fn find_window(conn: &impl Connection, root: Window, class: &str) -> Option<Window> {
    let top = conn.query_tree(root).ok()?.reply().ok()?.children;
    let mut all = top.clone();
    for w in top {
        if let Some(t) = conn.query_tree(w).ok().and_then(|c| c.reply().ok()) {
            all.extend(t.children);
        }
    }
    all.into_iter().find(|&w| {
        conn.get_property(false, w, AtomEnum::WM_CLASS, AtomEnum::STRING, 0, 64)
            .ok()
            .and_then(|c| c.reply().ok())
            .is_some_and(|p| String::from_utf8_lossy(&p.value).contains(class))
    })
}

#[test]
fn xcalc_keys_are_read_by_their_labels() {
    if !require_live("xcalc_keys_are_read_by_their_labels") {
        return;
    }
    let Some(xcalc) = require_peer(PathBuf::from("/usr/bin/xcalc"), "xcalc", "install_sight")
    else {
        return;
    };
    let _child = Killed(Command::new(xcalc).spawn().expect("xcalc starts"));
    let (conn, screen) = x11rb::connect(None).expect("the X display of the session");
    let root = conn.setup().roots[screen].root;
    let deadline = Instant::now() + Duration::from_secs(15);
    let win = loop {
        if let Some(w) = find_window(&conn, root, "xcalc") {
            break w;
        }
        assert!(Instant::now() < deadline, "no xcalc window within 15 s");
        std::thread::sleep(Duration::from_millis(200));
    };
    // Let it draw its keys.
    std::thread::sleep(Duration::from_millis(700));
    let geo = conn
        .get_geometry(win)
        .expect("geometry request")
        .reply()
        .expect("geometry");
    let (w, h) = (u32::from(geo.width), u32::from(geo.height));
    let image = conn
        .get_image(ImageFormat::Z_PIXMAP, win, 0, 0, geo.width, geo.height, !0)
        .expect("image request")
        .reply()
        .expect("the window's pixels");
    assert_eq!(
        image.data.len(),
        (w * h * 4) as usize,
        "32 bits per pixel (BGRX)"
    );
    let rgb: Vec<u8> = image
        .data
        .chunks_exact(4)
        .flat_map(|p| [p[2], p[1], p[0]])
        .collect();
    let region = RegionImage::new((0, 0), w, h, PixelFormat::Rgb8, rgb).expect("rgb");
    let detector = TesseractDetector::default();
    detector.warm_up().expect("the engine starts");
    let t = Instant::now();
    let boxes = detector
        .detect_blocking(&region, DetectRequest::Controls)
        .expect("xcalc is read");
    let took = t.elapsed();
    let labels: Vec<&str> = boxes.iter().map(|b| b.text.as_str()).collect();
    eprintln!(
        "xcalc {w}x{h}: {} boxes in {took:?}: {labels:?}",
        boxes.len()
    );
    for digit in ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9"] {
        // The display shows a "0" too: the key is the framed one.
        let key = boxes
            .iter()
            .any(|b| b.text == digit && b.kind == DetectedKind::FramedText);
        assert!(key, "key {digit} not read as a framed label: {labels:?}");
    }
    let words = ["AC", "sin", "cos", "tan", "log", "STO", "RCL", "SUM", "EXC"];
    let read = words.iter().filter(|w| labels.contains(w)).count();
    assert!(read >= 8, "{read} of {words:?} read: {labels:?}");
}
