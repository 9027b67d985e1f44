//! Reading the candidates' details with the bar controls' places kept from the last
//! observation (`places.rs` says what is kept and when it may be taken).

use std::collections::{BTreeSet, HashMap};

use futures::future::join_all;

use super::candidates::Candidate;
use super::fields::{may_keep_details, Details};
use super::observer::Observer;
use super::places::{bar_of, is_placed, moved_with_bar, Ext, KeptControl, Places, Reuse};
use crate::a11y::bus::AppTree;
use crate::apps::office::KnownFix;

/// A candidate's details taken from what was kept, or read again (its bar changed size).
type Placed = Option<(Details, bool)>;

/// What [`Observer::details_placed`] read: each candidate's details, the places read now (to
/// be kept for the next observation, [`places_read`]; `None`: nothing is kept) and the
/// candidates that were kept but read again, their bar having changed size (their kept
/// rectangle corrections do not hold either).
pub(super) struct DetailsPlaced {
    pub details: Vec<Details>,
    pub read_now: Option<Places>,
    pub read_again: Vec<usize>,
}

/// What an observation at event count `now` may take of its candidates' details: each
/// candidate's bar (where its details may be kept) and what was kept of them.
pub(super) struct Placing<'t> {
    now: u64,
    reuse: Option<Reuse>,
    bars: Vec<Option<&'t str>>,
}

impl Placing<'_> {
    /// What was kept of each candidate that may be taken, with its bar's box then.
    fn kept(&self, candidates: &[Candidate]) -> Vec<Option<(&KeptControl, Ext)>> {
        candidates
            .iter()
            .zip(&self.bars)
            .map(|(c, b)| self.reuse.as_ref()?.kept(&c.node.path, (*b)?))
            .collect()
    }

    /// The rectangle corrections kept with the candidates that may be taken
    /// (`office::extent_corrections` does not read their ancestors again).
    pub(super) fn known_fixes(&self, candidates: &[Candidate]) -> HashMap<String, KnownFix> {
        candidates
            .iter()
            .zip(self.kept(candidates))
            .filter_map(|(c, k)| Some((c.node.path.clone(), k?.0.fix?)))
            .collect()
    }
}

impl Observer<'_> {
    /// What an observation of `bus` at event count `now` may take of the candidates'
    /// details ([`Placing`]), before any of them is read.
    pub(super) fn placing<'t>(
        &self,
        (bus, tree, frame): (&str, &'t AppTree, &str),
        candidates: &'t [Candidate],
        now: u64,
        with_actions: bool,
    ) -> Placing<'t> {
        let bars = candidates
            .iter()
            .map(|c| {
                may_keep_details(&c.node, with_actions)
                    .then(|| bar_of(tree, &c.node, frame))
                    .flatten()
            })
            .collect();
        Placing {
            now,
            reuse: self.places.reuse(bus, now),
            bars,
        }
    }

    /// Each candidate's details ([`Observer::read_details`]), in order, and what was read of
    /// the kept ones ([`DetailsPlaced`]). The steps: what may be taken of each candidate
    /// ([`Placing`]; none when `placing` is `None`: the application's events are not counted
    /// and every control is read), the bars' boxes read with the other candidates' details,
    /// the kept ones moved with their bar ([`Self::moved_or_read`]).
    pub(super) async fn details_placed<'c>(
        &self,
        bus: &str,
        candidates: &'c [Candidate],
        placing: Option<&Placing<'_>>,
        with_actions: bool,
    ) -> DetailsPlaced {
        let read = |c: &'c Candidate| self.read_details(bus, &c.node, with_actions);
        let Some(placing) = placing else {
            return DetailsPlaced {
                details: join_all(candidates.iter().map(read)).await,
                read_now: None,
                read_again: Vec::new(),
            };
        };
        let bars = &placing.bars;
        let kept = placing.kept(candidates);
        let all_bars: BTreeSet<&str> = bars.iter().flatten().copied().collect();
        let (bars_now, fresh) = tokio::join!(
            join_all(all_bars.iter().map(|b| self.bus.extents(bus, b))),
            join_all(candidates.iter().zip(&kept).map(|(c, k)| async move {
                match k {
                    Some(_) => None,
                    None => Some(read(c).await),
                }
            }))
        );
        let bars_now: HashMap<&str, Ext> = all_bars
            .iter()
            .zip(bars_now)
            .filter_map(|(b, e)| Some((*b, e.ok().filter(|e| is_placed(*e))?)))
            .collect();
        let placed = self
            .moved_or_read(bus, candidates, (&kept, bars, &bars_now), with_actions)
            .await;
        let read_again: Vec<usize> = placed
            .iter()
            .enumerate()
            .filter(|(_, p)| p.as_ref().is_some_and(|(_, again)| *again))
            .map(|(i, _)| i)
            .collect();
        let again = read_again.len();
        let taken = placed.iter().flatten().count() - again;
        let details: Vec<Details> = fresh
            .into_iter()
            .zip(placed)
            .filter_map(|(f, p)| f.or(p.map(|(d, _)| d)))
            .collect();
        let read_now = places_read(placing.now, candidates, (bars, &bars_now), &details);
        tracing::debug!(
            bus,
            bars = all_bars.len(),
            taken,
            again,
            read = candidates.len() - taken,
            "bar controls placed"
        );
        DetailsPlaced {
            details,
            read_now: Some(read_now),
            read_again,
        }
    }

    /// A step of [`Self::details_placed`]: each kept candidate moved as its bar moved, or
    /// read again when its bar changed size or did not answer (`true` with those); `None`
    /// for the candidates not kept.
    async fn moved_or_read(
        &self,
        bus: &str,
        candidates: &[Candidate],
        (kept, bars, bars_now): KeptAndBars<'_>,
        with_actions: bool,
    ) -> Vec<Placed> {
        join_all(
            candidates
                .iter()
                .zip(kept)
                .zip(bars)
                .map(|((c, k), b)| async move {
                    let (kept, bar_then) = (*k)?;
                    let now = bars_now.get((*b)?);
                    Some(
                        match now.and_then(|n| moved_with_bar(kept.ext, bar_then, *n)) {
                            Some(e) => (kept_details(kept, e), false),
                            None => (self.read_details(bus, &c.node, with_actions).await, true),
                        },
                    )
                }),
        )
        .await
    }
}

/// What [`Observer::moved_or_read`] works from: what was kept of each candidate (with its
/// bar's box then), each candidate's bar and each bar's box now.
type KeptAndBars<'a> = (
    &'a [Option<(&'a KeptControl, Ext)>],
    &'a [Option<&'a str>],
    &'a HashMap<&'a str, Ext>,
);

/// The details of a kept control as [`Observer::read_details`] reads them, its box at `ext`.
fn kept_details(k: &KeptControl, ext: Ext) -> Details {
    (Ok(Some(ext)), Ok(k.actions.clone()), Ok(None), k.value)
}

/// A step of [`Observer::details_placed`]: the places of this observation, read at event
/// count `count`: each bar control placed somewhere, with its bar's box now.
fn places_read(
    count: u64,
    candidates: &[Candidate],
    (bars, bars_now): (&[Option<&str>], &HashMap<&str, Ext>),
    details: &[Details],
) -> Places {
    let mut places = Places {
        count,
        ..Places::default()
    };
    for ((c, b), d) in candidates.iter().zip(bars).zip(details) {
        let (Some(b), (Ok(Some(ext)), Ok(actions), _, value)) = (b, d) else {
            continue;
        };
        let Some(bar) = bars_now.get(b).filter(|_| is_placed(*ext)) else {
            continue;
        };
        places.bars.insert(b.to_string(), *bar);
        let kept = KeptControl {
            bar: b.to_string(),
            ext: *ext,
            actions: actions.clone(),
            value: *value,
            fix: None,
        };
        places.controls.insert(c.node.path.clone(), kept);
    }
    places
}
