//! The user's hooks, in Claude Code's format and with its semantics, run by the daemon so
//! every client behaves the same:
//!
//! ```json
//! "hooks": {"PreToolUse": [{"matcher": "Bash|Write", "hooks": [
//!     {"type": "command", "command": "./guard.sh", "timeout": 30}]}]}
//! ```
//!
//! A handler gets the event as JSON on stdin (`session_id`, `cwd`, `hook_event_name`,
//! `tool_name`, `tool_input`, …) and answers by its exit code — 0 goes on (stdout may be JSON
//! with `decision`, `hookSpecificOutput`, `continue`, `systemMessage`…), 2 blocks with stderr
//! as the reason, anything else is an error shown to clients that blocks nothing — within
//! its timeout (60 s by default), in a process group of its own. Every run is a `HookRan`
//! event.
//!
//! [`HookSet`] holds a folder's hooks as the engine's one parser of settings' `hooks`
//! (`stepper_engine::hooks::settings`) reads them, and matches them to an event; its
//! problems are said as notices. [`HookRunner`] runs the matching handlers of one event at
//! once, each in its own process group, and reads their answers. [`SessionHooks`] is the
//! engine's `TurnHooks` for one agent: tool names and inputs go out in Claude Code's
//! spelling (`Bash`, `file_path`; see `transcript::claude_name`) and come back in stepper's.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use serde_json::{Value, json};
use stepper_engine::hooks::{
    AfterTool, BeforeTool, GateHint, ToolEnd, TurnHooks, claude_read_response,
};
use stepper_engine::redact::Redactor;
use stepper_engine::tool::Decision;
use stepper_protocol::session::Env;
use stepper_protocol::{AppEvent, PermissionMode};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::EventLog;
use super::transcript::claude_name;

use stepper_engine::hooks::HookEvent;
use stepper_engine::hooks::settings::{HookGroup, HookHandler as Handler, Hooks};

/// What is kept of a hook's stdout and stderr.
const MAX_OUTPUT: usize = 1 << 20;

/// The hooks of a session's settings, parsed (by the parser `config --validate` reports
/// from).
#[derive(Debug, Default)]
pub struct HookSet {
    by_event: HashMap<HookEvent, Vec<HookGroup>>,
    /// What could not be understood (each is said as a notice; the rest still runs).
    pub problems: Vec<String>,
}

impl HookSet {
    /// `hooks` as `setting.json` has it; problems are kept, never fatal.
    pub fn parse(hooks: Option<&Value>) -> HookSet {
        let Hooks { by_event, problems } = Hooks::parse(hooks);
        HookSet {
            by_event,
            problems: problems.iter().filter_map(|p| p.notice()).collect(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.by_event.is_empty()
    }

    pub fn has(&self, event: HookEvent) -> bool {
        self.by_event.contains_key(&event)
    }

    fn matching(&self, event: HookEvent, key: Option<&str>) -> Vec<Handler> {
        self.by_event
            .get(&event)
            .into_iter()
            .flatten()
            .filter(|g| g.matcher.matches(key))
            .flat_map(|g| g.handlers.iter().cloned())
            .collect()
    }
}

/// One handler's run.
#[derive(Debug, Clone, Default)]
pub struct HookResult {
    pub exit: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub timed_out: bool,
    /// stdout, when it is a JSON object.
    pub json: Option<Value>,
}

impl HookResult {
    fn blocks(&self) -> bool {
        self.exit == Some(2)
    }

    fn field(&self, name: &str) -> Option<&Value> {
        self.json.as_ref()?.get(name)
    }

    fn specific(&self, name: &str) -> Option<&Value> {
        self.json.as_ref()?.get("hookSpecificOutput")?.get(name)
    }

    fn text(&self, name: &str) -> Option<String> {
        self.field(name).and_then(Value::as_str).map(str::to_string)
    }

    /// `continue: false`: stop, with `stopReason`.
    fn stops(&self) -> Option<String> {
        (self.field("continue").and_then(Value::as_bool) == Some(false)).then(|| {
            self.text("stopReason")
                .unwrap_or_else(|| "a hook said not to continue".into())
        })
    }

    /// `decision: "block"` with its `reason`.
    fn decision_block(&self) -> Option<String> {
        (self.text("decision").as_deref() == Some("block")).then(|| {
            self.text("reason")
                .unwrap_or_else(|| "a hook blocked it".into())
        })
    }

    fn reason(&self) -> String {
        match self.stderr.trim() {
            "" => "a hook blocked it (exit 2)".into(),
            said => said.to_string(),
        }
    }

    fn context(&self) -> Option<String> {
        self.specific("additionalContext")
            .and_then(Value::as_str)
            .map(str::to_string)
    }
}

/// Hooks of one turn (or one session event): where they run, with what, and where their
/// runs are told.
pub struct HookRunner {
    pub set: Arc<HookSet>,
    pub session_id: String,
    /// The id of the prompt the turn answers (`prompt_id`), in a turn.
    pub prompt_id: Option<String>,
    /// The session's transcript in Claude Code's format (`transcript_path`).
    pub transcript: PathBuf,
    pub cwd: PathBuf,
    pub env: Env,
    pub mode: PermissionMode,
    pub log: EventLog,
    pub turn: Option<u32>,
    pub redactor: Redactor,
    /// The turn's interruption: running hooks are stopped with it.
    pub cancel: tokio_util::sync::CancellationToken,
}

impl HookRunner {
    /// The same hooks, their runs told outside the turn: for a hook that may still run when
    /// the turn has ended (`Notification`), since `TurnFinished` is a turn's last event.
    pub fn outside_turn(&self) -> HookRunner {
        HookRunner {
            set: Arc::clone(&self.set),
            session_id: self.session_id.clone(),
            prompt_id: self.prompt_id.clone(),
            transcript: self.transcript.clone(),
            cwd: self.cwd.clone(),
            env: self.env.clone(),
            mode: self.mode,
            log: self.log.clone(),
            turn: None,
            redactor: self.redactor.clone(),
            cancel: tokio_util::sync::CancellationToken::new(),
        }
    }

    /// Run the handlers of `event` matching `key` (a tool's name) at once, each with
    /// `input` plus the common fields; every run is a `HookRan` event.
    pub async fn run(
        &self,
        event: HookEvent,
        key: Option<&str>,
        mut input: Value,
    ) -> Vec<HookResult> {
        let handlers = self.set.matching(event, key);
        if handlers.is_empty() {
            return Vec::new();
        }
        if let Some(fields) = input.as_object_mut() {
            fields.insert("session_id".into(), json!(self.session_id));
            if let Some(prompt) = &self.prompt_id {
                fields.insert("prompt_id".into(), json!(prompt));
            }
            fields.insert(
                "transcript_path".into(),
                json!(self.transcript.display().to_string()),
            );
            fields.insert("cwd".into(), json!(self.cwd.display().to_string()));
            fields.insert("permission_mode".into(), json!(claude_mode(self.mode)));
            fields.insert("hook_event_name".into(), json!(event.as_str()));
        }
        // What the turn said so far is in the transcript before a hook reads it.
        if let Err(e) = self.log.flush().await {
            tracing::warn!(session = %self.session_id, error = %e, "the transcript may lag behind the hook");
        }
        let stdin = input.to_string();
        let runs = handlers.iter().map(|h| self.run_one(event, h, &stdin));
        futures::future::join_all(runs).await
    }

    async fn run_one(&self, event: HookEvent, handler: &Handler, stdin: &str) -> HookResult {
        let started = Instant::now();
        let result = self.execute(handler, stdin).await;
        let outcome = if result.timed_out {
            "timeout"
        } else if result.blocks() {
            "blocked"
        } else if result.exit == Some(0) {
            "ok"
        } else {
            "error"
        };
        let message = match outcome {
            "timeout" => Some(format!(
                "killed after {}s (its timeout)",
                handler.timeout.as_secs_f64()
            )),
            "ok" => result.text("systemMessage"),
            _ => Some(match result.stderr.trim() {
                "" => format!("exit {}", result.exit.map_or("?".into(), |c| c.to_string())),
                said => said.to_string(),
            }),
        };
        let event = AppEvent::HookRan {
            event,
            command: self.redactor.redact(&shorten(&handler.command, 200)),
            outcome: stepper_protocol::event::HookOutcome::parse(outcome),
            duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
            message: message.map(|m| self.redactor.redact(&shorten(&m, 2000))),
        };
        if let Err(e) = self.log.append(self.turn, event).await {
            tracing::error!(error = %e, "cannot record a hook's run");
        }
        result
    }

    /// Run `command` as a handler is run, with `stdin`, killed at `timeout`; no event says
    /// so (a status line is drawn, not told).
    pub async fn run_command(&self, command: &str, stdin: &str, timeout: Duration) -> HookResult {
        let handler = Handler {
            command: command.to_string(),
            timeout,
        };
        self.execute(&handler, stdin).await
    }

    async fn execute(&self, handler: &Handler, stdin: &str) -> HookResult {
        let mut command = shell(&handler.command);
        command
            .env_clear()
            .envs(&self.env)
            .env("CLAUDE_PROJECT_DIR", &self.cwd)
            .env("STEPPER_PROJECT_DIR", &self.cwd)
            .current_dir(&self.cwd)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let mut child = match stepper_process::group::spawn(command) {
            Ok(child) => child,
            Err(e) => {
                return HookResult {
                    stderr: format!("cannot run the hook {:?}: {e}", handler.command),
                    ..HookResult::default()
                };
            }
        };
        let process = child.child_mut();
        let (mut input, stdout, stderr) = (
            process.stdin.take(),
            process.stdout.take(),
            process.stderr.take(),
        );
        let io = async {
            let feed = async {
                if let Some(input) = input.as_mut() {
                    // A hook that does not read its input is not an error.
                    let _ = input.write_all(stdin.as_bytes()).await;
                }
                drop(input);
            };
            let (_, out, err) = tokio::join!(feed, read_capped(stdout), read_capped(stderr));
            (out, err)
        };
        let ran = tokio::select! {
            ran = tokio::time::timeout(handler.timeout, async {
                let (out, err) = io.await;
                let status = child.wait().await;
                (out, err, status)
            }) => ran,
            () = self.cancel.cancelled() => {
                child.terminate(Duration::from_secs(1)).await;
                return HookResult {
                    stderr: "stopped: the turn was interrupted".into(),
                    ..HookResult::default()
                };
            }
        };
        match ran {
            Ok((stdout, stderr, status)) => {
                let json = serde_json::from_str::<Value>(stdout.trim())
                    .ok()
                    .filter(Value::is_object);
                HookResult {
                    exit: status.ok().and_then(|s| s.code()),
                    stdout,
                    stderr,
                    timed_out: false,
                    json,
                }
            }
            Err(_) => {
                child.terminate(Duration::from_secs(1)).await;
                HookResult {
                    timed_out: true,
                    ..HookResult::default()
                }
            }
        }
    }

    /// `SessionStart` and `UserPromptSubmit`: what they add to the model's context, or why
    /// the prompt is blocked.
    pub fn context_or_block(
        event: HookEvent,
        results: &[HookResult],
    ) -> Result<Vec<String>, String> {
        let mut context = Vec::new();
        for r in results {
            if event == HookEvent::UserPromptSubmit {
                if r.blocks() {
                    return Err(r.reason());
                }
                if let Some(why) = r.decision_block().or_else(|| r.stops()) {
                    return Err(why);
                }
            }
            if r.exit != Some(0) {
                continue;
            }
            match (&r.json, r.context()) {
                (_, Some(more)) => context.push(more),
                (None, None) if !r.stdout.trim().is_empty() => {
                    context.push(r.stdout.trim().to_string());
                }
                _ => {}
            }
        }
        Ok(context)
    }

    /// What handlers that succeeded add to the model's context
    /// (`hookSpecificOutput.additionalContext`): `SubagentStart`.
    pub fn additional_context(results: &[HookResult]) -> Vec<String> {
        results
            .iter()
            .filter(|r| r.exit == Some(0))
            .filter_map(HookResult::context)
            .collect()
    }

    /// `PermissionRequest`: allow (with `updatedInput`, the input changed) or deny (with
    /// `interrupt`, the turn ended) without asking, or `None` to ask. A deny wins.
    pub fn permission(results: &[HookResult]) -> Option<Decision> {
        let mut allowed = None;
        for r in results {
            if r.blocks() {
                return Some(Decision::Deny(r.reason()));
            }
            let decision = r.specific("decision");
            let field = |key: &str| decision.and_then(|d| d.get(key));
            match field("behavior").and_then(Value::as_str) {
                Some("deny") => {
                    let why = field("message")
                        .and_then(Value::as_str)
                        .unwrap_or("a PermissionRequest hook denied it")
                        .to_string();
                    return Some(if field("interrupt") == Some(&Value::Bool(true)) {
                        Decision::DenyAndStop(why)
                    } else {
                        Decision::Deny(why)
                    });
                }
                Some("allow") => {
                    allowed = Some(match field("updatedInput").filter(|v| v.is_object()) {
                        Some(changed) => Decision::AllowChanged(changed.clone()),
                        None => Decision::Allow,
                    });
                }
                _ => {}
            }
        }
        allowed
    }
}

/// The hooks a turn runs around its tool calls and its end.
pub struct SessionHooks {
    pub runner: Arc<HookRunner>,
    /// `Stop` for the turn's own agents, `SubagentStop` for workers and dispatched ones.
    pub stop_event: Option<HookEvent>,
    /// A subagent's id and type (its agent file's name), which its `SubagentStop` is given
    /// with its own transcript.
    pub subagent: Option<(String, String)>,
}

impl TurnHooks for SessionHooks {
    fn changed_input(&self, tool: &str, changed: &Value, input: &Value) -> Value {
        from_claude_input(tool, changed, input)
    }

    fn before_tool<'a>(
        &'a self,
        call_id: &'a str,
        tool: &'a str,
        input: &'a Value,
    ) -> BoxFuture<'a, BeforeTool> {
        Box::pin(async move {
            let name = claude_name(tool);
            if !self.runner.set.has(HookEvent::PreToolUse) {
                return BeforeTool::RUN;
            }
            let results = self
                .runner
                .run(
                    HookEvent::PreToolUse,
                    Some(&name),
                    json!({
                        "tool_name": name,
                        "tool_input": claude_input(tool, input, &self.runner.cwd),
                        "tool_use_id": call_id,
                    }),
                )
                .await;
            let mut updated = None;
            let mut hint = None;
            let mut context = Vec::new();
            for r in &results {
                if r.blocks() {
                    return BeforeTool::Block(r.reason());
                }
                if let Some(why) = r.stops() {
                    return BeforeTool::StopTurn(why);
                }
                let reason = r
                    .specific("permissionDecisionReason")
                    .and_then(Value::as_str)
                    .map(str::to_string);
                // The current field, then the older top-level `decision`.
                let decision = r
                    .specific("permissionDecision")
                    .and_then(Value::as_str)
                    .map(str::to_string)
                    .or_else(|| match r.text("decision").as_deref() {
                        Some("approve") => Some("allow".into()),
                        Some("block") => Some("deny".into()),
                        _ => None,
                    });
                match decision.as_deref() {
                    Some("deny") => {
                        return BeforeTool::Block(
                            reason
                                .or_else(|| r.text("reason"))
                                .unwrap_or_else(|| "a PreToolUse hook denied it".into()),
                        );
                    }
                    Some("ask") => {
                        hint = Some(GateHint::Ask(
                            reason.unwrap_or_else(|| "a hook asks for this call".into()),
                        ));
                    }
                    Some("allow") if hint.is_none() => hint = Some(GateHint::Allow),
                    _ => {}
                }
                if let Some(changed) = r.specific("updatedInput").filter(|v| v.is_object()) {
                    updated = Some(from_claude_input(tool, changed, input));
                }
                context.extend(r.context());
            }
            BeforeTool::Run {
                input: updated,
                hint,
                context: (!context.is_empty()).then(|| context.join("\n")),
            }
        })
    }

    fn after_tool<'a>(
        &'a self,
        call_id: &'a str,
        tool: &'a str,
        input: &'a Value,
        end: ToolEnd<'a>,
    ) -> BoxFuture<'a, AfterTool> {
        Box::pin(async move {
            let event = if end.ok {
                HookEvent::PostToolUse
            } else {
                HookEvent::PostToolUseFailure
            };
            if !self.runner.set.has(event) {
                return AfterTool::default();
            }
            let name = claude_name(tool);
            let claude = claude_input(tool, input, &self.runner.cwd);
            let mut fields = json!({
                "tool_name": name,
                "tool_input": claude,
                "tool_use_id": call_id,
            });
            if end.ok {
                fields["tool_response"] = claude_response(tool, &claude, &end);
            } else {
                fields["error"] = json!(end.output);
            }
            let results = self.runner.run(event, Some(&name), fields).await;
            let said: Vec<String> = results
                .iter()
                .filter_map(|r| {
                    if r.blocks() {
                        Some(r.reason())
                    } else {
                        r.decision_block().or_else(|| r.context())
                    }
                })
                .collect();
            AfterTool {
                feedback: (!said.is_empty()).then(|| format!("[hook] {}", said.join("\n"))),
                // `continue: false`: the turn ends after this step, as Claude Code stops.
                stop: results.iter().find_map(HookResult::stops),
            }
        })
    }

    fn compacting<'a>(
        &'a self,
        trigger: &'a str,
        instructions: Option<&'a str>,
        done: bool,
    ) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let event = if done {
                HookEvent::PostCompact
            } else {
                HookEvent::PreCompact
            };
            if self.runner.set.has(event) {
                let input = json!({
                    "trigger": trigger,
                    "custom_instructions": instructions.unwrap_or(""),
                });
                self.runner.run(event, Some(trigger), input).await;
            }
        })
    }

    fn before_stop<'a>(
        &'a self,
        active: bool,
        last_text: &'a str,
    ) -> BoxFuture<'a, Option<String>> {
        Box::pin(async move {
            let stop_event = self.stop_event.filter(|e| self.runner.set.has(*e))?;
            // As Claude Code gives it: the reply the model ends on, so a hook need not dig
            // it out of the transcript.
            let mut input = json!({
                "stop_hook_active": active,
                "last_assistant_message": self.runner.redactor.redact(last_text),
            });
            if let Some((id, kind)) = &self.subagent {
                let path = super::transcript::agent_transcript(&self.runner.transcript, id);
                input["agent_id"] = json!(id);
                input["agent_type"] = json!(kind);
                input["agent_transcript_path"] = json!(path.display().to_string());
            }
            let results = self.runner.run(stop_event, None, input).await;
            // `continue: false` wins over any `decision: block`: the turn stops.
            if results.iter().any(|r| r.stops().is_some()) {
                return None;
            }
            results.iter().find_map(|r| {
                if r.blocks() {
                    Some(r.reason())
                } else {
                    r.decision_block()
                }
            })
        })
    }
}

/// A call's input as Claude Code spells it: its file tools take an absolute `file_path`; a
/// patch gives its first file there and every file in `file_paths`.
/// A tool's result as Claude Code gives it to `PostToolUse` hooks (`tool_response`): an
/// object for Bash (`stdout`, `stderr`, `interrupted`), the file tools (`filePath`, and what
/// was written or read; a picture or PDF read as Claude Code's Read gives it), text for the
/// rest. `claude_input` is the call's input in Claude Code's shape.
fn claude_response(tool: &str, claude_input: &Value, end: &ToolEnd<'_>) -> Value {
    let output = end.output;
    let file_path = claude_input
        .get("file_path")
        .cloned()
        .unwrap_or(Value::Null);
    match tool {
        "bash" => json!({
            "stdout": output,
            "stderr": "",
            "interrupted": false,
            "isImage": false,
        }),
        "read" => claude_read_response(&file_path, end),
        "write" => json!({
            "type": "update",
            "filePath": file_path,
            "content": claude_input.get("content").cloned().unwrap_or(Value::Null),
        }),
        "edit" => json!({
            "filePath": file_path,
            "oldString": claude_input.get("old_string").cloned().unwrap_or(Value::Null),
            "newString": claude_input.get("new_string").cloned().unwrap_or(Value::Null),
            "replaceAll": claude_input.get("replace_all").cloned().unwrap_or(json!(false)),
        }),
        "multi_edit" => json!({
            "filePath": file_path,
            "edits": claude_input.get("edits").cloned().unwrap_or(Value::Null),
        }),
        _ => json!(output),
    }
}

fn claude_input(tool: &str, input: &Value, cwd: &std::path::Path) -> Value {
    let mut input = input.clone();
    if matches!(tool, "read" | "write" | "edit" | "multi_edit")
        && let Some(fields) = input.as_object_mut()
        && let Some(path) = fields.remove("path")
    {
        let path = path
            .as_str()
            .map_or(path.clone(), |p| json!(cwd.join(p).display().to_string()));
        fields.insert("file_path".into(), path);
    }
    if tool == "apply_patch"
        && let Some(fields) = input.as_object_mut()
    {
        let patch = fields
            .get("input")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let paths: Vec<String> = patch_paths(patch)
            .map(|p| cwd.join(p).display().to_string())
            .collect();
        if let Some(first) = paths.first() {
            fields.insert("file_path".into(), json!(first));
        }
        fields.insert("file_paths".into(), json!(paths));
    }
    input
}

/// The files a patch names (added, updated, deleted, moved to), in order.
fn patch_paths(patch: &str) -> impl Iterator<Item = &str> {
    patch.lines().filter_map(|line| {
        let line = line.trim();
        [
            "*** Add File:",
            "*** Update File:",
            "*** Delete File:",
            "*** Move to:",
        ]
        .iter()
        .find_map(|marker| line.strip_prefix(marker))
        .map(str::trim)
        .filter(|p| !p.is_empty())
    })
}

/// An `updatedInput` back in stepper's spelling, over the call's own input.
fn from_claude_input(tool: &str, updated: &Value, original: &Value) -> Value {
    let mut merged = original.clone();
    if let (Some(into), Some(from)) = (merged.as_object_mut(), updated.as_object()) {
        for (key, value) in from {
            let key =
                if key == "file_path" && matches!(tool, "read" | "write" | "edit" | "multi_edit") {
                    "path"
                } else {
                    key.as_str()
                };
            // A patch's paths are what it says; only its text may be changed.
            if tool == "apply_patch" && key != "input" {
                continue;
            }
            into.insert(key.to_string(), value.clone());
        }
    }
    merged
}

fn claude_mode(mode: PermissionMode) -> &'static str {
    match mode {
        PermissionMode::Default => "default",
        PermissionMode::AcceptEdits => "acceptEdits",
        PermissionMode::Plan => "plan",
        PermissionMode::Auto => "bypassPermissions",
    }
}

/// The hook's line in a shell, under the reaper: nothing it starts outlives it.
fn shell(line: &str) -> tokio::process::Command {
    #[cfg(unix)]
    {
        let mut command = stepper_process::reaper::command("/bin/sh");
        command.arg("-c").arg(line);
        command
    }
    #[cfg(not(unix))]
    {
        let mut command = tokio::process::Command::new("cmd");
        command.arg("/C").arg(line);
        command
    }
}

async fn read_capped(stream: Option<impl tokio::io::AsyncRead + Unpin>) -> String {
    let Some(stream) = stream else {
        return String::new();
    };
    let mut bytes = Vec::new();
    let _ = stream.take(MAX_OUTPUT as u64).read_to_end(&mut bytes).await;
    String::from_utf8_lossy(&bytes).into_owned()
}

fn shorten(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matchers_and_problems() {
        let set = HookSet::parse(Some(&json!({
            "PreToolUse": [
                {"matcher": "Bash|Write", "hooks": [{"type": "command", "command": "a"}]},
                {"matcher": "mcp__.*", "hooks": [{"type": "command", "command": "b", "timeout": 5}]},
                {"hooks": [{"type": "command", "command": "c"}]},
                {"matcher": "(", "hooks": [{"type": "command", "command": "d"}]},
                {"matcher": "Read", "hooks": [{"type": "prompt", "prompt": "x"}]}
            ],
            "OnSunday": []
        })));
        let names = |key| -> Vec<String> {
            set.matching(HookEvent::PreToolUse, Some(key))
                .into_iter()
                .map(|h| h.command)
                .collect()
        };
        assert_eq!(names("Bash"), ["a", "c"]);
        assert_eq!(names("mcp__fs__read"), ["b", "c"]);
        assert_eq!(names("Edit"), ["c"]);
        assert_eq!(set.problems.len(), 3, "{:?}", set.problems);
        assert!(set.problems.iter().any(|p| p.contains("OnSunday")));
        assert!(set.problems.iter().any(|p| p.contains("not a valid regex")));
        assert!(
            set.problems
                .iter()
                .any(|p| p.contains("\"prompt\" is not run"))
        );
    }

    #[test]
    fn inputs_in_claude_codes_spelling_and_back() {
        let input = json!({"path": "a.txt", "content": "x"});
        let claude = claude_input("write", &input, std::path::Path::new("/p"));
        assert_eq!(claude, json!({"file_path": "/p/a.txt", "content": "x"}));
        let back = from_claude_input("write", &json!({"file_path": "/p/b.txt"}), &input);
        assert_eq!(back, json!({"path": "/p/b.txt", "content": "x"}));
        assert_eq!(claude_name("multi_edit"), "MultiEdit");
        assert_eq!(claude_name("mcp__s__t"), "mcp__s__t");
        assert_eq!(claude_name("apply_patch"), "Edit");
        let patch = "*** Begin Patch\n*** Update File: src/a.rs\n*** Move to: src/b.rs\n@@\n-x\n+y\n*** Add File: c.txt\n+c\n*** End Patch";
        let input = claude_input(
            "apply_patch",
            &json!({"input": patch}),
            std::path::Path::new("/p"),
        );
        assert_eq!(input["file_path"], "/p/src/a.rs");
        assert_eq!(
            input["file_paths"],
            json!(["/p/src/a.rs", "/p/src/b.rs", "/p/c.txt"])
        );
    }
}
