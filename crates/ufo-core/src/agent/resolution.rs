//! Control resolution (docs/resolution.md, "Control resolution"): which control of the observation the
//! model answered a `ControlLabel` / `ControlText` pair means. Never a silent first match: a
//! name that fits several controls is narrowed by exact name, then by a role that fits the
//! function, then by focus; still several, the action fails and lists them with their labels.
//! [`resolve`] is the same label-then-text rule over any list (the host's windows and apps).

use crate::ports::{Control, ControlSource};

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
/// Roles a click picks when no [`CLICKABLE`] one shares the name: an item of a list, tree or
/// table (a click on "Green" shared by a list item and a spin button means the item).
const CLICKABLE_ITEMS: &[&str] = &["list item", "tree item", "table cell", "cell", "icon"];
/// Items of a menu: listed only while their menu is open (a closed menu's items are not), so a
/// name they share with a control of the window under the menu means them: what is open wins
/// (Impress, Format ▸ Align Text open: "Right" is the submenu's item, not the toolbar's button).
const OPEN_MENU_ITEMS: &[&str] = &[
    "menu item",
    "check menu item",
    "radio menu item",
    "menuitem",
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
    role_tiers(function).first().copied()
}

/// The roles that fit a GUI function, in tiers: several name matches are narrowed to the
/// first tier any of them is in.
fn role_tiers(function: &str) -> &'static [&'static [&'static str]] {
    match function.trim().to_ascii_lowercase().as_str() {
        "set_text" | "type_keys" | "settext" | "typekeys" | "set_edit_text" | "keyboard_input" => {
            &[EDITABLE]
        }
        "read_text" | "readtext" | "texts" => &[READABLE],
        "scroll" | "wheel_mouse_input" => &[SCROLLABLE],
        "click" | "click_input" | "double_click" => &[CLICKABLE, CLICKABLE_ITEMS],
        "select" | "select_item" => &[SELECTABLE],
        _ => &[],
    }
}

/// A `ControlText` copied from the control list the model was shown: `[7] menu "Slide"`, the
/// label optional, the role and name in any case, straight or curly quotes, and what the
/// list shows after the name (` value: "3"`, ` (disabled)`, ` [focused]`) allowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CopiedLine<'t> {
    /// The `[N]` label at its start, when there is one (as written, not checked).
    pub label: Option<usize>,
    /// The rest: the role, then the quoted name and what follows it.
    body: &'t str,
}

/// Quotes a model may put around a copied name.
const QUOTES: &[char] = &[
    '"', '\u{201c}', '\u{201d}', '\u{201e}', '\'', '\u{2018}', '\u{2019}',
];

impl<'t> CopiedLine<'t> {
    /// Read `text` as a copied line: `None` when it cannot be one (no quote after a word).
    pub fn parse(text: &'t str) -> Option<Self> {
        let text = text.trim();
        let (label, body) = match text.strip_prefix('[') {
            Some(rest) => {
                let close = rest.find(']')?;
                let n = rest[..close].trim().parse::<usize>().ok()?;
                (Some(n), rest[close + 1..].trim_start())
            }
            None => (None, text),
        };
        let quote = body.find(QUOTES)?;
        if body[..quote].trim().is_empty() {
            return None;
        }
        Some(Self { label, body })
    }

    /// Whether this line names `c`: its role, white space, a quote, its name, a quote, then
    /// nothing or what the list shows after a name. `Some((left, exact))`: how many bytes
    /// were left after the closing quote (fewer is a longer, better match) and whether the
    /// name's case is exact.
    pub fn names(&self, c: &Control) -> Option<(usize, bool)> {
        let role = c.role.trim();
        let head = self.body.get(..role.len())?;
        if role.is_empty() || !head.eq_ignore_ascii_case(role) {
            return None;
        }
        let rest = &self.body[role.len()..];
        let after_space = rest.trim_start();
        if after_space.len() == rest.len() {
            return None;
        }
        let mut chars = after_space.chars();
        if !chars.next().is_some_and(|q| QUOTES.contains(&q)) {
            return None;
        }
        let inner = chars.as_str().trim_start();
        let name = c.name.trim();
        let written = inner.get(..name.len())?;
        let exact = written == name;
        if !exact && written.to_lowercase() != name.to_lowercase() {
            return None;
        }
        let after_name = inner[name.len()..].trim_start();
        let mut chars = after_name.chars();
        if !chars.next().is_some_and(|q| QUOTES.contains(&q)) {
            return None;
        }
        let tail = chars.as_str();
        trailer_fits(tail).then_some((tail.trim().len(), exact))
    }
}

/// What may follow a copied name: nothing, or what the control list shows after a name
/// (` value: ...`, ` (disabled)`, ` [states]`), or a closing punctuation mark.
fn trailer_fits(tail: &str) -> bool {
    let t = tail.trim_start();
    if t.is_empty() || matches!(t, "." | "," | ";") {
        return true;
    }
    tail.len() > t.len()
        && (t.starts_with('(') || t.starts_with('[') || t.to_ascii_lowercase().starts_with("value"))
}

/// The line the control list shows the model for control `c` with label `label` (the
/// built-in AppAgent prompt's format): `[N] role "name"`, then ` value: "..."` (JSON),
/// ` (disabled)` and ` [states]` when there are some.
pub fn control_line(label: usize, c: &Control, states: &[&str]) -> String {
    let mut line = format!("[{label}] {} \"{}\"", c.role, c.name);
    if let Some(v) = &c.value {
        line.push_str(&format!(
            " value: {}",
            serde_json::to_string(v).unwrap_or_default()
        ));
    }
    if !c.enabled {
        line.push_str(" (disabled)");
    }
    if !states.is_empty() {
        line.push_str(&format!(" [{}]", states.join(", ")));
    }
    // read in the pixels (docs/sight.md): the model may see a misread or an approximate box
    if !c.source.is_tree() {
        line.push_str(" (read in the pixels)");
    }
    line
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

/// Find the index of the control a model means for `function` (docs/resolution.md, "Control
/// resolution"). The label picks the control when its name matches `text` (or `text` is
/// empty). Otherwise `text` is matched against the names exactly; then, read as a line copied
/// from the control list (`[7] menu "Slide"`), against the roles and names; then against the
/// names in any case; last, an unnamed combo box by the option it shows, else a control that
/// is no field by the text it shows (its value). Several name matches are narrowed to those
/// whose role fits the function, then to the focused one. More than one left is
/// [`Unresolved::Ambiguous`].
pub fn resolve_control(
    label: &str,
    text: &str,
    controls: &[Control],
    function: &str,
) -> Result<usize, Unresolved> {
    let text = text.trim();
    let label = parse_label(label, controls.len());
    if let Some(i) = label {
        if text.is_empty() || controls[i].name.trim().eq_ignore_ascii_case(text) {
            return Ok(i);
        }
    }
    if text.is_empty() {
        return Err(Unresolved::NoMatch);
    }
    // Every tree control before any box read in the pixels (docs/sight.md): a detected
    // label never takes a name the toolkit gave.
    for source in [ControlSource::Tree, ControlSource::Ocr] {
        match by_text(text, label, controls, function, source) {
            Err(Unresolved::NoMatch) => {}
            done => return done,
        }
    }
    narrow(detected_reading(text, controls), controls, function)
}

/// [`resolve_control`]'s rules by text over the controls of one `source`.
fn by_text(
    text: &str,
    label: Option<usize>,
    controls: &[Control],
    function: &str,
    source: ControlSource,
) -> Result<usize, Unresolved> {
    let of_source = |i: &usize| controls[*i].source == source;
    let exact: Vec<usize> = (0..controls.len())
        .filter(of_source)
        .filter(|&i| controls[i].name.trim() == text)
        .collect();
    let copied = CopiedLine::parse(text)
        .map(|line| by_copied_line(&line, label, controls, source))
        .unwrap_or_default();
    match (exact.is_empty(), copied.is_empty()) {
        (false, true) => return narrow(exact, controls, function),
        (true, false) => return narrow(copied, controls, function),
        (false, false) => {
            // The text is a control's whole name and also reads as another's copied line:
            // both readings are candidates; the model answers again with a label.
            let mut both = exact;
            both.extend(copied);
            both.sort_unstable();
            both.dedup();
            return match both.as_slice() {
                [i] => Ok(*i),
                _ => Err(Unresolved::Ambiguous(both)),
            };
        }
        (true, true) => {}
    }
    let any_case: Vec<usize> = (0..controls.len())
        .filter(of_source)
        .filter(|&i| controls[i].name.trim().eq_ignore_ascii_case(text))
        .collect();
    if !any_case.is_empty() {
        return narrow(any_case, controls, function);
    }
    let combos: Vec<usize> = unnamed_combos_showing(text, controls)
        .into_iter()
        .filter(of_source)
        .collect();
    if !combos.is_empty() {
        return narrow(combos, controls, function);
    }
    let shown = showing_text(text, controls)
        .into_iter()
        .filter(of_source)
        .collect();
    narrow(shown, controls, function)
}

/// Roles whose value is what was put into them (a field's content, a box's choice, a
/// position), never what a person calls them: no control of these roles is reached by it.
const VALUE_IS_INPUT: &[&str] = &["slider", "scroll bar", "progress bar", "level bar", "dial"];

/// The controls that are no field and show `text` as their value (white space and case
/// aside): Impress lists a slide's shape and its only paragraph as `panel "Title 1" value:
/// "Old title"`, and a person calls it by either. The last reading of a text that names no
/// control; an entry's, a combo box's or a spin button's value never reaches it.
fn showing_text(text: &str, controls: &[Control]) -> Vec<usize> {
    let flat = |s: &str| {
        s.split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .to_lowercase()
    };
    let asked = flat(text);
    if asked.is_empty() {
        return Vec::new();
    }
    (0..controls.len())
        .filter(|&i| {
            let c = &controls[i];
            let r = c.role.trim().to_ascii_lowercase();
            !EDITABLE.contains(&r.as_str())
                && !VALUE_IS_INPUT.contains(&r.as_str())
                && c.value.as_deref().is_some_and(|v| flat(v) == asked)
        })
        .collect()
}

/// Text read in pixels is a little off: spaces are lost ("SaveAs") and an icon before a label
/// is read as a letter ("A Refresh"). The detected controls a name may mean then: those equal
/// to it without spaces in any case; failing that, those whose words hold its words in a row
/// with only words of one or two characters around them (docs/sight.md, "Names").
fn detected_reading(text: &str, controls: &[Control]) -> Vec<usize> {
    let squash = |s: &str| -> String {
        s.chars()
            .filter(|c| !c.is_whitespace())
            .flat_map(char::to_lowercase)
            .collect()
    };
    let asked = squash(text);
    let detected = || (0..controls.len()).filter(|&i| controls[i].source == ControlSource::Ocr);
    let same: Vec<usize> = detected()
        .filter(|&i| !asked.is_empty() && squash(&controls[i].name) == asked)
        .collect();
    if !same.is_empty() {
        return same;
    }
    let want: Vec<String> = text.split_whitespace().map(str::to_lowercase).collect();
    detected()
        .filter(|&i| holds_with_short_edges(&controls[i].name, &want))
        .collect()
}

/// Whether `name`'s words hold `want` in a row and every other word has at most two
/// characters.
fn holds_with_short_edges(name: &str, want: &[String]) -> bool {
    let words: Vec<String> = name.split_whitespace().map(str::to_lowercase).collect();
    if want.is_empty() || words.len() < want.len() {
        return false;
    }
    (0..=words.len() - want.len()).any(|start| {
        words[start..start + want.len()] == *want
            && words
                .iter()
                .enumerate()
                .filter(|(i, _)| *i < start || *i >= start + want.len())
                .all(|(_, w)| w.chars().count() <= 2)
    })
}

/// The unnamed combo boxes whose chosen option is `text` (GIMP's layer mode box shows
/// "Normal" and nothing names it): a model that calls such a box by what it shows means it.
/// The list still never names a control by its value; this is the last reading of a text
/// that names no control.
fn unnamed_combos_showing(text: &str, controls: &[Control]) -> Vec<usize> {
    (0..controls.len())
        .filter(|&i| {
            let c = &controls[i];
            c.name.trim().is_empty()
                && c.role.trim().eq_ignore_ascii_case("combo box")
                && c.value
                    .as_deref()
                    .is_some_and(|v| v.trim().eq_ignore_ascii_case(text))
        })
        .collect()
}

/// The controls a copied line names: the one of its own label (or else of `label`, the
/// answer's `ControlLabel`) when that one fits the line; otherwise those that fit it best
/// (the longest match, then the exact case). Empty when no control fits: the text is then
/// only a name.
fn by_copied_line(
    line: &CopiedLine<'_>,
    label: Option<usize>,
    controls: &[Control],
    source: ControlSource,
) -> Vec<usize> {
    let own = line
        .label
        .filter(|n| *n >= 1 && *n <= controls.len())
        .map(|n| n - 1);
    for i in [own, label].into_iter().flatten() {
        if controls[i].source == source && line.names(&controls[i]).is_some() {
            return vec![i];
        }
    }
    let fits: Vec<(usize, (usize, bool))> = (0..controls.len())
        .filter(|&i| controls[i].source == source)
        .filter_map(|i| line.names(&controls[i]).map(|m| (i, m)))
        .collect();
    let Some(shortest) = fits.iter().map(|(_, (left, _))| *left).min() else {
        return Vec::new();
    };
    let best: Vec<(usize, bool)> = fits
        .into_iter()
        .filter(|(_, (left, _))| *left == shortest)
        .map(|(i, (_, exact))| (i, exact))
        .collect();
    let exact: Vec<usize> = best.iter().filter(|(_, e)| *e).map(|(i, _)| *i).collect();
    if exact.is_empty() {
        best.into_iter().map(|(i, _)| i).collect()
    } else {
        exact
    }
}

/// Why an action cannot run on `c` (listed as `[label]`): a control observed as disabled takes
/// no click, text, keys, choice or focus (reading and scrolling it are allowed). Checked before
/// the CONFIRM gate and before the desktop is asked, so nothing is held or done for it.
pub fn refuse_disabled(
    action: &crate::action::UiAction,
    c: &Control,
    label: &str,
) -> Option<String> {
    use crate::action::UiAction as A;
    let acts = match action {
        A::Click { .. } | A::SetText { .. } | A::TypeKeys { .. } | A::Select { .. } | A::Focus => {
            true
        }
        // a disabled control may still show its tooltip
        A::Scroll { .. } | A::ReadText | A::ClickAt { .. } | A::ReadPixels | A::Hover => false,
    };
    let shown = if label.is_empty() {
        String::new()
    } else {
        format!("[{label}] ")
    };
    (acts && !c.enabled).then(|| {
        format!(
            "action failed: control is disabled: {shown}{} \"{}\" takes no {} now; nothing was \
             done; enable it first or pick another control",
            c.role,
            c.name,
            action.name()
        )
    })
}

/// Narrow several name matches by role, then to an open menu's items, then by focus.
fn narrow(found: Vec<usize>, controls: &[Control], function: &str) -> Result<usize, Unresolved> {
    let mut found = found;
    if found.len() > 1 {
        for roles in role_tiers(function) {
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
                break;
            }
        }
    }
    if found.len() > 1 {
        // what is open wins: an open menu's items over the window under the menu
        let open: Vec<usize> = found
            .iter()
            .copied()
            .filter(|&i| {
                let r = controls[i].role.trim().to_ascii_lowercase();
                OPEN_MENU_ITEMS.contains(&r.as_str())
            })
            .collect();
        if !open.is_empty() {
            found = open;
        }
    }
    if found.len() > 1 {
        // what a person sees wins over a namesake out of view further down the page
        let in_view: Vec<usize> = found
            .iter()
            .copied()
            .filter(|&i| controls[i].states.place.is_in_view())
            .collect();
        if !in_view.is_empty() {
            found = in_view;
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
            id: w.id.as_str(),
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

/// The window a name means (docs/resolution.md, "Window resolution"), the one rule of the HostAgent and
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

    /// The model is told which controls were read in the pixels; tree lines are unchanged.
    #[test]
    fn a_detected_control_line_says_it_was_read_in_the_pixels() {
        let mut c: Control =
            serde_json::from_value(serde_json::json!({"id": "7", "role": "button", "name": "7"}))
                .expect("a control");
        assert_eq!(control_line(3, &c, &[]), "[3] button \"7\"");
        c.source = crate::ports::ControlSource::Ocr;
        assert_eq!(
            control_line(3, &c, &[]),
            "[3] button \"7\" (read in the pixels)"
        );
    }

    /// Issue 46: a control out of view further down a page shares its name with one in
    /// view ("Learn more"): the one a person sees is meant; alone, the one out of view is.
    #[test]
    fn a_control_in_view_wins_over_its_namesake_out_of_view() {
        let mut below = c("link", "Learn more", false);
        below.states.place = crate::ports::Place::Below;
        let shown = c("link", "Learn more", false);
        let controls = [below.clone(), shown];
        assert_eq!(resolve_control("", "Learn more", &controls, "click"), Ok(1));
        assert_eq!(resolve_control("", "Learn more", &[below], "click"), Ok(0));
    }

    fn c(role: &str, name: &str, focused: bool) -> Control {
        Control {
            source: Default::default(),
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

    #[test]
    fn a_copied_line_resolves_to_exactly_its_control() {
        let cs = [
            c("menu", "Slide", false),
            c("toggle button", "Slide", false),
            c("spin button", "Green", false),
            c("list item", "Green", false),
            c("push button", "1", false),
            c("menu", "File", false),
        ];
        for f in ["click", "set_text", "select", "read_text", "focus"] {
            assert_eq!(resolve_control("", "menu \"Slide\"", &cs, f), Ok(0), "{f}");
            assert_eq!(
                resolve_control("", "toggle button \"Slide\"", &cs, f),
                Ok(1),
                "{f}"
            );
            assert_eq!(
                resolve_control("", "[3] spin button \"Green\"", &cs, f),
                Ok(2),
                "{f}"
            );
            assert_eq!(
                resolve_control("", "list item \"Green\"", &cs, f),
                Ok(3),
                "{f}"
            );
        }
        // harmless variants: case, curly or single quotes, spaces, the value and states after
        assert_eq!(
            resolve_control("", "  MENU  “slide”  ", &cs, "click"),
            Ok(0)
        );
        assert_eq!(
            resolve_control("", "Toggle Button 'Slide'", &cs, "click"),
            Ok(1)
        );
        assert_eq!(
            resolve_control(
                "",
                "[3] spin button \"Green\" value: \"3\" [focused]",
                &cs,
                "click"
            ),
            Ok(2)
        );
        assert_eq!(
            resolve_control("", "[2] toggle button \"Slide\" (disabled)", &cs, "click"),
            Ok(1)
        );
        // a stale label in the line: the role and name decide
        assert_eq!(
            resolve_control("", "[9] list item \"Green\"", &cs, "click"),
            Ok(3)
        );
        // the answer's ControlLabel beside a copied line of another control: the line decides
        assert_eq!(
            resolve_control("1", "toggle button \"Slide\"", &cs, "click"),
            Ok(1)
        );
        // digits are a name in ControlText, a label only in ControlLabel
        assert_eq!(resolve_control("", "1", &cs, "click"), Ok(4));
        assert_eq!(
            resolve_control("", "[5] push button \"1\"", &cs, "click"),
            Ok(4)
        );
        assert_eq!(resolve_control("1", "", &cs, "click"), Ok(0));
    }

    #[test]
    fn a_text_that_only_looks_like_a_copied_line_is_a_name() {
        let cs = [
            c("menu", "Slide", false),
            c("button", "menu \"Slide\" 2", false),
            c("button", "button \"Cancel\"", false),
            c("button", "Cancel", false),
        ];
        // no button named Slide: never another control, the plain rules say no match
        assert_eq!(
            resolve_control("", "button \"Slide\"", &cs, "click"),
            Err(Unresolved::NoMatch)
        );
        // text after the name that the list never shows: the whole text is a name
        assert_eq!(resolve_control("", "menu \"Slide\" 2", &cs, "click"), Ok(1));
        // a whole name that also reads as another control's line: both are candidates
        assert_eq!(
            resolve_control("", "button \"Cancel\"", &cs, "click"),
            Err(Unresolved::Ambiguous(vec![2, 3]))
        );
        // the label decides: ControlLabel with the whole name, or the line's own label
        assert_eq!(
            resolve_control("3", "button \"Cancel\"", &cs, "click"),
            Ok(2)
        );
        assert_eq!(
            resolve_control("", "[4] button \"Cancel\"", &cs, "click"),
            Ok(3)
        );
        // a line whose label is another control's: the role and name decide
        assert_eq!(
            resolve_control("", "[3] button \"Cancel\"", &cs, "click"),
            Ok(3)
        );
        assert_eq!(CopiedLine::parse("\"OK\""), None);
        assert_eq!(CopiedLine::parse("[x] button \"OK\""), None);
        assert_eq!(CopiedLine::parse("OK"), None);
    }

    #[test]
    fn a_click_on_a_name_of_a_list_item_and_a_spin_button_means_the_item() {
        let cs = [
            c("spin button", "Green", false),
            c("list item", "Green", false),
        ];
        assert_eq!(resolve_control("", "Green", &cs, "click"), Ok(1));
        assert_eq!(resolve_control("", "Green", &cs, "set_text"), Ok(0));
        // a button still beats an item
        let cs = [
            c("list item", "Home", false),
            c("push button", "Home", false),
        ];
        assert_eq!(resolve_control("", "Home", &cs, "click"), Ok(1));
    }

    /// Issue 24: an unnamed combo box (listed as `combo box ""` with its option as its value)
    /// is reached by the option it shows when no control is named so; a named control of
    /// that name still wins, and a named combo box is not reached by its value.
    #[test]
    fn an_unnamed_combo_box_is_reached_by_the_option_it_shows() {
        let mut mode = c("combo box", "", false);
        mode.value = Some("Normal".into());
        let mut units = c("combo box", "Units", false);
        units.value = Some("px".into());
        let controls = vec![c("button", "Save", false), mode.clone(), units];
        assert_eq!(resolve_control("", "Normal", &controls, "select"), Ok(1));
        assert_eq!(resolve_control("", "normal", &controls, "click"), Ok(1));
        assert_eq!(
            resolve_control("", "px", &controls, "select"),
            Err(Unresolved::NoMatch)
        );
        let named = vec![mode, c("menu item", "Normal", false)];
        assert_eq!(resolve_control("", "Normal", &named, "click"), Ok(1));
    }

    /// Issue 46: Impress lists a slide's shape and its only paragraph as one line, named by
    /// the shape and showing the paragraph's text; the text (any case, any spacing) reaches
    /// it when no control is named so. A name still wins, and a field (an entry, a named
    /// combo box, a slider) is never reached by its value.
    #[test]
    fn a_shape_is_reached_by_the_text_it_shows() {
        let mut title = c("panel", "Title 1", false);
        title.value = Some("Old  title".into());
        let mut entry = c("entry", "Search", false);
        entry.value = Some("Budget".into());
        let mut zoom = c("slider", "Zoom", false);
        zoom.value = Some("100".into());
        let controls = vec![c("button", "Save", false), title, entry, zoom];
        assert_eq!(resolve_control("", "Title 1", &controls, "click"), Ok(1));
        assert_eq!(
            resolve_control("", "old title", &controls, "set_text"),
            Ok(1)
        );
        assert_eq!(resolve_control("", "Old title", &controls, "click"), Ok(1));
        assert_eq!(
            resolve_control("", "Budget", &controls, "click"),
            Err(Unresolved::NoMatch)
        );
        assert_eq!(
            resolve_control("", "100", &controls, "click"),
            Err(Unresolved::NoMatch)
        );
        let mut named = controls.clone();
        named.push(c("paragraph", "Old title", false));
        assert_eq!(resolve_control("", "Old title", &named, "click"), Ok(4));
        let mut other = c("panel", "Subtitle 2", false);
        other.value = Some("old title".into());
        let mut two = controls;
        two.push(other);
        assert_eq!(
            resolve_control("", "Old title", &two, "click"),
            Err(Unresolved::Ambiguous(vec![1, 4]))
        );
    }

    /// Issue 46, item 2: with Impress's Format ▸ Align Text open, "Right" names the submenu's
    /// item and the toolbar's button: the open menu's item wins, also over a focused button.
    /// Two items of open menus stay ambiguous.
    #[test]
    fn an_open_menus_item_wins_over_the_window_under_it() {
        let controls = vec![
            c("toggle button", "Right", true),
            c("menu", "Align Text", false),
            c("radio menu item", "Right", false),
            c("push button", "Left", false),
        ];
        assert_eq!(resolve_control("", "Right", &controls, "click"), Ok(2));
        assert_eq!(resolve_control("", "right", &controls, "click"), Ok(2));
        // the label still picks the button
        assert_eq!(resolve_control("1", "Right", &controls, "click"), Ok(0));
        let two = vec![
            c("menu item", "Right", false),
            c("check menu item", "Right", false),
        ];
        assert_eq!(
            resolve_control("", "Right", &two, "click"),
            Err(Unresolved::Ambiguous(vec![0, 1]))
        );
        // a role that fits the function still comes first: text goes to the field
        let field = vec![c("text", "Name", false), c("menu item", "Name", false)];
        assert_eq!(resolve_control("", "Name", &field, "set_text"), Ok(0));
    }

    #[test]
    fn a_disabled_control_takes_no_action_but_may_be_read() {
        use crate::action::UiAction;
        let mut paste = c("menu item", "Paste", false);
        paste.enabled = false;
        let click = UiAction::parse("click", &serde_json::json!({})).expect("click");
        let msg = refuse_disabled(&click, &paste, "4").expect("refused");
        assert!(
            msg.contains("control is disabled: [4] menu item \"Paste\""),
            "{msg}"
        );
        assert!(msg.starts_with("action failed"), "{msg}");
        assert_eq!(refuse_disabled(&UiAction::ReadText, &paste, "4"), None);
        paste.enabled = true;
        assert_eq!(refuse_disabled(&click, &paste, "4"), None);
    }

    fn ocr(name: &str) -> Control {
        Control {
            source: ControlSource::Ocr,
            ..c("label", name, false)
        }
    }

    #[test]
    fn a_tree_control_is_reached_before_any_detected_box() {
        // The detected "OK" comes first in the list, the tree's "ok" differs in case: the tree
        // control still wins, by every rule of the tree pass.
        let cs = [ocr("OK"), c("button", "ok", false)];
        assert_eq!(resolve_control("", "OK", &cs, "click"), Ok(1));
        assert_eq!(
            resolve_control("", "[2] button \"ok\"", &cs, "click"),
            Ok(1)
        );
        // A name only the pixels show reaches the detected box.
        let cs = [c("button", "Apply", false), ocr("Draw")];
        assert_eq!(resolve_control("", "Draw", &cs, "click"), Ok(1));
        // An explicit label still picks a detected box.
        let cs = [c("button", "OK", false), ocr("OK")];
        assert_eq!(resolve_control("2", "OK", &cs, "click"), Ok(1));
    }

    #[test]
    fn a_detected_name_is_found_without_its_lost_spaces_or_an_icon_read_as_a_letter() {
        let cs = [
            ocr("SaveAs"),
            ocr("A Refresh"),
            ocr("Zoom In Out"),
            ocr("x Paste All"),
        ];
        assert_eq!(resolve_control("", "Save As", &cs, "click"), Ok(0));
        assert_eq!(resolve_control("", "refresh", &cs, "click"), Ok(1));
        // Extra long words are another label, not noise.
        assert_eq!(
            resolve_control("", "Zoom In", &cs, "click"),
            Err(Unresolved::NoMatch)
        );
        assert_eq!(
            resolve_control("", "Paste", &cs, "click"),
            Err(Unresolved::NoMatch)
        );
        // The loose readings never reach a tree control.
        let cs = [c("button", "SaveAs", false)];
        assert_eq!(
            resolve_control("", "Save As", &cs, "click"),
            Err(Unresolved::NoMatch)
        );
    }

    proptest! {
        #[test]
        fn a_name_any_tree_control_has_never_resolves_to_a_detected_box(
            tree in prop::collection::vec(control_name(), 1..5),
            seen in prop::collection::vec(control_name(), 0..5),
            pick in 0usize..5,
        ) {
            let mut cs: Vec<Control> = seen.iter().map(|n| ocr(n)).collect();
            cs.extend(tree.iter().map(|n| c("button", n, false)));
            let text = tree[pick % tree.len()].clone();
            if let Ok(i) = resolve_control("", &text, &cs, "click") {
                prop_assert_eq!(cs[i].source, ControlSource::Tree, "{:?} -> {:?}", text, cs[i]);
            }
        }
    }

    fn role() -> impl Strategy<Value = String> {
        proptest::sample::select(vec![
            "button",
            "push button",
            "toggle button",
            "menu",
            "menu item",
            "list item",
            "spin button",
            "check box",
            "label",
            "text",
            "push button menu",
        ])
        .prop_map(str::to_string)
    }

    fn control_name() -> impl Strategy<Value = String> {
        proptest::sample::select(vec![
            "Slide",
            "slide",
            "Green",
            "1",
            "3",
            "",
            "OK",
            "menu \"Slide\"",
            "a \"b\" c",
            "Größe",
            "value",
            "(x)",
            "[1]",
            "menu",
            " padded ",
        ])
        .prop_map(str::to_string)
    }

    fn control_of(
        role: String,
        name: String,
        value: Option<String>,
        enabled: bool,
        focused: bool,
    ) -> Control {
        let mut x = c(&role, &name, focused);
        x.value = value;
        x.enabled = enabled;
        x
    }

    proptest! {
        /// Every line of a generated control list, as the list renders it, resolves to exactly
        /// its control, for every function; without its label it resolves to a control of the
        /// same role and name or not at all (never another control).
        #[test]
        fn every_rendered_line_resolves_to_its_control(
            list in proptest::collection::vec(
                (role(), control_name(), proptest::option::of(control_name()), any::<bool>(), any::<bool>()),
                1..8,
            ),
            function in proptest::sample::select(vec!["click", "set_text", "select", "read_text", "scroll"]),
            upper in any::<bool>(),
            curly in any::<bool>(),
        ) {
            let cs: Vec<Control> = list
                .into_iter()
                .map(|(r, n, v, e, f)| control_of(r, n, v, e, f))
                .collect();
            for (i, x) in cs.iter().enumerate() {
                let states: &[&str] = if x.states.focused { &["focused"] } else { &[] };
                let line = control_line(i + 1, x, states);
                prop_assert_eq!(resolve_control("", &line, &cs, function), Ok(i), "{}", line);
                let mut bare = line[line.find(']').map_or(0, |p| p + 1)..].to_string();
                if upper {
                    bare = bare.to_uppercase();
                }
                if curly {
                    bare = bare.replacen('"', "\u{201c}", 1);
                }
                if let Ok(j) = resolve_control("", &bare, &cs, function) {
                    let y = &cs[j];
                    let same = y.role.eq_ignore_ascii_case(&x.role)
                        && y.name.trim().to_lowercase() == x.name.trim().to_lowercase();
                    let whole_name = y.name.trim().eq_ignore_ascii_case(bare.trim());
                    prop_assert!(same || whole_name, "{} -> [{}] {} {:?}", bare, j + 1, y.role, y.name);
                }
            }
        }
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
