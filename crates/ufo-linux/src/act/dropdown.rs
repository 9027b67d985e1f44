//! `select` on a GTK4 drop-down. Its list opens in a popover that may reach below the
//! dialog (its lower items are then cut from the control list), and neither a click on an
//! item nor the list's `SelectChild` makes the choice (the list only highlights it). A
//! person opens the list and moves with the arrow keys, then presses Enter: so does this,
//! after reading the open list live (the application's cache keeps a closed list's items),
//! and the drop-down's shown choice is read back before it reports success.

use std::time::{Duration, Instant};

use super::select::{entry_names, match_entry, normalise_entry, select_error, EntryMatch};
use super::Actor;
use crate::a11y::bus::{AppTree, Node};
use crate::apps::{gtk4, web};
use crate::controls::CtlInfo;
use crate::display::keys::KeyStep;
use crate::display::WinId;
use crate::vocab::action;
use crate::vocab::role;
use crate::LinuxError;

/// How far above a list item its drop-down may be (list, scroll pane, panel, popover
/// content, popover).
const ITEM_DEPTH: usize = 8;
/// The most nodes read live below a drop-down (its button and its open popup).
const LIVE_NODES: usize = 96;
/// How long the list may take to open, and the choice to show after Enter.
const OPEN_BOUND: Duration = Duration::from_secs(3);
/// The keysyms of Enter and Escape.
const RETURN: u32 = 0xff0d;
const ESCAPE: u32 = 0xff1b;

impl Actor<'_> {
    /// A left click on an item of an open GTK4 drop-down list (`None`: `c` is no such
    /// item). The popover is a surface of its own, drawn elsewhere than its items' extents
    /// say, and a click there closes the list without choosing: the item is chosen as
    /// `select` chooses it.
    pub(crate) async fn click_dropdown_item(
        &self,
        xid: WinId,
        c: &CtlInfo,
    ) -> Option<Result<String, LinuxError>> {
        // (GTK 4 only: its applications are the ones read with window-relative extents)
        if c.seen.role != role::LIST_ITEM || !self.apps.is_relative(self.bus, &c.bus).await {
            return None;
        }
        let tree = self.observer.control_tree(c).await.ok()?;
        let mut p = tree.nodes.get(&c.path)?.parent.clone();
        // up from the item: its list, the popover's parts, the drop-down
        for _ in 0..ITEM_DEPTH {
            let n = tree.nodes.get(&p)?;
            if n.role == role::COMBO_BOX {
                let button = gtk4::dropdown_button(&tree, n)?.path.clone();
                let mut combo = c.clone();
                combo.path = n.path.clone();
                combo.name = "the drop-down".into();
                return Some(self.select_in_dropdown(xid, &combo, &c.name, &button).await);
            }
            p = n.parent.clone();
        }
        None
    }

    /// Choose `item` in the GTK4 drop-down `c` whose list opens from `button`: open the
    /// list (unless it is open), find the item among the list's items, arrow keys from the
    /// highlighted item to it, Enter; then the drop-down must show it.
    pub(crate) async fn select_in_dropdown(
        &self,
        xid: WinId,
        c: &CtlInfo,
        item: &str,
        button: &str,
    ) -> Result<String, LinuxError> {
        let (tree, list) = match self.open_list(c).await? {
            Some(open) => open,
            None => {
                self.press_button(c, button).await?;
                self.wait_list(c).await?
            }
        };
        let items = gtk4::popup_items(&tree, &list);
        let cands: Vec<(String, bool)> = items.iter().map(|(_, t, _)| (t.clone(), true)).collect();
        let target = match match_entry(item, &cands) {
            EntryMatch::One(i) => i,
            EntryMatch::Several(is) => {
                let several: Vec<String> = is.into_iter().map(|i| cands[i].0.clone()).collect();
                self.close_list(xid).await;
                return Err(LinuxError::ActionFailed(select_error(
                    &c.name,
                    item,
                    &several,
                    &entry_names(&cands),
                )));
            }
            EntryMatch::NoMatch => {
                self.close_list(xid).await;
                return Err(LinuxError::ActionFailed(select_error(
                    &c.name,
                    item,
                    &[],
                    &entry_names(&cands),
                )));
            }
        };
        let wanted = cands[target].0.clone();
        let highlighted = items.iter().position(|(_, _, selected)| *selected);
        let mut steps: Vec<KeyStep> = web::arrow_keys(highlighted, target)
            .into_iter()
            .map(|key| KeyStep::Chord { mods: vec![], key })
            .collect();
        steps.push(KeyStep::Chord {
            mods: vec![],
            key: RETURN,
        });
        self.send_keys_in_order(xid, None, steps).await?;
        let deadline = Instant::now() + OPEN_BOUND;
        loop {
            let shown = self.shown_choice(c).await;
            if shown
                .as_deref()
                .is_some_and(|s| normalise_entry(s) == normalise_entry(&wanted))
            {
                return Ok(format!("selected {wanted:?} in {:?}", c.name));
            }
            if Instant::now() >= deadline {
                return Err(LinuxError::ActionFailed(format!(
                    "{:?} shows {:?}, not {wanted:?}, after its list was opened and {wanted:?} \
                     chosen with the arrow keys and Enter; observe the window and try again",
                    c.name,
                    shown.unwrap_or_default()
                )));
            }
            tokio::time::sleep(self.config.settle_poll * 4).await;
        }
    }

    /// The drop-down's open list, read live: its popup is a live child of the drop-down
    /// other than its button. `None` when no list is open.
    async fn open_list(&self, c: &CtlInfo) -> Result<Option<(AppTree, Node)>, LinuxError> {
        let tree = self.live_tree(&c.bus, &c.path).await?;
        let list = tree
            .kids(&c.path)
            .iter()
            .find_map(|k| gtk4::popup_list(&tree, k))
            .filter(|l| !gtk4::popup_items(&tree, l).is_empty())
            .cloned();
        Ok(list.map(|l| (tree, l)))
    }

    /// Wait, bounded, for the list to open.
    async fn wait_list(&self, c: &CtlInfo) -> Result<(AppTree, Node), LinuxError> {
        let deadline = Instant::now() + OPEN_BOUND;
        loop {
            if let Some(open) = self.open_list(c).await? {
                return Ok(open);
            }
            if Instant::now() >= deadline {
                return Err(LinuxError::ActionFailed(format!(
                    "the list of {:?} did not open within {} s of a press on it; nothing was \
                     chosen; observe the window and try again",
                    c.name,
                    OPEN_BOUND.as_secs()
                )));
            }
            tokio::time::sleep(self.config.settle_poll * 4).await;
        }
    }

    /// Press the drop-down's button through its click action.
    async fn press_button(&self, c: &CtlInfo, button: &str) -> Result<(), LinuxError> {
        let acts = self.bus.actions(&c.bus, button).await?;
        let i = action::click_index(&acts).ok_or_else(|| {
            LinuxError::ActionFailed(format!(
                "the button of {:?} offers no click action (it offers {acts:?}); click it \
                     instead",
                c.name
            ))
        })?;
        self.bus
            .call::<_, bool>(
                &c.bus,
                button,
                "org.a11y.atspi.Action",
                "DoAction",
                &(i as i32,),
            )
            .await?;
        Ok(())
    }

    /// Close an open list without choosing (Escape).
    async fn close_list(&self, xid: WinId) {
        let escape = vec![KeyStep::Chord {
            mods: vec![],
            key: ESCAPE,
        }];
        let _ = self.send_keys_in_order(xid, None, escape).await;
    }

    /// What the drop-down shows as chosen now (read live).
    async fn shown_choice(&self, c: &CtlInfo) -> Option<String> {
        let tree = self.live_tree(&c.bus, &c.path).await.ok()?;
        let n = tree.nodes.get(&c.path)?;
        gtk4::dropdown_choice(&tree, n)
    }

    /// The subtree of `root` read live, breadth first, [`LIVE_NODES`] nodes at most.
    async fn live_tree(&self, bus: &str, root: &str) -> Result<AppTree, LinuxError> {
        let mut tree = AppTree::default();
        tree.insert(self.bus.node(bus, root, "", 0).await?);
        let mut queue = std::collections::VecDeque::from([root.to_string()]);
        while let Some(p) = queue.pop_front() {
            let kids = self.bus.children(bus, &p).await.unwrap_or_default();
            let nodes = futures::future::join_all(kids.iter().enumerate().map(|(i, k)| {
                let p = p.clone();
                async move { self.bus.node(bus, k, &p, i as i32).await }
            }))
            .await;
            for n in nodes.into_iter().flatten() {
                if tree.nodes.len() >= LIVE_NODES || tree.nodes.contains_key(&n.path) {
                    continue;
                }
                queue.push_back(n.path.clone());
                tree.insert(n);
            }
        }
        Ok(tree)
    }
}
