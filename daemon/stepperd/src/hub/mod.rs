//! The session hub: live sessions, their logs and their turns. The [`Hub`] creates, forks and
//! deletes sessions, loads one on first use and lets it go when unused, recovers what a crash left,
//! and refuses a session's model before anything is stored when its provider is not set up
//! (`check_model`); [`HubError`] is what its callers map to the protocol.
//!
//! `session` is a live session and what clients change in it (`model`: its model); `turn` runs its
//! turns (`builtin` lists the commands the daemon answers itself); `log` persists then publishes
//! its events and `replay` fans them out to subscribers; `context` is the conversation stored for
//! the model; `env`, `environment` and `settings` are what a turn runs with, `extensions` its
//! commands and skills, `references` what its files name that does not exist, `mcp` its MCP
//! servers, `hooks` and `transcript` the user's hooks and what they read, `status_line` the
//! `statusLine` command; `approvals` and `checkpoint` are the gate's questions and the files'
//! history; `sandbox` the commands' OS sandbox, `trust` what waits for the folder's trust, `git`
//! and `worktree` git as the daemon runs it and isolated workers' worktrees.
//!
//! **No turn is left running.** A clean stop gives turns a grace period, then interrupts them;
//! after a crash, the next start ends them as `TurnFinished {interrupted}`, after ending what each
//! left open (a `ToolCallFinished {cancelled}` for every call, innermost first, each in its own
//! agent).
//!
//! **A queued input is never lost**: it runs after a restart if its turn had not started; a
//! stopping daemon starts no new turn.
//!
//! *Sessions leave memory when nothing uses them*: no turn running or queued, no client following,
//! the log committed, and no other holder (the map's `Arc` is the only one, checked under the map's
//! lock, so no second writer can appear). A sweep each second lets go of those found so twice in a
//! row; the next use loads them from the store. A live session costs ~280 KiB (mostly the broadcast
//! buffer), so a daemon serving many `ask`s grew without bound before. A session recording its
//! exchanges stays: where it records is not stored. What a session loses is its client's in-memory
//! environment: the next client's submit brings its own, as after a restart.
//!
//! *Inputs queued but not started when the daemon stops run when it starts again*, from
//! `pending_inputs`, in their order, without a second `InputQueued`.

pub mod approvals;
mod attach;
pub mod builtin;
pub mod checkpoint;
pub mod context;
pub mod env;
mod environment;
pub mod extensions;
mod git;
pub mod hooks;
pub mod log;
pub mod mcp;
pub mod model;
pub(crate) mod references;
pub mod replay;
pub mod sandbox;
pub mod session;
pub mod settings;
pub mod status_line;
pub mod transcript;
pub mod trust;
pub mod turn;
pub(crate) mod worktree;
pub(crate) use turn::plan::tool_names;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use stepper_engine::ModelRef;
use stepper_engine::config::{PermissionMode, SandboxMode};
use stepper_engine::hooks::HookEvent;
use stepper_engine::interrupt::Interruption;
use stepper_engine::prompt::UserInstructions;
use stepper_engine::tool::Tool;
use stepper_protocol::session::{Env, SessionId, SessionInfo};

pub use attach::{Input, take_parts};
use session::QueuedInput;
use stepper_protocol::{AppEvent, EventEnvelope, SandboxInfo, TurnStatus};
use stepper_providers::Providers;
use stepper_store::{NewSession, Store, now_ms};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

pub use session::Chosen;

pub use env::persistable_env;
pub use log::{EventLog, LogError, Published};
pub use replay::{Deliveries, Delivery};
pub use session::LiveSession;
pub use settings::{SettingsCache, SettingsError};
pub(crate) use turn::overhead::context_window;
pub(crate) use turn::plan::instructions;

/// The longest title a session keeps, in characters; a longer one is cut.
pub const MAX_TITLE_CHARS: usize = 200;

/// Why a hub operation failed. The protocol's code for each is chosen in one place
/// (`rpc::error`).
#[derive(Debug, thiserror::Error)]
pub enum HubError {
    #[error("no session {0} — 'stepper sessions' lists them")]
    NotFound(SessionId),
    #[error(transparent)]
    Store(#[from] stepper_store::StoreError),
    #[error(transparent)]
    Log(#[from] LogError),
    #[error(transparent)]
    Settings(#[from] SettingsError),
    #[error(transparent)]
    Checkpoint(#[from] checkpoint::CheckpointError),
    #[error(transparent)]
    Approval(#[from] approvals::NotWaiting),
    #[error(
        "too many inputs are queued in this session ({}); wait for some to run",
        session::INPUT_QUEUE
    )]
    QueueFull,
    #[error(
        "session {session} is running a turn — interrupt it first (Esc in its client, or \
         session/interrupt), then {then}"
    )]
    TurnRunning {
        session: SessionId,
        then: &'static str,
    },
    #[error("turn {turn} does not exist: {range}")]
    NoSuchTurn { turn: u32, range: String },
    #[error("{0}")]
    Invalid(String),
    /// The model's provider is not set up; the message says how.
    #[error("{0}")]
    ProviderUnavailable(String),
    #[error("stepperd is shutting down and takes no new work — run the command again in a moment")]
    ShuttingDown,
}

/// What sessions need from the daemon, shared by all of them.
#[derive(Clone)]
pub struct HubDeps {
    pub store: Store,
    pub providers: Providers,
    /// How many turns are running, daemon-wide; shutdown waits on it.
    pub running: watch::Sender<usize>,
    pub tasks: TaskTracker,
    /// Settings by folder, read once and again only when a file changes.
    pub settings: Arc<SettingsCache>,
    /// The login shell's environment, resolved on first need: what a session's own
    /// environment lacks comes from here (a daemon started at login has little of its own).
    pub login_env: Arc<tokio::sync::OnceCell<Env>>,
    /// How reading the login shell's environment went, once it has.
    pub login_env_info: Arc<std::sync::OnceLock<stepper_protocol::methods::LoginEnvInfo>>,
    /// The tools every turn offers, built once (web_fetch holds an HTTP client and its
    /// connection pool).
    pub tools: Vec<Arc<dyn Tool>>,
    /// The daemon is stopping: no new turn starts (queued inputs wait for the next start).
    pub shutdown: CancellationToken,
    /// The OS sandbox: whether this machine has one, and each session's.
    pub sandboxes: Arc<sandbox::Sandboxes>,
    /// Custom commands and skills by folder, read again only when their files change.
    pub extensions: Arc<extensions::ExtensionsCache>,
    /// MCP servers, shared by the sessions of a folder.
    pub mcp: Arc<mcp::McpPool>,
    /// Each session's transcript in Claude Code's format, for hooks (`transcript_path`).
    pub transcripts: transcript::Transcripts,
}

/// A session to create, as a client asks for it.
pub struct NewSessionRequest {
    pub cwd: String,
    pub env: Env,
    pub model: Option<String>,
    pub title: Option<String>,
    pub record: Option<String>,
    pub mode: Option<PermissionMode>,
    pub sandbox: Option<SandboxMode>,
    /// A first input, queued in the session's first commit; and who gave it.
    pub input: Option<(Input, Option<String>)>,
    /// Instructions in place of or after stepper's own, over the settings'.
    pub instructions: UserInstructions,
}

/// A session just created: what it is, its mode, and its first input when given one
/// (its id and the seq of its `InputQueued`).
pub struct Created {
    pub info: SessionInfo,
    pub mode: PermissionMode,
    pub sandbox: SandboxInfo,
    pub queued: Option<(String, u64)>,
}

/// Live sessions by id. A session is loaded from the store on first use and stays live
/// while it is in use; [`Hub::evict_quiescent`] lets go of the ones nothing uses.
pub struct Hub {
    deps: HubDeps,
    /// How far each open subscription has delivered.
    pub deliveries: Arc<Deliveries>,
    live: Mutex<HashMap<SessionId, Arc<LiveSession>>>,
    /// Sessions found quiescent by the last sweep.
    quiet: Mutex<HashSet<SessionId>>,
}

/// How often live sessions are swept for ones nothing uses; a session leaves memory when
/// two sweeps in a row find it so.
pub const EVICT_SWEEP: Duration = Duration::from_secs(1);

impl Hub {
    pub fn new(deps: HubDeps) -> Hub {
        Hub {
            deps,
            deliveries: Arc::default(),
            live: Mutex::new(HashMap::new()),
            quiet: Mutex::default(),
        }
    }

    pub fn deps(&self) -> &HubDeps {
        &self.deps
    }

    fn live(&self) -> std::sync::MutexGuard<'_, HashMap<SessionId, Arc<LiveSession>>> {
        // Holds only Arcs: a panic elsewhere cannot leave the map inconsistent.
        self.live.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Create a session in a folder, with its client's environment: checked, stored with its
    /// first event, and live. Returns it with the mode its tools run under.
    pub async fn create(&self, request: NewSessionRequest) -> Result<Created, HubError> {
        if self.deps.shutdown.is_cancelled() {
            return Err(HubError::ShuttingDown);
        }
        let cwd = Path::new(&request.cwd);
        if !cwd.is_absolute() {
            return Err(HubError::Invalid(format!(
                "cwd {:?} must be an absolute path",
                request.cwd
            )));
        }
        if !cwd.is_dir() {
            return Err(HubError::Invalid(format!(
                "cwd {} is not a directory",
                request.cwd
            )));
        }
        let settings = self.deps.settings.get(Some(cwd)).await?;
        let model = self
            .check_model(request.model.as_deref(), &settings, cwd, &request.env)
            .await?;
        let record = match request.record.as_deref() {
            Some(r) if !Path::new(r).is_absolute() => {
                return Err(HubError::Invalid(format!(
                    "record path {r:?} must be absolute"
                )));
            }
            r => r.map(PathBuf::from),
        };
        let new = NewSession {
            id: uuid::Uuid::now_v7().to_string(),
            title: title(request.title),
            cwd: request.cwd.clone(),
            model: model.to_string(),
            env: persistable_env(&request.env),
            created_at: now_ms(),
            mode: request.mode.map(|m| m.as_str().to_string()),
            sandbox: request.sandbox.map(|m| m.as_str().to_string()),
            instructions: (!request.instructions.is_empty())
                .then(|| serde_json::to_string(&request.instructions).ok())
                .flatten(),
        };
        let (first, media) = match request.input {
            Some((input, client)) => {
                let input_id = uuid::Uuid::now_v7().to_string();
                let attachments: Vec<_> = input.media.iter().map(|m| m.about.clone()).collect();
                let event = AppEvent::InputQueued {
                    input_id: input_id.clone(),
                    text: input.text.clone(),
                    client,
                    attachments: attachments.clone(),
                };
                let queued = QueuedInput {
                    input_id,
                    text: input.text,
                    attachments,
                    by: None,
                };
                (Some((queued, event)), input.media)
            }
            None => (None, Vec::new()),
        };
        let then = first.as_ref().map(|(_, event)| event.clone());
        let (info, _) = self
            .deps
            .store
            .create_session_with(&new, then, &stored(&media))
            .await?;
        let sandbox = self
            .deps
            .sandboxes
            .plan(request.sandbox, &settings.sandbox(), cwd, &request.env)
            .await
            .info;
        let from_client = !request.env.is_empty();
        let queued = first
            .as_ref()
            .map(|(input, _)| (input.input_id.clone(), info.last_seq));
        // The first input is queued before the session is findable, so nothing submitted
        // meanwhile can run ahead of it.
        let first = first.map(|(input, _)| input);
        self.adopt(
            &info,
            (request.env, from_client),
            record,
            Chosen {
                mode: request.mode,
                sandbox: request.sandbox,
                instructions: Arc::new(request.instructions),
            },
            first,
        );
        tracing::info!(session = %info.id, cwd = %info.cwd, model = %info.model, "session created");
        Ok(Created {
            mode: request.mode.unwrap_or(settings.mode()),
            sandbox,
            info,
            queued,
        })
    }

    /// A new session holding `source`'s turns before `from_turn` (see `Store::fork_session`),
    /// with its environment, model and mode.
    pub async fn fork(
        &self,
        source_id: &str,
        from_turn: u32,
        title: Option<String>,
    ) -> Result<(SessionInfo, PermissionMode), HubError> {
        if self.deps.shutdown.is_cancelled() {
            return Err(HubError::ShuttingDown);
        }
        let source = self.get(source_id).await?;
        let store = &self.deps.store;
        let info = store
            .session(source_id)
            .await?
            .ok_or_else(|| HubError::NotFound(source_id.into()))?;
        let finished = if source.is_running() {
            info.turns.saturating_sub(1)
        } else {
            info.turns
        };
        if from_turn == 0 || from_turn > finished + 1 {
            return Err(HubError::NoSuchTurn {
                turn: from_turn,
                range: format!(
                    "session {source_id} has finished turns 1 to {finished} (fork before 1 to {})",
                    finished + 1
                ),
            });
        }
        let title = self::title(title).or_else(|| {
            Some(format!(
                "{} (fork)",
                info.title.as_deref().unwrap_or("session")
            ))
        });
        let (env, mode) = source.env_and_mode();
        let sandbox = source.sandbox();
        let instructions = source.instructions();
        // A source loaded from the store hands on its secret-free environment: the fork,
        // like the source, then waits for the login shell's.
        let from_client = source.env_from_client();
        let new = NewSession {
            id: uuid::Uuid::now_v7().to_string(),
            title,
            cwd: info.cwd.clone(),
            model: source.model(),
            env: persistable_env(&env),
            created_at: now_ms(),
            mode: mode.map(|m| m.as_str().to_string()),
            sandbox: sandbox.map(|m| m.as_str().to_string()),
            // The store copies the source's.
            instructions: None,
        };
        let forked = store.fork_session(source_id, &new, from_turn).await?;
        let live = self.adopt(
            &forked,
            (env, from_client),
            None,
            Chosen {
                mode,
                sandbox,
                instructions,
            },
            None,
        );
        tracing::info!(session = %forked.id, from = %source_id, turn = from_turn, "session forked");
        let mode = self.mode_of(&live).await?;
        Ok((forked, mode))
    }

    /// The model a session asks for (else the settings', else the first provider set up),
    /// checked now so that a missing key is said at once rather than by its first turn.
    pub async fn check_model(
        &self,
        requested: Option<&str>,
        settings: &stepper_engine::config::Settings,
        cwd: &Path,
        client: &Env,
    ) -> Result<ModelRef, HubError> {
        check_model(&self.deps, requested, settings, cwd, client).await
    }

    /// The mode a session's next tool call runs under: its own, else its folder's settings'.
    pub async fn mode_of(&self, session: &LiveSession) -> Result<PermissionMode, HubError> {
        let (_, mode) = session.env_and_mode();
        match mode {
            Some(mode) => Ok(mode),
            None => Ok(self.deps.settings.get(Some(&session.cwd())).await?.mode()),
        }
    }

    /// The sandbox a session's next command runs in: its own choice, else its folder's
    /// settings', as this machine can apply it.
    pub async fn sandbox_of(&self, session: &LiveSession) -> Result<SandboxInfo, HubError> {
        let cwd = session.cwd();
        let settings = self.deps.settings.get(Some(&cwd)).await?;
        let (env, _) = session.env_and_mode();
        let config = settings.sandbox();
        let plan = self
            .deps
            .sandboxes
            .plan(session.sandbox(), &config, &cwd, &env);
        Ok(plan.await.info)
    }

    /// Delete a session and everything stored of it; refused while a turn runs.
    pub async fn delete(&self, id: &str) -> Result<(), HubError> {
        let session = self.get(id).await?;
        if session.is_running() {
            return Err(HubError::TurnRunning {
                session: id.into(),
                then: "delete it",
            });
        }
        self.session_end_hooks(id, &session, "other").await;
        // Its subscriptions end and its queued inputs are dropped, before its rows go.
        session.end();
        self.forget(id);
        drop(session);
        self.deps.store.delete_session(id).await?;
        self.deps.transcripts.remove(id).await;
        Ok(())
    }

    /// A client's use of a session ended (`stepper ask` done, a TUI left): its
    /// `SessionEnd` hooks run, with `reason` as Claude Code names it. A session deleted
    /// meanwhile had them already.
    pub async fn use_ended(&self, id: &str, reason: &str) {
        if let Ok(session) = self.get(id).await {
            self.session_end_hooks(id, &session, reason).await;
        }
    }

    /// The user's `SessionEnd` hooks: a client's use ended, or the session is about to be
    /// deleted (`reason`: `other`).
    async fn session_end_hooks(&self, id: &str, session: &LiveSession, reason: &str) {
        let cwd = session.cwd();
        let Ok(settings) = self.deps.settings.get(Some(&cwd)).await else {
            return;
        };
        let set = hooks::HookSet::parse(settings.hooks.as_ref());
        if !set.has(HookEvent::SessionEnd) {
            return;
        }
        let (session_env, mode) = session.env_and_mode();
        let runner = hooks::HookRunner {
            set: Arc::new(set),
            session_id: id.to_string(),
            prompt_id: None,
            transcript: self.deps.transcripts.path(id),
            cwd,
            env: env::tool_env(&session_env, &settings),
            mode: mode.unwrap_or_else(|| settings.mode()),
            log: session.log.clone(),
            turn: None,
            redactor: Default::default(),
            cancel: CancellationToken::new(),
        };
        runner
            .run(
                HookEvent::SessionEnd,
                Some(reason),
                serde_json::json!({"reason": reason}),
            )
            .await;
    }

    /// Register a session just created, with its environment (and whether a client gave
    /// it) and its first input, if any.
    fn adopt(
        &self,
        info: &SessionInfo,
        env: (Env, bool),
        record: Option<PathBuf>,
        chosen: Chosen,
        first: Option<QueuedInput>,
    ) -> Arc<LiveSession> {
        let session = self.bring_to_life(info, env, record, chosen, first);
        self.live().insert(info.id.clone(), Arc::clone(&session));
        session
    }

    /// Start a live session and its turn actor.
    fn bring_to_life(
        &self,
        info: &SessionInfo,
        env: (Env, bool),
        record: Option<PathBuf>,
        chosen: Chosen,
        first: Option<QueuedInput>,
    ) -> Arc<LiveSession> {
        let (session, inputs) = LiveSession::start(info, env, record, chosen, first, &self.deps);
        self.deps.tasks.spawn(turn::actor::run_inputs(
            Arc::downgrade(&session),
            inputs,
            self.deps.clone(),
        ));
        session
    }

    /// The live session, loading it from the store if needed.
    pub async fn get(&self, id: &str) -> Result<Arc<LiveSession>, HubError> {
        // An id is a UUID; anything much longer is not one, and is not echoed back whole.
        if id.len() > 64 {
            let start: String = id.chars().take(40).collect();
            return Err(HubError::NotFound(format!("{start}…")));
        }
        if let Some(s) = self.live().get(id) {
            return Ok(Arc::clone(s));
        }
        let info = self
            .deps
            .store
            .session(id)
            .await?
            .ok_or_else(|| HubError::NotFound(id.into()))?;
        let env = self.deps.store.session_env(id).await?;
        // A name this version does not know falls back to the settings' mode.
        let mode = self
            .deps
            .store
            .session_mode(id)
            .await?
            .and_then(|m| m.parse::<PermissionMode>().ok());
        // Likewise for the sandbox: the settings' then.
        let sandbox = self
            .deps
            .store
            .session_sandbox(id)
            .await?
            .and_then(|m| m.parse::<SandboxMode>().ok());
        // Unreadable instructions (a later version's) fall back to the settings' too.
        let instructions = self
            .deps
            .store
            .session_instructions(id)
            .await?
            .and_then(|json| serde_json::from_str::<UserInstructions>(&json).ok())
            .unwrap_or_default();
        // Another caller may have loaded it meanwhile: the first one in wins, so a session
        // never has two writers.
        let mut live = self.live();
        if let Some(s) = live.get(id) {
            return Ok(Arc::clone(s));
        }
        let session = self.bring_to_life(
            &info,
            (env, false),
            None,
            Chosen {
                mode,
                sandbox,
                instructions: Arc::new(instructions),
            },
            None,
        );
        live.insert(id.to_string(), Arc::clone(&session));
        Ok(session)
    }

    /// Forget a live session (after it was deleted).
    pub fn forget(&self, id: &str) {
        self.live().remove(id);
    }

    pub fn live_count(&self) -> usize {
        self.live().len()
    }

    /// Let go of the sessions that were quiescent at the last sweep and still are, and
    /// that nothing else holds; returns how many. A session in memory costs a writer, a
    /// turn actor and a broadcast buffer: a daemon serving many one-shot `ask`s would
    /// otherwise grow by each of them. A session recording its exchanges stays: where it
    /// records is not stored.
    pub fn evict_quiescent(&self) -> usize {
        let mut quiet = self.quiet.lock().unwrap_or_else(|p| p.into_inner());
        let mut live = self.live();
        let before = live.len();
        let mut now_quiet = HashSet::new();
        // Under the map's lock nobody can take a new handle on a session, so a count of one
        // (the map's) stays one until it is removed: no second writer can appear for it.
        live.retain(|id, session| {
            if Arc::strong_count(session) > 1 || !session.is_quiescent() || session.records() {
                return true;
            }
            if quiet.contains(id) {
                return false;
            }
            now_quiet.insert(id.clone());
            true
        });
        *quiet = now_quiet;
        before - live.len()
    }

    /// Interrupt every running turn (shutdown, after the grace period), saying who did.
    pub fn interrupt_all(&self, by: Interruption) -> usize {
        self.live().values().filter(|s| s.interrupt(by)).count()
    }

    /// Say an MCP server's new state in every live session of `cwd`.
    pub async fn mcp_status(&self, cwd: &Path, event: AppEvent) {
        let sessions: Vec<_> = self
            .live()
            .values()
            .filter(|s| s.cwd() == cwd)
            .cloned()
            .collect();
        for s in sessions {
            if let Err(e) = s.log.append(None, event.clone()).await {
                tracing::warn!(session = %s.id, error = %e, "cannot record an MCP server's state");
            }
        }
    }

    /// Commit everything queued in every live session.
    pub async fn flush_all(&self) -> HashMap<SessionId, u64> {
        let sessions: Vec<_> = self.live().values().cloned().collect();
        let mut last = HashMap::new();
        for s in sessions {
            match s.log.flush().await {
                Ok(seq) => {
                    last.insert(s.id.clone(), seq);
                }
                Err(e) => tracing::error!(session = %s.id, error = %e, "flush at shutdown failed"),
            }
        }
        last
    }

    /// Drop every live session so their writers and actors can finish.
    pub fn clear(&self) {
        self.live().clear();
    }

    /// After an unclean stop: turns the log says are running died with the old daemon.
    /// Each ends as interrupted, which the next client sees.
    pub async fn recover_interrupted(&self) -> Result<usize, HubError> {
        let running = self.deps.store.running_sessions().await?;
        for info in &running {
            // One unreadable session must not keep the daemon (and every other session) down.
            let session = match self.get(&info.id).await {
                Ok(session) => session,
                Err(e) => {
                    tracing::error!(session = %info.id, error = %e, "cannot recover this session");
                    continue;
                }
            };
            let finished = AppEvent::TurnFinished {
                status: TurnStatus::Interrupted,
                error: Some(
                    "the daemon stopped while this turn was running — submit again to continue"
                        .into(),
                ),
                error_kind: None,
            };
            let turn = Some(info.turns).filter(|t| *t > 0);
            if let Some(turn) = turn {
                let events = match self.deps.store.turn_events(&info.id, turn).await {
                    Ok(events) => events,
                    Err(e) => {
                        tracing::error!(session = %info.id, turn, error = %e, "cannot read the interrupted turn");
                        Vec::new()
                    }
                };
                self.keep_interrupted_context(&info.id, turn, &events).await;
                // Every tool call (approval, subagent, layer) ends before its turn does.
                for (agent, event) in stepper_engine::recovery::left_open(&events) {
                    if let Err(e) = session.log.append_in(Some(turn), agent, event).await {
                        tracing::error!(session = %info.id, error = %e, "cannot end what the turn left open");
                    }
                }
            }
            if let Err(e) = session.log.append_committed(turn, finished).await {
                tracing::error!(session = %info.id, error = %e, "cannot mark turn interrupted");
            }
            tracing::info!(session = %info.id, turn = info.turns, "marked interrupted turn");
        }
        Ok(running.len())
    }
}

impl Hub {
    /// What the model had done in a turn that died with the daemon goes into the stored
    /// context, rebuilt from the turn's events, so the next turn can continue it.
    async fn keep_interrupted_context(
        &self,
        session_id: &str,
        turn: u32,
        events: &[EventEnvelope],
    ) {
        let store = &self.deps.store;
        // The turn may have stored its context and died before its end was committed.
        if store
            .has_context_of_turn(session_id, turn)
            .await
            .unwrap_or(true)
        {
            return;
        }
        let Some((input, attachments)) = events.iter().find_map(|e| match &e.event {
            AppEvent::TurnStarted {
                text, attachments, ..
            } => Some((text.clone(), attachments.clone())),
            _ => None,
        }) else {
            return;
        };
        let events = stepper_engine::recovery::answering_events(
            events.iter().map(|e| (e.agent.clone(), e.event.clone())),
        );
        let messages = stepper_engine::recovery::interrupted_turn(&input, &attachments, &events);
        context::store_context(store, session_id, turn, &messages).await;
    }

    /// Inputs a previous daemon queued and never started run now, in their order. Their
    /// `InputQueued` events are in the log already; only the queue is rebuilt.
    pub async fn resume_pending(&self) -> Result<usize, HubError> {
        let pending = self.deps.store.pending_inputs().await?;
        let count = pending.len();
        let mut by_session: Vec<(SessionId, Vec<QueuedInput>)> = Vec::new();
        for input in pending {
            let queued = QueuedInput {
                input_id: input.input_id,
                text: input.text,
                attachments: input.attachments,
                by: None,
            };
            match by_session.last_mut() {
                Some((id, inputs)) if *id == input.session_id => inputs.push(queued),
                _ => by_session.push((input.session_id, vec![queued])),
            }
        }
        for (id, inputs) in by_session {
            let session = match self.get(&id).await {
                Ok(session) => session,
                Err(e) => {
                    tracing::error!(session = %id, error = %e, "cannot requeue this session's inputs");
                    continue;
                }
            };
            // Queued now, before any client can submit, so they keep their place; what does
            // not fit waits for room in a task, in order, without holding up the start.
            let mut inputs = inputs.into_iter();
            while let Some(input) = inputs.next() {
                let Err(back) = session.requeue_now(input) else {
                    continue;
                };
                let rest: Vec<_> = std::iter::once(back).chain(inputs).collect();
                let session = Arc::clone(&session);
                self.deps.tasks.spawn(async move {
                    for input in rest {
                        if let Err(e) = session.requeue(input).await {
                            tracing::error!(session = %session.id, error = %e, "cannot requeue an input");
                            return;
                        }
                    }
                });
                break;
            }
        }
        Ok(count)
    }
}

/// The environment providers are resolved with for a client's environment: the client's,
/// over the login shell's when that is read already; a client that gives none waits for the
/// login shell's, as its turns would.
pub(crate) async fn provider_env(deps: &HubDeps, client: &Env) -> (Option<Env>, Env) {
    let login = match deps.login_env.get() {
        Some(login) => Some(login.clone()),
        None if client.is_empty() => Some(env::login_env(deps).await.clone()),
        None => None,
    };
    let mut effective = login.clone().unwrap_or_default();
    effective.extend(client.iter().map(|(k, v)| (k.clone(), v.clone())));
    (login, effective)
}

/// The model asked for (else the settings', else the first provider set up), its provider
/// checked set up (see [`Hub::check_model`]).
pub(crate) async fn check_model(
    deps: &HubDeps,
    requested: Option<&str>,
    settings: &stepper_engine::config::Settings,
    cwd: &Path,
    client: &Env,
) -> Result<ModelRef, HubError> {
    let (login, effective) = provider_env(deps, client).await;
    let envs = stepper_providers::status::Environments {
        client,
        login: login.as_ref(),
    };
    let user = deps.settings.get(None).await?;
    let cx = stepper_providers::ResolveContext {
        env: &effective,
        settings,
        user: &user,
        cwd,
    };
    // Claude Code's model comes next to nothing stepper's files say, when Anthropic is set up.
    let claude = settings
        .claude_model
        .as_deref()
        .filter(|_| requested.is_none() && settings.model.is_none())
        .and_then(|m| ModelRef::parse(m).ok())
        .filter(|m| deps.providers.check(m, &cx).is_ok());
    let chosen = match (requested, claude) {
        (Some(model), _) => model.to_string(),
        (None, Some(claude)) => return Ok(claude),
        (None, None) => deps.providers.default_model(settings, &envs),
    };
    let model = ModelRef::parse(&chosen).map_err(|e| HubError::Invalid(e.to_string()))?;
    match deps.providers.check(&model, &cx) {
        Ok(()) => Ok(model),
        // Nothing asked for a model and nothing is set up: say every way to set one up.
        Err(_) if requested.is_none() && settings.model.is_none() => Err(
            HubError::ProviderUnavailable(stepper_providers::status::nothing_set_up()),
        ),
        Err(e) => Err(HubError::ProviderUnavailable(e.to_string())),
    }
}

/// A title as given, trimmed and cut to [`MAX_TITLE_CHARS`]; none when blank.
fn title(given: Option<String>) -> Option<String> {
    let given = given?;
    let trimmed = given.trim();
    if trimmed.is_empty() {
        return None;
    }
    Some(match trimmed.char_indices().nth(MAX_TITLE_CHARS) {
        Some((cut, _)) => format!("{}…", &trimmed[..cut]),
        None => trimmed.to_string(),
    })
}

/// Attachments as the store takes them: what each is, and its bytes.
pub(crate) fn stored(
    media: &[stepper_engine::Media],
) -> Vec<(&stepper_protocol::Attachment, &[u8])> {
    media
        .iter()
        .filter_map(|m| m.data.as_deref().map(|data| (&m.about, data)))
        .collect()
}
