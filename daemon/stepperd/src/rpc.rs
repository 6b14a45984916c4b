//! The method handlers: one `RpcModule` per connection, built from the protocol's method
//! table, with the connection's own state (who the client is, whether it said `initialize`).
//!
//! Every internal error becomes a protocol error in one place, [`RpcError`]'s conversion.

use std::future::Future;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use jsonrpsee::types::{ErrorObjectOwned, Params};
use jsonrpsee::{PendingSubscriptionSink, RpcModule, SubscriptionMessage, SubscriptionSink};
use stepper_engine::config::{PermissionMode, Settings, templates, validate};
use stepper_engine::model::DEFAULT_MODEL;
use stepper_engine::{ModelRef, catalogue};
use stepper_protocol::error as code;
use stepper_protocol::methods::*;
use stepper_protocol::{EventEnvelope, PROTOCOL_VERSION};
use stepper_store::{NewSession, Store, now_ms};
use tokio::sync::broadcast::error::RecvError;

use crate::daemon::Daemon;
use crate::hub::{HubError, LiveSession, SubmitError, persistable_env, settings_for};

/// Events per `session/export` page, at most.
const EXPORT_PAGE: u32 = 5000;

/// Events read from the store per query while replaying.
const REPLAY_PAGE: u32 = 1000;

/// Why a method failed, before it becomes a JSON-RPC error.
#[derive(Debug, thiserror::Error)]
pub enum RpcError {
    #[error(
        "this client speaks protocol {client} but stepperd {daemon_version} speaks \
         {PROTOCOL_VERSION} — restart the daemon with 'stepper daemon stop' (the next command \
         starts the matching one), or update the client"
    )]
    VersionMismatch {
        client: stepper_protocol::ProtocolVersion,
        daemon_version: &'static str,
    },
    #[error("call 'initialize' first: every connection starts with it")]
    NotInitialized,
    #[error("{0}")]
    InvalidParams(String),
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    InvalidState(String),
    #[error("{0}")]
    Store(String),
    #[error("stepperd is shutting down and takes no new work — run the command again in a moment")]
    ShuttingDown,
}

impl From<RpcError> for ErrorObjectOwned {
    fn from(e: RpcError) -> ErrorObjectOwned {
        let c = match &e {
            RpcError::VersionMismatch { .. } => code::VERSION_MISMATCH,
            RpcError::NotInitialized => code::NOT_INITIALIZED,
            RpcError::InvalidParams(_) => code::INVALID_PARAMS,
            RpcError::NotFound(_) => code::SESSION_NOT_FOUND,
            RpcError::InvalidState(_) => code::INVALID_STATE,
            RpcError::Store(_) => code::STORE_ERROR,
            RpcError::ShuttingDown => code::SHUTTING_DOWN,
        };
        ErrorObjectOwned::owned(c, e.to_string(), None::<()>)
    }
}

impl From<HubError> for RpcError {
    fn from(e: HubError) -> RpcError {
        match e {
            HubError::NotFound(_) => RpcError::NotFound(e.to_string()),
            HubError::Store(s) => RpcError::Store(s.to_string()),
        }
    }
}

impl From<stepper_store::StoreError> for RpcError {
    fn from(e: stepper_store::StoreError) -> RpcError {
        RpcError::Store(e.to_string())
    }
}

impl From<SubmitError> for RpcError {
    fn from(e: SubmitError) -> RpcError {
        match e {
            SubmitError::QueueFull => RpcError::InvalidState(e.to_string()),
            SubmitError::Log(l) => RpcError::Store(l.to_string()),
        }
    }
}

/// One connection's state.
pub struct Conn {
    daemon: Arc<Daemon>,
    initialized: AtomicBool,
    client: Mutex<Option<ClientInfo>>,
    peer_pid: Option<u32>,
}

impl Conn {
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
}

fn parse<T: serde::de::DeserializeOwned>(params: &Params<'_>) -> Result<T, ErrorObjectOwned> {
    match params.as_str() {
        // Absent params are an empty object, so `{}`-shaped params may be left out.
        None => serde_json::from_str("{}").map_err(|e| {
            ErrorObjectOwned::owned(
                code::INVALID_PARAMS,
                format!("params required: {e}"),
                None::<()>,
            )
        }),
        Some(_) => params.parse(),
    }
}

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

/// The methods of one connection.
pub fn module(daemon: Arc<Daemon>, peer_pid: Option<u32>) -> RpcModule<Conn> {
    let conn = Conn {
        daemon,
        initialized: AtomicBool::new(false),
        client: Mutex::new(None),
        peer_pid,
    };
    let mut m = RpcModule::new(conn);

    register::<Initialize, _, _>(&mut m, |conn, p| async move {
        if !PROTOCOL_VERSION.is_compatible_with(p.protocol_version) {
            return Err(RpcError::VersionMismatch {
                client: p.protocol_version,
                daemon_version: env!("CARGO_PKG_VERSION"),
            });
        }
        tracing::debug!(client = %p.client.name, kind = ?p.client.kind, "client initialized");
        *conn.client.lock().unwrap_or_else(|e| e.into_inner()) = Some(p.client);
        conn.initialized.store(true, Ordering::Release);
        let daemon = &conn.daemon;
        Ok(InitializeResponse {
            protocol_version: PROTOCOL_VERSION,
            daemon_version: env!("CARGO_PKG_VERSION").into(),
            pid: std::process::id(),
            executable: daemon.executable.as_ref().map(|e| e.0.clone()),
            build: daemon.executable.as_ref().map(|e| e.1.clone()),
            running_turns: u32::try_from(*daemon.hub.deps().running.borrow()).unwrap_or(u32::MAX),
        })
    });

    register::<DaemonInfo, _, _>(&mut m, |conn, _| async move { Ok(conn.daemon.info()) });

    register::<DaemonShutdown, _, _>(&mut m, |conn, _| async move {
        tracing::info!(client = ?conn.client_label(), "shutdown requested");
        conn.daemon.shutdown.cancel();
        Ok(Empty {})
    });

    register::<SessionCreate, _, _>(&mut m, |conn, p| async move {
        let daemon = &conn.daemon;
        if daemon.shutdown.is_cancelled() {
            return Err(RpcError::ShuttingDown);
        }
        let cwd = Path::new(&p.cwd);
        if !cwd.is_absolute() {
            return Err(RpcError::InvalidParams(format!(
                "cwd {:?} must be an absolute path",
                p.cwd
            )));
        }
        if !cwd.is_dir() {
            return Err(RpcError::InvalidParams(format!(
                "cwd {} is not a directory",
                p.cwd
            )));
        }
        let settings = load_settings(daemon, cwd).await?;
        let requested = p
            .model
            .as_deref()
            .or(settings.model.as_deref())
            .unwrap_or(DEFAULT_MODEL);
        let model =
            ModelRef::parse(requested).map_err(|e| RpcError::InvalidParams(e.to_string()))?;
        let mode = p.mode.as_deref().map(parse_mode).transpose()?;
        let mode_name = mode.unwrap_or(settings.mode()).as_str();
        let record = match p.record.as_deref() {
            Some(r) if !Path::new(r).is_absolute() => {
                return Err(RpcError::InvalidParams(format!(
                    "record path {r:?} must be absolute"
                )));
            }
            r => r.map(std::path::PathBuf::from),
        };
        let new = NewSession {
            id: uuid::Uuid::now_v7().to_string(),
            title: p.title.filter(|t| !t.trim().is_empty()),
            cwd: p.cwd.clone(),
            model: model.to_string(),
            env: persistable_env(&p.env),
            created_at: now_ms(),
        };
        let store = &daemon.hub.deps().store;
        let (info, _) = store.create_session(&new).await?;
        store
            .set_session_mode(&info.id, mode.map(PermissionMode::as_str))
            .await?;
        daemon.hub.adopt(&info, p.env, record, mode);
        tracing::info!(session = %info.id, cwd = %info.cwd, model = %info.model, "session created");
        Ok(SessionResponse {
            session: info,
            mode: Some(mode_name.to_string()),
        })
    });

    register::<SessionList, _, _>(&mut m, |conn, p| async move {
        let limit = p.limit.unwrap_or(50).clamp(1, 500);
        let page = conn
            .daemon
            .hub
            .deps()
            .store
            .list_sessions(p.cwd.as_deref(), limit, p.cursor.as_deref())
            .await?;
        Ok(SessionListResponse {
            sessions: page.sessions,
            next_cursor: page.next_cursor,
        })
    });

    register::<SessionGet, _, _>(&mut m, |conn, p| async move {
        let store = &conn.daemon.hub.deps().store;
        let session = store
            .session(&p.session_id)
            .await?
            .ok_or_else(|| RpcError::from(HubError::NotFound(p.session_id.clone())))?;
        let live = conn.daemon.hub.get(&p.session_id).await?;
        let mode = mode_of(&conn.daemon, &live, Path::new(&session.cwd)).await;
        Ok(SessionResponse { session, mode })
    });

    register::<SessionSubmit, _, _>(&mut m, |conn, p| async move {
        if conn.daemon.shutdown.is_cancelled() {
            return Err(RpcError::ShuttingDown);
        }
        if p.text.trim().is_empty() {
            return Err(RpcError::InvalidParams(
                "nothing to submit: the input is empty".into(),
            ));
        }
        let session = conn.daemon.hub.get(&p.session_id).await?;
        let (input_id, seq) = session.submit(p.text, p.env, conn.client_label()).await?;
        Ok(SessionSubmitResponse { input_id, seq })
    });

    register::<SessionInterrupt, _, _>(&mut m, |conn, p| async move {
        let session = conn.daemon.hub.get(&p.session_id).await?;
        let interrupted = session.interrupt();
        if interrupted {
            tracing::info!(session = %p.session_id, client = ?conn.client_label(), "interrupted");
        }
        Ok(SessionInterruptResponse { interrupted })
    });

    register::<SessionApprove, _, _>(&mut m, |conn, p| async move {
        let session = conn.daemon.hub.get(&p.session_id).await?;
        session
            .approvals
            .answer(&p.request_id, p.decision, conn.client_label())
            .map_err(RpcError::InvalidState)?;
        Ok(Empty {})
    });

    register::<SessionSteer, _, _>(&mut m, |conn, p| async move {
        if p.text.trim().is_empty() {
            return Err(RpcError::InvalidParams(
                "nothing to steer with: the text is empty".into(),
            ));
        }
        let session = conn.daemon.hub.get(&p.session_id).await?;
        match session.steer(p.text.clone(), conn.client_label()).await? {
            Some(seq) => Ok(SessionSubmitResponse {
                input_id: String::new(),
                seq,
            }),
            None => {
                let (input_id, seq) = session.submit(p.text, p.env, conn.client_label()).await?;
                Ok(SessionSubmitResponse { input_id, seq })
            }
        }
    });

    register::<SessionSetModel, _, _>(&mut m, |conn, p| async move {
        let model =
            ModelRef::parse(&p.model).map_err(|e| RpcError::InvalidParams(e.to_string()))?;
        let session = conn.daemon.hub.get(&p.session_id).await?;
        session
            .set_model(&model, conn.client_label(), &conn.daemon.hub.deps().store)
            .await?;
        Ok(Empty {})
    });

    register::<SessionSetMode, _, _>(&mut m, |conn, p| async move {
        let mode = parse_mode(&p.mode)?;
        let session = conn.daemon.hub.get(&p.session_id).await?;
        session
            .set_mode(mode, conn.client_label(), &conn.daemon.hub.deps().store)
            .await?;
        Ok(Empty {})
    });

    register::<SessionClients, _, _>(&mut m, |conn, p| async move {
        let session = conn.daemon.hub.get(&p.session_id).await?;
        Ok(SessionClientsResponse {
            clients: session.clients(),
        })
    });

    register::<SessionRewind, _, _>(&mut m, |conn, p| async move {
        if !p.files && !p.conversation {
            return Err(RpcError::InvalidParams(
                "rewind what? files, conversation, or both".into(),
            ));
        }
        let session = conn.daemon.hub.get(&p.session_id).await?;
        let files = session
            .rewind(
                p.turn,
                p.files,
                p.conversation,
                &conn.daemon.hub.deps().store,
            )
            .await
            .map_err(RpcError::InvalidState)?;
        Ok(SessionRewindResponse { files })
    });

    register::<SessionFork, _, _>(&mut m, |conn, p| async move {
        let daemon = &conn.daemon;
        if daemon.shutdown.is_cancelled() {
            return Err(RpcError::ShuttingDown);
        }
        let source = daemon.hub.get(&p.session_id).await?;
        let store = &daemon.hub.deps().store;
        let info = store
            .session(&p.session_id)
            .await?
            .ok_or_else(|| RpcError::from(HubError::NotFound(p.session_id.clone())))?;
        let finished = if source.is_running() {
            info.turns.saturating_sub(1)
        } else {
            info.turns
        };
        if p.from_turn == 0 || p.from_turn > finished + 1 {
            return Err(RpcError::InvalidParams(format!(
                "cannot fork before turn {}: session {} has finished turns 1 to {finished} \
                 (fork before 1 to {})",
                p.from_turn,
                p.session_id,
                finished + 1
            )));
        }
        let title = p.title.filter(|t| !t.trim().is_empty()).or_else(|| {
            Some(format!(
                "{} (fork)",
                info.title.as_deref().unwrap_or("session")
            ))
        });
        let (env, mode) = source.env_and_mode();
        let new = NewSession {
            id: uuid::Uuid::now_v7().to_string(),
            title,
            cwd: info.cwd.clone(),
            model: source.model(),
            env: persistable_env(&env),
            created_at: now_ms(),
        };
        let forked = store.fork_session(&p.session_id, &new, p.from_turn).await?;
        store
            .set_session_mode(&forked.id, mode.map(PermissionMode::as_str))
            .await?;
        let live = daemon.hub.adopt(&forked, env, None, mode);
        tracing::info!(session = %forked.id, from = %p.session_id, turn = p.from_turn, "session forked");
        let mode = mode_of(daemon, &live, Path::new(&forked.cwd)).await;
        Ok(SessionResponse {
            session: forked,
            mode,
        })
    });

    register::<SessionDelete, _, _>(&mut m, |conn, p| async move {
        let hub = &conn.daemon.hub;
        let session = hub.get(&p.session_id).await?;
        if session.is_running() {
            return Err(RpcError::InvalidState(format!(
                "session {} is running a turn — interrupt it first (Ctrl-C in its client, or session/interrupt)",
                p.session_id
            )));
        }
        hub.forget(&p.session_id);
        drop(session);
        hub.deps().store.delete_session(&p.session_id).await?;
        tracing::info!(session = %p.session_id, client = ?conn.client_label(), "session deleted");
        Ok(Empty {})
    });

    register::<SessionExport, _, _>(&mut m, |conn, p| async move {
        let store = &conn.daemon.hub.deps().store;
        let session = store
            .session(&p.session_id)
            .await?
            .ok_or_else(|| RpcError::from(HubError::NotFound(p.session_id.clone())))?;
        let limit = p.limit.unwrap_or(EXPORT_PAGE).clamp(1, EXPORT_PAGE);
        let events = store
            .events_after(&p.session_id, p.after_seq, limit)
            .await?;
        let next_after_seq = (events.len() == limit as usize)
            .then(|| events.last().map(|e| e.seq))
            .flatten();
        Ok(SessionExportResponse {
            session,
            events,
            next_after_seq,
        })
    });

    register::<ModelsList, _, _>(&mut m, |conn, p| async move {
        let daemon = &conn.daemon;
        let settings = match p.cwd.as_deref() {
            Some(cwd) => load_settings(daemon, Path::new(cwd)).await?,
            None => settings_for(&daemon.places.config_dir, None)
                .await
                .map_err(RpcError::InvalidParams)?,
        };
        Ok(models_list(daemon, &settings))
    });

    register::<AuthStatus, _, _>(&mut m, |conn, _| async move {
        conn.daemon
            .logins
            .status()
            .await
            .map_err(RpcError::InvalidState)
    });

    register::<AuthLogin, _, _>(&mut m, |conn, p| async move {
        let logins = &conn.daemon.logins;
        match (p.provider.as_str(), p.api_key) {
            ("codex", _) => {
                let (login_id, url) = logins.begin_codex().await.map_err(RpcError::InvalidState)?;
                Ok(AuthLoginResponse {
                    url: Some(url),
                    login_id: Some(login_id),
                })
            }
            (provider, Some(key)) => {
                logins
                    .store_key(provider.to_string(), key)
                    .await
                    .map_err(RpcError::InvalidParams)?;
                tracing::info!(provider, "stored an API key");
                Ok(AuthLoginResponse {
                    url: None,
                    login_id: None,
                })
            }
            (provider, None) => Err(RpcError::InvalidParams(format!(
                "give the {provider} API key (apiKey), or use provider \"codex\" to sign in with ChatGPT"
            ))),
        }
    });

    register::<AuthWaitLogin, _, _>(&mut m, |conn, p| async move {
        conn.daemon
            .logins
            .wait(&p.login_id)
            .await
            .map_err(RpcError::InvalidState)
    });

    register::<AuthLogout, _, _>(&mut m, |conn, p| async move {
        let removed = conn
            .daemon
            .logins
            .logout(p.provider)
            .await
            .map_err(RpcError::InvalidState)?;
        Ok(AuthLogoutResponse { removed })
    });

    register::<ConfigSchema, _, _>(&mut m, |_, _| async move {
        Ok(ConfigSchemaResponse {
            schema: Settings::schema(),
        })
    });

    register::<ConfigValidate, _, _>(&mut m, |conn, p| async move {
        let files = Settings::files(&conn.daemon.places.config_dir, Path::new(&p.cwd));
        let checked = files.clone();
        let problems = tokio::task::spawn_blocking(move || {
            checked
                .iter()
                .flat_map(|f| validate::validate_file(f))
                .collect::<Vec<_>>()
        })
        .await
        .map_err(|e| RpcError::InvalidState(e.to_string()))?;
        Ok(ConfigValidateResponse {
            files: files.iter().map(|f| f.display().to_string()).collect(),
            problems: problems
                .into_iter()
                .map(|p| ConfigProblem {
                    file: p.file.display().to_string(),
                    line: u32::try_from(p.line).unwrap_or(u32::MAX),
                    column: u32::try_from(p.column).unwrap_or(u32::MAX),
                    severity: match p.severity {
                        validate::Severity::Error => "error".into(),
                        validate::Severity::Warning => "warning".into(),
                    },
                    message: p.message,
                    hint: p.hint,
                })
                .collect(),
        })
    });

    register::<ProjectInit, _, _>(&mut m, |_, p| async move {
        let dir = Path::new(&p.cwd).join(".stepper");
        let force = p.force;
        tokio::task::spawn_blocking(move || project_init(&dir, force))
            .await
            .map_err(|e| RpcError::InvalidState(e.to_string()))?
            .map_err(|e| RpcError::InvalidParams(format!("cannot write into {}: {e}", p.cwd)))
    });

    let registered = m.register_subscription(
        SessionSubscribe::NAME,
        SessionSubscribe::NOTIFICATION,
        SessionSubscribe::UNSUBSCRIBE,
        |params, pending, conn, _| async move { subscribe(params, pending, conn).await },
    );
    if let Err(e) = registered {
        tracing::error!(error = %e, "subscription registered twice");
    }
    m
}

/// A permission mode by its name in settings and on the wire.
fn parse_mode(name: &str) -> Result<PermissionMode, RpcError> {
    name.parse().map_err(RpcError::InvalidParams)
}

/// Write the scaffold into `dir` (`.stepper`), leaving existing files unless `force`.
fn project_init(dir: &Path, force: bool) -> std::io::Result<ProjectInitResponse> {
    std::fs::create_dir_all(dir)?;
    let mut out = ProjectInitResponse {
        created: Vec::new(),
        skipped: Vec::new(),
    };
    for (name, contents) in [
        ("stepper.md", templates::STEPPER_MD),
        ("setting.json", templates::SETTING_JSON),
        (".gitignore", templates::GITIGNORE),
    ] {
        let path = dir.join(name);
        if path.exists() && !force {
            out.skipped.push(path.display().to_string());
            continue;
        }
        std::fs::write(&path, contents)?;
        out.created.push(path.display().to_string());
    }
    Ok(out)
}

/// The mode a session's next tool call runs under, by name.
async fn mode_of(daemon: &Daemon, session: &LiveSession, cwd: &Path) -> Option<String> {
    let mode = match session.env_and_mode().1 {
        Some(mode) => mode,
        None => load_settings(daemon, cwd).await.ok()?.mode(),
    };
    Some(mode.as_str().to_string())
}

/// The merged settings for a folder.
async fn load_settings(daemon: &Daemon, cwd: &Path) -> Result<Settings, RpcError> {
    settings_for(&daemon.places.config_dir, Some(cwd))
        .await
        .map_err(RpcError::InvalidParams)
}

fn models_list(daemon: &Daemon, settings: &Settings) -> ModelsListResponse {
    let providers = &daemon.hub.deps().providers;
    let mut models = Vec::new();
    let mut entry = |provider: &str, id: &str, configured: bool| {
        let model = ModelRef {
            provider: provider.into(),
            model: id.into(),
        };
        let info = providers.model_info(&model, settings);
        models.push(ModelEntry {
            id: model.to_string(),
            provider: provider.into(),
            context_window: info.context_window(),
            max_output: info.max_output(),
            input_price: info.input_price,
            output_price: info.output_price,
            cache_read_price: info.cache_read_price,
            cache_write_price: info.cache_write_price,
            configured,
        });
    };
    for (name, config) in &settings.providers {
        for id in config.models.keys() {
            entry(name, id, true);
        }
    }
    for id in catalogue::known_ids() {
        let provider = if id.starts_with("claude") {
            "anthropic"
        } else {
            "openai"
        };
        entry(provider, id, false);
    }
    ModelsListResponse {
        default: settings
            .model
            .clone()
            .unwrap_or_else(|| DEFAULT_MODEL.into()),
        models,
    }
}

/// Replay from the store after `afterSeq`, then follow live. A subscriber that falls behind
/// the live buffer catches up from the store; it never slows the writer or anyone else.
async fn subscribe(params: Params<'static>, pending: PendingSubscriptionSink, conn: Arc<Conn>) {
    if !conn.initialized.load(Ordering::Acquire) {
        pending
            .reject(ErrorObjectOwned::from(RpcError::NotInitialized))
            .await;
        return;
    }
    let p: SessionSubscribeParams = match parse(&params) {
        Ok(p) => p,
        Err(e) => return pending.reject(e).await,
    };
    let session = match conn.daemon.hub.get(&p.session_id).await {
        Ok(s) => s,
        Err(e) => {
            return pending
                .reject(ErrorObjectOwned::from(RpcError::from(e)))
                .await;
        }
    };
    // Subscribe to live events before reading the store: nothing can fall in between.
    let mut live = session.log.subscribe();
    let store = conn.daemon.hub.deps().store.clone();
    let Ok(sink) = pending.accept().await else {
        return;
    };
    let delivery = conn.daemon.hub.deliveries.open(&p.session_id);
    let attached = session.attach(attached_client(&conn)).await;
    follow(&store, &sink, &mut live, &p, &delivery).await;
    session.detach(attached).await;
}

/// Who a connection's client is, for presence.
fn attached_client(conn: &Conn) -> AttachedClient {
    let info = conn
        .client
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
    match info {
        Some(c) => AttachedClient {
            name: c.name,
            kind: c.kind,
            pid: c.pid.or(conn.peer_pid),
            since: now_ms(),
        },
        None => AttachedClient {
            name: "unknown".into(),
            kind: ClientKind::Other,
            pid: conn.peer_pid,
            since: now_ms(),
        },
    }
}

/// Send the session's events after `afterSeq`, then follow it live, until the client goes.
async fn follow(
    store: &Store,
    sink: &SubscriptionSink,
    live: &mut tokio::sync::broadcast::Receiver<crate::hub::Published>,
    p: &SessionSubscribeParams,
    delivery: &crate::hub::Delivery,
) {
    let mut last = p.after_seq;
    if catch_up(store, sink, &p.session_id, &mut last)
        .await
        .is_err()
    {
        return;
    }
    delivery.delivered(last);
    loop {
        let received = tokio::select! {
            () = sink.closed() => return,
            r = live.recv() => r,
        };
        let sent = match received {
            Ok(published) => {
                let envelope = &published.envelope;
                if envelope.seq <= last {
                    continue;
                }
                if envelope.seq == last + 1 {
                    send(sink, envelope).await.map(|()| last = envelope.seq)
                } else {
                    catch_up(store, sink, &p.session_id, &mut last).await
                }
            }
            Err(RecvError::Lagged(missed)) => {
                tracing::debug!(session = %p.session_id, missed, "subscriber lagged; catching up from the store");
                catch_up(store, sink, &p.session_id, &mut last).await
            }
            // The writer ended: the daemon is shutting down.
            Err(RecvError::Closed) => return,
        };
        if sent.is_err() {
            return;
        }
        delivery.delivered(last);
    }
}

#[derive(Debug)]
struct Gone;

async fn catch_up(
    store: &Store,
    sink: &SubscriptionSink,
    session_id: &str,
    last: &mut u64,
) -> Result<(), Gone> {
    loop {
        let page = match store.events_after(session_id, *last, REPLAY_PAGE).await {
            Ok(page) => page,
            Err(e) => {
                tracing::error!(session = %session_id, error = %e, "replay failed");
                return Err(Gone);
            }
        };
        for envelope in &page {
            send(sink, envelope).await?;
            *last = envelope.seq;
        }
        if page.len() < REPLAY_PAGE as usize {
            return Ok(());
        }
    }
}

async fn send(sink: &SubscriptionSink, envelope: &EventEnvelope) -> Result<(), Gone> {
    let raw = serde_json::value::to_raw_value(envelope).map_err(|_| Gone)?;
    sink.send(SubscriptionMessage::from(raw))
        .await
        .map_err(|_| Gone)
}
