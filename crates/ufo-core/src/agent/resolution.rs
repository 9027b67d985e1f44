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

/// One window (or third-party agent) as window resolution sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowKey<'a> {
    /// The desktop's id of the window.
    pub id: &'a str,
    /// Its title.
    pub title: &'a str,
    /// Its application's name.
    pub app: &'a str,
    /// Its process name (may be empty).
    pub process: &'a str,
}

impl<'a> From<&'a crate::ports::WindowInfo> for WindowKey<'a> {
    fn from(w: &'a crate::ports::WindowInfo) -> Self {
        Self {
            id: &w.id,
            title: &w.title,
            app: &w.app_name,
            process: &w.process,
        }
    }
}

/// How a window fits the name asked for, from the strongest rule to the weakest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum WindowFit {
    /// The label (its number in the list), its name matching the text or no text given.
    Label,
    /// The desktop's id.
    Id,
    /// The exact title.
    Title,
    /// The title, ignoring case.
    TitleAnyCase,
    /// The application or process name, ignoring case.
    Application,
    /// Part of the title, ignoring case.
    PartOfTitle,
}

impl WindowFit {
    /// The rules after the label, strongest first.
    pub const BY_NAME: [WindowFit; 5] = [
        WindowFit::Id,
        WindowFit::Title,
        WindowFit::TitleAnyCase,
        WindowFit::Application,
        WindowFit::PartOfTitle,
    ];

    /// Whether `w` fits `text` (trimmed, not empty) by this rule.
    pub fn fits(self, w: &WindowKey<'_>, text: &str) -> bool {
        let any_case =
            |name: &str| !name.trim().is_empty() && name.trim().eq_ignore_ascii_case(text);
        match self {
            WindowFit::Label => false,
            WindowFit::Id => w.id == text,
            WindowFit::Title => w.title.trim() == text,
            WindowFit::TitleAnyCase => any_case(w.title),
            WindowFit::Application => any_case(w.app) || any_case(w.process),
            WindowFit::PartOfTitle => w.title.to_lowercase().contains(&text.to_lowercase()),
        }
    }

    /// The rule in words, for the model.
    pub fn words(self) -> &'static str {
        match self {
            WindowFit::Label => "by label",
            WindowFit::Id => "by id",
            WindowFit::Title => "by exact title",
            WindowFit::TitleAnyCase => "by title",
            WindowFit::Application => "by application name",
            WindowFit::PartOfTitle => "by part of the title",
        }
    }
}

/// Why no single window was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WindowUnresolved {
    /// No window fits.
    NoMatch,
    /// Several windows fit equally well by the strongest rule any fits: their indexes.
    Ambiguous {
        /// The rule they fit by.
        fit: WindowFit,
        /// Their positions in the list.
        candidates: Vec<usize>,
    },
}

/// The window a name means (README "Window resolution"), the one rule of the HostAgent and
/// the MCP server: the label (a number in the list) when its window's id, title or
/// application fits the text or no text is given; then by the first rule that any window
/// fits — id, exact title, title ignoring case, application or process name, part of the
/// title. Several windows fitting that rule is [`WindowUnresolved::Ambiguous`]: never a
/// silent first pick.
pub fn resolve_window(
    label: &str,
    text: &str,
    windows: &[WindowKey<'_>],
) -> Result<(usize, WindowFit), WindowUnresolved> {
    let text = text.trim();
    if let Some(i) = parse_label(label, windows.len()) {
        let w = &windows[i];
        let names = [
            WindowFit::Id,
            WindowFit::TitleAnyCase,
            WindowFit::Application,
        ];
        if text.is_empty() || names.iter().any(|f| f.fits(w, text)) {
            return Ok((i, WindowFit::Label));
        }
    }
    if text.is_empty() {
        return Err(WindowUnresolved::NoMatch);
    }
    for fit in WindowFit::BY_NAME {
        let found: Vec<usize> = (0..windows.len())
            .filter(|&i| fit.fits(&windows[i], text))
            .collect();
        match found.as_slice() {
            [] => continue,
            [i] => return Ok((*i, fit)),
            _ => {
                return Err(WindowUnresolved::Ambiguous {
                    fit,
                    candidates: found,
                })
            }
        }
    }
    Err(WindowUnresolved::NoMatch)
}

/// The text of an ambiguous window name, for the model: the candidates with their title,
/// application and id (with their labels when `labels`), and how to pick one.
pub fn ambiguous_windows_message(
    text: &str,
    fit: WindowFit,
    candidates: &[usize],
    windows: &[WindowKey<'_>],
    labels: bool,
    how_to_pick: &str,
) -> String {
    let shown: Vec<String> = candidates
        .iter()
        .take(10)
        .filter_map(|&i| windows.get(i).map(|w| (i, w)))
        .map(|(i, w)| {
            let label = if labels {
                format!("[{}] ", i + 1)
            } else {
                String::new()
            };
            format!("{label}{:?} (application {}, id {})", w.title, w.app, w.id)
        })
        .collect();
    let more = if candidates.len() > 10 {
        format!(" and {} more", candidates.len() - 10)
    } else {
        String::new()
    };
    format!(
        "window name {text:?} fits {} windows equally ({}): {}{more}; nothing was picked; {how_to_pick}",
        candidates.len(),
        fit.words(),
        shown.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ports::Rect;
    use proptest::prelude::*;

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

    fn wk<'a>(id: &'a str, title: &'a str, app: &'a str) -> WindowKey<'a> {
        WindowKey {
            id,
            title,
            app,
            process: app,
        }
    }

    #[test]
    fn windows_resolve_by_label_id_title_application_then_part_of_title() {
        let ws = [
            wk("0x1", "Page A — Mozilla Firefox", "Firefox"),
            wk("0x2", "Page B — Mozilla Firefox", "Firefox"),
            wk("0x3", "notes - Writer", "Writer"),
            wk("0x4", "writer", "Other"),
        ];
        assert_eq!(resolve_window("2", "", &ws), Ok((1, WindowFit::Label)));
        assert_eq!(
            resolve_window("2", "firefox", &ws),
            Ok((1, WindowFit::Label))
        );
        assert_eq!(resolve_window("", "0x3", &ws), Ok((2, WindowFit::Id)));
        assert_eq!(resolve_window("", "writer", &ws), Ok((3, WindowFit::Title)));
        assert_eq!(
            resolve_window("", "WRITER", &ws),
            Ok((3, WindowFit::TitleAnyCase))
        );
        assert_eq!(
            resolve_window("", "Other", &ws),
            Ok((3, WindowFit::Application))
        );
        assert_eq!(
            resolve_window("", "page b", &ws),
            Ok((1, WindowFit::PartOfTitle))
        );
        assert_eq!(
            resolve_window("", "Firefox", &ws),
            Err(WindowUnresolved::Ambiguous {
                fit: WindowFit::Application,
                candidates: vec![0, 1]
            })
        );
        // a label whose window does not fit the text resolves by the text
        assert_eq!(
            resolve_window("1", "notes", &ws),
            Ok((2, WindowFit::PartOfTitle))
        );
        assert_eq!(
            resolve_window("", "Thunderbird", &ws),
            Err(WindowUnresolved::NoMatch)
        );
        assert_eq!(
            resolve_window("", "  ", &ws),
            Err(WindowUnresolved::NoMatch)
        );
        let msg = ambiguous_windows_message(
            "Firefox",
            WindowFit::Application,
            &[0, 1],
            &ws,
            true,
            "pick",
        );
        assert!(
            msg.contains("fits 2 windows equally (by application name)"),
            "{msg}"
        );
        assert!(
            msg.contains("[1] \"Page A — Mozilla Firefox\" (application Firefox, id 0x1)"),
            "{msg}"
        );
        assert!(
            msg.contains("[2] \"Page B — Mozilla Firefox\" (application Firefox, id 0x2)"),
            "{msg}"
        );
    }

    fn name() -> impl Strategy<Value = String> {
        proptest::sample::select(vec!["Firefox", "firefox", "Writer", "Page", "page A", "x"])
            .prop_map(str::to_string)
    }

    proptest! {
        /// Two windows that fit a name equally (twins but for their ids) are never picked by
        /// that name: the answer is another window that fits better, or an ambiguity listing
        /// both, or no match.
        #[test]
        fn two_windows_that_fit_equally_are_never_picked(
            others in proptest::collection::vec((name(), name()), 0..5),
            twin in (name(), name()),
            at in 0usize..6,
            text in name(),
        ) {
            let ids: Vec<String> = (0..=others.len() + 1).map(|i| format!("id{i}")).collect();
            let mut ws: Vec<WindowKey<'_>> = others
                .iter()
                .enumerate()
                .map(|(i, (t, a))| wk(&ids[i], t, a))
                .collect();
            let at = at.min(ws.len());
            ws.insert(at, wk(&ids[others.len()], &twin.0, &twin.1));
            ws.push(wk(&ids[others.len() + 1], &twin.0, &twin.1));
            let twins = [at, ws.len() - 1];
            match resolve_window("", &text, &ws) {
                Ok((i, _)) => prop_assert!(!twins.contains(&i), "picked twin {i}"),
                Err(WindowUnresolved::Ambiguous { candidates, .. }) => {
                    prop_assert!(candidates.len() >= 2);
                }
                Err(WindowUnresolved::NoMatch) => {}
            }
        }

        /// Whatever is picked fits the rule it was picked by, and no other window fits that
        /// rule or a stronger one.
        #[test]
        fn a_pick_is_the_only_window_of_the_strongest_rule(
            list in proptest::collection::vec((name(), name()), 0..6),
            text in name(),
        ) {
            let ids: Vec<String> = (0..list.len()).map(|i| format!("id{i}")).collect();
            let ws: Vec<WindowKey<'_>> = list.iter().enumerate().map(|(i, (t, a))| wk(&ids[i], t, a)).collect();
            if let Ok((i, fit)) = resolve_window("", &text, &ws) {
                prop_assert!(fit.fits(&ws[i], &text));
                for f in WindowFit::BY_NAME.iter().filter(|f| **f <= fit) {
                    for (j, w) in ws.iter().enumerate() {
                        if j != i {
                            prop_assert!(!f.fits(w, &text), "{j} also fits {f:?}");
                        }
                    }
                }
            }
        }
    }
}
