//! The root window's `AT_SPI_BUS` property: the accessibility bus address that the bus
//! launcher publishes on the display (read and written by `X11::publish_a11y_bus`). Qt 5 takes the address from it before asking
//! `org.a11y.Bus`, so a property left over from a bus that is gone (another session on the
//! same display, a restarted launcher) keeps every Qt application off the bus ("Error in
//! contacting registry: Disconnected"), accessibility switches or not.

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
