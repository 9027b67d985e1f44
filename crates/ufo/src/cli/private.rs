//! Which command runs on private desktops (`--desktop private`, a private device, a resumed
//! session that ran on one): the command line read into a [`Plan`] for `crate::private`.

use anyhow::{bail, Result};

use crate::private::{Options, Plan, INSIDE_VAR};

/// Whether this command runs on private desktops: `--desktop private` given, or a resumed
/// session that ran on one. `Err` is a usage error (`--watch` without a private desktop, ...).
pub fn plan(command: &super::Command) -> Result<Option<Plan>> {
    use super::demo::{DemoCommand, DemoDesktop};
    use super::Command;
    use super::McpCommand;
    // a session across devices with a private one (`--device a=private`) runs inside it
    let on_devices = |desktop: &str, remote: &super::RemoteArgs| {
        let private_device = remote.device.iter().any(|d| {
            d.split_once('=')
                .is_some_and(|(_, s)| s.trim() == "private")
        });
        Some(
            if private_device && desktop == "live" {
                "private"
            } else {
                desktop
            }
            .to_string(),
        )
    };
    let (desktop, private, desktops, batch) = match command {
        Command::Run(a) => (on_devices(&a.desktop, &a.remote), a.private, 1, false),
        Command::Follow(a) => (on_devices(&a.desktop, &a.remote), a.private, 1, false),
        Command::Resume(a) => {
            let recorded = || -> Option<String> {
                // a regular file only: a FIFO planted as run.json must not block the start
                let text = crate::folder::read_capped(&a.out.join("run.json"), 1 << 20).ok()?;
                let v: serde_json::Value = serde_json::from_slice(&text).ok()?;
                v["desktop"].as_str().map(str::to_string)
            };
            (a.desktop.clone().or_else(recorded), a.private, 1, false)
        }
        Command::Mcp(m) => match &m.command {
            McpCommand::Serve(a) => (Some(a.desktop.clone()), a.private, 1, false),
        },
        Command::Batch(a) => (Some(a.desktop.clone()), a.private, a.jobs.max(1), true),
        Command::Serve(a) if a.command.is_none() => (Some(a.desktop.clone()), a.private, 1, false),
        Command::Demo(DemoCommand::Record(a)) => {
            let desktop = match a.desktop {
                DemoDesktop::Live => "live",
                DemoDesktop::Private => "private",
            };
            (Some(desktop.to_string()), a.private, 1, false)
        }
        _ => return Ok(None),
    };
    let person = matches!(command, Command::Demo(_));
    let serves = matches!(command, Command::Serve(_));
    // inside a private desktop already: this is the command ufo runs there
    if std::env::var_os(INSIDE_VAR).is_some() {
        return Ok(None);
    }
    let kind = match desktop.as_deref().and_then(crate::desktop::private_kind) {
        Some(kind) => kind?,
        None => return not_private(desktop.as_deref(), &private, batch),
    };
    if kind.wayland() && (private.watch || private.scratch_home) {
        bail!(
            "--watch and --scratch-home are options of the private X desktop (--desktop \
             private); a private Wayland desktop is headless and its applications use its \
             user's HOME (docs/desktop.md)"
        );
    }
    Ok(Some(Plan {
        opts: Options {
            watch: private.watch,
            scratch_home: private.scratch_home,
        },
        kind,
        desktops,
        batch,
        person,
        serves,
    }))
}

/// A command on no private desktop: its private desktop's options are usage errors, and a
/// batch runs on a live or served desktop only.
fn not_private(
    desktop: Option<&str>,
    private: &super::PrivateArgs,
    batch: bool,
) -> Result<Option<Plan>> {
    if private.watch || private.scratch_home {
        bail!("--watch and --scratch-home are options of a private desktop; add --desktop private");
    }
    if batch
        && !desktop.is_some_and(crate::desktop::is_live)
        && !desktop.is_some_and(|d| d.starts_with("remote:"))
    {
        bail!(
            "ufo batch runs on --desktop live, wayland, private, private:sway, private:kwin, \
             private:gnome or remote:URL"
        );
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_private_device_runs_the_session_inside_a_private_desktop() {
        use clap::Parser;
        let plan_of = |args: &[&str]| {
            let cli = crate::cli::Cli::try_parse_from(args).expect("parses");
            plan(&cli.command).expect("a plan")
        };
        if std::env::var_os(INSIDE_VAR).is_some() {
            return; // inside a private desktop every plan is None
        }
        let both = plan_of(&[
            "ufo",
            "run",
            "--device",
            "a=private",
            "--device",
            "b=sim:x",
            "--watch",
            "x",
        ]);
        assert!(both.is_some_and(|p| p.opts.watch && p.desktops == 1));
        assert!(plan_of(&["ufo", "run", "--device", "a=sim:x", "x"]).is_none());
        // with another --desktop the options conflict; `ufo run` says so (no desktop started)
        assert!(plan_of(&[
            "ufo",
            "run",
            "--desktop",
            "sim:x",
            "--device",
            "a=private",
            "x"
        ])
        .is_none());
        assert!(plan_of(&["ufo", "follow", "p.json", "--device", "a=private"]).is_some());
    }

    #[test]
    fn a_demonstration_on_a_private_desktop_is_one_a_person_works_in() {
        use clap::Parser;
        let cli = crate::cli::Cli::try_parse_from([
            "ufo",
            "demo",
            "record",
            "--out",
            "d",
            "--desktop",
            "private",
            "--watch",
        ])
        .expect("parses");
        let plan = plan(&cli.command)
            .expect("no usage error")
            .expect("private");
        assert!(plan.person && plan.opts.watch && !plan.batch);
        assert_eq!(plan.desktops, 1);
        let live = crate::cli::Cli::try_parse_from(["ufo", "demo", "record", "--out", "d"])
            .expect("parses");
        assert!(plan_of(&live).is_none());
        let watch_live =
            crate::cli::Cli::try_parse_from(["ufo", "demo", "record", "--out", "d", "--watch"])
                .expect("parses");
        assert!(super::plan(&watch_live.command).is_err());
    }

    fn plan_of(cli: &crate::cli::Cli) -> Option<Plan> {
        plan(&cli.command).expect("no usage error")
    }
}
