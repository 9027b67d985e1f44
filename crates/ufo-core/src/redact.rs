//! Hiding credentials that a URL may carry, before the URL is printed or stored.
//!
//! A base URL can hold a secret in its userinfo (`https://user:pass@host/v1`), in a query
//! parameter (`?key=...`, `?api_key=...`, `?sig=...`, a gateway's token) or in a fragment.
//! [`redact_url`] is the one function every message, log line and file uses to show a URL
//! (model providers in `ufo-llm`, MCP servers in `ufo-mcp`); [`scrub_url_secrets`] removes
//! those credentials from text that quotes the URL some other way (a library's error).

/// Query parameters whose values are shown: known not to be secrets.
const SHOWN_QUERY_PARAMETERS: &[&str] = &["api-version", "api_version"];

/// The text that replaces a hidden part.
const HIDDEN: &str = "***";

/// `url` with its credentials replaced by `***`: the userinfo (`user:pass@`) as a whole, the
/// value of every query parameter except `api-version`, and the fragment. Scheme, host, port
/// and path are kept, so the message still says where the request went. Works on text that
/// is not a valid URL too (it never fails and never panics).
///
/// ```
/// use ufo_core::redact::redact_url;
/// assert_eq!(
///     redact_url("http://user:secret@127.0.0.1:8080/v1?key=SECRET&api-version=1"),
///     "http://***@127.0.0.1:8080/v1?key=***&api-version=1"
/// );
/// ```
pub fn redact_url(url: &str) -> String {
    let (rest, fragment) = match url.split_once('#') {
        Some((rest, _)) => (rest, Some(HIDDEN)),
        None => (url, None),
    };
    let (rest, query) = match rest.split_once('?') {
        Some((rest, query)) => (rest, Some(redact_query(query))),
        None => (rest, None),
    };
    let (scheme, after_scheme) = match rest.split_once("://") {
        Some((scheme, after)) => (Some(scheme), after),
        None => (None, rest),
    };
    let (authority, path) = match after_scheme.find('/') {
        Some(i) => after_scheme.split_at(i),
        None => (after_scheme, ""),
    };
    // The host follows the last `@` (a password may itself contain `@`).
    let host = match authority.rfind('@') {
        Some(i) => format!("{HIDDEN}@{}", &authority[i + 1..]),
        None => authority.to_string(),
    };
    let mut out = String::with_capacity(url.len());
    if let Some(scheme) = scheme {
        out.push_str(scheme);
        out.push_str("://");
    }
    out.push_str(&host);
    out.push_str(path);
    if let Some(query) = query {
        out.push('?');
        out.push_str(&query);
    }
    if let Some(fragment) = fragment {
        out.push('#');
        out.push_str(fragment);
    }
    out
}

fn redact_query(query: &str) -> String {
    query
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some((name, value)) if shown(name) => format!("{name}={value}"),
            Some((name, _)) => format!("{name}={HIDDEN}"),
            // A bare item (`?SECRET`) may be a token itself.
            None if pair.is_empty() => String::new(),
            None => HIDDEN.to_string(),
        })
        .collect::<Vec<_>>()
        .join("&")
}

fn shown(name: &str) -> bool {
    SHOWN_QUERY_PARAMETERS
        .iter()
        .any(|p| p.eq_ignore_ascii_case(name))
}

/// `text` with the credentials of `url` (see [`url_secrets`]) replaced by `***`.
pub fn scrub_url_secrets(text: &str, url: &str) -> String {
    let mut out = text.to_string();
    for secret in url_secrets(url) {
        if out.contains(secret.as_str()) {
            out = out.replace(secret.as_str(), HIDDEN);
        }
    }
    out
}

/// The parts of `url` that [`redact_url`] hides (userinfo pieces and query values, raw and
/// percent-decoded, longest first), for scrubbing them from text that quotes the URL some
/// other way. Pieces shorter than 3 characters are left out: hiding them would mangle
/// messages and protect little.
pub fn url_secrets(url: &str) -> Vec<String> {
    let mut out = Vec::new();
    let no_fragment = url.split('#').next().unwrap_or("");
    let (rest, query) = match no_fragment.split_once('?') {
        Some((rest, query)) => (rest, Some(query)),
        None => (no_fragment, None),
    };
    let after_scheme = rest.split_once("://").map_or(rest, |(_, after)| after);
    let authority = after_scheme.split('/').next().unwrap_or("");
    if let Some(i) = authority.rfind('@') {
        let userinfo = &authority[..i];
        out.push(userinfo.to_string());
        out.extend(userinfo.split(':').map(str::to_string));
    }
    if let Some(query) = query {
        for pair in query.split('&') {
            match pair.split_once('=') {
                Some((name, value)) if !shown(name) => out.push(value.to_string()),
                Some(_) => {}
                None => out.push(pair.to_string()),
            }
        }
    }
    if let Some((_, fragment)) = url.split_once('#') {
        out.push(fragment.to_string());
    }
    let decoded: Vec<String> = out.iter().map(|s| percent_decode(s)).collect();
    out.extend(decoded);
    out.retain(|s| s.len() >= 3);
    out.sort();
    out.dedup();
    // Longest first, so a value containing another is replaced whole.
    out.sort_by_key(|s| std::cmp::Reverse(s.len()));
    out
}

/// `%XX` sequences decoded (invalid ones kept as they are); `+` is kept.
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok();
            if let Some(b) = hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// Any text: no panic; a secret placed in the userinfo or a query value never shows.
        #[test]
        fn never_panics_and_never_shows_a_placed_secret(
            any in "\\PC{0,80}",
            host in "[a-z0-9.:\\[\\]]{1,20}",
            path in "(/[a-zA-Z0-9@:._-]{0,8}){0,3}",
            name in "[a-z_]{1,8}",
            user in proptest::bool::ANY,
        ) {
            let _ = redact_url(&any);
            let _ = scrub_url_secrets(&any, &any);
            let secret = "S3cr3tXYZ";
            let url = if user {
                format!("https://u:{secret}@{host}{path}")
            } else {
                format!("https://{host}{path}?{name}={secret}")
            };
            let shown = redact_url(&url);
            prop_assert!(!shown.contains(secret), "{} -> {}", url, shown);
            prop_assert!(shown.contains(host.as_str()), "{} -> {}", url, shown);
        }
    }

    #[test]
    fn userinfo_and_query_values_are_hidden() {
        assert_eq!(
            redact_url("http://user:secret@127.0.0.1:8080/v1?key=SECRET"),
            "http://***@127.0.0.1:8080/v1?key=***"
        );
        assert_eq!(
            redact_url("https://h/v1?api_key=a&token=b&sig=c&x&api-version=2024-10-21#frag"),
            "https://h/v1?api_key=***&token=***&sig=***&***&api-version=2024-10-21#***"
        );
        assert_eq!(redact_url("https://tok@h"), "https://***@h");
        assert_eq!(redact_url("u:p@w@host:1/a@b"), "***@host:1/a@b");
    }

    #[test]
    fn plain_urls_are_unchanged() {
        for url in [
            "https://api.openai.com/v1",
            "http://127.0.0.1:11434/v1/chat/completions",
            "http://[::1]:3000/v1",
            "",
            "not a url",
        ] {
            assert_eq!(redact_url(url), url);
        }
    }

    #[test]
    fn secrets_of_a_url_include_decoded_forms() {
        let s = url_secrets("http://us%65r:p%40ss@h/v1?key=K%2F1&api-version=9#FRAG");
        for want in ["us%65r:p%40ss", "user", "p@ss", "K%2F1", "K/1", "FRAG"] {
            assert!(s.iter().any(|x| x == want), "{want} missing from {s:?}");
        }
        assert!(!s.iter().any(|x| x == "9"), "{s:?}");
        assert_eq!(
            scrub_url_secrets(
                "error sending request for url (http://h/v1?key=K%2F1): refused (p@ss)",
                "http://u:p%40ss@h/v1?key=K%2F1"
            ),
            "error sending request for url (http://h/v1?key=***): refused (***)"
        );
    }
}
