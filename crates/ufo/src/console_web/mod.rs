//! The web console of `ufo serve` (docs/console.md): a page at `/` and a JSON API under
//! `/api/` to start, watch, answer, cancel and take over sessions, and to follow batches.
//! Its routes are merged beside `/mcp` by `ufo_mcp::http`, so they share the `Host`/`Origin`
//! check, the body cap, TLS and the token [`Gate`] (failed logins count with failed tokens).
//!
//! A token is exchanged at `POST /login` for an HttpOnly, SameSite=Strict cookie and a CSRF
//! value; every `/api/` request needs the cookie, every POST also `X-CSRF-Token`. Sessions
//! talk to the server only through their control socket ([`socket`]).

mod batches;
mod login;
mod sessions;
mod socket;
mod stream;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::body::{Body, Bytes};
use axum::extract::{Path as UrlPath, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Extension;
use axum::Router;
use serde_json::{json, Value};
use ufo_core::access::{Caller, SessionOp, Verdict};
use ufo_mcp::http::{Gate, Refusal};

pub use sessions::Allowed;
use sessions::Children;

/// The page's Content-Security-Policy: nothing but its own script, style and images.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' \
                       data:; connect-src 'self'; base-uri 'none'; form-action 'self'; \
                       frame-ancestors 'none'";
/// The replay report's policy: its own inline style, images as data, and only the scripts the
/// report ships (by their hashes), in a sandbox of its own origin, so that even a script that
/// trajectory text slipped into the page would neither run nor reach the console's cookie or
/// API.
fn report_csp() -> String {
    format!(
        "default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src {}; \
         base-uri 'none'; form-action 'none'; frame-ancestors 'none'; sandbox allow-scripts",
        crate::trajectory::report::script_sources().join(" ")
    )
}
/// The session cookie's name.
const COOKIE: &str = "ufo_console";
/// Largest screenshot served.
const MAX_PNG: u64 = 32 << 20;

const PAGE: &str = include_str!("page/index.html");
const SCRIPT: &str = include_str!("page/console.js");
const STYLE: &str = include_str!("page/console.css");

/// The console: what sessions may use, the logins and the sessions started here.
pub struct WebConsole {
    allowed: Allowed,
    gate: Arc<Gate>,
    tls: bool,
    logins: Mutex<login::Logins>,
    children: Arc<Children>,
    streams: Arc<stream::Streams>,
}

impl WebConsole {
    /// A console over `allowed`, checking tokens with `gate`; `tls` marks cookies Secure.
    pub fn new(allowed: Allowed, gate: Arc<Gate>, tls: bool) -> Arc<Self> {
        Arc::new(Self {
            allowed,
            gate,
            tls,
            logins: Mutex::new(login::Logins::default()),
            children: Arc::new(Children::default()),
            streams: Arc::new(stream::Streams::default()),
        })
    }

    /// The console's routes, for `ufo_mcp::http::HttpServe::routes`.
    pub fn router(self: &Arc<Self>) -> Router {
        let api = Router::new()
            .route("/api/sessions", get(list_sessions).post(start_session))
            .route("/api/sessions/{id}/events", get(session_events))
            .route("/api/sessions/{id}/view", get(session_view))
            .route("/api/sessions/{id}/screenshot", get(session_screenshot))
            .route("/api/sessions/{id}/report", get(session_report))
            .route("/api/sessions/{id}/{op}", post(session_control))
            .route("/api/batches", get(list_batches))
            .route("/api/batches/{id}", get(batch))
            .layer(middleware::from_fn_with_state(self.clone(), require_login));
        Router::new()
            .route("/", get(page))
            .route("/console.js", get(script))
            .route("/console.css", get(style))
            .route("/login", post(login))
            .route("/logout", post(logout))
            .merge(api)
            .layer(middleware::from_fn(common_headers))
            .with_state(self.clone())
    }

    /// End the sessions started here (the server is stopping).
    pub async fn stop(&self) {
        self.children.stop_all().await;
    }
}

type Shared = State<Arc<WebConsole>>;

fn error(status: StatusCode, message: impl std::fmt::Display) -> Response {
    let mut r = (status, json!({ "error": message.to_string() }).to_string()).into_response();
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

fn json_response(status: StatusCode, value: &impl serde::Serialize) -> Response {
    let body = serde_json::to_string(value).unwrap_or_else(|_| "null".into());
    let mut r = (status, body).into_response();
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

/// No sniffing, no referrer, no caching of answers that hold sessions' content.
async fn common_headers(req: Request, next: Next) -> Response {
    let mut r = next.run(req).await;
    let h = r.headers_mut();
    h.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    h.insert("referrer-policy", HeaderValue::from_static("no-referrer"));
    h.insert("x-frame-options", HeaderValue::from_static("DENY"));
    h.entry(header::CACHE_CONTROL)
        .or_insert(HeaderValue::from_static("no-store"));
    r
}

fn asset(body: &'static str, content_type: &'static str) -> Response {
    let mut r = body.into_response();
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    r.headers_mut().insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    r
}

async fn page() -> Response {
    asset(PAGE, "text/html; charset=utf-8")
}

async fn script() -> Response {
    asset(SCRIPT, "text/javascript; charset=utf-8")
}

async fn style() -> Response {
    asset(STYLE, "text/css; charset=utf-8")
}

/// `POST /login {"token"}`: the cookie and `{"csrf"}`; 401 on a bad token, 429 while the
/// address is locked out (the same count as `/mcp`).
async fn login(State(c): Shared, req: Request) -> Response {
    let ip = ufo_mcp::http::client_ip(req.extensions());
    let body = match axum::body::to_bytes(req.into_body(), 64 * 1024).await {
        Ok(b) => b,
        Err(_) => return error(StatusCode::PAYLOAD_TOO_LARGE, "the login body is too large"),
    };
    let token: Option<String> = serde_json::from_slice::<Value>(&body)
        .ok()
        .and_then(|v| v["token"].as_str().map(|t| t.trim().to_string()));
    match c.gate.check(ip, token.as_deref()) {
        Ok(holder) => {
            let (cookie, csrf) = match (login::random_value(), login::random_value()) {
                (Ok(a), Ok(b)) => (a, b),
                (Err(e), _) | (_, Err(e)) => return error(StatusCode::INTERNAL_SERVER_ERROR, e),
            };
            let client = holder.principal.name.clone();
            let role = holder.principal.role;
            if let Ok(mut l) = c.logins.lock() {
                l.open(&cookie, csrf.clone(), holder, Instant::now());
            }
            tracing::info!(client = %client, %role, from = %ip, "console login");
            let secure = if c.tls { "; Secure" } else { "" };
            let mut r = json_response(
                StatusCode::OK,
                &json!({ "csrf": csrf, "client": client, "role": role }),
            );
            if let Ok(v) = HeaderValue::from_str(&format!(
                "{COOKIE}={cookie}; HttpOnly; SameSite=Strict; Path=/{secure}"
            )) {
                r.headers_mut().insert(header::SET_COOKIE, v);
            }
            r
        }
        Err(Refusal::Locked(wait)) => ufo_mcp::http::locked_out(wait),
        Err(Refusal::Broken) => error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the server cannot read its token file; see its log",
        ),
        Err(Refusal::BadToken(reason)) => {
            tracing::warn!(client = %ip, reason, "refused: console login failed");
            error(
                StatusCode::UNAUTHORIZED,
                "not a valid token: `ufo serve token add NAME` on the server makes one",
            )
        }
    }
}

fn cookie_of(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find_map(|h| login::cookie_value(h, COOKIE).map(str::to_string))
}

/// `POST /logout`: the login ends and the cookie is cleared.
async fn logout(State(c): Shared, headers: HeaderMap) -> Response {
    if let Some(cookie) = cookie_of(&headers) {
        let csrf_ok = c
            .logins
            .lock()
            .ok()
            .and_then(|mut l| l.find(&cookie, Instant::now()))
            .is_some_and(|login| csrf_matches(&headers, &login.csrf));
        if !csrf_ok {
            return error(
                StatusCode::FORBIDDEN,
                "log out from the page (its X-CSRF-Token header is missing)",
            );
        }
        if let Ok(mut l) = c.logins.lock() {
            l.close(&cookie);
        }
    }
    let mut r = json_response(StatusCode::OK, &json!({}));
    r.headers_mut().insert(
        header::SET_COOKIE,
        HeaderValue::from_static("ufo_console=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0"),
    );
    r
}

fn csrf_matches(headers: &HeaderMap, csrf: &str) -> bool {
    headers
        .get("x-csrf-token")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| login::same_secret(v, csrf))
}

/// 401 without a live login cookie or when the login's token was revoked (its other logins
/// end too); 403 for a POST without the login's `X-CSRF-Token`. (A foreign `Origin` was
/// refused before, for every route.) The request goes on with the token's current name and
/// role as its [`Caller`].
async fn require_login(State(c): Shared, mut req: Request, next: Next) -> Response {
    let Some(cookie) = cookie_of(req.headers()) else {
        return error(
            StatusCode::UNAUTHORIZED,
            "log in first (POST /login with a token)",
        );
    };
    let found = c
        .logins
        .lock()
        .ok()
        .and_then(|mut l| l.find(&cookie, Instant::now()));
    let Some(login) = found else {
        return error(
            StatusCode::UNAUTHORIZED,
            "the login expired or ended; log in again",
        );
    };
    let Some(principal) = c.gate.current(&login.holder.token_id) else {
        if let Ok(mut l) = c.logins.lock() {
            l.close_token(&login.holder.token_id);
        }
        tracing::warn!(client = %login.holder.principal.name, "refused: the login's token was revoked");
        return error(
            StatusCode::UNAUTHORIZED,
            "the token this login was made with was revoked; log in with a valid token",
        );
    };
    if req.method() != Method::GET && !csrf_matches(req.headers(), &login.csrf) {
        tracing::warn!(client = %principal.name, "refused: a console request without its CSRF token");
        return error(
            StatusCode::FORBIDDEN,
            "this request needs the X-CSRF-Token header the login gave; reload the page",
        );
    }
    req.extensions_mut().insert(Requester {
        caller: Caller::Token(principal),
        token_id: login.holder.token_id,
    });
    next.run(req).await
}

/// Who a console request comes from: the token's holder as it is now, and which token.
#[derive(Debug, Clone)]
struct Requester {
    caller: Caller,
    token_id: String,
}

async fn list_sessions(State(c): Shared, Extension(who): Extension<Requester>) -> Response {
    json_response(
        StatusCode::OK,
        &sessions::list(&c.allowed.runs, &c.children, &who.caller).await,
    )
}

async fn start_session(
    State(c): Shared,
    Extension(who): Extension<Requester>,
    body: Bytes,
) -> Response {
    let req: sessions::StartRequest = match serde_json::from_slice(&body) {
        Ok(r) => r,
        Err(e) => {
            return error(
                StatusCode::BAD_REQUEST,
                format!("not a session request: {e}; send {{\"request\": \"...\"}} and the optional fields of docs/console.md"),
            )
        }
    };
    match c.children.start(&c.allowed, &who.caller, &req) {
        Ok(id) => json_response(StatusCode::CREATED, &sessions::started(&id)),
        Err(r) => error(
            StatusCode::from_u16(r.status).unwrap_or(StatusCode::BAD_REQUEST),
            r.message,
        ),
    }
}

fn not_found(id: &str) -> Box<Response> {
    Box::new(error(
        StatusCode::NOT_FOUND,
        format!("no session {id:?} in the runs folder"),
    ))
}

fn session_dir(c: &WebConsole, id: &str) -> Result<PathBuf, Box<Response>> {
    match sessions::folder(&c.allowed.runs, id) {
        Some(d) => Ok(d),
        None if sessions::valid_id(id) && c.children.is_running(id) => Ok(c.allowed.runs.join(id)),
        None => Err(not_found(id)),
    }
}

/// The folder of session `id` when `who` may do `op` with it (docs/security.md, "Who may do
/// what"): 404 when it does not exist or is not theirs to know of, 403 when they see it but
/// may not do this.
fn reach(
    c: &WebConsole,
    id: &str,
    who: &Requester,
    op: SessionOp,
) -> Result<PathBuf, Box<Response>> {
    let dir = session_dir(c, id)?;
    match sessions::may(&c.allowed.runs, id, &who.caller, op) {
        Verdict::Allow => Ok(dir),
        Verdict::Hidden => Err(not_found(id)),
        Verdict::Forbidden(why) => Err(Box::new(error(StatusCode::FORBIDDEN, why))),
    }
}

async fn session_events(
    State(c): Shared,
    Extension(who): Extension<Requester>,
    UrlPath(id): UrlPath<String>,
) -> Response {
    let dir = match reach(&c, &id, &who, SessionOp::Watch) {
        Ok(d) => d,
        Err(r) => return *r,
    };
    let Some(slot) = c.streams.take(&who.token_id) else {
        return error(
            StatusCode::TOO_MANY_REQUESTS,
            format!(
                "this token has {} event streams open, the most one token keeps; close a page \
                 that follows a session",
                stream::MAX_STREAMS_PER_TOKEN
            ),
        );
    };
    let gate = c.gate.clone();
    let token_id = who.token_id.clone();
    let reader = stream::Reader {
        caller: who.caller,
        valid: Box::new(move || gate.current(&token_id).is_some()),
        slot,
    };
    stream::events(dir, id, c.children.clone(), reader).into_response()
}

/// What a console operation does to a session, as the access rule names it; `None` for an
/// operation the console does not have.
fn op_of(op: &str) -> Option<SessionOp> {
    match op {
        "answer" => Some(SessionOp::Answer),
        "cancel" => Some(SessionOp::Cancel),
        "takeover" | "handback" | "input" => Some(SessionOp::TakeOver),
        _ => None,
    }
}

/// `POST /api/sessions/{id}/answer|cancel|takeover|handback|input`: the body (a JSON object)
/// with `op` and the caller (`as`) added, to the control socket; its `ok:false` is a 409.
async fn session_control(
    State(c): Shared,
    Extension(who): Extension<Requester>,
    UrlPath((id, op)): UrlPath<(String, String)>,
    body: Bytes,
) -> Response {
    let Some(access_op) = op_of(&op) else {
        return error(
            StatusCode::NOT_FOUND,
            format!("no operation {op:?}: answer, cancel, takeover, handback or input"),
        );
    };
    let dir = match reach(&c, &id, &who, access_op) {
        Ok(d) => d,
        Err(r) => return *r,
    };
    let mut request = if body.iter().all(u8::is_ascii_whitespace) {
        json!({})
    } else {
        match serde_json::from_slice::<Value>(&body) {
            Ok(v @ Value::Object(_)) => v,
            _ => return error(StatusCode::BAD_REQUEST, "the body must be a JSON object"),
        }
    };
    request["op"] = Value::String(op.clone());
    tracing::info!(session = %id, op = %op, "console request");
    proxy(&dir, &socket::with_caller(request, &who.caller)).await
}

async fn proxy(dir: &std::path::Path, request: &Value) -> Response {
    match socket::request(&socket::path(dir), request).await {
        Ok(answer) if answer["ok"] == true => json_response(StatusCode::OK, &answer),
        Ok(answer) => error(
            StatusCode::CONFLICT,
            answer["error"].as_str().unwrap_or("the session refused"),
        ),
        Err(e @ socket::SocketError::NotRunning(_)) => error(StatusCode::CONFLICT, e),
        Err(e) => error(StatusCode::BAD_GATEWAY, e),
    }
}

fn png(bytes: Vec<u8>) -> Response {
    let mut r = Body::from(bytes).into_response();
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("image/png"));
    r
}

/// `GET /api/sessions/{id}/view`: a fresh screenshot of a taken-over private desktop.
async fn session_view(
    State(c): Shared,
    Extension(who): Extension<Requester>,
    UrlPath(id): UrlPath<String>,
) -> Response {
    use base64::Engine as _;
    let dir = match reach(&c, &id, &who, SessionOp::TakeOver) {
        Ok(d) => d,
        Err(r) => return *r,
    };
    let view = socket::with_caller(json!({"op": "view"}), &who.caller);
    match socket::request(&socket::path(&dir), &view).await {
        Ok(a) if a["ok"] == true => {
            match base64::engine::general_purpose::STANDARD.decode(a["png"].as_str().unwrap_or(""))
            {
                Ok(bytes) => png(bytes),
                Err(_) => error(
                    StatusCode::BAD_GATEWAY,
                    "the session sent a view that is not base64",
                ),
            }
        }
        Ok(a) => error(
            StatusCode::CONFLICT,
            a["error"].as_str().unwrap_or("the session refused"),
        ),
        Err(e) => error(StatusCode::CONFLICT, e),
    }
}

/// The newest step screenshot of a trajectory folder: the highest step number, its annotated
/// screenshot first, then the plain one, then the host's desktop.
fn latest_screenshot(dir: &std::path::Path) -> Option<PathBuf> {
    let mut best: Option<(u64, u8, PathBuf)> = None;
    for e in std::fs::read_dir(dir).ok()?.flatten().take(100_000) {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(rest) = name.strip_prefix("step_") else {
            continue;
        };
        let Some((num, kind)) = rest.split_once('_') else {
            continue;
        };
        let rank = match kind {
            "annotated.png" => 3,
            "screenshot.png" => 2,
            "desktop.png" => 1,
            _ => continue,
        };
        let Ok(n) = num.parse::<u64>() else { continue };
        if best
            .as_ref()
            .is_none_or(|(bn, br, _)| (n, rank) > (*bn, *br))
        {
            best = Some((n, rank, e.path()));
        }
    }
    best.map(|(_, _, p)| p)
}

async fn session_screenshot(
    State(c): Shared,
    Extension(who): Extension<Requester>,
    UrlPath(id): UrlPath<String>,
) -> Response {
    let dir = match reach(&c, &id, &who, SessionOp::Watch) {
        Ok(d) => d,
        Err(r) => return *r,
    };
    let read = tokio::task::spawn_blocking(move || {
        let path = latest_screenshot(&dir)?;
        crate::folder::read_capped(&path, MAX_PNG).ok()
    })
    .await
    .ok()
    .flatten();
    match read {
        Some(bytes) => png(bytes),
        None => error(StatusCode::NOT_FOUND, "the session has no screenshot yet"),
    }
}

/// `GET /api/sessions/{id}/report`: `ufo report`'s page, rendered now.
async fn session_report(
    State(c): Shared,
    Extension(who): Extension<Requester>,
    UrlPath(id): UrlPath<String>,
) -> Response {
    let dir = match reach(&c, &id, &who, SessionOp::Watch) {
        Ok(d) => d,
        Err(r) => return *r,
    };
    let rendered = tokio::task::spawn_blocking(move || -> anyhow::Result<Vec<u8>> {
        let t = crate::trajectory::Trajectory::load(&dir, crate::trajectory::Keep::REPORT)
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        let mut out = Vec::new();
        crate::trajectory::report::render(&t, &mut out)?;
        Ok(out)
    })
    .await;
    match rendered {
        Ok(Ok(html)) => {
            let mut r = Body::from(html).into_response();
            r.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/html; charset=utf-8"),
            );
            if let Ok(csp) = HeaderValue::from_str(&report_csp()) {
                r.headers_mut().insert(header::CONTENT_SECURITY_POLICY, csp);
            }
            r
        }
        Ok(Err(e)) => error(StatusCode::NOT_FOUND, format!("no report: {e:#}")),
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, e),
    }
}

async fn list_batches(State(c): Shared, Extension(who): Extension<Requester>) -> Response {
    let runs = c.allowed.runs.clone();
    let list = tokio::task::spawn_blocking(move || batches::list(&runs, &who.caller))
        .await
        .unwrap_or_default();
    json_response(StatusCode::OK, &list)
}

async fn batch(
    State(c): Shared,
    Extension(who): Extension<Requester>,
    UrlPath(id): UrlPath<String>,
) -> Response {
    let runs = c.allowed.runs.clone();
    let found = tokio::task::spawn_blocking(move || batches::progress(&runs, &id, &who.caller))
        .await
        .ok()
        .flatten();
    match found {
        Some(p) => json_response(StatusCode::OK, &p),
        None => error(
            StatusCode::NOT_FOUND,
            "no such batch folder in the runs folder",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_report_runs_only_the_scripts_it_ships_in_a_sandbox() {
        let csp = report_csp();
        assert!(csp.contains("sandbox allow-scripts"), "{csp}");
        assert!(!csp.contains("allow-same-origin"), "{csp}");
        let script_src = csp
            .split(';')
            .find(|d| d.trim().starts_with("script-src"))
            .expect("a script-src");
        assert!(!script_src.contains("unsafe-inline"), "{csp}");
        assert_eq!(
            crate::trajectory::report::script_sources().len(),
            1,
            "the report ships one script"
        );
        assert!(script_src.contains("'sha256-"), "{csp}");
    }

    #[test]
    fn the_latest_screenshot_is_the_newest_step_annotated_first() {
        let d = tempfile::tempdir().expect("tempdir");
        assert!(latest_screenshot(d.path()).is_none());
        for f in [
            "step_0001_desktop.png",
            "step_0002_screenshot.png",
            "step_0002_annotated.png",
            "step_0002_app_prompt.txt",
            "step_x_annotated.png",
        ] {
            std::fs::write(d.path().join(f), b"png").expect("write");
        }
        let p = latest_screenshot(d.path()).expect("one");
        assert!(p.ends_with("step_0002_annotated.png"), "{}", p.display());
    }
}
