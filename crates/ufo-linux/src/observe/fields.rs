//! One control of a window read: its details (extents, actions, text, value) placed on the
//! screen, its value and its name (a field by the labels that point at it).

use ufo_core::{Control, Rect};

use super::candidates::{Candidate, FieldSeed, MAX_NEAR_LABELS};
use super::observer::Observer;
use crate::a11y::bus::Node;
use crate::apps::office;
use crate::controls::{ControlDetail, CtlInfo, Fetched};
use crate::display::pixels::intersect;
use crate::display::WinId;
use crate::names::{self, clean_name, collapse_ws, FieldEvidence, ValueKind};
use crate::vocab::{
    iface, role, role_name, state, ANY_BUTTON, CHECKABLE, FIELDS, ITEMS, LABELLED, RANGES,
    STATE_LABELS, TEXTUAL,
};
use crate::LinuxError;

/// What [`LinuxDesktop::read_details`] reads of one candidate: its extents (`None` without
/// the component interface), action names, text and value.
pub(super) type Details = (
    Result<Option<(i32, i32, i32, i32)>, LinuxError>,
    Result<Vec<String>, LinuxError>,
    Result<Option<String>, LinuxError>,
    Option<f64>,
);

/// Relation numbers (`org.a11y.atspi.RelationType`).
const LABEL_FOR: u32 = 1;

const LABELLED_BY: u32 = 2;

/// Longest value text kept in an observation (the full text is one `read_text` away).
const VALUE_MAX: usize = 2000;

impl Observer<'_> {
    /// One candidate from its details (extents, actions, text and value: `read_details`),
    /// named (a field by the labels that point at it); `None` when it is not on screen.
    pub(super) async fn fetch_control(
        &self,
        bus: &str,
        c: &Candidate,
        (ext, actions, text, value): Details,
        offset: (i32, i32),
        win: Rect,
        xid: WinId,
    ) -> Result<Option<Fetched>, LinuxError> {
        let n = &c.node;
        let Some((x, y, ew, eh)) = ext? else {
            return Ok(None);
        };
        if x == i32::MIN || y == i32::MIN || ew < 2 || eh < 2 {
            return Ok(None);
        }
        let actions = actions.unwrap_or_default();
        let is_button = ANY_BUTTON.contains(n.role);
        if is_button && !n.has(state::FOCUSABLE) && c.wraps_button {
            // GTK4 wraps a menu button in a second, inert button
            return Ok(None);
        }
        let raw = Rect {
            x: x.saturating_add(offset.0),
            y: y.saturating_add(offset.1),
            w: ew as u32,
            h: eh as u32,
        };
        let Some((rect, place)) = placed(c, raw, win) else {
            return Ok(None);
        };
        let Some(rect) = self.in_tab_bar(bus, c, rect, offset).await else {
            return Ok(None);
        };
        let mut value = shown_value(c, text.unwrap_or(None), value);
        if c.display {
            let shown = names::display(&n.name, &n.description);
            return Ok(Some(fetched(
                bus,
                n,
                shown.name,
                shown.value,
                rect,
                actions,
                xid,
            )));
        }
        let mut by_container = None;
        let name = match &c.field {
            Some(seed) if !FIELDS.contains(n.role) => {
                let at = (x, y, ew, eh);
                self.bare_button_name(bus, c, seed, at, value.as_deref())
                    .await
            }
            Some(seed) => {
                let e = self.field_evidence(bus, c, seed, value.as_deref()).await;
                let (name, source) = names::named_field(&e);
                if source == names::NameSource::Container {
                    let at = (x, y, ew, eh);
                    by_container = Some(self.without_container(bus, seed, n, at).await);
                }
                // a combo box named by its chosen option shows the option as its value
                if value.is_none() && n.role == role::COMBO_BOX && name != e.own {
                    // (a toolkit type name, GTK4's "GtkDropDown", is no option)
                    value = Some(collapse_ws(&e.own)).filter(|v| !names::is_noise(v));
                }
                name
            }
            None => shown_name(c, value.as_deref()),
        };
        let name = match &c.closes_tab {
            Some(tab) => format!("{name} {tab}"),
            None => name,
        };
        let mut f = fetched(bus, n, name, value, rect, actions, xid);
        f.info.shown_on_hover = c.closes_tab.is_some();
        f.by_container = by_container;
        Ok(Some(with_place(f, place)))
    }

    /// A step of [`Self::fetch_control`]: a bare button's name. Only a label pointing at it
    /// names it, else the label just left of it on its line, else what it shows.
    async fn bare_button_name(
        &self,
        bus: &str,
        c: &Candidate,
        seed: &FieldSeed,
        at: (i32, i32, i32, i32),
        value: Option<&str>,
    ) -> String {
        let label = match self.labelled_by(bus, &c.node, seed).await {
            Some(label) => Some(label),
            None => self.label_left_of(bus, seed, at).await,
        };
        match label {
            Some(label) => names::label_as_name(&label),
            None => shown_name(c, value),
        }
    }

    /// A step of [`Self::fetch_control`]: what is shown of a libadwaita tab or its close
    /// button, its box clipped by its tab bar's (`None`: the bar is hidden, or it lies outside;
    /// apps/adwaita.rs). Any other control's box as it is, and so a tab's when its bar's box
    /// cannot be read.
    async fn in_tab_bar(
        &self,
        bus: &str,
        c: &Candidate,
        rect: Rect,
        offset: (i32, i32),
    ) -> Option<Rect> {
        let Some(bar) = &c.tab_bar else {
            return Some(rect);
        };
        let Ok((x, y, w, h)) = self.bus.extents(bus, bar).await else {
            return Some(rect);
        };
        let bar = Rect {
            x: x.saturating_add(offset.0),
            y: y.saturating_add(offset.1),
            w: u32::try_from(w).ok()?,
            h: u32::try_from(h).ok()?,
        };
        intersect(rect, bar).filter(|r| r.w >= 2 && r.h >= 2)
    }

    /// A step of [`Self::fetch_control`]: the name of a field named by its container, for
    /// when that name names several fields of the window (read.rs, `unshared`): the label
    /// just left of it on its line, else its description, else none.
    async fn without_container(
        &self,
        bus: &str,
        seed: &FieldSeed,
        n: &Node,
        at: (i32, i32, i32, i32),
    ) -> String {
        let left = self.label_left_of(bus, seed, at).await;
        let described = collapse_ws(&n.description);
        left.map(|l| names::label_as_name(&l))
            .filter(|l| !l.is_empty())
            .or_else(|| (!names::is_noise(&described)).then_some(described))
            .unwrap_or_default()
    }

    /// A step of [`Self::fetch_control`]: the evidence for a field's name. Its relations
    /// (and the relations of the labels near it, and its placeholder) are asked only when
    /// its own name may not be a name: empty, a combo box's (its chosen option), or an
    /// empty entry's (GTK3 names it by its placeholder).
    pub(super) async fn field_evidence(
        &self,
        bus: &str,
        c: &Candidate,
        seed: &FieldSeed,
        value: Option<&str>,
    ) -> FieldEvidence {
        let n = &c.node;
        let own = n.name.clone();
        let empty = value.is_none_or(|v| v.trim().is_empty());
        let doubtful = own.trim().is_empty() || n.role == role::COMBO_BOX || empty;
        let mut e = FieldEvidence {
            own,
            value: if n.role == role::COMBO_BOX && value.is_none() {
                // GTK3 names a combo box by its chosen option
                Some(n.name.clone())
            } else {
                value.map(str::to_string)
            },
            beside: seed.beside.clone(),
            parent: seed.parent.clone(),
            description: n.description.clone(),
            ..FieldEvidence::default()
        };
        if !doubtful {
            return e;
        }
        let (relation, placeholder) = tokio::join!(self.labelled_by(bus, n, seed), async {
            if empty && !n.name.trim().is_empty() && n.role != role::COMBO_BOX {
                self.bus
                    .attributes(bus, &n.path)
                    .await
                    .ok()
                    .and_then(|a| a.get("placeholder-text").cloned())
            } else {
                None
            }
        });
        e.relation = relation;
        e.placeholder = placeholder;
        e
    }

    /// The text of the labels that point at a field: its `LABELLED_BY` targets, else the
    /// labels near it whose `LABEL_FOR` names it (Thunar's rename entry has only the
    /// latter).
    pub(super) async fn labelled_by(
        &self,
        bus: &str,
        n: &Node,
        seed: &FieldSeed,
    ) -> Option<String> {
        let own = self.bus.relations(bus, &n.path).await.unwrap_or_default();
        let targets: Vec<String> = own
            .into_iter()
            .filter(|(k, _)| *k == LABELLED_BY)
            .flat_map(|(_, t)| t)
            .collect();
        if !targets.is_empty() {
            let names = futures::future::join_all(targets.iter().take(MAX_NEAR_LABELS).map(
                |t| async move {
                    match seed.near_labels.iter().find(|(p, _)| p == t) {
                        Some((_, name)) => name.clone(),
                        None => self
                            .bus
                            .prop::<String>(bus, t, "org.a11y.atspi.Accessible", "Name")
                            .await
                            .unwrap_or_default(),
                    }
                },
            ))
            .await;
            let text = collapse_ws(&names.join(" "));
            if !text.is_empty() {
                return Some(text);
            }
        }
        let sets = futures::future::join_all(
            seed.near_labels
                .iter()
                .map(|(p, _)| self.bus.relations(bus, p)),
        )
        .await;
        let text: Vec<&str> = seed
            .near_labels
            .iter()
            .zip(sets)
            .filter(|(_, set)| {
                set.as_ref().is_ok_and(|set| {
                    set.iter().any(|(k, t)| {
                        *k == LABEL_FOR
                            && (t.contains(&n.path)
                                || seed.wrapper.as_ref().is_some_and(|w| t.contains(w)))
                    })
                })
            })
            .map(|((_, name), _)| name.as_str())
            .collect();
        (!text.is_empty()).then(|| collapse_ws(&text.join(" ")))
    }

    /// The label just left of a bare button, on its line (LibreOffice's "Master Page:" list
    /// box has no relation): the near labels' extents are read, bounded by their number.
    pub(super) async fn label_left_of(
        &self,
        bus: &str,
        seed: &FieldSeed,
        at: (i32, i32, i32, i32),
    ) -> Option<String> {
        let boxes = futures::future::join_all(
            seed.near_labels
                .iter()
                .map(|(p, _)| self.bus.extents(bus, p)),
        )
        .await;
        let near: Vec<(names::Extents, &str)> = seed
            .near_labels
            .iter()
            .zip(boxes)
            .filter_map(|((_, name), b)| Some((b.ok()?, name.as_str())))
            .collect();
        names::label_left_of(at, &near).map(str::to_string)
    }

    /// The node's extents, actions, text and value for [`Self::fetch_control`], read at once
    /// (each only when the node has the interface, and the actions only when asked for or of
    /// a menu).
    pub(super) async fn read_details(&self, bus: &str, n: &Node, with_actions: bool) -> Details {
        let ext = async {
            if n.ifaces & iface::COMPONENT != 0 {
                self.bus.extents(bus, &n.path).await.map(Some)
            } else {
                Ok(None)
            }
        };
        let acts = async {
            if reads_actions(n, with_actions) {
                self.bus.actions(bus, &n.path).await
            } else {
                Ok(Vec::new())
            }
        };
        let text = async {
            if reads_text(n) {
                self.bus.text(bus, &n.path).await.map(Some)
            } else {
                Ok(None)
            }
        };
        let value = async {
            if reads_value(n) {
                self.bus.value(bus, &n.path).await.ok()
            } else {
                None
            }
        };
        tokio::join!(ext, acts, text, value)
    }
}

/// Whether [`Observer::read_details`] asks `n` for its action names: when asked for, and a
/// menu's always (they tell a real menu from LibreOffice's shadow of it).
fn reads_actions(n: &Node, with_actions: bool) -> bool {
    (with_actions || n.role == role::MENU) && n.ifaces & iface::ACTION != 0
}

/// Whether [`Observer::read_details`] asks `n` for its text.
fn reads_text(n: &Node) -> bool {
    n.ifaces & iface::TEXT != 0 && (TEXTUAL.contains(n.role) || office::is_text_part(n.role))
}

/// Whether [`Observer::read_details`] asks `n` for its value (text, where it has both, says it).
fn reads_value(n: &Node) -> bool {
    n.ifaces & iface::VALUE != 0 && n.ifaces & iface::TEXT == 0
}

/// Whether what [`Observer::read_details`] reads of `n` may be kept between observations
/// (`places.rs`): its extents, a menu's action names and a button's value (LibreOffice's
/// toolbar buttons give their checked state as a value, and announce its change as a state
/// change); never a text, nor every control's actions.
pub(super) fn may_keep_details(n: &Node, with_actions: bool) -> bool {
    n.ifaces & iface::COMPONENT != 0 && !with_actions && !reads_text(n)
}

/// The value a control shows: none for a password; its text (clipped to [`VALUE_MAX`]; a
/// combo box's chosen option when the text is only embedded objects); its number; checked
/// or not for a checkable one.
fn shown_value(c: &Candidate, mut text: Option<String>, value: Option<f64>) -> Option<String> {
    let n = &c.node;
    let unreadable = text.as_deref().is_none_or(|t| {
        t.trim().is_empty() || (t.contains('\u{fffc}') && crate::apps::web::is_placeholder(t))
    });
    if unreadable && c.choice.is_some() {
        // embedded objects only or nothing (a web page, a <select>): its chosen option is
        // what it shows (else its own name would be taken for its option: field_evidence)
        text = c.choice.clone();
    }
    if n.role == role::PASSWORD_TEXT {
        None
    } else if let Some(t) = text {
        let mut t = t;
        if t.len() > VALUE_MAX {
            let mut end = VALUE_MAX;
            while !t.is_char_boundary(end) {
                end -= 1;
            }
            t.truncate(end);
            t.push('…');
        }
        Some(t)
    } else if let Some(v) = value
        .map(|v| format!("{v}"))
        .filter(|v| names::value_says_something(value_kind(n.role), v))
    {
        // (a button's number says nothing: LibreOffice gives its buttons a value of 0, and
        // its toggle buttons are checked or not)
        Some(v)
    } else if CHECKABLE.contains(n.role) {
        Some(
            if n.has(state::CHECKED) {
                "checked"
            } else {
                "unchecked"
            }
            .to_string(),
        )
    } else {
        None
    }
}

/// What a value can mean for a control of role `r` (names.rs).
fn value_kind(r: u32) -> ValueKind {
    if CHECKABLE.contains(r) {
        ValueKind::Checkable
    } else if RANGES.contains(r) {
        ValueKind::Range
    } else if FIELDS.contains(r) || TEXTUAL.contains(r) {
        ValueKind::Field
    } else {
        ValueKind::Plain
    }
}

/// The name a control shows: a paragraph's start (its table cell's name first), an item
/// named by its children's text first, else its own name (then description, children).
fn shown_name(c: &Candidate, value: Option<&str>) -> String {
    let n = &c.node;
    let listed = crate::apps::adwaita::listed_role(n);
    if office::is_text_part(n.role) && n.name.trim().is_empty() {
        // a paragraph: the start of its text (its table cell's name first)
        let cell = c.child_text.strip_prefix('\u{1}');
        office::paragraph_name(value.unwrap_or(""), cell)
    } else if ITEMS.contains(listed) && !c.child_text.is_empty() {
        clean_name(&n.name, &c.child_text, &n.description)
    } else if LABELLED.contains(listed) {
        // a button's or menu item's label may carry its mnemonic mark ("_Add")
        names::without_mnemonic(&clean_name(&n.name, &n.description, &c.child_text))
    } else {
        clean_name(&n.name, &n.description, &c.child_text)
    }
}

/// A control as the actions know it (`info`) and as the agent sees it (`detail`).
/// Where a candidate with box `raw` is listed in window `win`: its box clipped to the window;
/// a page's control out of view where it is, with its place (`None`: not listed).
fn placed(c: &Candidate, raw: Rect, win: Rect) -> Option<(Rect, ufo_core::Place)> {
    if c.beyond {
        crate::apps::web::place_out_of_view(raw, win).map(|place| (raw, place))
    } else {
        intersect(raw, win).map(|rect| (rect, ufo_core::Place::InView))
    }
}

/// A control with its place said (in the engine's control, the action's info and the states
/// `inspect` shows).
fn with_place(mut f: Fetched, place: ufo_core::Place) -> Fetched {
    if let Some(words) = place.words() {
        f.detail.control.states.place = place;
        f.info.place = place;
        f.detail.states.push(words);
    }
    f
}

fn fetched(
    bus: &str,
    n: &Node,
    name: String,
    value: Option<String>,
    rect: Rect,
    actions: Vec<String>,
    xid: WinId,
) -> Fetched {
    let role = role_name(crate::apps::adwaita::listed_role(n));
    let enabled = n.has(state::SENSITIVE) || n.has(state::ENABLED);
    let mut states = Vec::new();
    for (bit, label) in STATE_LABELS {
        if n.has(bit) {
            states.push(label);
        }
    }
    if !enabled {
        states.push("disabled");
    }
    let id = format!("{bus}{}", n.path);
    Fetched {
        info: CtlInfo {
            place: Default::default(),
            bus: bus.to_string(),
            path: n.path.clone(),
            name: name.clone(),
            rect,
            actions: actions.clone(),
            ifaces: n.ifaces,
            states: n.states,
            window: xid,
            seen: crate::controls::Seen {
                role: n.role,
                name: n.name.clone(),
                label: 0,
            },
            part: None,
            shown_on_hover: false,
        },
        detail: ControlDetail {
            control: Control {
                source: Default::default(),
                id,
                role,
                name,
                value,
                rect,
                enabled,
                states: ufo_core::ports::ControlStates {
                    focused: n.has(state::FOCUSED),
                    checked: n.has(state::CHECKED),
                    selected: n.has(state::SELECTED),
                    expanded: n.has(state::EXPANDED),
                    editable: n.has(state::EDITABLE),
                    place: Default::default(),
                },
            },
            states,
            actions,
        },
        by_container: None,
    }
}
