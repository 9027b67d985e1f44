//! Application names: what a person or a window calls an application, and the tag its help
//! pages carry in the store.

/// The LibreOffice applications whose help the shared pages serve.
pub const LIBREOFFICE_APPS: [&str; 4] = ["calc", "writer", "impress", "draw"];

/// The tag of the application named `name` (a desktop file name, a process name, a window's
/// application name or a short name): `libreoffice-calc`, `scalc`, `localc`, `LibreOffice
/// Calc` → `calc`; `soffice` → `libreoffice` (every LibreOffice page); `gimp-2.10` → `gimp`;
/// a shell or terminal → `terminal`; anything else its letters and digits, lowercased.
/// `None` for a name with no letters or digits.
pub fn app_tag(name: &str) -> Option<String> {
    let lower = name.trim().to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric() && c != '.')
        .filter(|w| !w.is_empty())
        .collect();
    let has = |w: &str| words.contains(&w);
    let tag = if has("calc") || has("scalc") || has("localc") {
        "calc"
    } else if has("writer") || has("swriter") || has("lowriter") {
        "writer"
    } else if has("impress") || has("simpress") || has("loimpress") {
        "impress"
    } else if has("draw") || has("sdraw") || has("lodraw") {
        "draw"
    } else if has("soffice") || has("soffice.bin") || has("libreoffice") || has("office") {
        "libreoffice"
    } else if words
        .first()
        .is_some_and(|w| *w == "gimp" || w.starts_with("gimp"))
    {
        "gimp"
    } else if words.iter().any(|w| {
        matches!(
            *w,
            "terminal" | "shell" | "bash" | "sh" | "zsh" | "xterm" | "konsole" | "xfce4" | "man"
        )
    }) {
        "terminal"
    } else {
        return tag_of(&lower);
    };
    Some(tag.to_string())
}

/// A free name as a store tag: its letters and digits only (the index splits on the rest).
pub fn tag_of(name: &str) -> Option<String> {
    let t: String = name
        .chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect();
    (!t.is_empty()).then_some(t)
}

/// The applications a LibreOffice help module serves (`scalc` → Calc; `shared` and `schart`
/// → every LibreOffice application). Every page also carries `libreoffice`.
pub fn libreoffice_module_apps(module: &str) -> Vec<&'static str> {
    let mut apps = match module {
        "scalc" => vec!["calc"],
        "swriter" => vec!["writer"],
        "simpress" => vec!["impress"],
        "sdraw" => vec!["draw"],
        "shared" | "schart" => LIBREOFFICE_APPS.to_vec(),
        "smath" => vec!["math", "writer"],
        "sdatabase" => vec!["base"],
        "sbasic" => vec!["basic"],
        _ => vec![],
    };
    apps.push("libreoffice");
    apps
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_map_to_tags() {
        for (name, tag) in [
            ("libreoffice-calc", "calc"),
            ("LibreOffice Calc", "calc"),
            ("scalc", "calc"),
            ("libreoffice-writer", "writer"),
            ("libreoffice-impress", "impress"),
            ("soffice", "libreoffice"),
            ("soffice.bin", "libreoffice"),
            ("gimp", "gimp"),
            ("gimp-2.10", "gimp"),
            (
                "GNU Image Manipulation Program",
                "gnuimagemanipulationprogram",
            ),
            ("bash", "terminal"),
            ("gnome-calculator", "gnomecalculator"),
        ] {
            assert_eq!(app_tag(name).as_deref(), Some(tag), "{name}");
        }
        assert_eq!(app_tag(" - "), None);
    }

    #[test]
    fn shared_pages_serve_every_libreoffice_application() {
        assert_eq!(libreoffice_module_apps("scalc"), ["calc", "libreoffice"]);
        let shared = libreoffice_module_apps("shared");
        for a in LIBREOFFICE_APPS {
            assert!(shared.contains(&a));
        }
    }
}
