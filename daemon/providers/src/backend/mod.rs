//! Other agent CLIs driven as back-ends: a session whose model is `claude-code/<model>` runs
//! each turn in an installed Claude Code, with its own tools, login and conversation, while
//! stepper keeps the session: events, approvals through the session's gate, checkpoints,
//! one history.
//!
//! `host.rs` is what every CLI needs of its host (the process in its group under the
//! parent-death guard, writes queued in order, lines reassembled, stderr to the log);
//! `turn_loop.rs` is the turn both CLIs run over it; `claude.rs` speaks Claude Code's stream-json protocol and `codex.rs` Codex's app-server JSON-RPC. This module finds the
//! executable, checks its version, and builds the environment it runs with.
//!
//! The executable is `providers.<name>.command`, else found on `PATH` with the usual install
//! folders added; its version is checked once per executable. `auth: auto` hands over the session's
//! Anthropic key and base URL, `subscription` takes them away. The [`Driver`] is what a session
//! holds, either CLI: it takes every known secret out of what the CLI says (a `Redacting` sink: the
//! CLI's tools see the environment, so its output may carry a key), and hands steered text to the
//! CLI as a follow-up message once it has finished what it was doing.

pub mod claude;
pub mod codex;
pub mod host;
pub mod mcp_list;
pub mod status;
mod turn_loop;

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use stepper_engine::ProviderError;
use stepper_engine::config::BackendAuth;
use stepper_protocol::session::Env;
use stepper_protocol::{AppEvent, TurnStatus};

/// Which CLI.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Cli {
    ClaudeCode,
    CodexCli,
}

impl Cli {
    /// The provider name of its models (`claude-code/…`).
    pub fn provider(self) -> &'static str {
        match self {
            Cli::ClaudeCode => "claude-code",
            Cli::CodexCli => "codex-cli",
        }
    }

    /// The executable's usual name.
    pub fn program(self) -> &'static str {
        match self {
            Cli::ClaudeCode => "claude",
            Cli::CodexCli => "codex",
        }
    }

    /// What installs it.
    pub fn install(self) -> &'static str {
        match self {
            Cli::ClaudeCode => "npm install -g @anthropic-ai/claude-code",
            Cli::CodexCli => "npm install -g @openai/codex",
        }
    }

    /// The oldest version stepper drives: Claude Code's control protocol over stream-json
    /// (`can_use_tool`, `interrupt`, `set_model`) came with 2.0; Codex's app-server threads
    /// and turns (its v2 API) with 0.50.
    pub fn minimum(self) -> Version {
        match self {
            Cli::ClaudeCode => Version(2, 0, 0),
            Cli::CodexCli => Version(0, 50, 0),
        }
    }

    /// Why the CLI cannot be given `a`, as the user reads it; `None` when it can. Claude
    /// Code takes images and PDFs; Codex's app-server takes images only.
    pub fn refuses(self, a: &stepper_protocol::Attachment) -> Option<String> {
        match (self, &a.kind) {
            (Cli::CodexCli, stepper_protocol::AttachmentKind::Document) => Some(format!(
                "Codex CLI takes no PDF attachments ({}): switch with /model to a model that \
                 reads PDFs (anthropic/claude-sonnet-4-5, openai/gpt-5, claude-code/sonnet), \
                 or send the text alone",
                a.label()
            )),
            _ => None,
        }
    }

    /// The product's name, for messages.
    pub fn title(self) -> &'static str {
        match self {
            Cli::ClaudeCode => "Claude Code",
            Cli::CodexCli => "Codex CLI",
        }
    }

    /// `error` with how to sign in when it says the CLI has no login.
    fn with_login_hint(self, error: String) -> String {
        let lower = error.to_lowercase();
        let about_login = [
            "not logged in",
            "log in",
            "login",
            "unauthorized",
            "401",
            "invalid api key",
        ]
        .iter()
        .any(|w| lower.contains(w));
        if !about_login {
            return error;
        }
        let how = match self {
            Cli::ClaudeCode => {
                "sign in by running `claude` in a terminal and typing /login, or give the session \
                 ANTHROPIC_API_KEY (handed to the CLI while providers.claude-code.auth is \"auto\")"
            }
            Cli::CodexCli => {
                "sign in with `codex login`, or give the session OPENAI_API_KEY (handed to the \
                 CLI while providers.codex-cli.auth is \"auto\")"
            }
        };
        format!("{error} — {how}; `stepper backends` shows each CLI's login")
    }

    /// The variables that carry an API login, which `subscription` takes away.
    fn auth_variables(self) -> &'static [&'static str] {
        match self {
            Cli::ClaudeCode => &[
                "ANTHROPIC_API_KEY",
                "ANTHROPIC_AUTH_TOKEN",
                "ANTHROPIC_BASE_URL",
            ],
            Cli::CodexCli => &["OPENAI_API_KEY", "OPENAI_BASE_URL", "CODEX_API_KEY"],
        }
    }
}

/// A session's back-end: the CLI its model names, with its process and conversation.
pub enum Driver {
    Claude(claude::ClaudeCode),
    Codex(codex::CodexCli),
}

impl Driver {
    /// A back-end for `cli` that resumes the conversation `id` (Claude Code's session,
    /// Codex's thread), if any.
    pub fn new(cli: Cli, id: Option<String>) -> Driver {
        match cli {
            Cli::ClaudeCode => Driver::Claude(claude::ClaudeCode::new(id)),
            Cli::CodexCli => Driver::Codex(codex::CodexCli::new(id)),
        }
    }

    pub fn cli(&self) -> Cli {
        match self {
            Driver::Claude(_) => Cli::ClaudeCode,
            Driver::Codex(_) => Cli::CodexCli,
        }
    }

    /// The CLI's conversation, to resume after a restart.
    pub fn conversation(&self) -> Option<&str> {
        match self {
            Driver::Claude(c) => c.session_id(),
            Driver::Codex(c) => c.thread_id(),
        }
    }

    /// Run one turn. What the CLI says reaches `sink` with every known secret taken out (a
    /// command it runs may print the environment), and so does the outcome.
    ///
    /// Text steered in while the CLI works goes to it as soon as it has finished what it was
    /// doing, as a message of its own within the same turn, and the turn goes on until
    /// nothing steered is left unanswered. Claude Code takes a message sent mid-turn as a turn
    /// of its own after the running one (its own `result`), so sending it at the end is what
    /// the CLI would do anyway, without a second `result` to tell apart; Codex does the same.
    pub async fn turn<S: stepper_engine::EventSink>(
        &mut self,
        t: claude::TurnSpec<'_>,
        sink: &S,
    ) -> Finished {
        let redactor = stepper_engine::redact::Redactor::new(t.secrets.to_vec());
        let redacting = Redacting {
            inner: sink,
            redactor: redactor.clone(),
            stream: Mutex::new(redactor.stream()),
        };
        let mut exchanges = Vec::new();
        // Text steered in before the CLI got anything (or left by a turn that ended before it
        // could be sent) joins the prompt, as a steer joins the next user message elsewhere.
        let mut prompt = t.prompt.to_string();
        for early in t.steering.map(|take| take()).unwrap_or_default() {
            prompt.push_str("\n\n");
            prompt.push_str(&early);
        }
        // The attachments go with the prompt; text steered in later goes alone.
        let mut attachments = t.attachments;
        let outcome = loop {
            let mut spec = t.clone();
            spec.prompt = &prompt;
            spec.attachments = std::mem::take(&mut attachments);
            let mut outcome = match self {
                Driver::Claude(c) => c.turn(spec, &redacting).await,
                Driver::Codex(c) => c.turn(spec, &redacting).await,
            };
            if let Err(e) = redacting.flush().await {
                outcome = claude::Outcome::failed(e.to_string());
            }
            outcome.text = redactor.redact(&outcome.text);
            outcome.error = outcome
                .error
                .map(|e| self.cli().with_login_hint(redactor.redact(&e)));
            exchanges.push((std::mem::take(&mut prompt), outcome.text.clone()));
            let steered = match t.steering {
                Some(take)
                    if outcome.status == TurnStatus::Completed && !t.cancel.is_cancelled() =>
                {
                    take()
                }
                _ => Vec::new(),
            };
            if steered.is_empty() {
                break outcome;
            }
            prompt = steered.join("\n\n");
        };
        Finished { outcome, exchanges }
    }

    /// Stop the process; the conversation's id stays.
    pub async fn shut(&mut self) {
        match self {
            Driver::Claude(c) => c.shut().await,
            Driver::Codex(c) => c.shut().await,
        }
    }
}

/// How a back-end's turn ended, and what was said in it: the prompt and the CLI's answer,
/// then each text steered in and its answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Finished {
    pub outcome: claude::Outcome,
    pub exchanges: Vec<(String, String)>,
}

/// A sink that takes known secrets out of every event on its way: streamed text through a
/// stream redactor (a secret may be cut between two deltas), the rest whole.
struct Redacting<'a, S> {
    inner: &'a S,
    redactor: stepper_engine::redact::Redactor,
    stream: Mutex<stepper_engine::redact::StreamRedactor>,
}

impl<S: stepper_engine::EventSink> Redacting<'_, S> {
    /// What the stream redactor still holds, out.
    async fn flush(&self) -> Result<(), stepper_engine::agent::SinkError> {
        let held = self
            .stream
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .finish_all();
        for (id, text) in held {
            let event = if id == "reasoning" {
                AppEvent::ReasoningDelta { text }
            } else {
                AppEvent::TextDelta { text }
            };
            self.inner.emit(event).await?;
        }
        Ok(())
    }

    fn push(&self, id: &str, piece: &str) -> String {
        self.stream
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(id, piece)
    }

    fn json(&self, value: serde_json::Value) -> serde_json::Value {
        let text = value.to_string();
        let clean = self.redactor.redact(&text);
        if clean == text {
            value
        } else {
            serde_json::from_str(&clean).unwrap_or(serde_json::Value::String(clean))
        }
    }
}

impl<S: stepper_engine::EventSink> stepper_engine::EventSink for Redacting<'_, S> {
    async fn emit(&self, event: AppEvent) -> Result<(), stepper_engine::agent::SinkError> {
        let r = &self.redactor;
        let event = match event {
            AppEvent::TextDelta { text } => {
                let text = self.push("text", &text);
                if text.is_empty() {
                    return Ok(());
                }
                return self.inner.emit(AppEvent::TextDelta { text }).await;
            }
            AppEvent::ReasoningDelta { text } => {
                let text = self.push("reasoning", &text);
                if text.is_empty() {
                    return Ok(());
                }
                return self.inner.emit(AppEvent::ReasoningDelta { text }).await;
            }
            other => other,
        };
        // Anything else ends what streamed before it.
        self.flush().await?;
        let event = match event {
            AppEvent::MessageCompleted { text, stop_reason } => AppEvent::MessageCompleted {
                text: r.redact(&text),
                stop_reason,
            },
            AppEvent::ToolCallStarted {
                call_id,
                tool,
                input,
            } => AppEvent::ToolCallStarted {
                call_id,
                tool,
                input: self.json(input),
            },
            AppEvent::ToolCallFinished {
                call_id,
                status,
                output,
                exit_code,
                duration_ms,
                diff,
            } => AppEvent::ToolCallFinished {
                call_id,
                status,
                output: r.redact(&output),
                exit_code,
                duration_ms,
                diff: diff.map(|d| r.redact(&d)),
            },
            AppEvent::Notice { message } => AppEvent::Notice {
                message: r.redact(&message),
            },
            other => other,
        };
        self.inner.emit(event).await
    }
}

/// The provider a CLI back-end's model resolves to: it runs no model call of its own, so
/// what asks one of it (compaction, MCP sampling, another layer) is told what to use.
pub struct NotAModel {
    pub cli: Cli,
}

impl stepper_engine::LlmProvider for NotAModel {
    fn name(&self) -> &str {
        self.cli.provider()
    }

    fn chat_stream(
        &self,
        _request: stepper_engine::ChatRequest,
        _cancel: tokio_util::sync::CancellationToken,
    ) -> stepper_engine::provider::ChatStream {
        let message = format!(
            "{}/… runs whole turns in {} and answers no single model call: name another model \
             for this (compaction.model, a layer's or a subagent's model)",
            self.cli.provider(),
            self.cli.title()
        );
        Box::pin(futures::stream::once(async move {
            Err(ProviderError::Config(message))
        }))
    }
}

/// A CLI version, `major.minor.patch`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Version(pub u32, pub u32, pub u32);

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}.{}", self.0, self.1, self.2)
    }
}

impl Version {
    /// The first `x.y.z` in what `--version` printed (`2.1.3 (Claude Code)`,
    /// `codex-cli 0.171.0`).
    pub fn find(text: &str) -> Option<Version> {
        text.split(|c: char| c.is_whitespace() || c == '(' || c == ')' || c == 'v')
            .find_map(|word| {
                let core = word.split(['-', '+']).next()?;
                let mut parts = core.split('.').map(|p| p.parse::<u32>().ok());
                let (a, b, c) = (parts.next()??, parts.next()??, parts.next()??);
                Some(Version(a, b, c))
            })
    }
}

/// A CLI found and fit to drive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub cli: Cli,
    pub program: PathBuf,
    pub version: Version,
}

/// Folders where CLIs are installed but a daemon started by the service manager or a GUI
/// session may not have on its `PATH`; each is added after the session's own `PATH`.
fn extra_path(home: Option<&Path>) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(home) = home {
        for sub in [
            ".local/bin",
            ".claude/local",
            ".npm-global/bin",
            ".bun/bin",
            ".volta/bin",
            ".yarn/bin",
            ".cargo/bin",
            "bin",
        ] {
            dirs.push(home.join(sub));
        }
    }
    for dir in [
        "/usr/local/bin",
        "/opt/homebrew/bin",
        "/home/linuxbrew/.linuxbrew/bin",
        "/usr/bin",
        "/bin",
    ] {
        dirs.push(PathBuf::from(dir));
    }
    dirs
}

/// `PATH` as a CLI gets it: the session's, then the usual install folders it lacks.
pub fn augmented_path(env: &Env) -> String {
    let sep = if cfg!(windows) { ';' } else { ':' };
    let mut parts: Vec<String> = env
        .get("PATH")
        .map(|p| {
            p.split(sep)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    let home = env.get("HOME").map(Path::new);
    for dir in extra_path(home) {
        let dir = dir.display().to_string();
        if !parts.contains(&dir) {
            parts.push(dir);
        }
    }
    parts.join(&sep.to_string())
}

/// Where `cli` is: `command` from the settings (a path, or a name looked up on the
/// augmented `PATH`), else its usual name on that `PATH`.
pub fn locate(cli: Cli, command: Option<&str>, env: &Env) -> Result<PathBuf, ProviderError> {
    let wanted = command.unwrap_or(cli.program());
    let not_found = || {
        let how = match command {
            Some(c) => format!(
                "providers.{}.command is {c:?}, which is not an executable",
                cli.provider()
            ),
            None => format!("no `{}` on PATH", cli.program()),
        };
        ProviderError::Config(format!(
            "{} is not installed ({how}): install it with `{}`, or set \"command\" under \
             providers.{} in setting.json to where it is",
            cli.title(),
            cli.install(),
            cli.provider()
        ))
    };
    let named = Path::new(wanted);
    if named.components().count() > 1 || named.is_absolute() {
        let path = match (named.is_absolute(), env.get("HOME")) {
            (false, _) if wanted.starts_with("~/") => env
                .get("HOME")
                .map(|h| Path::new(h).join(&wanted[2..]))
                .ok_or_else(not_found)?,
            _ => named.to_path_buf(),
        };
        return if is_executable(&path) {
            Ok(path)
        } else {
            Err(not_found())
        };
    }
    let path = augmented_path(env);
    let sep = if cfg!(windows) { ';' } else { ':' };
    for dir in path.split(sep) {
        let candidate = Path::new(dir).join(wanted);
        if is_executable(&candidate) {
            return Ok(candidate);
        }
        #[cfg(windows)]
        for ext in ["exe", "cmd"] {
            let candidate = candidate.with_extension(ext);
            if is_executable(&candidate) {
                return Ok(candidate);
            }
        }
    }
    Err(not_found())
}

fn is_executable(path: &Path) -> bool {
    let Ok(meta) = std::fs::metadata(path) else {
        return false;
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        meta.is_file() && meta.permissions().mode() & 0o111 != 0
    }
    #[cfg(not(unix))]
    meta.is_file()
}

/// How long `--version` may take.
const VERSION_TIMEOUT: Duration = Duration::from_secs(20);

/// The version of the CLI at `program`, asked once per executable (path, size and mtime).
pub async fn version(cli: Cli, program: &Path, env: &Env) -> Result<Version, ProviderError> {
    type Seen = Vec<((PathBuf, u64, Option<std::time::SystemTime>), Version)>;
    static SEEN: Mutex<Seen> = Mutex::new(Vec::new());
    let meta = std::fs::metadata(program).ok();
    let key = (
        program.to_path_buf(),
        meta.as_ref().map_or(0, std::fs::Metadata::len),
        meta.and_then(|m| m.modified().ok()),
    );
    if let Some((_, v)) = SEEN
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .iter()
        .find(|(k, _)| *k == key)
    {
        return Ok(*v);
    }
    let mut command = tokio::process::Command::new(program);
    command
        .arg("--version")
        .env_clear()
        .envs(env.iter())
        .env("PATH", augmented_path(env))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    let failed = |why: String| {
        ProviderError::Config(format!(
            "{} at {} did not say its version ({why}): reinstall it with `{}`",
            cli.title(),
            program.display(),
            cli.install()
        ))
    };
    // Spawned as the daemon's own child: a stranger beneath it would be killed.
    let child = stepper_process::lineage::spawn(&mut command).map_err(|e| failed(e.to_string()))?;
    let out = tokio::time::timeout(VERSION_TIMEOUT, child.wait_with_output())
        .await
        .map_err(|_| failed(format!("no answer in {}s", VERSION_TIMEOUT.as_secs())))?
        .map_err(|e| failed(e.to_string()))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let found =
        Version::find(&text).ok_or_else(|| failed(format!("it printed {:?}", text.trim())))?;
    if found < cli.minimum() {
        return Err(ProviderError::Config(format!(
            "{} {found} at {} is too old for stepper ({} or newer is needed): update it with \
             `{}@latest`",
            cli.title(),
            program.display(),
            cli.minimum(),
            cli.install()
        )));
    }
    let mut seen = SEEN.lock().unwrap_or_else(|p| p.into_inner());
    seen.retain(|(k, _)| k.0 != key.0);
    seen.push((key, found));
    Ok(found)
}

/// What a back-end is set up with, from the provider's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackendSpec {
    pub cli: Cli,
    /// `command` from the settings, if any.
    pub command: Option<String>,
    pub auth: BackendAuth,
    /// The model within the CLI (`None`: its default).
    pub model: Option<String>,
    /// The API login the session has for the CLI's vendor (`auto` only): a key and a base
    /// URL, as the variables the CLI reads.
    pub login: Vec<(String, String)>,
    /// Whether the user trusts the session's folder. Untrusted, Claude Code loads only the
    /// user's settings (not the project's hooks, permissions or `.mcp.json`), as stepper
    /// does; Codex keeps its own trust list.
    pub project_trusted: bool,
}

impl BackendSpec {
    /// The environment the CLI runs with: the session's, `PATH` augmented, and the API
    /// login by `auth` — `auto` passes the session's key and base URL when it has them
    /// (else the CLI uses its own login), `subscription` takes them away so the CLI's own
    /// login (a Claude or ChatGPT plan) is used.
    pub fn environment(&self, env: &Env) -> Env {
        let mut out = env.clone();
        out.insert("PATH".into(), augmented_path(env));
        // stepper's own variables mean nothing to the CLI.
        out.retain(|k, _| !k.starts_with("STEPPER_"));
        // Each Bash command of Claude Code's starts in the project, where the gate judged it
        // (a `cd` in one command does not carry over to the next).
        if self.cli == Cli::ClaudeCode {
            out.insert(
                "CLAUDE_BASH_MAINTAIN_PROJECT_WORKING_DIR".into(),
                "1".into(),
            );
        }
        match self.auth {
            BackendAuth::Subscription => {
                for var in self.cli.auth_variables() {
                    out.remove(*var);
                }
            }
            BackendAuth::Auto => {
                for (k, v) in &self.login {
                    out.entry(k.clone()).or_insert_with(|| v.clone());
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Attachments through each CLI, against fakes that keep what they were sent.
    mod attachments {
        use super::*;
        use crate::stream::testing::media;
        use serde_json::{Value, json};
        use stepper_engine::Media;
        use stepper_engine::tool::{AllowAll, CommandEnv};
        use tokio_util::sync::CancellationToken;

        /// Claude Code over stream-json: keeps each user message, ends each turn.
        const FAKE_CLAUDE: &str = r#"#!/bin/sh
case "$1" in --version) echo "2.1.0 (Claude Code)"; exit 0;; esac
while IFS= read -r line; do
  case "$line" in
    *'"type":"user"'*)
      printf '%s\n' "$line" >> "$FAKE_SEEN"
      echo '{"type":"system","subtype":"init","session_id":"s1"}'
      echo '{"type":"result","subtype":"success","is_error":false,"result":"seen","session_id":"s1"}'
      ;;
  esac
done
"#;

        /// Codex's app-server: answers the start, keeps each `turn/start`, ends each turn.
        const FAKE_CODEX: &str = r#"#!/bin/sh
case "$1" in --version) echo "codex-cli 0.60.0"; exit 0;; esac
while IFS= read -r line; do
  id=$(printf '%s' "$line" | sed -n 's/.*"id":\([0-9][0-9]*\).*/\1/p')
  case "$line" in
    *'"method":"initialize"'*)
      printf '{"jsonrpc":"2.0","id":%s,"result":{}}\n' "$id" ;;
    *'"method":"thread/start"'*)
      printf '{"jsonrpc":"2.0","id":%s,"result":{"thread":{"id":"t1"}}}\n' "$id" ;;
    *'"method":"turn/start"'*)
      printf '%s\n' "$line" >> "$FAKE_SEEN"
      printf '{"jsonrpc":"2.0","id":%s,"result":{"turn":{"id":"u1"}}}\n' "$id"
      echo '{"jsonrpc":"2.0","method":"turn/completed","params":{"threadId":"t1","turn":{"id":"u1","status":"completed"}}}' ;;
  esac
done
"#;

        struct Quiet;

        impl stepper_engine::EventSink for Quiet {
            async fn emit(&self, _: AppEvent) -> Result<(), stepper_engine::agent::SinkError> {
                Ok(())
            }
        }

        struct Fake {
            dir: tempfile::TempDir,
            spec: BackendSpec,
            env: Env,
        }

        impl Fake {
            fn new(cli: Cli, script: &str) -> Fake {
                use std::os::unix::fs::PermissionsExt;
                let dir = tempfile::tempdir().unwrap();
                let program = dir.path().join(cli.program());
                std::fs::write(&program, script).unwrap();
                std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
                let env: Env = [
                    ("PATH", "/usr/bin:/bin".to_string()),
                    ("HOME", dir.path().display().to_string()),
                    ("FAKE_SEEN", dir.path().join("seen").display().to_string()),
                ]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect();
                let spec = BackendSpec {
                    cli,
                    command: Some(program.display().to_string()),
                    auth: BackendAuth::Subscription,
                    model: None,
                    login: Vec::new(),
                    project_trusted: true,
                };
                Fake { dir, spec, env }
            }

            /// A turn of `prompt` with `attachments`, and text steered in once it runs.
            async fn turn(&self, prompt: &str, attachments: &[Media]) -> Finished {
                let asked = std::sync::atomic::AtomicUsize::new(0);
                let steering = move || {
                    // The first ask is before the CLI gets anything; the second, after.
                    match asked.fetch_add(1, std::sync::atomic::Ordering::SeqCst) {
                        1 => vec!["and this?".to_string()],
                        _ => Vec::new(),
                    }
                };
                let cancel = CancellationToken::new();
                let mut driver = Driver::new(self.spec.cli, None);
                let done = driver
                    .turn(
                        claude::TurnSpec {
                            prompt,
                            attachments,
                            spec: &self.spec,
                            env: &self.env,
                            cwd: self.dir.path(),
                            plan: false,
                            gate: &AllowAll,
                            command_env: CommandEnv::default(),
                            cancel: &cancel,
                            guard: None,
                            secrets: &[],
                            grace: Duration::from_secs(1),
                            steering: Some(&steering),
                        },
                        &Quiet,
                    )
                    .await;
                driver.shut().await;
                done
            }

            /// What the CLI was sent, message by message.
            fn seen(&self) -> Vec<Value> {
                std::fs::read_to_string(self.dir.path().join("seen"))
                    .unwrap_or_default()
                    .lines()
                    .map(|l| serde_json::from_str(l).unwrap())
                    .collect()
            }
        }

        fn png() -> Media {
            media("shot.png", "image/png", b"PNG!")
        }

        fn pdf() -> Media {
            media("spec.pdf", "application/pdf", b"%PDF")
        }

        #[tokio::test]
        async fn claude_code_is_sent_image_and_document_blocks_before_the_text() {
            let fake = Fake::new(Cli::ClaudeCode, FAKE_CLAUDE);
            let done = fake.turn("what is wrong here?", &[png(), pdf()]).await;
            assert_eq!(done.outcome.status, TurnStatus::Completed, "{done:?}");
            let seen = fake.seen();
            assert_eq!(
                seen[0]["message"],
                json!({"role": "user", "content": [
                    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "UE5HIQ=="}},
                    {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERg=="}, "title": "spec.pdf"},
                    {"type": "text", "text": "what is wrong here?"}
                ]})
            );
            // What was steered in goes alone: the pictures are not sent twice.
            assert_eq!(
                seen[1]["message"],
                json!({"role": "user", "content": "and this?"})
            );
            assert_eq!(seen.len(), 2);
        }

        #[tokio::test]
        async fn codex_is_sent_images_as_data_urls_and_refuses_a_pdf_before_starting() {
            let fake = Fake::new(Cli::CodexCli, FAKE_CODEX);
            let done = fake.turn("what is wrong here?", &[png()]).await;
            assert_eq!(done.outcome.status, TurnStatus::Completed, "{done:?}");
            let seen = fake.seen();
            assert_eq!(
                seen[0]["params"]["input"],
                json!([
                    {"type": "image", "url": "data:image/png;base64,UE5HIQ=="},
                    {"type": "text", "text": "what is wrong here?", "text_elements": []}
                ])
            );
            assert_eq!(
                seen[1]["params"]["input"],
                json!([{"type": "text", "text": "and this?", "text_elements": []}])
            );

            let fake = Fake::new(Cli::CodexCli, FAKE_CODEX);
            let done = fake.turn("summarise it", &[png(), pdf()]).await;
            assert_eq!(done.outcome.status, TurnStatus::Failed);
            assert_eq!(
                done.outcome.error.as_deref(),
                Some(
                    "Codex CLI takes no PDF attachments ([document: spec.pdf 4 B]): switch \
                     with /model to a model that reads PDFs (anthropic/claude-sonnet-4-5, \
                     openai/gpt-5, claude-code/sonnet), or send the text alone"
                )
            );
            assert!(fake.seen().is_empty(), "nothing reached Codex");
            assert_eq!(Cli::ClaudeCode.refuses(&pdf().about), None);
        }

        #[tokio::test]
        async fn an_attachment_without_its_bytes_is_refused_before_the_cli_starts() {
            for cli in [Cli::ClaudeCode, Cli::CodexCli] {
                let mut fake = Fake::new(cli, "#!/bin/sh\nexit 1\n");
                // A CLI that cannot even be found: asked for anything, it would say so.
                fake.spec.command = Some("/nonexistent/cli".into());
                let mut unloaded = png();
                unloaded.data = None;
                let done = fake.turn("look", &[unloaded]).await;
                assert!(
                    done.outcome.error.as_deref().is_some_and(|e| e.starts_with(
                        "an attachment's bytes were not loaded ([image: shot.png 4 B])"
                    )),
                    "{cli:?}: {done:?}"
                );
            }
        }
    }

    #[test]
    fn versions_are_read_from_what_the_clis_print() {
        assert_eq!(
            Version::find("2.1.332 (Claude Code)\n"),
            Some(Version(2, 1, 332))
        );
        assert_eq!(Version::find("codex-cli 0.171.0"), Some(Version(0, 171, 0)));
        assert_eq!(Version::find("v1.0.3-beta.2"), Some(Version(1, 0, 3)));
        assert_eq!(Version::find("claude"), None);
        assert!(Version(1, 9, 9) < Cli::ClaudeCode.minimum());
    }

    #[test]
    fn subscription_takes_the_api_login_away_and_auto_adds_the_sessions() {
        let env: Env = [
            ("PATH".to_string(), "/usr/bin".to_string()),
            ("HOME".to_string(), "/home/u".to_string()),
            ("ANTHROPIC_API_KEY".to_string(), "sk-env".to_string()),
            ("STEPPER_GROUP".to_string(), "x".to_string()),
        ]
        .into_iter()
        .collect();
        let mut spec = BackendSpec {
            cli: Cli::ClaudeCode,
            command: None,
            auth: BackendAuth::Subscription,
            model: None,
            login: vec![("ANTHROPIC_BASE_URL".into(), "http://x".into())],
            project_trusted: false,
        };
        let sub = spec.environment(&env);
        assert!(!sub.contains_key("ANTHROPIC_API_KEY"));
        assert!(!sub.contains_key("ANTHROPIC_BASE_URL"));
        assert!(!sub.contains_key("STEPPER_GROUP"));
        assert!(sub["PATH"].starts_with("/usr/bin:"));
        assert!(sub["PATH"].contains("/home/u/.local/bin"));
        spec.auth = BackendAuth::Auto;
        let auto = spec.environment(&env);
        assert_eq!(auto["ANTHROPIC_API_KEY"], "sk-env");
        assert_eq!(auto["ANTHROPIC_BASE_URL"], "http://x");
    }

    #[test]
    fn a_failed_login_says_how_to_sign_in() {
        let e = Cli::ClaudeCode
            .with_login_hint("Claude Code: Not logged in · Please run /login".into());
        assert!(
            e.contains("/login")
                && e.contains("ANTHROPIC_API_KEY")
                && e.contains("stepper backends"),
            "{e}"
        );
        let e = Cli::CodexCli.with_login_hint("Codex: unexpected status 401 Unauthorized".into());
        assert!(e.contains("codex login"), "{e}");
        let other = "Codex: the model refused".to_string();
        assert_eq!(Cli::CodexCli.with_login_hint(other.clone()), other);
    }

    #[test]
    fn a_missing_cli_names_its_install_command() {
        let env: Env = [("PATH".to_string(), "/nonexistent".to_string())]
            .into_iter()
            .collect();
        let e = locate(Cli::ClaudeCode, Some("/nonexistent/claude"), &env).unwrap_err();
        assert!(
            e.to_string()
                .contains("npm install -g @anthropic-ai/claude-code"),
            "{e}"
        );
        let e = locate(Cli::CodexCli, Some("no-such-codex-here"), &env).unwrap_err();
        assert!(e.to_string().contains("@openai/codex"), "{e}");
    }
}
