//! What changed in a window between two observations, for the AppAgent's prompt: the controls
//! that appeared, disappeared, or whose value, name or state changed. A model that sees "1
//! changed (edit "Display": "12" → "12×")" knows its action took effect without comparing two
//! control lists itself.
//!
//! Controls are matched by identity: first by their id (stable on every desktop while the
//! control lives), then, among those left, by role, name and rough position (a toolkit that
//! rebuilt a widget gives it a new id), then by role and name when that pairs them one to one.
//! A control that only moved is counted, not listed.

use std::collections::HashMap;

use crate::ports::{Control, ControlStates, Rect};

/// Most controls listed per kind of change (the rest are counted).
const MAX_LISTED: usize = 3;
/// Longest name or value shown for one control, in characters.
const MAX_TEXT: usize = 30;
/// Longest line, in characters.
const MAX_LINE: usize = 400;
/// Grid of the rough position, in pixels: a control whose centre stays in the same cell is
/// at the same place.
const GRID: i32 = 24;

/// One control that changed, before and after.
#[derive(Debug, Clone, PartialEq)]
pub struct Changed {
    /// The control as it was.
    pub before: Control,
    /// The control as it is.
    pub after: Control,
}

/// The difference between two observations of one window.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WindowChanges {
    /// Controls that are new, in the order of the new observation.
    pub appeared: Vec<Control>,
    /// Controls that are gone, in the order of the old observation.
    pub disappeared: Vec<Control>,
    /// Controls whose name, value, enabled state or states changed.
    pub changed: Vec<Changed>,
    /// Controls that only moved or changed size.
    pub moved: usize,
}

impl WindowChanges {
    /// Whether no control appeared, disappeared, changed or moved.
    pub fn is_empty(&self) -> bool {
        self.appeared.is_empty()
            && self.disappeared.is_empty()
            && self.changed.is_empty()
            && self.moved == 0
    }

    /// One line for the prompt, at most 400 characters: `Since your last action: 2
    /// appeared (button "OK", dialog "Save As"), 1 changed (edit "Display": "12" → "12×")`.
    pub fn line(&self) -> String {
        let mut parts = Vec::new();
        if !self.appeared.is_empty() {
            parts.push(listed("appeared", &self.appeared, brief));
        }
        if !self.disappeared.is_empty() {
            parts.push(listed("disappeared", &self.disappeared, brief));
        }
        if !self.changed.is_empty() {
            parts.push(listed("changed", &self.changed, describe_change));
        }
        if self.moved > 0 {
            parts.push(format!("{} moved", self.moved));
        }
        let line = if parts.is_empty() {
            "Since your last action: nothing changed in the window's controls".to_string()
        } else {
            format!("Since your last action: {}", parts.join(", "))
        };
        clip_chars(&line, MAX_LINE)
    }
}

/// The changes from `before` to `after` (two observations of the same window).
pub fn diff(before: &[Control], after: &[Control]) -> WindowChanges {
    // pairs[j] = index in `before` of the match of after[j]
    let mut pairs: Vec<Option<usize>> = vec![None; after.len()];
    let mut taken = vec![false; before.len()];

    // 1. by id (the first unused control of that id: ids are unique in practice)
    let mut by_id: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, c) in before.iter().enumerate() {
        by_id.entry(c.id.as_str()).or_default().push(i);
    }
    for (j, c) in after.iter().enumerate() {
        if let Some(list) = by_id.get_mut(c.id.as_str()) {
            if let Some(pos) = list.iter().position(|&i| !taken[i]) {
                let i = list.remove(pos);
                taken[i] = true;
                pairs[j] = Some(i);
            }
        }
    }
    // 2. by role, name and rough position; 3. by role and name when one to one
    match_left(before, after, &mut pairs, &mut taken, |c| {
        let (x, y) = centre(c.rect);
        format!(
            "{}\u{0}{}\u{0}{}\u{0}{}",
            c.role,
            c.name,
            x / GRID,
            y / GRID
        )
    });
    match_unique(before, after, &mut pairs, &mut taken);

    let mut out = WindowChanges::default();
    for (j, p) in pairs.iter().enumerate() {
        match p {
            None => out.appeared.push(after[j].clone()),
            Some(i) => {
                let (b, a) = (&before[*i], &after[j]);
                if differs(b, a) {
                    out.changed.push(Changed {
                        before: b.clone(),
                        after: a.clone(),
                    });
                } else if b.rect != a.rect {
                    out.moved += 1;
                }
            }
        }
    }
    out.disappeared = before
        .iter()
        .zip(&taken)
        .filter(|(_, t)| !**t)
        .map(|(c, _)| c.clone())
        .collect();
    out
}

/// Match the controls left on both sides that share a key, in order.
fn match_left(
    before: &[Control],
    after: &[Control],
    pairs: &mut [Option<usize>],
    taken: &mut [bool],
    key: impl Fn(&Control) -> String,
) {
    let mut left: HashMap<String, Vec<usize>> = HashMap::new();
    for (i, c) in before.iter().enumerate() {
        if !taken[i] {
            left.entry(key(c)).or_default().push(i);
        }
    }
    if left.is_empty() {
        return;
    }
    for (j, c) in after.iter().enumerate() {
        if pairs[j].is_some() {
            continue;
        }
        if let Some(list) = left.get_mut(&key(c)) {
            if !list.is_empty() {
                let i = list.remove(0);
                taken[i] = true;
                pairs[j] = Some(i);
            }
        }
    }
}

/// Match the controls left whose role and name occur exactly once on each side.
fn match_unique(
    before: &[Control],
    after: &[Control],
    pairs: &mut [Option<usize>],
    taken: &mut [bool],
) {
    let key = |c: &Control| format!("{}\u{0}{}", c.role, c.name);
    let mut b: HashMap<String, Vec<usize>> = HashMap::new();
    for (i, c) in before.iter().enumerate() {
        if !taken[i] {
            b.entry(key(c)).or_default().push(i);
        }
    }
    let mut a: HashMap<String, Vec<usize>> = HashMap::new();
    for (j, c) in after.iter().enumerate() {
        if pairs[j].is_none() {
            a.entry(key(c)).or_default().push(j);
        }
    }
    for (k, js) in a {
        if let (Some(is), [j]) = (b.get(&k), js.as_slice()) {
            if let [i] = is.as_slice() {
                taken[*i] = true;
                pairs[*j] = Some(*i);
            }
        }
    }
}

fn centre(r: Rect) -> (i32, i32) {
    (
        r.x.saturating_add((r.w / 2) as i32),
        r.y.saturating_add((r.h / 2) as i32),
    )
}

/// Whether a control changed in a way the model should hear about (not just moved).
fn differs(b: &Control, a: &Control) -> bool {
    b.name != a.name
        || b.value != a.value
        || b.enabled != a.enabled
        || state_list(&b.states, b.enabled) != state_list(&a.states, a.enabled)
}

/// The states shown to the model, `disabled` included.
fn state_list(s: &ControlStates, enabled: bool) -> Vec<&'static str> {
    let mut v: Vec<&'static str> = [
        (s.focused, "focused"),
        (s.checked, "checked"),
        (s.selected, "selected"),
        (s.expanded, "expanded"),
        (s.editable, "editable"),
    ]
    .into_iter()
    .filter_map(|(on, w)| on.then_some(w))
    .collect();
    if !enabled {
        v.push("disabled");
    }
    v
}

fn clip_chars(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// `role "name"`, the name clipped (the role alone for an unnamed control).
fn brief(c: &Control) -> String {
    if c.name.trim().is_empty() {
        return c.role.clone();
    }
    // text read in the pixels (docs/sight.md): the evidence says where it was read
    let read = if c.source.is_tree() {
        String::new()
    } else {
        format!(
            " read in the pixels at {},{} {}x{}",
            c.rect.x, c.rect.y, c.rect.w, c.rect.h
        )
    };
    format!("{} {}{read}", c.role, quoted(&c.name))
}

fn quoted(s: &str) -> String {
    let flat = s.split_whitespace().collect::<Vec<_>>().join(" ");
    format!("\"{}\"", clip_chars(&flat, MAX_TEXT))
}

/// `role "name": "old" → "new"` for a value, `role "old" → "new"` for a name, and the states
/// gained (`+checked`) and lost (`-focused`).
fn describe_change(c: &Changed) -> String {
    let (b, a) = (&c.before, &c.after);
    let mut s = if b.name != a.name {
        format!("{} {} → {}", a.role, quoted(&b.name), quoted(&a.name))
    } else {
        brief(a)
    };
    if b.value != a.value {
        let v = |v: &Option<String>| v.as_deref().map_or("(none)".to_string(), quoted);
        s.push_str(&format!(": {} → {}", v(&b.value), v(&a.value)));
    }
    let (sb, sa) = (
        state_list(&b.states, b.enabled),
        state_list(&a.states, a.enabled),
    );
    let mut marks: Vec<String> = sa
        .iter()
        .filter(|w| !sb.contains(w))
        .map(|w| format!("+{w}"))
        .collect();
    marks.extend(
        sb.iter()
            .filter(|w| !sa.contains(w))
            .map(|w| format!("-{w}")),
    );
    if !marks.is_empty() {
        s.push_str(&format!(" [{}]", marks.join(" ")));
    }
    s
}

/// `N <what> (a, b, c and M more)`.
fn listed<T>(what: &str, items: &[T], show: impl Fn(&T) -> String) -> String {
    let shown: Vec<String> = items.iter().take(MAX_LISTED).map(show).collect();
    let more = items.len().saturating_sub(MAX_LISTED);
    let mut inner = shown.join(", ");
    if more > 0 {
        inner.push_str(&format!(" and {more} more"));
    }
    format!("{} {what} ({inner})", items.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ctl(id: &str, role: &str, name: &str, value: Option<&str>, x: i32) -> Control {
        Control {
            source: Default::default(),
            id: id.into(),
            role: role.into(),
            name: name.into(),
            value: value.map(str::to_string),
            rect: Rect {
                x,
                y: 10,
                w: 40,
                h: 20,
            },
            enabled: true,
            states: ControlStates::default(),
        }
    }

    #[test]
    fn the_same_controls_change_nothing() {
        let a = vec![
            ctl("1", "button", "OK", None, 0),
            ctl("2", "edit", "Name", Some("x"), 50),
        ];
        let d = diff(&a, &a);
        assert!(d.is_empty());
        assert_eq!(
            d.line(),
            "Since your last action: nothing changed in the window's controls"
        );
    }

    #[test]
    fn appeared_disappeared_and_a_value_change_are_listed() {
        let before = vec![
            ctl("d", "edit", "Display", Some("12"), 0),
            ctl("x", "button", "Cancel", None, 100),
        ];
        let after = vec![
            ctl("d", "edit", "Display", Some("12×"), 0),
            ctl("ok", "button", "OK", None, 200),
            ctl("dlg", "dialog", "Save As", None, 300),
        ];
        let d = diff(&before, &after);
        assert_eq!(
            d.line(),
            "Since your last action: 2 appeared (button \"OK\", dialog \"Save As\"), \
             1 disappeared (button \"Cancel\"), 1 changed (edit \"Display\": \"12\" → \"12×\")"
        );
    }

    /// A calculator's display read in the pixels: its old text goes, its new text appears,
    /// each with where it was read.
    #[test]
    fn text_read_in_the_pixels_says_where_it_was_read() {
        let mut zero = ctl("ocr:728,328,8,13", "label", "0", None, 700);
        zero.source = crate::ports::ControlSource::Ocr;
        let mut result = ctl("ocr:720,328,16,13", "label", "84", None, 690);
        result.source = crate::ports::ControlSource::Ocr;
        let d = diff(&[zero], &[result]);
        assert_eq!(
            d.line(),
            "Since your last action: 1 appeared (label \"84\" read in the pixels at 690,10 40x20), \
             1 disappeared (label \"0\" read in the pixels at 700,10 40x20)"
        );
    }

    #[test]
    fn a_rebuilt_control_is_matched_by_role_name_and_place() {
        let before = vec![ctl("old-7", "check box", "Bold", Some("unchecked"), 10)];
        let mut after = vec![ctl("new-9", "check box", "Bold", Some("checked"), 12)];
        after[0].states.checked = true;
        let d = diff(&before, &after);
        assert!(d.appeared.is_empty() && d.disappeared.is_empty());
        assert_eq!(d.changed.len(), 1);
        assert!(
            d.line().contains("\"unchecked\" → \"checked\" [+checked]"),
            "{}",
            d.line()
        );
    }

    #[test]
    fn a_rebuilt_control_that_moved_far_is_matched_when_its_name_is_unique() {
        let before = vec![ctl("a", "button", "Save", None, 0)];
        let after = vec![ctl("b", "button", "Save", None, 500)];
        let d = diff(&before, &after);
        assert_eq!(d.moved, 1);
        assert_eq!(d.line(), "Since your last action: 1 moved");
    }

    #[test]
    fn a_renamed_control_and_states_show_both_sides() {
        let before = vec![ctl("t", "toggle button", "Play", None, 0)];
        let mut after = vec![ctl("t", "toggle button", "Pause", None, 0)];
        after[0].states.focused = true;
        after[0].enabled = false;
        let line = diff(&before, &after).line();
        assert!(
            line.contains("toggle button \"Play\" → \"Pause\" [+focused +disabled]"),
            "{line}"
        );
    }

    #[test]
    fn an_unnamed_control_is_named_by_its_role() {
        let before = vec![ctl("d", "text", "", Some("1"), 0)];
        let after = vec![ctl("d", "text", "", Some("12"), 0)];
        assert_eq!(
            diff(&before, &after).line(),
            "Since your last action: 1 changed (text: \"1\" → \"12\")"
        );
    }

    #[test]
    fn long_lists_are_counted_and_the_line_is_bounded() {
        let after: Vec<Control> = (0..50)
            .map(|i| {
                ctl(
                    &format!("c{i}"),
                    "list item",
                    &"long name ".repeat(20),
                    None,
                    i,
                )
            })
            .collect();
        let line = diff(&[], &after).line();
        assert!(line.contains("50 appeared"), "{line}");
        assert!(line.contains("and 47 more"), "{line}");
        assert!(line.chars().count() <= MAX_LINE, "{line}");
    }

    fn arb_control() -> impl Strategy<Value = Control> {
        (
            0u8..12,
            prop::sample::select(vec!["button", "edit", "label"]),
            prop::sample::select(vec!["A", "B", "C", ""]),
            prop::option::of(prop::sample::select(vec!["1", "2", "ü"])),
            0i32..400,
            any::<bool>(),
        )
            .prop_map(|(id, role, name, value, x, checked)| {
                let mut c = ctl(&format!("id{id}"), role, name, value, x);
                c.states.checked = checked;
                c
            })
    }

    proptest! {
        /// Every control of both sides is accounted for exactly once, and the line stays
        /// short.
        #[test]
        fn every_control_is_accounted_for(
            before in prop::collection::vec(arb_control(), 0..30),
            after in prop::collection::vec(arb_control(), 0..30),
        ) {
            let d = diff(&before, &after);
            let matched = after.len() - d.appeared.len();
            prop_assert_eq!(matched, before.len() - d.disappeared.len());
            prop_assert!(d.changed.len() + d.moved <= matched);
            prop_assert!(d.line().chars().count() <= MAX_LINE);
            prop_assert!(diff(&after, &after).is_empty());
        }
    }
}
