//! A label means the control the model saw: before acting, the control behind the id is read
//! again and must still have the role and name it had in the observation the model answered.

use crate::a11y::bus::A11yBus;
use crate::controls::CtlInfo;
use crate::controls::Seen;
use crate::vocab::{role_name, NAME_FOLLOWS_CONTENT};
use crate::LinuxError;

/// Why `now` is not the control that was `seen`, if it is not.
pub(crate) fn changed(seen: &Seen, now_role: u32, now_name: &str) -> Option<String> {
    let name_checked = !NAME_FOLLOWS_CONTENT.contains(seen.role);
    if now_role == seen.role && (!name_checked || now_name.trim() == seen.name.trim()) {
        return None;
    }
    Some(format!(
        "it was {} {:?}, now it is {} {:?}",
        role_name(seen.role),
        seen.name,
        role_name(now_role),
        now_name
    ))
}

fn label_text(seen: &Seen) -> String {
    if seen.label == 0 {
        "the control".to_string()
    } else {
        format!("the control labelled {}", seen.label)
    }
}

/// Fail when the control behind `c` is gone or has another role or name than in the
/// observation it came from.
pub(crate) async fn check_unchanged(bus: &A11yBus, c: &CtlInfo) -> Result<(), LinuxError> {
    const ACC: &str = "org.a11y.atspi.Accessible";
    let now = futures::try_join!(
        bus.call::<_, u32>(&c.bus, &c.path, ACC, "GetRole", &()),
        bus.prop::<String>(&c.bus, &c.path, ACC, "Name"),
    );
    let why = match now {
        Ok((role, name)) => changed(&c.seen, role, &name),
        Err(LinuxError::Timeout { .. }) => None, // a busy application: the action will say
        Err(e) => Some(format!("it is gone ({e})")),
    };
    match why {
        None => Ok(()),
        Some(why) => Err(LinuxError::ActionFailed(format!(
            "{} changed since the last observation: {why}; observe the window again and \
             pick a label from the new control list",
            label_text(&c.seen)
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(role: u32, name: &str) -> Seen {
        Seen {
            role,
            name: name.into(),
            label: 17,
        }
    }

    #[test]
    fn same_role_and_name_is_unchanged() {
        assert_eq!(changed(&seen(43, "OK"), 43, "OK"), None);
    }

    #[test]
    fn another_role_or_name_is_a_change() {
        assert!(changed(&seen(43, "OK"), 43, "Cancel").is_some());
        assert!(changed(&seen(43, "OK"), 35, "OK").is_some());
        let s = seen(43, "OK");
        assert_eq!(label_text(&s), "the control labelled 17");
    }

    #[test]
    fn a_name_that_follows_content_is_not_compared() {
        // a GTK combo box is named by its chosen item
        assert_eq!(changed(&seen(11, "Red"), 11, "Green"), None);
        assert!(changed(&seen(11, "Red"), 43, "Red").is_some());
    }
}
