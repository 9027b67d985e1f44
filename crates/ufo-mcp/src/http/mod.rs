//! `ufo serve`: the [`DesktopServer`] over MCP streamable HTTP (`/mcp`), behind the checks a
//! network service needs. Every request passes, in order: the request head is at most
//! `max_header_bytes` (431), `Host` and `Origin` name this server ([`guard::HostPolicy`], 403
//! otherwise), the client is not locked out after failed tokens ([`guard::Lockout`], 429), a
//! valid bearer token (401), a body under the cap (413, whether declared or chunked), an
//! answer within the request timeout (408). An MCP session is its token's alone
//! ([`sessions`]), and a viewer token only observes (`ufo_core::access`).
//!
//! Connections are bounded ([`conns`]): one that has not shown a valid token within
//! `first_request_timeout` is closed, and when all slots are taken a new connection replaces
//! the oldest one that never showed a token; an authenticated connection idle for
//! `idle_timeout` is closed.
//!
//! The binary may add routes of its own ([`HttpServe::routes`], e.g. a web console): they sit
//! behind the same `Host`/`Origin` check, body cap and timeout, and check tokens through the
//! same [`Gate`], so failed tokens count together wherever they are presented.
//!
//! Here the server's loop, routes and checks; beside it [`gate`] (the token check and its
//! lockout), [`limits`] (the bounds), [`guard`] (`Host`/`Origin` policy, lockout counts),
//! [`conns`] (the connection table), [`sessions`] (MCP sessions per token), [`tokens`] (the
//! token file) and [`tls`].

pub mod conns;
pub mod gate;
pub mod guard;
pub mod limits;
pub mod sessions;
pub mod tls;
pub mod tokens;

pub use gate::{Gate, Refusal};
pub use limits::Limits;

use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use rmcp::transport::streamable_http_server::session::local::{LocalSessionManager, SessionConfig};
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use ufo_core::Desktop;

use crate::DesktopServer;
use guard::HostPolicy;

/// What `ufo serve` serves and how.
pub struct HttpServe {
    /// The desktop.
    pub desktop: Arc<dyn Desktop>,
    /// Whether acting tools run.
    pub allow_actions: bool,
    /// Whether `run_shell` runs commands (with acting tools only).
    pub allow_shell: bool,
    /// Names a `Host` may give besides the listen address and `localhost`.
    pub host_names: Vec<String>,
    /// TLS, if any.
    pub tls: Option<Arc<tokio_rustls::rustls::ServerConfig>>,
    /// The token check with its lockout, shared by `/mcp` and `routes`.
    pub gate: Arc<Gate>,
    /// Bounds.
    pub limits: Limits,
    /// More routes of the binary (e.g. a web console), merged beside `/mcp` behind the same
    /// `Host`/`Origin` check, body cap and request timeout; they authenticate through `gate`.
    /// Without them `/` answers a short text.
    pub routes: Option<Router>,
}

/// Errors of the HTTP server.
#[derive(Debug, thiserror::Error)]
pub enum HttpServeError {
    /// The listener failed.
    #[error("cannot accept connections: {0}; restart ufo serve")]
    Accept(#[source] std::io::Error),
}

struct Shared {
    hosts: HostPolicy,
    gate: Arc<Gate>,
}

/// The peer address of a connection, put on each of its requests (an extension).
#[derive(Debug, Clone, Copy)]
pub struct Peer(pub SocketAddr);

/// Serve on `listener` until `shutdown` resolves; then stop accepting, end the MCP sessions
/// and wait at most `limits.shutdown_grace` for open connections.
pub async fn serve(
    listener: TcpListener,
    serve: HttpServe,
    shutdown: impl Future<Output = ()>,
) -> Result<(), HttpServeError> {
    let bound = listener.local_addr().map_err(HttpServeError::Accept)?;
    let limits = serve.limits.clone();
    let cancel = CancellationToken::new();
    let (router, endpoint) = router(&serve, bound, cancel.clone());
    tokio::spawn(sessions::sweep_revoked(
        endpoint,
        serve.gate.clone(),
        cancel.clone(),
    ));
    let acceptor = serve.tls.clone().map(tokio_rustls::TlsAcceptor::from);
    let table = conns::Connections::new(limits.max_connections);
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                // a client that went away between SYN and accept, or too many files open
                Err(e) => {
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let Some(conn) = table.admit() else {
            tracing::warn!(client = %peer.ip(), "too many authenticated connections; closing this one");
            drop(stream);
            continue;
        };
        let _ = stream.set_nodelay(true);
        tokio::spawn(serve_connection(
            conn,
            stream,
            peer,
            router.clone(),
            acceptor.clone(),
            graceful.watcher(),
            limits.clone(),
        ));
    }
    drop(listener);
    cancel.cancel();
    if tokio::time::timeout(limits.shutdown_grace, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!("connections still open after the shutdown grace; closing them");
    }
    Ok(())
}

/// Serve one admitted connection (after its TLS handshake, if any) until it ends, until the
/// server gives its slot to a new connection, or until `first_request_timeout` passes without
/// a valid token shown on it.
async fn serve_connection(
    conn: conns::Connection,
    stream: tokio::net::TcpStream,
    peer: SocketAddr,
    router: Router,
    acceptor: Option<tokio_rustls::TlsAcceptor>,
    watcher: hyper_util::server::graceful::Watcher,
    limits: Limits,
) {
    // each request gets the peer's address and is handled under the connection's mark, so a
    // successful token check marks the connection authenticated
    let mark = conn.mark();
    let service = hyper::service::service_fn(move |mut req: Request<hyper::body::Incoming>| {
        req.extensions_mut().insert(Peer(peer));
        let mut router = router.clone();
        let mark = mark.clone();
        async move {
            use tower::Service as _;
            conns::within(mark, router.call(req.map(Body::new))).await
        }
    });
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.idle_timeout)
        .max_header_size(limits.max_header_bytes)
        // the head is bounded above; the buffer may hold a little more of the body
        .max_buf_size(limits.max_header_bytes.saturating_add(8192).max(8192));
    let serving = async {
        match acceptor {
            None => {
                let conn = http.serve_connection(TokioIo::new(stream), service);
                let _ = watcher.watch(conn).await;
            }
            Some(acceptor) => {
                let handshake = acceptor.accept(stream);
                let tls = match tokio::time::timeout(limits.idle_timeout, handshake).await {
                    Ok(Ok(s)) => s,
                    Ok(Err(e)) => {
                        tracing::info!(client = %peer.ip(), error = %e, "TLS handshake failed");
                        return;
                    }
                    Err(_) => return,
                };
                let conn = http.serve_connection(TokioIo::new(tls), service);
                let _ = watcher.watch(conn).await;
            }
        }
    };
    let unauthenticated = async {
        tokio::time::sleep(limits.first_request_timeout).await;
        if conn.is_authenticated() {
            std::future::pending::<()>().await;
        }
    };
    let cut = conn.cut();
    tokio::select! {
        () = serving => {}
        () = cut.cancelled() => {
            tracing::debug!(client = %peer.ip(), "closed a connection without a token: its slot went to a new one");
        }
        () = unauthenticated => {
            tracing::debug!(client = %peer.ip(), "closed a connection that showed no valid token in time");
        }
    }
}

/// The routes: `/mcp` (authenticated MCP) and the binary's routes (else `/`, a short page),
/// all behind the `Host`/`Origin` check; and the `/mcp` endpoint, for the sweep of revoked
/// tokens' sessions.
fn router(
    serve: &HttpServe,
    bound: SocketAddr,
    cancel: CancellationToken,
) -> (Router, Arc<sessions::McpEndpoint>) {
    let shared = Arc::new(Shared {
        hosts: HostPolicy::new(bound, &serve.host_names, serve.tls.is_some()),
        gate: serve.gate.clone(),
    });
    let desktop = serve.desktop.clone();
    let allow_actions = serve.allow_actions;
    let server = DesktopServer::new(desktop, allow_actions)
        .with_shell(serve.allow_shell)
        .for_tokens();
    let manager = Arc::new(LocalSessionManager {
        sessions: Default::default(),
        session_config: SessionConfig {
            keep_alive: Some(Duration::from_secs(600)),
            ..SessionConfig::default()
        },
    });
    let mcp = StreamableHttpService::new(
        move || Ok(server.clone()),
        manager.clone(),
        StreamableHttpServerConfig {
            cancellation_token: cancel,
            ..StreamableHttpServerConfig::default()
        },
    );
    let limits = &serve.limits;
    let endpoint = sessions::McpEndpoint::new(mcp, manager, limits.max_mcp_sessions_per_token);
    let mcp_routes = Router::new()
        .route(
            "/mcp",
            axum::routing::any(sessions::handle).with_state(endpoint.clone()),
        )
        .layer(tower_http::timeout::TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            limits.request_timeout,
        ))
        .layer(middleware::from_fn_with_state(
            limits.max_body_bytes,
            cap_body,
        ))
        .route_layer(middleware::from_fn_with_state(shared.clone(), authenticate));
    let base = match serve.routes.clone() {
        Some(routes) => routes
            .layer(tower_http::timeout::TimeoutLayer::with_status_code(
                StatusCode::REQUEST_TIMEOUT,
                limits.request_timeout,
            ))
            .layer(middleware::from_fn_with_state(
                limits.max_body_bytes,
                cap_body,
            )),
        None => Router::new().route("/", axum::routing::get(index)),
    };
    let router = base
        .merge(mcp_routes)
        .layer(middleware::from_fn_with_state(shared, check_host_origin));
    (router, endpoint)
}

/// 413 for a body over `max` bytes: at once when its `Content-Length` says so, else as soon
/// as a chunked body passes `max` while the route reads it, whatever the route makes of the
/// read error (rmcp answers a failed read with 500).
async fn cap_body(State(max): State<usize>, req: Request, next: Next) -> Response {
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if declared.is_some_and(|n| n > max as u64) {
        return body_too_large(max);
    }
    let overflowed = Arc::new(AtomicBool::new(false));
    let flag = overflowed.clone();
    let req = req.map(|body| {
        let mut seen = 0usize;
        Body::from_stream(futures::StreamExt::map(
            body.into_data_stream(),
            move |chunk| {
                let chunk = chunk.map_err(axum::BoxError::from)?;
                seen = seen.saturating_add(chunk.len());
                if seen > max {
                    flag.store(true, Ordering::SeqCst);
                    return Err(axum::BoxError::from(format!(
                        "the request body is longer than {max} bytes"
                    )));
                }
                Ok(chunk)
            },
        ))
    });
    let response = next.run(req).await;
    if overflowed.load(Ordering::SeqCst) {
        return body_too_large(max);
    }
    response
}

fn body_too_large(max: usize) -> Response {
    (
        StatusCode::PAYLOAD_TOO_LARGE,
        format!("the request body is larger than {max} bytes; send less\n"),
    )
        .into_response()
}

async fn index() -> &'static str {
    "ufo serve: this desktop over MCP (streamable HTTP) at /mcp, with a bearer token.\n"
}

/// 403 unless `Host` names this server and `Origin`, when present, is the server's own.
async fn check_host_origin(
    State(shared): State<Arc<Shared>>,
    req: Request,
    next: Next,
) -> Response {
    let headers = req.headers();
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok());
    if !host.is_some_and(|h| shared.hosts.host_ok(h)) {
        tracing::warn!(client = %peer_ip(&req), host = ?host.map(short), "refused: Host does not name this server");
        return refuse(
            StatusCode::FORBIDDEN,
            "the Host header does not name this server; connect by its address or a name \
             given to `ufo serve --host-name`",
        );
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let origin = origin.to_str().unwrap_or("");
        if !shared.hosts.origin_ok(origin) {
            tracing::warn!(client = %peer_ip(&req), origin = %short(origin), "refused: foreign Origin");
            return refuse(
                StatusCode::FORBIDDEN,
                "requests from another origin (a web page) are refused",
            );
        }
    }
    next.run(req).await
}

/// 429 while the address is locked out; 401 without a valid bearer token (counted, and
/// logged without the token).
async fn authenticate(State(shared): State<Arc<Shared>>, req: Request, next: Next) -> Response {
    let ip = peer_ip(&req);
    let presented = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim);
    match shared.gate.check(ip, presented) {
        Ok(holder) => {
            tracing::debug!(client = %holder.principal.name, from = %ip, "authenticated");
            let mut req = req;
            req.extensions_mut().insert(holder);
            next.run(req).await
        }
        Err(Refusal::Locked(wait)) => locked_out(wait),
        Err(Refusal::Broken) => refuse(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the server cannot read its token file; see its log",
        ),
        Err(Refusal::BadToken(reason)) => {
            tracing::warn!(client = %ip, reason, "refused: authentication failed");
            let mut r = refuse(
                StatusCode::UNAUTHORIZED,
                "a valid bearer token is needed: `ufo serve token add NAME` on the server \
                 makes one; send it as `Authorization: Bearer TOKEN`",
            );
            r.headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            r
        }
    }
}

/// 429 with `Retry-After`: the address, its network or the token failed too often.
pub fn locked_out(wait: Duration) -> Response {
    let mut r = refuse(
        StatusCode::TOO_MANY_REQUESTS,
        "too many failed tokens from this address or its network, or with this token; wait \
         and use a valid token",
    );
    if let Ok(v) = HeaderValue::from_str(&wait.as_secs().max(1).to_string()) {
        r.headers_mut().insert(header::RETRY_AFTER, v);
    }
    r
}

/// The client address of a request (from its [`Peer`] extension; unspecified without one).
pub fn client_ip(extensions: &axum::http::Extensions) -> IpAddr {
    extensions
        .get::<Peer>()
        .map(|p| p.0.ip())
        .unwrap_or(IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED))
}

fn peer_ip(req: &Request) -> IpAddr {
    client_ip(req.extensions())
}

/// A header value cut for the log (an attacker's header must not flood it).
fn short(s: &str) -> String {
    s.chars().take(80).collect()
}

fn refuse(status: StatusCode, message: &'static str) -> Response {
    (status, format!("{message}\n")).into_response()
}
