//! Settings shared by the HTTP providers: where environment variables come from, API keys
//! that never print, image detail, extra headers, sampling limits, and the values of the
//! retry policy ([`RetryPolicy`]; [`crate::retry`] applies them).

use std::collections::hash_map::RandomState;
use std::collections::HashMap;
use std::fmt;
use std::hash::{BuildHasher, Hasher};
use std::time::Duration;

use ufo_core::ports::LlmError;

/// A provider that cannot be set up as configured; the message says what to fix.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The provider's base URL or endpoint is empty.
    #[error("the {what} is empty; {fix}")]
    EmptyUrl {
        /// Which URL (`base URL`, `Azure endpoint`, ...).
        what: &'static str,
        /// How to set it.
        fix: String,
    },
    /// A configured extra header has a name HTTP does not allow.
    #[error("extra header name {name:?} is not a valid HTTP header name; check the extra headers (UFO_LLM_HEADERS)")]
    HeaderName {
        /// The name as configured.
        name: String,
        /// Why HTTP refuses it.
        #[source]
        source: reqwest::header::InvalidHeaderName,
    },
    /// A configured extra header has a value HTTP does not allow.
    #[error(
        "extra header {name:?} has a value that is not valid in HTTP; check the extra headers (UFO_LLM_HEADERS): \
         (no line breaks or control characters)"
    )]
    HeaderValue {
        /// The header's name (the value is not shown: it may be a secret).
        name: String,
        /// Why HTTP refuses it.
        #[source]
        source: reqwest::header::InvalidHeaderValue,
    },
    /// The API key cannot be sent in an HTTP header.
    #[error("the API key contains characters not allowed in an HTTP header; check {hint}")]
    KeyValue {
        /// The variables that hold the key.
        hint: String,
        /// Why HTTP refuses it.
        #[source]
        source: reqwest::header::InvalidHeaderValue,
    },
    /// The HTTP client could not be built (e.g. the system's TLS set-up is unusable).
    #[error("cannot set up the HTTP client: {0}; check the system's TLS certificates")]
    Client(#[source] reqwest::Error),
}

/// Where environment variables are read from: the process environment (the default) or a
/// fixed map (tests, or a caller that resolved them itself).
///
/// Its `Debug` output lists variable names only, never values (they hold API keys).
#[derive(Clone, Default)]
pub struct Env {
    vars: Option<HashMap<String, String>>,
}

impl Env {
    /// Read the process environment (secrets the process holds in memory first:
    /// [`ufo_core::secrets::held`]).
    pub fn process() -> Self {
        Self { vars: None }
    }

    /// A fixed set of variables; the process environment is not consulted.
    pub fn from_pairs<K, V>(pairs: impl IntoIterator<Item = (K, V)>) -> Self
    where
        K: Into<String>,
        V: Into<String>,
    {
        Self {
            vars: Some(
                pairs
                    .into_iter()
                    .map(|(k, v)| (k.into(), v.into()))
                    .collect(),
            ),
        }
    }

    /// The value of `name`, if set and not blank (surrounding whitespace trimmed).
    pub fn get(&self, name: &str) -> Option<String> {
        let value = match &self.vars {
            Some(map) => map.get(name).cloned(),
            // the binary holds the secrets in memory, out of its environment
            None => ufo_core::secrets::held(name).or_else(|| std::env::var(name).ok()),
        }?;
        let value = value.trim();
        (!value.is_empty()).then(|| value.to_string())
    }

    /// The first of `names` that is set, with its name.
    pub fn first(&self, names: &[&'static str]) -> Option<(&'static str, String)> {
        names
            .iter()
            .find_map(|name| self.get(name).map(|value| (*name, value)))
    }
}

impl fmt::Debug for Env {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.vars {
            None => f.write_str("Env(process)"),
            Some(map) => {
                let mut names: Vec<&String> = map.keys().collect();
                names.sort();
                f.debug_tuple("Env").field(&names).finish()
            }
        }
    }
}

/// An API key. It is sent in a header and nowhere else: `Debug` prints `ApiKey(***)` and it
/// has no `Display`.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wrap a key.
    pub fn new(key: impl Into<String>) -> Self {
        Self(key.into())
    }

    /// The secret itself, for the request header.
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(***)")
    }
}

/// Secret values (the API key, extra header values) that must never appear in an error
/// message or a log line; [`Secrets::scrub`] replaces them with `***`.
#[derive(Clone, Default)]
pub(crate) struct Secrets(Vec<String>);

impl Secrets {
    /// The key and the values of the extra headers (those long enough to be secrets).
    pub(crate) fn collect(key: Option<&ApiKey>, settings: &HttpSettings) -> Self {
        let mut values: Vec<String> = key.map(|k| k.0.clone()).into_iter().collect();
        values.extend(
            settings
                .extra_headers
                .iter()
                .map(|(_, v)| v.trim().to_string())
                .filter(|v| v.len() >= 8),
        );
        // Also a bearer value's token alone.
        let tokens: Vec<String> = values
            .iter()
            .filter_map(|v| v.strip_prefix("Bearer ").map(str::to_string))
            .collect();
        values.extend(tokens);
        values.retain(|v| !v.is_empty());
        // Longest first, so a value containing another is replaced whole.
        values.sort_by_key(|v| std::cmp::Reverse(v.len()));
        Self(values)
    }

    /// Also hide the credentials `url` carries (userinfo, query values), however quoted.
    pub(crate) fn with_url(mut self, url: &str) -> Self {
        self.0.extend(ufo_core::redact::url_secrets(url));
        self.0.sort();
        self.0.dedup();
        self.0.sort_by_key(|v| std::cmp::Reverse(v.len()));
        self
    }

    /// `text` with every secret replaced by `***`.
    pub(crate) fn scrub(&self, text: &str) -> String {
        let mut out = text.to_string();
        for secret in &self.0 {
            if out.contains(secret.as_str()) {
                out = out.replace(secret.as_str(), "***");
            }
        }
        out
    }

    /// The error with secrets scrubbed from its message.
    pub(crate) fn scrub_error(&self, error: LlmError) -> LlmError {
        match error {
            LlmError::Fatal(m) => LlmError::Fatal(self.scrub(&m)),
            LlmError::Unavailable(m) => LlmError::Unavailable(self.scrub(&m)),
        }
    }
}

impl fmt::Debug for Secrets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Secrets({} hidden)", self.0.len())
    }
}

/// How closely an OpenAI-style model looks at an image (`image_url.detail`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ImageDetail {
    /// Let the provider decide.
    Auto,
    /// 512×512 preview: cheap, blurry labels.
    Low,
    /// Full resolution tiles: needed to read small control labels (the default).
    #[default]
    High,
}

impl ImageDetail {
    /// The wire value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Low => "low",
            Self::High => "high",
        }
    }

    /// Parse `auto`, `low` or `high` (any case).
    pub fn parse(text: &str) -> Option<Self> {
        match text.trim().to_ascii_lowercase().as_str() {
            "auto" => Some(Self::Auto),
            "low" => Some(Self::Low),
            "high" => Some(Self::High),
            _ => None,
        }
    }
}

/// Timeouts, attempts and backoff of an HTTP provider (the policy they serve is stated in
/// [`crate::retry`]).
#[derive(Debug, Clone, PartialEq)]
pub struct RetryPolicy {
    /// Total attempts per call, the first included (at least 1). Default 4.
    pub max_attempts: u32,
    /// Backoff before the first retry; doubles on each further retry. Default 500 ms.
    pub base_delay: Duration,
    /// Upper bound of the computed backoff. Default 20 s.
    pub max_delay: Duration,
    /// Upper bound of a wait asked by the server (`Retry-After`). Default 60 s.
    pub max_retry_after: Duration,
    /// Time allowed to open the connection. Default 10 s.
    pub connect_timeout: Duration,
    /// Time allowed between two reads of the response. Default 120 s.
    pub read_timeout: Duration,
    /// Time allowed for a whole attempt (send and read). Default 300 s.
    pub request_timeout: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 4,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(20),
            max_retry_after: Duration::from_secs(60),
            connect_timeout: Duration::from_secs(10),
            read_timeout: Duration::from_secs(120),
            request_timeout: Duration::from_secs(300),
        }
    }
}

impl RetryPolicy {
    /// The backoff before retry number `retry` (1-based), jitter included.
    pub fn backoff(&self, retry: u32) -> Duration {
        let exp = retry.saturating_sub(1).min(30);
        let raw = self
            .base_delay
            .saturating_mul(1u32 << exp)
            .min(self.max_delay);
        // Jitter: a factor in [0.5, 1].
        let factor = 0.5 + 0.5 * random_unit();
        raw.mul_f64(factor)
    }
}

/// A random number in [0, 1), from the standard library's randomly keyed hasher.
fn random_unit() -> f64 {
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u64(0x9e37_79b9_7f4a_7c15);
    (hasher.finish() >> 11) as f64 / (1u64 << 53) as f64
}

/// Settings common to every HTTP provider. Its `Debug` output shows header names only.
#[derive(Clone)]
pub struct HttpSettings {
    /// Timeouts, retries and backoff.
    pub retry: RetryPolicy,
    /// Extra request headers (e.g. for a gateway); sent as-is, never logged or recorded.
    pub extra_headers: Vec<(String, String)>,
    /// Image detail for OpenAI-style providers.
    pub image_detail: ImageDetail,
    /// Sampling temperature; `None` leaves the provider's default (some models reject it).
    pub temperature: Option<f64>,
    /// Maximum completion tokens; `None` leaves the provider's default (Anthropic requires a
    /// value and uses [`HttpSettings::ANTHROPIC_DEFAULT_MAX_TOKENS`]).
    pub max_tokens: Option<u32>,
    /// Whether to ask for JSON output (`response_format`) when a request sets `json_mode`.
    /// Turn off for servers that reject `response_format`.
    pub allow_json_mode: bool,
    /// How answers are constrained (`structured_output`; [`crate::learn`]).
    pub structured_output: ufo_core::StructuredOutput,
    /// Streamed answers and their bounds ([`crate::stream`]).
    pub stream: crate::stream::StreamSettings,
}

impl HttpSettings {
    /// `max_tokens` sent to Anthropic when none is configured.
    pub const ANTHROPIC_DEFAULT_MAX_TOKENS: u32 = 4096;
}

impl fmt::Debug for HttpSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.extra_headers.iter().map(|(n, _)| n.as_str()).collect();
        f.debug_struct("HttpSettings")
            .field("retry", &self.retry)
            .field("extra_headers", &names)
            .field("image_detail", &self.image_detail)
            .field("temperature", &self.temperature)
            .field("max_tokens", &self.max_tokens)
            .field("allow_json_mode", &self.allow_json_mode)
            .field("structured_output", &self.structured_output)
            .field("stream", &self.stream)
            .finish()
    }
}

impl Default for HttpSettings {
    fn default() -> Self {
        Self {
            retry: RetryPolicy::default(),
            extra_headers: Vec::new(),
            image_detail: ImageDetail::default(),
            temperature: None,
            max_tokens: None,
            allow_json_mode: true,
            structured_output: ufo_core::StructuredOutput::default(),
            stream: crate::stream::StreamSettings::default(),
        }
    }
}

/// Parse `UFO_LLM_HEADERS`-style text: `Name: value` pairs separated by newlines or `;`.
pub fn parse_headers(text: &str) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    for item in text.split(['\n', ';']) {
        let item = item.trim();
        if item.is_empty() {
            continue;
        }
        let Some((name, value)) = item.split_once(':').or_else(|| item.split_once('=')) else {
            return Err(format!(
                "header {item:?} has no value; write it as \"Name: value\" (pairs separated by ';')"
            ));
        };
        let name = name.trim();
        if name.is_empty() {
            return Err(format!(
                "header {item:?} has no name; write it as \"Name: value\""
            ));
        }
        out.push((name.to_string(), value.trim().to_string()));
    }
    Ok(out)
}

/// `base` (trailing `/` trimmed) with `path` appended before its query string, if any, and
/// `query` added to it: `http://h/v1?key=k` + `/chat/completions` gives
/// `http://h/v1/chat/completions?key=k` (a gateway's key in the base URL keeps working).
pub(crate) fn endpoint_url(base: &str, path: &str, query: Option<&str>) -> String {
    let (base, base_query) = match base.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (base, None),
    };
    let mut url = format!("{}{path}", base.trim_end_matches('/'));
    let queries: Vec<&str> = base_query
        .into_iter()
        .chain(query)
        .filter(|q| !q.is_empty())
        .collect();
    if !queries.is_empty() {
        url.push('?');
        url.push_str(&queries.join("&"));
    }
    url
}

/// Whether a base URL points at this machine (then no proxy is used).
pub(crate) fn is_loopback_url(url: &str) -> bool {
    let rest = url.split_once("://").map(|(_, rest)| rest).unwrap_or(url);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    // Skip a `user:pass@` prefix.
    let host_port = authority.rsplit('@').next().unwrap_or(authority);
    let host = if let Some(v6) = host_port.strip_prefix('[') {
        v6.split(']').next().unwrap_or("")
    } else {
        host_port.split(':').next().unwrap_or("")
    };
    host.eq_ignore_ascii_case("localhost") || host.starts_with("127.") || host == "::1"
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn env_map_trims_and_skips_blank() {
        let env = Env::from_pairs([("A", " x "), ("B", "  ")]);
        assert_eq!(env.get("A").as_deref(), Some("x"));
        assert_eq!(env.get("B"), None);
        assert_eq!(env.get("C"), None);
        assert_eq!(env.first(&["B", "A"]), Some(("A", "x".to_string())));
    }

    #[test]
    fn debug_never_shows_secrets() {
        let env = Env::from_pairs([("OPENAI_API_KEY", "sk-secret")]);
        let text = format!("{env:?} {:?}", ApiKey::new("sk-secret"));
        assert!(!text.contains("sk-secret"), "{text}");
        assert!(text.contains("OPENAI_API_KEY"));
    }

    #[test]
    fn secrets_are_scrubbed() {
        let mut settings = HttpSettings::default();
        settings
            .extra_headers
            .push(("Authorization".into(), "Bearer gw-token-123456".into()));
        settings.extra_headers.push(("X-Small".into(), "1".into()));
        assert!(!format!("{settings:?}").contains("gw-token"));
        let s = Secrets::collect(Some(&ApiKey::new("sk-abcdef")), &settings);
        let text = s.scrub("key sk-abcdef, auth Bearer gw-token-123456, token gw-token-123456, 1");
        assert_eq!(text, "key ***, auth ***, token ***, 1");
        assert!(!format!("{s:?}").contains("sk-"));
    }

    #[test]
    fn headers_parse() {
        let h = parse_headers("X-A: 1; X-B=two\nX-C: a:b").unwrap();
        assert_eq!(
            h,
            vec![
                ("X-A".to_string(), "1".to_string()),
                ("X-B".to_string(), "two".to_string()),
                ("X-C".to_string(), "a:b".to_string()),
            ]
        );
        assert!(parse_headers("nothing").is_err());
        assert!(parse_headers(": v").is_err());
    }

    #[test]
    fn endpoint_urls_keep_the_query_last() {
        assert_eq!(
            endpoint_url("http://h/v1/", "/chat/completions", None),
            "http://h/v1/chat/completions"
        );
        assert_eq!(
            endpoint_url("http://h/v1?key=k", "/chat/completions", None),
            "http://h/v1/chat/completions?key=k"
        );
        assert_eq!(
            endpoint_url("http://h?key=k", "/x", Some("api-version=1")),
            "http://h/x?key=k&api-version=1"
        );
    }

    #[test]
    fn loopback_detection() {
        assert!(is_loopback_url("http://127.0.0.1:8080/v1"));
        assert!(is_loopback_url("http://localhost/v1"));
        assert!(is_loopback_url("http://[::1]:3000"));
        assert!(is_loopback_url("http://user:pw@127.0.0.1:8080/v1?key=k"));
        assert!(!is_loopback_url("http://127.0.0.1@example.com/v1"));
        assert!(!is_loopback_url("https://api.example.com/v1"));
    }

    #[test]
    fn image_detail_parse() {
        assert_eq!(ImageDetail::parse("LOW"), Some(ImageDetail::Low));
        assert_eq!(ImageDetail::parse("x"), None);
        assert_eq!(ImageDetail::default().as_str(), "high");
    }

    #[test]
    fn backoff_doubles_caps_and_jitters() {
        let p = RetryPolicy {
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(350),
            ..RetryPolicy::default()
        };
        for _ in 0..50 {
            let b1 = p.backoff(1);
            assert!(b1 >= Duration::from_millis(50) && b1 <= Duration::from_millis(100));
            let b2 = p.backoff(2);
            assert!(b2 >= Duration::from_millis(100) && b2 <= Duration::from_millis(200));
            let b5 = p.backoff(5);
            assert!(b5 >= Duration::from_millis(175) && b5 <= Duration::from_millis(350));
        }
        assert!(p.backoff(100) <= Duration::from_millis(350));
    }
}
