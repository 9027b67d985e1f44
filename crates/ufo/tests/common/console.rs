//! A client of `ufo serve`'s web console for the tests (docs/console.md): log in with a token,
//! then make the page's requests with its cookie, CSRF header and the server's own Origin.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::served::Served;

/// An HTTP client with a bound on every request.
pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .expect("client")
}

/// A logged-in page.
#[derive(Debug, Clone)]
pub struct Page {
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    /// `ufo_console=...`, the value of the `Cookie` header.
    pub cookie: String,
    /// The login's `X-CSRF-Token` value.
    pub csrf: String,
    /// The `Set-Cookie` header the login answered with.
    pub set_cookie: String,
}

/// Log in with `token`: the page, once the answer is 200.
pub async fn login(server: &Served, token: &str) -> Page {
    let r = client()
        .post(format!("{}/login", server.origin()))
        .json(&json!({ "token": token }))
        .send()
        .await
        .expect("login answers");
    assert_eq!(r.status().as_u16(), 200, "login");
    let set_cookie = r
        .headers()
        .get("set-cookie")
        .and_then(|v| v.to_str().ok())
        .expect("a cookie")
        .to_string();
    let body: Value = r.json().await.expect("json");
    Page {
        base: server.origin(),
        cookie: set_cookie
            .split(';')
            .next()
            .expect("name=value")
            .to_string(),
        csrf: body["csrf"].as_str().expect("csrf").to_string(),
        set_cookie,
    }
}

impl Page {
    /// `GET path` with the login: the status and the body as JSON (`Null` when it is not).
    pub async fn get(&self, path: &str) -> (u16, Value) {
        let r = client()
            .get(format!("{}{path}", self.base))
            .header("Cookie", &self.cookie)
            .send()
            .await
            .expect("answer");
        let status = r.status().as_u16();
        (status, r.json().await.unwrap_or(Value::Null))
    }

    /// `POST path` with `body`, the login, its CSRF header and the server's Origin: the status
    /// and the body as JSON.
    pub async fn post(&self, path: &str, body: &Value) -> (u16, Value) {
        let r = client()
            .post(format!("{}{path}", self.base))
            .header("Cookie", &self.cookie)
            .header("X-CSRF-Token", &self.csrf)
            .header("Origin", &self.base)
            .json(body)
            .send()
            .await
            .expect("answer");
        let status = r.status().as_u16();
        (status, r.json().await.unwrap_or(Value::Null))
    }

    /// Start a session: the answer's status and body.
    pub async fn try_start(&self, start: &Value) -> (u16, Value) {
        self.post("/api/sessions", start).await
    }

    /// Start a session: its id, once the answer is 201.
    pub async fn start(&self, start: &Value) -> String {
        let (status, body) = self.try_start(start).await;
        assert_eq!(status, 201, "{body}");
        body["id"].as_str().expect("id").to_string()
    }

    /// The ids of the sessions the console lists for this login.
    pub async fn listed(&self) -> Vec<String> {
        let (status, rows) = self.get("/api/sessions").await;
        assert_eq!(status, 200, "{rows}");
        rows.as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|r| r["id"].as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// Look at a session's records every 100 ms until `done` says so, for at most `within`.
pub fn wait_records(dir: &Path, within: Duration, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let deadline = Instant::now() + within;
    loop {
        let ev = super::records_so_far(dir);
        if done(&ev) || Instant::now() >= deadline {
            return ev;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}
