//! What sway's IPC adds to the foreign-toplevel list (docs/desktop.md, "Wayland"): each
//! window's process, where its client area lies (`rect` + `window_rect`), whether it is
//! showing and what lies on top. The protocol says none of these. Pure but for [`Ipc`],
//! the one socket.

use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use ufo_core::Rect;

use crate::error::cause;
use crate::LinuxError;

/// How long one IPC request may take.
const IPC_TIMEOUT: Duration = Duration::from_secs(2);

/// A window of sway's tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct View {
    /// sway's container id.
    pub con_id: i64,
    /// Wayland app id, or the X class of an XWayland window.
    pub app_id: String,
    pub title: String,
    pub pid: Option<u32>,
    /// The client area on the screen.
    pub area: Rect,
    /// The container with its borders (the hit test's box).
    pub frame: Rect,
    /// Shown on a visible workspace.
    pub visible: bool,
    /// Floating (drawn above the tiled windows).
    pub floating: bool,
}

/// sway's IPC socket.
pub(crate) struct Ipc {
    path: PathBuf,
    conn: Option<swayipc::Connection>,
}

impl Ipc {
    /// The IPC socket of the sway serving a Wayland socket: `SWAYSOCK` when it names an
    /// existing socket, else `sway-ipc.<uid>.<pid>.sock` beside the Wayland socket, with the
    /// compositor's uid and pid read from the socket's peer (`SO_PEERCRED`).
    pub(crate) fn find(wayland_socket: &Path, peer: Option<(u32, u32)>) -> Option<Ipc> {
        let from_env = std::env::var_os("SWAYSOCK")
            .map(PathBuf::from)
            .filter(|p| p.exists());
        let beside = || {
            let (uid, pid) = peer?;
            let p = wayland_socket
                .parent()?
                .join(format!("sway-ipc.{uid}.{pid}.sock"));
            p.exists().then_some(p)
        };
        let path = from_env.or_else(beside)?;
        Some(Ipc { path, conn: None })
    }

    /// The socket's path.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    fn connect(&self) -> Result<swayipc::Connection, LinuxError> {
        let fail = |e: std::io::Error| LinuxError::Wayland {
            what: format!("connect to sway's IPC socket {}", self.path.display()),
            source: Box::new(e),
        };
        let s = UnixStream::connect(&self.path).map_err(fail)?;
        s.set_read_timeout(Some(IPC_TIMEOUT)).map_err(fail)?;
        s.set_write_timeout(Some(IPC_TIMEOUT)).map_err(fail)?;
        Ok(swayipc::Connection::from(s))
    }

    /// The windows in sway's tree (one reconnection when the socket broke).
    pub(crate) fn views(&mut self) -> Result<Vec<View>, LinuxError> {
        for attempt in 0..2 {
            let mut conn = match self.conn.take() {
                Some(c) => c,
                None => self.connect()?,
            };
            match conn.get_tree() {
                Ok(tree) => {
                    self.conn = Some(conn);
                    let mut out = Vec::new();
                    collect(&tree, false, &mut out);
                    return Ok(out);
                }
                Err(e) if attempt == 1 => {
                    return Err(LinuxError::Wayland {
                        what: "sway IPC get_tree".into(),
                        source: cause(e.to_string()),
                    })
                }
                Err(_) => {}
            }
        }
        Ok(Vec::new())
    }
}

/// The views under a node (tiled children first, then floating ones, so that the later
/// floating ones are on top).
fn collect(node: &swayipc::Node, floating: bool, out: &mut Vec<View>) {
    let is_view = node.pid.is_some()
        && matches!(
            node.node_type,
            swayipc::NodeType::Con | swayipc::NodeType::FloatingCon
        );
    if is_view {
        let app_id = node
            .app_id
            .clone()
            .or_else(|| {
                node.window_properties
                    .as_ref()
                    .and_then(|p| p.class.clone())
            })
            .unwrap_or_default();
        let r = &node.rect;
        let w = &node.window_rect;
        out.push(View {
            con_id: node.id,
            app_id,
            title: node.name.clone().unwrap_or_default(),
            pid: node.pid.and_then(|p| u32::try_from(p).ok()),
            area: Rect::new(
                r.x + w.x,
                r.y + w.y,
                w.width.max(0) as u32,
                w.height.max(0) as u32,
            ),
            frame: Rect::new(r.x, r.y, r.width.max(0) as u32, r.height.max(0) as u32),
            visible: node.visible.unwrap_or(false),
            floating: floating || node.node_type == swayipc::NodeType::FloatingCon,
        });
    }
    for n in &node.nodes {
        collect(n, floating, out);
    }
    for n in &node.floating_nodes {
        collect(n, true, out);
    }
}

/// A toplevel as the foreign-toplevel protocol gives it: our number, app id, title.
pub(crate) type Named<'a> = (u32, &'a str, &'a str);

/// Which view is which toplevel: the first view not taken yet with the same app id and
/// title, else the only view not taken with the same app id. Returns, per toplevel in order,
/// the index of its view.
pub(crate) fn join(toplevels: &[Named<'_>], views: &[View]) -> Vec<Option<usize>> {
    let mut taken = vec![false; views.len()];
    let mut out = vec![None; toplevels.len()];
    for (i, (_, app, title)) in toplevels.iter().enumerate() {
        let exact = views
            .iter()
            .enumerate()
            .position(|(j, v)| !taken[j] && v.app_id == *app && v.title == *title);
        if let Some(j) = exact {
            taken[j] = true;
            out[i] = Some(j);
        }
    }
    for (i, (_, app, _)) in toplevels.iter().enumerate() {
        if out[i].is_some() {
            continue;
        }
        let same: Vec<usize> = (0..views.len())
            .filter(|&j| !taken[j] && views[j].app_id == *app)
            .collect();
        if let [j] = same[..] {
            taken[j] = true;
            out[i] = Some(j);
        }
    }
    out
}

/// The view on top at a screen point: the last visible floating view holding it, else a
/// visible tiled one.
pub(crate) fn top_at(views: &[View], x: i32, y: i32) -> Option<usize> {
    let holds = |v: &View| {
        let f = v.frame;
        v.visible && x >= f.x && y >= f.y && x < f.x + f.w as i32 && y < f.y + f.h as i32
    };
    let floating = views.iter().rposition(|v| v.floating && holds(v));
    floating.or_else(|| views.iter().position(|v| !v.floating && holds(v)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(con_id: i64, app: &str, title: &str, frame: Rect, floating: bool) -> View {
        View {
            con_id,
            app_id: app.into(),
            title: title.into(),
            pid: Some(100 + con_id as u32),
            area: frame,
            frame,
            visible: true,
            floating,
        }
    }

    #[test]
    fn toplevels_join_their_views_by_app_and_title_then_by_app() {
        let r = Rect::new(0, 0, 10, 10);
        let views = vec![
            view(1, "org.gnome.Calculator", "Calculator", r, false),
            view(2, "org.gnome.TextEditor", "notes.txt", r, false),
            view(3, "org.gnome.TextEditor", "other.txt", r, false),
            view(4, "kcalc", "KCalc", r, false),
        ];
        let tops = [
            (7, "org.gnome.TextEditor", "other.txt"),
            (8, "org.gnome.Calculator", "Calculator"),
            // a title changed between the two reads: the only calculator-free kcalc view
            (9, "kcalc", "KCalc — 2"),
            // two editors with unknown titles: ambiguous, so no view
            (10, "org.gnome.TextEditor", "?"),
            (11, "nothing", "x"),
        ];
        assert_eq!(
            join(&tops, &views),
            vec![Some(2), Some(0), Some(3), Some(1), None]
        );
    }

    #[test]
    fn the_hit_test_finds_floating_windows_above_tiled_ones() {
        let views = vec![
            view(1, "a", "tiled", Rect::new(0, 0, 640, 800), false),
            view(2, "b", "float", Rect::new(100, 100, 200, 200), true),
            view(3, "c", "float on top", Rect::new(150, 150, 200, 200), true),
        ];
        assert_eq!(top_at(&views, 10, 10), Some(0));
        assert_eq!(top_at(&views, 120, 120), Some(1));
        assert_eq!(top_at(&views, 160, 160), Some(2));
        assert_eq!(top_at(&views, 700, 10), None);
        let mut hidden = views.clone();
        hidden[2].visible = false;
        assert_eq!(top_at(&hidden, 160, 160), Some(1));
    }

    #[test]
    fn the_client_area_is_the_container_plus_its_window_rect() {
        let tree: swayipc::Node = serde_json::from_value(serde_json::json!({
            "id": 1, "name": "root", "type": "root", "border": "none", "current_border_width": 0,
            "layout": "splith", "orientation": "horizontal", "percent": null,
            "rect": {"x": 0, "y": 0, "width": 1280, "height": 800},
            "window_rect": {"x": 0, "y": 0, "width": 0, "height": 0},
            "deco_rect": {"x": 0, "y": 0, "width": 0, "height": 0},
            "geometry": {"x": 0, "y": 0, "width": 0, "height": 0},
            "urgent": false, "focused": false, "focus": [], "sticky": false,
            "nodes": [], "floating_nodes": [{
                "id": 5, "name": "Calculator", "type": "floating_con", "border": "csd",
                "current_border_width": 0, "layout": "none", "orientation": "none",
                "percent": null, "pid": 4242, "app_id": "org.gnome.Calculator",
                "visible": true,
                "rect": {"x": 300, "y": 100, "width": 360, "height": 616},
                "window_rect": {"x": 2, "y": 25, "width": 356, "height": 589},
                "deco_rect": {"x": 0, "y": 0, "width": 0, "height": 0},
                "geometry": {"x": 0, "y": 0, "width": 360, "height": 616},
                "urgent": false, "focused": true, "focus": [], "sticky": false,
                "nodes": [], "floating_nodes": []
            }]
        }))
        .expect("a sway tree");
        let mut views = Vec::new();
        collect(&tree, false, &mut views);
        assert_eq!(views.len(), 1);
        assert_eq!(views[0].area, Rect::new(302, 125, 356, 589));
        assert_eq!(views[0].pid, Some(4242));
        assert!(views[0].floating && views[0].visible);
    }
}
