//! The one tolerant parser of model output.
//!
//! Models wrap JSON in code fences, put prose around it, and leave trailing commas; small local
//! models put line breaks and tabs inside strings unescaped, even under a server's schema
//! grammar (llama-cpp-python 0.3's lets them through: 3 of 8 re-asks in a 20-step run of
//! SmolLM2-135M). This module repairs those and nothing else: anything still invalid is an
//! error whose text is sent back to the model.

use serde_json::{Map, Value};

/// Find the JSON object in a model's answer and parse it, repairing fences, surrounding prose
/// and trailing commas. Never panics.
pub fn parse_object(raw: &str) -> Result<Map<String, Value>, String> {
    let candidate = extract_object(raw).ok_or_else(|| {
        if raw.trim().is_empty() {
            "the answer is empty; answer with one JSON object".to_string()
        } else {
            "the answer holds no JSON object (no balanced {...} found); answer with one JSON object"
                .to_string()
        }
    })?;
    let repaired = escape_controls_in_strings(&remove_trailing_commas(candidate));
    match serde_json::from_str::<Value>(&repaired) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err("the answer is JSON but not an object".to_string()),
        Err(e) => Err(format!("the answer is not valid JSON: {e}")),
    }
}

/// How many unbalanced `{` the search skips before it gives up. Each restart rescans the rest
/// of the answer, so without a bound an answer of many unclosed braces (`{{{{…`) would take time
/// quadratic in its length; real answers have at most a few stray braces in their prose.
const MAX_RESTARTS: usize = 64;

/// The first balanced `{...}` in `raw`, skipping braces inside strings.
fn extract_object(raw: &str) -> Option<&str> {
    let bytes = raw.as_bytes();
    let mut search_from = 0;
    let mut restarts = 0;
    while let Some(rel) = raw.get(search_from..)?.find('{') {
        if restarts > MAX_RESTARTS {
            return None;
        }
        restarts += 1;
        let start = search_from + rel;
        let mut depth = 0usize;
        let mut scan = JsonScan::default();
        for (i, &b) in bytes.iter().enumerate().skip(start) {
            // quotes and backslashes are ASCII: a byte of a multi-byte character is neither
            if scan.in_string(char::from(b)) {
                continue;
            }
            match b {
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        return raw.get(start..=i);
                    }
                }
                _ => {}
            }
        }
        // Unbalanced from this brace: try the next one.
        search_from = start + 1;
    }
    None
}

/// Where a scan of JSON text is: inside a string (just after a backslash or not) or outside.
#[derive(Debug, Default, Clone, Copy)]
pub struct JsonScan {
    in_str: bool,
    escaped: bool,
}

impl JsonScan {
    /// Take the next character; whether it belongs to a string (its quotes included).
    pub fn in_string(&mut self, c: char) -> bool {
        if self.in_str {
            if self.escaped {
                self.escaped = false;
            } else if c == '\\' {
                self.escaped = true;
            } else if c == '"' {
                self.in_str = false;
            }
            return true;
        }
        self.in_str = c == '"';
        self.in_str
    }
}

/// Remove the whitespace outside strings from JSON text.
pub fn compact_json(text: &str) -> String {
    let mut scan = JsonScan::default();
    text.chars()
        .filter(|&c| scan.in_string(c) || !c.is_whitespace())
        .collect()
}

/// Escape the control characters (U+0000 to U+001F) written raw inside strings, which JSON
/// forbids there: a line break becomes `\n`, a tab `\t`, the rest `\u00XX`.
fn escape_controls_in_strings(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut scan = JsonScan::default();
    for c in s.chars() {
        if scan.in_string(c) && c < ' ' {
            match c {
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                _ => out.push_str(&format!("\\u{:04x}", c as u32)),
            }
            continue;
        }
        out.push(c);
    }
    out
}

/// Drop commas that directly precede `}` or `]` (outside strings).
fn remove_trailing_commas(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut scan = JsonScan::default();
    let chars: Vec<char> = s.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if scan.in_string(c) {
            out.push(c);
            continue;
        }
        if c == ',' {
            let next = chars[i + 1..].iter().find(|c| !c.is_whitespace());
            if matches!(next, Some('}') | Some(']')) {
                continue;
            }
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn compact_json_keeps_the_whitespace_inside_strings() {
        assert_eq!(
            compact_json("{ \"a b\" : [1, \"x \\\" y\"] }"),
            "{\"a b\":[1,\"x \\\" y\"]}"
        );
    }

    #[test]
    fn repairs_fences_prose_and_trailing_commas() {
        let raw = "Sure! Here it is:\n```json\n{\"a\": [1, 2,], \"b\": \"}{\",}\n```\nDone.";
        let m = parse_object(raw).expect("repaired");
        assert_eq!(m["a"], serde_json::json!([1, 2]));
        assert_eq!(m["b"], "}{");
    }

    #[test]
    fn escapes_line_breaks_and_tabs_written_raw_inside_strings() {
        let m = parse_object("{\"Thought\": \"one\ntwo\tthree\u{1}\",\n \"Status\": \"FINISH\"}")
            .expect("repaired");
        assert_eq!(m["Thought"], "one\ntwo\tthree\u{1}");
        assert_eq!(m["Status"], "FINISH");
    }

    #[test]
    fn keeps_commas_inside_strings() {
        let m = parse_object(r#"{"t": "a ,}"}"#).expect("valid");
        assert_eq!(m["t"], "a ,}");
    }

    #[test]
    fn rejects_what_cannot_be_repaired() {
        assert!(parse_object("").unwrap_err().contains("empty"));
        assert!(parse_object("no json here")
            .unwrap_err()
            .contains("no JSON object"));
        assert!(parse_object("{\"a\": }")
            .unwrap_err()
            .contains("not valid JSON"));
        assert!(parse_object("{'a': 1}").is_err());
    }

    #[test]
    fn skips_an_unbalanced_brace_in_prose() {
        let m = parse_object("note { this\n{\"ok\": true}").expect("found");
        assert_eq!(m["ok"], true);
    }

    #[test]
    fn many_unclosed_braces_end_the_search_quickly() {
        // 64 KiB of `{` scanned from every brace would be 2^31 steps; the restart bound keeps
        // it to a few million.
        let raw = format!("{}{{\"ok\": true}}", "{".repeat(1 << 16));
        assert!(parse_object(&raw).unwrap_err().contains("no JSON object"));
        // A few stray braces in the prose are still skipped.
        let m = parse_object("a { b { c {\n{\"ok\": true}").expect("found");
        assert_eq!(m["ok"], true);
    }

    proptest! {
        #[test]
        fn never_panics(s in ".*") {
            let _ = parse_object(&s);
        }

        #[test]
        fn never_panics_on_jsonish(s in r#"[{}\[\]",:a-z0-9\\ \n`]*"#) {
            let _ = parse_object(&s);
        }

        #[test]
        fn valid_objects_survive_wrapping(key in "[a-z]{1,8}", val in ".*", pre in "[^{]*", post in ".*") {
            let obj = serde_json::json!({ key.clone(): val.clone() });
            let raw = format!("{pre}\n```json\n{obj}\n```\n{post}");
            let m = parse_object(&raw).expect("wrapped object parses");
            prop_assert_eq!(m.get(&key), Some(&serde_json::Value::String(val)));
        }
    }
}
