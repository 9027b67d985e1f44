//! Input a person sends to the whole screen from elsewhere (the web console's take-over of a
//! private desktop): a click at a screen point, a key sequence in ufo's key syntax, a text.
//! It goes through the display's input like the agent's own, with no window to activate
//! first: the person aims at what they see.

use std::sync::Arc;

use crate::display::keys::{char_keysym, parse_keys, KeyStep};
use crate::display::{self, Display};
use crate::LinuxError;

/// Longest text or key sequence sent at once.
const MAX_TYPED: usize = 4096;

/// Click `button` (1 left, 2 middle, 3 right) at screen pixel (`x`, `y`).
pub(crate) async fn click(
    display: &Arc<dyn Display>,
    x: i32,
    y: i32,
    button: u8,
) -> Result<(), LinuxError> {
    if !(1..=3).contains(&button) {
        return Err(LinuxError::Unsupported(format!(
            "button {button} is not 1 (left), 2 (middle) or 3 (right)"
        )));
    }
    display::run(display, move |d| {
        let screen = d.screen();
        let (w, h) = (screen.w as i32, screen.h as i32);
        if !(0..w).contains(&x) || !(0..h).contains(&y) {
            return Err(LinuxError::Unsupported(format!(
                "({x}, {y}) is outside the screen ({w}×{h}); click inside it"
            )));
        }
        d.click(x, y, button, 1)
    })
    .await
}

/// Type a key sequence in ufo's key syntax (`{ctrl+a}`, `12{enter}`) where the keyboard focus
/// is.
pub(crate) async fn keys(display: &Arc<dyn Display>, keys: &str) -> Result<(), LinuxError> {
    if keys.len() > MAX_TYPED {
        return Err(LinuxError::Unsupported(format!(
            "the key sequence is longer than {MAX_TYPED} bytes; send it in parts"
        )));
    }
    send_steps(display, parse_keys(keys)?).await
}

/// Type `text` as it is (no key syntax) where the keyboard focus is.
pub(crate) async fn text(display: &Arc<dyn Display>, text: &str) -> Result<(), LinuxError> {
    if text.len() > MAX_TYPED {
        return Err(LinuxError::Unsupported(format!(
            "the text is longer than {MAX_TYPED} bytes; send it in parts"
        )));
    }
    let steps = text
        .chars()
        .map(|c| KeyStep::Chord {
            mods: Vec::new(),
            key: char_keysym(c),
        })
        .collect();
    send_steps(display, steps).await
}

async fn send_steps(display: &Arc<dyn Display>, steps: Vec<KeyStep>) -> Result<(), LinuxError> {
    display::run(display, move |d| d.keys(&steps)).await
}
