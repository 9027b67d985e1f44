//! `ufo serve`: this device's desktop over MCP streamable HTTP, for clients on this machine
//! or others (docs/serve.md). The HTTP side, its checks and TLS are in `ufo_mcp::http`; this
//! module reads the command line, refuses unsafe set-ups, prints the address and runs it until
//! SIGTERM or Ctrl-C.
//!
//! Per user: tokens and the self-signed certificate under `$XDG_DATA_HOME/ufo/serve/`.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use crate::cli::serve::{ServeArgs, ServeCommand, TokenCommand};
use ufo_mcp::http::tls::{self, ServerTls};
use ufo_mcp::http::tokens::TokenFile;
use ufo_mcp::http::{Gate, HttpServe, Limits};

/// `$XDG_DATA_HOME/ufo/serve` (or `~/.local/share/ufo/serve`).
fn serve_dir() -> anyhow::Result<PathBuf> {
    let base = match std::env::var_os("XDG_DATA_HOME").filter(|v| !v.is_empty()) {
        Some(d) => PathBuf::from(d),
        None => match std::env::var_os("HOME").filter(|v| !v.is_empty()) {
            Some(h) => PathBuf::from(h).join(".local/share"),
            None => anyhow::bail!("neither XDG_DATA_HOME nor HOME is set; set one of them"),
        },
    };
    Ok(base.join("ufo").join("serve"))
}

fn token_file(dir: &Path) -> TokenFile {
    TokenFile::new(dir.join("tokens.json"))
}

/// Run `ufo serve ...`.
pub async fn run(args: ServeArgs) -> ExitCode {
    let dir = match serve_dir() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("error: {e:#}");
            return ExitCode::from(crate::exit::EXIT_USAGE);
        }
    };
    match &args.command {
        Some(ServeCommand::Token(t)) => tokens(t, &token_file(&dir)),
        None => serve(args, &dir).await,
    }
}

fn tokens(cmd: &TokenCommand, file: &TokenFile) -> ExitCode {
    let done = match cmd {
        TokenCommand::Add { name, role } => {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0);
            file.add(name, *role, now).map(|token| {
                println!(
                    "token for {name:?}, role {role} (shown once; the server keeps only its hash):"
                );
                println!("{token}");
            })
        }
        TokenCommand::List => file.list().map(|list| {
            if list.is_empty() {
                println!("no tokens; add one with `ufo serve token add NAME`");
            }
            for t in list {
                println!("{}\t{}\tcreated {}", t.name, t.role, t.created);
            }
        }),
        TokenCommand::Revoke { name } => file.revoke(name).map(|()| {
            println!("revoked the token of {name:?}");
        }),
    };
    match done {
        Ok(()) => ExitCode::SUCCESS,
        Err(e @ ufo_mcp::http::tokens::TokenError::Io { .. }) => {
            eprintln!("error: {e}");
            ExitCode::from(3)
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(crate::exit::EXIT_USAGE)
        }
    }
}

/// Why `ufo serve` will not start on this address (`None`: it may).
fn unsafe_setup(listen: SocketAddr, tls: bool, tokens: usize) -> Option<String> {
    if listen.ip().is_loopback() {
        return None;
    }
    if !tls {
        return Some(format!(
            "listening on {listen} (not a loopback address) needs TLS: add --tls (a \
             self-signed certificate, fingerprint printed for clients to pin) or \
             --tls-cert FILE --tls-key FILE"
        ));
    }
    if tokens == 0 {
        return Some(format!(
            "listening on {listen} (not a loopback address) needs at least one client token: \
             run `ufo serve token add NAME` first"
        ));
    }
    None
}

/// Refuse an unsafe set-up (the reason), and warn of one that will refuse every request.
fn check_setup(args: &ServeArgs, tokens: &TokenFile) -> Result<(), String> {
    let count = tokens.list().map_err(|e| e.to_string())?.len();
    let use_tls = args.tls || args.tls_cert.is_some();
    if let Some(why) = unsafe_setup(args.listen, use_tls, count) {
        return Err(why);
    }
    if count == 0 {
        eprintln!(
            "warning: no client tokens yet: every request will be refused (401); add one with \
             `ufo serve token add NAME`"
        );
    }
    if args.listen.ip().is_unspecified() && args.host_names.is_empty() {
        eprintln!(
            "warning: listening on {} accepts only requests whose Host is localhost or that \
             address; give each name or address clients use with --host-name",
            args.listen.ip()
        );
    }
    Ok(())
}

/// The desktop served (`--desktop`), with the `[launch]` table of the configuration.
async fn open_served(
    spec: &str,
    launch: &[(String, String)],
) -> anyhow::Result<Arc<dyn ufo_core::Desktop>> {
    let vision = crate::sight::VisionSettings::from_env(None)?;
    let d = crate::desktop::open_desktop(spec, launch, &crate::desktop::Remote::default(), &vision)
        .await?;
    Ok(Arc::from(d))
}

async fn serve(args: ServeArgs, dir: &Path) -> ExitCode {
    let usage = |msg: String| {
        eprintln!("error: {msg}");
        ExitCode::from(crate::exit::EXIT_USAGE)
    };
    let tokens = token_file(dir);
    let limits = Limits::default();
    if let Err(why) = check_setup(&args, &tokens) {
        return usage(why);
    }
    let gate = Arc::new(Gate::new(tokens, &limits));
    let tls = match load_tls(&args, dir) {
        Ok(t) => t,
        Err(e) => return usage(e.to_string()),
    };
    let launch = match crate::config::settings::launch_from_file(args.config.as_deref()) {
        Ok(l) => l,
        Err(e) => return usage(format!("{e:#}")),
    };
    let listener = match tokio::net::TcpListener::bind(args.listen).await {
        Ok(l) => l,
        Err(e) => {
            return usage(format!(
                "cannot listen on {}: {e}; choose another --listen address or port",
                args.listen
            ))
        }
    };
    let desktop = match open_served(&args.desktop, &launch).await {
        Ok(d) => d,
        Err(e) => return usage(format!("{e:#}")),
    };
    let bound = match listener.local_addr() {
        Ok(a) => a,
        Err(e) => return usage(format!("cannot read the bound address: {e}")),
    };
    let shutdown = shutdown_signal();
    if let Some(t) = &tls {
        println!("fingerprint {}", tls::format_fingerprint(&t.fingerprint));
    }
    let console = match console(&args, gate.clone(), tls.is_some()) {
        Ok(c) => c,
        Err(e) => return usage(format!("{e:#}")),
    };
    let scheme = if tls.is_some() { "https" } else { "http" };
    println!("listening {scheme}://{bound}/mcp");
    println!("console {scheme}://{bound}/");
    init_log();
    let config = HttpServe {
        desktop,
        allow_actions: args.allow_actions,
        allow_shell: args.allow_shell,
        host_names: args.host_names.clone(),
        tls: tls.map(|t| t.config),
        gate,
        limits,
        routes: Some(console.router()),
    };
    let served = ufo_mcp::http::serve(listener, config, shutdown).await;
    console.stop().await;
    match served {
        Ok(()) => {
            eprintln!("ufo serve: stopped");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(3)
        }
    }
}

/// The web console: its sessions run this same binary in the runs folder, on this server's
/// desktop, with the models `--llm` allows.
fn console(
    args: &ServeArgs,
    gate: Arc<Gate>,
    tls: bool,
) -> anyhow::Result<Arc<crate::console_web::WebConsole>> {
    use anyhow::Context as _;
    let runs = match &args.runs {
        Some(r) => r.clone(),
        None => crate::config::settings::runs_dir_from_file(
            args.config.as_deref().unwrap_or(Path::new("ufo.toml")),
        )?,
    };
    std::fs::create_dir_all(&runs).with_context(|| {
        format!(
            "cannot create the runs folder {}; pass --runs DIR",
            runs.display()
        )
    })?;
    let runs = runs.canonicalize().unwrap_or(runs);
    let exe = std::env::current_exe().context("cannot find the ufo binary to start sessions")?;
    let config = match &args.config {
        Some(c) => Some(c.canonicalize().unwrap_or_else(|_| c.clone())),
        None => Path::new("ufo.toml").canonicalize().ok(),
    };
    if args.max_sessions == 0 || args.max_sessions_per_token == 0 {
        anyhow::bail!("--max-sessions and --max-sessions-per-token must be at least 1");
    }
    let allowed = crate::console_web::Allowed {
        exe,
        runs,
        desktop: args.desktop.clone(),
        llms: args.llms.clone(),
        config,
        max_running: args.max_sessions,
        max_per_token: args.max_sessions_per_token,
        devices: args.devices.clone(),
        flags: ufo_core::access::ServerFlags {
            models: !args.llms.is_empty(),
            actions: args.allow_actions,
            shell: args.allow_shell,
        },
    };
    Ok(crate::console_web::WebConsole::new(allowed, gate, tls))
}

fn load_tls(args: &ServeArgs, dir: &Path) -> Result<Option<ServerTls>, tls::TlsError> {
    if let (Some(cert), Some(key)) = (&args.tls_cert, &args.tls_key) {
        return tls::load_pem(cert, key).map(Some);
    }
    if !args.tls {
        return Ok(None);
    }
    let mut names = vec!["localhost".to_string(), args.listen.ip().to_string()];
    names.extend(args.host_names.iter().cloned());
    tls::self_signed(&dir.join("tls"), &names).map(Some)
}

/// The server's log on stderr: refusals (never a token), connections, errors. `UFO_LOG`
/// overrides the level.
fn init_log() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("UFO_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        // the served desktop's texts and errors, secrets hidden and made inert as in ufo run
        .fmt_fields(crate::logging::inert_fields())
        .with_writer(std::io::stderr)
        .with_env_filter(filter)
        .try_init();
}

/// Resolves on the first SIGTERM or SIGINT. The handlers are installed now, before the
/// address is printed, so a signal sent as soon as the server is up is not lost.
fn shutdown_signal() -> impl std::future::Future<Output = ()> {
    use tokio::signal::unix::{signal, SignalKind};
    let term = signal(SignalKind::terminate());
    let int = signal(SignalKind::interrupt());
    async move {
        match (term, int) {
            (Ok(mut t), Ok(mut i)) => {
                tokio::select! {
                    _ = t.recv() => {}
                    _ = i.recv() => {}
                }
            }
            // no signal handling: serve until killed
            _ => std::future::pending::<()>().await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_may_be_plain_other_addresses_need_tls_and_a_token() {
        let lo: SocketAddr = "127.0.0.1:0".parse().expect("addr");
        let any: SocketAddr = "0.0.0.0:0".parse().expect("addr");
        assert!(unsafe_setup(lo, false, 0).is_none());
        assert!(unsafe_setup(any, false, 1)
            .expect("refused")
            .contains("--tls"));
        assert!(unsafe_setup(any, true, 0)
            .expect("refused")
            .contains("token add"));
        assert!(unsafe_setup(any, true, 1).is_none());
    }
}
