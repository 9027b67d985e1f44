//! `select`: choosing an entry of a list, combo box or menu by its name ([`match_entry`]:
//! exact, then forgiving of dashes, spaces and case, never a guess between several), through
//! the Selection interface, the entry's action, the keyboard (a web `<select>`), or a click
//! where it is drawn; a failed `select` leaves the box as it was and lists the entries.

use super::modal::Done;
use super::Actor;
use crate::a11y::bus::AppTree;
use crate::apps::menus::Menus;
use crate::apps::web;
use crate::controls::CtlInfo;
use crate::display::keys::KeyStep;
use crate::display::WinId;
use crate::vocab::{action, iface, role, state};
use crate::LinuxError;

impl Actor<'_> {
    /// Choose an entry of a list or combo box: through the Selection interface when the entry
    /// is a direct child, else by clicking (opening the combo first). The entry is matched by
    /// [`match_entry`]; when none matches, a popup this opened is closed again, so a failed
    /// `select` leaves the box as it was, and the error lists the entries.
    pub(super) async fn select(
        &self,
        xid: WinId,
        c: &CtlInfo,
        item: &str,
    ) -> Result<String, LinuxError> {
        let mut tree = self.entries_tree(c).await?;
        // a GTK4 drop-down's list is chosen from with the keyboard (act/dropdown.rs)
        let dropdown_button = tree
            .nodes
            .get(&c.path)
            .and_then(|n| crate::apps::gtk4::dropdown_button(&tree, n))
            .map(|b| b.path.clone());
        if let Some(button) = dropdown_button {
            return self.select_in_dropdown(xid, c, item, &button).await;
        }
        let (mut found, mut names) = find_entry(&tree, c, item);
        let mut opened = None;
        if matches!(&found, Err(several) if several.is_empty()) {
            // a closed GTK3 combo box builds its menu lazily: open it and look again
            if let Some(i) = action::click_index(&c.actions) {
                if self.do_action(c, i).await.unwrap_or(false) {
                    opened = Some(i);
                }
                tokio::time::sleep(self.config.settle_time / 2).await;
                tree = self.entries_tree(c).await?;
                let (f, n) = find_entry(&tree, c, item);
                found = f;
                if !n.is_empty() {
                    names = n;
                }
            }
        }
        let entry = match found {
            Ok(hit) => hit,
            Err(several) => {
                // leave the box as it was: close the popup this opened (the click action
                // toggles it) and choose nothing
                if let Some(i) = opened {
                    let _ = self.do_action(c, i).await;
                    tokio::time::sleep(self.config.settle_poll * 2).await;
                }
                return Err(LinuxError::ActionFailed(select_error(
                    &c.name, item, &several, &names,
                )));
            }
        };
        if web::chosen_already(c.seen.role, self.bus.live_states(&c.bus, &entry.path).await) {
            if let Some(i) = opened {
                let _ = self.do_action(c, i).await;
            }
            return Ok(format!(
                "{item:?} is the choice of {:?} already; left as it is",
                c.name
            ));
        }
        self.choose_entry(xid, c, item, &tree, entry).await
    }

    /// A step of [`Self::select`]: the tree of the control's application with the control
    /// and its entries (those the application's cache lacks, in GTK3 dialogs and GTK4, come
    /// from a walk; a GTK2 menu's items are read even while hidden).
    async fn entries_tree(&self, c: &CtlInfo) -> Result<AppTree, LinuxError> {
        let mut tree = self.observer.control_tree(c).await?;
        if c.seen.role == role::MENU {
            let menus = Menus {
                bus: self.bus,
                config: self.config,
            };
            menus
                .open_menus(&c.bus, &mut tree, vec![c.path.clone()], true)
                .await;
        }
        Ok(tree)
    }

    /// A step of [`Self::select`]: choose the entry found, through the Selection interface
    /// of its parent (not in a menu), else its click action, else an XTEST click where it is
    /// drawn.
    async fn choose_entry(
        &self,
        xid: WinId,
        c: &CtlInfo,
        item: &str,
        tree: &AppTree,
        entry: Entry,
    ) -> Result<String, LinuxError> {
        let Entry {
            path,
            parent,
            index,
            ifaces,
        } = entry;
        let parent_selectable = tree
            .nodes
            .get(&parent)
            .is_some_and(|p| p.ifaces & iface::SELECTION != 0);
        // selecting a menu's child only highlights it: a menu item is activated instead
        let in_menu = tree
            .nodes
            .get(&parent)
            .is_some_and(|p| p.role == role::MENU);
        let greyed = tree
            .nodes
            .get(&path)
            .is_some_and(|n| !n.has(state::SENSITIVE) && !n.has(state::ENABLED));
        if in_menu && greyed {
            return Err(LinuxError::ActionFailed(format!(
                "entry {item:?} of {:?} is disabled (greyed out) now; nothing was chosen",
                c.name
            )));
        }
        if parent_selectable && !in_menu {
            let ok: bool = self
                .bus
                .call(
                    &c.bus,
                    &parent,
                    "org.a11y.atspi.Selection",
                    "SelectChild",
                    &(index,),
                )
                .await
                .unwrap_or(false);
            if ok {
                return Ok(format!("selected {item:?} in {:?}", c.name));
            }
        }
        // Gecko's option actions change the choice without the page's change event
        if c.seen.role == role::COMBO_BOX && in_menu && self.bus.toolkit(&c.bus).await.0 == "Gecko"
        {
            return self
                .select_by_keys(xid, c, item, tree, &parent, &path)
                .await;
        }
        if ifaces & iface::ACTION != 0 {
            let how = (parent_selectable, in_menu);
            if let Some(done) = self.by_entry_action(c, item, &path, how).await? {
                return Ok(done);
            }
        }
        // last resort: click the entry where it is drawn
        let (x, y, w, h) = self.bus.extents(&c.bus, &path).await?;
        if (x == i32::MIN || w <= 0 || h <= 0) && c.seen.role == role::COMBO_BOX && in_menu {
            return self
                .select_by_keys(xid, c, item, tree, &parent, &path)
                .await;
        }
        if x == i32::MIN || w <= 0 || h <= 0 {
            return Err(LinuxError::ActionFailed(format!(
                "entry {item:?} of {:?} is not on screen and cannot be selected",
                c.name
            )));
        }
        self.xclick(xid, x + w / 2, y + h / 2, 1, 1).await?;
        Ok(format!("clicked entry {item:?} of {:?}", c.name))
    }

    /// A step of [`Self::choose_entry`]: the entry `path` chosen through its click action
    /// (`None`: it has none, or the choice did not take). A menu item may open a modal dialog
    /// whose call blocks (GTK2 file chooser); a web option's action may only highlight it,
    /// so its selected state is believed (unless its parent is no selection, or a menu).
    async fn by_entry_action(
        &self,
        c: &CtlInfo,
        item: &str,
        path: &str,
        (parent_selectable, in_menu): (bool, bool),
    ) -> Result<Option<String>, LinuxError> {
        let acts = self.bus.actions(&c.bus, path).await.unwrap_or_default();
        let Some(i) = action::click_index(&acts) else {
            return Ok(None);
        };
        let ok = match self.do_action_watching(&c.bus, path, i).await? {
            Done::Answered(ok) => ok,
            Done::OpenedDialog(title) => {
                return Ok(Some(format!(
                    "selected {item:?} in {:?}; opened the dialog {title:?}",
                    c.name
                )));
            }
        };
        if ok
            && (!parent_selectable
                || in_menu
                || web::wait_selected(self.bus, self.config, &c.bus, path).await)
        {
            web::close_popup(self.bus, c).await;
            return Ok(Some(format!("selected {item:?} in {:?}", c.name)));
        }
        Ok(None)
    }

    /// A step of [`Self::choose_entry`]: a closed web `<select>` whose options are not drawn
    /// (Gecko's: their "select" action and `SelectChild` change the choice without the
    /// page's change event) is chosen with the keyboard, as a person does: focus on the box,
    /// then arrow keys from the option chosen now to the wanted one.
    async fn select_by_keys(
        &self,
        xid: WinId,
        c: &CtlInfo,
        item: &str,
        tree: &AppTree,
        parent: &str,
        path: &str,
    ) -> Result<String, LinuxError> {
        let options = tree.kids(parent);
        let chosen = options
            .iter()
            .position(|p| tree.nodes.get(p).is_some_and(|n| n.has(state::SELECTED)));
        let not_drawn = || {
            LinuxError::ActionFailed(format!(
                "entry {item:?} of {:?} is not on screen and cannot be selected",
                c.name
            ))
        };
        let target = options
            .iter()
            .position(|p| p == path)
            .ok_or_else(not_drawn)?;
        self.activate(xid).await?;
        if !self.grab_focus(c).await {
            return Err(not_drawn());
        }
        let steps = web::arrow_keys(chosen, target)
            .into_iter()
            .map(|key| KeyStep::Chord { mods: vec![], key })
            .collect();
        self.send_keys_in_order(xid, Some(c), steps).await?;
        if web::wait_selected(self.bus, self.config, &c.bus, path).await {
            Ok(format!(
                "selected {item:?} in {:?} with the keyboard",
                c.name
            ))
        } else {
            Err(LinuxError::ActionFailed(format!(
                "entry {item:?} of {:?} did not become the chosen one after the arrow keys; \
                 observe the window and try again",
                c.name
            )))
        }
    }
}

/// The entry a `select` chose: its path, its parent and index there, its interfaces.
struct Entry {
    path: String,
    parent: String,
    index: i32,
    ifaces: u32,
}

/// The entry of `c` that `item` names ([`match_entry`], entries named as the observation
/// names them: "Desktop" for a places row whose own name is empty), or the names of the
/// several that match (none: empty); with the names of all entries.
fn find_entry(
    tree: &AppTree,
    c: &CtlInfo,
    item: &str,
) -> (Result<Entry, Vec<String>>, Vec<String>) {
    let nodes: Vec<&crate::a11y::bus::Node> =
        tree.subtree(&c.path, 5000).into_iter().skip(1).collect();
    let cands: Vec<(String, bool)> = nodes
        .iter()
        .map(|n| {
            (
                crate::observe::display_name(tree, n),
                crate::observe::is_entry(n.role),
            )
        })
        .collect();
    let found = match match_entry(item, &cands) {
        EntryMatch::One(i) => {
            let n = nodes[i];
            Ok(Entry {
                path: n.path.clone(),
                parent: n.parent.clone(),
                index: n.index,
                ifaces: n.ifaces,
            })
        }
        EntryMatch::Several(is) => Err(is.into_iter().map(|i| cands[i].0.clone()).collect()),
        EntryMatch::NoMatch => Err(Vec::new()),
    };
    (found, entry_names(&cands))
}

/// The most entries an error message lists.
const MAX_LISTED: usize = 30;

/// What [`match_entry`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum EntryMatch {
    /// This candidate.
    One(usize),
    /// Several entries contain the wanted text and none equals it: these candidates.
    Several(Vec<usize>),
    /// Nothing matches.
    NoMatch,
}

/// A name reduced for a forgiving comparison: every dash (hyphen, non-breaking hyphen, figure,
/// en and em dash, horizontal bar, minus sign, small and full-width hyphen-minus) becomes `-`,
/// every run of white space (non-breaking and narrow spaces too) one space, trimmed; soft
/// hyphens and zero-width characters are dropped; letters are lower-cased.
pub(crate) fn normalise_entry(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut pending_space = false;
    for c in s.chars() {
        let c = match c {
            '\u{2010}'..='\u{2015}' | '\u{2212}' | '\u{fe58}' | '\u{fe63}' | '\u{ff0d}' => '-',
            '\u{ad}' | '\u{200b}'..='\u{200d}' | '\u{2060}' | '\u{feff}' => continue,
            c if c.is_whitespace() => {
                pending_space = !out.is_empty();
                continue;
            }
            c => c,
        };
        if pending_space {
            out.push(' ');
            pending_space = false;
        }
        out.extend(c.to_lowercase());
    }
    out
}

/// Match the entry a `select` names among candidates (display name, whether its role is an
/// entry of a list or menu), in tiers, entries before other nodes in each: the exact name,
/// then the name after [`normalise_entry`] (dashes, spaces, case), then the only entry whose
/// normalised name contains the wanted text. Several entries containing it are ambiguous, not
/// a guess.
pub(crate) fn match_entry(want: &str, cands: &[(String, bool)]) -> EntryMatch {
    let exact = want.trim();
    let norm = normalise_entry(want);
    if norm.is_empty() {
        return EntryMatch::NoMatch;
    }
    let tiers: [&dyn Fn(&str) -> bool; 2] = [&|name| name.trim() == exact, &|name| {
        normalise_entry(name) == norm
    }];
    for same in tiers {
        for entries_only in [true, false] {
            if let Some(i) = cands
                .iter()
                .position(|(name, entry)| (*entry || !entries_only) && same(name))
            {
                return EntryMatch::One(i);
            }
        }
    }
    let containing: Vec<usize> = cands
        .iter()
        .enumerate()
        .filter(|(_, (name, entry))| *entry && normalise_entry(name).contains(&norm))
        .map(|(i, _)| i)
        .collect();
    match containing.as_slice() {
        [] => EntryMatch::NoMatch,
        [one] => EntryMatch::One(*one),
        _ => EntryMatch::Several(containing),
    }
}

/// The distinct, non-empty names of the entries among the candidates, in order.
pub(super) fn entry_names(cands: &[(String, bool)]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for (name, entry) in cands {
        if *entry && !name.trim().is_empty() && !names.contains(name) {
            names.push(name.clone());
        }
    }
    names
}

/// The message of a failed `select`: what was asked, why it failed, and the entries (at most
/// [`MAX_LISTED`], with how many more).
pub(super) fn select_error(
    control: &str,
    item: &str,
    several: &[String],
    entries: &[String],
) -> String {
    let list = |names: &[String]| {
        let mut s = names
            .iter()
            .take(MAX_LISTED)
            .map(|n| format!("{n:?}"))
            .collect::<Vec<_>>()
            .join(", ");
        if names.len() > MAX_LISTED {
            s.push_str(&format!(" and {} more", names.len() - MAX_LISTED));
        }
        s
    };
    if !several.is_empty() {
        return format!(
            "{control:?} has several entries containing {item:?}: {}; select one by its whole name",
            list(several)
        );
    }
    if entries.is_empty() {
        return format!(
            "{control:?} has no entry {item:?} and lists no entries; open it (click) and observe its list, then select by a listed name"
        );
    }
    format!(
        "{control:?} has no entry {item:?} (nothing was selected); its entries: {}",
        list(entries)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cands(names: &[(&str, bool)]) -> Vec<(String, bool)> {
        names.iter().map(|(n, e)| (n.to_string(), *e)).collect()
    }

    #[test]
    fn normalising_dashes_spaces_and_case() {
        assert_eq!(
            normalise_entry("  Excel 2007\u{2013}365\u{a0}(.XLSX) "),
            "excel 2007-365 (.xlsx)"
        );
        for dash in [
            '\u{2010}', '\u{2011}', '\u{2012}', '\u{2013}', '\u{2014}', '\u{2212}',
        ] {
            assert_eq!(normalise_entry(&format!("a{dash}b")), "a-b");
        }
        assert_eq!(normalise_entry("a \t\u{202f} b"), "a b");
        assert_eq!(normalise_entry("co\u{ad}lour"), "colour");
        assert_eq!(normalise_entry(" \u{a0} "), "");
    }

    /// Defect 8 (issue 11): a hyphen in the request matches the entry's en dash.
    #[test]
    fn select_matches_exactly_then_normalised() {
        let c = cands(&[
            ("All Formats", true),
            ("Excel 2007\u{2013}365 (.xlsx)", true),
            ("Excel 97\u{2013}2003 (.xls)", true),
        ]);
        assert_eq!(
            match_entry("Excel 2007-365 (.xlsx)", &c),
            EntryMatch::One(1)
        );
        assert_eq!(
            match_entry("excel 2007 \u{2014} 365 (.XLSX)", &c),
            EntryMatch::NoMatch
        );
        assert_eq!(match_entry("EXCEL 97-2003 (.XLS)", &c), EntryMatch::One(2));
        // the exact name wins over a normalised one, entries over other nodes
        let c = cands(&[("utf-8", false), ("UTF-8", true), ("UTF\u{2011}8", true)]);
        assert_eq!(match_entry("UTF\u{2011}8", &c), EntryMatch::One(2));
        assert_eq!(match_entry("UTF-8", &c), EntryMatch::One(1));
        assert_eq!(match_entry("utf-8", &c), EntryMatch::One(0));
        assert_eq!(match_entry("Utf-8", &c), EntryMatch::One(1));
    }

    /// Defect 8 (issue 11): a part of a name matches only when one entry contains it; an
    /// unknown or empty name matches nothing (so nothing is selected).
    #[test]
    fn select_never_guesses() {
        let c = cands(&[
            ("All Formats", true),
            ("Excel 2007\u{2013}365 (.xlsx)", true),
            ("Excel 97\u{2013}2003 (.xls)", true),
            ("Text CSV (.csv)", false),
        ]);
        assert_eq!(match_entry("csv", &c), EntryMatch::NoMatch);
        assert_eq!(match_entry("(.xlsx)", &c), EntryMatch::One(1));
        assert_eq!(match_entry("excel", &c), EntryMatch::Several(vec![1, 2]));
        assert_eq!(match_entry("Excel 2010", &c), EntryMatch::NoMatch);
        assert_eq!(match_entry("  ", &c), EntryMatch::NoMatch);
        assert_eq!(match_entry("", &[]), EntryMatch::NoMatch);
    }

    /// Defect 8 (issue 11): the error lists the entries, at most 30, and says how many more.
    #[test]
    fn a_failed_select_lists_the_entries() {
        let many: Vec<(String, bool)> = (0..45).map(|i| (format!("Entry {i}"), true)).collect();
        let names = entry_names(&many);
        let msg = select_error("Type", "Nope", &[], &names);
        assert!(
            msg.contains("\"Entry 0\"") && msg.contains("\"Entry 29\""),
            "{msg}"
        );
        assert!(
            !msg.contains("\"Entry 30\"") && msg.contains("and 15 more"),
            "{msg}"
        );
        assert!(msg.contains("nothing was selected"), "{msg}");
        let dup = cands(&[("A", true), ("A", true), ("", true), ("label", false)]);
        assert_eq!(entry_names(&dup), vec!["A".to_string()]);
        let msg = select_error("Type", "Nope", &[], &[]);
        assert!(msg.contains("open it"), "{msg}");
        let msg = select_error("Type", "ex", &["Ex 1".into(), "Ex 2".into()], &names);
        assert!(msg.contains("several") && msg.contains("\"Ex 2\""), "{msg}");
    }
}
