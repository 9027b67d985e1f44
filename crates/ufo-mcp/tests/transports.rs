//! The MCP client against real servers: streamable HTTP (`@modelcontextprotocol/server-everything`
//! in its HTTP mode, on loopback) and stdio servers that hang or die.
//!
//! The npm server is installed by `scripts/test-deps.sh install_mcp_servers`; when it is
//! missing the test prints why and skips, unless `UFO_PEER_TESTS=1`, where it fails.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use ufo_desktop::testing::require_peer;

use serde_json::json;
use ufo_core::{ToolError, ToolProvider};
use ufo_mcp::{McpServerConfig, McpTools};

fn servers_dir() -> PathBuf {
    std::env::var_os("UFO_MCP_SERVERS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/test-deps/mcp"))
}

/// Kills the server process when the test ends, however it ends.
struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn streamable_http_server_tools_are_listed_and_called() {
    let Some(index) = require_peer(
        servers_dir().join("node_modules/@modelcontextprotocol/server-everything/dist/index.js"),
        "@modelcontextprotocol/server-everything",
        "install_mcp_servers",
    ) else {
        return;
    };
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
        l.local_addr().expect("addr").port()
    };
    let _server = Child(
        std::process::Command::new("node")
            .arg(&index)
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("node starts"),
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "the HTTP server did not listen");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let tools = McpTools::new([(
        "everything".to_string(),
        McpServerConfig {
            url: Some(format!("http://127.0.0.1:{port}/mcp")),
            apps: vec!["Writer".into()],
            timeout_ms: Some(10_000),
            ..McpServerConfig::default()
        },
    )])
    .expect("valid config");
    assert!(tools
        .tools_for("Calc")
        .await
        .expect("no servers")
        .is_empty());
    let listed = tools.tools_for("writer").await.expect("tools listed");
    let echo = listed
        .iter()
        .find(|t| t.name == "echo")
        .expect("echo is offered");
    assert_eq!(echo.source, "everything");
    assert!(tools.validate(echo, &json!({})).is_err());
    assert!(tools.validate(echo, &json!({"message": "hi"})).is_ok());
    let out = tools
        .call("Writer", "echo", &json!({"message": "over http"}))
        .await
        .expect("echo answers");
    assert!(out.contains("over http"), "{out}");
    assert!(matches!(
        tools.call("Writer", "no-such-tool", &json!({})).await,
        Err(ToolError::Unknown(_))
    ));
    tools.shutdown().await;
}

#[tokio::test]
async fn a_server_that_hangs_at_start_is_bounded_by_the_timeout() {
    let tools = McpTools::new([(
        "hung".to_string(),
        McpServerConfig {
            command: Some("sleep".into()),
            args: vec!["30".into()],
            timeout_ms: Some(500),
            ..McpServerConfig::default()
        },
    )])
    .expect("valid config");
    let started = Instant::now();
    let e = tools.tools_for("Writer").await.expect_err("no tools");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert!(e.to_string().contains("did not start within 500 ms"), "{e}");
    let e = tools
        .call("Writer", "anything", &json!({}))
        .await
        .expect_err("no such tool");
    assert!(matches!(e, ToolError::Unknown(_)), "{e}");
    tools.shutdown().await;
}

#[tokio::test]
async fn a_missing_program_and_a_bad_config_say_what_to_fix() {
    let tools = McpTools::new([(
        "gone".to_string(),
        McpServerConfig {
            command: Some("/nonexistent/mcp-server".into()),
            ..McpServerConfig::default()
        },
    )])
    .expect("valid config");
    let e = tools.tools_for("Writer").await.expect_err("cannot start");
    assert!(e.to_string().contains("[mcp.servers.gone]"), "{e}");
    let bad = McpTools::new([("both".to_string(), McpServerConfig::default())]);
    assert!(bad
        .err()
        .is_some_and(|e| e.to_string().contains("exactly one of `command`")));
}

fn alive(pid: &str) -> bool {
    Path::new("/proc").join(pid).exists()
        && std::fs::read_to_string(Path::new("/proc").join(pid).join("stat"))
            .map(|s| !s.contains(") Z "))
            .unwrap_or(false)
}

#[tokio::test]
async fn a_server_that_dies_is_a_failed_call_then_started_again_and_shut_down_at_the_end() {
    let Some(bin) = require_peer(
        servers_dir().join("node_modules/.bin/mcp-server-everything"),
        "@modelcontextprotocol/server-everything",
        "install_mcp_servers",
    ) else {
        return;
    };
    let tmp = tempfile::tempdir().expect("tempdir");
    let pidfile = tmp.path().join("pid");
    // The pid file comes through `env`, which is passed to the server's process.
    let script = format!(
        "echo $$ > \"$UFO_TEST_PIDFILE\"; exec '{}' stdio",
        bin.display()
    );
    let tools = McpTools::new([(
        "everything".to_string(),
        McpServerConfig {
            command: Some("sh".into()),
            args: vec!["-c".into(), script],
            env: [(
                "UFO_TEST_PIDFILE".to_string(),
                pidfile.display().to_string(),
            )]
            .into(),
            timeout_ms: Some(15_000),
            ..McpServerConfig::default()
        },
    )])
    .expect("valid config");
    let out = tools
        .call("Writer", "echo", &json!({"message": "one"}))
        .await
        .expect("echo answers");
    assert!(out.contains("one"), "{out}");
    let pid = std::fs::read_to_string(&pidfile)
        .expect("pid")
        .trim()
        .to_string();
    assert!(alive(&pid));
    let killed = std::process::Command::new("kill")
        .args(["-9", &pid])
        .status()
        .expect("kill runs");
    assert!(killed.success());
    tokio::time::sleep(Duration::from_millis(300)).await;
    let e = tools
        .call("Writer", "echo", &json!({"message": "two"}))
        .await;
    eprintln!("the call after the kill: {e:?}");
    // Either the dead connection is noticed before the call (and the server restarted) or
    // the call fails; it never hangs, and the next call works again.
    if let Err(e) = &e {
        assert!(matches!(e, ToolError::Failed { .. }), "{e}");
    }
    let out = tools
        .call("Writer", "echo", &json!({"message": "three"}))
        .await
        .expect("started again");
    assert!(out.contains("three"), "{out}");
    let pid2 = std::fs::read_to_string(&pidfile)
        .expect("pid")
        .trim()
        .to_string();
    assert_ne!(pid, pid2, "a new server process");
    tools.shutdown().await;
    let deadline = Instant::now() + Duration::from_secs(10);
    while alive(&pid2) {
        assert!(Instant::now() < deadline, "the server outlived shutdown");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Issue "Hardening", defect 13: a token in an MCP server's URL (userinfo or a query
/// parameter) is never printed in the connection error, whatever the HTTP library quotes.
#[tokio::test]
async fn credentials_in_an_mcp_url_are_not_printed() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
        l.local_addr().expect("addr").port()
    };
    let tools = McpTools::new([(
        "remote".to_string(),
        McpServerConfig {
            url: Some(format!(
                "http://user:secret@127.0.0.1:{port}/mcp?token=SECRET"
            )),
            timeout_ms: Some(5_000),
            ..McpServerConfig::default()
        },
    )])
    .expect("valid config");
    let e = tools
        .tools_for("Writer")
        .await
        .expect_err("nothing listens");
    let text = e.to_string();
    assert!(
        !text.contains("secret") && !text.contains("SECRET"),
        "{text}"
    );
    assert!(text.contains(&format!("127.0.0.1:{port}")), "{text}");
    tools.shutdown().await;
}
