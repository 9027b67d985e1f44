//! The accessibility bus (AT-SPI2 over zbus): the connection with every call bounded, the
//! `Cache.GetItems` tree, and the nodes read one by one before.

pub(crate) mod bus;
pub(crate) mod events;
pub(crate) mod nodecache;
pub(crate) mod vocab;
