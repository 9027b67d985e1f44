//! The bounded D-Bus method call both remote-desktop paths of the GNOME display make: to
//! Mutter's own interfaces ([`super::mutter`]) and to the portals ([`super::portal`]). Each
//! call waits at most [`CALL`]; its errors name the peer it went to.

use std::time::Duration;

use crate::LinuxError;

/// Bound on one call to Mutter or the portal (the portal's consent dialog is not a call: it is
/// the wait for a request's `Response`, bounded by the caller).
pub(crate) const CALL: Duration = Duration::from_secs(5);

/// Whom a call of the GNOME display goes to, for the words of its errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Peer {
    /// Mutter's own remote-desktop and screencast interfaces.
    Mutter,
    /// The RemoteDesktop and ScreenCast portals.
    Portal,
}

impl Peer {
    /// The error of a call (or a subscription) `what` to this peer that the bus refused.
    pub(crate) fn failed(self, what: &str) -> impl Fn(zbus::Error) -> LinuxError + '_ {
        move |e| LinuxError::Wayland {
            what: match self {
                Peer::Mutter => format!("Mutter over D-Bus: {what}"),
                Peer::Portal => format!("the {what} portal call"),
            },
            source: Box::new(e),
        }
    }

    /// How a timeout names this peer.
    fn name(self) -> &'static str {
        match self {
            Peer::Mutter => "Mutter",
            Peer::Portal => "the portal",
        }
    }

    /// One method call to this peer (at bus name `dest`), bounded by [`CALL`]; its reply's
    /// body.
    pub(crate) async fn call<B, R>(
        self,
        conn: &zbus::Connection,
        dest: &str,
        path: &str,
        iface: &str,
        method: &str,
        body: &B,
    ) -> Result<R, LinuxError>
    where
        B: serde::Serialize + zbus::zvariant::DynamicType,
        R: serde::de::DeserializeOwned + zbus::zvariant::Type,
    {
        let what = format!("{iface}.{method}");
        let msg = tokio::time::timeout(
            CALL,
            conn.call_method(Some(dest), path, Some(iface), method, body),
        )
        .await
        .map_err(|_| LinuxError::Timeout {
            what: format!("{} ({what})", self.name()),
            ms: CALL.as_millis() as u64,
        })?
        .map_err(self.failed(&what))?;
        msg.body().deserialize::<R>().map_err(self.failed(&what))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_the_peer_and_the_call() {
        let e = || zbus::Error::Failure("no".into());
        let m = Peer::Mutter.failed("org.gnome.Mutter.RemoteDesktop.Start")(e()).to_string();
        assert!(m.contains("Mutter over D-Bus: org.gnome.Mutter"), "{m}");
        let p = Peer::Portal.failed("Start")(e()).to_string();
        assert!(p.contains("the Start portal call"), "{p}");
        assert_eq!(Peer::Portal.name(), "the portal");
    }
}
