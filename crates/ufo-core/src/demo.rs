//! Demonstrations (issue 26): a person's recorded clicks and key presses, each resolved to the
//! control it reached, merged into named steps and written as a plan `ufo follow` accepts.
//!
//! Pure: the desktop adapter reads the input and resolves the controls; this module only turns
//! that event stream into steps (consecutive printable keys into one text step, other keys
//! into key steps in the `type_keys` syntax, clicks with their control) and the steps into the
//! plan's sentences.

use serde::{Deserialize, Serialize};

/// Most steps one demonstration keeps; presses beyond it are dropped (with a warning by the
/// recorder), so a forgotten recorder cannot grow without bound.
pub const MAX_STEPS: usize = 2_000;
/// Most characters of one text step.
pub const MAX_TEXT: usize = 10_000;

/// The control an input reached: the window, the control's name and role.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Target {
    /// The window's title.
    pub window: String,
    /// The control's accessible name (may be empty).
    pub name: String,
    /// The control's role (`button`, `text`, ...); `window` when no control was found.
    pub role: String,
}

/// A key as the person pressed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Key {
    /// A printable character (with the shift state already applied).
    Char(char),
    /// Any other key or chord, in the `type_keys` syntax without braces (`ENTER`,
    /// `ctrl+s`, `BACKSPACE`).
    Named(String),
}

/// One resolved input of the person.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// A button press at a screen point.
    Click {
        /// The mouse button (1 left, 2 middle, 3 right).
        button: u8,
        /// Screen x.
        x: i32,
        /// Screen y.
        y: i32,
        /// The control under the pointer, when one was found.
        target: Option<Target>,
    },
    /// A key press.
    Key {
        /// The key.
        key: Key,
        /// The control with the focus, when one was found.
        target: Option<Target>,
    },
}

/// One step of a demonstration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "function", rename_all = "snake_case")]
pub enum Step {
    /// A click on a control (`right` for the context button).
    Click {
        /// The control clicked.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        target: Option<Target>,
        /// Whether it was the right button.
        #[serde(default, skip_serializing_if = "is_false")]
        right: bool,
        /// Screen x of the click.
        x: i32,
        /// Screen y of the click.
        y: i32,
    },
    /// Text typed into the control with the focus.
    TypeText {
        /// The text.
        text: String,
        /// The control that had the focus.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        target: Option<Target>,
    },
    /// A key or chord pressed, in the `type_keys` syntax (`{ENTER}`, `{ctrl+s}`, `{TAB 2}`).
    Keys {
        /// The keys.
        keys: String,
        /// The control that had the focus.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        target: Option<Target>,
    },
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// Merge a stream of inputs into steps: consecutive characters typed into one control become
/// one text step (a BackSpace inside it removes the last character), a key pressed several
/// times in a row one key step with a count, each left or right click one step (other buttons
/// and the wheel are not steps). At most [`MAX_STEPS`] steps.
pub fn merge(inputs: &[Input]) -> Vec<Step> {
    let mut m = Merger::default();
    for input in inputs {
        match input {
            Input::Click {
                button,
                x,
                y,
                target,
            } => m.click(*button, *x, *y, target),
            Input::Key {
                key: Key::Char(c),
                target,
            } => m.char(*c, target),
            Input::Key {
                key: Key::Named(name),
                target,
            } => m.named_key(name, target),
        }
    }
    m.steps
}

/// The steps merged so far, and how many times in a row the last key step's key was pressed.
struct Merger {
    steps: Vec<Step>,
    repeats: u32,
}

impl Default for Merger {
    fn default() -> Self {
        Self {
            steps: Vec::new(),
            repeats: 1,
        }
    }
}

impl Merger {
    /// A left or right click is a step; other buttons and the wheel are not.
    fn click(&mut self, button: u8, x: i32, y: i32, target: &Option<Target>) {
        if button != 1 && button != 3 {
            return;
        }
        self.repeats = 1;
        push(
            &mut self.steps,
            Step::Click {
                target: target.clone(),
                right: button == 3,
                x,
                y,
            },
        );
    }

    /// A character goes on the text typed into the same control, or starts a text step.
    fn char(&mut self, c: char, target: &Option<Target>) {
        self.repeats = 1;
        if let Some(Step::TypeText { text, target: t }) = self.steps.last_mut() {
            if t == target {
                if text.chars().count() < MAX_TEXT {
                    text.push(c);
                }
                return;
            }
        }
        push(
            &mut self.steps,
            Step::TypeText {
                text: c.to_string(),
                target: target.clone(),
            },
        );
    }

    /// BackSpace takes back the last character typed into the same control; a key pressed
    /// again counts up its key step (`{TAB 3}`); any other starts a key step.
    fn named_key(&mut self, name: &str, target: &Option<Target>) {
        if name.eq_ignore_ascii_case("BACKSPACE") {
            if let Some(Step::TypeText { text, target: t }) = self.steps.last_mut() {
                if t == target {
                    text.pop();
                    if text.is_empty() {
                        self.steps.pop();
                    }
                    return;
                }
            }
        }
        let single = format!("{{{name}}}");
        if let Some(Step::Keys { keys, target: t }) = self.steps.last_mut() {
            let previous = if self.repeats == 1 {
                single.clone()
            } else {
                format!("{{{name} {}}}", self.repeats)
            };
            if t == target && *keys == previous && self.repeats < 1_000 {
                self.repeats += 1;
                *keys = format!("{{{name} {}}}", self.repeats);
                return;
            }
        }
        self.repeats = 1;
        push(
            &mut self.steps,
            Step::Keys {
                keys: single,
                target: target.clone(),
            },
        );
    }
}

fn push(steps: &mut Vec<Step>, step: Step) {
    if steps.len() < MAX_STEPS {
        steps.push(step);
    }
}

/// A control as a plan names it: `the button "7" in the window "Calculator"`.
fn describe(target: Option<&Target>) -> String {
    match target {
        None => "the window with the focus".to_string(),
        Some(t) if t.name.is_empty() => {
            format!("the {} in the window \"{}\"", t.role, t.window)
        }
        Some(t) => format!(
            "the {} \"{}\" in the window \"{}\"",
            t.role, t.name, t.window
        ),
    }
}

/// One step as a plan's sentence.
pub fn sentence(step: &Step) -> String {
    match step {
        Step::Click {
            target,
            right: false,
            ..
        } => format!("Click {}", describe(target.as_ref())),
        Step::Click {
            target,
            right: true,
            ..
        } => format!("Right-click {}", describe(target.as_ref())),
        Step::TypeText { text, target } => {
            format!(
                "Type the text \"{text}\" into {}",
                describe(target.as_ref())
            )
        }
        Step::Keys { keys, target } => {
            format!("Press the keys {keys} in {}", describe(target.as_ref()))
        }
    }
}

/// A plan `ufo follow` reads: the task and its steps as sentences.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    /// The task, in plain words.
    pub task: String,
    /// Its steps.
    pub steps: Vec<String>,
}

/// The plan of a demonstration.
pub fn plan(task: &str, steps: &[Step]) -> Plan {
    Plan {
        task: task.to_string(),
        steps: steps.iter().map(sentence).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn t(name: &str, role: &str) -> Option<Target> {
        Some(Target {
            window: "Calculator".into(),
            name: name.into(),
            role: role.into(),
        })
    }

    fn ch(c: char, target: Option<Target>) -> Input {
        Input::Key {
            key: Key::Char(c),
            target,
        }
    }

    fn named(n: &str, target: Option<Target>) -> Input {
        Input::Key {
            key: Key::Named(n.into()),
            target,
        }
    }

    fn click(name: &str) -> Input {
        Input::Click {
            button: 1,
            x: 10,
            y: 20,
            target: t(name, "button"),
        }
    }

    #[test]
    fn clicks_are_steps_with_their_control() {
        let steps = merge(&[click("1"), click("2"), click("×")]);
        assert_eq!(steps.len(), 3);
        assert_eq!(
            sentence(&steps[2]),
            "Click the button \"×\" in the window \"Calculator\""
        );
    }

    #[test]
    fn typed_characters_become_one_text_and_backspace_edits_it() {
        let edit = t("", "text");
        let steps = merge(&[
            ch('h', edit.clone()),
            ch('i', edit.clone()),
            ch('x', edit.clone()),
            named("BACKSPACE", edit.clone()),
            ch('!', edit.clone()),
            named("ctrl+s", edit.clone()),
        ]);
        assert_eq!(
            steps,
            [
                Step::TypeText {
                    text: "hi!".into(),
                    target: edit.clone()
                },
                Step::Keys {
                    keys: "{ctrl+s}".into(),
                    target: edit.clone()
                }
            ]
        );
        assert_eq!(
            sentence(&steps[0]),
            "Type the text \"hi!\" into the text in the window \"Calculator\""
        );
    }

    #[test]
    fn repeated_keys_count_and_a_click_breaks_a_text() {
        let edit = t("Name", "text");
        let steps = merge(&[
            named("TAB", edit.clone()),
            named("TAB", edit.clone()),
            named("TAB", edit.clone()),
            ch('a', edit.clone()),
            click("OK"),
            ch('b', edit.clone()),
            Input::Click {
                button: 4,
                x: 0,
                y: 0,
                target: None,
            },
        ]);
        assert_eq!(steps.len(), 4, "{steps:?}");
        assert_eq!(
            steps[0],
            Step::Keys {
                keys: "{TAB 3}".into(),
                target: edit.clone()
            }
        );
        assert!(matches!(&steps[3], Step::TypeText { text, .. } if text == "b"));
    }

    #[test]
    fn a_plan_serialises_as_follow_reads_it() {
        let p = plan("Compute 12 × 7", &merge(&[click("1")]));
        let v = serde_json::to_value(&p).expect("json");
        assert_eq!(v["task"], "Compute 12 × 7");
        assert_eq!(
            v["steps"][0],
            "Click the button \"1\" in the window \"Calculator\""
        );
        // the steps themselves carry function, control and place
        let s = serde_json::to_value(merge(&[click("1")])).expect("json");
        assert_eq!(s[0]["function"], "click");
        assert_eq!(s[0]["target"]["name"], "1");
    }

    fn any_input() -> impl Strategy<Value = Input> {
        let target = prop_oneof![Just(None), Just(t("a", "text")), Just(t("b", "button"))];
        prop_oneof![
            (1u8..8, target.clone()).prop_map(|(button, target)| Input::Click {
                button,
                x: 1,
                y: 2,
                target
            }),
            (proptest::char::range('a', 'e'), target.clone()).prop_map(|(c, target)| ch(c, target)),
            (
                prop_oneof![Just("BACKSPACE"), Just("ENTER"), Just("ctrl+s")],
                target
            )
                .prop_map(|(n, target)| named(n, target)),
        ]
    }

    proptest! {
        /// Whatever the person does, the steps are bounded, never empty texts, never two text
        /// steps in a row for one control, and the typed characters survive in order when no
        /// BackSpace intervenes.
        #[test]
        fn merged_steps_are_well_formed(inputs in proptest::collection::vec(any_input(), 0..80)) {
            let steps = merge(&inputs);
            prop_assert!(steps.len() <= inputs.len());
            for w in steps.windows(2) {
                if let (Step::TypeText { target: a, .. }, Step::TypeText { target: b, .. }) = (&w[0], &w[1]) {
                    prop_assert_ne!(a, b);
                }
            }
            for s in &steps {
                if let Step::TypeText { text, .. } = s {
                    prop_assert!(!text.is_empty());
                }
                prop_assert!(!sentence(s).is_empty());
            }
            let backspace = inputs.iter().any(|i| matches!(i, Input::Key { key: Key::Named(n), .. } if n == "BACKSPACE"));
            if !backspace {
                let typed: String = inputs.iter().filter_map(|i| match i {
                    Input::Key { key: Key::Char(c), .. } => Some(*c),
                    _ => None,
                }).collect();
                let kept: String = steps.iter().filter_map(|s| match s {
                    Step::TypeText { text, .. } => Some(text.clone()),
                    _ => None,
                }).collect();
                prop_assert_eq!(typed, kept);
            }
        }
    }
}
