//! The method handlers, one file per resource: `daemon` (initialize, info, shutdown),
//! `session` (create, list, get, change, rewind, fork, export), `subscribe` (the event
//! stream), `config` (settings, models, project scaffold), `auth` and `providers` (which are set
//! up), `trust` (the user's trust in folders), `mcp` (servers, sign-in). Each connection gets
//! one `RpcModule` built from the protocol's method table, with its own state (who the client
//! is, whether it said `initialize`). Every error becomes a protocol error in `error`.
//!
//! Params are decoded by name. The connection's state also records which sessions it followed: when
//! it is dropped, the client's use of them has ended and their `SessionEnd` hooks run, unless the
//! daemon is stopping. `refused` is the module a peer that descends from the daemon gets instead:
//! every method of the table answers `PEER_REFUSED`, and it holds no handle on the daemon.

mod auth;
mod config;
mod daemon;
pub mod error;
mod mcp;
mod providers;
mod session;
mod subscribe;
mod trust;

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use jsonrpsee::RpcModule;
use jsonrpsee::types::{ErrorObjectOwned, Params};
use stepper_protocol::methods::{AttachedClient, ClientInfo, ClientKind, Initialize, Method};
use stepper_store::now_ms;

use crate::daemon::Daemon;
pub use error::{Refusal, RpcError};

/// One connection's state.
pub struct Conn {
    /// Unique among the daemon's connections: one client however many subscriptions it holds.
    id: u64,
    daemon: Arc<Daemon>,
    initialized: AtomicBool,
    client: Mutex<Option<ClientInfo>>,
    peer_pid: Option<u32>,
    /// The sessions this connection followed, for their `SessionEnd` hooks when it closes.
    uses: Uses,
}

/// The connection closed (its methods and its last subscription are gone): the client's
/// use of the sessions it followed ended — `stepper ask` done, a TUI quit or detached. A
/// daemon stopping ends nobody's: its clients come back to the next one.
impl Drop for Conn {
    fn drop(&mut self) {
        let ended = self.uses.ended();
        if ended.is_empty() || self.daemon.shutdown.is_cancelled() {
            return;
        }
        // Dropped by the connection's task, on the runtime; anywhere else there is nothing
        // left to run hooks on.
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let daemon = Arc::clone(&self.daemon);
        let tasks = daemon.hub.deps().tasks.clone();
        tasks.spawn_on(
            async move {
                for (id, reason) in ended {
                    daemon.hub.use_ended(&id, reason).await;
                }
            },
            &runtime,
        );
    }
}

/// The sessions one connection followed (`session/subscribe`), each once however often it
/// subscribed again, with what kind of client followed it.
#[derive(Default)]
struct Uses(Mutex<std::collections::BTreeMap<String, ClientKind>>);

impl Uses {
    fn add(&self, session_id: &str, kind: ClientKind) {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(session_id.to_string(), kind);
    }

    /// The sessions followed, each with the `reason` Claude Code gives its `SessionEnd`
    /// hooks: `prompt_input_exit` when a TUI leaves (the user quit at the prompt),
    /// `other` for the rest (`stepper ask` ending, as `claude -p` does).
    fn ended(&self) -> Vec<(String, &'static str)> {
        let uses = std::mem::take(&mut *self.0.lock().unwrap_or_else(|p| p.into_inner()));
        uses.into_iter()
            .map(|(id, kind)| {
                let reason = match kind {
                    ClientKind::Tui => "prompt_input_exit",
                    ClientKind::Cli | ClientKind::Other => "other",
                };
                (id, reason)
            })
            .collect()
    }
}

impl Conn {
    /// The client's name as events show it (`stepper attach (pid 42)`).
    fn client_label(&self) -> Option<String> {
        let client = self.client.lock().unwrap_or_else(|p| p.into_inner());
        client.as_ref().map(|c| match c.pid.or(self.peer_pid) {
            // A client that names itself by its pid (`stepper attach 4242`) says it once.
            Some(pid) if !c.name.ends_with(&format!(" {pid}")) => {
                format!("{} (pid {pid})", c.name)
            }
            _ => c.name.clone(),
        })
    }

    /// Who the client is, for presence.
    fn attached_client(&self) -> AttachedClient {
        let info = self
            .client
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        match info {
            Some(c) => AttachedClient {
                name: c.name,
                kind: c.kind,
                pid: c.pid.or(self.peer_pid),
                since: now_ms(),
            },
            None => AttachedClient {
                name: "unknown".into(),
                kind: ClientKind::Other,
                pid: self.peer_pid,
                since: now_ms(),
            },
        }
    }
}

/// Decode params given by name (an object). Absent params are an empty object, so
/// `{}`-shaped params may be left out.
fn parse<T: serde::de::DeserializeOwned>(params: &Params<'_>) -> Result<T, ErrorObjectOwned> {
    let text = params.as_str().unwrap_or("{}");
    if !text.trim_start().starts_with('{') {
        return Err(error::invalid_params(
            "params go by name: send them as a JSON object".into(),
        ));
    }
    serde_json::from_str(text).map_err(|e| error::invalid_params(format!("invalid params: {e}")))
}

/// A folder a client names (`cwd`): an absolute path to one.
fn folder(cwd: &str) -> Result<std::path::PathBuf, RpcError> {
    let path = std::path::Path::new(cwd);
    if !path.is_absolute() || !path.is_dir() {
        return Err(RpcError::InvalidParams(format!(
            "cwd {cwd:?} must be an absolute path to a folder"
        )));
    }
    Ok(path.to_path_buf())
}

/// Register `M`'s handler: refused before `initialize`, params decoded by the table's type.
fn register<M, F, Fut>(module: &mut RpcModule<Conn>, handler: F)
where
    M: Method,
    F: Fn(Arc<Conn>, M::Params) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Result<M::Response, RpcError>> + Send + 'static,
{
    let registered = module.register_async_method(M::NAME, move |params, conn, _| {
        let handler = handler.clone();
        async move {
            if M::NAME != Initialize::NAME && !conn.initialized.load(Ordering::Acquire) {
                return Err(RpcError::NotInitialized.into());
            }
            let p = parse::<M::Params>(&params)?;
            handler(conn, p).await.map_err(ErrorObjectOwned::from)
        }
    });
    if let Err(e) = registered {
        // Names come from the method table, whose uniqueness a test checks.
        tracing::error!(method = M::NAME, error = %e, "method registered twice");
    }
}

/// The methods of a connection whose peer was refused ([`crate::daemon`]'s `admit`): every
/// method of the table answers `PEER_REFUSED` with `why`, and nothing of the daemon is
/// reachable from it.
pub fn refused(why: Refusal) -> RpcModule<Refusal> {
    let mut m = RpcModule::new(why);
    let names = stepper_protocol::methods::table();
    let names = names
        .iter()
        .flat_map(|entry| std::iter::once(entry.name).chain(entry.unsubscribe));
    for name in names {
        let registered = m.register_method(name, |_, why, _| {
            Err::<(), ErrorObjectOwned>(RpcError::PeerRefused(why.clone()).into())
        });
        if let Err(e) = registered {
            tracing::error!(method = name, error = %e, "method registered twice");
        }
    }
    m
}

/// The methods of one connection.
pub fn module(daemon: Arc<Daemon>, peer_pid: Option<u32>) -> RpcModule<Conn> {
    /// Connections numbered from 1, in the order they were served.
    static CONNECTIONS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    let conn = Conn {
        id: CONNECTIONS.fetch_add(1, Ordering::Relaxed),
        daemon,
        initialized: AtomicBool::new(false),
        client: Mutex::new(None),
        peer_pid,
        uses: Uses::default(),
    };
    let mut m = RpcModule::new(conn);
    daemon::register_all(&mut m);
    session::register_all(&mut m);
    subscribe::register_all(&mut m);
    config::register_all(&mut m);
    auth::register_all(&mut m);
    providers::register_all(&mut m);
    mcp::register_all(&mut m);
    trust::register_all(&mut m);
    m
}
