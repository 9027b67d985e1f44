//! The console's logins: a token exchanged for a session cookie and a CSRF value. Only the
//! SHA-256 of a cookie is kept; each lasts [`LOGIN_TTL`]. A token keeps at most
//! [`MAX_LOGINS_PER_TOKEN`] logins (its own oldest goes first) and all tokens together at most
//! [`MAX_LOGINS`]; when those are full the oldest login of the token holding the most goes, so
//! one token's logins never log another token's holder out. Pure logic: the caller gives the
//! clock and the random bytes.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use base64::Engine as _;
use sha2::{Digest as _, Sha256};
use ufo_mcp::http::tokens::Holder;

/// Logins kept at once.
pub const MAX_LOGINS: usize = 64;
/// Logins one token keeps at once.
pub const MAX_LOGINS_PER_TOKEN: usize = 8;
/// How long a login lasts.
pub const LOGIN_TTL: Duration = Duration::from_secs(12 * 3600);

/// One logged-in page.
#[derive(Debug, Clone)]
pub struct Login {
    /// The value the page sends back in `X-CSRF-Token`.
    pub csrf: String,
    /// The token it was made with (its name, role and digest, checked again on every
    /// request, so a revoked token's logins end at once).
    pub holder: Holder,
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
    /// Keep a login for `holder` under `cookie` with `csrf`.
    pub fn open(&mut self, cookie: &str, csrf: String, holder: Holder, now: Instant) {
        self.by_cookie_hash
            .retain(|_, l| now.saturating_duration_since(l.created) < LOGIN_TTL);
        while self.count_of(&holder.token_id) >= MAX_LOGINS_PER_TOKEN {
            if !self.drop_oldest_of(&holder.token_id) {
                break;
            }
        }
        while self.by_cookie_hash.len() >= MAX_LOGINS {
            let Some(busiest) = self.busiest_token() else {
                break;
            };
            if !self.drop_oldest_of(&busiest) {
                break;
            }
        }
        self.by_cookie_hash.insert(
            digest(cookie),
            Login {
                csrf,
                holder,
                created: now,
            },
        );
    }

    fn count_of(&self, token_id: &str) -> usize {
        self.by_cookie_hash
            .values()
            .filter(|l| l.holder.token_id == token_id)
            .count()
    }

    /// The token holding the most logins, of those the one with the oldest login (whose
    /// oldest login goes when all are taken).
    fn busiest_token(&self) -> Option<String> {
        let mut per_token: HashMap<&str, (usize, Instant)> = HashMap::new();
        for l in self.by_cookie_hash.values() {
            let e = per_token
                .entry(l.holder.token_id.as_str())
                .or_insert((0, l.created));
            e.0 += 1;
            e.1 = e.1.min(l.created);
        }
        per_token
            .into_iter()
            .max_by_key(|(_, (n, oldest))| (*n, std::cmp::Reverse(*oldest)))
            .map(|(id, _)| id.to_string())
    }

    /// Remove `token_id`'s oldest login; false when it has none.
    fn drop_oldest_of(&mut self, token_id: &str) -> bool {
        let oldest = self
            .by_cookie_hash
            .iter()
            .filter(|(_, l)| l.holder.token_id == token_id)
            .min_by_key(|(_, l)| l.created)
            .map(|(k, _)| k.clone());
        match oldest {
            Some(k) => self.by_cookie_hash.remove(&k).is_some(),
            None => false,
        }
    }

    /// End every login made with `token_id` (its token was revoked).
    pub fn close_token(&mut self, token_id: &str) {
        self.by_cookie_hash
            .retain(|_, l| l.holder.token_id != token_id);
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
    use ufo_core::access::{Principal, Role};

    fn holder(name: &str) -> Holder {
        Holder {
            principal: Principal {
                name: name.into(),
                role: Role::User,
            },
            token_id: format!("id-{name}"),
        }
    }

    #[test]
    fn a_login_is_found_by_its_cookie_until_it_expires_or_closes() {
        let mut l = Logins::default();
        let t0 = Instant::now();
        l.open("c1", "x1".into(), holder("laptop"), t0);
        assert_eq!(l.find("c1", t0).map(|x| x.csrf), Some("x1".into()));
        assert!(l.find("c2", t0).is_none());
        assert!(l.find("c1", t0 + LOGIN_TTL).is_none(), "expired");
        l.open("c3", "x3".into(), holder("laptop"), t0);
        l.close("c3");
        assert!(l.find("c3", t0).is_none(), "closed");
        l.open("c4", "x4".into(), holder("laptop"), t0);
        l.open("c5", "x5".into(), holder("desk"), t0);
        l.close_token("id-laptop");
        assert!(l.find("c4", t0).is_none(), "its token was revoked");
        assert!(l.find("c5", t0).is_some(), "another token's login stays");
    }

    #[test]
    fn one_token_logging_in_again_and_again_never_logs_another_out() {
        let mut l = Logins::default();
        let t0 = Instant::now();
        l.open("alice", "x".into(), holder("alice"), t0);
        for i in 0..MAX_LOGINS * 3 {
            l.open(
                &format!("bob{i}"),
                "x".into(),
                holder("bob"),
                t0 + Duration::from_millis(1 + i as u64),
            );
        }
        assert!(l.find("alice", t0).is_some(), "alice is still logged in");
        assert_eq!(l.count_of("id-bob"), MAX_LOGINS_PER_TOKEN);
        assert!(
            l.find(&format!("bob{}", MAX_LOGINS * 3 - 1), t0).is_some(),
            "bob's newest login lives"
        );
        // many tokens filling every slot: the busiest token's oldest login goes first, so a
        // token with one login keeps it while others hold more
        for t in 0..MAX_LOGINS / 2 - 2 {
            for i in 0..MAX_LOGINS_PER_TOKEN {
                l.open(
                    &format!("t{t}-{i}"),
                    "x".into(),
                    holder(&format!("t{t}")),
                    t0 + Duration::from_secs(1 + (t * MAX_LOGINS_PER_TOKEN + i) as u64),
                );
            }
        }
        assert_eq!(l.by_cookie_hash.len(), MAX_LOGINS);
        assert!(
            l.find("alice", t0).is_some(),
            "a single login is never the one to go"
        );
    }

    #[test]
    fn logins_are_bounded_and_the_oldest_goes_first() {
        let mut l = Logins::default();
        let t0 = Instant::now();
        for i in 0..MAX_LOGINS + 5 {
            l.open(
                &format!("c{i}"),
                "x".into(),
                holder(&format!("n{i}")),
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
