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

/// The name an agent sees: whitespace collapsed, GTK4's doubled names ("7 7") undoubled, and
/// the description (else the children's label text) when the name is noise.
pub(crate) fn clean_name(name: &str, description: &str, child_text: &str) -> String {
    let mut n = collapse_ws(name);
    let words: Vec<&str> = n.split(' ').collect();
    if words.len() >= 2 && words.len() & 1 == 0 {
        let half = words.len() / 2;
        if words[..half] == words[half..] {
            n = words[..half].join(" ");
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
}
