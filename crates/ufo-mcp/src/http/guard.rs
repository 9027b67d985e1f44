//! The checks every request to `ufo serve` passes before it reaches MCP: the `Host` and
//! `Origin` headers must name this server (so a web page cannot reach it by DNS rebinding or
//! a cross-site request), and clients that keep sending bad tokens are locked out for a
//! while ([`Lockout`]). Pure logic, no I/O.

use std::collections::HashMap;
use std::hash::Hash;
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

/// Counts failures per key in a fixed window that starts at a key's first failure; a key
/// with `max_failures` in its window is locked until the window is over.
#[derive(Debug)]
pub struct FailureLimiter<K> {
    max_failures: u32,
    window: Duration,
    /// Bounded: at most `MAX_TRACKED` keys; expired, then the oldest entries go first.
    seen: HashMap<K, (u32, Instant)>,
}

/// How many keys (addresses, networks, token digests) a limiter remembers at once.
const MAX_TRACKED: usize = 4096;

impl<K: Eq + Hash + Copy> FailureLimiter<K> {
    /// A limiter allowing `max_failures` failures per `window` per key.
    pub fn new(max_failures: u32, window: Duration) -> Self {
        Self {
            max_failures,
            window,
            seen: HashMap::new(),
        }
    }

    /// `Some(wait)` while `key` is locked out.
    pub fn locked(&mut self, key: K, now: Instant) -> Option<Duration> {
        let (count, start) = *self.seen.get(&key)?;
        let elapsed = now.saturating_duration_since(start);
        if elapsed >= self.window {
            self.seen.remove(&key);
            return None;
        }
        (count >= self.max_failures).then(|| self.window - elapsed)
    }

    /// Count a failure of `key`.
    pub fn fail(&mut self, key: K, now: Instant) {
        if self.seen.len() >= MAX_TRACKED && !self.seen.contains_key(&key) {
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
        let entry = self.seen.entry(key).or_insert((0, now));
        if now.saturating_duration_since(entry.1) >= self.window {
            *entry = (0, now);
        }
        entry.0 = entry.0.saturating_add(1);
    }

    /// How many keys it remembers.
    pub fn tracked(&self) -> usize {
        self.seen.len()
    }
}

/// The network an address belongs to, for counting failed tokens: IPv4 /24, IPv6 /64, and
/// every loopback address as one (on Linux a process may send from any 127.x.y.z).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Network {
    /// 127.0.0.0/8 and ::1.
    Loopback,
    /// The first three octets.
    V4([u8; 3]),
    /// The first eight bytes.
    V6([u8; 8]),
}

impl Network {
    /// The network of `ip` (an IPv4-mapped IPv6 address counts as its IPv4 address).
    pub fn of(ip: IpAddr) -> Network {
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(ip),
            v4 => v4,
        };
        if ip.is_loopback() {
            return Network::Loopback;
        }
        match ip {
            IpAddr::V4(v4) => {
                let [a, b, c, _] = v4.octets();
                Network::V4([a, b, c])
            }
            IpAddr::V6(v6) => {
                let o = v6.octets();
                Network::V6([o[0], o[1], o[2], o[3], o[4], o[5], o[6], o[7]])
            }
        }
    }
}

/// The bounds of a [`Lockout`].
#[derive(Debug, Clone, Copy)]
pub struct LockoutLimits {
    /// Failures from one address before it is locked out.
    pub per_address: u32,
    /// Failures from one network before its further bad tokens answer 429.
    pub per_network: u32,
    /// Failures with one token (its digest) before it answers 429 unchecked.
    pub per_token: u32,
    /// The window the counts are kept for.
    pub window: Duration,
}

/// The lockout of clients that keep presenting bad tokens (docs/serve.md, "Guessing
/// tokens"). Failures are counted per source address, per network ([`Network`]) and per
/// token presented (its SHA-256), each in its own window:
///
/// - an address with `per_address` failures is locked: every request from it is refused
///   (429), whatever token it carries;
/// - a token with `per_token` failures is refused (429) without being checked again;
/// - from a network with `per_network` failures, a token that fails the check answers 429
///   instead of 401 (and still counts).
///
/// A valid token is never counted, so neither a network's count nor a token count ever
/// refuses it: a flood from a neighbour address cannot lock a token holder out.
#[derive(Debug)]
pub struct Lockout {
    address: FailureLimiter<IpAddr>,
    network: FailureLimiter<Network>,
    token: FailureLimiter<[u8; 32]>,
}

impl Lockout {
    /// A lockout with these bounds.
    pub fn new(limits: LockoutLimits) -> Self {
        Self {
            address: FailureLimiter::new(limits.per_address, limits.window),
            network: FailureLimiter::new(limits.per_network, limits.window),
            token: FailureLimiter::new(limits.per_token, limits.window),
        }
    }

    /// Before the token is checked: `Some(wait)` (answer 429) while the address or the token
    /// presented (its digest) is locked out.
    pub fn before(
        &mut self,
        ip: IpAddr,
        token: Option<&[u8; 32]>,
        now: Instant,
    ) -> Option<Duration> {
        let address = self.address.locked(ip, now);
        let token = token.and_then(|t| self.token.locked(*t, now));
        address.max(token)
    }

    /// The token failed the check: count it against the address, its network and the token,
    /// and `Some(wait)` (answer 429 rather than 401) when the network was locked already.
    pub fn failed(
        &mut self,
        ip: IpAddr,
        token: Option<&[u8; 32]>,
        now: Instant,
    ) -> Option<Duration> {
        let network = Network::of(ip);
        let locked = self.network.locked(network, now);
        self.address.fail(ip, now);
        self.network.fail(network, now);
        if let Some(t) = token {
            self.token.fail(*t, now);
        }
        locked
    }

    /// How many keys it remembers in all (bounded).
    pub fn tracked(&self) -> usize {
        self.address.tracked() + self.network.tracked() + self.token.tracked()
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

    fn lockout() -> Lockout {
        Lockout::new(LockoutLimits {
            per_address: 10,
            per_network: 30,
            per_token: 10,
            window: Duration::from_secs(60),
        })
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().expect("ip")
    }

    #[test]
    fn networks_are_slash_24_slash_64_and_all_loopback() {
        assert_eq!(Network::of(ip("127.0.0.1")), Network::Loopback);
        assert_eq!(Network::of(ip("127.45.3.9")), Network::Loopback);
        assert_eq!(Network::of(ip("::1")), Network::Loopback);
        assert_eq!(Network::of(ip("::ffff:127.0.0.2")), Network::Loopback);
        assert_eq!(Network::of(ip("10.1.2.3")), Network::of(ip("10.1.2.250")));
        assert_ne!(Network::of(ip("10.1.2.3")), Network::of(ip("10.1.3.3")));
        assert_eq!(
            Network::of(ip("::ffff:10.1.2.3")),
            Network::of(ip("10.1.2.9"))
        );
        assert_eq!(
            Network::of(ip("2001:db8:1:2::1")),
            Network::of(ip("2001:db8:1:2:ffff::9"))
        );
        assert_ne!(
            Network::of(ip("2001:db8:1:2::1")),
            Network::of(ip("2001:db8:1:3::1"))
        );
    }

    /// The case: ten guesses from each of 50 loopback addresses. No address is
    /// locked, the network is after 30, and a valid token from any address but a locked one
    /// is never refused.
    #[test]
    fn guesses_spread_over_a_network_turn_into_429_but_never_lock_out_a_valid_token() {
        let mut l = lockout();
        let now = Instant::now();
        let mut unauthorized = 0;
        for host in 2..=51u8 {
            let from = IpAddr::from([127, 0, 0, host]);
            for i in 0..10u8 {
                let guess = [
                    host, i, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                    0, 0, 0, 0, 0, 0, 0,
                ];
                assert!(l.before(from, Some(&guess), now).is_none());
                if l.failed(from, Some(&guess), now).is_none() {
                    unauthorized += 1;
                }
            }
        }
        assert_eq!(unauthorized, 30);
        let valid = [7u8; 32];
        assert!(l.before(ip("127.0.0.1"), Some(&valid), now).is_none());
        assert!(l.before(ip("127.0.0.52"), Some(&valid), now).is_none());
        assert!(l.before(ip("127.0.0.1"), None, now).is_none());
        // the window ends: all forgotten
        let later = now + Duration::from_secs(61);
        assert!(l.failed(ip("127.0.0.2"), None, later).is_none());
    }

    #[test]
    fn one_address_is_locked_after_ten_and_one_token_after_ten() {
        let mut l = lockout();
        let now = Instant::now();
        for _ in 0..10 {
            assert!(l.before(ip("10.0.0.1"), None, now).is_none());
            assert!(l.failed(ip("10.0.0.1"), None, now).is_none());
        }
        assert!(
            l.before(ip("10.0.0.1"), Some(&[1; 32]), now).is_some(),
            "whatever token"
        );
        assert!(
            l.before(ip("10.0.0.2"), Some(&[1; 32]), now).is_none(),
            "a neighbour"
        );
        // one stale token tried from ten networks is refused unchecked from then on
        let stale = [9u8; 32];
        for n in 0..10u8 {
            let from = IpAddr::from([10, n + 1, 0, 1]);
            assert!(l.before(from, Some(&stale), now).is_none());
            l.failed(from, Some(&stale), now);
        }
        assert!(l.before(ip("192.168.1.1"), Some(&stale), now).is_some());
        assert!(l.before(ip("192.168.1.1"), Some(&[8; 32]), now).is_none());
    }

    #[test]
    fn the_lockout_remembers_a_bounded_number_of_keys() {
        let mut l = lockout();
        let now = Instant::now();
        for i in 0..20_000u32 {
            let [a, b, c, d] = i.to_be_bytes();
            let mut token = [0u8; 32];
            token[..4].copy_from_slice(&[a, b, c, d]);
            l.failed(IpAddr::from([10, b, c, d]), Some(&token), now);
        }
        assert!(l.tracked() <= 3 * MAX_TRACKED, "{}", l.tracked());
    }

    fn any_ip() -> impl Strategy<Value = IpAddr> {
        prop_oneof![
            (0u8..4, 0u8..4).prop_map(|(c, d)| IpAddr::from([127, 0, c, d])),
            (0u8..3, 0u8..4).prop_map(|(c, d)| IpAddr::from([10, 0, c, d])),
            (0u16..3, 0u16..3).prop_map(|(g, h)| IpAddr::from([0x2001, 0xdb8, 0, g, 0, 0, 0, h])),
        ]
    }

    proptest! {
        /// Whatever others send (any addresses, any bad tokens, in any order), a request from
        /// an address that did not fail itself, with a token that never failed (a valid one
        /// never does), is checked, not refused.
        #[test]
        fn a_valid_token_is_never_locked_out_by_others(
            failures in proptest::collection::vec((any_ip(), proptest::option::of(0u8..6), 0u64..90), 0..400),
            me in any_ip(),
        ) {
            let mut l = lockout();
            let t0 = Instant::now();
            let mut last = t0;
            for (from, token, at) in &failures {
                if *from == me {
                    continue;
                }
                let now = t0 + Duration::from_secs(*at);
                last = last.max(now);
                let token = token.map(|t| [t; 32]);
                if l.before(*from, token.as_ref(), now).is_none() {
                    l.failed(*from, token.as_ref(), now);
                }
            }
            prop_assert!(l.before(me, Some(&[255; 32]), last).is_none());
        }

        /// Within one window, a network gets at most `per_network` 401s and an address at most
        /// `per_address`, however the guesses are spread over its addresses and tokens.
        #[test]
        fn a_network_gets_a_bounded_number_of_401s_per_window(
            guesses in proptest::collection::vec((0u8..40, proptest::option::of(0u8..20)), 0..300),
        ) {
            let mut l = lockout();
            let now = Instant::now();
            let mut per_address = HashMap::<u8, u32>::new();
            let mut total = 0u32;
            for (host, token) in guesses {
                let from = IpAddr::from([127, 0, 0, host]);
                let token = token.map(|t| [t; 32]);
                if l.before(from, token.as_ref(), now).is_some() {
                    continue;
                }
                if l.failed(from, token.as_ref(), now).is_none() {
                    total += 1;
                    *per_address.entry(host).or_default() += 1;
                }
            }
            prop_assert!(total <= 30);
            prop_assert!(per_address.values().all(|n| *n <= 10));
        }
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
