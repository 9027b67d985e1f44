//! Reliability of one HTTP call, shared by every provider: timeouts, retries with exponential
//! backoff and jitter, `Retry-After`, bounded bodies, and clear errors for requests that
//! cannot succeed. This comment is the single statement of the whole retry policy.
//!
//! Policy:
//! - retried: connection errors, timeouts, an interrupted body, HTTP 408, 409, 429 and every
//!   5xx (including Anthropic's 529 "overloaded");
//! - the wait before retry `n` (1-based) is `base_delay · 2^(n-1)`, capped at `max_delay`,
//!   times a random factor in `[0.5, 1]` (jitter); a `retry-after-ms` (milliseconds) or
//!   `Retry-After` (seconds) header from the server replaces it, clamped to
//!   `max_retry_after` (60 s by default): a huge value (`1e20`, `inf`) waits
//!   `max_retry_after`; a value that is not a number, NaN, negative, or an HTTP date is
//!   ignored (the computed backoff applies). A header can never make the wait unbounded nor
//!   crash the conversion to a duration;
//! - every response body is read chunk by chunk up to [`MAX_BODY_BYTES`] (16 MiB); a longer
//!   body (or a `Content-Length` announcing one) ends the call at once with
//!   [`LlmError::Fatal`], not retried: an endless or oversized answer never fills memory;
//! - never followed: a redirect (3xx). It would re-send the prompt, the key and the
//!   configured headers to the address it names, another host included; the call fails with
//!   [`LlmError::Fatal`] naming that address (redacted) and asking for it as the base URL;
//! - not retried: any other 4xx, and a 500 whose message says the request failed validation
//!   (llama-cpp-python's server answers a field it does not take so). 401/403 become [`LlmError::Fatal`] naming the environment
//!   variable that holds the key; others a fatal error quoting the server's message;
//! - after `max_attempts` attempts the call fails with [`LlmError::Unavailable`] (which a
//!   [`crate::BackupModel`] answers by asking its backup); its message says how many HTTP
//!   requests were made;
//! - configured values are validated where they are read ([`crate::spec`]): attempts
//!   `1..=`[`MAX_ATTEMPTS_LIMIT`], timeouts finite, positive and at most
//!   [`MAX_TIMEOUT_SECS`]; anything else is a configuration error (exit status 2);
//! - a streamed answer ([`crate::stream`]) is bounded by the time to its first token and the
//!   longest silence between tokens instead of the whole-attempt timeout; either running
//!   out, or the stream breaking off, is a timeout like the others (retried, the answer
//!   started afresh); an error event of the stream is fatal unless the server says it is
//!   overloaded (retried);
//! - messages never show a secret: the API key and header values are scrubbed, and URLs
//!   are shown through [`redact_url`](crate::redact_url) (no userinfo, no query values).

use std::time::{Duration, Instant};

use reqwest::header::{HeaderMap, HeaderName, HeaderValue, CONTENT_TYPE};
use reqwest::{Response, StatusCode};
use ufo_core::ports::LlmError;

use crate::options::{is_loopback_url, ApiKey, ConfigError, HttpSettings, RetryPolicy, Secrets};
use crate::stream::{take_events, Sink, Step, StreamSettings};

/// A streamed answer being read: the provider's reader of its events, the bounds, and when
/// the first and the last token came (for tokens per second).
pub(crate) struct Streaming<'a> {
    /// The provider's reader.
    pub sink: &'a mut dyn Sink,
    /// The bounds.
    pub settings: StreamSettings,
    /// When the first token of the answer came.
    pub first: Option<Instant>,
    /// When its last token came.
    pub last: Option<Instant>,
}

/// The largest response body read from a provider: 16 MiB (a chat completion is a few KB;
/// this leaves room for long answers while bounding memory).
pub const MAX_BODY_BYTES: usize = 16 * 1024 * 1024;

/// The largest accepted `UFO_LLM_MAX_ATTEMPTS`.
pub const MAX_ATTEMPTS_LIMIT: u32 = 100;

/// The largest accepted timeout, in seconds (one day).
pub const MAX_TIMEOUT_SECS: f64 = 86_400.0;

/// Build the HTTP client for a provider at `base_url`. No proxy is used for loopback URLs.
pub(crate) fn build_client(
    policy: &RetryPolicy,
    stream: &StreamSettings,
    base_url: &str,
) -> Result<reqwest::Client, ConfigError> {
    // A streamed answer is bounded by its own first-token and silence limits: the read
    // timeout must not cut it sooner.
    let read_timeout = if stream.enabled {
        policy
            .read_timeout
            .max(stream.first_token)
            .max(stream.silence)
    } else {
        policy.read_timeout
    };
    let mut builder = reqwest::Client::builder()
        .connect_timeout(policy.connect_timeout)
        .read_timeout(read_timeout)
        .timeout(policy.request_timeout)
        .user_agent(concat!("ufo-rs/", env!("CARGO_PKG_VERSION")))
        // A redirect would re-send the prompt, the key and the configured headers to wherever
        // the server points (another host included): never follow one, say so instead.
        .redirect(reqwest::redirect::Policy::none());
    if is_loopback_url(base_url) {
        builder = builder.no_proxy();
    }
    builder.build().map_err(ConfigError::Client)
}

/// Turn configured extra headers into a header map; the error names the bad header.
pub(crate) fn header_map(settings: &HttpSettings) -> Result<HeaderMap, ConfigError> {
    let mut map = HeaderMap::new();
    for (name, value) in &settings.extra_headers {
        let header =
            HeaderName::from_bytes(name.as_bytes()).map_err(|source| ConfigError::HeaderName {
                name: name.clone(),
                source,
            })?;
        let mut value =
            HeaderValue::from_str(value).map_err(|source| ConfigError::HeaderValue {
                name: name.clone(),
                source,
            })?;
        value.set_sensitive(true);
        map.append(header, value);
    }
    Ok(map)
}

/// Mark a secret header value (an API key) so it is never printed.
pub(crate) fn secret_header(value: &str, env_hint: &str) -> Result<HeaderValue, ConfigError> {
    let mut value = HeaderValue::from_str(value).map_err(|source| ConfigError::KeyValue {
        hint: env_hint.to_string(),
        source,
    })?;
    value.set_sensitive(true);
    Ok(value)
}

/// One provider endpoint as every HTTP client uses it: the client, the URL (and the form
/// shown in messages), the headers with the key, the settings, and what a failure message
/// needs (where the key comes from, the secrets to scrub).
pub(crate) struct Endpoint {
    pub http: reqwest::Client,
    /// The URL requests go to, credentials included: never print it.
    pub url: String,
    /// `url` as shown in messages ([`redact_url`](crate::redact_url)).
    pub shown_url: String,
    pub headers: HeaderMap,
    pub settings: HttpSettings,
    /// How to fix a bad key, e.g. `OPENAI_API_KEY (or UFO_LLM_API_KEY)`.
    pub key_hint: String,
    pub key_sent: bool,
    pub secrets: Secrets,
}

impl Endpoint {
    /// Set up the endpoint at `url`: the configured extra headers, then `key` (if any) in the
    /// header `key_header` as `key_value` writes it, and the HTTP client.
    pub(crate) fn new(
        url: String,
        settings: HttpSettings,
        key: Option<&ApiKey>,
        key_header: HeaderName,
        key_value: impl Fn(&str) -> String,
        key_hint: String,
    ) -> Result<Self, ConfigError> {
        let mut headers = header_map(&settings)?;
        if let Some(key) = key {
            headers.insert(
                key_header,
                secret_header(&key_value(key.expose()), &key_hint)?,
            );
        }
        let http = build_client(&settings.retry, &settings.stream, &url)?;
        let secrets = Secrets::collect(key, &settings).with_url(&url);
        Ok(Self {
            http,
            shown_url: crate::redact_url(&url),
            url,
            headers,
            settings,
            key_hint,
            key_sent: key.is_some(),
            secrets,
        })
    }

    /// POST `body` to the endpoint with retries (see [`post_json`]); `provider` names it in
    /// messages. With `stream`, an event-stream answer goes to its reader (the result is
    /// `None`); a whole body is returned as before.
    pub(crate) async fn post(
        &self,
        provider: &str,
        body: &serde_json::Value,
        stream: Option<&mut Streaming<'_>>,
    ) -> Result<Option<String>, Failure> {
        let target = Target {
            provider,
            url: &self.url,
            shown_url: &self.shown_url,
            key_hint: &self.key_hint,
            key_sent: self.key_sent,
            secrets: &self.secrets,
        };
        post_json(
            &self.http,
            &self.settings.retry,
            &target,
            &self.headers,
            body,
            stream,
        )
        .await
    }
}

/// Who is being called, for messages.
#[derive(Debug, Clone)]
pub(crate) struct Target<'a> {
    /// Provider name for messages (`OpenAI-compatible server`, `Anthropic`, ...).
    pub provider: &'a str,
    /// Full URL of the endpoint, for sending.
    pub url: &'a str,
    /// The URL as shown in messages ([`redact_url`](crate::redact_url) of `url`).
    pub shown_url: &'a str,
    /// How to fix a bad key, e.g. `OPENAI_API_KEY (or UFO_LLM_API_KEY)`.
    pub key_hint: &'a str,
    /// Whether a key was sent at all.
    pub key_sent: bool,
    /// Values scrubbed from messages and logs.
    pub secrets: &'a Secrets,
}

enum Outcome {
    /// The whole body (`None`: streamed to the reader).
    Done(Option<String>),
    Retry {
        reason: String,
        after: Option<Duration>,
    },
    Fatal(String),
    /// A 4xx refusal of this request (not of the key): what the server said, for a provider
    /// that may learn from it ([`crate::learn`]).
    Rejected {
        code: u16,
        message: String,
        text: String,
    },
}

/// Why a POST failed.
#[derive(Debug)]
pub(crate) enum Failure {
    /// The server refused this request with a 4xx other than 401, 403, 408, 409 and 429 (a
    /// bad model name, or a part of the request it does not take): its status and message,
    /// and the error to report when the provider cannot do without that part.
    Rejected {
        /// The HTTP status.
        code: u16,
        /// The server's message ([`error_message`]).
        message: String,
        /// The error as reported.
        error: LlmError,
    },
    /// Anything else (unreachable, bad key, ...), reported as it is.
    Other(LlmError),
}

impl Failure {
    /// The error to report.
    pub(crate) fn into_error(self) -> LlmError {
        match self {
            Failure::Rejected { error, .. } | Failure::Other(error) => error,
        }
    }
}

/// POST `body` as JSON to `target.url` with `headers`, applying the retry policy. Returns the
/// body text of the first 2xx answer, or `None` when it was streamed to `stream`'s reader.
pub(crate) async fn post_json(
    client: &reqwest::Client,
    policy: &RetryPolicy,
    target: &Target<'_>,
    headers: &HeaderMap,
    body: &serde_json::Value,
    mut stream: Option<&mut Streaming<'_>>,
) -> Result<Option<String>, Failure> {
    let bytes = crate::wire::ordered_json(body).into_bytes();
    let attempts = policy.max_attempts.max(1);
    let mut last_reason = String::new();
    for attempt in 1..=attempts {
        let started = Instant::now();
        let mut builder = client
            .post(target.url)
            .headers(headers.clone())
            .header(CONTENT_TYPE, "application/json")
            .body(bytes.clone());
        if stream.is_some() {
            // bounded by the first token and the silences instead (`read_stream`)
            builder = builder.timeout(Duration::from_secs_f64(MAX_TIMEOUT_SECS));
        }
        let sent = builder.send().await;
        let outcome = match sent {
            Ok(response) => match stream.as_deref_mut() {
                Some(s) if response.status().is_success() && is_event_stream(&response) => {
                    read_stream(response, s, started, target).await
                }
                _ => classify(response, policy, target).await,
            },
            Err(e) => transport_error(e, policy),
        };
        match outcome {
            Outcome::Done(text) => return Ok(text),
            Outcome::Fatal(msg) => {
                return Err(Failure::Other(LlmError::Fatal(
                    target.secrets.scrub(&after_attempts(msg, attempt)),
                )));
            }
            Outcome::Rejected {
                code,
                message,
                text,
            } => {
                return Err(Failure::Rejected {
                    code,
                    message: target.secrets.scrub(&message),
                    error: LlmError::Fatal(target.secrets.scrub(&after_attempts(text, attempt))),
                });
            }
            Outcome::Retry { reason, after } => {
                let reason = target.secrets.scrub(&reason);
                if attempt < attempts {
                    let wait = match after {
                        // Already clamped by `retry_after`; `min` again keeps this obvious.
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
    Err(Failure::Other(LlmError::Unavailable(target.secrets.scrub(
        &format!(
            "{} at {} failed {attempts} time(s); last error: {last_reason}",
            target.provider, target.shown_url
        ),
    ))))
}

/// A fatal message, with how many HTTP requests it took when more than one.
fn after_attempts(msg: String, attempt: u32) -> String {
    if attempt > 1 {
        format!("{msg} (after {attempt} HTTP requests)")
    } else {
        msg
    }
}

fn transport_error(e: reqwest::Error, policy: &RetryPolicy) -> Outcome {
    // reqwest's message would quote the request URL, query string included: the final
    // message names the redacted URL instead.
    let e = e.without_url();
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

async fn classify(response: Response, policy: &RetryPolicy, target: &Target<'_>) -> Outcome {
    let status = response.status();
    if status.is_redirection() {
        return Outcome::Fatal(redirect_message(&response, target));
    }
    let after = retry_after(response.headers(), policy.max_retry_after);
    let body = match read_body(response, MAX_BODY_BYTES).await {
        Ok(body) => body,
        Err(BodyError::TooLarge) => {
            return Outcome::Fatal(format!(
                "{} sent a response body larger than {} MiB (HTTP {status}); a chat answer is \
                 a few KB, so check that {} is the right endpoint",
                target.provider,
                MAX_BODY_BYTES / (1024 * 1024),
                target.shown_url
            ))
        }
        Err(BodyError::Read(e)) => {
            return Outcome::Retry {
                reason: format!("HTTP {status}, but reading the body failed: {e}"),
                after: None,
            }
        }
    };
    if status.is_success() {
        return Outcome::Done(Some(body));
    }
    let message = error_message(&body);
    let code = status.as_u16();
    // A server that reports a request that failed its validation as an internal error (a
    // 500 quoting a pydantic validation error, in words or as its list of errors) refuses
    // this request: another attempt cannot help.
    let lower = message.to_ascii_lowercase();
    let invalid = code == 500
        && [
            "validation error",
            "literal_error",
            "extra_forbidden",
            "('body',",
        ]
        .iter()
        .any(|w| lower.contains(w));
    if !invalid && (matches!(code, 408 | 409 | 429) || status.is_server_error()) {
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
            target.shown_url
        ),
        413 => "the request is too large; send smaller or fewer screenshots".to_string(),
        _ => "check the model name and the provider settings".to_string(),
    };
    Outcome::Rejected {
        code,
        text: format!(
            "{} rejected the request (HTTP {code}: {message}); {advice}",
            target.provider
        ),
        message,
    }
}

/// The error for a redirect answer: where it points (resolved against the request URL,
/// credentials and query values hidden) and what to do.
fn redirect_message(response: &Response, target: &Target<'_>) -> String {
    let code = response.status().as_u16();
    let location = response
        .headers()
        .get(reqwest::header::LOCATION)
        .and_then(|v| v.to_str().ok())
        .map(|v| match response.url().join(v) {
            Ok(url) => crate::redact_url(url.as_str()),
            Err(_) => crate::redact_url(v),
        });
    match location {
        Some(location) => format!(
            "{} at {} answered a redirect to {location} (HTTP {code}); redirects are not \
             followed, since the prompt, the key and the headers would go with them: set the \
             base URL to the final address",
            target.provider, target.shown_url
        ),
        None => format!(
            "{} at {} answered a redirect (HTTP {code}) without a Location; check the base \
             URL and set it to the final address",
            target.provider, target.shown_url
        ),
    }
}

/// Whether an answer is a stream of server-sent events.
fn is_event_stream(response: &Response) -> bool {
    response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.to_ascii_lowercase().starts_with("text/event-stream"))
}

/// Read a streamed answer into `s.sink`, bounded by the time to the first token (from
/// `started`, when the request was sent) and the longest silence between tokens.
async fn read_stream(
    mut response: Response,
    s: &mut Streaming<'_>,
    started: Instant,
    target: &Target<'_>,
) -> Outcome {
    s.sink.reset();
    s.first = None;
    s.last = None;
    let mut buffer: Vec<u8> = Vec::new();
    let mut total = 0usize;
    loop {
        let wait = match s.last {
            None => s.settings.first_token.saturating_sub(started.elapsed()),
            Some(last) => s.settings.silence.saturating_sub(last.elapsed()),
        };
        let chunk = match tokio::time::timeout(wait, response.chunk()).await {
            Err(_) => {
                let reason = match s.last {
                    None => format!(
                        "timed out: no first token within {} s (first_token_s)",
                        s.settings.first_token.as_secs_f64()
                    ),
                    Some(_) => format!(
                        "timed out: no token for {} s in the middle of the answer (silence_s)",
                        s.settings.silence.as_secs_f64()
                    ),
                };
                return Outcome::Retry {
                    reason,
                    after: None,
                };
            }
            Ok(Err(e)) => {
                return Outcome::Retry {
                    reason: format!("the stream broke off: {}", e.without_url()),
                    after: None,
                }
            }
            Ok(Ok(None)) => return Outcome::Done(None),
            Ok(Ok(Some(chunk))) => chunk,
        };
        total += chunk.len();
        if total > MAX_BODY_BYTES {
            return Outcome::Fatal(format!(
                "{} streamed more than {} MiB; a chat answer is a few KB, so check that {} \
                 is the right endpoint",
                target.provider,
                MAX_BODY_BYTES / (1024 * 1024),
                target.shown_url
            ));
        }
        buffer.extend(chunk.iter().filter(|b| **b != b'\r'));
        for (event, data) in take_events(&mut buffer) {
            match s.sink.event(&event, &data) {
                Ok(Step::Tokens(0)) => {}
                Ok(Step::Tokens(_)) => {
                    let now = Instant::now();
                    s.first.get_or_insert(now);
                    s.last = Some(now);
                }
                // the connection is dropped with the response: the server stops
                Ok(Step::Done) => return Outcome::Done(None),
                Err(e) if e.retry => {
                    return Outcome::Retry {
                        reason: format!("the stream reported: {}", e.message),
                        after: None,
                    }
                }
                Err(e) => {
                    return Outcome::Fatal(format!(
                        "{} answered with an error in its stream: {}",
                        target.provider, e.message
                    ))
                }
            }
        }
    }
}

/// Why a body could not be read.
enum BodyError {
    /// Longer than the cap.
    TooLarge,
    /// The connection failed or timed out while reading.
    Read(reqwest::Error),
}

/// Read a response body chunk by chunk, failing as soon as it exceeds `cap` bytes (or its
/// `Content-Length` says it will), so an endless body never fills memory.
async fn read_body(mut response: Response, cap: usize) -> Result<String, BodyError> {
    if response.content_length().is_some_and(|n| n > cap as u64) {
        return Err(BodyError::TooLarge);
    }
    let mut bytes: Vec<u8> = Vec::new();
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                if bytes.len() + chunk.len() > cap {
                    return Err(BodyError::TooLarge);
                }
                bytes.extend_from_slice(&chunk);
            }
            Ok(None) => break,
            Err(e) => return Err(BodyError::Read(e.without_url())),
        }
    }
    Ok(match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    })
}

/// The wait the server asks for: `retry-after-ms` (milliseconds, OpenAI) or `Retry-After` in
/// seconds, clamped to `max`. NaN, negative, non-numeric and HTTP-date values are ignored
/// (the backoff applies); huge and infinite values give `max`.
pub(crate) fn retry_after(headers: &HeaderMap, max: Duration) -> Option<Duration> {
    let seconds = |name: &str, scale: f64| -> Option<f64> {
        let v: f64 = headers.get(name)?.to_str().ok()?.trim().parse().ok()?;
        // NaN fails `>=`; infinity is clamped below.
        (v >= 0.0).then_some(v / scale)
    };
    let secs = seconds("retry-after-ms", 1000.0).or_else(|| seconds("retry-after", 1.0))?;
    // `secs` is finite-or-+inf and non-negative; after `min` it is within `max`, so the
    // conversion cannot fail (the fallback is only there to never panic).
    Some(Duration::try_from_secs_f64(secs.min(max.as_secs_f64())).unwrap_or(max))
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
    ufo_core::text::one_line(text, max)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_headers() {
        let max = Duration::from_secs(60);
        let mut h = HeaderMap::new();
        assert_eq!(retry_after(&h, max), None);
        h.insert("retry-after", HeaderValue::from_static("2"));
        assert_eq!(retry_after(&h, max), Some(Duration::from_secs(2)));
        h.insert("retry-after-ms", HeaderValue::from_static("150"));
        assert_eq!(retry_after(&h, max), Some(Duration::from_millis(150)));
        let mut h = HeaderMap::new();
        h.insert(
            "retry-after",
            HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
        );
        assert_eq!(retry_after(&h, max), None);
    }

    /// Defect 3: huge values used to panic in `Duration::from_secs_f64`.
    #[test]
    fn huge_nan_and_negative_retry_after_never_panic() {
        let max = Duration::from_secs(60);
        let one = |name: &'static str, value: &'static str| {
            let mut h = HeaderMap::new();
            h.insert(name, HeaderValue::from_static(value));
            retry_after(&h, max)
        };
        for huge in ["1e20", "1e300", "18446744073709551616", "inf", "Infinity"] {
            assert_eq!(one("retry-after", huge), Some(max), "{huge}");
        }
        // 2^64 s in milliseconds, and more.
        for huge in ["18446744073709551616000", "1e30", "inf"] {
            assert_eq!(one("retry-after-ms", huge), Some(max), "{huge}");
        }
        for ignored in ["NaN", "-1", "-inf", "", "soon"] {
            assert_eq!(one("retry-after", ignored), None, "{ignored}");
            assert_eq!(one("retry-after-ms", ignored), None, "{ignored}");
        }
        // An ignored `retry-after-ms` falls back to `Retry-After`.
        let mut h = HeaderMap::new();
        h.insert("retry-after-ms", HeaderValue::from_static("NaN"));
        h.insert("retry-after", HeaderValue::from_static("1"));
        assert_eq!(retry_after(&h, max), Some(Duration::from_secs(1)));
        assert_eq!(one("retry-after", "0"), Some(Duration::ZERO));
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
        let e = header_map(&s).unwrap_err();
        assert!(e.to_string().contains("bad name"), "{e}");
        assert!(std::error::Error::source(&e).is_some(), "the cause is kept");
    }
}
