//! The daemon's own environment, the last place a provider key is looked for (after the
//! session's and the login shell's). `stepperd` takes provider keys out of its process
//! environment when it starts — so `/proc/<daemon>/environ` holds none for a tool to read —
//! and keeps them here instead.

use std::sync::OnceLock;

use stepper_protocol::session::Env;

static KEPT: OnceLock<Env> = OnceLock::new();

/// Keep `keys`, taken out of the process environment, for [`var`]. Once per process; a
/// second call changes nothing.
pub fn keep(keys: Env) {
    let _ = KEPT.set(keys);
}

/// A variable of the daemon's own environment: a key it kept, else the process's.
pub fn var(name: &str) -> Option<String> {
    KEPT.get()
        .and_then(|kept| kept.get(name).cloned())
        .or_else(|| std::env::var(name).ok())
}
