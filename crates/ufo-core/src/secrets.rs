//! Which environment variables are secrets that no process ufo starts may inherit, the
//! in-memory store that holds them, and the [`Redactor`] that hides their values.
//!
//! ufo takes model-provider keys from its environment. Every child (shell agent commands,
//! the host's `Bash`, batch config steps and getters, launched applications, MCP stdio
//! servers) starts with these variables removed, so a prompt-injected command such as
//! `echo $OPENAI_API_KEY` has nothing to print. An MCP server that needs a key gets it only
//! when its `[mcp.servers.<name>] env` passes it explicitly.
//!
//! Removing a variable is not enough: `/proc/<pid>/environ` shows the environment a process
//! was *started* with, and any child can read its parent's (`cat /proc/$PPID/environ`). So the
//! binary re-executes itself at start without the secrets in its environment, handing them
//! over through an inherited memory file; the new process keeps them here, in memory only
//! ([`hold`], [`held`]), and model backends read them through [`held`] before the
//! environment. Known secret values are also hidden (`***`) from everything ufo records, shows
//! or sends to a model ([`Redactor`]), in case one reaches it another way (a file that holds it).
//!
//! The rule ([`is_secret_env`]), on the variable's name, ASCII case-insensitive:
//! - ufo's own model settings: any `UFO_*` name containing `LLM` (`UFO_LLM`, `UFO_LLM_API_KEY`,
//!   `UFO_LLM_BASE_URL`, `UFO_LLM_HEADERS`, ...);
//! - the providers ufo talks to: any name starting with `OPENAI_`, `ANTHROPIC_` or
//!   `AZURE_OPENAI_` (keys, and endpoints that may carry credentials);
//! - credentials by suffix: names ending with one of [`SECRET_SUFFIXES`] (`_API_KEY`,
//!   `_ACCESS_TOKEN`, `_SECRET_ACCESS_KEY`, `_PASSWORD`, `_PASSWD`, `_PASSPHRASE`, `_SECRET`,
//!   `_PRIVATE_KEY`, `_CREDENTIALS`, `_DSN`, `_DATABASE_URL`, ...);
//! - well-known credential names without such a suffix ([`SECRET_NAMES`]: `UFO_REMOTE_TOKEN`
//!   (a served desktop's token), `HF_TOKEN`,
//!   `PGPASSWORD`, `MYSQL_PWD`, `DATABASE_URL`, `PASSWORD`, ...).
//!
//! A bare `_TOKEN` suffix is not enough: desktop variables such as `XDG_ACTIVATION_TOKEN` are
//! what launched applications need. `_DSN` and `*DATABASE_URL` are there because a data
//! source name carries the password in its userinfo (`postgres://user:pass@host/db`), as
//! Sentry's `SENTRY_DSN` carries its key; `_CREDENTIALS` names either a credential or the
//! file that holds one (`GOOGLE_APPLICATION_CREDENTIALS`), and a command that truly needs
//! it can be given it by the person, not inherited from ufo.
//!
//! Which values are hidden in text ([`is_redacted_env`]): those of secret variables except
//! ufo's model *settings* that are not credentials (`UFO_LLM` — the model spec —,
//! `UFO_LLM_TIMEOUT_SECS`, `UFO_LLM_MAX_ATTEMPTS`, `UFO_LLM_IMAGE_DETAIL`) and endpoints
//! (`*_BASE_URL`, `*_ENDPOINT`, shown through [`crate::redact::redact_url`] instead), and
//! only values of at least [`MIN_REDACTED_LEN`] characters: a shorter value is no key, and
//! hiding it would blot out ordinary text. `UFO_LLM_HEADERS` hides each header value (and
//! its last word, the token after `Bearer`).
//!
//! Secrets that are not variables are hidden too: a served desktop's token read from its
//! `--token-file` or a `[devices]` `token_file` is registered with [`hold_value`] the moment
//! it is read, so a server that echoes it back (in a window title, a control, an error) never
//! gets it into a prompt, a trajectory, a log or a line ufo prints (docs/security.md). Such a
//! value is only hidden: it is never handed to a worker as a variable ([`held_vars`]), since
//! a worker reads its token file itself.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, RwLock};

/// Name endings that mark a credential.
pub const SECRET_SUFFIXES: &[&str] = &[
    "_API_KEY",
    "_APIKEY",
    "_API_TOKEN",
    "_AUTH_TOKEN",
    "_ACCESS_TOKEN",
    "_SESSION_TOKEN",
    "_SECRET_KEY",
    "_SECRET_ACCESS_KEY",
    "_CLIENT_SECRET",
    "_SECRET",
    "_PRIVATE_KEY",
    "_PASSWORD",
    "_PASSWD",
    "_PASSPHRASE",
    "_CREDENTIALS",
    "_DSN",
    "_DATABASE_URL",
];

/// Name beginnings of the model providers ufo talks to.
pub const SECRET_PREFIXES: &[&str] = &["OPENAI_", "ANTHROPIC_", "AZURE_OPENAI_"];

/// Well-known token variables without a credential suffix.
pub const SECRET_NAMES: &[&str] = &[
    // the token of a desktop served by `ufo serve`
    "UFO_REMOTE_TOKEN",
    "HF_TOKEN",
    "HUGGING_FACE_HUB_TOKEN",
    "GITHUB_TOKEN",
    "GH_TOKEN",
    "PGPASSWORD",
    "MYSQL_PWD",
    "DATABASE_URL",
    "PASSWORD",
    "PASSWD",
];

/// Whether the environment variable `name` is a secret children must not inherit.
pub fn is_secret_env(name: &str) -> bool {
    let n = name.to_ascii_uppercase();
    (n.starts_with("UFO_") && n.contains("LLM"))
        || SECRET_PREFIXES.iter().any(|p| n.starts_with(p))
        || SECRET_SUFFIXES.iter().any(|s| n.ends_with(s))
        || SECRET_NAMES.contains(&n.as_str())
}

/// The secret names among `names` (e.g. the names of the current environment), in order.
pub fn secret_names<I, S>(names: I) -> Vec<String>
where
    I: IntoIterator<Item = S>,
    S: AsRef<str>,
{
    names
        .into_iter()
        .filter(|n| is_secret_env(n.as_ref()))
        .map(|n| n.as_ref().to_string())
        .collect()
}

/// Shortest secret value that [`Redactor`] hides.
pub const MIN_REDACTED_LEN: usize = 8;

/// The text that replaces a hidden value.
pub const HIDDEN: &str = "***";

/// Secret variables that are settings, not credentials: their values are not hidden in text.
const SHOWN_SETTINGS: &[&str] = &[
    "UFO_LLM",
    "UFO_LLM_TIMEOUT_SECS",
    "UFO_LLM_MAX_ATTEMPTS",
    "UFO_LLM_IMAGE_DETAIL",
];

/// Whether the value of the secret variable `name` is hidden from text ufo records, shows or
/// sends (see the module doc).
pub fn is_redacted_env(name: &str) -> bool {
    let n = name.to_ascii_uppercase();
    is_secret_env(&n)
        && !SHOWN_SETTINGS.contains(&n.as_str())
        && !n.ends_with("_BASE_URL")
        && !n.ends_with("_ENDPOINT")
}

/// Replaces known secret values in text by [`HIDDEN`]. Build it from the secret variables
/// ([`Redactor::from_vars`]); the binary's process-wide one is [`redactor`].
#[derive(Clone, Default)]
pub struct Redactor {
    /// Values to hide, longest first (so a value that contains another is hidden whole).
    values: Vec<String>,
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Redactor({} values)", self.values.len())
    }
}

impl Redactor {
    /// A redactor for the values of the variables among `vars` that [`is_redacted_env`]
    /// names (header values of `UFO_LLM_HEADERS` one by one), at least
    /// [`MIN_REDACTED_LEN`] characters long.
    pub fn from_vars<'a>(vars: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        let mut values = Vec::new();
        for (name, value) in vars {
            if !is_redacted_env(name) {
                continue;
            }
            values.push(value.trim().to_string());
            if name.eq_ignore_ascii_case("UFO_LLM_HEADERS") {
                values.extend(header_values(value));
            }
        }
        Self::from_values(values)
    }

    /// A redactor for exactly these values (those shorter than [`MIN_REDACTED_LEN`] left out).
    pub fn from_values(values: impl IntoIterator<Item = String>) -> Self {
        let mut values: Vec<String> = values
            .into_iter()
            .filter(|v| v.chars().count() >= MIN_REDACTED_LEN)
            .collect();
        values.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        values.dedup();
        Self { values }
    }

    /// This redactor hiding `more` values too (those shorter than [`MIN_REDACTED_LEN`] left
    /// out).
    pub fn with_values(self, more: impl IntoIterator<Item = String>) -> Self {
        Self::from_values(self.values.into_iter().chain(more))
    }

    /// Whether it hides nothing.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// `text` with every known secret value replaced by [`HIDDEN`] (borrowed when none occurs).
    pub fn redact<'t>(&self, text: &'t str) -> std::borrow::Cow<'t, str> {
        if !self.values.iter().any(|v| text.contains(v.as_str())) {
            return std::borrow::Cow::Borrowed(text);
        }
        let mut out = text.to_string();
        for v in &self.values {
            if out.contains(v.as_str()) {
                out = out.replace(v.as_str(), HIDDEN);
            }
        }
        std::borrow::Cow::Owned(out)
    }

    /// [`Redactor::redact`] on bytes that need not be UTF-8 (a command's raw output).
    pub fn redact_bytes(&self, bytes: &[u8]) -> Option<Vec<u8>> {
        if self.values.is_empty() {
            return None;
        }
        // text, nearly always (every line the console writes): the string search is several
        // times faster than the walk below, and finds the same matches
        if let Ok(text) = std::str::from_utf8(bytes) {
            return match self.redact(text) {
                std::borrow::Cow::Owned(hidden) => Some(hidden.into_bytes()),
                std::borrow::Cow::Borrowed(_) => None,
            };
        }
        let mut out: Option<Vec<u8>> = None;
        for v in &self.values {
            let cur = out.as_deref().unwrap_or(bytes);
            if let Some(next) = replace_bytes(cur, v.as_bytes(), HIDDEN.as_bytes()) {
                out = Some(next);
            }
        }
        out
    }

    /// Every string inside a JSON value redacted in place (keys left alone).
    pub fn redact_json(&self, value: &mut serde_json::Value) {
        if self.is_empty() {
            return;
        }
        match value {
            serde_json::Value::String(s) => {
                if let std::borrow::Cow::Owned(r) = self.redact(s) {
                    *s = r;
                }
            }
            serde_json::Value::Array(items) => items.iter_mut().for_each(|v| self.redact_json(v)),
            serde_json::Value::Object(map) => map.values_mut().for_each(|v| self.redact_json(v)),
            _ => {}
        }
    }
}

/// `haystack` with each `needle` replaced by `with`; `None` when there is none.
fn replace_bytes(haystack: &[u8], needle: &[u8], with: &[u8]) -> Option<Vec<u8>> {
    if needle.is_empty() || haystack.len() < needle.len() {
        return None;
    }
    // the usual case, no secret in the text, costs a search and no copy (it runs on every
    // line the console writes)
    let first = haystack.windows(needle.len()).position(|w| w == needle)?;
    let mut out = Vec::with_capacity(haystack.len());
    out.extend_from_slice(&haystack[..first]);
    let mut i = first;
    while i < haystack.len() {
        if haystack[i..].starts_with(needle) {
            out.extend_from_slice(with);
            i += needle.len();
        } else {
            out.push(haystack[i]);
            i += 1;
        }
    }
    Some(out)
}

/// The values of a `UFO_LLM_HEADERS` text (`Name: value; Name2=value2`), and the last word of
/// each (the token of `Bearer <token>`).
fn header_values(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for item in text.split(['\n', ';']) {
        let Some((_, value)) = item.split_once(':').or_else(|| item.split_once('=')) else {
            continue;
        };
        let value = value.trim();
        out.push(value.to_string());
        if let Some(last) = value.split_whitespace().last() {
            out.push(last.to_string());
        }
    }
    out
}

/// The secret variables this process holds in memory (taken from its environment at start).
static HELD: RwLock<BTreeMap<String, String>> = RwLock::new(BTreeMap::new());

/// Secret values this process read at run time that are not variables ([`hold_value`]).
static HELD_VALUES: RwLock<BTreeSet<String>> = RwLock::new(BTreeSet::new());

/// The redactor for [`HELD`] and [`HELD_VALUES`], rebuilt by [`hold`] and [`hold_value`].
static REDACTOR: RwLock<Option<Arc<Redactor>>> = RwLock::new(None);

/// Keep secret variables in this process's memory (in addition to any held already), for
/// [`held`] and [`redactor`]. Called once at start by the binary; tests may call it again.
pub fn hold(vars: impl IntoIterator<Item = (String, String)>) {
    HELD.write().unwrap_or_else(|p| p.into_inner()).extend(vars);
    rebuild_redactor();
}

/// Hide `value` (trimmed) from now on, as a held variable's value is hidden: a secret this
/// process read that is not a variable, such as a served desktop's token from its file.
/// Holding the same value again changes nothing (the redactor is rebuilt only for a new one),
/// so the store grows only by the distinct secrets read.
pub fn hold_value(value: &str) {
    let value = value.trim();
    if value.is_empty() {
        return;
    }
    let added = HELD_VALUES
        .write()
        .unwrap_or_else(|p| p.into_inner())
        .insert(value.to_string());
    if added {
        rebuild_redactor();
    }
}

/// Make [`redactor`] hide every held variable's value and every held value.
fn rebuild_redactor() {
    // the redactor's lock first: two rebuilds at once cannot leave the older one in place
    let mut current = REDACTOR.write().unwrap_or_else(|p| p.into_inner());
    let held = HELD.read().unwrap_or_else(|p| p.into_inner());
    let values = HELD_VALUES.read().unwrap_or_else(|p| p.into_inner());
    let mut redactor = Redactor::from_vars(held.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    if !values.is_empty() {
        redactor = redactor.with_values(values.iter().cloned());
    }
    *current = Some(Arc::new(redactor));
}

/// The value of a held secret variable (exact name), if this process holds it.
pub fn held(name: &str) -> Option<String> {
    HELD.read()
        .unwrap_or_else(|p| p.into_inner())
        .get(name)
        .cloned()
}

/// Every held secret variable, by name (to hand them to a worker process).
pub fn held_vars() -> Vec<(String, String)> {
    HELD.read()
        .unwrap_or_else(|p| p.into_inner())
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// The process-wide redactor of the held secrets' values (empty until [`hold`]).
pub fn redactor() -> Arc<Redactor> {
    REDACTOR
        .read()
        .unwrap_or_else(|p| p.into_inner())
        .clone()
        .unwrap_or_default()
}

/// [`redactor`]`().redact(text)`, owned.
pub fn redact(text: &str) -> String {
    redactor().redact(text).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provider_keys_and_ufo_model_settings_are_secrets() {
        for n in [
            "OPENAI_API_KEY",
            "ANTHROPIC_API_KEY",
            "AZURE_OPENAI_API_KEY",
            "AZURE_OPENAI_ENDPOINT",
            "OPENAI_BASE_URL",
            "UFO_LLM",
            "UFO_LLM_API_KEY",
            "UFO_LLM_BASE_URL",
            "UFO_LLM_HEADERS",
            "ufo_llm_api_key",
            "UFO_REMOTE_TOKEN",
            "GROQ_API_KEY",
            "MISTRAL_APIKEY",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_SESSION_TOKEN",
            "SLACK_AUTH_TOKEN",
            "HF_TOKEN",
            "GITHUB_TOKEN",
            "PGPASSWORD",
            "DATABASE_URL",
            "MYSQL_PWD",
            "POSTGRES_PASSWORD",
            "SMTP_PASSWD",
            "SSH_KEY_PASSPHRASE",
            "JWT_SECRET",
            "DEPLOY_PRIVATE_KEY",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "SENTRY_DSN",
            "TEST_DATABASE_URL",
        ] {
            assert!(is_secret_env(n), "{n} should be a secret");
        }
    }

    #[test]
    fn ordinary_and_desktop_variables_pass() {
        for n in [
            "PATH",
            "HOME",
            "DISPLAY",
            "DBUS_SESSION_BUS_ADDRESS",
            "XDG_ACTIVATION_TOKEN",
            "UFO_MAX_STEPS",
            "UFO_LOG",
            "LANG",
            "API_KEYBOARD_LAYOUT",
            "SSH_ASKPASS",
            "PGPASSFILE",
            "PASSWORD_STORE_DIR",
            "XDG_SESSION_TYPE",
        ] {
            assert!(!is_secret_env(n), "{n} should pass");
        }
        assert_eq!(
            secret_names(["PATH", "OPENAI_API_KEY", "HOME", "UFO_LLM_TIMEOUT_SECS"]),
            ["OPENAI_API_KEY", "UFO_LLM_TIMEOUT_SECS"]
        );
    }

    #[test]
    fn redactor_hides_credential_values_not_settings_or_short_values() {
        let r = Redactor::from_vars([
            ("OPENAI_API_KEY", "sk-abcdef123456"),
            ("PGPASSWORD", "hunter2hunter2"),
            ("UFO_LLM", "script:/tmp/script.jsonl"),
            ("UFO_LLM_TIMEOUT_SECS", "30000000"),
            ("UFO_LLM_BASE_URL", "http://localhost:8080/v1"),
            ("SHORT_API_KEY", "abc"),
            (
                "UFO_LLM_HEADERS",
                "Authorization: Bearer tok-9876543210; X-Org = org-long-id",
            ),
            ("PATH", "/usr/local/bin:/usr/bin"),
        ]);
        let text = "key sk-abcdef123456 pw=hunter2hunter2 spec script:/tmp/script.jsonl \
                    30000000 http://localhost:8080/v1 abc tok-9876543210 org-long-id /usr/local/bin:/usr/bin";
        assert_eq!(
            r.redact(text),
            "key *** pw=*** spec script:/tmp/script.jsonl 30000000 http://localhost:8080/v1 abc \
             *** *** /usr/local/bin:/usr/bin"
        );
        assert!(matches!(
            r.redact("nothing here"),
            std::borrow::Cow::Borrowed(_)
        ));
        assert_eq!(
            r.redact_bytes(b"\xffsk-abcdef123456\xfe").as_deref(),
            Some(&b"\xff***\xfe"[..])
        );
        assert_eq!(r.redact_bytes(b"clean"), None);
        let mut v = serde_json::json!({"a": ["x sk-abcdef123456 y", 1], "sk-abcdef123456": null});
        r.redact_json(&mut v);
        assert_eq!(
            v,
            serde_json::json!({"a": ["x *** y", 1], "sk-abcdef123456": null})
        );
    }

    #[test]
    fn a_value_inside_another_is_hidden_whole() {
        let r = Redactor::from_values(["secret-value".to_string(), "secret-value-longer".into()]);
        assert_eq!(
            r.redact("[secret-value-longer] [secret-value]"),
            "[***] [***]"
        );
        assert!(Redactor::default().is_empty());
    }

    #[test]
    fn a_value_read_at_run_time_is_hidden_but_never_handed_on_as_a_variable() {
        let token = "ufo_hold-value-probe-7c1e9a";
        assert_eq!(redact(&format!("echo {token}")), format!("echo {token}"));
        hold_value(&format!("  {token}\n"));
        assert_eq!(
            redact(&format!("title {token} - Notes")),
            "title *** - Notes"
        );
        assert!(redactor().redact_bytes(token.as_bytes()).is_some());
        // a worker reads its token file itself: no variable carries the value
        assert!(!held_vars().iter().any(|(_, v)| v.contains(token)));
        // holding it again, or a blank or short value, changes nothing
        let before = redactor();
        hold_value(token);
        hold_value("   ");
        assert!(Arc::ptr_eq(&before, &redactor()));
        hold_value("short");
        assert_eq!(redact("a short word"), "a short word");
        // variables held later keep the value hidden
        hold(vec![(
            "HOLD_VALUE_PROBE_API_KEY".into(),
            "sk-hold-probe-1234".into(),
        )]);
        assert_eq!(redact(&format!("{token} sk-hold-probe-1234")), "*** ***");
    }

    #[test]
    fn with_values_adds_to_what_is_hidden() {
        let r = Redactor::from_vars([("OPENAI_API_KEY", "sk-abcdef123456")])
            .with_values(["served-token-0123".to_string(), "tiny".into()]);
        assert_eq!(
            r.redact("sk-abcdef123456 served-token-0123 tiny"),
            "*** *** tiny"
        );
    }

    proptest::proptest! {
        /// No secret survives redaction, whatever text surrounds it.
        #[test]
        fn no_secret_value_survives(before in ".{0,40}", after in ".{0,40}", key in "[A-Za-z0-9_-]{8,40}") {
            let r = Redactor::from_values([key.clone()]);
            let text = format!("{before}{key}{after}{key}");
            let out = r.redact(&text);
            proptest::prop_assert!(!out.contains(&key));
            let bytes = r.redact_bytes(text.as_bytes()).unwrap_or_else(|| text.clone().into_bytes());
            proptest::prop_assert!(!String::from_utf8_lossy(&bytes).contains(&key));
            proptest::prop_assert_eq!(bytes, out.as_bytes());
            // the byte walk (text that is not UTF-8) hides it too
            let mut raw = text.clone().into_bytes();
            raw.push(0xff);
            let walked = r.redact_bytes(&raw).unwrap_or(raw);
            proptest::prop_assert!(!String::from_utf8_lossy(&walked).contains(&key));
        }
    }
}
