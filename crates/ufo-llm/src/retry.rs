//! Reliability of one HTTP call, shared by every provider: timeouts, retries with exponential
//! backoff and jitter, `Retry-After`, and clear errors for requests that cannot succeed.
//!
//! Policy:
//! - retried: connection errors, timeouts, an interrupted body, HTTP 408, 409, 429 and every
//!   5xx (including Anthropic's 529 "overloaded");
//! - the wait before retry `n` (1-based) is `base_delay · 2^(n-1)`, capped at `max_delay`,
//!   times a random factor in `[0.5, 1]` (jitter); a `retry-after-ms` or `Retry-After`
//!   (seconds) header from the server replaces it, capped at `max_retry_after`;
//! - not retried: any other 4xx. 401/403 become [`LlmError::Fatal`] naming the environment
//!   variable that holds the key; others a fatal error quoting the server's message;
//! - after `max_attempts` attempts the call fails with [`LlmError::Unavailable`] (which a
//!   [`crate::BackupModel`] answers by asking its backup).

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue, CONTENT_TYPE};
use reqwest::{Response, StatusCode};
use ufo_core::ports::LlmError;

use crate::options::{is_loopback_url, HttpSettings, Secrets};

/// Timeouts, attempts and backoff of an HTTP provider.
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

/// Build the HTTP client for a provider at `base_url`. No proxy is used for loopback URLs.
pub(crate) fn build_client(
    policy: &RetryPolicy,
    base_url: &str,
) -> Result<reqwest::Client, String> {
    let mut builder = reqwest::Client::builder()
        .connect_timeout(policy.connect_timeout)
        .read_timeout(policy.read_timeout)
        .timeout(policy.request_timeout)
        .user_agent(concat!("ufo-rs/", env!("CARGO_PKG_VERSION")));
    if is_loopback_url(base_url) {
        builder = builder.no_proxy();
    }
    builder
        .build()
        .map_err(|e| format!("cannot set up the HTTP client: {e}"))
}

/// Turn configured extra headers into a header map; the error names the bad header.
pub(crate) fn header_map(settings: &HttpSettings) -> Result<HeaderMap, String> {
    let mut map = HeaderMap::new();
    for (name, value) in &settings.extra_headers {
        let header = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| format!("extra header name {name:?} is not a valid HTTP header name"))?;
        let mut value = HeaderValue::from_str(value)
            .map_err(|_| format!("extra header {name:?} has a value that is not valid in HTTP"))?;
        value.set_sensitive(true);
        map.append(header, value);
    }
    Ok(map)
}

/// Mark a secret header value (an API key) so it is never printed.
pub(crate) fn secret_header(value: &str, env_hint: &str) -> Result<HeaderValue, String> {
    let mut value = HeaderValue::from_str(value).map_err(|_| {
        format!("the API key contains characters not allowed in an HTTP header; check {env_hint}")
    })?;
    value.set_sensitive(true);
    Ok(value)
}

/// Who is being called, for messages.
#[derive(Debug, Clone)]
pub(crate) struct Target<'a> {
    /// Provider name for messages (`OpenAI-compatible server`, `Anthropic`, ...).
    pub provider: &'a str,
    /// Full URL of the endpoint.
    pub url: &'a str,
    /// How to fix a bad key, e.g. `OPENAI_API_KEY (or UFO_LLM_API_KEY)`.
    pub key_hint: &'a str,
    /// Whether a key was sent at all.
    pub key_sent: bool,
    /// Values scrubbed from messages and logs.
    pub secrets: &'a Secrets,
}

enum Outcome {
    Done(String),
    Retry {
        reason: String,
        after: Option<Duration>,
    },
    Fatal(String),
}

/// POST `body` as JSON to `target.url` with `headers`, applying the retry policy. Returns the
/// body text of the first 2xx answer.
pub(crate) async fn post_json(
    client: &reqwest::Client,
    policy: &RetryPolicy,
    target: &Target<'_>,
    headers: &HeaderMap,
    body: &serde_json::Value,
) -> Result<String, LlmError> {
    let bytes = serde_json::to_vec(body)
        .map_err(|e| LlmError::Fatal(format!("cannot encode the request: {e}")))?;
    let attempts = policy.max_attempts.max(1);
    let mut last_reason = String::new();
    for attempt in 1..=attempts {
        let sent = client
            .post(target.url)
            .headers(headers.clone())
            .header(CONTENT_TYPE, "application/json")
            .body(bytes.clone())
            .send()
            .await;
        let outcome = match sent {
            Ok(response) => classify(response, target).await,
            Err(e) => transport_error(&e, policy),
        };
        match outcome {
            Outcome::Done(text) => return Ok(text),
            Outcome::Fatal(msg) => return Err(LlmError::Fatal(target.secrets.scrub(&msg))),
            Outcome::Retry { reason, after } => {
                let reason = target.secrets.scrub(&reason);
                if attempt < attempts {
                    let wait = match after {
                        Some(after) => after.min(policy.max_retry_after),
                        None => policy.backoff(attempt),
                    };
                    tracing::warn!(
                        provider = target.provider,
                        attempt,
                        wait_ms = wait.as_millis() as u64,
                        "model call failed, retrying: {reason}"
                    );
                    tokio::time::sleep(wait).await;
                }
                last_reason = reason;
            }
        }
    }
    Err(LlmError::Unavailable(format!(
        "{} at {} failed {attempts} time(s); last error: {last_reason}",
        target.provider, target.url
    )))
}

fn transport_error(e: &reqwest::Error, policy: &RetryPolicy) -> Outcome {
    if e.is_builder() {
        return Outcome::Fatal(format!("cannot build the request: {e}; check the base URL"));
    }
    let reason = if e.is_timeout() {
        format!(
            "timed out (connect {} s, read {} s, whole request {} s): {e}",
            policy.connect_timeout.as_secs_f64(),
            policy.read_timeout.as_secs_f64(),
            policy.request_timeout.as_secs_f64()
        )
    } else if e.is_connect() {
        format!("cannot connect: {e}")
    } else {
        format!("transport error: {e}")
    };
    Outcome::Retry {
        reason,
        after: None,
    }
}

async fn classify(response: Response, target: &Target<'_>) -> Outcome {
    let status = response.status();
    let after = retry_after(response.headers());
    let body = match response.text().await {
        Ok(body) => body,
        Err(e) => {
            return Outcome::Retry {
                reason: format!("HTTP {status}, but reading the body failed: {e}"),
                after: None,
            }
        }
    };
    if status.is_success() {
        return Outcome::Done(body);
    }
    let message = error_message(&body);
    let code = status.as_u16();
    if matches!(code, 408 | 409 | 429) || status.is_server_error() {
        return Outcome::Retry {
            reason: format!("HTTP {code}: {message}"),
            after,
        };
    }
    if status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN {
        let what = if target.key_sent {
            "refused the API key"
        } else {
            "requires an API key and none was set"
        };
        return Outcome::Fatal(format!(
            "{} {what} (HTTP {code}: {message}); set {} to a valid key",
            target.provider, target.key_hint
        ));
    }
    let advice = match code {
        404 => format!(
            "check the model (or deployment) name and the base URL ({})",
            target.url
        ),
        413 => "the request is too large; send smaller or fewer screenshots".to_string(),
        _ => "check the model name and the provider settings".to_string(),
    };
    Outcome::Fatal(format!(
        "{} rejected the request (HTTP {code}: {message}); {advice}",
        target.provider
    ))
}

/// The wait the server asks for: `retry-after-ms` (milliseconds, OpenAI) or `Retry-After` in
/// seconds. An HTTP-date `Retry-After` is ignored (the backoff applies).
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let number = |name: &str| -> Option<f64> {
        let v: f64 = headers.get(name)?.to_str().ok()?.trim().parse().ok()?;
        (v.is_finite() && v >= 0.0).then_some(v)
    };
    if let Some(ms) = number("retry-after-ms") {
        return Some(Duration::from_secs_f64(ms / 1000.0));
    }
    number("retry-after").map(Duration::from_secs_f64)
}

/// The human message of an error body: `error.message` (OpenAI, Anthropic), `error` as a
/// string (Ollama), `message`, or the start of the body.
pub(crate) fn error_message(body: &str) -> String {
    if let Ok(v) = serde_json::from_str::<serde_json::Value>(body) {
        let candidates = [
            v.pointer("/error/message"),
            v.get("error"),
            v.get("message"),
            v.get("detail"),
        ];
        for c in candidates.into_iter().flatten() {
            if let Some(s) = c.as_str() {
                return short(s, 300);
            }
        }
    }
    if body.trim().is_empty() {
        "empty body".to_string()
    } else {
        short(body, 300)
    }
}

/// The first `max` characters of `text` on one line.
pub(crate) fn short(text: &str, max: usize) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= max {
        flat
    } else {
        let mut s: String = flat.chars().take(max).collect();
        s.push('…');
        s
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

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

    #[test]
    fn retry_after_headers() {
        let mut h = HeaderMap::new();
        assert_eq!(retry_after(&h), None);
        h.insert("retry-after", HeaderValue::from_static("2"));
        assert_eq!(retry_after(&h), Some(Duration::from_secs(2)));
        h.insert("retry-after-ms", HeaderValue::from_static("150"));
        assert_eq!(retry_after(&h), Some(Duration::from_millis(150)));
        let mut h = HeaderMap::new();
        h.insert(
            "retry-after",
            HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
        );
        assert_eq!(retry_after(&h), None);
    }

    #[test]
    fn error_messages_from_bodies() {
        assert_eq!(
            error_message(r#"{"error":{"message":"bad key","type":"x"}}"#),
            "bad key"
        );
        assert_eq!(
            error_message(r#"{"error":"model not found"}"#),
            "model not found"
        );
        assert_eq!(error_message(""), "empty body");
        assert_eq!(error_message("<html>oops</html>"), "<html>oops</html>");
        assert_eq!(short(&"x".repeat(10), 4), "xxxx…");
    }

    #[test]
    fn extra_headers_are_validated() {
        let mut s = HttpSettings::default();
        s.extra_headers.push(("X-Ok".into(), "1".into()));
        assert_eq!(header_map(&s).unwrap().len(), 1);
        s.extra_headers.push(("bad name".into(), "1".into()));
        assert!(header_map(&s).unwrap_err().contains("bad name"));
    }
}
