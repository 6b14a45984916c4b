//! `stepper acp`: an Agent Client Protocol agent on stdio, for editors (Zed, JetBrains,
//! Neovim, …). A thin client of the daemon like the TUI: sessions, turns, approvals and
//! history are the daemon's, so a session an editor starts is one `stepper attach` joins,
//! and an approval answered in either place closes the other's question.
//!
//! ACP v1: newline-delimited JSON-RPC 2.0 on stdin/stdout; nothing else is written to
//! stdout (diagnostics go to stderr, which editors log).

mod map;

use std::collections::HashMap;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use stepper_protocol::client::{ClientError, DaemonClient, EventStream};
use stepper_protocol::methods::{
    CommandInfo, CommandsList, CwdParams, ProvidersStatus, ProvidersStatusParams, SessionApprove,
    SessionApproveParams, SessionCreate, SessionCreateParams, SessionGet, SessionInterrupt,
    SessionList, SessionListParams, SessionParams, SessionSetMode, SessionSetModeParams,
    SessionSubmit, SessionSubmitParams, TrustGet, TrustSet, TrustSetParams,
};
use stepper_protocol::{ApprovalDecision, PermissionMode, TurnStatus};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};
use tokio::sync::{oneshot, watch};

use crate::connect;
use crate::session::client_env;
use map::{Effect, View};

/// The ACP major version spoken here.
const PROTOCOL_VERSION: u64 = 1;

/// The longest line taken from the editor (the daemon's own request limit).
const MAX_LINE: usize = 32 << 20;

pub async fn run() -> anyhow::Result<ExitCode> {
    // `None` ends the writer once what was queued before it is written.
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Option<String>>();
    let writer = tokio::spawn(async move {
        let mut stdout = tokio::io::stdout();
        while let Some(Some(line)) = rx.recv().await {
            stdout.write_all(line.as_bytes()).await?;
            stdout.write_all(b"\n").await?;
            stdout.flush().await?;
        }
        Ok::<(), std::io::Error>(())
    });
    let conn = Arc::new(Conn {
        out: tx,
        name: format!("{} {}", connect::ACP_CLIENT, std::process::id()),
        daemon: tokio::sync::OnceCell::new(),
        sessions: Mutex::new(HashMap::new()),
        next_id: AtomicU64::new(0),
        waiting: Mutex::new(HashMap::new()),
        trust_asked: Mutex::default(),
    });
    let mut stdin = tokio::io::BufReader::new(tokio::io::stdin());
    let mut line = Vec::new();
    loop {
        line.clear();
        let n = (&mut stdin)
            .take(MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut line)
            .await?;
        if n == 0 {
            break;
        }
        if line.len() > MAX_LINE {
            conn.send(error_reply(
                Value::Null,
                AcpError::new(-32600, format!("a message over {MAX_LINE} bytes")),
            ));
            // The rest of that line is not a message either.
            while !line.ends_with(b"\n") {
                line.clear();
                if (&mut stdin)
                    .take(1 << 20)
                    .read_until(b'\n', &mut line)
                    .await?
                    == 0
                {
                    break;
                }
            }
            continue;
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim();
        if !text.is_empty() {
            Arc::clone(&conn).receive(text);
        }
    }
    // The editor closed the pipe: it is gone. Turns go on in the daemon; what this agent
    // still follows stops here.
    conn.sessions
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clear();
    let _ = conn.out.send(None);
    let _ = writer.await;
    Ok(ExitCode::SUCCESS)
}

/// An error as ACP returns it.
#[derive(Debug)]
struct AcpError {
    code: i64,
    message: String,
}

impl AcpError {
    fn new(code: i64, message: impl Into<String>) -> AcpError {
        AcpError {
            code,
            message: message.into(),
        }
    }

    fn invalid(message: impl Into<String>) -> AcpError {
        AcpError::new(-32602, message)
    }
}

impl From<ClientError> for AcpError {
    fn from(e: ClientError) -> AcpError {
        let code = match e.code() {
            // PROVIDER_UNAVAILABLE: ACP's auth_required, so the editor offers its sign-in.
            Some(-32059) => -32000,
            // NOT_FOUND: ACP's resource_not_found.
            Some(-32052) => -32002,
            Some(-32602) => -32602,
            _ => -32603,
        };
        AcpError::new(code, e.to_string())
    }
}

impl From<anyhow::Error> for AcpError {
    fn from(e: anyhow::Error) -> AcpError {
        AcpError::new(-32603, format!("{e:#}"))
    }
}

/// What a request returns: its result, and updates to send after it (a session's commands
/// once the editor knows the session).
struct Reply {
    result: Value,
    then: Vec<Value>,
}

impl From<Value> for Reply {
    fn from(result: Value) -> Reply {
        Reply {
            result,
            then: Vec::new(),
        }
    }
}

fn error_reply(id: Value, e: AcpError) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": e.code, "message": e.message}})
}

/// How a turn ended, for `session/prompt`'s answer.
type TurnEnd = (TurnStatus, Option<String>);

#[derive(Default)]
struct Turns {
    /// The input whose turn runs now, and whether this connection queued it.
    current: Option<(String, bool)>,
    /// Prompts waiting for their turn's end, by input id.
    waiters: HashMap<String, oneshot::Sender<TurnEnd>>,
    /// Our turns that ended before their prompt waited (a fast turn outruns its submit's
    /// answer).
    ended: HashMap<String, TurnEnd>,
}

/// One session this connection follows: its events become the editor's updates.
struct Live {
    id: String,
    cwd: String,
    view: Mutex<View>,
    turns: Mutex<Turns>,
    /// Open `session/request_permission`s: the daemon's request id → ours.
    asks: Mutex<HashMap<String, u64>>,
    /// The seq of the last event handled.
    handled: watch::Sender<u64>,
    pump: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl Drop for Live {
    fn drop(&mut self) {
        if let Some(pump) = self.pump.lock().unwrap_or_else(|p| p.into_inner()).take() {
            pump.abort();
        }
    }
}

struct Conn {
    out: tokio::sync::mpsc::UnboundedSender<Option<String>>,
    /// How this connection names itself to the daemon (inputs it queued carry it).
    name: String,
    daemon: tokio::sync::OnceCell<DaemonClient>,
    sessions: Mutex<HashMap<String, Arc<Live>>>,
    next_id: AtomicU64,
    /// Our requests to the editor awaiting its answer.
    waiting: Mutex<HashMap<u64, oneshot::Sender<Result<Value, Value>>>>,
    /// The folders whose trust this connection asked about (once each).
    trust_asked: Mutex<std::collections::HashSet<String>>,
}

impl Conn {
    fn send(&self, message: Value) {
        // The writer is gone only when stdout is: nobody is left to tell.
        let _ = self.out.send(Some(message.to_string()));
    }

    fn notify(&self, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// One line from the editor: a request, a notification, or an answer to our request.
    fn receive(self: Arc<Self>, text: &str) {
        let message: Value = match serde_json::from_str(text) {
            Ok(m) => m,
            Err(e) => {
                return self.send(error_reply(
                    Value::Null,
                    AcpError::new(-32700, format!("not JSON: {e}")),
                ));
            }
        };
        let method = message.get("method").and_then(Value::as_str);
        let id = message.get("id").cloned();
        let params = message.get("params").cloned().unwrap_or(Value::Null);
        match (method, id) {
            (Some(method), Some(id)) => {
                let method = method.to_string();
                tokio::spawn(async move {
                    match self.request(&method, params).await {
                        Ok(reply) => {
                            self.send(json!({"jsonrpc": "2.0", "id": id, "result": reply.result}));
                            for update in reply.then {
                                self.notify("session/update", update);
                            }
                        }
                        Err(e) => self.send(error_reply(id, e)),
                    }
                });
            }
            (Some(method), None) => {
                let method = method.to_string();
                tokio::spawn(async move { self.notification(&method, params).await });
            }
            (None, Some(id)) => {
                let answer = match message.get("error") {
                    Some(error) => Err(error.clone()),
                    None => Ok(message.get("result").cloned().unwrap_or(Value::Null)),
                };
                let waiter = id.as_u64().and_then(|id| {
                    self.waiting
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .remove(&id)
                });
                if let Some(waiter) = waiter {
                    let _ = waiter.send(answer);
                }
            }
            (None, None) => self.send(error_reply(
                Value::Null,
                AcpError::new(-32600, "a message with neither a method nor an id"),
            )),
        }
    }

    async fn daemon(&self) -> Result<&DaemonClient, AcpError> {
        self.daemon
            .get_or_try_init(|| async {
                let places = connect::places()?;
                connect::connect_or_start(&places, &self.name).await
            })
            .await
            .map_err(AcpError::from)
    }

    async fn request(self: &Arc<Self>, method: &str, params: Value) -> Result<Reply, AcpError> {
        match method {
            "initialize" => self.initialize(params).await.map(Reply::from),
            "authenticate" => {
                self.check_provider().await?;
                Ok(json!({}).into())
            }
            "session/new" => self.new_session(params).await,
            "session/load" => self.load_session(params).await,
            "session/list" => self.list_sessions(params).await.map(Reply::from),
            "session/prompt" => self.prompt(params).await.map(Reply::from),
            "session/set_mode" => {
                let id = session_id(&params)?;
                let mode = parse_mode(params.get("modeId").and_then(Value::as_str))?;
                self.daemon()
                    .await?
                    .call::<SessionSetMode>(SessionSetModeParams {
                        session_id: id,
                        mode,
                    })
                    .await?;
                Ok(json!({}).into())
            }
            other => Err(AcpError::new(
                -32601,
                format!("stepper acp does not offer {other:?}"),
            )),
        }
    }

    async fn notification(self: &Arc<Self>, method: &str, params: Value) {
        match method {
            "session/cancel" => {
                let Ok(id) = session_id(&params) else { return };
                let Ok(daemon) = self.daemon().await else {
                    return;
                };
                if let Err(e) = daemon
                    .call::<SessionInterrupt>(SessionParams { session_id: id })
                    .await
                {
                    eprintln!("stepper acp: cancel: {e}");
                }
            }
            // Nothing of ours runs long enough to stop but a prompt, which session/cancel ends.
            "$/cancel_request" => {}
            other => eprintln!("stepper acp: ignored the notification {other:?}"),
        }
    }

    async fn initialize(&self, params: Value) -> Result<Value, AcpError> {
        if params
            .get("protocolVersion")
            .and_then(Value::as_u64)
            .is_none()
        {
            return Err(AcpError::invalid(
                "initialize needs protocolVersion (an integer; this agent speaks 1)",
            ));
        }
        let usable = self.provider_usable().await?;
        let auth_methods = if usable {
            json!([])
        } else {
            json!([{
                "id": "stepper",
                "name": "Set up a provider",
                "description": "No model provider is set up: run 'stepper' in a terminal \
                                (or 'stepper auth login'), then try again",
            }])
        };
        Ok(json!({
            "protocolVersion": PROTOCOL_VERSION,
            "agentCapabilities": {
                "loadSession": true,
                "promptCapabilities": {"image": false, "audio": false, "embeddedContext": true},
                "mcpCapabilities": {"http": false, "sse": false},
                "sessionCapabilities": {"list": {}},
            },
            "agentInfo": {"name": "stepper", "title": "stepper", "version": env!("CARGO_PKG_VERSION")},
            "authMethods": auth_methods,
        }))
    }

    async fn provider_usable(&self) -> Result<bool, AcpError> {
        let status = self
            .daemon()
            .await?
            .call::<ProvidersStatus>(ProvidersStatusParams {
                cwd: None,
                env: client_env(),
                probe: false,
            })
            .await?;
        Ok(status.default_usable)
    }

    async fn check_provider(&self) -> Result<(), AcpError> {
        if self.provider_usable().await? {
            return Ok(());
        }
        Err(AcpError::new(
            -32000,
            "no model provider is set up: run 'stepper' in a terminal and choose one (or \
             'stepper auth login'), then try again",
        ))
    }

    async fn new_session(self: &Arc<Self>, params: Value) -> Result<Reply, AcpError> {
        let cwd = absolute_cwd(&params)?;
        ignore_mcp_servers(&params);
        let daemon = self.daemon().await?;
        let created = daemon
            .call::<SessionCreate>(SessionCreateParams {
                cwd: cwd.clone(),
                env: client_env(),
                model: None,
                title: None,
                record: None,
                mode: None,
                sandbox: None,
                input: None,
                system_prompt: None,
                append_system_prompt: None,
            })
            .await?;
        let id = created.session.id.clone();
        let events = daemon.subscribe_events(&id, 0).await?;
        self.follow(&id, &cwd, &created.session.model, events, 0)
            .await;
        Ok(Reply {
            result: json!({"sessionId": id, "modes": map::modes(created.mode.unwrap_or(PermissionMode::Default))}),
            then: vec![commands(&id, &self.session_commands(&cwd).await)],
        })
    }

    async fn load_session(self: &Arc<Self>, params: Value) -> Result<Reply, AcpError> {
        let id = session_id(&params)?;
        ignore_mcp_servers(&params);
        let daemon = self.daemon().await?;
        let got = daemon
            .call::<SessionGet>(SessionParams {
                session_id: id.clone(),
            })
            .await?;
        // The whole conversation, as updates, before the answer: finished turns without
        // their streamed pieces (their messages carry the text).
        let events = daemon.subscribe_history(&id, 0).await?;
        let target = got.session.last_seq;
        let live = self
            .follow(&id, &got.session.cwd, &got.session.model, events, target)
            .await;
        let mut handled = live.handled.subscribe();
        // An error means the subscription ended: whatever was replayed is all there is.
        let _ = handled.wait_for(|seq| *seq >= target).await;
        Ok(Reply {
            result: json!({"modes": map::modes(got.mode.unwrap_or(PermissionMode::Default))}),
            then: vec![commands(
                &id,
                &self.session_commands(&got.session.cwd).await,
            )],
        })
    }

    /// The commands of sessions in `cwd` (none when the daemon cannot say).
    async fn session_commands(&self, cwd: &str) -> Vec<CommandInfo> {
        let Ok(daemon) = self.daemon().await else {
            return Vec::new();
        };
        daemon
            .call::<CommandsList>(CwdParams { cwd: cwd.into() })
            .await
            .map(|l| l.commands)
            .unwrap_or_default()
    }

    async fn list_sessions(&self, params: Value) -> Result<Value, AcpError> {
        let cwd = params
            .get("cwd")
            .and_then(Value::as_str)
            .map(str::to_string);
        let cursor = params
            .get("cursor")
            .and_then(Value::as_str)
            .map(str::to_string);
        let list = self
            .daemon()
            .await?
            .call::<SessionList>(SessionListParams {
                cwd,
                limit: None,
                cursor,
            })
            .await?;
        let sessions: Vec<Value> = list
            .sessions
            .iter()
            .map(|s| {
                let mut info = json!({
                    "sessionId": s.id,
                    "cwd": s.cwd,
                    "updatedAt": map::iso8601(s.updated_at),
                    "_meta": {"model": s.model, "turns": s.turns},
                });
                if let Some(title) = &s.title {
                    info["title"] = json!(title);
                }
                info
            })
            .collect();
        let mut result = json!({"sessions": sessions});
        if let Some(next) = list.next_cursor {
            result["nextCursor"] = json!(next);
        }
        Ok(result)
    }

    async fn prompt(self: &Arc<Self>, params: Value) -> Result<Value, AcpError> {
        let id = session_id(&params)?;
        let live = self.live(&id)?;
        let blocks = params
            .get("prompt")
            .and_then(Value::as_array)
            .ok_or_else(|| AcpError::invalid("session/prompt needs prompt: an array of blocks"))?;
        let text = prompt_text(blocks)?;
        let daemon = self.daemon().await?;
        self.ask_trust(daemon, &live).await;
        let submitted = daemon
            .call::<SessionSubmit>(SessionSubmitParams {
                session_id: id.clone(),
                text,
                env: Some(client_env()),
            })
            .await?;
        let ended = {
            let mut turns = live.turns.lock().unwrap_or_else(|p| p.into_inner());
            match turns.ended.remove(&submitted.input_id) {
                Some(end) => Ok(end),
                None => {
                    let (tx, rx) = oneshot::channel();
                    turns.waiters.insert(submitted.input_id, tx);
                    Err(rx)
                }
            }
        };
        let (status, error) = match ended {
            Ok(end) => end,
            Err(rx) => rx.await.map_err(|_| {
                AcpError::new(
                    -32603,
                    "lost the daemon while the turn ran — the turn goes on there; \
                     session/load shows it",
                )
            })?,
        };
        match status {
            TurnStatus::Completed => Ok(json!({"stopReason": "end_turn"})),
            TurnStatus::Interrupted => Ok(json!({"stopReason": "cancelled"})),
            TurnStatus::Failed => Err(AcpError::new(
                -32603,
                error.unwrap_or_else(|| "the turn failed — see 'stepper daemon logs'".into()),
            )),
        }
    }

    /// Before a folder's first prompt on this connection: when the user never decided about
    /// it and its files ask for what only trust gives, ask the editor (a permission request);
    /// the answer is remembered either way. An editor that cannot answer decides nothing.
    async fn ask_trust(&self, daemon: &DaemonClient, live: &Live) {
        let first = self
            .trust_asked
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(live.cwd.clone());
        if !first {
            return;
        }
        let Ok(report) = daemon
            .call::<TrustGet>(CwdParams {
                cwd: live.cwd.clone(),
            })
            .await
        else {
            return;
        };
        if report.decided_by.is_some() || report.ignored.is_empty() || report.too_broad.is_some() {
            return;
        }
        let (ours, rx) = self.expect_answer();
        self.request_permission(
            ours,
            &live.id,
            map::trust_question(&report.folder, &report.ignored),
            map::trust_options(),
        );
        let Ok(Ok(answer)) = rx.await else { return };
        let trusted = match answer.pointer("/outcome/optionId").and_then(Value::as_str) {
            Some("trust") => true,
            Some("untrusted") => false,
            _ => return,
        };
        if let Err(e) = daemon
            .call::<TrustSet>(TrustSetParams {
                cwd: live.cwd.clone(),
                trusted,
                all_below: false,
            })
            .await
        {
            eprintln!("stepper acp: trust: {e}");
        }
    }

    fn live(&self, id: &str) -> Result<Arc<Live>, AcpError> {
        self.sessions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(id)
            .cloned()
            .ok_or_else(|| {
                AcpError::new(
                    -32002,
                    format!("session {id} is not open here: session/new or session/load it first"),
                )
            })
    }

    /// Follow a session's events from `events`: updates to the editor, approvals put to it,
    /// turn ends to the prompts waiting for them. Events up to `replay_to` are history.
    async fn follow(
        self: &Arc<Self>,
        id: &str,
        cwd: &str,
        model: &str,
        events: EventStream,
        replay_to: u64,
    ) -> Arc<Live> {
        let window = match self.daemon().await {
            Ok(daemon) => {
                crate::attach::context_window(daemon, model, std::path::Path::new(cwd)).await
            }
            Err(_) => None,
        };
        let live = Arc::new(Live {
            id: id.to_string(),
            cwd: cwd.to_string(),
            view: Mutex::new(View::new(cwd, window, &self.name)),
            turns: Mutex::new(Turns::default()),
            asks: Mutex::new(HashMap::new()),
            handled: watch::channel(0).0,
            pump: Mutex::new(None),
        });
        let pump = tokio::spawn(pump(
            Arc::clone(self),
            Arc::downgrade(&live),
            events,
            replay_to,
        ));
        *live.pump.lock().unwrap_or_else(|p| p.into_inner()) = Some(pump);
        // A session loaded again replaces its old follower.
        self.sessions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id.to_string(), Arc::clone(&live));
        live
    }

    /// A new id for a request to the editor, and where its answer will arrive.
    fn expect_answer(&self) -> (u64, oneshot::Receiver<Result<Value, Value>>) {
        let ours = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.waiting
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(ours, tx);
        (ours, rx)
    }

    /// Ask the editor `session/request_permission` as request `ours`.
    fn request_permission(&self, ours: u64, session_id: &str, tool_call: Value, options: Value) {
        self.send(json!({
            "jsonrpc": "2.0",
            "id": ours,
            "method": "session/request_permission",
            "params": {"sessionId": session_id, "toolCall": tool_call, "options": options},
        }));
    }

    /// Put an approval to the editor; its answer goes to the daemon (the first answer from
    /// any client wins).
    async fn ask(self: Arc<Self>, live: Arc<Live>, request_id: String, tool_call: Value) {
        let (ours, rx) = self.expect_answer();
        live.asks
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(request_id.clone(), ours);
        self.request_permission(ours, &live.id, tool_call, map::permission_options());
        // Dropped: answered elsewhere (the request was withdrawn) or the editor left.
        let Ok(answer) = rx.await else { return };
        live.asks
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&request_id);
        let decision = match &answer {
            Ok(result) => match result.pointer("/outcome/outcome").and_then(Value::as_str) {
                Some("selected") => {
                    match result.pointer("/outcome/optionId").and_then(Value::as_str) {
                        Some("allow") => ApprovalDecision::Allow,
                        Some("always") => ApprovalDecision::AllowAlways,
                        _ => ApprovalDecision::Deny,
                    }
                }
                // Cancelled: the editor cancelled the turn, or gave up on the question.
                _ => ApprovalDecision::Deny,
            },
            Err(error) => {
                // The editor could not ask: another client still may.
                eprintln!("stepper acp: the editor did not answer an approval: {error}");
                return;
            }
        };
        let Ok(daemon) = self.daemon().await else {
            return;
        };
        if let Err(e) = daemon
            .call::<SessionApprove>(SessionApproveParams {
                session_id: live.id.clone(),
                request_id,
                decision,
            })
            .await
            // Answered by someone else a moment earlier: theirs stands.
            && e.code() != Some(-32053)
        {
            eprintln!("stepper acp: approve: {e}");
        }
    }

    /// An approval was answered elsewhere: withdraw the editor's question.
    fn withdraw(&self, live: &Live, request_id: &str) {
        let ours = live
            .asks
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(request_id);
        let Some(ours) = ours else { return };
        self.waiting
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&ours);
        self.notify("$/cancel_request", json!({"requestId": ours}));
    }
}

/// The event loop of one followed session.
async fn pump(
    conn: Arc<Conn>,
    live: std::sync::Weak<Live>,
    mut events: EventStream,
    replay_to: u64,
) {
    // Approvals seen in the history wait until it is all read: most were answered since.
    let mut deferred: Vec<(String, Value)> = Vec::new();
    let mut replaying = replay_to > 0;
    while let Some(next) = events.next().await {
        let Some(live) = live.upgrade() else { return };
        let envelope = match next {
            Ok(envelope) => envelope,
            Err(e) => {
                eprintln!("stepper acp: session {}: {e}", live.id);
                break;
            }
        };
        let seq = envelope.seq;
        let (updates, effects) = {
            let mut view = live.view.lock().unwrap_or_else(|p| p.into_inner());
            view.replaying = replaying;
            view.apply(&envelope)
        };
        for update in updates {
            conn.notify(
                "session/update",
                json!({"sessionId": live.id, "update": update}),
            );
        }
        for effect in effects {
            match effect {
                Effect::TurnStarted { input, own } => {
                    live.turns.lock().unwrap_or_else(|p| p.into_inner()).current =
                        Some((input, own));
                }
                Effect::TurnFinished { status, error } => {
                    let mut turns = live.turns.lock().unwrap_or_else(|p| p.into_inner());
                    if let Some((input, own)) = turns.current.take() {
                        match turns.waiters.remove(&input) {
                            Some(waiter) => {
                                let _ = waiter.send((status, error));
                            }
                            None if own => {
                                turns.ended.insert(input, (status, error));
                            }
                            None => {}
                        }
                    }
                }
                Effect::Ask {
                    request_id,
                    tool_call,
                } => {
                    if replaying {
                        deferred.push((request_id, tool_call));
                    } else {
                        tokio::spawn(Arc::clone(&conn).ask(
                            Arc::clone(&live),
                            request_id,
                            tool_call,
                        ));
                    }
                }
                Effect::Answered(request_id) => {
                    deferred.retain(|(id, _)| *id != request_id);
                    conn.withdraw(&live, &request_id);
                }
            }
        }
        if replaying && seq >= replay_to {
            replaying = false;
            for (request_id, tool_call) in deferred.drain(..) {
                tokio::spawn(Arc::clone(&conn).ask(Arc::clone(&live), request_id, tool_call));
            }
        }
        live.handled.send_replace(seq);
    }
    // The daemon went away: prompts waiting on this session learn it (their senders drop).
    if let Some(live) = live.upgrade() {
        live.turns
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .waiters
            .clear();
    }
}

fn session_id(params: &Value) -> Result<String, AcpError> {
    params
        .get("sessionId")
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| AcpError::invalid("sessionId is missing"))
}

fn absolute_cwd(params: &Value) -> Result<String, AcpError> {
    let cwd = params
        .get("cwd")
        .and_then(Value::as_str)
        .ok_or_else(|| AcpError::invalid("session/new needs cwd, an absolute path"))?;
    if !std::path::Path::new(cwd).is_absolute() {
        return Err(AcpError::invalid(format!(
            "cwd must be an absolute path, not {cwd:?}"
        )));
    }
    Ok(cwd.to_string())
}

fn parse_mode(mode: Option<&str>) -> Result<PermissionMode, AcpError> {
    let mode = mode.ok_or_else(|| AcpError::invalid("modeId is missing"))?;
    mode.parse().map_err(|_| {
        AcpError::invalid(format!(
            "no mode {mode:?}: the modes are default, accept-edits, plan and auto"
        ))
    })
}

/// MCP servers from the editor are not run yet: said once on stderr, the session goes on.
fn ignore_mcp_servers(params: &Value) {
    if let Some(servers) = params.get("mcpServers").and_then(Value::as_array)
        && !servers.is_empty()
    {
        eprintln!(
            "stepper acp: the editor's {} MCP server(s) are not used: stepper does not run MCP \
             servers yet",
            servers.len()
        );
    }
}

/// The slash commands an editor is offered: the daemon's built-ins (`/model`, `/context`,
/// `/help`, `/clear`, `/compact`), which it answers as turns, and the folder's custom
/// commands, skills and MCP prompts, which it expands — all of them sent as prompts. Those
/// only a terminal runs (`client`) are not offered.
fn commands(session: &str, listed: &[CommandInfo]) -> Value {
    let available: Vec<Value> = listed
        .iter()
        .filter(|c| c.kind != stepper_protocol::methods::CommandKind::Client)
        .map(|c| {
            let mut entry = json!({"name": c.name, "description": c.description});
            if let Some(hint) = &c.argument_hint {
                entry["input"] = json!({"hint": hint});
            }
            entry
        })
        .collect();
    json!({"sessionId": session, "update": {
        "sessionUpdate": "available_commands_update",
        "availableCommands": available,
    }})
}

/// A prompt's blocks as the text of one input: text as it is, files the editor embedded
/// in tags the model can tell apart, links as references to read.
fn prompt_text(blocks: &[Value]) -> Result<String, AcpError> {
    let mut text = String::new();
    for block in blocks {
        let kind = block.get("type").and_then(Value::as_str).unwrap_or("");
        let piece = match kind {
            "text" => block
                .get("text")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            "resource_link" => {
                let uri = block.get("uri").and_then(Value::as_str).unwrap_or_default();
                format!("@{}", uri.strip_prefix("file://").unwrap_or(uri))
            }
            "resource" => {
                let resource = block.get("resource").cloned().unwrap_or(Value::Null);
                let uri = resource.get("uri").and_then(Value::as_str).unwrap_or("");
                match resource.get("text").and_then(Value::as_str) {
                    Some(body) => format!("<file uri=\"{uri}\">\n{body}\n</file>"),
                    None => format!("@{}", uri.strip_prefix("file://").unwrap_or(uri)),
                }
            }
            other => {
                return Err(AcpError::invalid(format!(
                    "stepper takes text, resource links and embedded text resources in a \
                     prompt, not {other:?} (see promptCapabilities)"
                )));
            }
        };
        if !text.is_empty() && !piece.is_empty() {
            text.push('\n');
        }
        text.push_str(&piece);
    }
    if text.trim().is_empty() {
        return Err(AcpError::invalid("the prompt is empty"));
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prompt_joins_text_links_and_embedded_files() {
        let blocks = [
            json!({"type": "text", "text": "review this"}),
            json!({"type": "resource_link", "uri": "file:///p/src/lib.rs", "name": "lib.rs"}),
            json!({"type": "resource", "resource": {"uri": "file:///p/a.md", "text": "# A"}}),
        ];
        assert_eq!(
            prompt_text(&blocks).unwrap(),
            "review this\n@/p/src/lib.rs\n<file uri=\"file:///p/a.md\">\n# A\n</file>"
        );
        let image = [json!({"type": "image", "data": "", "mimeType": "image/png"})];
        assert_eq!(prompt_text(&image).unwrap_err().code, -32602);
        assert!(prompt_text(&[json!({"type": "text", "text": "  "})]).is_err());
    }

    #[test]
    fn modes_and_cwds_are_checked() {
        assert_eq!(parse_mode(Some("plan")).unwrap(), PermissionMode::Plan);
        assert!(
            parse_mode(Some("yolo"))
                .unwrap_err()
                .message
                .contains("accept-edits")
        );
        assert!(absolute_cwd(&json!({"cwd": "rel"})).is_err());
        assert_eq!(absolute_cwd(&json!({"cwd": "/abs"})).unwrap(), "/abs");
    }
}
