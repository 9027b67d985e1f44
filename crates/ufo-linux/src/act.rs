//! Actions on controls: AT-SPI where the control supports it, XTEST otherwise; each returns
//! once the window has reacted or the settle time has passed.

use ufo_core::{Button, ScrollDirection, UiAction};

use crate::bus::{iface, state};
use crate::desktop::{parse_window_id, CtlInfo, LinuxDesktop};
use crate::keys::{parse_keys, KeyStep};
use crate::LinuxError;

/// Action names that mean "click" in the toolkits we know (matched case-insensitively;
/// GTK3 says "click", GTK4 "click" or "Click", others "press"/"activate").
const CLICK_ACTIONS: &[&str] = &["click", "press", "activate", "jump", "toggle", "open"];

fn centre(c: &CtlInfo) -> (i32, i32) {
    (
        c.rect.x + c.rect.w as i32 / 2,
        c.rect.y + c.rect.h as i32 / 2,
    )
}

impl LinuxDesktop {
    async fn control(&self, window: &str, control_id: &str) -> Result<CtlInfo, LinuxError> {
        let known = self.lock().controls.get(control_id).cloned();
        if let Some(mut c) = known {
            // the engine's observation leaves action names to the action that needs them
            if c.actions.is_empty() && c.ifaces & iface::ACTION != 0 {
                c.actions = self.bus.actions(&c.bus, &c.path).await.unwrap_or_default();
            }
            return Ok(c);
        }
        // not seen yet (or the window changed): observe once and look again
        self.observe_with(window, true).await?;
        self.lock()
            .controls
            .get(control_id)
            .cloned()
            .ok_or_else(|| LinuxError::NoControl {
                window: window.to_string(),
                control: control_id.to_string(),
            })
    }

    async fn do_action(&self, c: &CtlInfo, index: usize) -> Result<bool, LinuxError> {
        self.bus
            .call(
                &c.bus,
                &c.path,
                "org.a11y.atspi.Action",
                "DoAction",
                &(index as i32,),
            )
            .await
    }

    async fn grab_focus(&self, c: &CtlInfo) -> bool {
        if c.ifaces & iface::COMPONENT == 0 {
            return false;
        }
        self.bus
            .call::<_, bool>(
                &c.bus,
                &c.path,
                "org.a11y.atspi.Component",
                "GrabFocus",
                &(),
            )
            .await
            .unwrap_or(false)
    }

    async fn xclick(
        &self,
        xid: u32,
        x: i32,
        y: i32,
        button: u8,
        count: u32,
    ) -> Result<(), LinuxError> {
        self.activate(xid).await?;
        self.x11(move |xx| xx.click(x, y, button, count)).await
    }

    async fn send_keys(&self, steps: Vec<KeyStep>) -> Result<(), LinuxError> {
        self.x11(move |x| {
            for KeyStep::Chord { mods, key } in &steps {
                x.chord(mods, *key)?;
            }
            Ok(())
        })
        .await
    }

    /// Focus a control for typing: AT-SPI focus, else a click on it.
    async fn focus_for_typing(&self, xid: u32, c: &CtlInfo) -> Result<(), LinuxError> {
        self.activate(xid).await?;
        if c.states & state::FOCUSED != 0 {
            return Ok(());
        }
        if !self.grab_focus(c).await {
            let (x, y) = centre(c);
            self.x11(move |xx| xx.click(x, y, 1, 1)).await?;
        }
        Ok(())
    }

    async fn read(&self, c: &CtlInfo) -> Result<String, LinuxError> {
        if c.ifaces & iface::TEXT != 0 {
            return self.bus.text(&c.bus, &c.path).await;
        }
        if c.ifaces & iface::VALUE != 0 {
            return Ok(format!("{}", self.bus.value(&c.bus, &c.path).await?));
        }
        Ok(c.name.clone())
    }

    /// Perform an action and wait for the window to settle.
    pub(crate) async fn perform(
        &self,
        window: &str,
        control_id: Option<&str>,
        action: &UiAction,
    ) -> Result<String, LinuxError> {
        let xid = parse_window_id(window)?;
        let ctl = match (control_id, action.needs_control()) {
            (Some(id), _) => Some(self.control(window, id).await?),
            (None, true) => {
                return Err(LinuxError::Unsupported(format!(
                    "{} needs a control; give a ControlLabel",
                    action.name()
                )))
            }
            (None, false) => None,
        };
        let before = self.fingerprint(xid).await;
        self.lock().last_window = Some(xid);
        let result = self.run_action(xid, window, ctl.as_ref(), action).await?;
        if !matches!(action, UiAction::ReadText) {
            self.settle_window(xid, before).await;
        }
        Ok(result)
    }

    async fn run_action(
        &self,
        xid: u32,
        window: &str,
        ctl: Option<&CtlInfo>,
        action: &UiAction,
    ) -> Result<String, LinuxError> {
        let need = || {
            ctl.ok_or_else(|| LinuxError::Unsupported(format!("{} needs a control", action.name())))
        };
        match action {
            UiAction::Click { button, double } => {
                let c = need()?;
                if matches!(button, Button::Left) && !double {
                    let idx = c
                        .actions
                        .iter()
                        .position(|a| CLICK_ACTIONS.contains(&a.to_lowercase().as_str()));
                    if let Some(i) = idx {
                        if self.do_action(c, i).await? {
                            return Ok(format!("clicked {:?} ({})", c.name, c.actions[i]));
                        }
                    }
                }
                let b = match button {
                    Button::Left => 1,
                    Button::Middle => 2,
                    Button::Right => 3,
                };
                let (x, y) = centre(c);
                self.xclick(xid, x, y, b, if *double { 2 } else { 1 })
                    .await?;
                Ok(format!("clicked {:?} at {x},{y}", c.name))
            }
            UiAction::ClickAt { x, y } => {
                let w = self.xwindow(window).await?;
                if *x < 0 || *y < 0 || *x >= w.w as i32 || *y >= w.h as i32 {
                    return Err(LinuxError::ActionFailed(format!(
                        "click_at {x},{y} is outside the window ({}x{})",
                        w.w, w.h
                    )));
                }
                self.xclick(xid, w.x + x, w.y + y, 1, 1).await?;
                Ok(format!("clicked at {x},{y}"))
            }
            UiAction::SetText { text } => {
                let c = need()?;
                if c.ifaces & iface::EDITABLE_TEXT != 0 {
                    let ok: bool = self
                        .bus
                        .call(
                            &c.bus,
                            &c.path,
                            "org.a11y.atspi.EditableText",
                            "SetTextContents",
                            &(text.as_str(),),
                        )
                        .await
                        .unwrap_or(false);
                    if ok && self.read(c).await.ok().as_deref() == Some(text.as_str()) {
                        return Ok(format!("set the text of {:?}", c.name));
                    }
                }
                self.focus_for_typing(xid, c).await?;
                let mut steps = vec![KeyStep::Chord {
                    mods: vec![crate::keys::sym::CONTROL_L],
                    key: 'a' as u32,
                }];
                steps.push(KeyStep::Chord {
                    mods: vec![],
                    key: 0xffff, // Delete
                });
                steps.extend(text.chars().map(|ch| KeyStep::Chord {
                    mods: vec![],
                    key: crate::keys::char_keysym(ch),
                }));
                self.send_keys(steps).await?;
                Ok(format!("typed the new text into {:?}", c.name))
            }
            UiAction::TypeKeys { keys } => {
                let steps = parse_keys(keys)?;
                match ctl {
                    Some(c) => self.focus_for_typing(xid, c).await?,
                    None => self.activate(xid).await?,
                }
                let n = steps.len();
                self.send_keys(steps).await?;
                Ok(format!("typed {n} keys"))
            }
            UiAction::Scroll { direction, amount } => {
                let c = need()?;
                let (x, y) = centre(c);
                let b = match direction {
                    ScrollDirection::Up => 4,
                    ScrollDirection::Down => 5,
                };
                self.xclick(xid, x, y, b, (*amount).clamp(1, 50)).await?;
                Ok(format!("scrolled {:?} {amount}", c.name))
            }
            UiAction::Select { item } => {
                let c = need()?;
                self.select(xid, c, item).await
            }
            UiAction::ReadText => {
                let c = need()?;
                self.read(c).await
            }
            UiAction::Focus => {
                let c = need()?;
                if self.grab_focus(c).await {
                    Ok(format!("focused {:?}", c.name))
                } else {
                    let (x, y) = centre(c);
                    self.xclick(xid, x, y, 1, 1).await?;
                    Ok(format!("clicked {:?} to focus it", c.name))
                }
            }
        }
    }

    /// Choose an entry of a list or combo box: through the Selection interface when the entry
    /// is a direct child, else by clicking (opening the combo first).
    async fn select(&self, xid: u32, c: &CtlInfo, item: &str) -> Result<String, LinuxError> {
        let want = item.trim().to_lowercase();
        let find = |tree: &crate::bus::AppTree| -> Option<(String, String, i32, u32)> {
            // entries named as the observation names them ("Desktop" for a places row whose
            // own name is empty), entries first, then any node; exact, then substring
            let nodes: Vec<(&crate::bus::Node, String)> = tree
                .subtree(&c.path, 5000)
                .into_iter()
                .skip(1)
                .map(|n| (n, crate::observe::display_name(tree, n).to_lowercase()))
                .collect();
            let entry = |n: &crate::bus::Node| crate::observe::is_entry(n.role);
            let hit = nodes
                .iter()
                .find(|(n, name)| entry(n) && *name == want)
                .or_else(|| nodes.iter().find(|(_, name)| *name == want))
                .or_else(|| {
                    nodes
                        .iter()
                        .find(|(n, name)| entry(n) && name.contains(&want))
                })
                .or_else(|| nodes.iter().find(|(_, name)| name.contains(&want)))?;
            let n = hit.0;
            Some((n.path.clone(), n.parent.clone(), n.index, n.ifaces))
        };
        let mut tree = self.bus.tree(&c.bus).await?;
        // entries the application's cache lacks (GTK3 dialogs, GTK4) come from a walk
        let mut ignored = Vec::new();
        if !tree.nodes.contains_key(&c.path) {
            tree.insert(self.bus.node(&c.bus, &c.path, "", 0).await?);
        }
        self.complete_tree(&c.bus, &mut tree, &c.path, true, &mut ignored)
            .await;
        let mut found = find(&tree);
        if found.is_none() {
            // a closed GTK3 combo box builds its menu lazily: open it and look again
            if let Some(i) = c
                .actions
                .iter()
                .position(|a| CLICK_ACTIONS.contains(&a.to_lowercase().as_str()))
            {
                let _ = self.do_action(c, i).await;
                tokio::time::sleep(self.config.settle_time / 2).await;
                tree = self.bus.tree(&c.bus).await?;
                if !tree.nodes.contains_key(&c.path) {
                    tree.insert(self.bus.node(&c.bus, &c.path, "", 0).await?);
                }
                self.complete_tree(&c.bus, &mut tree, &c.path, true, &mut ignored)
                    .await;
                found = find(&tree);
            }
        }
        let Some((path, parent, index, ifaces)) = found else {
            let names: Vec<String> = tree
                .subtree(&c.path, 200)
                .iter()
                .skip(1)
                .filter(|n| crate::observe::is_entry(n.role))
                .map(|n| crate::observe::display_name(&tree, n))
                .filter(|n| !n.is_empty())
                .take(30)
                .collect();
            return Err(LinuxError::ActionFailed(format!(
                "{:?} has no entry {item:?}; entries: {}",
                c.name,
                names.join(", ")
            )));
        };
        let parent_selectable = tree
            .nodes
            .get(&parent)
            .is_some_and(|p| p.ifaces & iface::SELECTION != 0);
        if parent_selectable {
            let ok: bool = self
                .bus
                .call(
                    &c.bus,
                    &parent,
                    "org.a11y.atspi.Selection",
                    "SelectChild",
                    &(index,),
                )
                .await
                .unwrap_or(false);
            if ok {
                return Ok(format!("selected {item:?} in {:?}", c.name));
            }
        }
        if ifaces & iface::ACTION != 0 {
            let acts = self.bus.actions(&c.bus, &path).await.unwrap_or_default();
            if let Some(i) = acts
                .iter()
                .position(|a| CLICK_ACTIONS.contains(&a.to_lowercase().as_str()))
            {
                let ok: bool = self
                    .bus
                    .call(
                        &c.bus,
                        &path,
                        "org.a11y.atspi.Action",
                        "DoAction",
                        &(i as i32,),
                    )
                    .await?;
                if ok {
                    return Ok(format!("selected {item:?} in {:?}", c.name));
                }
            }
        }
        // last resort: click the entry where it is drawn
        let (x, y, w, h) = self.bus.extents(&c.bus, &path).await?;
        if x == i32::MIN || w <= 0 || h <= 0 {
            return Err(LinuxError::ActionFailed(format!(
                "entry {item:?} of {:?} is not on screen and cannot be selected",
                c.name
            )));
        }
        self.xclick(xid, x + w / 2, y + h / 2, 1, 1).await?;
        Ok(format!("clicked entry {item:?} of {:?}", c.name))
    }
}
