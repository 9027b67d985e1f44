//! The wait after a click on a slide of Impress's slides panel (issue 46). Impress shows the
//! clicked slide at once but exports its shapes to the accessibility bus a while later: the
//! window's redraws had settled and the next observation still listed the slide before (1 in
//! 2 runs of a task: "no control matches … Content Placeholder 2", and the text typed next
//! went elsewhere). So after such a click the presentation's children are read (one
//! `GetChildren` and their names, no walk) until its page shape names the clicked slide
//! ("PageShape: Slide 2") and the slide's other shapes are there; a slide with no shape but
//! its page is taken after [`SHAPES_GRACE`]; at most [`SLIDE_WAIT`]. [`slide_switch`] decides
//! (pure); [`Actor::slide_click`] (before the click) and [`Actor::wait_for_slide`] read.
//! Measured on a development machine at load 6–12: the shapes were exported by the first
//! read in 6 of 6 switches (1–18 ms after the settle); the race was not seen there.

use std::time::{Duration, Instant};

use zbus::zvariant::OwnedObjectPath;

use super::Actor;
use crate::controls::CtlInfo;
use crate::vocab::role;

/// Longest wait for the clicked slide's shapes.
pub(crate) const SLIDE_WAIT: Duration = Duration::from_secs(3);
/// How long a slide whose page shape is shown without other shapes is waited for (a blank
/// slide has only its page).
pub(crate) const SHAPES_GRACE: Duration = Duration::from_millis(400);
/// How often the presentation's children are read.
const POLL: Duration = Duration::from_millis(50);
/// Most children of the presentation whose names are read (the shapes of one slide).
const MAX_SHAPES: usize = 100;
/// What LibreOffice puts before a slide's name on the shape of its page.
const PAGE_SHAPE: &str = "PageShape: ";

/// What one read of the presentation's shapes means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SlideSwitch {
    /// The clicked slide and its shapes are exported (or the wait is over).
    Shown,
    /// Read again after [`POLL`].
    NotYet,
}

/// Whether the presentation shows slide `slide` with its shapes: `names` are its children's
/// names now, `page_for` how long its page shape has named that slide (`None`: not yet),
/// `elapsed` the time since the click.
pub(crate) fn slide_switch(
    names: &[String],
    slide: &str,
    page_for: Option<Duration>,
    elapsed: Duration,
) -> SlideSwitch {
    if elapsed >= SLIDE_WAIT {
        return SlideSwitch::Shown;
    }
    if !shows_page(names, slide) {
        return SlideSwitch::NotYet;
    }
    let shapes = names.iter().any(|n| !n.starts_with(PAGE_SHAPE.trim_end()));
    if shapes || page_for.is_some_and(|d| d >= SHAPES_GRACE) {
        SlideSwitch::Shown
    } else {
        SlideSwitch::NotYet
    }
}

/// Whether one of `names` is the page shape of slide `slide`.
pub(crate) fn shows_page(names: &[String], slide: &str) -> bool {
    let slide = slide.trim();
    names.iter().any(|n| {
        n.strip_prefix(PAGE_SHAPE)
            .is_some_and(|s| s.trim() == slide)
    })
}

/// A click on a slide of Impress's slides panel: the slide's name and the window's
/// presentation (bus and path), found before the click (the clicked node is often gone
/// after it: Impress rebuilds the panel's items).
#[derive(Debug, Clone)]
pub(crate) struct SlideClick {
    slide: String,
    bus: String,
    presentation: String,
}

impl Actor<'_> {
    /// Before a click on `c`: the slide it shows, when it is a slide of Impress's slides
    /// panel (a named panel in the panel's document frame) and the window's presentation was
    /// listed. Two calls for a named panel, none for anything else.
    pub(crate) async fn slide_click(&self, c: &CtlInfo) -> Option<SlideClick> {
        const ACC: &str = "org.a11y.atspi.Accessible";
        if c.seen.role != role::PANEL || c.name.trim().is_empty() {
            return None;
        }
        let presentation = self
            .controls
            .lock()
            .by_id
            .values()
            .find(|k| {
                k.window == c.window && k.bus == c.bus && k.seen.role == role::DOCUMENT_PRESENTATION
            })
            .map(|k| k.path.clone())?;
        let parent: Result<(String, OwnedObjectPath), _> =
            self.bus.prop(&c.bus, &c.path, ACC, "Parent").await;
        let (_, parent) = parent.ok()?;
        let in_panel = self
            .bus
            .call::<_, u32>(&c.bus, parent.as_str(), ACC, "GetRole", &())
            .await
            .is_ok_and(|r| r == role::DOCUMENT_FRAME);
        in_panel.then(|| SlideClick {
            slide: c.name.clone(),
            bus: c.bus.clone(),
            presentation,
        })
    }

    /// After a click on a slide of the slides panel: wait until the presentation shows that
    /// slide with its shapes (see the module).
    pub(crate) async fn wait_for_slide(&self, s: &SlideClick) {
        const ACC: &str = "org.a11y.atspi.Accessible";
        let started = Instant::now();
        let mut page_since: Option<Instant> = None;
        let mut reads = 0usize;
        loop {
            let kids = self
                .bus
                .children(&s.bus, &s.presentation)
                .await
                .unwrap_or_default();
            let names: Vec<String> = futures::future::join_all(
                kids.iter()
                    .take(MAX_SHAPES)
                    .map(|k| self.bus.prop::<String>(&s.bus, k, ACC, "Name")),
            )
            .await
            .into_iter()
            .map(|n| n.unwrap_or_default())
            .collect();
            reads += 1;
            if shows_page(&names, &s.slide) {
                page_since.get_or_insert_with(Instant::now);
            }
            let page_for = page_since.map(|t| t.elapsed());
            match slide_switch(&names, &s.slide, page_for, started.elapsed()) {
                SlideSwitch::Shown => break,
                SlideSwitch::NotYet => tokio::time::sleep(POLL).await,
            }
        }
        tracing::debug!(
            slide = %s.slide,
            reads,
            ms = started.elapsed().as_millis() as u64,
            "slide shown"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// Impress after a click on "Slide 2": first still slide 1, then slide 2's page without
    /// its shapes, then with them.
    #[test]
    fn the_clicked_slide_is_waited_for_with_its_shapes() {
        let before = names(&["PageShape: Slide 1", "Title 1", "Content Placeholder 2"]);
        assert_eq!(
            slide_switch(&before, "Slide 2", None, ms(100)),
            SlideSwitch::NotYet
        );
        let page_only = names(&["PageShape: Slide 2"]);
        assert_eq!(
            slide_switch(&page_only, "Slide 2", Some(ms(50)), ms(150)),
            SlideSwitch::NotYet
        );
        let shown = names(&["PageShape: Slide 2", "Title 1", "Content Placeholder 2"]);
        assert_eq!(
            slide_switch(&shown, "Slide 2", Some(ms(0)), ms(200)),
            SlideSwitch::Shown
        );
    }

    /// A blank slide (its page only) is taken after the grace; nothing is waited past the
    /// bound, whatever is shown; a slide's name is matched whole ("Slide 1" is not "Slide 10").
    #[test]
    fn a_blank_slide_and_the_bound_end_the_wait() {
        let page_only = names(&["PageShape: Slide 3"]);
        assert_eq!(
            slide_switch(&page_only, "Slide 3", Some(SHAPES_GRACE), ms(600)),
            SlideSwitch::Shown
        );
        assert_eq!(
            slide_switch(&names(&[]), "Slide 3", None, SLIDE_WAIT),
            SlideSwitch::Shown
        );
        assert_eq!(
            slide_switch(&names(&[]), "Slide 3", None, SLIDE_WAIT - ms(1)),
            SlideSwitch::NotYet
        );
        let tenth = names(&["PageShape: Slide 10", "Title 1"]);
        assert!(!shows_page(&tenth, "Slide 1"));
        assert!(shows_page(&tenth, "Slide 10"));
        assert!(shows_page(&names(&["PageShape: Intro"]), " Intro "));
    }
}
