//! What kind of page a help page is, from where the help keeps it. Some installed pages only
//! point elsewhere: LibreOffice's "To access this command…" lists of menu paths (`00/`
//! folders) and each module's welcome page (`main0000.html`), GIMP's lists of a menu's
//! entries (`gimp-*-menu.html`, `menus.html`). They share every word of the features they
//! list, so a search for a feature found them above the page that gives its steps (on the
//! evaluation set, "Add a bar chart…" ranked the Calc welcome page and a menu-path list
//! second and third). A search ranks them below every page that gives steps.

/// The kind of a help page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageKind {
    /// A page that explains a feature or gives steps.
    Content,
    /// A page that only lists where other pages' features are (menu paths, a menu's entries,
    /// a module's welcome page).
    Navigation,
}

/// The kind of the page stored at `location` (a file path or a URL) from `source` (the
/// stored source: `libreoffice`, `gimp`, ...; a person's own documents are never judged by
/// another program's layout).
pub fn kind_of(source: &str, location: &str) -> PageKind {
    let mut segments = location.rsplit('/');
    let file = segments.next().unwrap_or(location);
    let folder = segments.next().unwrap_or("");
    let navigation = match source {
        "libreoffice" => folder == "00" || file.starts_with("main0000."),
        "gimp" => file.ends_with("-menu.html") || file == "menus.html",
        _ => false,
    };
    match navigation {
        true => PageKind::Navigation,
        false => PageKind::Content,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn menu_path_lists_welcome_pages_and_menu_lists_are_navigation() {
        let lo = "/usr/share/libreoffice/help/en-US/text";
        let gimp = "/usr/share/gimp/2.0/help/en";
        for (source, nav) in [
            ("libreoffice", format!("{lo}/scalc/00/00000004.html")),
            ("libreoffice", format!("{lo}/shared/00/00000001.html")),
            ("libreoffice", format!("{lo}/scalc/main0000.html")),
            ("gimp", format!("{gimp}/gimp-filters-menu.html")),
            ("gimp", format!("{gimp}/menus.html")),
        ] {
            assert_eq!(kind_of(source, &nav), PageKind::Navigation, "{nav}");
        }
        for (source, content) in [
            ("libreoffice", format!("{lo}/scalc/guide/line_fix.html")),
            ("libreoffice", format!("{lo}/scalc/01/07090000.html")),
            ("libreoffice", format!("{lo}/shared/guide/main.html")),
            ("gimp", format!("{gimp}/gimp-view-show-menubar.html")),
            ("gimp", format!("{gimp}/gimp-filter-gaussian-blur.html")),
            // a person's own documents are never judged by another program's layout
            ("user", "/home/me/notes/00/menu.html".to_string()),
            ("user", "/home/me/notes/gimp-tools-menu.html".to_string()),
        ] {
            assert_eq!(kind_of(source, &content), PageKind::Content, "{content}");
        }
    }
}
