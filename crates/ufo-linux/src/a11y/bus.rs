//! The accessibility bus: connection, bounded calls, and the `Cache.GetItems` fast path.

use std::collections::HashMap;
use std::time::Duration;

use atspi::proxy::bus::{BusProxy, StatusProxy};
use serde::de::DeserializeOwned;
use serde::Serialize;
use zbus::zvariant::{DynamicType, OwnedValue, Type};

use crate::error::cause;
use crate::vocab::{state, ROOT_PATH};
use crate::LinuxError;

pub(crate) use super::node::{iface_bits, node_of, state_bits, Node, ObjRef, RawItem};

/// A connection to the accessibility bus with every call bounded, plus direct (peer-to-peer)
/// connections to the applications that offer one (GTK3), which skip the bus daemon's hop.
#[derive(Clone)]
pub(crate) struct A11yBus {
    pub conn: zbus::Connection,
    pub timeout: Duration,
    /// bus name → direct connection (`None`: the application offers none)
    peers: std::sync::Arc<std::sync::Mutex<HashMap<String, Option<zbus::Connection>>>>,
    /// bus name → its top-level windows when last listed (read again at once with the next
    /// listing, see `live_windows`)
    tops: std::sync::Arc<std::sync::Mutex<HashMap<String, Vec<String>>>>,
    /// bus name → how its action names are read (asked once per application)
    action_reads: std::sync::Arc<std::sync::Mutex<HashMap<String, ActionNames>>>,
    /// event counts by application (`None`: not listening, nothing is kept)
    pub changes: Option<crate::a11y::events::Changes>,
    /// The popups the applications show without listing them (Qt's menus, shown.rs).
    pub shown: crate::a11y::shown::Shown,
    /// The bus's address, as `org.a11y.Bus` gave it (what launched applications must use).
    pub address: String,
}

async fn bounded<T, F>(what: &str, timeout: Duration, fut: F) -> Result<T, LinuxError>
where
    F: std::future::Future<Output = Result<T, zbus::Error>>,
{
    match tokio::time::timeout(timeout, fut).await {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(source)) => Err(LinuxError::A11yBus {
            what: what.to_string(),
            source: Box::new(source),
        }),
        Err(_) => Err(LinuxError::Timeout {
            what: what.to_string(),
            ms: timeout.as_millis() as u64,
        }),
    }
}

impl A11yBus {
    /// Find the accessibility bus through the session bus (at `session_bus`, else
    /// `DBUS_SESSION_BUS_ADDRESS`'s), switch accessibility on if it is off, and connect.
    pub async fn connect(
        timeout: Duration,
        session_bus: Option<&str>,
    ) -> Result<A11yBus, LinuxError> {
        if session_bus.is_none() && std::env::var_os("DBUS_SESSION_BUS_ADDRESS").is_none() {
            return Err(LinuxError::NoSessionBus);
        }
        let session = bounded("connect to the session bus", timeout, async {
            let builder = match session_bus {
                Some(address) => zbus::connection::Builder::address(address)?,
                None => zbus::connection::Builder::session()?,
            };
            builder.method_timeout(timeout).build().await
        })
        .await?;
        let status = bounded("org.a11y.Status", timeout, StatusProxy::new(&session)).await?;
        let enabled = bounded("org.a11y.Status.IsEnabled", timeout, status.is_enabled()).await?;
        if !enabled {
            bounded(
                "set org.a11y.Status.IsEnabled",
                timeout,
                status.set_is_enabled(true),
            )
            .await?;
        }
        let bus = bounded("org.a11y.Bus", timeout, BusProxy::new(&session)).await?;
        let address = bounded("org.a11y.Bus.GetAddress", timeout, bus.get_address()).await?;
        let conn = bounded("connect to the accessibility bus", timeout, async {
            zbus::connection::Builder::address(address.as_str())?
                .method_timeout(timeout)
                .build()
                .await
        })
        .await?;
        let changes = crate::a11y::events::Changes::start(&conn, timeout).await;
        let shown = crate::a11y::shown::Shown::new(&conn, timeout);
        let bus = A11yBus {
            conn,
            timeout,
            peers: Default::default(),
            tops: Default::default(),
            action_reads: Default::default(),
            changes,
            shown,
            address: address.to_string(),
        };
        bus.become_client().await;
        Ok(bus)
    }

    /// GTK3's accessibility bridge publishes its `Cache` object only once some client listens
    /// to events: register a rare event, so every application (running or started later)
    /// turns its cache on. Failures are ignored (the walk still works without the cache).
    async fn become_client(&self) {
        const REG: &str = "org.a11y.atspi.Registry";
        const PATH: &str = "/org/a11y/atspi/registry";
        let props: Vec<String> = Vec::new();
        let with_props: Result<(), LinuxError> = self
            .call(
                REG,
                PATH,
                REG,
                "RegisterEvent",
                &("window:create", props, ""),
            )
            .await;
        if with_props.is_err() {
            let _: Result<(), LinuxError> = self
                .call(REG, PATH, REG, "RegisterEvent", &("window:create",))
                .await;
        }
    }

    fn peer(&self, app: &str) -> Option<zbus::Connection> {
        let peers = self.peers.lock().unwrap_or_else(|p| p.into_inner());
        peers.get(app).cloned().flatten()
    }

    fn forget_peer(&self, app: &str) {
        let mut peers = self.peers.lock().unwrap_or_else(|p| p.into_inner());
        peers.insert(app.to_string(), None);
    }

    /// Open a direct connection to an application when it offers one (once per application).
    pub async fn connect_peer(&self, app: &str) {
        {
            let peers = self.peers.lock().unwrap_or_else(|p| p.into_inner());
            if peers.contains_key(app) {
                return;
            }
        }
        let address: Result<String, LinuxError> = self
            .call(
                app,
                ROOT_PATH,
                "org.a11y.atspi.Application",
                "GetApplicationBusAddress",
                &(),
            )
            .await;
        let peer = match address {
            Ok(a) if !a.is_empty() => bounded("direct connection", self.timeout, async {
                zbus::connection::Builder::address(a.as_str())?
                    .p2p()
                    .method_timeout(self.timeout)
                    .build()
                    .await
            })
            .await
            .ok(),
            _ => None,
        };
        let mut peers = self.peers.lock().unwrap_or_else(|p| p.into_inner());
        peers.insert(app.to_string(), peer);
    }

    /// One application's tree: `GetItems` (after asking the application to turn its cache on
    /// if it lacks one), else the top-level windows only (at most [`MAX_WINDOWS`]), for the
    /// walk to complete.
    ///
    /// The top-level windows are listed and read live while the cache is read (one round
    /// trip less: an application drawing a frame answers each round trip after it, ~13 ms
    /// for gnome-calculator's press animation).
    pub async fn tree(&self, app: &str) -> Result<AppTree, LinuxError> {
        self.connect_peer(app).await;
        let (items, live) = tokio::join!(self.get_items(app), self.live_windows(app));
        if let Ok(nodes) = items {
            return Ok(with_windows(AppTree::from_nodes(nodes), live));
        }
        let _: Result<String, LinuxError> = self
            .call(
                app,
                ROOT_PATH,
                "org.a11y.atspi.Application",
                "GetApplicationBusAddress",
                &(),
            )
            .await;
        if let Ok(nodes) = self.get_items(app).await {
            let live = self.live_windows(app).await;
            return Ok(with_windows(AppTree::from_nodes(nodes), live));
        }
        // (an application listing thousands of top-level nodes gets as many reads as
        // `live_windows` gives it)
        let tops = self.children(app, ROOT_PATH).await?;
        let nodes = futures::future::join_all(
            tops.iter()
                .take(MAX_WINDOWS)
                .enumerate()
                .map(|(i, p)| self.node(app, p, ROOT_PATH, i as i32)),
        )
        .await;
        Ok(AppTree::from_nodes(nodes.into_iter().flatten().collect()))
    }

    /// The application's top-level windows as they are now: the root's children listed live
    /// and each read live (at most [`MAX_WINDOWS`]); `None` when the root does not answer.
    /// Chromium's cache can lack a window opened later (a page's popup, a second window: the
    /// root's live children listed it, the cache did not), whose frame was then never found.
    ///
    /// The windows listed last time are read while the list is asked for, and only those not
    /// among them after it (one round trip instead of two while the windows stay the same).
    async fn live_windows(&self, app: &str) -> Option<Vec<Node>> {
        let guess = self.tops_of(app);
        let read = |paths: Vec<(usize, String)>| {
            futures::future::join_all(
                paths
                    .into_iter()
                    .map(|(i, p)| async move { self.node(app, &p, ROOT_PATH, i as i32).await }),
            )
        };
        let (tops, guessed) = tokio::join!(
            self.children(app, ROOT_PATH),
            read(guess.into_iter().enumerate().collect())
        );
        let tops: Vec<String> = tops.ok()?.into_iter().take(MAX_WINDOWS).collect();
        self.remember_tops(app, &tops);
        let mut known: HashMap<String, Node> = guessed
            .into_iter()
            .flatten()
            .map(|n| (n.path.clone(), n))
            .collect();
        let mut out = Vec::with_capacity(tops.len());
        let mut missing = Vec::new();
        for (i, p) in tops.into_iter().enumerate() {
            match known.remove(&p) {
                Some(mut n) => {
                    n.index = i as i32;
                    out.push(n);
                }
                None => missing.push((i, p)),
            }
        }
        out.extend(read(missing).await.into_iter().flatten());
        Some(out)
    }

    /// The top-level windows of `app` when last listed.
    fn tops_of(&self, app: &str) -> Vec<String> {
        let tops = self.tops.lock().unwrap_or_else(|p| p.into_inner());
        tops.get(app).cloned().unwrap_or_default()
    }

    /// Remember the top-level windows of `app` (forgetting every application's when
    /// [`MAX_APPS_REMEMBERED`] are remembered: applications come and go in a long session).
    fn remember_tops(&self, app: &str, list: &[String]) {
        let mut tops = self.tops.lock().unwrap_or_else(|p| p.into_inner());
        if tops.len() >= MAX_APPS_REMEMBERED && !tops.contains_key(app) {
            tops.clear();
        }
        tops.insert(app.to_string(), list.to_vec());
    }

    /// Call a method and deserialize its reply; bounded by the timeout.
    pub async fn call<B, R>(
        &self,
        dest: &str,
        path: &str,
        iface: &str,
        method: &str,
        body: &B,
    ) -> Result<R, LinuxError>
    where
        B: Serialize + DynamicType,
        R: DeserializeOwned + Type,
    {
        let msg = self.call_msg(dest, path, iface, method, body).await?;
        msg.body().deserialize::<R>().map_err(|e| LinuxError::Call {
            what: format!("{iface}.{method} on {dest}{path} (its reply)"),
            source: Box::new(e),
        })
    }

    /// Call a method (through the application's direct connection when it has one); its
    /// reply message, bounded by the timeout.
    async fn call_msg<B>(
        &self,
        dest: &str,
        path: &str,
        iface: &str,
        method: &str,
        body: &B,
    ) -> Result<zbus::Message, LinuxError>
    where
        B: Serialize + DynamicType,
    {
        let what = || format!("{iface}.{method} on {dest}{path}");
        let _timed = CallTimer {
            method,
            path,
            start: std::time::Instant::now(),
        };
        if let Some(peer) = self.peer(dest) {
            let fut = peer.call_method(None::<&str>, path, Some(iface), method, body);
            match tokio::time::timeout(self.timeout, fut).await {
                Ok(Ok(msg)) => return Ok(msg),
                Ok(Err(zbus::Error::MethodError(name, text, _))) => {
                    return Err(LinuxError::Call {
                        what: what(),
                        source: cause(format!("{name}: {}", text.unwrap_or_default())),
                    })
                }
                Ok(Err(_)) => {
                    // the direct connection broke: forget it and go through the bus
                    self.forget_peer(dest);
                }
                Err(_) => {
                    return Err(LinuxError::Timeout {
                        what: what(),
                        ms: self.timeout.as_millis() as u64,
                    })
                }
            }
        }
        let fut = self
            .conn
            .call_method(Some(dest), path, Some(iface), method, body);
        match tokio::time::timeout(self.timeout, fut).await {
            Ok(Ok(m)) => Ok(m),
            Ok(Err(e)) => Err(LinuxError::Call {
                what: what(),
                source: Box::new(e),
            }),
            Err(_) => Err(LinuxError::Timeout {
                what: what(),
                ms: self.timeout.as_millis() as u64,
            }),
        }
    }

    /// The states of a node read live (`None`: it did not answer).
    pub async fn live_states(&self, dest: &str, path: &str) -> Option<u64> {
        let words: Vec<u32> = self
            .call(dest, path, "org.a11y.atspi.Accessible", "GetState", &())
            .await
            .ok()?;
        Some(state_bits(&words))
    }

    /// How many children a node says it has (`ChildCount`; -1: it does not know).
    pub async fn child_count(&self, dest: &str, path: &str) -> Result<i32, LinuxError> {
        self.prop(dest, path, "org.a11y.atspi.Accessible", "ChildCount")
            .await
    }

    /// Read a property.
    pub async fn prop<R>(
        &self,
        dest: &str,
        path: &str,
        iface: &str,
        name: &str,
    ) -> Result<R, LinuxError>
    where
        R: TryFrom<OwnedValue>,
        R::Error: std::fmt::Display,
    {
        let v: OwnedValue = self
            .call(
                dest,
                path,
                "org.freedesktop.DBus.Properties",
                "Get",
                &(iface, name),
            )
            .await?;
        R::try_from(v).map_err(|e| LinuxError::Call {
            what: format!("{iface}.{name} on {dest}{path}"),
            source: cause(format!("unexpected property type: {e}")),
        })
    }

    /// The applications on the bus: (bus name, pid).
    pub async fn applications(&self) -> Result<Vec<(String, Option<u32>)>, LinuxError> {
        let apps: Vec<ObjRef> = self
            .call(
                "org.a11y.atspi.Registry",
                ROOT_PATH,
                "org.a11y.atspi.Accessible",
                "GetChildren",
                &(),
            )
            .await?;
        let pids = futures::future::join_all(apps.iter().map(|(name, _)| async move {
            self.call::<_, u32>(
                "org.freedesktop.DBus",
                "/org/freedesktop/DBus",
                "org.freedesktop.DBus",
                "GetConnectionUnixProcessID",
                &(name.as_str(),),
            )
            .await
            .ok()
        }))
        .await;
        Ok(apps
            .into_iter()
            .zip(pids)
            .map(|((name, _), pid)| (name, pid))
            .collect())
    }

    /// The whole cached tree of one application in one call.
    pub async fn get_items(&self, app: &str) -> Result<Vec<Node>, LinuxError> {
        let t = std::time::Instant::now();
        let msg = self
            .call_msg(
                app,
                "/org/a11y/atspi/cache",
                "org.a11y.atspi.Cache",
                "GetItems",
                &(),
            )
            .await?;
        let t_call = t.elapsed();
        let raw: Vec<RawItem> = msg.body().deserialize().map_err(|e| LinuxError::Call {
            what: format!("org.a11y.atspi.Cache.GetItems on {app} (its reply)"),
            source: Box::new(e),
        })?;
        tracing::debug!(
            items = raw.len(),
            bytes = msg.data().len(),
            call_ms = t_call.as_millis() as u64,
            decode_ms = (t.elapsed() - t_call).as_millis() as u64,
            "cache items read"
        );
        Ok(raw.into_iter().map(node_of).collect())
    }

    /// Children of one node (one call), as object paths in order.
    pub async fn children(&self, app: &str, path: &str) -> Result<Vec<String>, LinuxError> {
        let kids: Vec<ObjRef> = self
            .call(app, path, "org.a11y.atspi.Accessible", "GetChildren", &())
            .await?;
        Ok(kids
            .into_iter()
            .filter(|(bus, _)| bus == app)
            .map(|(_, p)| p.as_str().to_string())
            .collect())
    }

    /// Everything about one node, fetched concurrently (the slow path).
    pub async fn node(
        &self,
        app: &str,
        path: &str,
        parent: &str,
        index: i32,
    ) -> Result<Node, LinuxError> {
        const ACC: &str = "org.a11y.atspi.Accessible";
        let (role, name, desc, states, ifaces, count) = futures::try_join!(
            self.call::<_, u32>(app, path, ACC, "GetRole", &()),
            self.prop::<String>(app, path, ACC, "Name"),
            self.prop::<String>(app, path, ACC, "Description"),
            self.call::<_, Vec<u32>>(app, path, ACC, "GetState", &()),
            self.call::<_, Vec<String>>(app, path, ACC, "GetInterfaces", &()),
            self.child_count(app, path),
        )?;
        Ok(Node {
            path: path.to_string(),
            parent: parent.to_string(),
            index,
            child_count: count,
            ifaces: iface_bits(&ifaces),
            name,
            role,
            description: desc,
            states: state_bits(&states),
        })
    }

    /// Screen extents of a node (`Component.GetExtents`, screen coordinates).
    pub async fn extents(&self, app: &str, path: &str) -> Result<(i32, i32, i32, i32), LinuxError> {
        self.call(
            app,
            path,
            "org.a11y.atspi.Component",
            "GetExtents",
            &(0u32,),
        )
        .await
    }

    /// Action names of a node.
    pub async fn actions(&self, app: &str, path: &str) -> Result<Vec<String>, LinuxError> {
        if self.action_names(app).await == ActionNames::OneByOne {
            return self.actions_one_by_one(app, path).await;
        }
        let acts: Vec<(String, String, String)> = self
            .call(app, path, "org.a11y.atspi.Action", "GetActions", &())
            .await?;
        let mut names: Vec<String> = acts.into_iter().map(|(n, _, _)| n).collect();
        // Chromium answers GetActions with empty names, while GetName(i) gives the real ones
        if names.iter().any(|n| !crate::vocab::action::is_name(n)) {
            let asked =
                futures::future::join_all(names.iter().enumerate().map(|(i, n)| async move {
                    if !crate::vocab::action::is_name(n) {
                        self.action_name(app, path, i as i32)
                            .await
                            .unwrap_or_default()
                    } else {
                        n.clone()
                    }
                }))
                .await;
            names = asked;
        }
        Ok(names)
    }

    /// Action names asked one by one: the count, then `GetName(i)` for each (at most
    /// [`MAX_ACTIONS`]).
    async fn actions_one_by_one(&self, app: &str, path: &str) -> Result<Vec<String>, LinuxError> {
        let count: i32 = self
            .prop(app, path, "org.a11y.atspi.Action", "NActions")
            .await?;
        let count = count.clamp(0, MAX_ACTIONS);
        let names =
            futures::future::join_all((0..count).map(|i| self.action_name(app, path, i))).await;
        Ok(names.into_iter().map(Result::unwrap_or_default).collect())
    }

    /// The name of action `i` of a node.
    async fn action_name(&self, app: &str, path: &str, i: i32) -> Result<String, LinuxError> {
        self.call(app, path, "org.a11y.atspi.Action", "GetName", &(i,))
            .await
    }

    /// How an application's action names are read (its toolkit asked once).
    async fn action_names(&self, app: &str) -> ActionNames {
        let known = {
            let reads = self.action_reads.lock().unwrap_or_else(|p| p.into_inner());
            reads.get(app).copied()
        };
        if let Some(k) = known {
            return k;
        }
        let (toolkit, _) = self.toolkit(app).await;
        let k = action_names_for(&toolkit);
        let mut reads = self.action_reads.lock().unwrap_or_else(|p| p.into_inner());
        reads.insert(app.to_string(), k);
        k
    }

    /// All text of a node with the Text interface.
    pub async fn text(&self, app: &str, path: &str) -> Result<String, LinuxError> {
        self.call(app, path, "org.a11y.atspi.Text", "GetText", &(0i32, -1i32))
            .await
    }

    /// The relations of a node (`GetRelationSet`): (relation type, targets in the same
    /// application). Targets in another application are left out.
    pub async fn relations(
        &self,
        app: &str,
        path: &str,
    ) -> Result<Vec<(u32, Vec<String>)>, LinuxError> {
        let set: Vec<(u32, Vec<ObjRef>)> = self
            .call(
                app,
                path,
                "org.a11y.atspi.Accessible",
                "GetRelationSet",
                &(),
            )
            .await?;
        Ok(set
            .into_iter()
            .map(|(kind, targets)| {
                let targets = targets
                    .into_iter()
                    .filter(|(bus, _)| bus == app)
                    .map(|(_, p)| p.as_str().to_string())
                    .collect();
                (kind, targets)
            })
            .collect())
    }

    /// The object attributes of a node (`GetAttributes`: GTK3 puts an entry's
    /// `placeholder-text` there).
    pub async fn attributes(
        &self,
        app: &str,
        path: &str,
    ) -> Result<HashMap<String, String>, LinuxError> {
        self.call(app, path, "org.a11y.atspi.Accessible", "GetAttributes", &())
            .await
    }

    /// Current value of a node with the Value interface.
    pub async fn value(&self, app: &str, path: &str) -> Result<f64, LinuxError> {
        self.prop(app, path, "org.a11y.atspi.Value", "CurrentValue")
            .await
    }

    /// Set the current value of a node with the Value interface (a spin button, a slider).
    pub async fn set_value(&self, app: &str, path: &str, value: f64) -> Result<(), LinuxError> {
        self.call::<_, ()>(
            app,
            path,
            "org.freedesktop.DBus.Properties",
            "Set",
            &(
                "org.a11y.atspi.Value",
                "CurrentValue",
                zbus::zvariant::Value::F64(value),
            ),
        )
        .await
    }

    /// Toolkit name and version of an application.
    pub async fn toolkit(&self, app: &str) -> (String, String) {
        const APP: &str = "org.a11y.atspi.Application";
        let name = self
            .prop::<String>(app, ROOT_PATH, APP, "ToolkitName")
            .await
            .unwrap_or_default();
        let version = self
            .prop::<String>(app, ROOT_PATH, APP, "Version")
            .await
            .unwrap_or_default();
        (name, version)
    }
}

/// Most applications whose top-level windows are remembered.
const MAX_APPS_REMEMBERED: usize = 256;

/// How many top-level windows of one application are read live per tree.
pub(crate) const MAX_WINDOWS: usize = 64;

/// Logs one call's time when it ends (`UFO_LOG=calls=trace`): how many round trips an
/// observation makes, and which of them waited for the application.
struct CallTimer<'a> {
    method: &'a str,
    path: &'a str,
    start: std::time::Instant,
}

impl Drop for CallTimer<'_> {
    fn drop(&mut self) {
        tracing::trace!(
            target: "calls",
            method = self.method,
            path = self.path,
            us = self.start.elapsed().as_micros() as u64,
            "call"
        );
    }
}

/// The cached tree with the live top-level windows in it (as they are now).
fn with_windows(mut tree: AppTree, live: Option<Vec<Node>>) -> AppTree {
    if let Some(live) = live {
        merge_windows(&mut tree, live);
    }
    tree
}

/// Put the live top-level windows into a cached tree: each hangs under the root with its
/// live name and states (a window the cache filed elsewhere is moved there; the children
/// known under it stay with it).
pub(crate) fn merge_windows(tree: &mut AppTree, live: Vec<Node>) {
    for n in live {
        tree.insert(n);
    }
    tree.sort_children();
}

/// Most actions read of one node.
const MAX_ACTIONS: i32 = 32;

/// How the names of a node's actions are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ActionNames {
    /// `GetActions`: one call for all.
    Whole,
    /// `NActions`, then `GetName(i)` for each. Gecko's `GetActions` must never be asked: its
    /// ATK callbacks hand back strings that the next callback frees, so the reply carries
    /// freed memory (the key binding in every field at best) and, when that memory holds
    /// bytes that are not UTF-8, libdbus aborts the whole browser (Firefox died after its
    /// settings check box was clicked). `GetName(i)` copies each string at once.
    OneByOne,
}

/// How an application of `toolkit` (its `ToolkitName`) has its action names read.
pub(crate) fn action_names_for(toolkit: &str) -> ActionNames {
    if toolkit.trim().eq_ignore_ascii_case("gecko") {
        ActionNames::OneByOne
    } else {
        ActionNames::Whole
    }
}

/// A map keyed by object path. Hashed with foldhash: an observation of LibreOffice Calc
/// looks up its ~1,900 paths a dozen times over (`subtree`), and the standard SipHash was
/// most of that time; foldhash's random seed still keeps an application from choosing paths
/// that collide.
pub(crate) type PathMap<V> = HashMap<String, V, foldhash::fast::RandomState>;

/// One application's tree, indexed.
#[derive(Debug, Default, Clone)]
pub(crate) struct AppTree {
    pub nodes: PathMap<Node>,
    pub children: PathMap<Vec<String>>,
}

impl AppTree {
    /// The tree of an application's cache (or of its windows read one by one). Dead
    /// (DEFUNCT) objects are left out: Gecko's cache keeps a replaced document under its
    /// parent, whose child count then looks complete and hides the live one from the walk;
    /// without the dead child the parent comes up short and is asked live.
    pub fn from_nodes(nodes: Vec<Node>) -> AppTree {
        let mut t = AppTree::default();
        for n in nodes.into_iter().filter(|n| !n.has(state::DEFUNCT)) {
            t.insert(n);
        }
        t.sort_children();
        t
    }

    /// Put a node in (or update it). A node hangs under exactly one parent, the one its
    /// `parent` names: an update that names another parent moves it there.
    pub fn insert(&mut self, n: Node) {
        match self.nodes.get(&n.path).map(|old| old.parent.clone()) {
            Some(old) if old == n.parent => {}
            // an object that names itself as its parent (Chromium's application object, whose
            // parent is the registry's root at the same path) hangs under nothing
            _ if n.parent == n.path => {}
            Some(old) => {
                if let Some(kids) = self.children.get_mut(&old) {
                    kids.retain(|k| *k != n.path);
                }
                self.children
                    .entry(n.parent.clone())
                    .or_default()
                    .push(n.path.clone());
            }
            None => self
                .children
                .entry(n.parent.clone())
                .or_default()
                .push(n.path.clone()),
        }
        self.nodes.insert(n.path.clone(), n);
    }

    /// Whether `a` is `of` or one of its ancestors (following the `parent` links, each node
    /// once: a stale cache can link parents in a circle).
    pub fn is_ancestor(&self, a: &str, of: &str) -> bool {
        let mut seen = std::collections::HashSet::new();
        let mut p = of;
        while seen.insert(p) {
            if p == a {
                return true;
            }
            match self.nodes.get(p) {
                Some(n) => p = n.parent.as_str(),
                None => return false,
            }
        }
        false
    }

    /// Move a node under another parent (the live `GetChildren` answer beats the cache).
    /// Refused (`false`) when the move would close a circle (the node is the new parent or
    /// one of its ancestors: a stale answer) or would take a window from the application's
    /// root.
    pub fn reparent(&mut self, path: &str, parent: &str, index: i32) -> bool {
        let Some(old) = self.nodes.get(path).map(|n| n.parent.clone()) else {
            return false;
        };
        if old == crate::vocab::ROOT_PATH || self.is_ancestor(path, parent) {
            return false;
        }
        if let Some(kids) = self.children.get_mut(&old) {
            kids.retain(|k| k != path);
        }
        if let Some(n) = self.nodes.get_mut(path) {
            n.parent = parent.to_string();
            n.index = index;
        }
        let kids = self.children.entry(parent.to_string()).or_default();
        if !kids.iter().any(|k| k == path) {
            kids.push(path.to_string());
        }
        true
    }

    pub fn sort_children(&mut self) {
        let nodes = &self.nodes;
        for kids in self.children.values_mut() {
            kids.sort_by_key(|p| nodes.get(p).map(|n| n.index).unwrap_or(i32::MAX));
            kids.dedup();
        }
    }

    pub fn kids(&self, path: &str) -> &[String] {
        self.children.get(path).map(Vec::as_slice).unwrap_or(&[])
    }

    /// Depth-first order of the subtree under `root` (root included), at most `limit` nodes;
    /// a node met twice (a circle in a stale cache) is taken once.
    ///
    /// An observation walks its window's subtree a dozen times (the walk, the candidates, the
    /// documents, the warnings), so this borrows the tree's own paths rather than copying
    /// each one: LibreOffice Calc's ~1,900 nodes are walked per observation while the
    /// application is busiest.
    pub fn subtree(&self, root: &str, limit: usize) -> Vec<&Node> {
        // the root's path as the tree holds it (it may have children and no node of its own)
        let Some(root) = self
            .nodes
            .get_key_value(root)
            .map(|(k, _)| k)
            .or_else(|| self.children.get_key_value(root).map(|(k, _)| k))
        else {
            return Vec::new();
        };
        let mut out = Vec::new();
        let mut stack: Vec<&str> = vec![root.as_str()];
        let mut seen: std::collections::HashSet<&str, foldhash::fast::RandomState> =
            std::collections::HashSet::with_capacity_and_hasher(
                self.nodes.len().min(limit),
                foldhash::fast::RandomState::default(),
            );
        while let Some(p) = stack.pop() {
            if out.len() >= limit {
                break;
            }
            if !seen.insert(p) {
                continue;
            }
            if let Some(n) = self.nodes.get(p) {
                out.push(n);
            }
            stack.extend(self.kids(p).iter().rev().map(String::as_str));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(path: &str, parent: &str) -> Node {
        Node {
            path: path.into(),
            parent: parent.into(),
            index: 0,
            child_count: 0,
            ifaces: 0,
            name: String::new(),
            role: 0,
            description: String::new(),
            states: 0,
        }
    }

    /// Issue 23, item 2: a node read again under another parent hangs under that one only
    /// (it hung under both before, and a later move made it reachable twice).
    #[test]
    fn a_node_hangs_under_one_parent() {
        let mut t = AppTree::from_nodes(vec![node("/p", "/"), node("/q", "/"), node("/x", "/p")]);
        t.insert(node("/x", "/q"));
        assert!(t.kids("/p").is_empty());
        assert_eq!(t.kids("/q"), ["/x"]);
        assert!(t.reparent("/x", "/r", 0));
        assert!(t.kids("/q").is_empty());
        assert_eq!(t.kids("/r"), ["/x"]);
        let listed: usize = t
            .children
            .values()
            .map(|k| k.iter().filter(|p| *p == "/x").count())
            .sum();
        assert_eq!(listed, 1);
    }

    /// Issue 23: Firefox (Gecko, Thunderbird too) is never asked `GetActions`, which can
    /// crash it; the other toolkits answer it whole.
    #[test]
    fn gecko_action_names_are_asked_one_by_one() {
        assert_eq!(action_names_for("Gecko"), ActionNames::OneByOne);
        assert_eq!(action_names_for("gecko "), ActionNames::OneByOne);
        for other in ["GTK", "Qt", "Chromium", ""] {
            assert_eq!(action_names_for(other), ActionNames::Whole, "{other}");
        }
    }

    /// A move that would close a circle, or take a window from the root, is refused.
    #[test]
    fn a_move_closes_no_circle() {
        let root = crate::vocab::ROOT_PATH;
        let mut t = AppTree::from_nodes(vec![node("/f", root), node("/a", "/f"), node("/b", "/a")]);
        assert!(!t.reparent("/a", "/b", 0));
        assert!(!t.reparent("/b", "/b", 0));
        assert!(!t.reparent("/f", "/b", 0));
        let order: Vec<&str> = t
            .subtree("/f", 100)
            .iter()
            .map(|n| n.path.as_str())
            .collect();
        assert_eq!(order, ["/f", "/a", "/b"]);
        assert!(t.is_ancestor("/f", "/b"));
        assert!(!t.is_ancestor("/b", "/f"));
    }

    /// The subtree comes depth first in the children's order, stops at its limit, takes a
    /// node met twice once (a stale cache's circle), and starts from a parent that has no
    /// node of its own.
    #[test]
    fn the_subtree_is_depth_first_bounded_and_takes_a_node_once() {
        let mut t = AppTree::from_nodes(vec![
            node("/f", "/app"),
            node("/a", "/f"),
            node("/a1", "/a"),
            node("/b", "/f"),
            node("/b1", "/b"),
        ]);
        t.sort_children();
        let paths = |t: &AppTree, root: &str, limit: usize| -> Vec<String> {
            t.subtree(root, limit)
                .iter()
                .map(|n| n.path.clone())
                .collect()
        };
        assert_eq!(paths(&t, "/f", 100), ["/f", "/a", "/a1", "/b", "/b1"]);
        assert_eq!(paths(&t, "/f", 3), ["/f", "/a", "/a1"]);
        assert_eq!(paths(&t, "/f", 0), Vec::<String>::new());
        assert_eq!(paths(&t, "/app", 100), ["/f", "/a", "/a1", "/b", "/b1"]);
        assert!(paths(&t, "/nowhere", 100).is_empty());
        // a circle: /b1 lists /f among its children
        t.children
            .entry("/b1".into())
            .or_default()
            .push("/f".into());
        assert_eq!(paths(&t, "/f", 100), ["/f", "/a", "/a1", "/b", "/b1"]);
    }

    /// Chromium's cache lists the windows it had when it was built: a window opened later
    /// (a popup) is put in from the live answer, with its live name, under the root, and a
    /// window the cache filed under nothing is moved there; known children stay.
    #[test]
    fn live_windows_join_the_cached_tree() {
        let root = crate::vocab::ROOT_PATH;
        let mut opener = node("/1", root);
        opener.name = "Start page - Chromium".into();
        let mut cached = AppTree::from_nodes(vec![
            opener.clone(),
            node("/1/a", "/1"),
            node("/2", "/null"),
        ]);
        let mut popup = node("/146", root);
        popup.name = "Order form - Chromium".into();
        popup.index = 2;
        let mut other = node("/2", root);
        other.index = 1;
        merge_windows(&mut cached, vec![opener, other, popup]);
        assert_eq!(cached.kids(root), ["/1", "/2", "/146"]);
        assert_eq!(cached.nodes["/146"].name, "Order form - Chromium");
        assert_eq!(cached.kids("/1"), ["/1/a"]);
        assert!(cached.kids("/null").is_empty());
    }
}
