//! What is known of the applications on the accessibility bus ([`KnownApps`]): their names,
//! their toolkits' habits (GTK 4's window-relative extents, GTK 2's hidden menus) and which
//! bus name each process has, learnt once and asked again on a miss.

use std::collections::HashMap;

use super::bus::A11yBus;
use crate::part::Part;
use crate::vocab::ROOT_PATH;
use crate::LinuxError;

#[derive(Default)]
struct Facts {
    /// bus name → application name
    names: HashMap<String, String>,
    /// bus name → whether extents are window-relative (GTK4)
    relative: HashMap<String, bool>,
    /// bus name → whether the application is GTK2 (open menus need `crate::apps::menus`)
    gtk2: HashMap<String, bool>,
    /// bus name → whether the application draws an update in one frame (GTK 4)
    one_frame: HashMap<String, bool>,
    /// bus name → whether the application is Qt's (its popups come from a11y/shown.rs)
    qt: HashMap<String, bool>,
    /// pid → bus name of applications on the accessibility bus (refreshed on a miss)
    bus_by_pid: HashMap<u32, String>,
}

/// What is known of the applications on the bus, behind a lock of its own. `a11y` in its
/// methods is the bus to ask on a miss; `app` an application's bus name.
#[derive(Default)]
pub(crate) struct KnownApps(Part<Facts>);

/// Whether a toolkit name and version are GTK2's (its bridge calls itself GAIL).
pub(crate) fn is_gtk2(toolkit: &str, version: &str) -> bool {
    toolkit.eq_ignore_ascii_case("gail")
        || (toolkit.eq_ignore_ascii_case("gtk") && version.starts_with('2'))
}

/// Whether a toolkit draws an update in one frame, so that settling after an action ends one
/// frame after the application answered a ping (`act::settle::SettleParams::frame`): GTK 4
/// (its frame clock lays out and paints the whole window at once, after the handlers ran;
/// measured on gnome-calculator). Not LibreOffice (VCL paints a cell, the formula bar and the
/// Name Box from idle handlers of its own, up to 42 ms apart, and redraws a Writer line
/// 260-300 ms later), nor the others, unmeasured (GTK 3 and 2, Qt, Chromium, Firefox).
pub(crate) fn draws_in_one_frame(toolkit: &str, version: &str) -> bool {
    let major = version
        .split('.')
        .next()
        .and_then(|m| m.trim().parse::<u32>().ok());
    toolkit.trim().eq_ignore_ascii_case("gtk") && major >= Some(4)
}

impl KnownApps {
    /// Applications on the accessibility bus by pid: pid → bus name (asked now).
    pub(crate) async fn by_pid(a11y: &A11yBus) -> Result<HashMap<u32, String>, LinuxError> {
        let apps = a11y.applications().await?;
        Ok(apps
            .into_iter()
            .filter_map(|(bus, pid)| pid.map(|p| (p, bus)))
            .collect())
    }

    /// Bus names for these pids, from what is known unless one is missing or `refresh`.
    pub(crate) async fn bus_map(
        &self,
        a11y: &A11yBus,
        pids: &[u32],
        refresh: bool,
    ) -> HashMap<u32, String> {
        if !refresh {
            let st = self.0.lock();
            if pids.iter().all(|p| st.bus_by_pid.contains_key(p)) {
                return st.bus_by_pid.clone();
            }
        }
        let map = Self::by_pid(a11y).await.unwrap_or_default();
        self.0.lock().bus_by_pid = map.clone();
        map
    }

    /// The application's name (its root accessible's).
    pub(crate) async fn name(&self, a11y: &A11yBus, app: &str) -> Option<String> {
        if let Some(n) = self.0.lock().names.get(app) {
            return Some(n.clone());
        }
        let name = a11y
            .prop::<String>(app, ROOT_PATH, "org.a11y.atspi.Accessible", "Name")
            .await
            .ok()?;
        self.0.lock().names.insert(app.to_string(), name.clone());
        Some(name)
    }

    /// Whether the application's extents are relative to its window (GTK 4).
    pub(crate) async fn is_relative(&self, a11y: &A11yBus, app: &str) -> bool {
        self.toolkit_fact(
            a11y,
            app,
            |f| &mut f.relative,
            |tk, version| tk.eq_ignore_ascii_case("gtk") && version.starts_with('4'),
        )
        .await
    }

    /// Whether the application is GTK2 (asked once per application).
    pub(crate) async fn is_gtk2(&self, a11y: &A11yBus, app: &str) -> bool {
        self.toolkit_fact(a11y, app, |f| &mut f.gtk2, is_gtk2).await
    }

    /// Whether the application is Qt's (its popups are not listed: a11y/shown.rs).
    pub(crate) async fn is_qt(&self, a11y: &A11yBus, app: &str) -> bool {
        self.toolkit_fact(
            a11y,
            app,
            |f| &mut f.qt,
            |tk, _| tk.eq_ignore_ascii_case("qt"),
        )
        .await
    }

    /// Whether the application draws an update in one frame ([`draws_in_one_frame`]).
    pub(crate) async fn draws_in_one_frame(&self, a11y: &A11yBus, app: &str) -> bool {
        self.toolkit_fact(a11y, app, |f| &mut f.one_frame, draws_in_one_frame)
            .await
    }

    /// A fact of the application's toolkit (`judge` of its name and version), kept in `slot`:
    /// the toolkit is asked once per application.
    async fn toolkit_fact(
        &self,
        a11y: &A11yBus,
        app: &str,
        slot: fn(&mut Facts) -> &mut HashMap<String, bool>,
        judge: fn(&str, &str) -> bool,
    ) -> bool {
        if let Some(v) = slot(&mut self.0.lock()).get(app) {
            return *v;
        }
        let (tk, version) = a11y.toolkit(app).await;
        let v = judge(&tk, &version);
        slot(&mut self.0.lock()).insert(app.to_string(), v);
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gtk_4_alone_draws_an_update_in_one_frame() {
        assert!(draws_in_one_frame("GTK", "4.8.3"));
        assert!(draws_in_one_frame("gtk", "4.14"));
        assert!(!draws_in_one_frame("GTK", "3.24.38"));
        assert!(!draws_in_one_frame("VCL", "7.4"));
        assert!(!draws_in_one_frame("Qt", "6.4.2"));
        assert!(!draws_in_one_frame("GAIL", "2.24.33"));
        assert!(!draws_in_one_frame("Chromium", "120"));
        assert!(!draws_in_one_frame("", ""));
    }

    #[test]
    fn gtk2_is_recognised_by_its_bridge() {
        assert!(is_gtk2("GAIL", "2.24.33"));
        assert!(!is_gtk2("GTK", "3.24.38"));
        assert!(!is_gtk2("Chromium", "148"));
    }
}
