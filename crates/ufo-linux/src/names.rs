//! The names an agent sees: whitespace collapsed, GTK4's doubled names undoubled, toolkit
//! type names replaced by the description or the label text inside.

pub(crate) fn collapse_ws(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A toolkit type name standing in for a name (GTK4: "GtkButton", "AdwGizmo").
pub(crate) fn is_noise(name: &str) -> bool {
    if name.is_empty() {
        return true;
    }
    for prefix in ["Gtk", "Adw", "Gd", "Hdy", "Gsk"] {
        if let Some(rest) = name.strip_prefix(prefix) {
            if rest.starts_with(|c: char| c.is_ascii_uppercase())
                && rest.chars().all(|c| c.is_ascii_alphanumeric())
            {
                return true;
            }
        }
    }
    false
}

/// The name an agent sees: whitespace collapsed, GTK4's doubled names ("7 7") undoubled, its
/// mnemonic label glued before its label ("_Add Add", GNOME Clocks) read as the label, and
/// the description (else the children's label text) when the name is noise.
pub(crate) fn clean_name(name: &str, description: &str, child_text: &str) -> String {
    let mut n = collapse_ws(name);
    let words: Vec<&str> = n.split(' ').collect();
    if words.len() >= 2 && words.len() & 1 == 0 {
        let half = words.len() / 2;
        let (first, second) = (words[..half].join(" "), words[half..].join(" "));
        // (a mnemonic underscore is only in the first half: "_Save As Save As")
        if first == second || (first.contains('_') && without_mnemonic(&first) == second) {
            n = second;
        }
    }
    if is_noise(&n) {
        let d = collapse_ws(description);
        if !d.is_empty() && !is_noise(&d) {
            return d;
        }
        let c = collapse_ws(child_text);
        if !is_noise(&c) {
            return c;
        }
        return String::new();
    }
    n
}

/// A label's text without its mnemonic marks: an underscore that starts a word and comes
/// before a letter or digit ("_Add" → "Add", "Save _As" → "Save As"); an underscore inside a
/// word ("snake_case", "__init__") is text and stays. Mnemonics are never part of a name.
pub(crate) fn without_mnemonic(label: &str) -> String {
    let mut out = String::with_capacity(label.len());
    let mut chars = label.chars().peekable();
    let mut word_start = true;
    while let Some(c) = chars.next() {
        let marks = c == '_' && word_start && chars.peek().is_some_and(|n| n.is_alphanumeric());
        if !marks {
            out.push(c);
        }
        word_start = c.is_whitespace();
    }
    out
}

/// What is known about a field's name (an entry, a combo box, a spin button, a slider),
/// strongest evidence first. See [`field_name`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct FieldEvidence {
    /// The text of the labels that point at it (`LABELLED_BY` on it, `LABEL_FOR` on them).
    pub relation: Option<String>,
    /// Its own accessible name (GTK3 names an entry by its placeholder and a combo box by
    /// its chosen option when nothing else names it).
    pub own: String,
    /// What it shows (its text, its chosen option).
    pub value: Option<String>,
    /// The hint shown while it is empty.
    pub placeholder: Option<String>,
    /// The label beside it.
    pub beside: Option<String>,
    /// The name of the nearest named container around it.
    pub parent: Option<String>,
    /// Its description.
    pub description: String,
}

/// A label's text as a name: whitespace collapsed, mnemonic underscores and the trailing
/// colon taken away ("_Filename:" → "Filename").
pub(crate) fn label_as_name(label: &str) -> String {
    let t = collapse_ws(&label.replace('_', ""));
    t.trim_end_matches(':').trim_end().to_string()
}

/// The name of a field, from its evidence in this order: the labels that point at it, its
/// own name, the label beside it, its container's name, its description. A value or a
/// placeholder is never its name (they are shown as its value or placeholder).
#[cfg(test)]
pub(crate) fn field_name(e: &FieldEvidence) -> String {
    named_field(e).0
}

/// Where a field's name came from (see [`field_name`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NameSource {
    /// A label that points at it, its own name, or the label beside it: its own.
    Own,
    /// The name of the container around it: a name it may share with the container's
    /// other fields ([`shared_container_names`]).
    Container,
    /// Its description, or nothing.
    Other,
}

/// [`field_name`] and where the name came from.
pub(crate) fn named_field(e: &FieldEvidence) -> (String, NameSource) {
    let usable = |s: &str| {
        let s = collapse_ws(s);
        (!is_noise(&s)).then_some(s)
    };
    if let Some(r) = e
        .relation
        .as_deref()
        .map(|r| without_value(&label_as_name(r), e.value.as_deref()))
        .filter(|r| !r.is_empty())
    {
        return (r, NameSource::Own);
    }
    let own = clean_name(&e.own, "", "");
    let is_value = |s: &str| e.value.as_deref().is_some_and(|v| collapse_ws(v) == s);
    let says_placeholder = e
        .placeholder
        .as_deref()
        .is_some_and(|p| collapse_ws(p) == own);
    let container = e.parent.as_deref().and_then(usable);
    if !own.is_empty() && container.as_deref() == Some(own.as_str()) {
        // Qt gives a field its group's title as its own name (KolourPaint's Resize: three
        // spin buttons "Dimensions"): a container's name, with no label beside it counted
        return (own, NameSource::Container);
    }
    if !own.is_empty() && !is_value(&own) && !says_placeholder {
        return (own, NameSource::Own);
    }
    // (a label beside that only repeats the value names nothing: Okular's page field has
    // a hidden label "1" beside it while it shows page 1)
    if let Some(b) = e
        .beside
        .as_deref()
        .map(label_as_name)
        .filter(|b| !b.is_empty() && !is_value(b))
    {
        return (b, NameSource::Own);
    }
    if let Some(p) = container {
        return (p, NameSource::Container);
    }
    (
        usable(&e.description).unwrap_or_default(),
        NameSource::Other,
    )
}

/// The container names that name several fields of one window at once (GIMP's Preferences:
/// three unit boxes and an entry all "Resource Consumption"; KolourPaint's three spin buttons
/// "Dimensions"): such a name tells the fields apart for nobody, so it names none of them.
/// `names`: each field's name when it came from its container, `None` otherwise.
pub(crate) fn shared_container_names<'a>(
    names: impl IntoIterator<Item = Option<&'a str>>,
) -> std::collections::HashSet<&'a str> {
    let mut count: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for n in names.into_iter().flatten() {
        *count.entry(n).or_default() += 1;
    }
    count
        .into_iter()
        .filter(|&(n, c)| c >= 2 && !n.is_empty())
        .map(|(n, _)| n)
        .collect()
}

/// A label's text without the field's value at its end: a label that holds its field (an
/// HTML `<label>Plan <select>…</label>`) reads the field's chosen option as part of its text
/// ("Plan Free"), and the name must not change with the choice.
fn without_value(label: &str, value: Option<&str>) -> String {
    let v = value.map(collapse_ws).unwrap_or_default();
    match label.strip_suffix(v.as_str()) {
        Some(rest) if !v.is_empty() && rest.ends_with(' ') && !rest.trim().is_empty() => {
            label_as_name(rest)
        }
        _ => label.to_string(),
    }
}

/// The label that ends just left of a control (at most [`LEFT_GAP`] pixels away) on its line
/// (their vertical middles within half the control's height): the label a person reads
/// as its name. Rectangles are `(x, y, width, height)`.
pub(crate) fn label_left_of<'a>(
    control: Extents,
    labels: &[(Extents, &'a str)],
) -> Option<&'a str> {
    let (cx, cy, _, ch) = control;
    let mid = |y: i32, h: i32| i64::from(y) * 2 + i64::from(h);
    labels
        .iter()
        .filter(|((lx, ly, lw, lh), name)| {
            let gap = i64::from(cx) - (i64::from(*lx) + i64::from(*lw));
            !name.trim().is_empty()
                && *lw > 0
                && (-2..=LEFT_GAP).contains(&gap)
                && (mid(*ly, *lh) - mid(cy, ch)).abs() <= i64::from(ch)
        })
        .min_by_key(|((lx, _, lw, _), _)| i64::from(cx) - (i64::from(*lx) + i64::from(*lw)))
        .map(|(_, name)| *name)
}

/// A rectangle as AT-SPI gives it: `(x, y, width, height)`.
pub(crate) type Extents = (i32, i32, i32, i32);

/// How far left of a control its label may end (pixels).
const LEFT_GAP: i64 = 16;

/// How a display is shown: named by its description ("Result Display"), its text as its
/// value ("42"); without a description it is named "display".
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Display {
    pub name: String,
    pub value: Option<String>,
}

/// See [`Display`].
pub(crate) fn display(name: &str, description: &str) -> Display {
    let d = collapse_ws(description);
    Display {
        name: if d.is_empty() { "display".into() } else { d },
        value: Some(collapse_ws(name)).filter(|v| !v.is_empty()),
    }
}

/// Whether a value says something about a control of this kind: a push button's or a menu
/// item's number (LibreOffice gives its buttons a value of 0) says nothing.
pub(crate) fn value_says_something(kind: ValueKind, value: &str) -> bool {
    match kind {
        ValueKind::Plain | ValueKind::Checkable => value.trim().parse::<f64>().is_err(),
        ValueKind::Field | ValueKind::Range => true,
    }
}

/// What a control's value can mean (see [`value_says_something`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ValueKind {
    /// Text a person types or picks (entries, combo boxes, documents).
    Field,
    /// A number on a scale (spin buttons, sliders, scroll bars, progress bars).
    Range,
    /// Checked or not (shown as such: a number says nothing).
    Checkable,
    /// Anything else (buttons, menu items, cells): a number alone means nothing.
    Plain,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_cleaned() {
        assert_eq!(clean_name("7 7", "", ""), "7");
        assert_eq!(clean_name("mod mod", "Modulus divide", ""), "mod");
        assert_eq!(clean_name("GtkButton", "Pi [Ctrl+P]", "π"), "Pi [Ctrl+P]");
        assert_eq!(clean_name("GtkButton", "", "x2"), "x2");
        assert_eq!(clean_name("To Uppercase      ", "x", ""), "To Uppercase");
        assert_eq!(clean_name("", "", ""), "");
        assert_eq!(clean_name("Save", "Save the file", ""), "Save");
        assert!(is_noise("AdwGizmo"));
        assert!(!is_noise("Gtk"));
        assert!(!is_noise("Gdansk harbour"));
    }

    /// Issue 46: GNOME Clocks (GTK 4) names its buttons "_Add Add": the mnemonic label glued
    /// before the label. The name is the label; underscores inside words stay.
    #[test]
    fn a_mnemonic_is_never_part_of_a_name() {
        assert_eq!(clean_name("_Add Add", "", ""), "Add");
        assert_eq!(clean_name("_Cancel   Cancel", "", ""), "Cancel");
        assert_eq!(clean_name("_Save As Save As", "", ""), "Save As");
        assert_eq!(clean_name("Save _As Save As", "", ""), "Save As");
        // not a doubled name: kept as it is
        assert_eq!(clean_name("_Add Remove", "", ""), "_Add Remove");
        assert_eq!(clean_name("snake_case snake_case", "", ""), "snake_case");
        assert_eq!(without_mnemonic("_Add"), "Add");
        assert_eq!(without_mnemonic("Save _As"), "Save As");
        assert_eq!(without_mnemonic("snake_case"), "snake_case");
        assert_eq!(without_mnemonic("__init__"), "__init__");
        assert_eq!(without_mnemonic("_ alone"), "_ alone");
    }

    fn ev(own: &str) -> FieldEvidence {
        FieldEvidence {
            own: own.into(),
            ..FieldEvidence::default()
        }
    }

    /// LibreOffice Draw's sidebar: "Master Page:" ends 6 px left of its list box, on its
    /// line; the labels of the other rows and a label right of it are not its name.
    #[test]
    fn the_label_just_left_of_a_control_on_its_line_names_it() {
        let labels = [
            ((960, 281, 49, 34), "Margin:"),
            ((925, 318, 84, 34), "Master Page:"),
            ((928, 207, 81, 34), "Background:"),
            ((1210, 318, 40, 34), "After"),
        ];
        assert_eq!(
            label_left_of((1015, 318, 184, 34), &labels),
            Some("Master Page:")
        );
        assert_eq!(label_left_of((1015, 244, 184, 34), &labels), None);
        // too far left
        assert_eq!(label_left_of((1100, 318, 100, 34), &labels), None);
    }

    /// Issue 24, item 1: the order of evidence for a field's name.
    #[test]
    fn a_field_is_named_by_its_label_before_anything_else() {
        // Thunar's rename entry: unnamed, a label points at it
        let mut e = ev("");
        e.value = Some("alpha.txt".into());
        e.relation = Some("Enter the new name:".into());
        assert_eq!(field_name(&e), "Enter the new name");
        // File Roller's Location: named by its chosen option, labelled "_Location:"
        let mut e = ev("home");
        e.value = Some("home".into());
        e.relation = Some("_Location:".into());
        assert_eq!(field_name(&e), "Location");
        // ... and with no label at all, the option is a value, not a name
        e.relation = None;
        assert_eq!(field_name(&e), "");
        // the Add Files dialog's fields: named by their placeholder, labelled beside
        let mut e = ev("example: *.o; *.bak");
        e.placeholder = Some("example: *.o; *.bak".into());
        e.beside = Some("Include _files:".into());
        assert_eq!(field_name(&e), "Include files");
        // Evince's zoom box: the parent's name before a description
        let mut e = ev("");
        e.parent = Some("Set zoom level".into());
        e.description = "/home/user/docs".into();
        assert_eq!(field_name(&e), "Set zoom level");
        e.parent = None;
        assert_eq!(field_name(&e), "/home/user/docs");
        // an own name that is neither value nor placeholder wins over the label beside
        let mut e = ev("Search");
        e.beside = Some("Find:".into());
        assert_eq!(field_name(&e), "Search");
        // a label holding its field reads the field's choice too (Firefox: `<label>Plan
        // <select>`): the name is the label's own words
        let mut e = ev("Plan");
        e.value = Some("Free".into());
        e.relation = Some("Plan Free".into());
        assert_eq!(field_name(&e), "Plan");
        // ... but a label that only equals the value, or does not end with it, is kept
        e.relation = Some("Free".into());
        assert_eq!(field_name(&e), "Free");
        e.relation = Some("Freedom plan".into());
        assert_eq!(field_name(&e), "Freedom plan");
        // a toolkit type name is no name
        let mut e = ev("GtkEntry");
        e.beside = Some("Name:".into());
        assert_eq!(field_name(&e), "Name");
    }

    /// Issue 46, item 1: a container's name is a field's name of last resort, and one that
    /// several fields would share names none of them.
    #[test]
    fn a_container_name_shared_by_fields_names_none() {
        let mut e = ev("");
        e.parent = Some("Resource Consumption".into());
        assert_eq!(
            named_field(&e),
            ("Resource Consumption".to_string(), NameSource::Container)
        );
        e.beside = Some("Undo levels:".into());
        assert_eq!(
            named_field(&e),
            ("Undo levels".to_string(), NameSource::Own)
        );
        let names = [
            Some("Resource Consumption"),
            Some("Resource Consumption"),
            None,
            Some("Dimensions"),
            Some(""),
            Some(""),
        ];
        let shared = shared_container_names(names);
        assert_eq!(shared.len(), 1);
        assert!(shared.contains("Resource Consumption"));
    }

    /// Issue 46: a label beside a field that only repeats its value names nothing (Okular's
    /// page field, a hidden label "1" beside it while it shows page 1); an own name that is
    /// the container's is the container's (KolourPaint's spin buttons "Dimensions", each with
    /// a label "x" beside it), so that one shared by several fields names none of them.
    #[test]
    fn a_field_is_not_named_by_its_value_or_by_its_groups_title() {
        let mut e = ev("");
        e.value = Some("1".into());
        e.beside = Some("1".into());
        assert_eq!(named_field(&e), (String::new(), NameSource::Other));
        e.beside = Some("Page:".into());
        assert_eq!(named_field(&e), ("Page".to_string(), NameSource::Own));
        let mut e = ev("Dimensions");
        e.value = Some("100".into());
        e.beside = Some("x".into());
        e.parent = Some("Dimensions".into());
        assert_eq!(
            named_field(&e),
            ("Dimensions".to_string(), NameSource::Container)
        );
        // a name of its own that differs from the container's stays its own
        e.own = "New:".into();
        assert_eq!(named_field(&e), ("New:".to_string(), NameSource::Own));
    }

    /// Issue 24, item 7: KCalc's display (a frame named by the number it shows) is read.
    #[test]
    fn a_display_shows_its_text_as_its_value() {
        let d = display("42", "Result Display");
        assert_eq!(d.name, "Result Display");
        assert_eq!(d.value.as_deref(), Some("42"));
        assert_eq!(display(" 0 ", "").name, "display");
    }

    /// Issue 24, item 8: a button's number says nothing; a field's, a range's do.
    #[test]
    fn a_buttons_number_says_nothing() {
        assert!(!value_says_something(ValueKind::Plain, "0"));
        assert!(!value_says_something(ValueKind::Plain, " 1.5 "));
        assert!(value_says_something(ValueKind::Plain, "Bold"));
        assert!(value_says_something(ValueKind::Range, "0"));
        assert!(value_says_something(ValueKind::Field, "0"));
        assert!(value_says_something(ValueKind::Checkable, "unchecked"));
        assert!(!value_says_something(ValueKind::Checkable, "0"));
    }

    proptest::proptest! {
        /// Whatever the evidence, a field is never named by its value or its placeholder
        /// unless a label, its container or its description says the same words.
        #[test]
        fn never_named_by_value_or_placeholder(
            own in "[a-z ]{0,12}",
            beside in proptest::option::of("[A-Z][a-z]{0,8}:?"),
            parent in proptest::option::of("[A-Z][a-z]{0,8}"),
            by_value in proptest::bool::ANY,
        ) {
            let mut e = ev(&own);
            if by_value {
                e.value = Some(own.clone());
            } else {
                e.placeholder = Some(own.clone());
            }
            e.beside = beside.clone();
            e.parent = parent.clone();
            let name = field_name(&e);
            let others: Vec<String> = beside.iter().map(|b| label_as_name(b))
                .chain(parent.iter().cloned()).collect();
            let own = collapse_ws(&own);
            proptest::prop_assert!(own.is_empty() || name != own || others.contains(&name));
        }
    }
}
