//! What of a page is embedded ([`embed_texts`]), and what kind of page a help page is, from
//! where the help keeps it. Some installed pages only point elsewhere: LibreOffice's "To
//! access this command…" lists of menu paths (`00/` folders) and each module's welcome page
//! (`main0000.html`), GIMP's lists of a menu's entries (`gimp-*-menu.html`, `menus.html`).
//! They share every word of the features they list, so a search for a feature found them
//! above the page that gives its steps (on the evaluation set, "Add a bar chart…" ranked the
//! Calc welcome page and a menu-path list second and third). A search ranks them below every
//! page that gives steps.
//!
//! LibreOffice keeps its how-to guides (`guide/` folders: numbered steps for a task) apart
//! from its reference pages (one dialog or command each). A request asks how to do a task,
//! so a search with a model gives guides a small lead ([`GUIDE_PRIOR`]): on the tuning set
//! fused hit@1 went from 0.56 to 0.60 (hit@3 0.78 to 0.79); a lead of 0.4 lost (0.71).

/// The kind of a help page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageKind {
    /// A how-to guide: the steps of a task.
    Guide,
    /// A page that explains a feature (a dialog, a command, a tool) or gives steps.
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
    let guide = source == "libreoffice" && folder == "guide";
    match (navigation, guide) {
        (true, _) => PageKind::Navigation,
        (false, true) => PageKind::Guide,
        (false, false) => PageKind::Content,
    }
}

/// How much a how-to guide's fused score is raised (by this fraction) over a reference
/// page's: a tie-breaker between pages both rankings found close, not more.
pub const GUIDE_PRIOR: f64 = 0.05;

/// A page's fused `score` raised by its kind's prior.
pub fn with_prior(kind: PageKind, score: f64) -> f64 {
    match kind {
        PageKind::Guide => score * (1.0 + GUIDE_PRIOR),
        PageKind::Content | PageKind::Navigation => score,
    }
}

/// Most parts of a page's body embedded apart (after the part that names the page).
pub const BODY_PARTS: usize = 1;
/// Characters of the body in one embedded part (about what the model reads of it after the
/// title: [`crate::embed::DOC_TOKENS`] tokens).
const PART_CHARS: usize = 500;

/// What is embedded of a page, part by part; how close a page is to a query comes from its
/// parts' closeness ([`crate::embed::page_closeness`]). The first part names the page: its
/// title, headings, the sentence that gives its menu path (`menu_path_sentence`) and index
/// keywords (they name the feature in a person's words). Each further part is the title and a
/// stretch of the body, so the steps a page gives are matched even when its index entries fill
/// the first part.
pub fn embed_texts(p: &crate::extract::Page) -> Vec<String> {
    let mut name = format!("{}\n{}", p.title, p.headings);
    if let Some(path) = menu_path_sentence(&p.body) {
        name.push('\n');
        name.push_str(path);
    }
    let mut parts = vec![format!("{name}\n{}", p.keywords)];
    let body: Vec<char> = p.body.chars().take(crate::embed::TEXT_CHARS).collect();
    for stretch in body.chunks(PART_CHARS).take(BODY_PARTS) {
        let text: String = stretch.iter().collect();
        if !text.trim().is_empty() {
            parts.push(format!("{}\n{}", p.title, text));
        }
    }
    parts
}

/// Most characters of the sentence [`menu_path_sentence`] takes, either side of its arrows.
const PATH_CONTEXT_CHARS: usize = 160;

/// The sentence of `body` that gives a menu path ("You can access this command from the image
/// menubar through Layer → New Layer…"): from its start to its end around the first arrows,
/// at most [`PATH_CONTEXT_CHARS`] either side. It is embedded with the page's name: GIMP's
/// pages give it under "Activating the Command", after the feature's description, and for a
/// third of them (234 of 516 with a path) that is past the stretch of the body embedded.
fn menu_path_sentence(body: &str) -> Option<&str> {
    const ARROW: char = '→';
    let first = body.find(ARROW)?;
    let floor = body[..first]
        .char_indices()
        .rev()
        .nth(PATH_CONTEXT_CHARS)
        .map_or(0, |(i, _)| i);
    let start = ["。", ". ", ": ", "! ", "? "]
        .iter()
        .filter_map(|stop| {
            body[floor..first]
                .rfind(stop)
                .map(|i| floor + i + stop.len())
        })
        .max()
        .unwrap_or(floor);
    // the arrows of the same path: each within a few words of the one before
    let mut last = first;
    while let Some(next) = body[last + ARROW.len_utf8()..].find(ARROW) {
        let next = last + ARROW.len_utf8() + next;
        if body[last..next].chars().count() > 40 {
            break;
        }
        last = next;
    }
    let after = last + ARROW.len_utf8();
    let ceiling = body[after..]
        .char_indices()
        .nth(PATH_CONTEXT_CHARS)
        .map_or(body.len(), |(i, _)| after + i);
    let end = [". ", "; "]
        .iter()
        .filter_map(|stop| body[after..ceiling].find(stop).map(|i| after + i + 1))
        .min()
        .unwrap_or(ceiling);
    Some(body[start..end].trim())
}

/// Most index entries of a page embedded one by one.
pub const MAX_KEYWORD_TEXTS: usize = 32;

/// The page's index entries (one a line of its keywords: "rows, freezing", "Layer,
/// Transparency managing, Add Alpha channel"), each once, at most [`MAX_KEYWORD_TEXTS`]:
/// each is embedded alone, and a search ranks pages by their entry closest to the request
/// as well ([`crate::embed::best_closeness`]). An entry names one feature in a few words, as
/// a person might ask for it; embedded among all of a page's name they were diluted.
pub fn keyword_texts(p: &crate::extract::Page) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for entry in p.keywords.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if out.len() >= MAX_KEYWORD_TEXTS {
            break;
        }
        if !out.iter().any(|o| o == entry) {
            out.push(entry.to_string());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_is_embedded_as_its_name_then_a_stretch_of_its_body() {
        let page = |keywords: &str, body: &str| crate::extract::Page {
            title: "Freezing Rows".into(),
            headings: "Freezing Rows".into(),
            keywords: keywords.into(),
            body: body.into(),
        };
        let many_keywords = "rows; freezing; columns; headers; ".repeat(40);
        let parts = embed_texts(&page(
            &many_keywords,
            "Select the row below the one to freeze.",
        ));
        assert_eq!(parts.len(), 1 + BODY_PARTS);
        assert!(parts[0].contains("rows; freezing"));
        assert!(!parts[0].contains("Select the row"));
        // the steps are embedded whatever the index entries' length
        assert!(parts[1].starts_with("Freezing Rows\n"));
        assert!(parts[1].contains("Select the row below"));
        // a page without a body is its name alone
        assert_eq!(embed_texts(&page("rows", " ")).len(), 1);
        // each part stays within what the model reads of it
        let long = embed_texts(&page("", &"word ".repeat(5_000)));
        assert!(long
            .iter()
            .skip(1)
            .all(|p| p.chars().count() <= PART_CHARS + 20));
    }

    #[test]
    fn the_sentence_that_gives_a_menu_path_is_embedded_with_the_name() {
        let page = |body: &str| crate::extract::Page {
            title: "New Layer".into(),
            headings: "The “Layer” Menu\nNew Layer".into(),
            keywords: "Layer, Stack managing, Create a new layer".into(),
            body: body.into(),
        };
        let intro = "The command adds a layer. It is empty. ".repeat(30);
        let path = "You can access this command from the image menubar through Layer → New \
                    Layer… , or by clicking on the button in the layer dialog.";
        let body = format!("{intro}7.2.1. Activating the Command {path} Description: Layer …");
        let path = format!("Activating the Command {path}");
        assert_eq!(menu_path_sentence(&body), Some(path.as_str()));
        let parts = embed_texts(&page(&body));
        assert_eq!(
            parts[0],
            format!(
                "New Layer\nThe “Layer” Menu\nNew Layer\n{path}\n\
                 Layer, Stack managing, Create a new layer"
            )
        );
        // a path of several arrows is one; a far arrow is another sentence's
        let tools = "Intro: From the image menu bar Tools → Selection Tools → By Color \
                     Select , by clicking on the tool icon. Later → elsewhere.";
        assert_eq!(
            menu_path_sentence(tools),
            Some("From the image menu bar Tools → Selection Tools → By Color Select , by clicking on the tool icon.")
        );
        // without a stop the sentence is bounded either side
        let long = format!("{}Layer → New{}", "x".repeat(1_000), "y".repeat(1_000));
        let s = menu_path_sentence(&long).unwrap();
        assert!(
            s.chars().count() <= 2 * PATH_CONTEXT_CHARS + 20,
            "{}",
            s.len()
        );
        assert!(s.contains("Layer → New"));
        assert_eq!(menu_path_sentence("→"), Some("→"));
        // a page without a path is embedded as before
        assert_eq!(menu_path_sentence("Choose Format - Cells."), None);
        assert_eq!(
            embed_texts(&page("Choose Format - Cells."))[0],
            "New Layer\nThe “Layer” Menu\nNew Layer\nLayer, Stack managing, Create a new layer"
        );
    }

    #[test]
    fn each_index_entry_is_embedded_once_and_their_number_is_bounded() {
        let page = |keywords: &str| crate::extract::Page {
            title: "Freezing Rows".into(),
            headings: "Freezing Rows".into(),
            keywords: keywords.into(),
            body: "Select the row.".into(),
        };
        assert_eq!(
            keyword_texts(&page(
                "rows, freezing\n  tables; splitting \n\nrows, freezing\n"
            )),
            ["rows, freezing", "tables; splitting"]
        );
        assert!(keyword_texts(&page(" \n ")).is_empty());
        let many: String = (0..100).map(|i| format!("entry {i}\n")).collect();
        let texts = keyword_texts(&page(&many));
        assert_eq!(texts.len(), MAX_KEYWORD_TEXTS);
        assert_eq!(texts[0], "entry 0");
        // repeats do not use up the bound
        let repeated = format!("{}{many}", "entry 0\n".repeat(50));
        assert_eq!(keyword_texts(&page(&repeated)), texts);
    }

    #[test]
    fn menu_path_lists_welcome_pages_and_menu_lists_are_navigation_guides_are_guides() {
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
        for guide in [
            format!("{lo}/scalc/guide/line_fix.html"),
            format!("{lo}/shared/guide/main.html"),
        ] {
            assert_eq!(kind_of("libreoffice", &guide), PageKind::Guide, "{guide}");
        }
        for (source, content) in [
            ("libreoffice", format!("{lo}/scalc/01/07090000.html")),
            ("gimp", format!("{gimp}/guide/x.html")),
            ("gimp", format!("{gimp}/gimp-view-show-menubar.html")),
            ("gimp", format!("{gimp}/gimp-filter-gaussian-blur.html")),
            // a person's own documents are never judged by another program's layout
            ("user", "/home/me/notes/00/menu.html".to_string()),
            ("user", "/home/me/notes/gimp-tools-menu.html".to_string()),
        ] {
            assert_eq!(kind_of(source, &content), PageKind::Content, "{content}");
        }
    }

    #[test]
    fn only_guides_get_a_lead_and_it_reorders_only_close_pages() {
        assert!(with_prior(PageKind::Guide, 0.03) > with_prior(PageKind::Content, 0.03));
        assert_eq!(with_prior(PageKind::Navigation, 0.03), 0.03);
        // reciprocal-rank scores of a page in both rankings: a tie-breaker between
        // neighbours below the first places (a guide eighth passes the seventh, a guide third
        // not the second), never a lift from far down (a guide twentieth not the first)
        let rrf = |rank: f64| 2.0 / (crate::embed::RRF_K + rank);
        assert!(with_prior(PageKind::Guide, rrf(8.0)) > rrf(7.0));
        assert!(with_prior(PageKind::Guide, rrf(3.0)) < rrf(2.0));
        assert!(with_prior(PageKind::Guide, rrf(20.0)) < rrf(1.0));
    }
}
