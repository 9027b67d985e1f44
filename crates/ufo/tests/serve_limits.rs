//! The bounds of `ufo serve` an adversary on the network tries first, through the real
//! binary on a simulated desktop (docs/serve.md, "Security defaults"): token guesses spread
//! over many source addresses.

use std::net::IpAddr;
use std::path::Path;
use std::time::Duration;

mod common;
use common::served::{new_token, ufo_at, Served};

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"test","version":"0"}}}"#;

fn desktop_spec() -> String {
    let file =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/scenarios/host_fail/desktop.json");
    format!("sim:{}", file.display())
}

fn serve(home: &Path, extra: &[&str]) -> Served {
    Served::start(ufo_at(home), &desktop_spec(), extra)
}

/// A client that connects from `from` (any 127.x.y.z is this machine on Linux).
fn client_from(from: Option<IpAddr>) -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .local_address(from)
        .build()
        .expect("client")
}

/// POST an MCP `initialize` with `token`; the status.
async fn initialize(client: &reqwest::Client, url: &str, token: &str) -> u16 {
    client
        .post(url)
        .bearer_auth(token)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .body(INITIALIZE)
        .send()
        .await
        .map(|r| r.status().as_u16())
        .unwrap_or_else(|e| panic!("no answer to an initialize: {e}"))
}

/// 500 guesses, ten from each of 127.0.0.2 … 127.0.0.51: no address reaches its own
/// lockout, but the network's count (loopback is one network) turns the guesses into 429s;
/// a valid token from a neighbour address is served all along.
#[tokio::test]
async fn guesses_from_fifty_addresses_get_429_and_a_valid_token_still_passes() {
    let home = tempfile::tempdir().expect("tempdir");
    let token = new_token(home.path(), "laptop");
    let server = serve(home.path(), &[]);
    let mut counts = std::collections::BTreeMap::<u16, usize>::new();
    for host in 2..=51u8 {
        let from = IpAddr::from([127, 0, 0, host]);
        let client = client_from(Some(from));
        for i in 0..10 {
            let guess = format!("ufo_guess-{host}-{i}");
            *counts
                .entry(initialize(&client, &server.url, &guess).await)
                .or_default() += 1;
        }
    }
    eprintln!("500 guesses answered: {counts:?}");
    let locked = counts.get(&429).copied().unwrap_or(0);
    let unauthorized = counts.get(&401).copied().unwrap_or(0);
    assert_eq!(locked + unauthorized, 500, "{counts:?}");
    assert!(unauthorized <= 30, "{counts:?}");
    assert!(locked >= 470, "{counts:?}");
    // an address that failed ten times itself is locked out, whatever it sends
    let guesser = client_from(Some(IpAddr::from([127, 0, 0, 2])));
    assert_eq!(initialize(&guesser, &server.url, &token).await, 429);
    // a valid token from any other address of the network passes
    for from in [[127, 0, 0, 1], [127, 0, 0, 52], [127, 1, 2, 3]] {
        let client = client_from(Some(IpAddr::from(from)));
        assert_eq!(
            initialize(&client, &server.url, &token).await,
            200,
            "a valid token from {from:?}"
        );
    }
}
