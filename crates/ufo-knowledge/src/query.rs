//! Query building: a request in plain words made an FTS5 match expression.
//!
//! Every word is quoted (so that no word of a request is read as FTS5 syntax: `AND`, `NEAR`,
//! `*`, `:`), stop words and request filler ("how do I", "please") are dropped, and the rest
//! are OR-ed: BM25 then ranks pages with more (and rarer) words higher, where an AND of every
//! word would find nothing for most requests.

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

/// The words of `text` that carry meaning: stop words and single letters dropped.
pub fn terms(text: &str) -> Vec<String> {
    words(text)
        .into_iter()
        .filter(|w| !STOP_WORDS.contains(&w.as_str()))
        .filter(|w| w.chars().count() > 1 || w.chars().all(|c| c.is_ascii_digit()))
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
    let terms = or_of(&terms(text))?;
    let text = format!("{{title headings keywords body}} : ({terms})");
    Some(match app_tag {
        Some(app) => format!("apps : \"{}\" AND {text}", app.replace('"', "")),
        None => text,
    })
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
            "apps : \"calc\" AND {title headings keywords body} : (\"freeze\" OR \"first\" OR \"row\" OR \"calc\")"
        );
        assert_eq!(match_expression("how do I", None), None);
    }

    #[test]
    fn fts_syntax_in_a_request_is_only_words() {
        let e = match_expression("NEAR(a b) AND \"x\" * col:umn", None).unwrap();
        assert_eq!(
            e,
            "{title headings keywords body} : (\"near\" OR \"col\" OR \"umn\")"
        );
        assert_eq!(
            plain_expression("the row"),
            Some("\"the\" OR \"row\"".into())
        );
    }

    proptest::proptest! {
        #[test]
        fn terms_are_bounded_alphanumeric_words(s in ".{0,500}") {
            let t = terms(&s);
            proptest::prop_assert!(t.len() <= MAX_TERMS);
            for w in t {
                proptest::prop_assert!(w.chars().all(char::is_alphanumeric));
            }
        }
    }
}
