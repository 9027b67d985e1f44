//! The root window's `AT_SPI_BUS` property: the accessibility bus address that the bus
//! launcher publishes on the display (read and written by `X11::publish_a11y_bus`). Qt 5 takes
//! the address from it before asking `org.a11y.Bus`, and on an X display it needs it: measured
//! under Xvfb with a live bus, FeatherPad (Qt 5.15) joins the bus within 5 s with the property
//! set (even without `QT_LINUX_ACCESSIBILITY_ALWAYS_ON`), and not within 12 s without it (even
//! with the switch). A property left over from a bus that is gone (another session on the same
//! display, a restarted launcher) keeps every Qt application off the bus as surely ("Error in
//! contacting registry: Disconnected").

/// What the display's `AT_SPI_BUS` property says, against the live accessibility bus.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum BusProperty {
    /// It names the live bus.
    Live,
    /// The display has none: Qt 5 applications stay off the bus.
    Missing,
    /// It names another bus than the live one.
    Stale {
        /// The address the property holds.
        published: String,
    },
    /// It names a bus, and the live bus is unknown, so it cannot be judged.
    Unknown {
        /// The address the property holds.
        published: String,
    },
}

impl BusProperty {
    /// Judge the display's published address (`published`, `None`: not set) against the live
    /// bus (`live`, from `org.a11y.Bus`; empty: unknown). A missing property is missing
    /// whatever the live bus.
    pub(crate) fn judge(published: Option<&str>, live: &str) -> Self {
        let socket = |a: &str| a.split(',').next().unwrap_or_default().trim().to_string();
        match published.filter(|p| !p.trim().is_empty()) {
            None => Self::Missing,
            Some(p) if live.trim().is_empty() => Self::Unknown {
                published: p.to_string(),
            },
            Some(p) if socket(p) == socket(live) => Self::Live,
            Some(p) => Self::Stale {
                published: p.to_string(),
            },
        }
    }

    /// Whether the live address must be published: the property is missing or names another
    /// bus.
    pub(crate) fn needs_publishing(&self) -> bool {
        match self {
            Self::Missing | Self::Stale { .. } => true,
            Self::Live | Self::Unknown { .. } => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_or_foreign_property_is_published_and_a_live_one_kept() {
        let live = "unix:path=/run/user/0/at-spi/bus_100,guid=aa";
        assert_eq!(BusProperty::judge(Some(live), live), BusProperty::Live);
        // the same socket with another guid field is the same bus
        assert_eq!(
            BusProperty::judge(Some("unix:path=/run/user/0/at-spi/bus_100,guid=bb"), live),
            BusProperty::Live
        );
        let gone = "unix:path=/tmp/gone/at-spi/bus_100,guid=aa";
        assert_eq!(
            BusProperty::judge(Some(gone), live),
            BusProperty::Stale {
                published: gone.into()
            }
        );
        assert_eq!(BusProperty::judge(None, live), BusProperty::Missing);
        assert_eq!(BusProperty::judge(Some(""), live), BusProperty::Missing);
        let unknown = BusProperty::judge(Some("unix:path=/x"), "");
        assert_eq!(
            unknown,
            BusProperty::Unknown {
                published: "unix:path=/x".into()
            }
        );
        assert_eq!(BusProperty::judge(None, ""), BusProperty::Missing);
        assert!(BusProperty::Missing.needs_publishing());
        assert!(BusProperty::judge(Some(gone), live).needs_publishing());
        assert!(!BusProperty::Live.needs_publishing());
        assert!(!unknown.needs_publishing());
    }
}
