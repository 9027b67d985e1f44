//! Helpers shared by the integration tests.
#![allow(dead_code, clippy::unwrap_used)]

use std::sync::Arc;
use std::time::Duration;

use ufo_core::ports::{ChatMessage, ChatRequest, ContentPart, MessageRole};
use ufo_llm::{HttpSettings, RetryPolicy};

/// Settings that make retries and timeouts quick and deterministic.
pub fn quick_settings() -> HttpSettings {
    HttpSettings {
        retry: RetryPolicy {
            max_attempts: 3,
            base_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(5),
            max_retry_after: Duration::from_millis(200),
            connect_timeout: Duration::from_secs(2),
            read_timeout: Duration::from_millis(400),
            request_timeout: Duration::from_millis(600),
        },
        ..HttpSettings::default()
    }
}

/// A tiny "PNG" (the bytes need not decode; providers only encode them).
pub fn png() -> Arc<Vec<u8>> {
    Arc::new(vec![
        0x89, b'P', b'N', b'G', 13, 10, 26, 10, 0, 1, 2, 3, 250, 251,
    ])
}

/// A host request with a system prompt and a user prompt.
pub fn text_request(prompt: &str) -> ChatRequest {
    ChatRequest {
        agent: "host".into(),
        messages: vec![
            ChatMessage::text(
                MessageRole::System,
                "You are the HostAgent. Answer in JSON.",
            ),
            ChatMessage::text(MessageRole::User, prompt),
        ],
        json_mode: true,
        response_schema: None,
        max_tokens: None,
    }
}

/// An app request whose user message carries a screenshot between two texts.
pub fn image_request() -> ChatRequest {
    ChatRequest {
        agent: "app".into(),
        messages: vec![
            ChatMessage::text(MessageRole::System, "You are the AppAgent."),
            ChatMessage {
                role: MessageRole::User,
                content: vec![
                    ContentPart::Text("Controls: [1] OK".into()),
                    ContentPart::Image {
                        png: png(),
                        caption: "annotated screenshot".into(),
                    },
                    ContentPart::Text("Choose an action.".into()),
                ],
            },
        ],
        json_mode: true,
        response_schema: None,
        max_tokens: None,
    }
}

/// The base64 of [`png`].
pub fn png_b64() -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(png().as_slice())
}

/// The JSON bodies the server received.
pub async fn bodies(server: &wiremock::MockServer) -> Vec<serde_json::Value> {
    server
        .received_requests()
        .await
        .unwrap_or_default()
        .iter()
        .map(|r| serde_json::from_slice(&r.body).unwrap())
        .collect()
}

/// The error text, whatever its kind, with the kind.
pub fn err_text(e: &ufo_core::ports::LlmError) -> (&'static str, String) {
    match e {
        ufo_core::ports::LlmError::Fatal(m) => ("fatal", m.clone()),
        ufo_core::ports::LlmError::Unavailable(m) => ("unavailable", m.clone()),
    }
}

/// One answer of a [`LocalServer`]: a status, a content type, and the body in chunks, each
/// sent after its delay (a slow or stalling server is a long delay).
#[derive(Debug, Clone)]
pub struct Reply {
    /// HTTP status.
    pub status: u16,
    /// `content-type`.
    pub content_type: &'static str,
    /// (delay before, text) of each chunk.
    pub chunks: Vec<(Duration, String)>,
}

impl Reply {
    /// A JSON body at once.
    pub fn json(status: u16, body: serde_json::Value) -> Self {
        Self {
            status,
            content_type: "application/json",
            chunks: vec![(Duration::ZERO, body.to_string())],
        }
    }
}

/// What a [`LocalServer`] answers to a request body (its raw text).
pub type Responder = Arc<dyn Fn(&str) -> Reply + Send + Sync>;

/// A real HTTP/1.1 server on a loopback port (a plain tokio listener, no mock library): it
/// reads each request whole, keeps its body text, and sends what the responder says, chunk
/// by chunk, closing the connection after it.
pub struct LocalServer {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    bodies: Arc<std::sync::Mutex<Vec<String>>>,
    /// Answers cut short because the client closed the connection.
    pub broken: Arc<std::sync::atomic::AtomicUsize>,
}

impl LocalServer {
    /// Start serving with `responder`.
    pub async fn start(responder: impl Fn(&str) -> Reply + Send + Sync + 'static) -> Self {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let responder: Responder = Arc::new(responder);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let bodies = Arc::new(std::sync::Mutex::new(Vec::new()));
        let kept = bodies.clone();
        let broken = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let cut = broken.clone();
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let responder = responder.clone();
                let kept = kept.clone();
                let cut = cut.clone();
                tokio::spawn(async move {
                    let mut data = Vec::new();
                    let mut buf = [0u8; 8192];
                    let (head_end, length) = loop {
                        match stream.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => data.extend_from_slice(&buf[..n]),
                        }
                        if let Some(end) = data.windows(4).position(|w| w == b"\r\n\r\n") {
                            let head = String::from_utf8_lossy(&data[..end]).to_ascii_lowercase();
                            let length = head
                                .lines()
                                .find_map(|l| l.strip_prefix("content-length:"))
                                .and_then(|v| v.trim().parse::<usize>().ok())
                                .unwrap_or(0);
                            break (end + 4, length);
                        }
                    };
                    while data.len() < head_end + length {
                        match stream.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => data.extend_from_slice(&buf[..n]),
                        }
                    }
                    let body =
                        String::from_utf8_lossy(&data[head_end..head_end + length]).to_string();
                    kept.lock().unwrap().push(body.clone());
                    let reply = responder(&body);
                    let head = format!(
                        "HTTP/1.1 {} X\r\ncontent-type: {}\r\ntransfer-encoding: chunked\r\n\
                         connection: close\r\n\r\n",
                        reply.status, reply.content_type
                    );
                    if stream.write_all(head.as_bytes()).await.is_err() {
                        return;
                    }
                    for (delay, text) in reply.chunks {
                        tokio::time::sleep(delay).await;
                        let chunk = format!("{:x}\r\n{text}\r\n", text.len());
                        if stream.write_all(chunk.as_bytes()).await.is_err()
                            || stream.flush().await.is_err()
                        {
                            cut.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                            return;
                        }
                    }
                    let _ = stream.write_all(b"0\r\n\r\n").await;
                });
            }
        });
        Self {
            url,
            bodies,
            broken,
        }
    }

    /// The request bodies received so far, as text.
    pub fn raw_bodies(&self) -> Vec<String> {
        self.bodies.lock().unwrap().clone()
    }

    /// The request bodies received so far, as JSON.
    pub fn bodies(&self) -> Vec<serde_json::Value> {
        self.raw_bodies()
            .iter()
            .map(|b| serde_json::from_str(b).unwrap())
            .collect()
    }
}

/// A stream of server-sent events: each `(delay, data)` as one `data:` event.
pub fn sse(events: &[(u64, String)]) -> Reply {
    Reply {
        status: 200,
        content_type: "text/event-stream",
        chunks: events
            .iter()
            .map(|(ms, data)| (Duration::from_millis(*ms), format!("data: {data}\r\n\r\n")))
            .collect(),
    }
}

/// The OpenAI-style chunk carrying `piece` of the answer.
pub fn delta(piece: &str) -> String {
    serde_json::json!({"choices": [{"index": 0, "delta": {"content": piece}}]}).to_string()
}

/// A chat completion whose answer is `text`.
pub fn completion(text: &str) -> serde_json::Value {
    serde_json::json!({
        "choices": [{"message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 5}
    })
}

/// An OpenAI-style error body.
pub fn error_body(message: &str) -> serde_json::Value {
    serde_json::json!({"error": {"message": message, "type": "invalid_request_error"}})
}
