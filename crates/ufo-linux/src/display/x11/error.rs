//! X11 requests' errors as the crate's.

use crate::LinuxError;

/// An X11 request's error as [`LinuxError::X11Request`], naming what was asked.
pub(crate) fn xerr<E>(what: &str) -> impl Fn(E) -> LinuxError + '_
where
    E: std::error::Error + Send + Sync + 'static,
{
    move |source| LinuxError::X11Request {
        what: what.to_string(),
        source: Box::new(source),
    }
}
