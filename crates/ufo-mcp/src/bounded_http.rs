//! A streamable HTTP MCP server's replies, bounded as a stdio server's lines are
//! (`bounded.rs`): a JSON reply and each event of an event stream are at most
//! [`MAX_MESSAGE_BYTES`]. rmcp's own HTTP client reads a JSON reply whole and hands the event
//! stream to a parser that gathers an event's lines without limit, so a server answering
//! without end would fill memory. [`BoundedHttp`] makes the same requests with reqwest, reads
//! a JSON reply up to the cap and an event stream through [`EventBound`] (which counts the
//! bytes since the last blank line), fails the reply or the stream past the cap, and raises
//! `tripped`, so the caller can say why the call failed.

use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use futures::stream::{BoxStream, StreamExt};
use reqwest::header::{ACCEPT, CONTENT_TYPE, WWW_AUTHENTICATE};
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::common::http_header::{
    EVENT_STREAM_MIME_TYPE, HEADER_LAST_EVENT_ID, HEADER_SESSION_ID, JSON_MIME_TYPE,
};
use rmcp::transport::streamable_http_client::{
    AuthRequiredError, SseError, StreamableHttpClient, StreamableHttpError,
    StreamableHttpPostResponse,
};
use sse_stream::{Sse, SseStream};

use crate::bounded::MAX_MESSAGE_BYTES;

/// Where an event stream's bytes stand: how many arrived since the last event ended, and
/// whether the last byte ended a line (`\n`, `\r`, or the `\r` of a `\r\n` pair).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct EventBound {
    /// Bytes since the last blank line (the end of an event).
    open: usize,
    /// The last byte ended a line: a line ending next is a blank line.
    line_start: bool,
    /// The last byte was `\r`: a `\n` next belongs to the same line ending.
    after_cr: bool,
}

impl EventBound {
    /// Take `chunk`; `Err` with the bytes of the open event once they pass `cap`.
    pub(crate) fn take(&mut self, chunk: &[u8], cap: usize) -> Result<(), usize> {
        for &b in chunk {
            match b {
                b'\n' if self.after_cr => self.after_cr = false,
                b'\n' | b'\r' => {
                    if self.line_start {
                        // a blank line: the event ends
                        self.open = 0;
                    } else {
                        self.open += 1;
                    }
                    self.line_start = true;
                    self.after_cr = b == b'\r';
                }
                _ => {
                    self.open += 1;
                    self.line_start = false;
                    self.after_cr = false;
                }
            }
            if self.open > cap {
                return Err(self.open);
            }
        }
        Ok(())
    }
}

/// Why a body was cut.
#[derive(Debug, thiserror::Error)]
pub(crate) enum BodyError {
    /// The connection failed while reading.
    #[error("reading the MCP server's reply: {0}")]
    Read(#[from] reqwest::Error),
    /// One event or reply passed the cap.
    #[error("the MCP server sent a message longer than {} MiB; it was cut", .0 >> 20)]
    TooLong(usize),
}

/// reqwest behind rmcp's HTTP transport, with every reply bounded (module doc).
#[derive(Clone)]
pub(crate) struct BoundedHttp {
    client: reqwest::Client,
    cap: usize,
    tripped: Arc<AtomicBool>,
}

impl BoundedHttp {
    /// `client`'s requests, each reply (each event of a stream) at most [`MAX_MESSAGE_BYTES`];
    /// `tripped` is raised when one was longer.
    pub(crate) fn new(client: reqwest::Client, tripped: Arc<AtomicBool>) -> Self {
        Self {
            client,
            cap: MAX_MESSAGE_BYTES,
            tripped,
        }
    }

    /// An event stream read with each event bounded.
    fn events(&self, body: reqwest::Response) -> BoxStream<'static, Result<Sse, SseError>> {
        let (cap, tripped) = (self.cap, self.tripped.clone());
        let mut bound = EventBound::default();
        let bytes = body.bytes_stream().map(move |chunk| {
            let chunk = chunk?;
            bound.take(&chunk, cap).map_err(|n| {
                tripped.store(true, Ordering::SeqCst);
                BodyError::TooLong(n)
            })?;
            Ok::<Bytes, BodyError>(chunk)
        });
        // the stream ends at the first error: nothing after a cut is parsed
        let bytes = bytes.scan(false, |failed, item| {
            if *failed {
                return futures::future::ready(None);
            }
            *failed = item.is_err();
            futures::future::ready(Some(item))
        });
        SseStream::from_bytes_stream(bytes).boxed()
    }

    /// A JSON reply read whole, at most the cap.
    async fn json(&self, mut body: reqwest::Response) -> Result<Vec<u8>, BodyError> {
        let mut out = Vec::new();
        while let Some(chunk) = body.chunk().await? {
            if out.len() + chunk.len() > self.cap {
                self.tripped.store(true, Ordering::SeqCst);
                return Err(BodyError::TooLong(out.len() + chunk.len()));
            }
            out.extend_from_slice(&chunk);
        }
        Ok(out)
    }
}

/// The error rmcp's transport reports for a body that was cut or failed.
fn body_error(e: BodyError) -> StreamableHttpError<reqwest::Error> {
    match e {
        BodyError::Read(e) => StreamableHttpError::Client(e),
        e @ BodyError::TooLong(_) => {
            StreamableHttpError::UnexpectedServerResponse(Cow::Owned(e.to_string()))
        }
    }
}

/// Whether a reply's type is one of `types`; the error names it otherwise.
fn expect_type(
    response: &reqwest::Response,
    types: &[&str],
) -> Result<(), StreamableHttpError<reqwest::Error>> {
    match response.headers().get(CONTENT_TYPE) {
        Some(ct)
            if types
                .iter()
                .any(|t| ct.as_bytes().starts_with(t.as_bytes())) =>
        {
            Ok(())
        }
        other => Err(StreamableHttpError::UnexpectedContentType(
            other.map(|ct| String::from_utf8_lossy(ct.as_bytes()).to_string()),
        )),
    }
}

impl StreamableHttpClient for BoundedHttp {
    type Error = reqwest::Error;

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        last_event_id: Option<String>,
        auth_token: Option<String>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<Self::Error>> {
        let mut request = self
            .client
            .get(uri.as_ref())
            .header(ACCEPT, [EVENT_STREAM_MIME_TYPE, JSON_MIME_TYPE].join(", "))
            .header(HEADER_SESSION_ID, session_id.as_ref());
        if let Some(id) = last_event_id {
            request = request.header(HEADER_LAST_EVENT_ID, id);
        }
        if let Some(token) = auth_token {
            request = request.bearer_auth(token);
        }
        let response = request.send().await.map_err(StreamableHttpError::Client)?;
        if response.status() == reqwest::StatusCode::METHOD_NOT_ALLOWED {
            return Err(StreamableHttpError::ServerDoesNotSupportSse);
        }
        let response = response
            .error_for_status()
            .map_err(StreamableHttpError::Client)?;
        expect_type(&response, &[EVENT_STREAM_MIME_TYPE, JSON_MIME_TYPE])?;
        Ok(self.events(response))
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_token: Option<String>,
    ) -> Result<(), StreamableHttpError<Self::Error>> {
        // no body is read: reqwest's own request is bounded already
        self.client
            .delete_session(uri, session_id, auth_token)
            .await
    }

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_token: Option<String>,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        let mut request = self
            .client
            .post(uri.as_ref())
            .header(ACCEPT, [EVENT_STREAM_MIME_TYPE, JSON_MIME_TYPE].join(", "));
        if let Some(token) = auth_token {
            request = request.bearer_auth(token);
        }
        if let Some(id) = session_id {
            request = request.header(HEADER_SESSION_ID, id.as_ref());
        }
        let response = request
            .json(&message)
            .send()
            .await
            .map_err(StreamableHttpError::Client)?;
        if response.status() == reqwest::StatusCode::UNAUTHORIZED {
            if let Some(header) = response.headers().get(WWW_AUTHENTICATE) {
                let header = header.to_str().map_err(|_| {
                    StreamableHttpError::UnexpectedServerResponse(Cow::from(
                        "invalid www-authenticate header value",
                    ))
                })?;
                return Err(StreamableHttpError::AuthRequired(AuthRequiredError {
                    www_authenticate_header: header.to_string(),
                }));
            }
        }
        if matches!(
            response.status(),
            reqwest::StatusCode::ACCEPTED | reqwest::StatusCode::NO_CONTENT
        ) {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        let session = response
            .headers()
            .get(HEADER_SESSION_ID)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        expect_type(&response, &[EVENT_STREAM_MIME_TYPE, JSON_MIME_TYPE])?;
        let is_stream = response
            .headers()
            .get(CONTENT_TYPE)
            .is_some_and(|ct| ct.as_bytes().starts_with(EVENT_STREAM_MIME_TYPE.as_bytes()));
        if is_stream {
            return Ok(StreamableHttpPostResponse::Sse(
                self.events(response),
                session,
            ));
        }
        let body = self.json(response).await.map_err(body_error)?;
        let message: ServerJsonRpcMessage = serde_json::from_slice(&body)?;
        Ok(StreamableHttpPostResponse::Json(message, session))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn take_all(chunks: &[&[u8]], cap: usize) -> Result<EventBound, usize> {
        let mut b = EventBound::default();
        for c in chunks {
            b.take(c, cap)?;
        }
        Ok(b)
    }

    #[test]
    fn events_of_any_number_under_the_cap_pass() {
        let event = b"event: message\ndata: {\"a\":1}\n\n";
        let many: Vec<&[u8]> = std::iter::repeat_n(&event[..], 1000).collect();
        assert!(take_all(&many, event.len()).is_ok());
    }

    #[test]
    fn one_event_past_the_cap_is_cut_whatever_its_line_endings() {
        for end in [&b"\n"[..], b"\r\n", b"\r"] {
            // many short data lines, never a blank line: one event growing without end
            let line = [&b"data: xxxxxxxx"[..], end].concat();
            let lines: Vec<&[u8]> = std::iter::repeat_n(&line[..], 100).collect();
            assert!(take_all(&lines, 500).is_err(), "{end:?}");
            // the same lines in events of 5: each under the cap
            let mut with_ends = Vec::new();
            for i in 0..100 {
                with_ends.push(line.clone());
                if i % 5 == 4 {
                    with_ends.push(end.to_vec());
                }
            }
            let refs: Vec<&[u8]> = with_ends.iter().map(Vec::as_slice).collect();
            assert!(take_all(&refs, 500).is_ok(), "{end:?}");
        }
    }

    #[test]
    fn a_line_ending_split_between_chunks_is_one_line_ending() {
        // `\r` at the end of one chunk, `\n` at the start of the next: not a blank line
        let chunks: Vec<&[u8]> = vec![b"data: aaaa\r", b"\ndata: bbbb\r", b"\n"];
        let b = take_all(&chunks, 100).expect("under the cap");
        assert_eq!(b.open, 22);
        // then the blank line ends the event
        let mut b = b;
        b.take(b"\r\n", 100).expect("under the cap");
        assert_eq!(b.open, 0);
    }

    #[test]
    fn a_single_endless_line_is_cut() {
        let chunk = [b'x'; 4096];
        let mut b = EventBound::default();
        let mut cut = false;
        for _ in 0..100 {
            if b.take(&chunk, 64 * 1024).is_err() {
                cut = true;
                break;
            }
        }
        assert!(cut);
    }
}
