//! The control socket's protocol (docs/console.md "The control socket"): one JSON object per
//! line each way. [`parse_request`] is the one parser of request lines: any bytes give a
//! [`Request`] or an error that says what was wrong and what to send instead. It is tolerant
//! of fields it does not know (a later client may send more), strict about the ones it does.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use ufo_core::access::{self, Caller, Principal, SessionOp};

/// Longest request line, in bytes (without its newline).
pub const MAX_REQUEST: usize = 64 * 1024;

/// A mouse click on the screen of the private desktop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub struct Click {
    /// Screen pixel column.
    pub x: i32,
    /// Screen pixel row.
    pub y: i32,
    /// 1 left, 2 middle, 3 right.
    #[serde(default = "left_button")]
    pub button: u8,
}

fn left_button() -> u8 {
    1
}

/// What an `input` request sends to the private desktop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// A click at a screen point.
    Click(Click),
    /// A key sequence in ufo's key syntax (`{ctrl+a}`, `abc{enter}`).
    Keys(String),
    /// Text typed as it is.
    Text(String),
}

/// One request line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    /// The state object.
    State,
    /// The state object now and on each change, until the session ends.
    Watch,
    /// Answer the open question `id`.
    Answer {
        /// The question's number.
        id: u64,
        /// The answer.
        value: AnswerValue,
    },
    /// End the session as Ctrl-C does.
    Cancel,
    /// Pause the agent: the console takes the private desktop over.
    Takeover,
    /// End the console's take-over.
    Handback,
    /// A fresh screenshot of the whole private screen.
    View,
    /// Input sent to the private desktop while it is taken over.
    Input(Input),
}

impl Request {
    /// What it does to the session, as the access rule names it (docs/security.md, "Who may
    /// do what").
    pub fn op(&self) -> SessionOp {
        match self {
            Request::State | Request::Watch => SessionOp::Watch,
            Request::Answer { .. } => SessionOp::Answer,
            Request::Cancel => SessionOp::Cancel,
            Request::Takeover | Request::Handback | Request::View | Request::Input(_) => {
                SessionOp::TakeOver
            }
        }
    }
}

/// An answer: a decision for a CONFIRM, a text for a PENDING question.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum AnswerValue {
    /// Approve (`true`) or reject (`false`) the held action.
    Approve(bool),
    /// The answer to a question.
    Text(String),
}

/// A request line that is not a request.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProtocolError {
    /// Longer than [`MAX_REQUEST`].
    #[error("the request is longer than {MAX_REQUEST} bytes; send one JSON object per line")]
    TooLong,
    /// Not UTF-8.
    #[error("the request is not UTF-8 text; send one JSON object per line")]
    NotText,
    /// Not a JSON object.
    #[error("the request is not a JSON object ({0}); send e.g. {{\"op\":\"state\"}}")]
    NotJson(String),
    /// No `op`, or one this socket does not know.
    #[error(
        "unknown op {0:?}; use state, watch, answer, cancel, takeover, handback, view or input"
    )]
    UnknownOp(String),
    /// The op's fields are wrong.
    #[error("{0}")]
    BadFields(String),
}

/// Wire form of the requests (the op names and their fields).
#[derive(Deserialize)]
#[serde(tag = "op", rename_all = "lowercase")]
enum Wire {
    State,
    Watch,
    Answer {
        id: u64,
        #[serde(default)]
        approve: Option<bool>,
        #[serde(default)]
        text: Option<String>,
    },
    Cancel,
    Takeover,
    Handback,
    View,
    Input {
        #[serde(default)]
        click: Option<Click>,
        #[serde(default)]
        keys: Option<String>,
        #[serde(default)]
        text: Option<String>,
    },
}

const OPS: [&str; 8] = [
    "state", "watch", "answer", "cancel", "takeover", "handback", "view", "input",
];

/// A request line with who sends it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Envelope {
    /// Who asks: a token holder the web console vouches for (`"as": {"name", "role"}`), or,
    /// without `as`, the session's own user (the socket admits no one else).
    pub caller: Caller,
    /// What is asked.
    pub request: Request,
}

/// Parse one request line (without its newline; a trailing `\r` and surrounding blanks are
/// allowed), with its caller (see [`Envelope`]).
pub fn parse_envelope(line: &[u8]) -> Result<Envelope, ProtocolError> {
    if line.len() > MAX_REQUEST {
        return Err(ProtocolError::TooLong);
    }
    let text = std::str::from_utf8(line).map_err(|_| ProtocolError::NotText)?;
    let mut value: Value =
        serde_json::from_str(text.trim()).map_err(|e| ProtocolError::NotJson(e.to_string()))?;
    let caller = match value.as_object_mut().and_then(|m| m.remove("as")) {
        None | Some(Value::Null) => Caller::Owner,
        Some(who) => serde_json::from_value::<Principal>(who)
            .ok()
            .filter(|p| access::valid_token_name(&p.name))
            .map(Caller::Token)
            .ok_or_else(|| {
                ProtocolError::BadFields(
                    "as: give {\"name\": TOKEN_NAME, \"role\": \"admin\"|\"user\"|\"viewer\"} \
                     or leave it out"
                        .into(),
                )
            })?,
    };
    Ok(Envelope {
        caller,
        request: request_of(value)?,
    })
}

/// The request a parsed line asks for.
fn request_of(value: Value) -> Result<Request, ProtocolError> {
    let op = match value.get("op") {
        Some(Value::String(op)) => op.clone(),
        Some(other) => return Err(ProtocolError::UnknownOp(other.to_string())),
        None if value.is_object() => return Err(ProtocolError::UnknownOp(String::new())),
        None => return Err(ProtocolError::NotJson("not an object".into())),
    };
    if !OPS.contains(&op.as_str()) {
        return Err(ProtocolError::UnknownOp(op));
    }
    let wire: Wire = serde_json::from_value(value)
        .map_err(|e| ProtocolError::BadFields(format!("{op}: {e}; see docs/console.md")))?;
    Ok(match wire {
        Wire::State => Request::State,
        Wire::Watch => Request::Watch,
        Wire::Cancel => Request::Cancel,
        Wire::Takeover => Request::Takeover,
        Wire::Handback => Request::Handback,
        Wire::View => Request::View,
        Wire::Answer { id, approve, text } => {
            let value =
                match (approve, text) {
                    (Some(a), None) => AnswerValue::Approve(a),
                    (None, Some(t)) => AnswerValue::Text(t),
                    _ => return Err(ProtocolError::BadFields(
                        "answer: give \"approve\": true|false for a confirm, or \"text\" for a \
                         question (one of them)"
                            .into(),
                    )),
                };
            Request::Answer { id, value }
        }
        Wire::Input { click, keys, text } => match (click, keys, text) {
            (Some(c), None, None) => {
                if !(1..=3).contains(&c.button) {
                    return Err(ProtocolError::BadFields(format!(
                        "input: button {} is not 1 (left), 2 (middle) or 3 (right)",
                        c.button
                    )));
                }
                Request::Input(Input::Click(c))
            }
            (None, Some(k), None) => Request::Input(Input::Keys(k)),
            (None, None, Some(t)) => Request::Input(Input::Text(t)),
            _ => {
                return Err(ProtocolError::BadFields(
                    "input: give exactly one of \"click\": {\"x\":X,\"y\":Y,\"button\":1}, \
                     \"keys\" or \"text\""
                        .into(),
                ))
            }
        },
    })
}

/// The open question.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Ask {
    /// Its number in the session, from 1.
    pub id: u64,
    /// `confirm` or `pending`.
    pub kind: AskKind,
    /// The agent asking.
    pub agent: String,
    /// The held action as the terminal shows it, or the question.
    pub text: String,
}

/// What kind of question is open.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum AskKind {
    /// Approve or reject a held action.
    Confirm,
    /// Answer a question in words.
    Pending,
}

impl AskKind {
    /// Its name on the wire and in the records.
    pub fn as_str(self) -> &'static str {
        match self {
            AskKind::Confirm => "confirm",
            AskKind::Pending => "pending",
        }
    }
}

/// A failed request's response line.
pub fn error_line(message: &str) -> String {
    serde_json::json!({"ok": false, "error": message}).to_string()
}

/// A successful request's response line with no data.
pub fn ok_line() -> String {
    serde_json::json!({"ok": true}).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn parse_request(line: &[u8]) -> Result<Request, ProtocolError> {
        parse_envelope(line).map(|e| e.request)
    }

    #[test]
    fn every_op_of_the_protocol_parses() {
        let cases = [
            (r#"{"op":"state"}"#, Request::State),
            // tolerant: fields a later client adds are ignored
            (r#"{"op":"state","client":"page"}"#, Request::State),
            (r#" {"op":"watch"}\r"#, Request::Watch),
            (
                r#"{"op":"answer","id":3,"approve":true}"#,
                Request::Answer {
                    id: 3,
                    value: AnswerValue::Approve(true),
                },
            ),
            (
                r#"{"op":"answer","id":1,"text":"a.pdf"}"#,
                Request::Answer {
                    id: 1,
                    value: AnswerValue::Text("a.pdf".into()),
                },
            ),
            (r#"{"op":"cancel"}"#, Request::Cancel),
            (r#"{"op":"takeover"}"#, Request::Takeover),
            (r#"{"op":"handback"}"#, Request::Handback),
            (r#"{"op":"view"}"#, Request::View),
            (
                r#"{"op":"input","click":{"x":5,"y":6,"button":3}}"#,
                Request::Input(Input::Click(Click {
                    x: 5,
                    y: 6,
                    button: 3,
                })),
            ),
            (
                r#"{"op":"input","click":{"x":5,"y":6}}"#,
                Request::Input(Input::Click(Click {
                    x: 5,
                    y: 6,
                    button: 1,
                })),
            ),
            (
                r#"{"op":"input","keys":"{ctrl+a}"}"#,
                Request::Input(Input::Keys("{ctrl+a}".into())),
            ),
            (
                r#"{"op":"input","text":"abc"}"#,
                Request::Input(Input::Text("abc".into())),
            ),
        ];
        for (line, want) in cases {
            let line = line.replace("\\r", "\r");
            assert_eq!(parse_request(line.as_bytes()), Ok(want), "{line}");
        }
    }

    #[test]
    fn bad_requests_say_what_was_wrong() {
        let cases = [
            ("", "not a JSON object"),
            ("[1]", "not a JSON object"),
            (r#"{"op":"fly"}"#, "unknown op \"fly\""),
            (r#"{"id":1}"#, "unknown op"),
            (r#"{"op":7}"#, "unknown op"),
            (r#"{"op":"answer","id":1}"#, "approve"),
            (
                r#"{"op":"answer","id":1,"approve":true,"text":"x"}"#,
                "one of them",
            ),
            (r#"{"op":"answer","approve":true}"#, "id"),
            (r#"{"op":"answer","id":-1,"approve":true}"#, "answer:"),
            (r#"{"op":"input"}"#, "exactly one"),
            (r#"{"op":"input","keys":"a","text":"b"}"#, "exactly one"),
            (
                r#"{"op":"input","click":{"x":1,"y":2,"button":9}}"#,
                "button 9",
            ),
        ];
        for (line, want) in cases {
            let err = parse_request(line.as_bytes()).expect_err(line).to_string();
            assert!(err.contains(want), "{line}: {err}");
        }
        assert_eq!(
            parse_request(&vec![b' '; MAX_REQUEST + 1]),
            Err(ProtocolError::TooLong)
        );
        assert_eq!(parse_request(&[0xff, 0xfe]), Err(ProtocolError::NotText));
    }

    #[test]
    fn a_request_says_who_sends_it_or_is_the_owners() {
        let own = parse_envelope(br#"{"op":"cancel"}"#).expect("parses");
        assert_eq!(own.caller, Caller::Owner);
        assert_eq!(own.request, Request::Cancel);
        let bob = parse_envelope(
            br#"{"op":"answer","id":1,"approve":true,"as":{"name":"bob","role":"viewer"}}"#,
        )
        .expect("parses");
        assert_eq!(
            bob.caller,
            Caller::Token(Principal {
                name: "bob".into(),
                role: ufo_core::access::Role::Viewer
            })
        );
        assert_eq!(bob.request.op(), SessionOp::Answer);
        for bad in [
            r#"{"op":"cancel","as":"bob"}"#,
            r#"{"op":"cancel","as":{"name":"bob"}}"#,
            r#"{"op":"cancel","as":{"name":"bob","role":"root"}}"#,
            r#"{"op":"cancel","as":{"name":"","role":"user"}}"#,
            r#"{"op":"cancel","as":{"name":"a b","role":"user"}}"#,
        ] {
            let e = parse_envelope(bad.as_bytes()).expect_err(bad);
            assert!(e.to_string().contains("as:"), "{bad}: {e}");
        }
        assert_eq!(
            parse_request(br#"{"op":"view","as":{"name":"a","role":"user"}}"#),
            Ok(Request::View)
        );
    }

    #[test]
    fn the_state_pieces_serialise_as_the_protocol_says() {
        let ask = Ask {
            id: 2,
            kind: AskKind::Confirm,
            agent: "AppAgent/Writer".into(),
            text: "click".into(),
        };
        assert_eq!(
            serde_json::to_value(&ask).ok(),
            Some(
                serde_json::json!({"id":2,"kind":"confirm","agent":"AppAgent/Writer","text":"click"})
            )
        );
        assert_eq!(ok_line(), r#"{"ok":true}"#);
        assert!(error_line("no").contains(r#""ok":false"#));
    }

    proptest! {
        /// Any bytes: a request or an error that says what to do, never a panic.
        #[test]
        fn any_bytes_parse_or_fail_clearly(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            if let Err(e) = parse_request(&bytes) {
                prop_assert!(!e.to_string().is_empty());
            }
        }

        /// Any JSON object with an op of the protocol: a request or a clear error.
        #[test]
        fn any_object_with_a_known_op_parses_or_fails_clearly(
            op in proptest::sample::select(OPS.to_vec()),
            id in any::<i64>(),
            approve in proptest::option::of(any::<bool>()),
            text in proptest::option::of(".{0,20}"),
            x in any::<i32>(),
            button in any::<u8>(),
        ) {
            let mut v = serde_json::json!({"op": op});
            if op == "answer" { v["id"] = id.into(); }
            if let Some(a) = approve { v["approve"] = a.into(); }
            if let Some(t) = &text { v["text"] = t.clone().into(); }
            if op == "input" && approve.is_some() {
                v = serde_json::json!({"op": op, "click": {"x": x, "y": x, "button": button}});
            }
            match parse_request(v.to_string().as_bytes()) {
                Ok(_) => {}
                Err(e) => prop_assert!(!e.to_string().is_empty()),
            }
        }
    }
}
