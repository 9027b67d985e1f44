//! The accessibility bus (AT-SPI2 over zbus): the connection with every call bounded, the
//! `Cache.GetItems` tree, the objects an application announces as it exports them, the popups
//! it shows without listing them, the nodes read one by one before, and the node itself.

pub(crate) mod announced;
pub(crate) mod apps;
pub(crate) mod bus;
pub(crate) mod events;
pub(crate) mod node;
pub(crate) mod nodecache;
pub(crate) mod shown;
