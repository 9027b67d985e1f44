//! The checks every request to `ufo serve` passes before it reaches MCP: the `Host` and
//! `Origin` headers must name this server (so a web page cannot reach it by DNS rebinding or
//! a cross-site request), and an address that keeps sending bad tokens is locked out for a
//! while. Pure logic, no I/O.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

/// The names a request may give in `Host` (and `Origin`) for this server.
#[derive(Debug, Clone)]
pub struct HostPolicy {
    /// Allowed host names, lower case; IPv6 addresses without brackets.
    names: Vec<String>,
    /// The port the server listens on.
    port: u16,
    /// Whether the server speaks TLS (the scheme an `Origin` must have).
    tls: bool,
}

impl HostPolicy {
    /// The policy of a server bound to `bound`: its address, `localhost` and `extra` names
    /// (`--host-name`).
    pub fn new(bound: SocketAddr, extra: &[String], tls: bool) -> Self {
        let mut names = vec![bound.ip().to_string(), "localhost".to_string()];
        for n in extra {
            let n = n.trim().trim_start_matches('[').trim_end_matches(']');
            if !n.is_empty() {
                names.push(n.to_ascii_lowercase());
            }
        }
        names.sort();
        names.dedup();
        Self {
            names,
            port: bound.port(),
            tls,
        }
    }

    /// The allowed names.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// Whether a `Host` header value names this server: an allowed name, and if a port is
    /// given, the server's port.
    pub fn host_ok(&self, host: &str) -> bool {
        match split_host_port(host) {
            Some((name, port)) => self.name_ok(&name) && port.unwrap_or(self.port) == self.port,
            None => false,
        }
    }

    /// Whether an `Origin` header value is this server's own: the server's scheme, an allowed
    /// name and the server's port (the scheme's default when none is written).
    pub fn origin_ok(&self, origin: &str) -> bool {
        let scheme = if self.tls { "https://" } else { "http://" };
        let Some(rest) = origin.strip_prefix(scheme) else {
            return false;
        };
        let rest = rest.strip_suffix('/').unwrap_or(rest);
        let Some((name, port)) = split_host_port(rest) else {
            return false;
        };
        let default = if self.tls { 443 } else { 80 };
        self.name_ok(&name) && port.unwrap_or(default) == self.port
    }

    fn name_ok(&self, name: &str) -> bool {
        self.names.iter().any(|n| n == name)
    }
}

/// `name[:port]` or `[v6]:port` → (lower-case name, port); `None` when malformed.
fn split_host_port(s: &str) -> Option<(String, Option<u16>)> {
    let (name, port) = if let Some(rest) = s.strip_prefix('[') {
        let (v6, after) = rest.split_once(']')?;
        let port = match after {
            "" => None,
            p => Some(p.strip_prefix(':')?),
        };
        (v6, port)
    } else {
        match s.split_once(':') {
            Some((n, p)) => (n, Some(p)),
            None => (s, None),
        }
    };
    let valid = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '_');
    if name.is_empty() || !name.chars().all(valid) {
        return None;
    }
    let port = match port {
        None => None,
        Some(p) if !p.is_empty() && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit()) => {
            Some(p.parse::<u16>().ok()?)
        }
        Some(_) => return None,
    };
    Some((name.to_ascii_lowercase(), port))
}

/// Locks out a client address after too many failed authentications in a window.
#[derive(Debug)]
pub struct FailureLimiter {
    max_failures: u32,
    window: Duration,
    /// Bounded: at most `MAX_TRACKED` addresses; the oldest entries go first.
    seen: HashMap<IpAddr, (u32, Instant)>,
}

/// How many client addresses the limiter remembers at once.
const MAX_TRACKED: usize = 4096;

impl FailureLimiter {
    /// A limiter allowing `max_failures` failures per `window` per address.
    pub fn new(max_failures: u32, window: Duration) -> Self {
        Self {
            max_failures,
            window,
            seen: HashMap::new(),
        }
    }

    /// `Some(wait)` while `ip` is locked out.
    pub fn locked(&mut self, ip: IpAddr, now: Instant) -> Option<Duration> {
        let (count, start) = *self.seen.get(&ip)?;
        let elapsed = now.saturating_duration_since(start);
        if elapsed >= self.window {
            self.seen.remove(&ip);
            return None;
        }
        (count >= self.max_failures).then(|| self.window - elapsed)
    }

    /// Count a failed authentication from `ip`.
    pub fn fail(&mut self, ip: IpAddr, now: Instant) {
        if self.seen.len() >= MAX_TRACKED && !self.seen.contains_key(&ip) {
            let window = self.window;
            self.seen
                .retain(|_, (_, start)| now.saturating_duration_since(*start) < window);
            if self.seen.len() >= MAX_TRACKED {
                if let Some(oldest) = self
                    .seen
                    .iter()
                    .min_by_key(|(_, (_, s))| *s)
                    .map(|(k, _)| *k)
                {
                    self.seen.remove(&oldest);
                }
            }
        }
        let entry = self.seen.entry(ip).or_insert((0, now));
        if now.saturating_duration_since(entry.1) >= self.window {
            *entry = (0, now);
        }
        entry.0 = entry.0.saturating_add(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn policy() -> HostPolicy {
        HostPolicy::new(
            "127.0.0.1:8377".parse().expect("addr"),
            &["lab.example".to_string()],
            false,
        )
    }

    #[test]
    fn host_names_the_server() {
        let p = policy();
        for ok in [
            "127.0.0.1:8377",
            "localhost:8377",
            "LOCALHOST",
            "lab.example:8377",
        ] {
            assert!(p.host_ok(ok), "{ok}");
        }
        for bad in [
            "evil.example",
            "evil.example:8377",
            "localhost:80",
            "localhost.evil.example",
            "localhost.",
            "127.0.0.1:8377@evil.example",
            "",
            "localhost:",
            "localhost:8377:1",
            "[::1]:8377",
        ] {
            assert!(!p.host_ok(bad), "{bad}");
        }
    }

    #[test]
    fn origin_is_the_server_own() {
        let p = policy();
        assert!(p.origin_ok("http://localhost:8377"));
        assert!(p.origin_ok("http://127.0.0.1:8377"));
        assert!(!p.origin_ok("https://localhost:8377"), "scheme differs");
        assert!(!p.origin_ok("http://localhost"), "port 80 differs");
        assert!(!p.origin_ok("http://evil.example:8377"));
        assert!(!p.origin_ok("null"));
        let v6 = HostPolicy::new("[::1]:9000".parse().expect("addr"), &[], true);
        assert!(v6.host_ok("[::1]:9000"));
        assert!(v6.origin_ok("https://[::1]:9000"));
        assert!(!v6.origin_ok("https://[::2]:9000"));
    }

    #[test]
    fn limiter_locks_after_max_and_forgets_after_window() {
        let mut l = FailureLimiter::new(3, Duration::from_secs(60));
        let ip: IpAddr = "10.0.0.1".parse().expect("ip");
        let t0 = Instant::now();
        for _ in 0..3 {
            assert!(l.locked(ip, t0).is_none());
            l.fail(ip, t0);
        }
        assert!(l.locked(ip, t0 + Duration::from_secs(1)).is_some());
        let other: IpAddr = "10.0.0.2".parse().expect("ip");
        assert!(l.locked(other, t0).is_none(), "per address");
        assert!(l.locked(ip, t0 + Duration::from_secs(61)).is_none());
    }

    proptest! {
        /// Whatever a client writes, an accepted `Host` or `Origin` names an allowed name.
        #[test]
        fn never_accepts_another_name(
            s in "(https?://)?\\[?[a-zA-Z0-9.:@_-]{0,24}\\]?(:[0-9]{0,6})?/?",
            prefix in "(|localhost|127\\.0\\.0\\.1|lab\\.example)",
        ) {
            let p = policy();
            for candidate in [s.clone(), format!("{prefix}{s}"), format!("http://{prefix}{s}")] {
                let allowed = |rest: &str| {
                    let (name, _) = split_host_port(rest).expect("accepted means well-formed");
                    p.names().contains(&name)
                };
                if p.host_ok(&candidate) {
                    prop_assert!(allowed(&candidate), "{candidate}");
                }
                if p.origin_ok(&candidate) {
                    let rest = candidate.trim_start_matches("http://");
                    prop_assert!(allowed(rest.trim_end_matches('/')), "{candidate}");
                    prop_assert!(["localhost", "127.0.0.1", "lab.example"]
                        .iter()
                        .any(|n| rest.to_ascii_lowercase().starts_with(n)));
                }
            }
        }
    }
}
