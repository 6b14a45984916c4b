//! A live session: its event log, its input queue, its clients, and what clients change
//! in it (model, mode, rewind). The turns themselves run in `turn`.
//!
//! **Inputs run one at a time, in the order of their `InputQueued` seqs**, whoever submits them:
//! committing `InputQueued` and queueing the input happen under one per-session lock.
//!
//! *"Allow always" adds exact session rules*: the simple commands of the approved line (`Bash(npm
//! test -- --watch)`), the file, the domain or the MCP tool — never a prefix the user did not see.
//! They live in `LiveSession.always` and join every later turn's policy (each turn builds its
//! policy afresh from the settings), until the daemon stops.
//!
//! *Steered text is taken exactly once*: the answering agent looks once more when the model has
//! finished (one more call answers it); what comes after its last look is queued as the next input,
//! under the same id, by `close_steering` — under the same lock `session/steer` takes, so nothing
//! falls between.
//!
//! *Presence is logged only when it is news*: a client's `ClientAttached`/`ClientDetached` are
//! logged when another client is attached to be told; a client alone logs nothing, so a session
//! attached to day after day does not grow. Transient (unstored) presence was the alternative; it
//! would have broken gap-free seqs, which clients rely on to resume.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use stepper_engine::ModelRef;
use stepper_engine::config::{PermissionMode, SandboxMode};
use stepper_engine::gate::Policy;
use stepper_engine::interrupt::{Interrupt, Interruption};
use stepper_engine::prompt::UserInstructions;
use stepper_protocol::AppEvent;
use stepper_protocol::methods::AttachedClient;
use stepper_protocol::session::{Env, SessionId, SessionInfo};
use stepper_store::Store;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::approvals::Approvals;
use super::checkpoint::Checkpointer;
use super::log::EventLog;
use super::{HubDeps, HubError, Input};

/// Inputs waiting to run. When full, `submit` refuses with a clear error rather than let one
/// client queue without bound.
pub(super) const INPUT_QUEUE: usize = 256;

pub struct LiveSession {
    pub id: SessionId,
    /// Where its attachments are stored before the event that names them.
    store: Store,
    pub log: EventLog,
    /// Approvals its turns wait on; any client answers through `session/approve`.
    pub approvals: Arc<Approvals>,
    /// Checkpoints of the project's files, turn by turn.
    pub checkpoints: Checkpointer,
    /// Text steered into the running turn, not yet given to the model.
    pub(super) steering: Arc<Mutex<Steering>>,
    /// What an approval's "always" allowed: every later turn of the session allows it too.
    pub(super) always: Arc<Mutex<Vec<stepper_engine::gate::Rule>>>,
    /// The clients subscribed right now, by subscription, each with its connection.
    clients: Mutex<HashMap<u64, (u64, AttachedClient)>>,
    next_client: std::sync::atomic::AtomicU64,
    inputs: mpsc::Sender<QueuedInput>,
    /// Inputs sent to the queue whose turn has not yet ended.
    queued: AtomicUsize,
    /// Held from committing `InputQueued` to queueing the input, so inputs run in the order
    /// of their seqs even when clients submit at the same moment.
    submitting: tokio::sync::Mutex<()>,
    pub(super) state: Mutex<State>,
    /// Fired when the session is deleted: its subscriptions end, its queue stops.
    pub ended: CancellationToken,
    /// The session's agent CLI, while its model is `claude-code/…` or `codex-cli/…`: the
    /// process lives from turn to turn (one turn at a time holds it).
    pub(super) backend: tokio::sync::Mutex<Option<stepper_providers::backend::Driver>>,
}

pub(super) struct State {
    /// The full environment of the latest client: kept in memory only.
    pub(super) env: Env,
    /// `env` came from a client of this daemon (not from the store, which keeps no
    /// secrets): a turn then does not wait for the login shell's environment.
    pub(super) env_from_client: bool,
    pub(super) cwd: PathBuf,
    /// Record provider exchanges to this file.
    pub(super) record: Option<PathBuf>,
    /// The permission mode chosen for the session (else the settings').
    pub(super) mode: Option<PermissionMode>,
    /// The sandbox chosen for the session (else the settings').
    pub(super) sandbox: Option<SandboxMode>,
    /// The session's own instructions (over the settings').
    pub(super) instructions: Arc<UserInstructions>,
    /// The session was told its sandbox is unavailable (it is told once).
    pub(super) sandbox_noticed: bool,
    /// Problems with the session's instructions already said (each is said once).
    pub(super) memory_noticed: std::collections::HashSet<String>,
    /// Whether this daemon ran the session's `SessionStart` hooks.
    pub(super) hooks_started: bool,
    /// `/clear` emptied the context: the next `SessionStart` hooks run with source `clear`.
    pub(super) cleared: bool,
    /// The running turn's policy, so a mode change reaches its next tool call.
    pub(super) active_policy: Option<Arc<Mutex<Policy>>>,
    pub(super) model: String,
    pub(super) turns: u32,
    pub(super) running: Option<Running>,
}

/// The running turn, as others reach it: its cancellation, and why it was cancelled.
#[derive(Clone, Default)]
pub(super) struct Running {
    pub(super) cancel: CancellationToken,
    pub(super) interrupt: Interrupt,
}

/// What was steered into the running turn and not yet taken by the model.
#[derive(Default)]
pub(super) struct Steering {
    /// A turn takes steering: from its start until what it left untaken is queued.
    open: bool,
    /// Each with the input id `session/steer` answered.
    texts: Vec<(String, String)>,
}

pub struct QueuedInput {
    pub input_id: String,
    pub text: String,
    /// Its images and documents, stored in the session: a turn reads their bytes when it
    /// starts.
    pub attachments: Vec<stepper_protocol::Attachment>,
    /// The client that submitted it, when this daemon took it from one.
    pub by: Option<String>,
}

/// What a session chose for itself rather than take its folder's settings.
#[derive(Debug, Clone, Default)]
pub struct Chosen {
    pub mode: Option<PermissionMode>,
    pub sandbox: Option<SandboxMode>,
    /// Instructions in place of or after stepper's own, over the settings'.
    pub instructions: Arc<UserInstructions>,
}

impl LiveSession {
    /// Bring a stored session to life: start its log writer. `env` is a client's
    /// (`from_client`) or what the store kept. Its inputs come out of the receiver, for the
    /// turn actor the hub spawns beside it.
    pub(super) fn start(
        info: &SessionInfo,
        (env, from_client): (Env, bool),
        record: Option<PathBuf>,
        chosen: Chosen,
        first: Option<QueuedInput>,
        deps: &HubDeps,
    ) -> (Arc<LiveSession>, mpsc::Receiver<QueuedInput>) {
        let log = EventLog::spawn_with(
            deps.store.clone(),
            info.id.clone(),
            info.last_seq,
            &deps.tasks,
            Some(deps.transcripts.writer(&info.id, &info.cwd)),
        );
        let (inputs, rx) = mpsc::channel(INPUT_QUEUE);
        let queued = AtomicUsize::new(0);
        if let Some(first) = first {
            // An empty queue has room: the first input is the first turn.
            if inputs.try_send(first).is_ok() {
                queued.store(1, Ordering::SeqCst);
            }
        }
        let mut trouble = log.watch_trouble();
        let session = Arc::new(LiveSession {
            id: info.id.clone(),
            store: deps.store.clone(),
            log,
            approvals: Arc::default(),
            clients: Mutex::default(),
            steering: Arc::default(),
            always: Arc::default(),
            checkpoints: Checkpointer::new(Path::new(&info.cwd)),
            next_client: Default::default(),
            inputs,
            queued,
            submitting: tokio::sync::Mutex::new(()),
            ended: CancellationToken::new(),
            backend: tokio::sync::Mutex::new(None),
            state: Mutex::new(State {
                env,
                env_from_client: from_client,
                cwd: PathBuf::from(&info.cwd),
                record,
                mode: chosen.mode,
                sandbox: chosen.sandbox,
                instructions: chosen.instructions,
                sandbox_noticed: false,
                memory_noticed: Default::default(),
                hooks_started: false,
                cleared: false,
                active_policy: None,
                model: info.model.clone(),
                turns: info.turns,
                running: None,
            }),
        });
        // When the store stops taking the session's events, its running turn ends (failed,
        // saying why: see `finish_turn`): nothing more it did could be kept or seen.
        let weak = Arc::downgrade(&session);
        deps.tasks.spawn(async move {
            while trouble.changed().await.is_ok() {
                if trouble.borrow_and_update().is_none() {
                    continue;
                }
                match weak.upgrade() {
                    Some(session) => {
                        session.interrupt(stepper_engine::interrupt::Interruption::Store);
                    }
                    None => break,
                }
            }
        });
        (session, rx)
    }

    pub(super) fn state(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic while holding this lock cannot leave State inconsistent (plain fields).
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Queue an input: committed as `InputQueued` before this returns its seq.
    pub async fn submit(
        &self,
        input: Input,
        env: Option<Env>,
        client: Option<String>,
    ) -> Result<(String, u64), HubError> {
        if let Some(env) = env {
            let mut state = self.state();
            state.env_from_client = !env.is_empty();
            state.env = env;
        }
        let _order = self.submitting.lock().await;
        let input_id = uuid::Uuid::now_v7().to_string();
        let seq = self.queue_input(input_id.clone(), input, client).await?;
        Ok((input_id, seq))
    }

    /// Commit `InputQueued` (its attachments first) and queue the input; the caller holds
    /// `submitting`.
    async fn queue_input(
        &self,
        input_id: String,
        input: Input,
        client: Option<String>,
    ) -> Result<u64, HubError> {
        let permit = self.inputs.try_reserve().map_err(|_| HubError::QueueFull)?;
        // Persist, then publish: the bytes are stored before the event that names them.
        self.store
            .put_attachments(&self.id, &super::stored(&input.media))
            .await?;
        let attachments: Vec<_> = input.media.into_iter().map(|m| m.about).collect();
        let event = AppEvent::InputQueued {
            input_id: input_id.clone(),
            text: input.text.clone(),
            client: client.clone(),
            attachments: attachments.clone(),
        };
        let seq = self.log.append_committed(None, event).await?;
        self.queued.fetch_add(1, Ordering::SeqCst);
        permit.send(QueuedInput {
            input_id,
            text: input.text,
            attachments,
            by: client,
        });
        Ok(seq)
    }

    /// Queue an input whose `InputQueued` a previous daemon committed but never ran, if
    /// the queue has room; else it is handed back.
    pub fn requeue_now(&self, input: QueuedInput) -> Result<(), QueuedInput> {
        self.queued.fetch_add(1, Ordering::SeqCst);
        self.inputs.try_send(input).map_err(|e| {
            self.queued.fetch_sub(1, Ordering::SeqCst);
            e.into_inner()
        })
    }

    /// Like [`LiveSession::requeue_now`], waiting for room in the queue.
    pub async fn requeue(&self, input: QueuedInput) -> Result<(), HubError> {
        let permit = self
            .inputs
            .reserve()
            .await
            .map_err(|_| HubError::QueueFull)?;
        self.queued.fetch_add(1, Ordering::SeqCst);
        permit.send(input);
        Ok(())
    }

    /// Its exchanges with the provider are recorded to a file (set at creation, not stored).
    pub(super) fn records(&self) -> bool {
        self.state().record.is_some()
    }

    /// A queued input's turn has ended (or it will not run).
    pub(super) fn input_done(&self) {
        self.queued.fetch_sub(1, Ordering::SeqCst);
    }

    /// Nothing is going on in the session and nothing will start by itself: no turn runs or
    /// is queued, no client follows it, and its log has committed everything. Such a session
    /// can leave memory; the next use loads it from the store as it is.
    pub(super) fn is_quiescent(&self) -> bool {
        self.queued.load(Ordering::SeqCst) == 0
            && self.state().running.is_none()
            && self
                .clients
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .is_empty()
            && self.log.is_settled()
    }

    /// Interrupt the running turn, saying who did; false when none runs.
    pub fn interrupt(&self, by: Interruption) -> bool {
        match &self.state().running {
            Some(running) => {
                // Why, before the turn can see that it was.
                running.interrupt.set(by);
                running.cancel.cancel();
                true
            }
            None => false,
        }
    }

    /// What takes the text steered in since it was last called, for the running turn.
    pub(super) fn steering_taker(&self) -> Arc<dyn Fn() -> Vec<String> + Send + Sync> {
        let steering = Arc::clone(&self.steering);
        Arc::new(move || {
            let mut steering = steering.lock().unwrap_or_else(|p| p.into_inner());
            std::mem::take(&mut steering.texts)
                .into_iter()
                .map(|(_, text)| text)
                .collect()
        })
    }

    fn steering(&self) -> std::sync::MutexGuard<'_, Steering> {
        self.steering.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A turn starts: text steered from now on is its to take.
    pub(super) fn open_steering(&self) {
        self.steering().open = true;
    }

    /// The turn has ended: what was steered in after its last model call (its agent looks
    /// once more before it stops, so only what came after that) is queued as the next
    /// input, under the id `session/steer` gave it. From now on steering is a submit.
    pub(super) async fn close_steering(&self) {
        let _order = self.submitting.lock().await;
        let left = {
            let mut steering = self.steering();
            steering.open = false;
            std::mem::take(&mut steering.texts)
        };
        for (input_id, text) in left {
            if let Err(e) = self.queue_input(input_id, Input::text(text), None).await {
                tracing::error!(session = %self.id, error = %e, "text steered as the turn ended could not be queued");
            }
        }
    }

    /// Add text to the running turn: its `inputId` and the seq of its `Steered`. With no
    /// turn running (or one that has taken its last look), the text is queued as an input.
    pub async fn steer(&self, text: String, by: Option<String>) -> Result<(String, u64), HubError> {
        let order = self.submitting.lock().await;
        let input_id = uuid::Uuid::now_v7().to_string();
        let taken = {
            let mut steering = self.steering();
            if steering.open {
                steering.texts.push((input_id.clone(), text.clone()));
            }
            steering.open
        };
        if !taken {
            drop(order);
            return self.submit(Input::text(text), None, by).await;
        }
        let turn = self.state().turns;
        let seq = self
            .log
            .append_committed(
                Some(turn),
                AppEvent::Steered {
                    text,
                    by,
                    input_id: Some(input_id.clone()),
                },
            )
            .await?;
        Ok((input_id, seq))
    }

    /// Put files and/or conversation back as they were before `turn`.
    pub async fn rewind(
        &self,
        turn: u32,
        files: bool,
        conversation: bool,
        store: &Store,
    ) -> Result<u32, HubError> {
        if self.is_running() {
            return Err(HubError::TurnRunning {
                session: self.id.clone(),
                then: "rewind",
            });
        }
        let last = self.state().turns;
        if turn == 0 || turn > last {
            return Err(HubError::NoSuchTurn {
                turn,
                range: format!("this session has turns 1 to {last}"),
            });
        }
        // What the last turn queued (its end and its context) is committed before anything
        // is taken back.
        self.log.flush().await?;
        let mut restored = 0;
        if files {
            restored =
                super::checkpoint::restore(self.checkpoints.root(), store, &self.id, turn).await?;
            self.checkpoints.forget().await;
        }
        if conversation {
            store.truncate_context(&self.id, turn).await?;
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
            .await?;
        Ok(files)
    }

    /// A client subscribed: it is listed, and the clients already attached are told. A
    /// client alone with the session logs nothing: presence is news only to someone else,
    /// and a session attached to day after day would otherwise grow by two events a visit
    /// (`session/clients` says who is attached at any time). A connection is one client
    /// however many subscriptions it holds: only its first attaches it.
    pub async fn attach(&self, connection: u64, client: AttachedClient) -> u64 {
        let id = self
            .next_client
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let event = AppEvent::ClientAttached {
            client: client.name.clone(),
            kind: client.kind,
            pid: client.pid,
        };
        let news = {
            let mut clients = self.clients.lock().unwrap_or_else(|p| p.into_inner());
            let others = clients.values().any(|(c, _)| *c != connection);
            let again = clients.values().any(|(c, _)| *c == connection);
            clients.insert(id, (connection, client));
            others && !again
        };
        if news && let Err(e) = self.log.append(None, event).await {
            tracing::warn!(session = %self.id, error = %e, "cannot record a client attaching");
        }
        id
    }

    /// Subscription `id` ended; the turn goes on. When it was its connection's last, the
    /// client left: the clients still attached are told; the last to leave logs nothing.
    pub async fn detach(&self, id: u64) {
        let (gone, news) = {
            let mut clients = self.clients.lock().unwrap_or_else(|p| p.into_inner());
            let gone = clients.remove(&id);
            let news = gone.as_ref().is_some_and(|(connection, _)| {
                let others = clients.values().any(|(c, _)| c != connection);
                let still = clients.values().any(|(c, _)| c == connection);
                others && !still
            });
            (gone, news)
        };
        let Some((_, client)) = gone else { return };
        if !news {
            return;
        }
        let left = AppEvent::ClientDetached {
            client: client.name,
        };
        if let Err(e) = self.log.append(None, left).await {
            tracing::warn!(session = %self.id, error = %e, "cannot record a client leaving");
        }
    }

    /// The clients attached, each connection once (as it first subscribed), first come first.
    pub fn clients(&self) -> Vec<AttachedClient> {
        let mut first: HashMap<u64, AttachedClient> = HashMap::new();
        for (connection, client) in self
            .clients
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .values()
        {
            let kept = first.entry(*connection).or_insert_with(|| client.clone());
            if client.since < kept.since {
                *kept = client.clone();
            }
        }
        let mut clients: Vec<_> = first.into_values().collect();
        clients.sort_by_key(|c| c.since);
        clients
    }

    /// The model of the next turns.
    pub async fn set_model(
        &self,
        model: &ModelRef,
        by: Option<String>,
        store: &Store,
    ) -> Result<(), HubError> {
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
    ) -> Result<(), HubError> {
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
            .append_committed(None, AppEvent::ModeChanged { mode, by })
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

    /// The sandbox chosen for the session, if it chose one.
    pub fn sandbox(&self) -> Option<SandboxMode> {
        self.state().sandbox
    }

    /// The instructions the session was created with.
    pub fn instructions(&self) -> Arc<UserInstructions> {
        Arc::clone(&self.state().instructions)
    }

    /// Whether the environment came from a client of this daemon (not from the store).
    pub fn env_from_client(&self) -> bool {
        self.state().env_from_client
    }

    /// The session was deleted: end its subscriptions and stop its queue.
    pub fn end(&self) {
        self.ended.cancel();
    }

    /// The folder the session works in.
    pub fn cwd(&self) -> PathBuf {
        self.state().cwd.clone()
    }

    pub fn is_running(&self) -> bool {
        self.state().running.is_some()
    }
}
