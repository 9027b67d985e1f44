//! A page observed once its route has rendered (issue 46). Chromium's own pages (`chrome://`,
//! its settings among them) are single-page applications: a settings sub-page reached by its
//! address (`chrome://settings/fonts`) loads the settings frame first, with its side menu,
//! and draws the route's section a while later (on a Chromium started cold: the document
//! "Settings" with the side menu 0.96 s after Enter, its section, titled "Settings -
//! Customize fonts", 0.6 s after that). The load wait saw a loaded document, and the
//! observation listed the side menu only.
//!
//! So, after a read of a browser window, its shown `chrome://` documents are asked for their
//! landmarks' `xml-roles` (a few calls on nodes of the tree already read; pages of the web
//! are not asked): a page with landmarks whose `main` has no content yet ([`route_pending`],
//! pure) is read again (`loading::Reread::Route`), at most `loading::ROUTE_MAX` into the
//! observation. Chromium's pages without landmarks (New Tab, History) are what they are.

use crate::a11y::bus::AppTree;
use crate::vocab::{role, state, INTERACTIVE};

/// Most landmarks of a page asked for their roles.
const MAX_LANDMARKS: usize = 8;
/// Most nodes of a page looked at for them.
const PAGE_NODES: usize = 4_000;
/// What a page's landmark is and holds: its `xml-roles` and its number of nodes below it that
/// are content (named, or controls: a settings section being built holds a few unnamed
/// containers, 5 nodes against 296 once drawn).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Landmark {
    pub xml_role: String,
    pub content: usize,
}

/// Whether a page at `uri` has not rendered its route yet: one of the browser's own pages
/// (`chrome://`) with landmarks, none of them a `main` with content.
pub(crate) fn route_pending(uri: &str, landmarks: &[Landmark]) -> bool {
    uri.starts_with("chrome://")
        && !landmarks.is_empty()
        && !landmarks
            .iter()
            .any(|l| l.xml_role.split(' ').any(|r| r == "main") && l.content > 0)
}

/// The shown web documents under `frame` (a tab's), and their landmarks with their number of
/// content nodes, from the tree read.
pub(crate) fn pages(tree: &AppTree, frame: &str) -> Vec<(String, Vec<(String, usize)>)> {
    tree.subtree(frame, PAGE_NODES)
        .into_iter()
        .filter(|n| n.role == role::DOCUMENT_WEB && n.has(state::SHOWING))
        .take(2)
        .map(|d| {
            let marks = tree
                .subtree(&d.path, PAGE_NODES)
                .into_iter()
                .filter(|n| n.role == role::LANDMARK)
                .take(MAX_LANDMARKS)
                .map(|l| (l.path.clone(), content(tree, &l.path)))
                .collect();
            (d.path.clone(), marks)
        })
        .collect()
}

impl super::observer::Observer<'_> {
    /// Whether a shown page of a browser's window frame `frame` (in `tree`, read) has not
    /// rendered its route yet: its `chrome://` address and its landmarks' roles asked (a few
    /// calls; none for another application).
    pub(super) async fn route_pending(&self, bus: &str, tree: &AppTree, frame: &str) -> bool {
        if self.app_kind(bus).await != super::loading::AppKind::Browser {
            return false;
        }
        for (doc, marks) in pages(tree, frame) {
            if marks.is_empty() {
                continue;
            }
            let uri: Option<std::collections::HashMap<String, String>> = self
                .bus
                .call(bus, &doc, "org.a11y.atspi.Document", "GetAttributes", &())
                .await
                .ok();
            let uri = uri.and_then(|a| a.get("URI").cloned()).unwrap_or_default();
            if !uri.starts_with("chrome://") {
                continue;
            }
            let roles =
                futures::future::join_all(marks.iter().map(|(p, _)| self.bus.attributes(bus, p)))
                    .await;
            let landmarks: Vec<Landmark> = marks
                .iter()
                .zip(roles)
                .map(|((_, content), a)| Landmark {
                    xml_role: a
                        .ok()
                        .and_then(|a| a.get("xml-roles").cloned())
                        .unwrap_or_default(),
                    content: *content,
                })
                .collect();
            if route_pending(&uri, &landmarks) {
                tracing::debug!(%uri, ?landmarks, "the page's route is not rendered yet");
                return true;
            }
        }
        false
    }
}

/// The nodes below `path` that are content: named, or controls.
fn content(tree: &AppTree, path: &str) -> usize {
    tree.subtree(path, PAGE_NODES)
        .into_iter()
        .skip(1)
        .filter(|n| !n.name.trim().is_empty() || INTERACTIVE.contains(n.role))
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mark(role: &str, content: usize) -> Landmark {
        Landmark {
            xml_role: role.into(),
            content,
        }
    }

    /// Chromium started cold on chrome://settings/fonts (pyatspi, 0.5 s after Enter): the
    /// side menu's landmarks and a `main` of five unnamed nodes; the page is pending until
    /// the main holds content.
    #[test]
    fn a_settings_route_is_pending_until_its_main_has_content() {
        let uri = "chrome://settings/fonts";
        let menu = [mark("banner", 11), mark("navigation", 82)];
        assert!(route_pending(uri, &menu));
        // (5 unnamed containers, no content)
        let empty_main = [menu[0].clone(), menu[1].clone(), mark("main", 0)];
        assert!(route_pending(uri, &empty_main));
        let rendered = [menu[0].clone(), menu[1].clone(), mark("main", 296)];
        assert!(!route_pending(uri, &rendered));
    }

    /// Pages without landmarks (New Tab, History) and pages of the web are never waited for.
    #[test]
    fn other_pages_are_not_waited_for() {
        assert!(!route_pending("chrome://newtab/", &[]));
        assert!(!route_pending(
            "https://example.org/",
            &[mark("navigation", 40)]
        ));
        assert!(!route_pending(
            "file:///tmp/form.html",
            &[mark("banner", 3)]
        ));
    }
}
