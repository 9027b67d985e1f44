//! Observation of one window in one step: the controls an agent can use (through the
//! `Cache.GetItems` fast path, with a bounded walk when the cache is incomplete), the screenshot,
//! and the annotated screenshot.

mod arrange;
mod candidates;
pub(crate) mod changes;
mod composite;
mod fields;
#[cfg(test)]
mod fixtures;
mod frames;
pub(crate) mod loading;
mod locate;
mod look;
pub(crate) mod modal;
mod noise;
mod observer;
pub(crate) mod places;
mod placing;
mod popups;
mod read;
mod refresh;
mod route;
mod sight;
mod stacked;
mod take;
mod tree;
mod walk;

pub(crate) use candidates::{display_name, is_entry};
pub(crate) use observer::PixelTrail;
pub(crate) use observer::PixelsAsked;
pub use observer::{FullObservation, ObservationStats};
pub(crate) use observer::{Observation, Observer, SeenWindows};
pub(crate) use sight::{crop, is_detected};
