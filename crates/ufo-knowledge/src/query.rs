//! Query building: a request in plain words made an FTS5 match expression.
//!
//! Every word is quoted (so that no word of a request is read as FTS5 syntax: `AND`, `NEAR`,
//! `*`, `:`), stop words and request filler ("how do I", "please") are dropped, and the rest
//! are OR-ed: BM25 then ranks pages with more (and rarer) words higher, where an AND of every
//! word would find nothing for most requests.
//!
//! A request written as a task names the person's data as well as the operation: "In
//! grades_2024.xlsx, put the average of B2:E2 into F2". [`operation_text`] drops the data
//! (file names, paths, quoted text, cell ranges, numbers) before both the lexical and the
//! model's search. On the tuning set (109 requests, 52 of them such task descriptions) fused
//! hit@3 went from 0.74 to 0.78 (dense 0.64 to 0.69, lexical 0.61 to 0.64).

/// Most words of a query used.
pub const MAX_TERMS: usize = 32;

/// Words that say nothing about which page helps.
const STOP_WORDS: &[&str] = &[
    "a",
    "about",
    "above",
    "after",
    "all",
    "also",
    "am",
    "an",
    "and",
    "any",
    "are",
    "as",
    "at",
    "be",
    "been",
    "before",
    "being",
    "below",
    "both",
    "but",
    "by",
    "can",
    "could",
    "did",
    "do",
    "does",
    "doing",
    "done",
    "each",
    "for",
    "from",
    "further",
    "get",
    "had",
    "has",
    "have",
    "having",
    "help",
    "here",
    "how",
    "i",
    "if",
    "in",
    "into",
    "is",
    "it",
    "its",
    "itself",
    "just",
    "libreoffice",
    "like",
    "make",
    "me",
    "my",
    "myself",
    "need",
    "no",
    "not",
    "now",
    "of",
    "on",
    "once",
    "only",
    "or",
    "other",
    "our",
    "out",
    "own",
    "please",
    "same",
    "should",
    "so",
    "some",
    "such",
    "than",
    "that",
    "the",
    "their",
    "them",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "through",
    "to",
    "too",
    "under",
    "until",
    "up",
    "us",
    "very",
    "want",
    "was",
    "way",
    "we",
    "were",
    "what",
    "when",
    "where",
    "which",
    "while",
    "who",
    "whom",
    "why",
    "will",
    "with",
    "would",
    "you",
    "your",
];

/// The words of `text`, lowercased, each once, in order (at most [`MAX_TERMS`]).
pub fn words(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for w in text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        let w = w.to_lowercase();
        if !out.contains(&w) {
            out.push(w);
        }
        if out.len() >= MAX_TERMS {
            break;
        }
    }
    out
}

/// The words of `text` that carry meaning: stop words, single letters and request data
/// (numbers, cell addresses like `A1` or `Sheet1`, quoted text, file names, paths: see
/// [`operation_text`]) dropped.
pub fn terms(text: &str) -> Vec<String> {
    words(&operation_text(text))
        .into_iter()
        .filter(|w| !STOP_WORDS.contains(&w.as_str()))
        .filter(|w| w.chars().count() > 1)
        .filter(|w| !is_data(w))
        .collect()
}

/// A number or a cell address: the request's data, not what it asks to do.
fn is_data(w: &str) -> bool {
    let letters = w.chars().take_while(|c| c.is_alphabetic()).count();
    let rest = &w[w
        .char_indices()
        .nth(letters)
        .map(|(i, _)| i)
        .unwrap_or(w.len())..];
    !rest.is_empty() && rest.chars().all(|c| c.is_ascii_digit())
}

/// `text` without what names the person's own data rather than the operation asked for:
/// quoted text (what is typed or looked for), file names (`grades_2024.xlsx`), paths and
/// addresses (`~/export`, `https://…`), names with underscores, cell addresses and ranges
/// (`B2:E2`, `$A$1`, `Sheet1`), numbers, dates and measures (`17.04.2023`, `16:9`, `5px`,
/// `12pt`). The rest keeps its order and punctuation, so a model still reads a sentence. A
/// request that would keep no word of three letters or more is kept whole.
///
/// Measured on the tuning set (docs/knowledge.md): a file's extension drew its format's
/// pages (`employees.csv`: the CSV import pages above the date format's) and the model read
/// cell ranges and values as words.
pub fn operation_text(text: &str) -> String {
    let unquoted = without_quoted(text);
    let mut out = String::with_capacity(unquoted.len());
    for token in unquoted.split_whitespace() {
        // the token's word without the punctuation around it ("(A2:B300)," -> "A2:B300")
        let core = token.trim_matches(|c: char| !c.is_alphanumeric() && c != '~' && c != '$');
        if !core.is_empty() && names_data(core) {
            // keep what ends a clause, so the sentence's shape stays
            if let Some(end) = token
                .chars()
                .last()
                .filter(|c| matches!(c, ',' | ';' | '.'))
            {
                out.push(end);
            }
            continue;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(token);
    }
    let meaningful = words(&out)
        .iter()
        .any(|w| w.chars().count() >= 3 && !is_data(w));
    match meaningful {
        true => out,
        false => text.to_string(),
    }
}

/// The request's operation ([`operation_text`]) as a person asks for it, in the phrasings a
/// query is embedded in: "How do I …" and "I want to …". Sentence models such as
/// all-MiniLM-L6-v2 learned from questions paired with the passages that answer them, and a
/// help page answers how to do something: asked so, the request lands nearer the pages that
/// give its steps than as a bare command ("Make the colours more vivid") does. Measured
/// (docs/knowledge.md, 205 tuning requests): fused hit@3 0.78 → 0.81, MRR@10 0.67 → 0.71.
/// One phrasing alone did as well on the whole set, but which one was best changed from part
/// to part (hit@3 0.59-0.73 for nine phrasings on 96 of them), so two common ones are added;
/// naming the application in the phrasing lost.
pub fn asked(text: &str) -> [String; 2] {
    let op = operation_text(text);
    let mut chars = op.chars();
    let op = match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => op,
    };
    [format!("How do I {op}"), format!("I want to {op}")]
}

/// Units a number is written with (`5px`, `300dpi`): the number names a value.
const UNITS: &[&str] = &[
    "px", "pt", "cm", "mm", "in", "dpi", "ppi", "em", "deg", "ms", "s",
];

/// Whether one whitespace-separated token (its surrounding punctuation removed) names the
/// request's data: a URL, path, file name, underscored name, cell address or range, or a
/// number, date or measure.
fn names_data(t: &str) -> bool {
    let lower = t.to_lowercase();
    if lower.contains("://") || lower.starts_with("www.") || lower.contains('@') {
        return true; // an address
    }
    if t.contains('/') || t.contains('\\') || t.starts_with('~') {
        return true; // a path (or a date written with slashes)
    }
    if t.contains('_') {
        return true; // a name made for a file, a variable, a sheet
    }
    if let Some((name, ext)) = t.rsplit_once('.') {
        let ext_ok = (1..=5).contains(&ext.len())
            && ext.chars().all(|c| c.is_ascii_alphanumeric())
            && ext.chars().any(|c| c.is_ascii_alphabetic());
        if ext_ok && !name.is_empty() && name.chars().next().is_some_and(char::is_alphanumeric) {
            return true; // a file name
        }
    }
    // cell addresses and ranges: A1, $A$1, B2:E2, Sheet1
    if t.split(':').all(|p| {
        let p: String = p.chars().filter(|c| *c != '$').collect();
        !p.is_empty() && is_data(&p.to_lowercase())
    }) {
        return true;
    }
    // numbers, dates, times, ratios, percentages, measures
    let digits = lower.chars().filter(char::is_ascii_digit).count();
    if digits == 0 {
        return false;
    }
    let rest: String = lower
        .chars()
        .filter(|c| !c.is_ascii_digit() && !matches!(c, '.' | ',' | ':' | '-' | '+' | '%'))
        .collect();
    // a size between numbers: 3x4, 1920x1080
    let size = rest.chars().all(|c| c == 'x')
        && lower.starts_with(|c: char| c.is_ascii_digit())
        && lower.ends_with(|c: char| c.is_ascii_digit());
    rest.is_empty() || size || UNITS.contains(&rest.as_str())
}

/// `text` without the parts in quotes (the text a request types or looks for).
fn without_quoted(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut quote: Option<char> = None;
    let chars: Vec<char> = text.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        let prev_alnum = i > 0 && chars[i - 1].is_alphanumeric();
        let next_alnum = chars.get(i + 1).is_some_and(|n| n.is_alphanumeric());
        match quote {
            Some(q) if c == q && !next_alnum => {
                quote = None;
                out.push(' ');
            }
            Some(_) => {}
            // An apostrophe inside a word ("don't") opens no quote.
            None if matches!(c, '"' | '\'' | '“' | '‘') && !prev_alnum => {
                quote = Some(match c {
                    '“' => '”',
                    '‘' => '’',
                    q => q,
                });
            }
            None => out.push(c),
        }
    }
    if quote.is_some() {
        return text.to_string(); // unbalanced: keep everything
    }
    out
}

/// Words a person uses for what the help calls otherwise (the applications' own wording is
/// added to the query, the person's kept).
const SYNONYMS: &[(&str, &[&str])] = &[
    ("add", &["insert"]),
    ("put", &["insert"]),
    ("remove", &["delete"]),
    ("erase", &["delete"]),
    ("resize", &["scale", "size"]),
    ("enlarge", &["scale", "size"]),
    ("shrink", &["scale", "size"]),
    ("picture", &["image", "graphic"]),
    ("photo", &["image"]),
    ("colour", &["color"]),
    ("many", &["count"]),
    ("restrict", &["limit", "validity"]),
    ("show", &["display"]),
    ("hide", &["hidden"]),
];

/// The help's words for `term`.
fn synonyms(term: &str) -> &'static [&'static str] {
    SYNONYMS
        .iter()
        .find(|(w, _)| *w == term)
        .map(|(_, s)| *s)
        .unwrap_or(&[])
}

/// Phrases of the request: two meaningful words in a row, or with one short stop word
/// between ("page break", "table of contents"): a page that has the phrase ranks higher.
fn phrases(text: &str) -> Vec<String> {
    let ws = words_in_order(&operation_text(text));
    let meaningful = |w: &str| !STOP_WORDS.contains(&w) && w.chars().count() > 1 && !is_data(w);
    let mut out = Vec::new();
    for i in 0..ws.len() {
        if !meaningful(&ws[i]) {
            continue;
        }
        if let Some(next) = ws.get(i + 1) {
            if meaningful(next) {
                out.push(format!("{} {}", ws[i], next));
            } else if matches!(next.as_str(), "of" | "and" | "to" | "by") {
                if let Some(third) = ws.get(i + 2).filter(|t| meaningful(t)) {
                    out.push(format!("{} {} {}", ws[i], next, third));
                }
            }
        }
        if out.len() >= MAX_TERMS / 2 {
            break;
        }
    }
    out
}

/// Every word of `text` in order (repeats kept), lowercased, bounded.
pub fn words_in_order(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .take(MAX_TERMS * 2)
        .map(str::to_lowercase)
        .collect()
}

/// `"t1" OR "t2" ...` of `terms` (`None` for no terms).
pub fn or_of(terms: &[String]) -> Option<String> {
    if terms.is_empty() {
        return None;
    }
    Some(
        terms
            .iter()
            .map(|t| format!("\"{}\"", t.replace('"', "")))
            .collect::<Vec<_>>()
            .join(" OR "),
    )
}

/// The match expression of the store's search: the meaningful words OR-ed over the text
/// columns, and, for an application, only its pages (`apps` column).
pub fn match_expression(text: &str, app_tag: Option<&str>) -> Option<String> {
    let terms = or_of(&query_terms(text))?;
    let text = format!("{{title headings keywords body}} : ({terms})");
    Some(scoped(text, app_tag))
}

/// The words, the help's words for them and the phrases of `text`, OR-ed in a match
/// expression.
fn query_terms(text: &str) -> Vec<String> {
    let mut all = terms(text);
    if all.is_empty() {
        return all;
    }
    for t in all.clone() {
        for s in synonyms(&t) {
            if !all.iter().any(|a| a == s) {
                all.push(s.to_string());
            }
        }
    }
    all.extend(phrases(text));
    all
}

/// As [`match_expression`] (the same documents, the same ranking), but only the terms with a
/// word for which `tag_word` holds (a word that may be in the `apps` or `kind` columns) carry
/// the column filter: a column filter makes FTS5 read the positions of every document its
/// term matches, and the other terms cannot match those columns anyway.
pub fn fast_match_expression(
    text: &str,
    app_tag: Option<&str>,
    tag_word: &dyn Fn(&str) -> bool,
) -> Option<String> {
    let all = query_terms(text);
    let (tagged, plain): (Vec<String>, Vec<String>) =
        all.into_iter().partition(|t| t.split(' ').any(tag_word));
    let text = match (or_of(&plain), or_of(&tagged)) {
        (None, None) => return None,
        (Some(p), None) => format!("({p})"),
        (None, Some(t)) => format!("{{title headings keywords body}} : ({t})"),
        (Some(p), Some(t)) => format!("({p} OR {{title headings keywords body}} : ({t}))"),
    };
    Some(scoped(text, app_tag))
}

/// `text` limited to an application's pages.
fn scoped(text: String, app_tag: Option<&str>) -> String {
    match app_tag {
        Some(app) => format!("apps : \"{}\" AND {text}", app.replace('"', "")),
        None => text,
    }
}

/// The plain baseline's match expression: every word of the request OR-ed, nothing dropped.
pub fn plain_expression(text: &str) -> Option<String> {
    or_of(&words(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_words_go_and_terms_are_quoted_and_or_ed() {
        let e = match_expression("How do I freeze the first row in Calc?", Some("calc")).unwrap();
        assert_eq!(
            e,
            "apps : \"calc\" AND {title headings keywords body} : (\"freeze\" OR \"first\" OR \"row\" OR \"calc\" OR \"first row\")"
        );
        assert_eq!(match_expression("how do I", None), None);
    }

    #[test]
    fn fts_syntax_in_a_request_is_only_words() {
        let e = match_expression("NEAR(a b) AND \"x\" * col:umn OR", None).unwrap();
        assert_eq!(
            e,
            "{title headings keywords body} : (\"near\" OR \"col\" OR \"umn\" OR \"col umn\")"
        );
        assert_eq!(
            plain_expression("the row"),
            Some("\"the\" OR \"row\"".into())
        );
    }

    #[test]
    fn request_data_goes_and_the_help_words_come() {
        assert_eq!(
            terms("Merge cells A1 to D1 in Sheet1, 800 px"),
            ["merge", "cells", "px"]
        );
        assert_eq!(
            terms("Replace 'colour' with \"color\" but don't stop"),
            ["replace", "don", "stop"]
        );
        assert_eq!(terms("an 'unbalanced quote"), ["unbalanced", "quote"]);
        let e = match_expression("Add picture", None).unwrap();
        assert!(
            e.contains("\"insert\"") && e.contains("\"image\"") && e.contains("\"add picture\""),
            "{e}"
        );
        let e = match_expression("insert a table of contents", None).unwrap();
        assert!(e.contains("\"table of contents\""), "{e}");
    }

    #[test]
    fn the_persons_data_goes_and_the_operation_stays() {
        assert_eq!(
            operation_text(
                "In grades_2024.xlsx, put the average of B2:E2 into F2 and fill it down to row 31."
            ),
            "In, put the average of into and fill it down to row."
        );
        assert_eq!(
            operation_text("Turn \"project website\" into a link to https://example.org/p."),
            "Turn into a link to."
        );
        assert_eq!(
            operation_text("Save each slide of deck.odp as PNG in ~/export (16:9, 300dpi, 5 px)"),
            "Save each slide of as PNG in,, px)"
        );
        assert_eq!(
            operation_text("Show 17.04.2023 and $A$1 of Sheet2 in 3D, 3x4 or 1920x1080"),
            "Show and of in 3D, or"
        );
        // nothing but data: kept whole
        assert_eq!(operation_text("report.xlsx B2:C4"), "report.xlsx B2:C4");
        assert_eq!(operation_text("'Budget'"), "'Budget'");
        // the lexical terms follow: a file's extension no longer draws its format's pages
        assert_eq!(
            terms("The dates in employees.csv look like 2023-04-17"),
            ["dates", "look"]
        );
    }

    /// Words that name an operation, and tokens that name a person's data.
    const OPERATIONS: &[&str] = &[
        "sort",
        "merge",
        "freeze",
        "rotate",
        "export",
        "insert",
        "hide",
        "average",
        "crop",
        "transparent",
        "bold",
        "layout",
        "caption",
        "filter",
        "blur",
    ];
    const DATA: &[&str] = &[
        "report_2023.xlsx",
        "B2:E2",
        "$C$4",
        "Sheet3",
        "42",
        "17.04.2023",
        "~/out/a.png",
        "https://example.org/x",
        "\"quoted words\"",
        "'Budget'",
        "5px",
        "16:9",
        "(A1:A9),",
    ];

    #[test]
    fn a_request_is_asked_as_a_person_asks_it_without_its_data() {
        assert_eq!(
            asked("Make the picture fly in when the slide is shown."),
            [
                "How do I make the picture fly in when the slide is shown.",
                "I want to make the picture fly in when the slide is shown."
            ]
        );
        let [how, want] = asked("Sum B2:B40 of report.xlsx into B41");
        assert_eq!(how, "How do I sum of into");
        assert_eq!(want, "I want to sum of into");
    }

    proptest::proptest! {
        #[test]
        fn cleaning_keeps_every_operation_word_and_never_empties(
            ops in proptest::collection::vec(0..OPERATIONS.len(), 0..6),
            data in proptest::collection::vec(0..DATA.len(), 0..6),
            order in proptest::collection::vec(proptest::bool::ANY, 12),
        ) {
            let (mut o, mut d) = (ops.iter(), data.iter());
            let mut request = Vec::new();
            for first in &order {
                let next = match first {
                    true => o.next().map(|i| OPERATIONS[*i]).or_else(|| d.next().map(|i| DATA[*i])),
                    false => d.next().map(|i| DATA[*i]).or_else(|| o.next().map(|i| OPERATIONS[*i])),
                };
                request.extend(next);
                request.push("the");
            }
            let request = request.join(" ");
            let cleaned = operation_text(&request);
            let words = words(&cleaned);
            for i in &ops {
                proptest::prop_assert!(words.contains(&OPERATIONS[*i].to_string()), "{request:?} -> {cleaned:?}");
            }
            if !ops.is_empty() {
                for i in &data {
                    let data_words = super::words(DATA[*i]);
                    proptest::prop_assert!(
                        !data_words.iter().any(|w| w.chars().any(|c| c.is_ascii_digit()) && words.contains(w)),
                        "{request:?} -> {cleaned:?}"
                    );
                }
            }
        }

        #[test]
        fn cleaning_never_empties_a_request(s in ".{0,300}") {
            if !s.trim().is_empty() {
                proptest::prop_assert!(!operation_text(&s).trim().is_empty(), "{s:?}");
            }
        }

        #[test]
        fn a_request_is_asked_in_two_phrasings_of_its_whole_operation(s in ".{0,300}") {
            let op = operation_text(&s);
            let [how, want] = asked(&s);
            let rest: String = op.chars().skip(1).collect();
            proptest::prop_assert!(how.starts_with("How do I ") && how.ends_with(&rest), "{s:?} -> {how:?}");
            proptest::prop_assert!(want.starts_with("I want to ") && want.ends_with(&rest), "{s:?} -> {want:?}");
        }

        #[test]
        fn terms_are_bounded_alphanumeric_words(s in ".{0,500}") {
            let t = terms(&s);
            proptest::prop_assert!(t.len() <= MAX_TERMS);
            for w in t {
                proptest::prop_assert!(w.chars().all(char::is_alphanumeric));
            }
        }
    }

    #[test]
    fn only_words_that_may_be_tags_keep_the_column_filter() {
        let tag = |w: &str| w == "calc";
        let e = fast_match_expression("freeze rows in calc", Some("calc"), &tag).unwrap();
        assert_eq!(
            e,
            "apps : \"calc\" AND (\"freeze\" OR \"rows\" OR \"freeze rows\" OR {title headings keywords body} : (\"calc\"))"
        );
        let none = |_: &str| false;
        let e = fast_match_expression("freeze rows", None, &none).unwrap();
        assert_eq!(e, "(\"freeze\" OR \"rows\" OR \"freeze rows\")");
        assert_eq!(fast_match_expression("how do I", None, &none), None);
    }
}
