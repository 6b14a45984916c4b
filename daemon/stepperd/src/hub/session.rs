//! A live session: its event log, its input queue, and the actor that runs one turn at a
//! time, in the order inputs were queued.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};

use stepper_engine::config::{PermissionMode, Settings};
use stepper_engine::gate::Policy;
use stepper_engine::tool::{NoOutput, Tool, ToolCx};
use stepper_engine::{AgentLoop, ChatMessage, ChatRequest, EventSink, ModelRef, agent::SinkError};
use stepper_protocol::methods::AttachedClient;
use stepper_protocol::session::{Env, SessionId, SessionInfo};
use stepper_protocol::{AppEvent, TurnStatus};
use stepper_providers::replay::Recorder;
use stepper_providers::{Providers, ResolveContext, Resolved};
use stepper_store::Store;
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::approvals::{Approvals, SessionGate};
use super::checkpoint::Checkpointer;
use super::log::{EventLog, LogError};

/// Inputs waiting to run. When full, `submit` refuses with a clear error rather than let one
/// client queue without bound.
const INPUT_QUEUE: usize = 256;
/// The longest answer asked of a model, whatever larger limit it has: long enough for any
/// edit, short enough not to eat rate limits that count the limit up front.
const MAX_TOKENS: u32 = 32_000;

/// What a turn runs with.
struct Prepared {
    resolved: Resolved,
    model_ref: ModelRef,
    settings: Settings,
    /// The login environment overlaid with the session's.
    env: Env,
    cwd: PathBuf,
}

/// What sessions need from the daemon, shared by all of them.
#[derive(Clone)]
pub struct HubDeps {
    pub store: Store,
    pub providers: Providers,
    /// How many turns are running, daemon-wide; shutdown waits on it.
    pub running: watch::Sender<usize>,
    pub tasks: TaskTracker,
    /// The user's config folder (`setting.json`).
    pub config_dir: PathBuf,
    /// The login shell's environment, resolved on first need: what a session's own
    /// environment lacks comes from here (a daemon started at login has little of its own).
    pub login_env: Arc<tokio::sync::OnceCell<Env>>,
    /// The tools every turn offers, built once (web_fetch holds an HTTP client and its
    /// connection pool).
    pub tools: Vec<Arc<dyn Tool>>,
    /// The daemon is stopping: no new turn starts (queued inputs wait for the next start).
    pub shutdown: CancellationToken,
}

pub struct LiveSession {
    pub id: SessionId,
    pub log: EventLog,
    /// Approvals its turns wait on; any client answers through `session/approve`.
    pub approvals: Arc<Approvals>,
    /// Checkpoints of the project's files, turn by turn.
    pub checkpoints: Checkpointer,
    /// Text steered into the running turn, not yet given to the model.
    steering: Arc<Mutex<Vec<String>>>,
    /// The clients subscribed right now, by subscription.
    clients: Mutex<HashMap<u64, AttachedClient>>,
    next_client: std::sync::atomic::AtomicU64,
    inputs: mpsc::Sender<QueuedInput>,
    /// Held from committing `InputQueued` to queueing the input, so inputs run in the order
    /// of their seqs even when clients submit at the same moment.
    submitting: tokio::sync::Mutex<()>,
    state: Mutex<State>,
}

struct State {
    /// The full environment of the latest client: kept in memory only.
    env: Env,
    cwd: PathBuf,
    /// Record provider exchanges to this file.
    record: Option<PathBuf>,
    /// The permission mode chosen for the session (else the settings').
    mode: Option<PermissionMode>,
    /// The running turn's policy, so a mode change reaches its next tool call.
    active_policy: Option<Arc<Mutex<Policy>>>,
    model: String,
    turns: u32,
    running: Option<CancellationToken>,
}

struct QueuedInput {
    input_id: String,
    text: String,
}

#[derive(Debug, thiserror::Error)]
pub enum SubmitError {
    #[error(transparent)]
    Log(#[from] LogError),
    #[error("too many inputs are queued in this session ({INPUT_QUEUE}); wait for some to run")]
    QueueFull,
}

impl LiveSession {
    /// Bring a stored session to life: start its log writer and its turn actor.
    pub fn start(
        info: &SessionInfo,
        env: Env,
        record: Option<PathBuf>,
        mode: Option<PermissionMode>,
        deps: &HubDeps,
    ) -> Arc<LiveSession> {
        let log = EventLog::spawn(
            deps.store.clone(),
            info.id.clone(),
            info.last_seq,
            &deps.tasks,
        );
        let (inputs, rx) = mpsc::channel(INPUT_QUEUE);
        let session = Arc::new(LiveSession {
            id: info.id.clone(),
            log,
            approvals: Arc::default(),
            clients: Mutex::default(),
            steering: Arc::default(),
            checkpoints: Checkpointer::new(Path::new(&info.cwd)),
            next_client: Default::default(),
            inputs,
            submitting: tokio::sync::Mutex::new(()),
            state: Mutex::new(State {
                env,
                cwd: PathBuf::from(&info.cwd),
                record,
                mode,
                active_policy: None,
                model: info.model.clone(),
                turns: info.turns,
                running: None,
            }),
        });
        deps.tasks
            .spawn(run_inputs(Arc::downgrade(&session), rx, deps.clone()));
        session
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic while holding this lock cannot leave State inconsistent (plain fields).
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Queue an input: committed as `InputQueued` before this returns its seq.
    pub async fn submit(
        &self,
        text: String,
        env: Option<Env>,
        client: Option<String>,
    ) -> Result<(String, u64), SubmitError> {
        if let Some(env) = env {
            self.state().env = env;
        }
        let _order = self.submitting.lock().await;
        let permit = self
            .inputs
            .try_reserve()
            .map_err(|_| SubmitError::QueueFull)?;
        let input_id = uuid::Uuid::now_v7().to_string();
        let event = AppEvent::InputQueued {
            input_id: input_id.clone(),
            text: text.clone(),
            client,
        };
        let seq = self.log.append_committed(None, event).await?;
        permit.send(QueuedInput {
            input_id: input_id.clone(),
            text,
        });
        Ok((input_id, seq))
    }

    /// Queue an input whose `InputQueued` a previous daemon committed but never ran, if
    /// the queue has room; else it is handed back.
    pub fn requeue_now(&self, input_id: String, text: String) -> Result<(), (String, String)> {
        self.inputs
            .try_send(QueuedInput { input_id, text })
            .map_err(|e| {
                let input = e.into_inner();
                (input.input_id, input.text)
            })
    }

    /// Like [`LiveSession::requeue_now`], waiting for room in the queue.
    pub async fn requeue(&self, input_id: String, text: String) -> Result<(), SubmitError> {
        self.inputs
            .send(QueuedInput { input_id, text })
            .await
            .map_err(|_| SubmitError::QueueFull)
    }

    /// Interrupt the running turn; false when none runs.
    pub fn interrupt(&self) -> bool {
        match &self.state().running {
            Some(cancel) => {
                cancel.cancel();
                true
            }
            None => false,
        }
    }

    /// Add text to the running turn; `None` when no turn runs (then the caller submits).
    pub async fn steer(
        &self,
        text: String,
        by: Option<String>,
    ) -> Result<Option<u64>, SubmitError> {
        if !self.is_running() {
            return Ok(None);
        }
        self.steering
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(text.clone());
        let turn = self.state().turns;
        let seq = self
            .log
            .append_committed(Some(turn), AppEvent::Steered { text, by })
            .await?;
        Ok(Some(seq))
    }

    /// Put files and/or conversation back as they were before `turn`.
    pub async fn rewind(
        &self,
        turn: u32,
        files: bool,
        conversation: bool,
        store: &Store,
    ) -> Result<u32, String> {
        if self.is_running() {
            return Err("a turn is running — interrupt it first, then rewind".into());
        }
        let last = self.state().turns;
        if turn == 0 || turn > last {
            return Err(format!(
                "turn {turn} does not exist: this session has turns 1 to {last}"
            ));
        }
        let mut restored = 0;
        if files {
            restored =
                super::checkpoint::restore(self.checkpoints.root(), store, &self.id, turn).await?;
            self.checkpoints.forget().await;
        }
        if conversation {
            store
                .truncate_context(&self.id, turn)
                .await
                .map_err(|e| e.to_string())?;
        }
        let files = u32::try_from(restored).unwrap_or(u32::MAX);
        self.log
            .append_committed(
                None,
                AppEvent::Rewound {
                    turn,
                    files,
                    conversation,
                },
            )
            .await
            .map_err(|e| e.to_string())?;
        Ok(files)
    }

    /// A client subscribed: it is listed and everyone is told.
    pub async fn attach(&self, client: AttachedClient) -> u64 {
        let id = self
            .next_client
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let event = AppEvent::ClientAttached {
            client: client.name.clone(),
            kind: format!("{:?}", client.kind).to_lowercase(),
            pid: client.pid,
        };
        self.clients
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id, client);
        if let Err(e) = self.log.append(None, event).await {
            tracing::warn!(session = %self.id, error = %e, "cannot record a client attaching");
        }
        id
    }

    /// The client of subscription `id` left; the turn goes on.
    pub async fn detach(&self, id: u64) {
        let gone = self
            .clients
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&id);
        let Some(client) = gone else { return };
        let left = AppEvent::ClientDetached {
            client: client.name,
        };
        if let Err(e) = self.log.append(None, left).await {
            tracing::warn!(session = %self.id, error = %e, "cannot record a client leaving");
        }
    }

    pub fn clients(&self) -> Vec<AttachedClient> {
        let mut clients: Vec<_> = self
            .clients
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .values()
            .cloned()
            .collect();
        clients.sort_by_key(|c| c.since);
        clients
    }

    /// The model of the next turns.
    pub async fn set_model(
        &self,
        model: &ModelRef,
        by: Option<String>,
        store: &Store,
    ) -> Result<(), SubmitError> {
        let model = model.to_string();
        self.state().model = model.clone();
        if let Err(e) = store.set_session_model(&self.id, &model).await {
            tracing::warn!(session = %self.id, error = %e, "cannot store the session's model");
        }
        self.log
            .append_committed(None, AppEvent::ModelChanged { model, by })
            .await?;
        Ok(())
    }

    /// The permission mode, from the running turn's next tool call on; kept in the store so
    /// it holds after a restart.
    pub async fn set_mode(
        &self,
        mode: PermissionMode,
        by: Option<String>,
        store: &Store,
    ) -> Result<(), SubmitError> {
        if let Err(e) = store.set_session_mode(&self.id, Some(mode.as_str())).await {
            tracing::warn!(session = %self.id, error = %e, "cannot store the session's mode");
        }
        let active = {
            let mut state = self.state();
            state.mode = Some(mode);
            state.active_policy.clone()
        };
        if let Some(policy) = active {
            policy.lock().unwrap_or_else(|p| p.into_inner()).mode = mode;
        }
        self.log
            .append_committed(
                None,
                AppEvent::ModeChanged {
                    mode: mode.as_str().to_string(),
                    by,
                },
            )
            .await?;
        Ok(())
    }

    /// The model of the next turn.
    pub fn model(&self) -> String {
        self.state().model.clone()
    }

    /// The full environment of the latest client, and the mode chosen for the session.
    pub fn env_and_mode(&self) -> (Env, Option<PermissionMode>) {
        let state = self.state();
        (state.env.clone(), state.mode)
    }

    pub fn is_running(&self) -> bool {
        self.state().running.is_some()
    }

    async fn run_turn(&self, input: QueuedInput, deps: &HubDeps) {
        let cancel = CancellationToken::new();
        let (turn, model, env) = {
            let mut state = self.state();
            state.turns += 1;
            state.running = Some(cancel.clone());
            (state.turns, state.model.clone(), state.env.clone())
        };
        deps.running.send_modify(|n| *n += 1);
        let status = self
            .turn_body(turn, &input, &model, &env, cancel, deps)
            .await;
        if let Err(e) = status {
            tracing::error!(session = %self.id, turn, error = %e, "turn could not be recorded");
        }
        {
            let mut state = self.state();
            state.running = None;
            state.active_policy = None;
        }
        deps.running.send_modify(|n| *n = n.saturating_sub(1));
    }

    async fn turn_body(
        &self,
        turn: u32,
        input: &QueuedInput,
        model: &str,
        env: &Env,
        cancel: CancellationToken,
        deps: &HubDeps,
    ) -> Result<(), LogError> {
        // Everything before this turn is committed, so the history read below is complete.
        self.log.flush().await?;
        let history = history(&deps.store, &self.id).await;
        let started = AppEvent::TurnStarted {
            input_id: input.input_id.clone(),
            text: input.text.clone(),
            model: model.to_string(),
        };
        self.log.append(Some(turn), started).await?;

        let prepared = match history {
            Ok(messages) => self.prepare(model, env, deps).await.map(|p| (p, messages)),
            Err(e) => Err(e),
        };
        let (status, error, transcript) = match prepared {
            Err(message) => (TurnStatus::Failed, Some(message), Vec::new()),
            Ok((prepared, mut messages)) => {
                let Prepared {
                    resolved,
                    model_ref,
                    settings,
                    env,
                    cwd,
                } = prepared;
                messages.push(ChatMessage::user(input.text.clone()));
                let mut request = ChatRequest::new(model_ref.model, messages);
                request.max_tokens = resolved.info.max_output().min(MAX_TOKENS);
                let sink = TurnSink {
                    log: &self.log,
                    turn,
                };
                let home = env.get("HOME").map(PathBuf::from);
                let (mut policy, problems) =
                    Policy::from_settings(settings.permissions.as_ref(), &cwd, home.as_deref());
                for problem in problems {
                    let _ = self
                        .log
                        .append(
                            Some(turn),
                            AppEvent::Notice {
                                message: format!("setting.json: {problem}"),
                            },
                        )
                        .await;
                }
                if let Some(mode) = self.state().mode {
                    policy.mode = mode;
                }
                let policy = Arc::new(Mutex::new(policy));
                self.state().active_policy = Some(Arc::clone(&policy));
                let (baseline_taken, baseline) = watch::channel(false);
                let gate = SessionGate {
                    policy,
                    approvals: Arc::clone(&self.approvals),
                    log: self.log.clone(),
                    turn,
                    cancel: cancel.clone(),
                    baseline,
                };
                let cx = ToolCx {
                    cwd: cwd.clone(),
                    project_root: cwd,
                    env,
                    cancel: cancel.clone(),
                    gate: Arc::new(gate),
                    output: Arc::new(NoOutput),
                };
                // What the project holds before the turn (changes made outside stepper since
                // the last turn are taken as they are), walked while the model is called:
                // the gate holds every tool until it is done.
                let baseline = async {
                    if let Err(e) = self.checkpoints.sync(&deps.store).await {
                        let message = format!("file checkpoints are off for this turn: {e}");
                        let _ = self
                            .log
                            .append(Some(turn), AppEvent::Notice { message })
                            .await;
                    }
                    let _ = baseline_taken.send(true);
                };
                let steering = Arc::clone(&self.steering);
                let take = Arc::new(move || {
                    std::mem::take(&mut *steering.lock().unwrap_or_else(|p| p.into_inner()))
                });
                let agent = AgentLoop::new(resolved.provider)
                    .with_steering(take)
                    .with_model_info(resolved.info)
                    .with_tools(deps.tools.clone(), cx);
                let ((), outcome) = tokio::join!(baseline, agent.run(request, cancel, &sink));
                (outcome.status, outcome.error, outcome.transcript)
            }
        };
        match self.checkpoints.record(&deps.store, &self.id, turn).await {
            Ok(0) => {}
            Ok(n) => {
                let files = u32::try_from(n).unwrap_or(u32::MAX);
                self.log
                    .append(Some(turn), AppEvent::CheckpointCreated { files })
                    .await?;
            }
            Err(e) => tracing::error!(session = %self.id, turn, error = %e, "checkpoint failed"),
        }
        // The context first, then the end of the turn: a client that sees TurnFinished can
        // count on the next turn seeing this one whole.
        let mut added = vec![ChatMessage::user(input.text.clone())];
        added.extend(transcript);
        store_context(&deps.store, &self.id, turn, &added).await;
        self.log
            .append(Some(turn), AppEvent::TurnFinished { status, error })
            .await?;
        self.log.flush().await?;
        Ok(())
    }
}

impl LiveSession {
    /// The provider for this turn: settings for the session's folder, the model, the
    /// credentials, and a recorder around it when the session records.
    async fn prepare(&self, model: &str, env: &Env, deps: &HubDeps) -> Result<Prepared, String> {
        let (cwd, record) = {
            let state = self.state();
            (state.cwd.clone(), state.record.clone())
        };
        let model_ref = ModelRef::parse(model).map_err(|e| e.to_string())?;
        let settings = settings_for(&deps.config_dir, Some(&cwd)).await?;
        let mut effective = login_env(deps).await.clone();
        effective.extend(env.iter().map(|(k, v)| (k.clone(), v.clone())));
        let cx = ResolveContext {
            env: &effective,
            settings: &settings,
            cwd: &cwd,
        };
        let mut resolved = deps
            .providers
            .resolve(&model_ref, &cx)
            .map_err(|e| e.to_string())?;
        let record = record.or_else(|| settings.record.as_ref().map(|r| cwd.join(r)));
        if let Some(path) = record {
            let secrets = std::mem::take(&mut resolved.secrets);
            resolved.provider = Arc::new(Recorder::new(
                resolved.provider,
                path,
                model_ref.to_string(),
                secrets,
            ));
        }
        Ok(Prepared {
            resolved,
            model_ref,
            settings,
            env: effective,
            cwd,
        })
    }
}

/// The merged settings for a folder, or the user's alone (`None`), read off the runtime.
pub async fn settings_for(config_dir: &Path, cwd: Option<&Path>) -> Result<Settings, String> {
    let (config_dir, cwd) = (config_dir.to_path_buf(), cwd.map(Path::to_path_buf));
    tokio::task::spawn_blocking(move || match cwd {
        Some(cwd) => Settings::load(&config_dir, &cwd),
        None => Settings::load_user(&config_dir),
    })
    .await
    .map_err(|e| e.to_string())?
    .map_err(|e| e.to_string())
}

/// The login shell's environment, resolved once per daemon (`STEPPER_LOGIN_ENV=off` skips it).
async fn login_env(deps: &HubDeps) -> &Env {
    deps.login_env
        .get_or_init(|| async {
            if std::env::var("STEPPER_LOGIN_ENV").is_ok_and(|v| v == "off") {
                return Env::new();
            }
            let shell = stepper_process::login_env::login_shell();
            let timeout = std::env::var("STEPPER_LOGIN_ENV_TIMEOUT_MS")
                .ok()
                .and_then(|v| v.parse().ok())
                .map(std::time::Duration::from_millis)
                .unwrap_or(std::time::Duration::from_secs(5));
            match stepper_process::login_env::resolve(&shell, timeout).await {
                Ok(env) => {
                    tracing::info!(
                        shell,
                        vars = env.len(),
                        "resolved the login shell's environment"
                    );
                    env
                }
                Err(e) => {
                    tracing::warn!(error = %e, "no login environment; sessions use their own only");
                    Env::new()
                }
            }
        })
        .await
}

async fn run_inputs(
    session: Weak<LiveSession>,
    mut rx: mpsc::Receiver<QueuedInput>,
    deps: HubDeps,
) {
    loop {
        // A stopping daemon starts no turn: the input stays pending in the store and runs
        // when the daemon starts again, instead of starting now only to be interrupted.
        let input = tokio::select! {
            biased;
            () = deps.shutdown.cancelled() => break,
            input = rx.recv() => match input {
                Some(input) => input,
                None => break,
            },
        };
        let Some(session) = session.upgrade() else {
            break;
        };
        session.run_turn(input, &deps).await;
    }
}

struct TurnSink<'a> {
    log: &'a EventLog,
    turn: u32,
}

impl EventSink for TurnSink<'_> {
    async fn emit(&self, event: AppEvent) -> Result<(), SinkError> {
        self.log
            .append(Some(self.turn), event)
            .await
            .map_err(|e| SinkError(e.to_string()))
    }
}

/// The layer of a session's context (layers of `stepper.md` come later).
pub(crate) const MAIN_LAYER: &str = "main";

/// Add a turn's messages to the session's stored context (a failure is logged: the turn's
/// events stay, and its context is what a restart can rebuild from them).
pub(crate) async fn store_context(
    store: &Store,
    session_id: &str,
    turn: u32,
    messages: &[ChatMessage],
) {
    let json: Vec<String> = messages
        .iter()
        .filter_map(|m| serde_json::to_string(m).ok())
        .collect();
    if let Err(e) = store
        .append_context(session_id, MAIN_LAYER, turn, &json)
        .await
    {
        tracing::error!(session = %session_id, turn, error = %e, "cannot store the turn's context");
    }
}

/// The conversation so far, as the model saw it: the stored context (tool calls, results and
/// signatures included), so a session resumes after a restart exactly where it was.
async fn history(store: &Store, session_id: &str) -> Result<Vec<ChatMessage>, String> {
    let stored = store
        .context(session_id, MAIN_LAYER)
        .await
        .map_err(|e| e.to_string())?;
    stored
        .iter()
        .map(|json| {
            serde_json::from_str::<ChatMessage>(json)
                .map_err(|e| format!("the session's stored context is unreadable ({e})"))
        })
        .collect()
}

/// The part of an environment that may be written to disk: no variable whose name looks
/// like it holds a secret.
pub fn persistable_env(env: &Env) -> Env {
    const SECRET_MARKERS: [&str; 5] = ["KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL"];
    env.iter()
        .filter(|(name, _)| {
            let upper = name.to_ascii_uppercase();
            !SECRET_MARKERS.iter().any(|m| upper.contains(m))
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_never_reach_disk() {
        let env: Env = [
            ("PATH", "/bin"),
            ("ANTHROPIC_API_KEY", "sk"),
            ("GITHUB_TOKEN", "t"),
            ("aws_secret_access_key", "s"),
            ("DB_PASSWORD", "p"),
            ("GOOGLE_APPLICATION_CREDENTIALS", "c"),
            ("HOME", "/h"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let kept: Vec<_> = persistable_env(&env).into_keys().collect();
        assert_eq!(kept, ["HOME", "PATH"]);
    }
}
