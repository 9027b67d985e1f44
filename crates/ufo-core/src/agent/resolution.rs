//! Control resolution (README "Control resolution"): which control of the observation the
//! model answered a `ControlLabel` / `ControlText` pair means. Never a silent first match: a
//! name that fits several controls is narrowed by exact name, then by a role that fits the
//! function, then by focus; still several, the action fails and lists them with their labels.
//! [`resolve`] is the same label-then-text rule over any list (the host's windows and apps).

use crate::ports::Control;

/// Roles a text can be typed or set into.
const EDITABLE: &[&str] = &[
    "edit",
    "text",
    "entry",
    "password text",
    "terminal",
    "spin button",
    "editbar",
    "paragraph",
    "document text",
    "document web",
    "document frame",
    "document email",
    "combo box",
];
/// Roles whose text is worth reading.
const READABLE: &[&str] = &[
    "document",
    "document text",
    "document web",
    "document frame",
    "document email",
    "document spreadsheet",
    "document presentation",
    "terminal",
    "text",
    "edit",
    "paragraph",
];
/// Roles that scroll.
const SCROLLABLE: &[&str] = &[
    "document",
    "document text",
    "document web",
    "document frame",
    "document email",
    "document spreadsheet",
    "document presentation",
    "page",
    "scroll pane",
    "list",
    "list box",
    "table",
    "tree",
    "tree table",
    "grid",
    "terminal",
];
/// Roles that are clicked.
const CLICKABLE: &[&str] = &[
    "button",
    "push button",
    "toggle button",
    "push button menu",
    "menu item",
    "check menu item",
    "radio menu item",
    "menuitem",
    "menu",
    "link",
    "check box",
    "radio button",
    "page tab",
    "tab",
];
/// Roles an item is selected in.
const SELECTABLE: &[&str] = &[
    "combo box",
    "list",
    "list box",
    "menu",
    "menu bar",
    "page tab list",
    "tree",
    "tree table",
    "table",
];

/// The roles that fit a GUI function (canonical name), if the function prefers some.
pub fn fitting_roles(function: &str) -> Option<&'static [&'static str]> {
    match function.trim().to_ascii_lowercase().as_str() {
        "set_text" | "type_keys" | "settext" | "typekeys" | "set_edit_text" | "keyboard_input" => {
            Some(EDITABLE)
        }
        "read_text" | "readtext" | "texts" => Some(READABLE),
        "scroll" | "wheel_mouse_input" => Some(SCROLLABLE),
        "click" | "click_input" | "double_click" => Some(CLICKABLE),
        "select" | "select_item" => Some(SELECTABLE),
        _ => None,
    }
}

/// Why no single control was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unresolved {
    /// Nothing matches the label or the text.
    NoMatch,
    /// Several controls remain after every rule: their indexes (label = index + 1).
    Ambiguous(Vec<usize>),
}

fn parse_label(label: &str, count: usize) -> Option<usize> {
    label
        .trim()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse::<usize>()
        .ok()
        .filter(|n| *n >= 1 && *n <= count)
        .map(|n| n - 1)
}

/// Find the index of the control a model means for `function` (README.md, "Control
/// resolution"). The label picks the control when its name matches `text` (or `text` is
/// empty). Otherwise `text` is matched against the names: exact matches, else
/// case-insensitive ones; several are narrowed to those whose role fits the function, then to
/// the focused one. More than one left is [`Unresolved::Ambiguous`].
pub fn resolve_control(
    label: &str,
    text: &str,
    controls: &[Control],
    function: &str,
) -> Result<usize, Unresolved> {
    let text = text.trim();
    if let Some(i) = parse_label(label, controls.len()) {
        if text.is_empty() || controls[i].name.trim().eq_ignore_ascii_case(text) {
            return Ok(i);
        }
    }
    if text.is_empty() {
        return Err(Unresolved::NoMatch);
    }
    let mut found: Vec<usize> = (0..controls.len())
        .filter(|&i| controls[i].name.trim() == text)
        .collect();
    if found.is_empty() {
        found = (0..controls.len())
            .filter(|&i| controls[i].name.trim().eq_ignore_ascii_case(text))
            .collect();
    }
    narrow(found, controls, function)
}

/// Narrow several name matches by role, then by focus.
fn narrow(found: Vec<usize>, controls: &[Control], function: &str) -> Result<usize, Unresolved> {
    let mut found = found;
    if found.len() > 1 {
        if let Some(roles) = fitting_roles(function) {
            let fit: Vec<usize> = found
                .iter()
                .copied()
                .filter(|&i| {
                    let r = controls[i].role.trim().to_ascii_lowercase();
                    roles.contains(&r.as_str())
                })
                .collect();
            if !fit.is_empty() {
                found = fit;
            }
        }
    }
    if found.len() > 1 {
        let focused: Vec<usize> = found
            .iter()
            .copied()
            .filter(|&i| controls[i].states.focused)
            .collect();
        if focused.len() == 1 {
            found = focused;
        }
    }
    match found.as_slice() {
        [] => Err(Unresolved::NoMatch),
        [i] => Ok(*i),
        _ => Err(Unresolved::Ambiguous(found)),
    }
}

/// The failure text of an unresolved control, for the model: what it asked for and, when it
/// was ambiguous, the candidates with their labels.
pub fn unresolved_message(
    why: &Unresolved,
    label: &str,
    text: &str,
    function: &str,
    controls: &[Control],
) -> String {
    match why {
        Unresolved::NoMatch => format!(
            "action failed: no control matches ControlLabel {label:?} / ControlText {text:?}; \
             pick a label from the control list"
        ),
        Unresolved::Ambiguous(list) => {
            let shown: Vec<String> = list
                .iter()
                .take(10)
                .map(|&i| {
                    let c = &controls[i];
                    format!(
                        "[{}] {} {:?}{}",
                        i + 1,
                        c.role,
                        c.name,
                        if c.states.focused { " (focused)" } else { "" }
                    )
                })
                .collect();
            let more = if list.len() > 10 {
                format!(" and {} more", list.len() - 10)
            } else {
                String::new()
            };
            format!(
                "action failed: ControlText {text:?} matches {} controls and none fits {function} \
                 better than the others: {}{more}; answer again with the ControlLabel of the one \
                 you mean",
                list.len(),
                shown.join(", ")
            )
        }
    }
}

/// Find the index of the item a model means by `label` and `text` (docs/responses.md "Finding the
/// resolution"): the label wins when its name matches `text` (or `text` is empty); otherwise
/// `text` is matched exactly, then case-insensitively, against each item's names.
pub fn resolve<'n>(
    label: &str,
    text: &str,
    count: usize,
    names: impl Fn(usize) -> Vec<&'n str>,
) -> Option<usize> {
    let text = text.trim();
    let by_label = label
        .trim()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse::<usize>()
        .ok()
        .filter(|n| *n >= 1 && *n <= count)
        .map(|n| n - 1);
    if let Some(i) = by_label {
        if text.is_empty() || names(i).iter().any(|n| n.trim().eq_ignore_ascii_case(text)) {
            return Some(i);
        }
    }
    if text.is_empty() {
        return None;
    }
    (0..count)
        .find(|&i| names(i).iter().any(|n| n.trim() == text))
        .or_else(|| {
            (0..count).find(|&i| names(i).iter().any(|n| n.trim().eq_ignore_ascii_case(text)))
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ports::Rect;

    fn c(role: &str, name: &str, focused: bool) -> Control {
        Control {
            id: format!("{role}-{name}"),
            role: role.into(),
            name: name.into(),
            value: None,
            rect: Rect::default(),
            enabled: true,
            states: crate::ports::ControlStates::focused(focused),
        }
    }

    #[test]
    fn the_label_picks_the_control_when_its_name_matches_or_text_is_empty() {
        let cs = [c("button", "OK", false), c("button", "OK", false)];
        assert_eq!(resolve_control("2", "", &cs, "click"), Ok(1));
        assert_eq!(resolve_control("[2]", "ok", &cs, "click"), Ok(1));
        // unknown label, ambiguous text
        assert_eq!(
            resolve_control("9", "OK", &cs, "click"),
            Err(Unresolved::Ambiguous(vec![0, 1]))
        );
        assert_eq!(
            resolve_control("", "", &cs, "click"),
            Err(Unresolved::NoMatch)
        );
        assert_eq!(
            resolve_control("", "Help", &cs, "click"),
            Err(Unresolved::NoMatch)
        );
    }

    #[test]
    fn a_label_whose_name_differs_resolves_by_text() {
        let cs = [c("button", "OK", false), c("button", "Cancel", false)];
        assert_eq!(resolve_control("1", "Cancel", &cs, "click"), Ok(1));
        assert_eq!(resolve_control("", "CANCEL", &cs, "click"), Ok(1));
    }

    #[test]
    fn exact_name_beats_case_insensitive() {
        let cs = [c("button", "ok", false), c("button", "OK", false)];
        assert_eq!(resolve_control("", "OK", &cs, "click"), Ok(1));
        assert_eq!(resolve_control("", "ok", &cs, "click"), Ok(0));
        // neither exact: both case-insensitive matches are candidates
        assert_eq!(
            resolve_control("", "Ok", &cs, "click"),
            Err(Unresolved::Ambiguous(vec![0, 1]))
        );
    }

    #[test]
    fn a_role_that_fits_the_function_decides() {
        let cs = [
            c("menu", "Terminal", false),
            c("terminal", "Terminal", false),
            c("page tab list", "Page", false),
            c("document web", "Page", false),
            c("link", "Home", false),
            c("list item", "Home", false),
        ];
        assert_eq!(resolve_control("", "Terminal", &cs, "type_keys"), Ok(1));
        assert_eq!(resolve_control("", "Terminal", &cs, "set_text"), Ok(1));
        assert_eq!(resolve_control("", "Terminal", &cs, "read_text"), Ok(1));
        assert_eq!(resolve_control("", "Terminal", &cs, "click"), Ok(0));
        assert_eq!(resolve_control("", "Page", &cs, "scroll"), Ok(3));
        assert_eq!(resolve_control("", "Home", &cs, "click"), Ok(4));
    }

    #[test]
    fn focus_decides_between_controls_of_a_fitting_role() {
        let cs = [
            c("entry", "Name", false),
            c("entry", "Name", true),
            c("label", "Name", false),
        ];
        assert_eq!(resolve_control("", "Name", &cs, "type_keys"), Ok(1));
    }

    #[test]
    fn still_ambiguous_fails_and_lists_the_candidates_with_labels() {
        let cs = [
            c("button", "Save", false),
            c("button", "Save", false),
            c("entry", "Other", false),
        ];
        let r = resolve_control("", "Save", &cs, "click");
        assert_eq!(r, Err(Unresolved::Ambiguous(vec![0, 1])));
        let msg = unresolved_message(&r.unwrap_err(), "", "Save", "click", &cs);
        assert!(msg.contains("[1] button \"Save\""), "{msg}");
        assert!(msg.contains("[2] button \"Save\""), "{msg}");
        assert!(msg.contains("matches 2 controls"), "{msg}");
        // two focused ones are no better
        let cs = [c("entry", "A", true), c("entry", "A", true)];
        assert!(matches!(
            resolve_control("", "A", &cs, "type_keys"),
            Err(Unresolved::Ambiguous(_))
        ));
    }

    #[test]
    fn resolution_follows_design() {
        let names = ["OK", "Cancel", "ok"];
        let f = |i: usize| vec![names[i]];
        assert_eq!(resolve("2", "", 3, f), Some(1));
        assert_eq!(resolve("2", "Cancel", 3, f), Some(1));
        // Label's name does not match the text: resolve by text, exact first.
        assert_eq!(resolve("2", "ok", 3, f), Some(2));
        assert_eq!(resolve("9", "OK", 3, f), Some(0));
        assert_eq!(resolve("", "CANCEL", 3, f), Some(1));
        assert_eq!(resolve("", "Help", 3, f), None);
        assert_eq!(resolve("", "", 3, f), None);
        assert_eq!(resolve("[3]", "", 3, f), Some(2));
    }
}
