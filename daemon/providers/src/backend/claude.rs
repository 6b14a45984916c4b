//! Claude Code as a back-end: one long-lived
//! `claude -p --input-format stream-json --output-format stream-json --verbose
//! --include-partial-messages --permission-prompt-tool stdio` per session, reused from turn
//! to turn, started again (with `--resume` and its conversation's id) only when the mode
//! class, the executable, the folder or the environment changed, or it died.
//!
//! Its output becomes the session's events: text and thinking deltas, the message at each
//! model call's end, its tool calls and results under its own tool names, usage and cost
//! from `result`. Each `can_use_tool` control request goes through the session's gate (so
//! deny rules and the shell gate hold, and what the gate cannot decide is asked of every
//! client); the answer is queued as a `control_response` the moment the gate decides. An
//! interrupt sends the `interrupt` control request, and stops the process group when the CLI
//! has not ended the turn within the grace period.

use std::collections::{HashMap, HashSet};
use std::ffi::OsString;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use stepper_engine::EventSink;
use stepper_engine::tool::{CommandEnv, Decision, GateRequest};
use stepper_protocol::session::Env;
use stepper_protocol::{AppEvent, ToolCallStatus, TurnStatus, Usage};

use super::host::{Host, HostSpec};
use super::turn_loop::{self, Ended, Step, Wire};
pub use super::turn_loop::{Outcome, TurnSpec};
use super::{BackendSpec, Cli, locate, version};

/// How much of a tool's result an event carries.
const OUTPUT_CAP: usize = 32 * 1024;

/// One session's Claude Code.
#[derive(Default)]
pub struct ClaudeCode {
    live: Option<Live>,
    /// The CLI's conversation, resumed by the next process.
    session_id: Option<String>,
    requests: u64,
}

struct Live {
    host: Host,
    key: SpawnKey,
    /// The model the process runs now (`None`: the CLI's default).
    model: Option<String>,
}

impl Running for Live {
    fn process(&mut self) -> (&mut Host, &SpawnKey) {
        (&mut self.host, &self.key)
    }
}

/// What a process was started with that a later turn cannot change on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct SpawnKey {
    pub(super) program: PathBuf,
    pub(super) plan: bool,
    pub(super) cwd: PathBuf,
    /// A digest of the environment it got.
    pub(super) env: u64,
    /// Whether it loads the project's settings (the folder is trusted).
    pub(super) trusted: bool,
}

impl ClaudeCode {
    /// A back-end that resumes the CLI's conversation `session_id`, if any.
    pub fn new(session_id: Option<String>) -> ClaudeCode {
        ClaudeCode {
            session_id,
            ..ClaudeCode::default()
        }
    }

    /// The CLI's conversation, once it said it.
    pub fn session_id(&self) -> Option<&str> {
        self.session_id.as_deref()
    }

    /// The running process's pid.
    pub fn pid(&self) -> Option<u32> {
        self.live.as_ref().and_then(|l| l.host.pid())
    }

    /// Stop the process (the session is let go, or the daemon stops).
    pub async fn shut(&mut self) {
        if let Some(mut live) = self.live.take() {
            live.host.stop(Duration::from_secs(2)).await;
        }
    }

    fn request_id(&mut self) -> String {
        self.requests += 1;
        format!("stepper_{}", self.requests)
    }

    /// Run one turn; its events go to `sink`.
    pub async fn turn<S: EventSink>(&mut self, t: TurnSpec<'_>, sink: &S) -> Outcome {
        let cli = Cli::ClaudeCode;
        if let Some(refused) = turn_loop::unloaded(&t) {
            return refused;
        }
        let (program, env, key) = match prepare(cli, &t, &mut self.live).await {
            Ok(ready) => ready,
            Err(failed) => return failed,
        };
        let mut retried = false;
        loop {
            let fresh = self.live.is_none();
            let resumed = fresh && self.session_id.is_some();
            if fresh {
                let args = self.args(t.spec, t.plan);
                let spawned = Host::spawn(HostSpec {
                    name: cli.provider(),
                    program: program.clone(),
                    args,
                    env: env.clone(),
                    cwd: t.cwd.to_path_buf(),
                    guard: t.guard.map(Path::to_path_buf),
                    secrets: t.secrets.to_vec(),
                })
                .await;
                match spawned {
                    Ok(host) => {
                        self.live = Some(Live {
                            host,
                            key: key.clone(),
                            model: t.spec.model.clone(),
                        });
                    }
                    Err(e) => {
                        return Outcome::failed(format!(
                            "cannot start Claude Code ({}): {e}",
                            program.display()
                        ));
                    }
                }
            } else if self.live.as_ref().is_some_and(|l| l.model != t.spec.model) {
                // `/model` while the process runs: its control channel, before the prompt.
                let id = self.request_id();
                let model = t.spec.model.clone();
                if let Some(live) = &mut self.live {
                    live.host.send(&json!({
                        "type": "control_request",
                        "request_id": id,
                        "request": {"subtype": "set_model", "model": model},
                    }));
                    live.model = model;
                }
            }
            let Some(live) = self.live.as_mut() else {
                return Outcome::failed("Claude Code is not running");
            };
            let message = json!({
                "type": "user",
                "message": {"role": "user", "content": user_content(&t)},
                "parent_tool_use_id": null,
                "session_id": self.session_id.as_deref().unwrap_or("default"),
            });
            live.host.send(&message);
            let mut run = Run::new(&t, &mut self.requests);
            let ended = turn_loop::run(&mut run, &mut live.host, &t, sink).await;
            if let Some(id) = run.session_id.take() {
                self.session_id = Some(id);
            }
            match ended {
                Ended::Done(outcome) => return outcome,
                Ended::Sink(e) => {
                    self.shut().await;
                    return Outcome::failed(e);
                }
                Ended::Killed => {
                    self.live = None;
                    return Outcome::interrupted(run.text);
                }
                Ended::Died(exit) => {
                    let tail = live.host.stderr_tail().await;
                    self.live = None;
                    // A conversation the CLI cannot resume (its files are gone): once, a new
                    // one, said in a notice.
                    if resumed && !run.started && !retried && !t.cancel.is_cancelled() {
                        retried = true;
                        self.session_id = None;
                        let message = format!(
                            "Claude Code could not resume its earlier conversation ({}); \
                             this turn starts a new one",
                            tail.last().map_or("no reason given", String::as_str)
                        );
                        if let Err(e) = sink.emit(AppEvent::Notice { message }).await {
                            return Outcome::failed(e.to_string());
                        }
                        continue;
                    }
                    return Outcome::lost(cli, exit, &tail, &t, run.text);
                }
            }
        }
    }

    fn args(&self, spec: &BackendSpec, plan: bool) -> Vec<OsString> {
        let mut args: Vec<OsString> = [
            "-p",
            "--input-format",
            "stream-json",
            "--output-format",
            "stream-json",
            "--verbose",
            "--include-partial-messages",
            "--permission-prompt-tool",
            "stdio",
            "--permission-mode",
            if plan { "plan" } else { "default" },
        ]
        .iter()
        .map(OsString::from)
        .collect();
        if let Some(model) = &spec.model {
            args.push("--model".into());
            args.push(model.into());
        }
        // An untrusted folder's settings (hooks, allow rules, MCP servers) stay out of the
        // CLI too: `-p` skips Claude Code's own trust question.
        if !spec.project_trusted {
            args.extend(["--setting-sources", "user", "--strict-mcp-config"].map(OsString::from));
        }
        if let Some(id) = &self.session_id {
            args.push("--resume".into());
            args.push(id.into());
        }
        args
    }
}

/// A user message's content as the CLI passes it to the Messages API: the prompt's text
/// alone, or its attachments (image and document blocks, base64) before it.
fn user_content(t: &TurnSpec<'_>) -> Value {
    if t.attachments.is_empty() {
        return json!(t.prompt);
    }
    let mut blocks: Vec<Value> = t
        .attachments
        .iter()
        .map(crate::anthropic::media_block)
        .collect();
    if !t.prompt.is_empty() {
        blocks.push(json!({"type": "text", "text": t.prompt}));
    }
    json!(blocks)
}

/// A back-end's running process, as [`prepare`] checks it.
pub(super) trait Running {
    fn process(&mut self) -> (&mut Host, &SpawnKey);
}

/// What a turn's process starts with: the executable (found, and recent enough), its
/// environment, and the key a running process must match to be reused. A running process
/// started with another key, or dead, is stopped and let go.
pub(super) async fn prepare<L: Running>(
    cli: Cli,
    t: &TurnSpec<'_>,
    running: &mut Option<L>,
) -> Result<(PathBuf, Env, SpawnKey), Outcome> {
    let program = locate(cli, t.spec.command.as_deref(), t.env)
        .map_err(|e| Outcome::failed(e.to_string()))?;
    version(cli, &program, t.env)
        .await
        .map_err(|e| Outcome::failed(e.to_string()))?;
    let env = t.spec.environment(t.env);
    let key = SpawnKey {
        program: program.clone(),
        plan: t.plan,
        cwd: t.cwd.to_path_buf(),
        env: digest(&env),
        trusted: t.spec.project_trusted,
    };
    if let Some(live) = running {
        let (host, started) = live.process();
        if *started != key || host.has_exited() {
            host.stop(Duration::from_millis(500)).await;
            *running = None;
        }
    }
    Ok((program, env, key))
}

fn digest(env: &Env) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    env.hash(&mut h);
    h.finish()
}

/// One turn's reading of the stream.
struct Run<'t, 'a> {
    t: &'t TurnSpec<'a>,
    /// The session's count of control requests, for the interrupt's id.
    requests: &'t mut u64,
    /// The CLI said it started (its `system/init`).
    started: bool,
    session_id: Option<String>,
    /// Every top-level text, for the context.
    text: String,
    /// The message streaming now: its text, its stop reason, whether it streamed.
    message: String,
    stop_reason: Option<String>,
    /// Messages whose text came as deltas (so the whole message is not sent again).
    streamed: HashSet<String>,
    calls: HashMap<String, Instant>,
    denied: HashSet<String>,
}

impl<'t, 'a> Run<'t, 'a> {
    fn new(t: &'t TurnSpec<'a>, requests: &'t mut u64) -> Self {
        Run {
            t,
            requests,
            started: false,
            session_id: None,
            text: String::new(),
            message: String::new(),
            stop_reason: None,
            streamed: HashSet::new(),
            calls: HashMap::new(),
            denied: HashSet::new(),
        }
    }
}

/// A `can_use_tool` request: its id, and the call's id and input.
type Asked = (String, Option<String>, Value);

impl Wire for Run<'_, '_> {
    const NAME: &'static str = "Claude Code";
    type Asked = Asked;

    fn interrupt(&mut self) -> Option<Value> {
        *self.requests += 1;
        Some(json!({
            "type": "control_request",
            "request_id": format!("stepper_{}", self.requests),
            "request": {"subtype": "interrupt"},
        }))
    }

    fn answer(&mut self, (request_id, call_id, input): Asked, decision: &Decision) -> Value {
        if let (Decision::Deny(_), Some(id)) = (decision, &call_id) {
            self.denied.insert(id.clone());
        }
        permission_answer(&request_id, input, decision)
    }

    async fn line<S: EventSink>(
        &mut self,
        value: Value,
        interrupted: bool,
        sink: &S,
    ) -> Result<Step<Asked>, String> {
        if value.get("type").and_then(Value::as_str) == Some("control_request") {
            if let Some((asked, request)) = self.permission(&value) {
                return Ok(Step::Ask(asked, vec![request]));
            }
            if let Some(id) = value.get("request_id").and_then(Value::as_str) {
                // What stepper does not serve is refused, so the CLI never waits.
                return Ok(Step::Send(json!({
                    "type": "control_response",
                    "response": {"subtype": "error", "request_id": id,
                        "error": "stepper does not serve this request"},
                })));
            }
            return Ok(Step::Read);
        }
        Ok(match self.event(&value, sink).await? {
            Some(mut outcome) => {
                if interrupted {
                    outcome.status = TurnStatus::Interrupted;
                    outcome.error = None;
                }
                Step::End(outcome)
            }
            None => Step::Read,
        })
    }
}

impl Run<'_, '_> {
    /// A `can_use_tool` request, and what the gate is asked.
    fn permission(&self, value: &Value) -> Option<(Asked, GateRequest)> {
        let request_id = value.get("request_id")?.as_str()?.to_string();
        let request = value.get("request")?;
        if request.get("subtype")?.as_str()? != "can_use_tool" {
            return None;
        }
        let tool = request
            .get("tool_name")
            .and_then(Value::as_str)
            .unwrap_or("");
        let input = request.get("input").cloned().unwrap_or_else(|| json!({}));
        let call_id = request
            .get("tool_use_id")
            .and_then(Value::as_str)
            .map(str::to_string);
        let asked = gate_request(tool, &input, self.t.cwd, &self.t.command_env);
        Some(((request_id, call_id, input), asked))
    }

    /// One line of output that is not a control request; the turn's outcome at its
    /// `result`.
    async fn event<S: EventSink>(
        &mut self,
        value: &Value,
        sink: &S,
    ) -> Result<Option<Outcome>, String> {
        let emit = |e: AppEvent| async { sink.emit(e).await.map_err(|e| e.to_string()) };
        if let Some(id) = value.get("session_id").and_then(Value::as_str)
            && id != "default"
        {
            self.session_id = Some(id.to_string());
        }
        // A subagent's (Task's) stream is the CLI's business; its call shows as one tool.
        let nested = value
            .get("parent_tool_use_id")
            .is_some_and(|p| !p.is_null());
        match value.get("type").and_then(Value::as_str).unwrap_or("") {
            "system" if value.get("subtype").and_then(Value::as_str) == Some("init") => {
                self.started = true;
            }
            "stream_event" if !nested => {
                let event = value.get("event").unwrap_or(&Value::Null);
                let id = value.get("api_message_id").and_then(Value::as_str);
                match event.get("type").and_then(Value::as_str).unwrap_or("") {
                    "message_start" => {
                        self.message.clear();
                        self.stop_reason = None;
                    }
                    "content_block_delta" => {
                        let delta = event.get("delta").unwrap_or(&Value::Null);
                        match delta.get("type").and_then(Value::as_str) {
                            Some("text_delta") => {
                                let text = str_of(delta, "text");
                                if !text.is_empty() {
                                    if let Some(id) = id {
                                        self.streamed.insert(id.to_string());
                                    }
                                    self.message.push_str(text);
                                    self.text.push_str(text);
                                    emit(AppEvent::TextDelta { text: text.into() }).await?;
                                }
                            }
                            Some("thinking_delta") => {
                                let text = str_of(delta, "thinking");
                                if !text.is_empty() {
                                    emit(AppEvent::ReasoningDelta { text: text.into() }).await?;
                                }
                            }
                            _ => {}
                        }
                    }
                    "message_delta" => {
                        self.stop_reason = event
                            .pointer("/delta/stop_reason")
                            .and_then(Value::as_str)
                            .map(str::to_string);
                    }
                    "message_stop" => {
                        let text = std::mem::take(&mut self.message);
                        emit(AppEvent::MessageCompleted {
                            text,
                            stop_reason: self.stop_reason.take(),
                        })
                        .await?;
                    }
                    _ => {}
                }
            }
            "assistant" if !nested => {
                let message = value.get("message").unwrap_or(&Value::Null);
                let id = message.get("id").and_then(Value::as_str).unwrap_or("");
                let blocks = message
                    .get("content")
                    .and_then(Value::as_array)
                    .map_or(&[][..], Vec::as_slice);
                for block in blocks {
                    match block.get("type").and_then(Value::as_str) {
                        Some("text") if !self.streamed.contains(id) => {
                            // A CLI that did not stream this message: its text whole.
                            let text = str_of(block, "text");
                            if !text.is_empty() {
                                self.text.push_str(text);
                                emit(AppEvent::TextDelta { text: text.into() }).await?;
                                emit(AppEvent::MessageCompleted {
                                    text: text.into(),
                                    stop_reason: None,
                                })
                                .await?;
                            }
                        }
                        Some("tool_use") => {
                            let call_id = str_of(block, "id").to_string();
                            self.calls.insert(call_id.clone(), Instant::now());
                            emit(AppEvent::ToolCallStarted {
                                call_id,
                                tool: str_of(block, "name").into(),
                                input: block.get("input").cloned().unwrap_or_else(|| json!({})),
                            })
                            .await?;
                        }
                        _ => {}
                    }
                }
            }
            "user" if !nested => {
                let blocks = value
                    .pointer("/message/content")
                    .and_then(Value::as_array)
                    .map_or(&[][..], Vec::as_slice);
                for block in blocks {
                    if block.get("type").and_then(Value::as_str) != Some("tool_result") {
                        continue;
                    }
                    let call_id = str_of(block, "tool_use_id").to_string();
                    let started = self.calls.remove(&call_id);
                    let is_error = block
                        .get("is_error")
                        .and_then(Value::as_bool)
                        .unwrap_or(false);
                    let status = if self.denied.contains(&call_id) {
                        ToolCallStatus::Denied
                    } else if is_error {
                        ToolCallStatus::Error
                    } else {
                        ToolCallStatus::Ok
                    };
                    let output = cap(result_text(block.get("content")));
                    emit(AppEvent::ToolCallFinished {
                        call_id,
                        status,
                        output,
                        exit_code: None,
                        duration_ms: started
                            .map_or(0, |s| u64::try_from(s.elapsed().as_millis()).unwrap_or(0)),
                        diff: None,
                    })
                    .await?;
                }
            }
            "result" => return self.result(value, sink).await.map(Some),
            _ => {}
        }
        Ok(None)
    }

    async fn result<S: EventSink>(&mut self, value: &Value, sink: &S) -> Result<Outcome, String> {
        let count = |name: &str| {
            value
                .pointer(&format!("/usage/{name}"))
                .and_then(Value::as_u64)
        };
        let usage = Usage {
            input_tokens: count("input_tokens").unwrap_or(0),
            output_tokens: count("output_tokens").unwrap_or(0),
            cache_read_tokens: count("cache_read_input_tokens").unwrap_or(0),
            cache_write_tokens: count("cache_creation_input_tokens").unwrap_or(0),
        };
        let cost_usd = value.get("total_cost_usd").and_then(Value::as_f64);
        sink.emit(AppEvent::UsageUpdated { usage, cost_usd })
            .await
            .map_err(|e| e.to_string())?;
        // Calls the CLI never finished (an interrupt) end with the turn.
        for call_id in std::mem::take(&mut self.calls).into_keys() {
            sink.emit(AppEvent::ToolCallFinished {
                call_id,
                status: ToolCallStatus::Cancelled,
                output: String::new(),
                exit_code: None,
                duration_ms: 0,
                diff: None,
            })
            .await
            .map_err(|e| e.to_string())?;
        }
        let subtype = str_of(value, "subtype");
        let is_error = value
            .get("is_error")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        if self.text.is_empty() {
            self.text = str_of(value, "result").to_string();
        }
        let text = std::mem::take(&mut self.text);
        if subtype == "success" && !is_error {
            return Ok(Outcome {
                status: TurnStatus::Completed,
                error: None,
                text,
            });
        }
        let errors: Vec<&str> = value
            .get("errors")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let why = if !errors.is_empty() {
            errors.join("; ")
        } else if is_error && !str_of(value, "result").is_empty() {
            str_of(value, "result").to_string()
        } else {
            subtype.replace('_', " ")
        };
        Ok(Outcome {
            status: TurnStatus::Failed,
            error: Some(format!("Claude Code: {why}")),
            text,
        })
    }
}

pub(super) fn str_of<'v>(value: &'v Value, key: &str) -> &'v str {
    value.get(key).and_then(Value::as_str).unwrap_or("")
}

/// A tool's output as an event carries it: cut at [`OUTPUT_CAP`].
pub(super) fn cap(mut output: String) -> String {
    if output.len() > OUTPUT_CAP {
        let mut cut = OUTPUT_CAP;
        while !output.is_char_boundary(cut) {
            cut -= 1;
        }
        output.truncate(cut);
        output.push_str("\n[cut]");
    }
    output
}

/// A tool result's content as text: a string, or the text of its blocks.
fn result_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        Some(other) if !other.is_null() => other.to_string(),
        _ => String::new(),
    }
}

/// The gate's question for Claude Code's tool `tool` with `input`: its shell commands,
/// reads, edits and fetches as stepper's own tools ask, so the same rules and the shell
/// gate judge them; anything else by its name.
pub fn gate_request(tool: &str, input: &Value, cwd: &Path, env: &CommandEnv) -> GateRequest {
    let path = |key: &str| {
        input
            .get(key)
            .and_then(Value::as_str)
            .filter(|p| !p.is_empty())
            .map(|p| cwd.join(p))
    };
    let other = || GateRequest::Tool {
        name: tool.to_string(),
        input: input.to_string(),
    };
    match tool {
        "Bash" => match input.get("command").and_then(Value::as_str) {
            Some(command) => GateRequest::Bash {
                command: command.to_string(),
                cwd: cwd.to_path_buf(),
                env: env.clone(),
            },
            None => other(),
        },
        "Read" => path("file_path").map_or_else(other, |path| GateRequest::Read { path }),
        "Glob" | "Grep" | "LS" => GateRequest::Read {
            path: path("path").unwrap_or_else(|| cwd.to_path_buf()),
        },
        "Write" | "Edit" | "MultiEdit" => match path("file_path") {
            Some(path) => GateRequest::Edit {
                diff: edit_diff(tool, input),
                path,
            },
            None => other(),
        },
        "NotebookEdit" => match path("notebook_path") {
            Some(path) => GateRequest::Edit {
                diff: str_of(input, "new_source")
                    .lines()
                    .map(|l| format!("+{l}\n"))
                    .collect(),
                path,
            },
            None => other(),
        },
        "WebFetch" => match input.get("url").and_then(Value::as_str) {
            Some(url) => GateRequest::WebFetch {
                url: url.to_string(),
            },
            None => other(),
        },
        name if name.starts_with("mcp__") => match name["mcp__".len()..].split_once("__") {
            Some((server, tool)) => GateRequest::Mcp {
                server: server.to_string(),
                tool: tool.to_string(),
                arguments: input.to_string(),
                annotations: None,
            },
            None => other(),
        },
        _ => other(),
    }
}

/// What an edit would change, as the approval shows it.
fn edit_diff(tool: &str, input: &Value) -> String {
    let lines = |text: &str, mark: char| -> String {
        text.lines().map(|l| format!("{mark}{l}\n")).collect()
    };
    match tool {
        "Write" => lines(str_of(input, "content"), '+'),
        "Edit" => format!(
            "{}{}",
            lines(str_of(input, "old_string"), '-'),
            lines(str_of(input, "new_string"), '+')
        ),
        _ => input
            .get("edits")
            .and_then(Value::as_array)
            .map(|edits| {
                edits
                    .iter()
                    .map(|e| {
                        format!(
                            "{}{}",
                            lines(str_of(e, "old_string"), '-'),
                            lines(str_of(e, "new_string"), '+')
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("…\n")
            })
            .unwrap_or_default(),
    }
}

/// The `control_response` to a `can_use_tool` request.
fn permission_answer(request_id: &str, input: Value, decision: &Decision) -> Value {
    let response = match decision {
        Decision::Allow => json!({"behavior": "allow", "updatedInput": input}),
        Decision::AllowChanged(changed) => {
            // A hook's change, in Claude Code's own spelling, over the call's input.
            let mut merged = input;
            if let (Some(into), Some(from)) = (merged.as_object_mut(), changed.as_object()) {
                into.extend(from.clone());
            }
            json!({"behavior": "allow", "updatedInput": merged})
        }
        Decision::Deny(why) => json!({"behavior": "deny", "message": why}),
        Decision::DenyAndStop(why) => {
            json!({"behavior": "deny", "message": why, "interrupt": true})
        }
    };
    json!({
        "type": "control_response",
        "response": {"subtype": "success", "request_id": request_id, "response": response},
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tools_become_the_gates_questions() {
        let cwd = Path::new("/work/p");
        let env = CommandEnv::default();
        match gate_request("Bash", &json!({"command": "ls -la"}), cwd, &env) {
            GateRequest::Bash { command, cwd, .. } => {
                assert_eq!(command, "ls -la");
                assert_eq!(cwd, Path::new("/work/p"));
            }
            other => panic!("{other:?}"),
        }
        match gate_request(
            "Edit",
            &json!({"file_path": "src/a.rs", "old_string": "a", "new_string": "b"}),
            cwd,
            &env,
        ) {
            GateRequest::Edit { path, diff } => {
                assert_eq!(path, Path::new("/work/p/src/a.rs"));
                assert_eq!(diff, "-a\n+b\n");
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            gate_request("Read", &json!({"file_path": "/etc/passwd"}), cwd, &env),
            GateRequest::Read { path } if path == Path::new("/etc/passwd")
        ));
        assert!(matches!(
            gate_request("mcp__fs__write", &json!({}), cwd, &env),
            GateRequest::Mcp { server, tool, .. } if server == "fs" && tool == "write"
        ));
        // Anything unknown, or a known tool without what it needs, is asked by name.
        assert!(matches!(
            gate_request("WebSearch", &json!({"query": "x"}), cwd, &env),
            GateRequest::Tool { name, .. } if name == "WebSearch"
        ));
        assert!(matches!(
            gate_request("Bash", &json!({}), cwd, &env),
            GateRequest::Tool { name, .. } if name == "Bash"
        ));
    }

    #[test]
    fn answers_are_control_responses() {
        let allow = permission_answer("r1", json!({"command": "ls"}), &Decision::Allow);
        assert_eq!(allow["response"]["request_id"], "r1");
        assert_eq!(allow["response"]["response"]["behavior"], "allow");
        assert_eq!(
            allow["response"]["response"]["updatedInput"]["command"],
            "ls"
        );
        let deny = permission_answer("r2", json!({}), &Decision::Deny("no".into()));
        assert_eq!(deny["response"]["response"]["behavior"], "deny");
        assert_eq!(deny["response"]["response"]["message"], "no");
    }
}
