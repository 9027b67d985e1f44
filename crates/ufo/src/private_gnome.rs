//! The GNOME parts of `--desktop private:gnome` (docs/desktop.md, "Private Wayland desktops"):
//! the shell's own folders, a stand-in system bus, and the wait for the shell, which starts in
//! its Activities overview and is taken out of it.
//!
//! GNOME Shell 43 exits when it finds no system bus (its login manager connects to one; what
//! it asks there is only logged when missing), so the desktop has a plain dbus-daemon of its own
//! with an allow-all policy in its runtime folder: nothing but the desktop's processes is on it.
//! Nothing is started there that pretends to be a system service.
//!
//! GNOME Shell 43 starts `ibus-daemon` at start-up with `GLib.spawn_async` and a JavaScript
//! child-setup function. When another of the shell's threads holds a GLib type lock at the
//! fork, the forked copy waits for that lock forever before it can exec, and the shell waits
//! for the copy's exec report with it: the shell never answers (1 start in about 40 on a
//! 2-core machine, quiet or loaded). The wait below ends such a copy ([`stuck_forks`]); the
//! shell then reads the report as closed and goes on, as if ibus-daemon had started.

use std::collections::HashMap;
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
/// How long a copy of the shell may stay the shell's own program after its fork before it is
/// taken for one stuck before its exec (a fork and exec takes milliseconds, even loaded).
const STUCK_FORK: Duration = Duration::from_secs(2);
/// Longest wait for one `dbus-send`.
const SEND_WAIT: Duration = Duration::from_secs(3);
/// Longest wait for one `dbus-send` while the shell has not answered yet: short, so that a
/// copy stuck before its exec is seen again soon (a shell that answers does so in ms).
const PROBE_WAIT: Duration = Duration::from_millis(500);
/// The shell's object and interface.
const SHELL: [&str; 3] = ["org.gnome.Shell", "/org/gnome/Shell", "org.gnome.Shell"];

/// The stand-in system bus configuration listening at `socket`.
pub(super) fn system_bus_config(socket: &Path) -> String {
    SYSTEM_BUS_CONFIG.replace("{listen}", &format!("unix:path={}", socket.display()))
}

/// Wait until GNOME Shell (process `shell`) answers on the session bus at `bus` (bounded by
/// `within`), ending a copy of it stuck before its exec (module doc), then take it out of the
/// Activities overview it starts in (an application started from outside would open as a
/// thumbnail there, and no window would have the focus). `log` is the shell's log, named in
/// errors.
pub(super) fn shell_ready(bus: &str, shell: u32, log: &Path, within: Duration) -> Result<()> {
    let started = Instant::now();
    let deadline = started + within;
    let mut forks = HashMap::new();
    let mut overview = overview_active(bus, PROBE_WAIT);
    while overview.is_none() {
        end_stuck_forks(shell, &mut forks);
        if Instant::now() > deadline {
            bail!(
                "GNOME Shell did not answer on its session bus (org.gnome.Shell) within {} s; \
                 see {}",
                within.as_secs(),
                log.display()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
        overview = overview_active(bus, PROBE_WAIT);
    }
    // the overview comes at the end of the start animation: wait for it before leaving it
    let shown_by = Instant::now() + OVERVIEW_SHOWN_WAIT;
    while overview != Some(true) && Instant::now() < shown_by {
        std::thread::sleep(Duration::from_millis(50));
        overview = overview_active(bus, SEND_WAIT);
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
            SEND_WAIT,
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
        overview = overview_active(bus, SEND_WAIT);
    }
    tracing::info!(
        "GNOME Shell up, out of its overview, {} ms after its start",
        started.elapsed().as_millis()
    );
    Ok(())
}

/// End the copies of the shell `shell` that have stayed its own program for [`STUCK_FORK`];
/// `first_seen` keeps when each copy was first seen, between calls.
fn end_stuck_forks(shell: u32, first_seen: &mut HashMap<u32, Instant>) {
    let Ok(program) = std::fs::read_link(format!("/proc/{shell}/exe")) else {
        return;
    };
    let copies: Vec<u32> = children_of(shell)
        .into_iter()
        .filter(|c| std::fs::read_link(format!("/proc/{c}/exe")).is_ok_and(|p| p == program))
        .collect();
    for pid in stuck_forks(&copies, first_seen, Instant::now(), STUCK_FORK) {
        tracing::warn!(
            "GNOME Shell's copy {pid} stayed stuck before its exec for {} s (a GNOME Shell 43 \
             lock taken at the fork): ended so that the shell goes on",
            STUCK_FORK.as_secs()
        );
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid as i32),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
}

/// Of the shell's copies `copies` (children still running the shell's program), those seen
/// as such for at least `stuck` by `now`; `first_seen` is updated (copies gone are dropped).
fn stuck_forks(
    copies: &[u32],
    first_seen: &mut HashMap<u32, Instant>,
    now: Instant,
    stuck: Duration,
) -> Vec<u32> {
    first_seen.retain(|pid, _| copies.contains(pid));
    copies
        .iter()
        .filter(|pid| now.duration_since(*first_seen.entry(**pid).or_insert(now)) >= stuck)
        .copied()
        .collect()
}

/// The child processes of `pid` (of any of its threads), from `/proc`.
fn children_of(pid: u32) -> Vec<u32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .filter_map(|t| t.ok())
        .filter_map(|t| std::fs::read_to_string(t.path().join("children")).ok())
        .flat_map(|text| {
            text.split_whitespace()
                .filter_map(|w| w.parse().ok())
                .collect::<Vec<u32>>()
        })
        .collect()
}

/// Whether the shell shows its overview (`None`: it does not answer within `wait`).
fn overview_active(bus: &str, wait: Duration) -> Option<bool> {
    let out = dbus_send(
        bus,
        wait,
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

/// `dbus-send --print-reply` on the bus at `address`, its reply awaited up to `wait`; its output
/// when it succeeded.
fn dbus_send(address: &str, wait: Duration, args: &[&str]) -> Option<String> {
    let mut child = Command::new("dbus-send")
        .arg(format!("--bus={address}"))
        .arg("--print-reply")
        .arg(format!("--reply-timeout={}", wait.as_millis()))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let deadline = Instant::now() + wait + Duration::from_millis(500);
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
    fn a_copy_of_the_shell_is_stuck_only_once_seen_as_one_for_the_whole_wait() {
        let stuck = Duration::from_secs(2);
        let mut seen = HashMap::new();
        let t0 = Instant::now();
        assert!(stuck_forks(&[7], &mut seen, t0, stuck).is_empty());
        let later = t0 + Duration::from_millis(1500);
        assert!(stuck_forks(&[7, 9], &mut seen, later, stuck).is_empty());
        let end = t0 + Duration::from_secs(2);
        assert_eq!(stuck_forks(&[7, 9], &mut seen, end, stuck), vec![7]);
        // a copy that exec'd (gone from the list) starts over when seen again
        assert!(stuck_forks(&[9], &mut seen, end, stuck).is_empty());
        assert!(!seen.contains_key(&7));
        assert!(stuck_forks(&[7, 9], &mut seen, end, stuck).is_empty());
        assert_eq!(
            stuck_forks(&[7, 9], &mut seen, t0 + Duration::from_secs(4), stuck),
            vec![7, 9]
        );
    }

    #[test]
    fn the_children_of_this_process_include_one_it_started() {
        let mut child = Command::new("sleep").arg("5").spawn().expect("sleep");
        let children = children_of(std::process::id());
        let _ = child.kill();
        let _ = child.wait();
        assert!(children.contains(&child.id()), "{children:?}");
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
