//! The GNOME parts of `--desktop private:gnome` (docs/desktop.md, "Private Wayland desktops"):
//! the shell's own folders, a stand-in system bus, and the wait for the shell, which starts in
//! its Activities overview and is taken out of it.
//!
//! GNOME Shell 43 exits when it finds no system bus (its login manager connects to one; what
//! it asks there is only logged when missing), so the desktop has a plain dbus-daemon of its own
//! with an allow-all policy in its runtime folder: nothing but the desktop's processes is on it.
//! Nothing is started there that pretends to be a system service.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Result};

/// The Wayland socket name of a private GNOME Shell (in its runtime folder).
pub(super) const SOCKET: &str = "wayland-ufo";

/// The shell's folders (settings, data, state, caches) in the desktop's state folder, not the
/// user's home: each variable and the folder's name.
pub(super) const FOLDERS: [(&str, &str); 4] = [
    ("XDG_CONFIG_HOME", "gnome-config"),
    ("XDG_DATA_HOME", "gnome-data"),
    ("XDG_CACHE_HOME", "gnome-cache"),
    ("XDG_STATE_HOME", "gnome-state"),
];

/// The mark GNOME Shell leaves once it has warned that it cannot lock the screen (no GDM): its
/// folder in the data folder (under the state folder) and its name. Made before the shell
/// starts, so that no banner covers the top of the windows for the first seconds.
pub(super) const LOCK_WARNING: (&str, &str) = ("gnome-data/gnome-shell", "lock-warning-shown");

/// The stand-in system bus's configuration; `{listen}` is its socket's address. A `system`
/// bus denies replies by default (every client then hangs on its first call): this one lets
/// everything through, since only the desktop's own processes reach its socket (0700 folder).
const SYSTEM_BUS_CONFIG: &str = r#"<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>{listen}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*"/>
    <allow own="*"/>
    <allow receive_sender="*"/>
    <allow send_type="method_call"/>
    <allow receive_type="signal"/>
  </policy>
</busconfig>
"#;

/// Longest wait for the shell to show its start-up overview once it is on the bus (it shows
/// it at the end of its start animation; a change made before is undone).
const OVERVIEW_SHOWN_WAIT: Duration = Duration::from_secs(4);
/// Longest wait for one `dbus-send`.
const SEND_WAIT: Duration = Duration::from_secs(3);
/// The shell's object and interface.
const SHELL: [&str; 3] = ["org.gnome.Shell", "/org/gnome/Shell", "org.gnome.Shell"];

/// The stand-in system bus configuration listening at `socket`.
pub(super) fn system_bus_config(socket: &Path) -> String {
    SYSTEM_BUS_CONFIG.replace("{listen}", &format!("unix:path={}", socket.display()))
}

/// Wait until GNOME Shell answers on the session bus at `bus` (bounded by `within`), then take
/// it out of the Activities overview it starts in (an application started from outside would
/// open as a thumbnail there, and no window would have the focus). `log` is the shell's log,
/// named in errors.
pub(super) fn shell_ready(bus: &str, log: &Path, within: Duration) -> Result<()> {
    let started = Instant::now();
    let deadline = started + within;
    let mut overview = overview_active(bus);
    while overview.is_none() {
        if Instant::now() > deadline {
            bail!(
                "GNOME Shell did not answer on its session bus (org.gnome.Shell) within {} s; \
                 see {}",
                within.as_secs(),
                log.display()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
        overview = overview_active(bus);
    }
    // the overview comes at the end of the start animation: wait for it before leaving it
    let shown_by = Instant::now() + OVERVIEW_SHOWN_WAIT;
    while overview != Some(true) && Instant::now() < shown_by {
        std::thread::sleep(Duration::from_millis(50));
        overview = overview_active(bus);
    }
    let left_by = Instant::now() + OVERVIEW_SHOWN_WAIT;
    while overview != Some(false) {
        if Instant::now() > left_by {
            bail!(
                "GNOME Shell stayed in its Activities overview (setting org.gnome.Shell \
                 OverviewActive to false did not hold); see {}",
                log.display()
            );
        }
        dbus_send(
            bus,
            &[
                &format!("--dest={}", SHELL[0]),
                SHELL[1],
                "org.freedesktop.DBus.Properties.Set",
                &format!("string:{}", SHELL[2]),
                "string:OverviewActive",
                "variant:boolean:false",
            ],
        );
        std::thread::sleep(Duration::from_millis(100));
        overview = overview_active(bus);
    }
    tracing::info!(
        "GNOME Shell up, out of its overview, {} ms after its start",
        started.elapsed().as_millis()
    );
    Ok(())
}

/// Whether the shell shows its overview (`None`: it does not answer yet).
fn overview_active(bus: &str) -> Option<bool> {
    let out = dbus_send(
        bus,
        &[
            &format!("--dest={}", SHELL[0]),
            SHELL[1],
            "org.freedesktop.DBus.Properties.Get",
            &format!("string:{}", SHELL[2]),
            "string:OverviewActive",
        ],
    )?;
    parse_boolean_reply(&out)
}

/// The boolean in `dbus-send --print-reply`'s output of a property read (`variant boolean
/// true`).
pub(super) fn parse_boolean_reply(out: &str) -> Option<bool> {
    out.split_whitespace()
        .skip_while(|w| *w != "boolean")
        .nth(1)
        .and_then(|w| match w {
            "true" => Some(true),
            "false" => Some(false),
            _ => None,
        })
}

/// `dbus-send --print-reply` on the bus at `address` (bounded); its output when it succeeded.
fn dbus_send(address: &str, args: &[&str]) -> Option<String> {
    let mut child = Command::new("dbus-send")
        .arg(format!("--bus={address}"))
        .arg("--print-reply")
        .arg(format!("--reply-timeout={}", SEND_WAIT.as_millis()))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let deadline = Instant::now() + SEND_WAIT + Duration::from_millis(500);
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(10)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    };
    let mut out = String::new();
    // a reply of a few lines: the pipe holds it whole once the program has ended
    child
        .stdout
        .take()?
        .take(64 * 1024)
        .read_to_string(&mut out)
        .ok()?;
    status.success().then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_system_bus_stand_in_listens_in_the_runtime_folder_and_lets_replies_through() {
        let text = system_bus_config(Path::new("/run/x/system_bus_socket"));
        assert!(text.contains("<listen>unix:path=/run/x/system_bus_socket</listen>"));
        // a system bus's default policy denies replies: every client hung without these
        assert!(text.contains(r#"<allow receive_sender="*"/>"#));
        assert!(text.contains(r#"<allow send_destination="*"/>"#));
    }

    #[test]
    fn property_replies_read_as_booleans() {
        let reply = "method return time=1 sender=:1.3 -> destination=:1.9 serial=5 \
                     reply_serial=2\n   variant       boolean true\n";
        assert_eq!(parse_boolean_reply(reply), Some(true));
        assert_eq!(
            parse_boolean_reply("   variant       boolean false\n"),
            Some(false)
        );
        assert_eq!(parse_boolean_reply("Error org.freedesktop.DBus"), None);
        assert_eq!(parse_boolean_reply("variant boolean maybe"), None);
    }
}
