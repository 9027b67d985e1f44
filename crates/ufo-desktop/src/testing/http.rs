//! A local HTTP server for the live browser tests and benchmarks: it answers each request with
//! the page a closure gives for its path (the closure may take its time, to stand for a slow
//! server) and records every request with its form data and when it was answered, so that a
//! test can check what the browser sent without asking ufo.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// The answer to one request.
#[derive(Debug, Clone)]
pub struct Page {
    /// The status line's code and reason, e.g. `200 OK`.
    pub status: &'static str,
    /// The HTML sent.
    pub html: String,
}

impl Page {
    /// A `200 OK` page.
    pub fn ok(html: impl Into<String>) -> Self {
        Self {
            status: "200 OK",
            html: html.into(),
        }
    }
}

/// One request the server received.
#[derive(Debug, Clone)]
pub struct Request {
    /// The path asked for, without the query.
    pub path: String,
    /// The form data: the request body, or the query when there is no body.
    pub body: String,
    /// When the answer was sent (`None` while it is being made).
    pub answered: Option<Instant>,
}

/// The server, on 127.0.0.1 and a free port, until the test process ends.
#[derive(Debug, Clone)]
pub struct PageServer {
    /// The port it listens on.
    pub port: u16,
    requests: Arc<Mutex<Vec<Request>>>,
}

/// The longest request body read (form data of a test page).
const MAX_BODY: usize = 1 << 20;

impl PageServer {
    /// Start serving: each connection is answered on its own thread with `answer(path)`.
    ///
    /// # Panics
    /// When no local port can be bound.
    pub fn start<F>(answer: F) -> Self
    where
        F: Fn(&str) -> Page + Send + Sync + 'static,
    {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a local port");
        let port = listener.local_addr().expect("local address").port();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let (log, answer) = (Arc::clone(&requests), Arc::new(answer));
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (log, answer) = (Arc::clone(&log), Arc::clone(&answer));
                std::thread::spawn(move || serve(stream, &log, &*answer));
            }
        });
        Self { port, requests }
    }

    /// The URL of `path` on this server.
    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<Request> {
        lock(&self.requests).clone()
    }

    /// The form data of the requests received on `path`.
    pub fn bodies(&self, path: &str) -> Vec<String> {
        lock(&self.requests)
            .iter()
            .filter(|r| r.path == path)
            .map(|r| r.body.clone())
            .collect()
    }
}

fn lock(m: &Mutex<Vec<Request>>) -> MutexGuard<'_, Vec<Request>> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn serve(stream: TcpStream, log: &Mutex<Vec<Request>>, answer: &dyn Fn(&str) -> Page) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let Ok(read_half) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(read_half);
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).is_err() {
        return;
    }
    let mut length = 0usize;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).is_err() || header.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = header.split_once(':') {
            if k.trim().eq_ignore_ascii_case("content-length") {
                length = v.trim().parse().unwrap_or(0).min(MAX_BODY);
            }
        }
    }
    let mut body = vec![0; length];
    let _ = reader.read_exact(&mut body);
    let target = request_line.split_whitespace().nth(1).unwrap_or("/");
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let body = if body.is_empty() {
        query.to_string()
    } else {
        String::from_utf8_lossy(&body).into_owned()
    };
    let index = {
        let mut log = lock(log);
        log.push(Request {
            path: path.to_string(),
            body,
            answered: None,
        });
        log.len() - 1
    };
    let page = answer(path);
    let mut stream = stream;
    let _ = write!(
        stream,
        "HTTP/1.1 {}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\n\
         Cache-Control: no-store\r\nConnection: close\r\n\r\n{}",
        page.status,
        page.html.len(),
        page.html
    );
    let _ = stream.flush();
    if let Some(r) = lock(log).get_mut(index) {
        r.answered = Some(Instant::now());
    }
}
