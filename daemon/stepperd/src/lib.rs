//! stepperd: the daemon that owns sessions, turns and everything that touches the machine.
//!
//! `daemon` wires the parts and owns the lifecycle; `rpc` is the method handlers; `hub` holds
//! live sessions, their event logs and their turns; `lock` makes one daemon own a data dir;
//! `own_env` takes provider keys out of the daemon's process environment; `store_health`
//! opens the session store at start, rebuilding it when it is damaged.

pub mod auth;
pub mod daemon;
pub mod hub;
pub mod lock;
pub mod logging;
pub mod own_env;
pub mod rpc;
pub mod store_health;
