//! The wait after text typed into a web page's search box. A page answers a search box
//! while the text is typed or a while after it (Firefox's settings search first builds every
//! settings pane: its results came 1 to 3 s after the text on a loaded machine), long after
//! the window's redraws settled; the next observation then showed the page without its
//! results and the model's next control was not there. So after `set_text` or `type_keys`
//! into a search box, the application's accessibility events are followed: once the page's
//! tree changed, until it has been still for [`SEARCH_QUIET`]; at most [`SEARCH_WAIT`].

use std::collections::HashMap;
use std::time::{Duration, Instant};

use super::Actor;
use crate::a11y::events::Change;
use crate::controls::CtlInfo;
use crate::vocab::role;

/// Longest wait for a search box's page to answer.
pub(crate) const SEARCH_WAIT: Duration = Duration::from_secs(8);
/// How long the page's tree stays still before its answer counts as complete (Firefox adds
/// its results header, then its results one to several seconds later under load).
pub(crate) const SEARCH_QUIET: Duration = Duration::from_millis(2500);
/// How often the application's events are counted.
const POLL: Duration = Duration::from_millis(100);

/// Whether a text field is a search box, from its object attributes: the ARIA role
/// `searchbox` (Gecko, Chromium) or an `<input type="search">`.
pub(crate) fn is_search_box(attrs: &HashMap<String, String>) -> bool {
    let has = |k: &str, v: &str| {
        attrs
            .get(k)
            .is_some_and(|x| x.split_whitespace().any(|w| w.eq_ignore_ascii_case(v)))
    };
    has("xml-roles", "searchbox") || has("text-input-type", "search")
}

/// Whether the wait after typing into a search box is over, `elapsed` after it began:
/// `changed` is when the page's tree first changed, `last` when the last event came.
pub(crate) fn search_answered(
    elapsed: Duration,
    changed: Option<Duration>,
    last: Option<Duration>,
) -> bool {
    if elapsed >= SEARCH_WAIT {
        return true;
    }
    match (changed, last) {
        (Some(_), Some(l)) => elapsed.saturating_sub(l) >= SEARCH_QUIET,
        _ => false,
    }
}

impl Actor<'_> {
    /// After text typed into `c`: when it is a search box, wait for its page's answer (see
    /// the module). Whether the page's tree changed meanwhile (an observation made while the
    /// action settled is then of the page before).
    pub(crate) async fn wait_for_search_answer(&self, c: &CtlInfo) -> bool {
        if c.seen.role != role::ENTRY {
            return false;
        }
        let attrs: HashMap<String, String> = self
            .bus
            .call(
                &c.bus,
                &c.path,
                "org.a11y.atspi.Accessible",
                "GetAttributes",
                &(),
            )
            .await
            .unwrap_or_default();
        if !is_search_box(&attrs) {
            return false;
        }
        let Some(changes) = self.bus.changes.as_ref() else {
            return false;
        };
        let started = Instant::now();
        // the first count asks the applications for their events and is not trusted yet
        let first = changes.count(&c.bus).await;
        let first = match first {
            Some(n) => Some(n),
            None => changes.count(&c.bus).await,
        };
        let Some(mut seen) = first else {
            return false;
        };
        let (mut changed, mut last) = (None, None);
        while !search_answered(started.elapsed(), changed, last) {
            tokio::time::sleep(POLL).await;
            let Some(now) = changes.count(&c.bus).await else {
                break;
            };
            if now > seen {
                let tree_changed = changes.between(&c.bus, seen, now).await.is_none_or(|list| {
                    list.iter().any(|e| {
                        matches!(e, Change::Children(_) | Change::Removed(_) | Change::Whole)
                    })
                });
                let t = started.elapsed();
                if tree_changed && changed.is_none() {
                    changed = Some(t);
                }
                last = Some(t);
                seen = now;
            }
        }
        tracing::debug!(
            changed_ms = changed.map(|d| d.as_millis() as u64),
            ms = started.elapsed().as_millis() as u64,
            "search box answered"
        );
        changed.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attrs(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// Firefox's "Find in Settings" and an `<input type="search">` are search boxes; a
    /// plain form field is not.
    #[test]
    fn search_boxes_are_told_by_their_attributes() {
        assert!(is_search_box(&attrs(&[
            ("xml-roles", "searchbox"),
            ("tag", "input")
        ])));
        assert!(is_search_box(&attrs(&[("text-input-type", "search")])));
        assert!(!is_search_box(&attrs(&[("text-input-type", "text")])));
        assert!(!is_search_box(&attrs(&[("xml-roles", "textbox")])));
        assert!(!is_search_box(&HashMap::new()));
    }

    /// Issue 23: the page's header came 1 s after the text and its results about 1 s after
    /// that; the wait lasts until the tree was still for the quiet time, at most the bound.
    #[test]
    fn the_wait_ends_when_the_page_is_still_or_at_the_bound() {
        let ms = Duration::from_millis;
        // nothing yet: keep waiting
        assert!(!search_answered(ms(900), None, None));
        // the header came at 1 s: the results a second later are still waited for
        assert!(!search_answered(ms(2000), Some(ms(1000)), Some(ms(1000))));
        // the results came at 2 s, then nothing for the quiet time
        assert!(!search_answered(ms(2100), Some(ms(1000)), Some(ms(2000))));
        assert!(search_answered(
            ms(2000) + SEARCH_QUIET,
            Some(ms(1000)),
            Some(ms(2000))
        ));
        // events that did not change the tree (the typed text) do not end the wait early
        assert!(!search_answered(ms(3000), None, Some(ms(100))));
        // never longer than the bound
        assert!(search_answered(SEARCH_WAIT, None, None));
        assert!(search_answered(
            SEARCH_WAIT,
            Some(ms(10)),
            Some(SEARCH_WAIT)
        ));
    }
}
