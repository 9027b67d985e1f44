//! The console's logins: a token exchanged for a session cookie and a CSRF value. Only the
//! SHA-256 of a cookie is kept; at most [`MAX_LOGINS`] logins live at once (the oldest goes
//! first) and each lasts [`LOGIN_TTL`]. Pure logic: the caller gives the clock and the random
//! bytes.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use base64::Engine as _;
use sha2::{Digest as _, Sha256};

/// Logins kept at once.
pub const MAX_LOGINS: usize = 64;
/// How long a login lasts.
pub const LOGIN_TTL: Duration = Duration::from_secs(12 * 3600);

/// One logged-in page.
#[derive(Debug, Clone)]
pub struct Login {
    /// The value the page sends back in `X-CSRF-Token`.
    pub csrf: String,
    /// The token's client name.
    pub client: String,
    created: Instant,
}

/// The live logins.
#[derive(Debug, Default)]
pub struct Logins {
    by_cookie_hash: HashMap<String, Login>,
}

fn digest(cookie: &str) -> String {
    ufo_mcp::http::tokens::hex(&Sha256::digest(cookie.as_bytes()))
}

/// 32 random bytes as URL-safe base64.
pub fn random_value() -> Result<String, String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| format!("no random bytes from the system: {e}"))?;
    Ok(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes))
}

/// Whether two secrets are equal, in time that does not depend on where they differ.
pub fn same_secret(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

impl Logins {
    /// Keep a login for `client` under `cookie` with `csrf`.
    pub fn open(&mut self, cookie: &str, csrf: String, client: String, now: Instant) {
        self.by_cookie_hash
            .retain(|_, l| now.saturating_duration_since(l.created) < LOGIN_TTL);
        while self.by_cookie_hash.len() >= MAX_LOGINS {
            let Some(oldest) = self
                .by_cookie_hash
                .iter()
                .min_by_key(|(_, l)| l.created)
                .map(|(k, _)| k.clone())
            else {
                break;
            };
            self.by_cookie_hash.remove(&oldest);
        }
        self.by_cookie_hash.insert(
            digest(cookie),
            Login {
                csrf,
                client,
                created: now,
            },
        );
    }

    /// The login of `cookie`, unless it is unknown or expired.
    pub fn find(&mut self, cookie: &str, now: Instant) -> Option<Login> {
        let key = digest(cookie);
        let login = self.by_cookie_hash.get(&key)?;
        if now.saturating_duration_since(login.created) >= LOGIN_TTL {
            self.by_cookie_hash.remove(&key);
            return None;
        }
        Some(login.clone())
    }

    /// End the login of `cookie`.
    pub fn close(&mut self, cookie: &str) {
        self.by_cookie_hash.remove(&digest(cookie));
    }
}

/// The value of cookie `name` in a `Cookie` header.
pub fn cookie_value<'a>(header: &'a str, name: &str) -> Option<&'a str> {
    header.split(';').find_map(|pair| {
        let (k, v) = pair.trim().split_once('=')?;
        (k == name).then_some(v.trim())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_login_is_found_by_its_cookie_until_it_expires_or_closes() {
        let mut l = Logins::default();
        let t0 = Instant::now();
        l.open("c1", "x1".into(), "laptop".into(), t0);
        assert_eq!(l.find("c1", t0).map(|x| x.csrf), Some("x1".into()));
        assert!(l.find("c2", t0).is_none());
        assert!(l.find("c1", t0 + LOGIN_TTL).is_none(), "expired");
        l.open("c3", "x3".into(), "laptop".into(), t0);
        l.close("c3");
        assert!(l.find("c3", t0).is_none(), "closed");
    }

    #[test]
    fn logins_are_bounded_and_the_oldest_goes_first() {
        let mut l = Logins::default();
        let t0 = Instant::now();
        for i in 0..MAX_LOGINS + 5 {
            l.open(
                &format!("c{i}"),
                "x".into(),
                "n".into(),
                t0 + Duration::from_millis(i as u64),
            );
        }
        assert_eq!(l.by_cookie_hash.len(), MAX_LOGINS);
        assert!(l.find("c0", t0).is_none());
        assert!(l.find(&format!("c{}", MAX_LOGINS + 4), t0).is_some());
    }

    #[test]
    fn cookies_and_secrets() {
        assert_eq!(
            cookie_value("a=1; ufo_console=abc; b=2", "ufo_console"),
            Some("abc")
        );
        assert_eq!(cookie_value("xufo_console=abc", "ufo_console"), None);
        assert!(same_secret("abc", "abc"));
        assert!(!same_secret("abc", "abd"));
        assert!(!same_secret("abc", "ab"));
        let a = random_value().expect("random");
        assert_eq!(a.len(), 43);
        assert_ne!(a, random_value().expect("random"));
    }
}
