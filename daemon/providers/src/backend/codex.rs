//! Codex as a back-end: one long-lived `codex app-server` per session (JSON-RPC 2.0 over
//! stdio, one message a line), its thread started on the first turn and resumed
//! (`thread/resume`) by a later process; each turn a `turn/start`.
//!
//! Its notifications become the session's events: `item/agentMessage/delta` text, reasoning
//! deltas, command executions, file changes and MCP calls as tool calls (`exec_command`,
//! `apply_patch`, `mcp__server__tool`), the thread's token usage at the turn's end. Its
//! approval requests (`item/commandExecution/requestApproval`,
//! `item/fileChange/requestApproval`) go through the session's gate; the thread runs with
//! approval policy `untrusted`, so every command Codex does not itself know to be safe is
//! asked, and with sandbox `danger-full-access` (`read-only` in plan mode): the gate, not the
//! CLI's sandbox, decides. Interrupt is `turn/interrupt`, then the group is stopped after the
//! grace period.

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use stepper_engine::EventSink;
use stepper_engine::tool::{Decision, GateRequest};
use stepper_protocol::{AppEvent, ToolCallStatus, TurnStatus, Usage};

use super::Cli;
use super::claude::{Running, SpawnKey, cap, prepare, str_of};
use super::host::{Host, HostSpec};
use super::turn_loop::{self, Ended, Step, Wire};
use super::turn_loop::{Outcome, TurnSpec, died};
use crate::ndjson::Line;

/// How long the app-server may take to answer `initialize` and a thread's start.
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// One session's Codex.
#[derive(Default)]
pub struct CodexCli {
    live: Option<Live>,
    /// The CLI's thread, resumed by the next process.
    thread_id: Option<String>,
    next_id: u64,
    /// The thread's token count after the last turn, to tell a turn's own.
    total: Option<Usage>,
}

struct Live {
    host: Host,
    key: SpawnKey,
    /// The thread this process has loaded.
    thread: Option<String>,
}

impl Running for Live {
    fn process(&mut self) -> (&mut Host, &SpawnKey) {
        (&mut self.host, &self.key)
    }
}

/// Why a request to the app-server got no result.
enum Failed {
    Died,
    Error(String),
    Sink(String),
}

impl CodexCli {
    /// A back-end that resumes the thread `thread_id`, if any.
    pub fn new(thread_id: Option<String>) -> CodexCli {
        CodexCli {
            thread_id,
            ..CodexCli::default()
        }
    }

    /// The CLI's thread, once it has one.
    pub fn thread_id(&self) -> Option<&str> {
        self.thread_id.as_deref()
    }

    pub async fn shut(&mut self) {
        if let Some(mut live) = self.live.take() {
            live.host.stop(Duration::from_secs(2)).await;
        }
    }

    fn id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    /// Run one turn; its events go to `sink`.
    pub async fn turn<S: EventSink>(&mut self, t: TurnSpec<'_>, sink: &S) -> Outcome {
        let cli = Cli::CodexCli;
        if let Some(refused) = turn_loop::unloaded(&t) {
            return refused;
        }
        // Before anything starts: what it cannot take is said, not dropped.
        if let Some(why) = t.attachments.iter().find_map(|m| cli.refuses(&m.about)) {
            return Outcome::failed(why);
        }
        let (program, env, key) = match prepare(cli, &t, &mut self.live).await {
            Ok(ready) => ready,
            Err(failed) => return failed,
        };
        if self.live.is_none() {
            let spawned = Host::spawn(HostSpec {
                name: cli.provider(),
                program: program.clone(),
                args: vec![OsString::from("app-server")],
                env,
                cwd: t.cwd.to_path_buf(),
                guard: t.guard.map(Path::to_path_buf),
                secrets: t.secrets.to_vec(),
            })
            .await;
            let host = match spawned {
                Ok(host) => host,
                Err(e) => {
                    return Outcome::failed(format!(
                        "cannot start Codex ({}): {e}",
                        program.display()
                    ));
                }
            };
            self.live = Some(Live {
                host,
                key,
                thread: None,
            });
            let id = self.id();
            let init = json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
                "clientInfo": {"name": "stepper", "title": "stepper", "version": env!("CARGO_PKG_VERSION")}}});
            match self.call(init, id, sink).await {
                Ok(_) => {}
                Err(failed) => return self.start_failed(failed).await,
            }
            self.send(json!({"jsonrpc": "2.0", "method": "initialized"}));
        }
        // The thread: this process's, else the session's resumed, else a new one.
        if self.live.as_ref().is_some_and(|l| l.thread.is_none()) {
            let sandbox = if t.plan {
                "read-only"
            } else {
                "danger-full-access"
            };
            let mut params = json!({
                "cwd": t.cwd,
                "approvalPolicy": "untrusted",
                "sandbox": sandbox,
                "model": t.spec.model,
            });
            let mut thread = None;
            if let Some(resumed) = self.thread_id.clone() {
                params["threadId"] = json!(resumed);
                let id = self.id();
                let request = json!({"jsonrpc": "2.0", "id": id, "method": "thread/resume", "params": params});
                match self.call(request, id, sink).await {
                    Ok(result) => thread = thread_of(&result),
                    Err(Failed::Error(why)) => {
                        let message = format!(
                            "Codex could not resume its earlier thread ({why}); this turn starts a new one"
                        );
                        if let Err(e) = sink.emit(AppEvent::Notice { message }).await {
                            return Outcome::failed(e.to_string());
                        }
                    }
                    Err(failed) => return self.start_failed(failed).await,
                }
                if let Some(obj) = params.as_object_mut() {
                    obj.remove("threadId");
                }
            }
            if thread.is_none() {
                let id = self.id();
                let request =
                    json!({"jsonrpc": "2.0", "id": id, "method": "thread/start", "params": params});
                match self.call(request, id, sink).await {
                    Ok(result) => thread = thread_of(&result),
                    Err(failed) => return self.start_failed(failed).await,
                }
            }
            let Some(thread) = thread else {
                self.shut().await;
                return Outcome::failed("Codex started no thread (its answer had no thread id)");
            };
            self.thread_id = Some(thread.clone());
            self.total = None;
            if let Some(live) = &mut self.live {
                live.thread = Some(thread);
            }
        }
        let Some(thread) = self.thread_id.clone() else {
            return Outcome::failed("Codex has no thread");
        };
        let id = self.id();
        let start = json!({"jsonrpc": "2.0", "id": id, "method": "turn/start", "params": {
            "threadId": thread,
            "input": user_input(&t),
            "model": t.spec.model,
        }});
        self.send(start);
        let mut run = Run {
            t: &t,
            next_id: &mut self.next_id,
            turn_start: id,
            turn_id: None,
            thread,
            text: String::new(),
            messages: HashMap::new(),
            calls: HashMap::new(),
            changes: HashMap::new(),
            usage: None,
            error: None,
        };
        let Some(live) = self.live.as_mut() else {
            return Outcome::failed("Codex is not running");
        };
        let ended = turn_loop::run(&mut run, &mut live.host, &t, sink).await;
        match ended {
            Ended::Done(mut outcome) => {
                if let Some(total) = run.usage {
                    let mut turn = total;
                    if let Some(before) = self.total {
                        turn.input_tokens = turn.input_tokens.saturating_sub(before.input_tokens);
                        turn.output_tokens =
                            turn.output_tokens.saturating_sub(before.output_tokens);
                        turn.cache_read_tokens = turn
                            .cache_read_tokens
                            .saturating_sub(before.cache_read_tokens);
                        turn.cache_write_tokens = turn
                            .cache_write_tokens
                            .saturating_sub(before.cache_write_tokens);
                    }
                    self.total = Some(total);
                    if let Err(e) = sink
                        .emit(AppEvent::UsageUpdated {
                            usage: turn,
                            cost_usd: None,
                        })
                        .await
                    {
                        outcome = Outcome::failed(e.to_string());
                    }
                }
                outcome
            }
            Ended::Sink(e) => {
                self.shut().await;
                Outcome::failed(e)
            }
            Ended::Killed => {
                self.live = None;
                Outcome::interrupted(run.text)
            }
            Ended::Died(exit) => {
                let tail = live.host.stderr_tail().await;
                self.live = None;
                Outcome::lost(cli, exit, &tail, &t, run.text)
            }
        }
    }

    fn send(&self, value: Value) {
        if let Some(live) = &self.live {
            live.host.send(&value);
        }
    }

    /// The start went wrong: the process goes, and the turn says why.
    async fn start_failed(&mut self, failed: Failed) -> Outcome {
        let tail = match self.live.as_ref() {
            Some(live) => live.host.stderr_tail().await,
            None => Vec::new(),
        };
        self.shut().await;
        match failed {
            Failed::Died => Outcome::failed(died(Cli::CodexCli, None, &tail)),
            Failed::Error(why) => {
                Outcome::failed(format!("Codex refused to start a thread: {why}"))
            }
            Failed::Sink(e) => Outcome::failed(e),
        }
    }

    /// Send a request and wait for its answer (what comes meanwhile: warnings as notices;
    /// nothing else is expected before a thread runs).
    async fn call<S: EventSink>(
        &mut self,
        request: Value,
        id: u64,
        sink: &S,
    ) -> Result<Value, Failed> {
        let Some(live) = self.live.as_mut() else {
            return Err(Failed::Died);
        };
        live.host.send(&request);
        let deadline = tokio::time::Instant::now() + START_TIMEOUT;
        loop {
            let line = match tokio::time::timeout_at(deadline, live.host.next_line()).await {
                Ok(Some(line)) => line,
                Ok(None) => return Err(Failed::Died),
                Err(_) => {
                    return Err(Failed::Error(format!(
                        "no answer to {} in {}s",
                        str_of(&request, "method"),
                        START_TIMEOUT.as_secs()
                    )));
                }
            };
            let value = match line {
                Line::Json(v) => v,
                Line::Other(text) => {
                    notice(sink, format!("Codex: {text}"))
                        .await
                        .map_err(Failed::Sink)?;
                    continue;
                }
            };
            if value.get("id").and_then(Value::as_u64) == Some(id) && value.get("method").is_none()
            {
                return match value.get("error") {
                    Some(error) => Err(Failed::Error(
                        error
                            .get("message")
                            .and_then(Value::as_str)
                            .unwrap_or("an error")
                            .to_string(),
                    )),
                    None => Ok(value.get("result").cloned().unwrap_or(Value::Null)),
                };
            }
            if let Some(message) = warning(&value) {
                notice(sink, message).await.map_err(Failed::Sink)?;
            }
        }
    }
}

/// `turn/start`'s input: the attached images as data URLs (its `image` input, which the
/// app-server passes to the model as it is: no file to write), then the prompt's text.
fn user_input(t: &TurnSpec<'_>) -> Value {
    let mut input: Vec<Value> = t
        .attachments
        .iter()
        .map(|m| {
            json!({"type": "image", "url": format!("data:{};base64,{}", m.about.media_type, m.base64())})
        })
        .collect();
    input.push(json!({"type": "text", "text": t.prompt, "text_elements": []}));
    json!(input)
}

/// The thread's id in `thread/start`'s or `thread/resume`'s answer.
fn thread_of(result: &Value) -> Option<String> {
    result
        .pointer("/thread/id")
        .and_then(Value::as_str)
        .map(str::to_string)
}

async fn notice<S: EventSink>(sink: &S, message: String) -> Result<(), String> {
    sink.emit(AppEvent::Notice { message })
        .await
        .map_err(|e| e.to_string())
}

/// A warning notification, as a notice.
fn warning(value: &Value) -> Option<String> {
    let method = value.get("method")?.as_str()?;
    let params = value.get("params")?;
    match method {
        "warning" | "deprecationNotice" => Some(format!("Codex: {}", str_of(params, "message"))),
        "configWarning" => Some(format!("Codex: {}", str_of(params, "summary"))),
        _ => None,
    }
}

/// One turn's reading of the app-server's messages.
struct Run<'t, 'a> {
    t: &'t TurnSpec<'a>,
    /// The session's count of requests, for the interrupt's id.
    next_id: &'t mut u64,
    /// The id of this turn's `turn/start`.
    turn_start: u64,
    turn_id: Option<String>,
    thread: String,
    text: String,
    /// Agent messages streaming, by item.
    messages: HashMap<String, String>,
    calls: HashMap<String, Instant>,
    /// A file change's edits, by item, for its approval.
    changes: HashMap<String, Vec<(String, String)>>,
    /// The thread's total token count, as last told.
    usage: Option<Usage>,
    /// The turn's error, as the CLI told it.
    error: Option<String>,
}

impl Wire for Run<'_, '_> {
    const NAME: &'static str = "Codex";
    /// A server request's id.
    type Asked = Value;

    fn interrupt(&mut self) -> Option<Value> {
        // An interrupt needs the turn's id: it goes once that is known.
        let turn = self.turn_id.as_ref()?;
        *self.next_id += 1;
        Some(
            json!({"jsonrpc": "2.0", "id": *self.next_id, "method": "turn/interrupt",
            "params": {"threadId": self.thread, "turnId": turn}}),
        )
    }

    fn answer(&mut self, id: Value, decision: &Decision) -> Value {
        let answer = match decision {
            Decision::Allow => "accept",
            // Codex cannot run a changed command: what was allowed is not what it would run.
            Decision::Deny(_) | Decision::AllowChanged(_) => "decline",
            Decision::DenyAndStop(_) => "cancel",
        };
        json!({"jsonrpc": "2.0", "id": id, "result": {"decision": answer}})
    }

    async fn line<S: EventSink>(
        &mut self,
        value: Value,
        interrupted: bool,
        sink: &S,
    ) -> Result<Step<Value>, String> {
        let method = value.get("method").and_then(Value::as_str);
        let params = value.get("params").unwrap_or(&Value::Null);
        match (method, value.get("id")) {
            // A request of the server's: an approval, or something refused.
            (Some(method), Some(id)) => Ok(match self.approval(method, params) {
                Some(requests) => Step::Ask(id.clone(), requests),
                None => Step::Send(json!({"jsonrpc": "2.0", "id": id, "error": {
                    "code": -32601, "message": format!("stepper does not serve {method}")}})),
            }),
            (Some(method), None) => Ok(match self.notification(method, params, sink).await? {
                Some(mut outcome) => {
                    if interrupted && outcome.status != TurnStatus::Completed {
                        outcome.status = TurnStatus::Interrupted;
                        outcome.error = None;
                    }
                    Step::End(outcome)
                }
                None => Step::Read,
            }),
            // An answer: `turn/start`'s carries the turn's id.
            (None, Some(id)) => {
                if id.as_u64() == Some(self.turn_start) {
                    if let Some(error) = value.get("error") {
                        let why = str_of(error, "message");
                        return Ok(Step::End(Outcome::failed(format!(
                            "Codex refused the turn: {why}"
                        ))));
                    }
                    self.turn_id = value
                        .pointer("/result/turn/id")
                        .and_then(Value::as_str)
                        .map(str::to_string);
                }
                Ok(Step::Read)
            }
            (None, None) => Ok(Step::Read),
        }
    }
}

impl Run<'_, '_> {
    /// What the gate is asked for an approval request, or `None` for a request stepper
    /// does not serve.
    fn approval(&self, method: &str, params: &Value) -> Option<Vec<GateRequest>> {
        let cwd = params
            .get("cwd")
            .and_then(Value::as_str)
            .map_or_else(|| self.t.cwd.to_path_buf(), |c| self.t.cwd.join(c));
        match method {
            "item/commandExecution/requestApproval" => {
                let command = params.get("command").and_then(Value::as_str)?;
                Some(vec![GateRequest::Bash {
                    command: command.to_string(),
                    cwd,
                    env: self.t.command_env.clone(),
                }])
            }
            "item/fileChange/requestApproval" => {
                let item = str_of(params, "itemId");
                let changes = self.changes.get(item).cloned().unwrap_or_default();
                if changes.is_empty() {
                    return Some(vec![GateRequest::Tool {
                        name: "apply_patch".into(),
                        input: params.to_string(),
                    }]);
                }
                Some(
                    changes
                        .into_iter()
                        .map(|(path, diff)| GateRequest::Edit {
                            path: self.t.cwd.join(path),
                            diff,
                        })
                        .collect(),
                )
            }
            _ => None,
        }
    }

    async fn notification<S: EventSink>(
        &mut self,
        method: &str,
        params: &Value,
        sink: &S,
    ) -> Result<Option<Outcome>, String> {
        let emit = |e: AppEvent| async { sink.emit(e).await.map_err(|e| e.to_string()) };
        // Another thread's (a subagent's) notifications are the CLI's business.
        if let Some(thread) = params.get("threadId").and_then(Value::as_str)
            && thread != self.thread
        {
            return Ok(None);
        }
        match method {
            "item/agentMessage/delta" => {
                let delta = str_of(params, "delta");
                if !delta.is_empty() {
                    self.messages
                        .entry(str_of(params, "itemId").to_string())
                        .or_default()
                        .push_str(delta);
                    self.text.push_str(delta);
                    emit(AppEvent::TextDelta { text: delta.into() }).await?;
                }
            }
            "item/reasoning/textDelta" | "item/reasoning/summaryTextDelta" => {
                let delta = str_of(params, "delta");
                if !delta.is_empty() {
                    emit(AppEvent::ReasoningDelta { text: delta.into() }).await?;
                }
            }
            "item/started" => {
                let item = params.get("item").unwrap_or(&Value::Null);
                let id = str_of(item, "id").to_string();
                let started = match str_of(item, "type") {
                    "commandExecution" => Some((
                        "exec_command".to_string(),
                        json!({"cmd": item.get("command")}),
                    )),
                    "fileChange" => {
                        let changes: Vec<(String, String)> = item
                            .get("changes")
                            .and_then(Value::as_array)
                            .into_iter()
                            .flatten()
                            .map(|c| (str_of(c, "path").to_string(), str_of(c, "diff").to_string()))
                            .collect();
                        let input = json!({"changes": item.get("changes")});
                        self.changes.insert(id.clone(), changes);
                        Some(("apply_patch".to_string(), input))
                    }
                    "mcpToolCall" => Some((
                        format!("mcp__{}__{}", str_of(item, "server"), str_of(item, "tool")),
                        item.get("arguments").cloned().unwrap_or(Value::Null),
                    )),
                    "webSearch" => Some((
                        "web_search".to_string(),
                        json!({"query": item.get("query")}),
                    )),
                    _ => None,
                };
                if let Some((tool, input)) = started {
                    self.calls.insert(id.clone(), Instant::now());
                    emit(AppEvent::ToolCallStarted {
                        call_id: id,
                        tool,
                        input,
                    })
                    .await?;
                }
            }
            "item/completed" => {
                let item = params.get("item").unwrap_or(&Value::Null);
                let id = str_of(item, "id").to_string();
                match str_of(item, "type") {
                    "agentMessage" => {
                        let streamed = self.messages.remove(&id);
                        let text = str_of(item, "text").to_string();
                        if streamed.is_none() && !text.is_empty() {
                            self.text.push_str(&text);
                            emit(AppEvent::TextDelta { text: text.clone() }).await?;
                        }
                        emit(AppEvent::MessageCompleted {
                            text,
                            stop_reason: None,
                        })
                        .await?;
                    }
                    "commandExecution" | "fileChange" | "mcpToolCall" | "webSearch" => {
                        let Some(started) = self.calls.remove(&id) else {
                            return Ok(None);
                        };
                        let status = match str_of(item, "status") {
                            "completed" => ToolCallStatus::Ok,
                            "declined" => ToolCallStatus::Denied,
                            _ => ToolCallStatus::Error,
                        };
                        let output = match str_of(item, "type") {
                            "commandExecution" => str_of(item, "aggregatedOutput").to_string(),
                            "mcpToolCall" => {
                                item.get("result").map(Value::to_string).unwrap_or_default()
                            }
                            _ => String::new(),
                        };
                        let diff = (str_of(item, "type") == "fileChange")
                            .then(|| {
                                item.get("changes")
                                    .and_then(Value::as_array)
                                    .into_iter()
                                    .flatten()
                                    .map(|c| str_of(c, "diff"))
                                    .collect::<Vec<_>>()
                                    .join("\n")
                            })
                            .filter(|d| !d.is_empty());
                        emit(AppEvent::ToolCallFinished {
                            call_id: id,
                            status,
                            output: cap(output),
                            exit_code: item
                                .get("exitCode")
                                .and_then(Value::as_i64)
                                .and_then(|c| i32::try_from(c).ok()),
                            duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(0),
                            diff,
                        })
                        .await?;
                    }
                    _ => {}
                }
            }
            "thread/tokenUsage/updated" => {
                let total = params.pointer("/tokenUsage/total").unwrap_or(&Value::Null);
                let n = |k: &str| total.get(k).and_then(Value::as_u64).unwrap_or(0);
                let cached = n("cachedInputTokens");
                self.usage = Some(Usage {
                    input_tokens: n("inputTokens").saturating_sub(cached),
                    output_tokens: n("outputTokens"),
                    cache_read_tokens: cached,
                    cache_write_tokens: n("cacheWriteInputTokens"),
                });
            }
            "error" => {
                if params.get("willRetry").and_then(Value::as_bool) != Some(true) {
                    self.error = params
                        .pointer("/error/message")
                        .and_then(Value::as_str)
                        .map(str::to_string);
                }
            }
            "turn/completed" => {
                for call_id in std::mem::take(&mut self.calls).into_keys() {
                    emit(AppEvent::ToolCallFinished {
                        call_id,
                        status: ToolCallStatus::Cancelled,
                        output: String::new(),
                        exit_code: None,
                        duration_ms: 0,
                        diff: None,
                    })
                    .await?;
                }
                let turn = params.get("turn").unwrap_or(&Value::Null);
                let text = std::mem::take(&mut self.text);
                let status = match str_of(turn, "status") {
                    "completed" => TurnStatus::Completed,
                    "interrupted" => TurnStatus::Interrupted,
                    _ => TurnStatus::Failed,
                };
                let error = (status == TurnStatus::Failed).then(|| {
                    let why = turn
                        .pointer("/error/message")
                        .and_then(Value::as_str)
                        .map(str::to_string)
                        .or_else(|| self.error.take())
                        .unwrap_or_else(|| "the turn failed without saying why".into());
                    format!("Codex: {why}")
                });
                return Ok(Some(Outcome {
                    status,
                    error,
                    text,
                }));
            }
            _ => {
                if let Some(message) = warning(&json!({"method": method, "params": params})) {
                    emit(AppEvent::Notice { message }).await?;
                }
            }
        }
        Ok(None)
    }
}
