//! `stepper acp`: an Agent Client Protocol agent on stdio, for editors (Zed, JetBrains,
//! Neovim, …). A thin client of the daemon like the TUI: sessions, turns, approvals and
//! history are the daemon's, so a session an editor starts is one `stepper attach` joins,
//! and an approval answered in either place closes the other's question.
//!
//! ACP v1: newline-delimited JSON-RPC 2.0 on stdin/stdout; nothing else is written to
//! stdout (diagnostics go to stderr, which editors log).
//!
//! This file is the connection: lines read and written, requests dispatched, its errors and
//! its state. `session` answers the session requests, `prompt` runs a prompt, `follow` turns
//! a session's events into updates, `approval` puts approvals to the editor, and `map` is the
//! pure mapping from events to ACP's updates.
//!
//! *`stepper acp` is written on serde_json, not the `agent-client-protocol` crate.* The agent needs
//! a dozen messages and must not pull a second async stack into the CLI. The official TypeScript
//! SDK's schemas check the wire format in the tests instead.

mod approval;
mod follow;
mod map;
mod prompt;
mod session;

use std::collections::HashMap;
use std::process::ExitCode;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use stepper_protocol::client::{ClientError, DaemonClient};
use stepper_protocol::methods::{
    SessionInterrupt, SessionParams, SessionSetMode, SessionSetModeParams,
};
use stepper_protocol::{PermissionMode, TurnStatus};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};
use tokio::sync::{oneshot, watch};

use crate::connect;
use map::View;

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
}

fn session_id(params: &Value) -> Result<String, AcpError> {
    params
        .get("sessionId")
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| AcpError::invalid("sessionId is missing"))
}

fn parse_mode(mode: Option<&str>) -> Result<PermissionMode, AcpError> {
    let mode = mode.ok_or_else(|| AcpError::invalid("modeId is missing"))?;
    mode.parse().map_err(|_| {
        AcpError::invalid(format!(
            "no mode {mode:?}: the modes are default, accept-edits, plan and auto"
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_are_checked() {
        assert_eq!(parse_mode(Some("plan")).unwrap(), PermissionMode::Plan);
        assert!(
            parse_mode(Some("yolo"))
                .unwrap_err()
                .message
                .contains("accept-edits")
        );
    }
}
