//! The bearer-token check every route of `ufo serve` goes through ([`Gate`]), with the
//! lockout of clients that keep failing it.

use std::collections::HashSet;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use sha2::{Digest as _, Sha256};
use ufo_core::access::Principal;

use super::conns;
use super::guard::{Lockout, LockoutLimits};
use super::limits::Limits;
use super::tokens::{Holder, TokenFile};

/// The bearer-token check of the server and the lockout of clients that keep failing it,
/// one for every route (so failures at `/mcp` and at a login count together).
pub struct Gate {
    tokens: TokenFile,
    lockout: Mutex<Lockout>,
}

/// Why [`Gate::check`] refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The address, its network or the token failed too often; it may try again after this
    /// long.
    Locked(Duration),
    /// No token or an unknown one (counted as a failure).
    BadToken(&'static str),
    /// The token file cannot be read (see the log).
    Broken,
}

impl Gate {
    /// A gate over `tokens` with the lockout bounds of `limits`.
    pub fn new(tokens: TokenFile, limits: &Limits) -> Self {
        Self {
            tokens,
            lockout: Mutex::new(Lockout::new(LockoutLimits {
                per_address: limits.max_failures,
                per_network: limits.max_network_failures,
                per_token: limits.max_failures,
                window: limits.failure_window,
            })),
        }
    }

    /// The token's holder when `presented` is a valid token and neither `ip` nor the token is
    /// locked out; a missing or unknown token counts against `ip`, its network and the token
    /// ([`Lockout`]: from a network that failed too often, it answers `Locked`). A valid
    /// token also marks the connection the request came on as authenticated ([`conns`]).
    pub fn check(&self, ip: IpAddr, presented: Option<&str>) -> Result<Holder, Refusal> {
        let now = Instant::now();
        let digest: Option<[u8; 32]> = presented.map(|t| Sha256::digest(t.as_bytes()).into());
        let locked = self
            .lockout
            .lock()
            .map(|mut l| l.before(ip, digest.as_ref(), now))
            .unwrap_or(None);
        if let Some(wait) = locked {
            return Err(Refusal::Locked(wait));
        }
        let outcome = match presented {
            None => Err("no token"),
            Some(token) => match self.tokens.check(token) {
                Ok(Some(holder)) => Ok(holder),
                Ok(None) => Err("unknown token"),
                Err(e) => {
                    tracing::error!(error = %e, "cannot check tokens");
                    return Err(Refusal::Broken);
                }
            },
        };
        match outcome {
            Ok(holder) => {
                conns::note_authenticated();
                Ok(holder)
            }
            Err(reason) => {
                let network_locked = self
                    .lockout
                    .lock()
                    .map(|mut l| l.failed(ip, digest.as_ref(), now))
                    .unwrap_or(None);
                Err(match network_locked {
                    Some(wait) => Refusal::Locked(wait),
                    None => Refusal::BadToken(reason),
                })
            }
        }
    }

    /// The name and role of the token `token_id` names ([`Holder::token_id`]) while it is
    /// still valid: `None` once it was revoked, so a login or stream made with it ends. An
    /// unreadable token file counts as revoked. A valid one marks the connection the request
    /// came on as authenticated ([`conns`]).
    pub fn current(&self, token_id: &str) -> Option<Principal> {
        match self.tokens.current(token_id) {
            Ok(found) => {
                if found.is_some() {
                    conns::note_authenticated();
                }
                found
            }
            Err(e) => {
                tracing::error!(error = %e, "cannot check tokens");
                None
            }
        }
    }

    /// The digests ([`Holder::token_id`]) of every valid token, read once; none when the token
    /// file cannot be read (as [`Gate::current`] counts that as revoked).
    pub fn valid_token_ids(&self) -> HashSet<String> {
        match self.tokens.list() {
            Ok(list) => list.into_iter().map(|t| t.sha256).collect(),
            Err(e) => {
                tracing::error!(error = %e, "cannot check tokens");
                HashSet::new()
            }
        }
    }
}
