//! KWin's windows through its scripting, pure (docs/desktop.md, "Wayland"): the one-shot
//! scripts ufo loads ([`script`]), which call back into ufo's D-Bus object with JSON, and the
//! reading of that JSON ([`Listed`], [`read_reply`]). The client area of a window is where
//! its frame and its buffer meet ([`client_area`]): with client-side decorations the frame
//! lies inside the buffer (which holds the shadow), with KWin's frame the buffer lies inside
//! the frame.

use serde::Deserialize;
use ufo_core::Rect;

use crate::error::cause;
use crate::LinuxError;

/// The D-Bus object path of ufo's callback object.
pub(crate) const CALLBACK_PATH: &str = "/org/ufo/KwinScript";
/// Its interface.
pub(crate) const CALLBACK_INTERFACE: &str = "org.ufo.KwinScript";
/// Its method (named exactly: zbus would otherwise capitalise it).
pub(crate) const CALLBACK_METHOD: &str = "reply";

/// Its method for the watch script's events.
pub(crate) const CALLBACK_EVENT: &str = "event";
/// Calls in a row left unanswered after which the watch script stops calling and unloads
/// itself: ufo is gone (killed before it could unload the script), so nobody reads them.
pub(crate) const WATCH_UNANSWERED: u32 = 256;

/// What a script does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Job {
    /// List the windows, bottom of the stack first.
    List,
    /// Activate the window with this KWin id.
    Activate(String),
    /// Close the window with this KWin id.
    Close(String),
}

/// The body every script shares: the windows in stacking order (Plasma 5.27 and 6 name
/// things differently), and `find(id)`.
const PRELUDE: &str = r#"
var six = typeof workspace.windowList === "function";
var all = six ? workspace.windowList() : workspace.clientList();
var stack = workspace.stackingOrder || all;
function find(id) {
  for (var i = 0; i < all.length; i++) {
    if (all[i].internalId.toString() === id) { return all[i]; }
  }
  return null;
}
function rect(r) { return r ? [r.x, r.y, r.width, r.height] : null; }
"#;

const LIST: &str = r#"
var out = [];
for (var i = 0; i < stack.length; i++) {
  var c = stack[i];
  if (!c || !c.internalId) { continue; }
  out.push({id: c.internalId.toString(), caption: String(c.caption),
            app: String(c.resourceClass || ""), desktopFile: String(c.desktopFileName || ""),
            pid: c.pid || 0, active: !!c.active, minimized: !!c.minimized,
            normal: !!c.normalWindow, dialog: !!c.dialog, modal: !!c.modal,
            parent: c.transientFor ? c.transientFor.internalId.toString() : null,
            frame: rect(c.frameGeometry), buffer: rect(c.bufferGeometry)});
}
reply(JSON.stringify(out));
"#;

const ACTIVATE: &str = r#"
var c = find(TARGET);
if (c) { if (six) { workspace.activeWindow = c; } else { workspace.activeClient = c; } }
reply(c ? "done" : "gone");
"#;

const CLOSE: &str = r#"
var c = find(TARGET);
if (c) { c.closeWindow(); }
reply(c ? "done" : "gone");
"#;

/// The watch script's body: every window followed (its redraws, its frame moving, its
/// minimising), windows added and removed, each reported by a call carrying the window's id
/// and its top-level's; what else the window list shows changing ("changed": titles, which
/// window is active, the stacking order...) so that a listing is reused until then; "ready"
/// once it runs. KWin emits `damaged` once per frame the program
/// commits (about 60 a second while GTK animates a button), so each is sent as it comes.
const WATCH: &str = r#"
var unanswered = 0, stopped = false;
function answered() { unanswered = 0; }
function idOf(w) { return w && w.internalId ? w.internalId.toString() : ""; }
function topOf(w) {
  for (var i = 0; i < 16 && w && w.transientFor; i++) { w = w.transientFor; }
  return w;
}
function send(kind, w) {
  if (stopped) { return; }
  if (++unanswered > UNANSWERED) {
    stopped = true;
    callDBus("org.kde.KWin", "/Scripting", "org.kde.kwin.Scripting", "unloadScript", NAME);
    return;
  }
  callDBus(SERVICE, PATH, IFACE, METHOD, kind, idOf(w), idOf(topOf(w)), answered);
}
function follow(w) {
  if (!w) { return; }
  if (w.damaged) { w.damaged.connect(function () { send("damage", w); }); }
  if (w.frameGeometryChanged) { w.frameGeometryChanged.connect(function () { send("moved", w); }); }
  if (w.minimizedChanged) { w.minimizedChanged.connect(function () { send("moved", w); }); }
  for (var i = 0; i < LISTED.length; i++) {
    if (w[LISTED[i]]) { w[LISTED[i]].connect(function () { send("changed", w); }); }
  }
}
var LISTED = ["captionChanged", "windowClassChanged", "desktopFileNameChanged", "activeChanged",
              "stackingOrderChanged", "transientChanged", "modalChanged", "bufferGeometryChanged"];
var added = workspace.windowAdded || workspace.clientAdded;
var removed = workspace.windowRemoved || workspace.clientRemoved;
var all = typeof workspace.windowList === "function" ? workspace.windowList() : workspace.clientList();
for (var i = 0; i < all.length; i++) { follow(all[i]); }
added.connect(function (w) { follow(w); send("added", w); });
removed.connect(function (w) { send("removed", w); });
send("ready", null);
"#;

/// The text of the watch script loaded as `name`, calling back `service` (ufo's unique bus
/// name) for the display's life; after [`WATCH_UNANSWERED`] calls in a row without an answer
/// it unloads itself by that name.
pub(crate) fn watch_script(service: &str, name: &str) -> String {
    let quote = |s: &str| serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into());
    format!(
        "var SERVICE = {}, PATH = {}, IFACE = {}, METHOD = {}, NAME = {}, UNANSWERED = {WATCH_UNANSWERED};\n{WATCH}",
        quote(service),
        quote(CALLBACK_PATH),
        quote(CALLBACK_INTERFACE),
        quote(CALLBACK_EVENT),
        quote(name),
    )
}

/// The text of the script for `job`, calling back `service` (ufo's unique bus name) with
/// `token` (which call it answers).
pub(crate) fn script(job: &Job, service: &str, token: u64) -> String {
    let quote = |s: &str| serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into());
    let (body, target) = match job {
        Job::List => (LIST, None),
        Job::Activate(id) => (ACTIVATE, Some(id)),
        Job::Close(id) => (CLOSE, Some(id)),
    };
    format!(
        "function reply(body) {{ callDBus({}, {}, {}, {}, {}, body); }}\n{PRELUDE}{}{}",
        quote(service),
        quote(CALLBACK_PATH),
        quote(CALLBACK_INTERFACE),
        quote(CALLBACK_METHOD),
        quote(&token.to_string()),
        target
            .map(|t| format!("var TARGET = {};\n", quote(t)))
            .unwrap_or_default(),
        body
    )
}

/// A window as the list script reports it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Listed {
    /// KWin's id (a UUID).
    pub id: String,
    pub caption: String,
    /// The app id (Wayland) or class (X11).
    pub app: String,
    #[serde(default)]
    pub desktop_file: String,
    #[serde(default)]
    pub pid: i64,
    #[serde(default)]
    pub active: bool,
    #[serde(default)]
    pub minimized: bool,
    #[serde(default)]
    pub normal: bool,
    #[serde(default)]
    pub dialog: bool,
    #[serde(default)]
    pub modal: bool,
    #[serde(default)]
    pub parent: Option<String>,
    pub frame: Option<[f64; 4]>,
    pub buffer: Option<[f64; 4]>,
}

impl Listed {
    /// A window ufo lists: an application's normal window or dialog, not minimised (the
    /// desktop, panels, popups and KWin's own windows are not).
    pub(crate) fn is_client(&self) -> bool {
        (self.normal || self.dialog) && !self.minimized
    }
}

/// Most bytes of a script's reply.
pub(crate) const REPLY_MOST: usize = 4 * 1024 * 1024;

/// The windows of a list script's reply.
pub(crate) fn read_reply(json: &str) -> Result<Vec<Listed>, LinuxError> {
    if json.len() > REPLY_MOST {
        return Err(bad_reply(format!(
            "{} bytes, more than {REPLY_MOST}",
            json.len()
        )));
    }
    serde_json::from_str(json).map_err(|e| bad_reply(e.to_string()))
}

fn bad_reply(why: String) -> LinuxError {
    LinuxError::Wayland {
        what: "KWin's window list".into(),
        source: cause(format!(
            "the script's reply cannot be read ({why}); is this KWin 5.27 or later?"
        )),
    }
}

fn to_rect(r: [f64; 4]) -> Option<Rect> {
    let [x, y, w, h] = r.map(f64::round);
    (w >= 1.0 && h >= 1.0 && x.is_finite() && y.is_finite())
        .then(|| Rect::new(x as i32, y as i32, w as u32, h as u32))
}

/// Where AT-SPI extents have their origin: the intersection of the window's frame and its
/// buffer (either may hold the other); `None` when they do not meet or are unknown.
pub(crate) fn client_area(frame: Option<[f64; 4]>, buffer: Option<[f64; 4]>) -> Option<Rect> {
    let (f, b) = match (frame.and_then(to_rect), buffer.and_then(to_rect)) {
        (Some(f), Some(b)) => (f, b),
        (Some(only), None) | (None, Some(only)) => return Some(only),
        (None, None) => return None,
    };
    let x0 = f.x.max(b.x);
    let y0 = f.y.max(b.y);
    let x1 = (f.x + f.w as i32).min(b.x + b.w as i32);
    let y1 = (f.y + f.h as i32).min(b.y + b.h as i32);
    (x1 > x0 && y1 > y0).then(|| Rect::new(x0, y0, (x1 - x0) as u32, (y1 - y0) as u32))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scripts_call_back_with_their_token_and_quote_what_they_embed() {
        let s = script(&Job::List, ":1.42", 7);
        assert!(s.contains(
            r#"callDBus(":1.42", "/org/ufo/KwinScript", "org.ufo.KwinScript", "reply", "7", body)"#
        ));
        assert!(s.contains("workspace.stackingOrder"));
        let a = script(&Job::Activate("{ab\"c}".into()), ":1.42", 8);
        assert!(a.contains(r#"var TARGET = "{ab\"c}";"#), "{a}");
        assert!(a.contains("workspace.activeClient = c"));
        assert!(script(&Job::Close("x".into()), ":1.1", 9).contains("closeWindow()"));
    }

    #[test]
    fn the_watch_script_calls_back_ufo_and_follows_both_plasmas_names() {
        let s = watch_script(":1.42\"", "ufo-watch-7-w0");
        assert!(
            s.starts_with(r#"var SERVICE = ":1.42\"", PATH = "/org/ufo/KwinScript""#),
            "{s}"
        );
        assert!(
            s.contains(r#"METHOD = "event", NAME = "ufo-watch-7-w0", UNANSWERED = 256;"#),
            "{s}"
        );
        assert!(s.contains(r#""unloadScript", NAME)"#), "{s}");
        for name in [
            "clientAdded",
            "windowAdded",
            "windowRemoved",
            "damaged",
            "frameGeometryChanged",
        ] {
            assert!(s.contains(name), "{name}");
        }
    }

    #[test]
    fn the_client_area_is_where_frame_and_buffer_meet() {
        // GTK with client-side decorations: the frame inside the buffer (its shadow)
        assert_eq!(
            client_area(
                Some([460.0, 169.0, 360.0, 489.0]),
                Some([399.0, 114.0, 482.0, 611.0])
            ),
            Some(Rect::new(460, 169, 360, 489))
        );
        // Qt in KWin's frame: the buffer inside the frame
        assert_eq!(
            client_area(
                Some([502.0, 241.0, 276.0, 317.0]),
                Some([506.0, 270.0, 268.0, 284.0])
            ),
            Some(Rect::new(506, 270, 268, 284))
        );
        assert_eq!(
            client_area(Some([0.0, 0.0, 10.0, 10.0]), Some([20.0, 20.0, 5.0, 5.0])),
            None
        );
        assert_eq!(
            client_area(None, Some([1.0, 2.0, 3.0, 4.0])),
            Some(Rect::new(1, 2, 3, 4))
        );
        assert_eq!(client_area(Some([0.0, 0.0, 0.0, 4.0]), None), None);
    }

    #[test]
    fn a_reply_is_read_and_clients_told_apart() {
        let json = r#"[{"id":"{1}","caption":"Calculator","app":"org.gnome.Calculator",
            "pid":12,"active":true,"minimized":false,"normal":true,"dialog":false,"modal":false,
            "parent":null,"frame":[1,2,3,4],"buffer":null},
            {"id":"{2}","caption":"","app":"plasmashell","normal":false,"frame":null,"buffer":null}]"#;
        let ws = read_reply(json).expect("a list");
        assert_eq!(ws.len(), 2);
        assert!(ws[0].is_client());
        assert!(!ws[1].is_client());
        assert_eq!(ws[0].pid, 12);
        assert!(matches!(read_reply("[{"), Err(LinuxError::Wayland { .. })));
    }

    proptest::proptest! {
        /// The client area lies inside both the frame and the buffer.
        #[test]
        fn the_client_area_lies_in_both(
            fx in -500i32..500, fy in -500i32..500, fw in 1u32..800, fh in 1u32..800,
            bx in -500i32..500, by in -500i32..500, bw in 1u32..800, bh in 1u32..800,
        ) {
            let f = [fx as f64, fy as f64, fw as f64, fh as f64];
            let b = [bx as f64, by as f64, bw as f64, bh as f64];
            if let Some(a) = client_area(Some(f), Some(b)) {
                for (x, y, w, h) in [(fx, fy, fw, fh), (bx, by, bw, bh)] {
                    proptest::prop_assert!(a.x >= x && a.y >= y);
                    proptest::prop_assert!(a.x + a.w as i32 <= x + w as i32);
                    proptest::prop_assert!(a.y + a.h as i32 <= y + h as i32);
                }
            }
        }
    }
}
