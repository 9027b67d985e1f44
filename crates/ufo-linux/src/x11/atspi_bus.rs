//! The root window's `AT_SPI_BUS` property: the accessibility bus address that the bus
//! launcher publishes on the display. Qt 5 takes the address from it before asking
//! `org.a11y.Bus`, so a property left over from a bus that is gone (another session on the
//! same display, a restarted launcher) keeps every Qt application off the bus ("Error in
//! contacting registry: Disconnected"), accessibility switches or not.

use x11rb::connection::Connection;
use x11rb::protocol::xproto::{AtomEnum, ConnectionExt as _, PropMode};
use x11rb::wrapper::ConnectionExt as _;

use super::{xerr, X11};
use crate::LinuxError;

const PROPERTY: &[u8] = b"AT_SPI_BUS";

impl X11 {
    fn atspi_bus_atom(&self) -> Result<u32, LinuxError> {
        Ok(self
            .conn
            .intern_atom(false, PROPERTY)
            .map_err(xerr("InternAtom"))?
            .reply()
            .map_err(xerr("InternAtom"))?
            .atom)
    }

    /// The address in the root window's `AT_SPI_BUS` property (`None`: not set).
    pub fn root_atspi_bus(&self) -> Result<Option<String>, LinuxError> {
        let atom = self.atspi_bus_atom()?;
        let r = self
            .conn
            .get_property(false, self.root, atom, AtomEnum::STRING, 0, 4096)
            .map_err(xerr("GetProperty"))?
            .reply()
            .map_err(xerr("GetProperty"))?;
        Ok((!r.value.is_empty()).then(|| String::from_utf8_lossy(&r.value).into_owned()))
    }

    /// Publish `address` in the root window's `AT_SPI_BUS` property.
    pub fn set_root_atspi_bus(&self, address: &str) -> Result<(), LinuxError> {
        let atom = self.atspi_bus_atom()?;
        self.conn
            .change_property8(
                PropMode::REPLACE,
                self.root,
                atom,
                AtomEnum::STRING,
                address.as_bytes(),
            )
            .map_err(xerr("ChangeProperty"))?
            .check()
            .map_err(xerr("ChangeProperty"))?;
        self.conn.flush().map_err(xerr("flush"))?;
        Ok(())
    }
}

/// Whether the display's published bus address (`published`) sends applications elsewhere
/// than the live accessibility bus (`live`, from `org.a11y.Bus`): then it must be replaced.
/// A missing property is left alone (every toolkit then asks `org.a11y.Bus`).
pub(crate) fn is_stale(published: Option<&str>, live: &str) -> bool {
    let socket = |a: &str| a.split(',').next().unwrap_or_default().trim().to_string();
    match published {
        None => false,
        Some(p) => !live.is_empty() && socket(p) != socket(live),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_property_naming_another_socket_is_stale() {
        let live = "unix:path=/run/user/0/at-spi/bus_100,guid=aa";
        assert!(!is_stale(Some(live), live));
        // the same socket with another guid field is the same bus
        assert!(!is_stale(
            Some("unix:path=/run/user/0/at-spi/bus_100,guid=bb"),
            live
        ));
        assert!(is_stale(
            Some("unix:path=/tmp/gone/at-spi/bus_100,guid=aa"),
            live
        ));
        assert!(!is_stale(None, live));
        assert!(!is_stale(Some("unix:path=/x"), ""));
    }
}
