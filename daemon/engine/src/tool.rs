//! The tool boundary: one `Tool` trait for built-in and MCP tools alike, and the `ToolCx`
//! each call runs in. `cx.gate(request)` is the only way a tool asks for permission, so every
//! file touched and every command run passes the same checks.
//!
//! A bash `GateRequest` carries the command's folder and environment (never printed: it holds
//! keys). `Gate::elicit` asks the people attached for what an MCP server wants; a gate with nobody
//! to ask declines.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use stepper_protocol::session::Env;
use tokio_util::sync::CancellationToken;

pub use crate::provider::ToolSpec;

/// What a tool asks to do, for the permission gate.
#[derive(Debug, Clone, PartialEq)]
pub enum GateRequest {
    /// Read a file or list a directory (resolved, absolute).
    Read { path: PathBuf },
    /// Change a file: `diff` is what the user would approve.
    Edit { path: PathBuf, diff: String },
    /// Run a shell command line in `cwd` with `env` (what bash will have: the gate judges
    /// paths from there and finds programs on its `PATH`).
    Bash {
        command: String,
        cwd: PathBuf,
        env: CommandEnv,
    },
    /// Fetch a URL.
    WebFetch { url: String },
    /// Run a command line again outside the OS sandbox, after it failed inside it
    /// (`failure`: what it printed). Always asked (deny rules still refuse it).
    Unsandboxed {
        command: String,
        cwd: PathBuf,
        env: CommandEnv,
        failure: String,
    },
    /// Call a tool of an MCP server.
    Mcp {
        server: String,
        tool: String,
        arguments: String,
        /// What the server says of the tool (title, read-only, destructive…), shown in
        /// the approval; a hint, never a reason to allow.
        annotations: Option<String>,
    },
    /// Use a tool of another agent CLI driven as a back-end that none of the above
    /// describes (Claude Code's `Task`, `WebSearch`, `NotebookEdit`…): `input` is its JSON.
    Tool { name: String, input: String },
}

/// A command's environment, shared, and never printed: it holds the session's keys.
#[derive(Clone, Default, PartialEq)]
pub struct CommandEnv(pub Arc<Env>);

impl std::fmt::Debug for CommandEnv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CommandEnv({} variables)", self.0.len())
    }
}

/// The gate's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Allow,
    /// Refused, and why (a rule, or the user's answer).
    Deny(String),
    /// Refused, and the turn ends after this step (a `PermissionRequest` hook's
    /// `interrupt`).
    DenyAndStop(String),
    /// Allowed, with the call's input changed first (a `PermissionRequest` hook's
    /// `updatedInput`, in the hook's spelling): the call runs again with it.
    AllowChanged(serde_json::Value),
}

/// A server's request for the user's input while its tool runs (an MCP elicitation).
#[derive(Debug, Clone, PartialEq)]
pub struct Elicitation {
    pub server: String,
    pub message: String,
    /// A flat JSON Schema object: the form's fields.
    pub schema: serde_json::Value,
}

/// What the user answered an [`Elicitation`].
#[derive(Debug, Clone, PartialEq)]
pub enum ElicitAnswer {
    /// With the fields entered, by name.
    Accept(serde_json::Map<String, serde_json::Value>),
    Decline,
    Cancel,
}

/// A server's request to use the session's model (MCP sampling): the conversation it gives,
/// as (role, text), with its instructions and a token limit.
#[derive(Debug, Clone, PartialEq)]
pub struct Sampling {
    pub server: String,
    pub messages: Vec<(crate::Role, String)>,
    pub system: Option<String>,
    pub max_tokens: u32,
}

/// Answers [`Sampling`] with the session's model: the text, and the model that wrote it.
pub trait Sampler: Send + Sync {
    fn sample<'a>(
        &'a self,
        request: &'a Sampling,
    ) -> BoxFuture<'a, Result<(String, String), String>>;
}

/// Decides whether a request may proceed, asking a person when the rules say so.
pub trait Gate: Send + Sync {
    fn check<'a>(&'a self, request: &'a GateRequest) -> BoxFuture<'a, Decision>;

    /// Ask the people attached for what `request` wants. A gate with nobody to ask
    /// declines.
    fn elicit<'a>(&'a self, request: &'a Elicitation) -> BoxFuture<'a, ElicitAnswer> {
        let _ = request;
        Box::pin(async { ElicitAnswer::Decline })
    }

    /// `check`, with what a hook settled (`None`: nothing). A gate that knows no rules may
    /// ignore it.
    fn check_hinted<'a>(
        &'a self,
        request: &'a GateRequest,
        hint: Option<&'a crate::hooks::GateHint>,
    ) -> BoxFuture<'a, Decision> {
        let _ = hint;
        self.check(request)
    }
}

/// A gate that allows everything: `auto` mode with no rules, and tests.
pub struct AllowAll;

impl Gate for AllowAll {
    fn check<'a>(&'a self, _: &'a GateRequest) -> BoxFuture<'a, Decision> {
        Box::pin(async { Decision::Allow })
    }
}

/// Where a running tool's output goes while it runs (`ToolOutputDelta` events).
pub trait OutputSink: Send + Sync {
    fn delta(&self, text: &str);
}

/// Output nobody watches.
pub struct NoOutput;

impl OutputSink for NoOutput {
    fn delta(&self, _: &str) {}
}

/// How the session's commands are confined: a command line runs as `program`, then
/// `prefix`, then the command (`bash -c LINE`). Made by the daemon from the sandbox policy
/// (`stepperd sandbox …` on Linux, `sandbox-exec -p …` on macOS).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandSandbox {
    pub program: PathBuf,
    pub prefix: Vec<std::ffi::OsString>,
    /// The helper's exit code when it could not restrict itself (the command did not run).
    pub helper_failed: Option<i32>,
    /// The sandbox holds the command's processes itself (a PID namespace whose end kills
    /// all in it): no reaper is needed around it.
    pub holds_processes: bool,
}

/// The context of one tool call.
#[derive(Clone)]
pub struct ToolCx {
    /// Where relative paths start (the session's folder).
    pub cwd: PathBuf,
    /// The project's root: paths outside it ask.
    pub project_root: PathBuf,
    /// The session's environment, for commands.
    pub env: Env,
    pub cancel: CancellationToken,
    pub gate: Arc<dyn Gate>,
    pub output: Arc<dyn OutputSink>,
    /// The OS sandbox commands run in; `None` runs them as they are.
    pub sandbox: Option<Arc<CommandSandbox>>,
    /// What a hook settled about this call's permission.
    pub hint: Option<crate::hooks::GateHint>,
}

impl ToolCx {
    /// A context that allows everything and discards output: for tests and benchmarks.
    pub fn permissive(cwd: &Path) -> ToolCx {
        ToolCx {
            cwd: cwd.to_path_buf(),
            project_root: cwd.to_path_buf(),
            env: std::env::vars().collect(),
            cancel: CancellationToken::new(),
            gate: Arc::new(AllowAll),
            output: Arc::new(NoOutput),
            sandbox: None,
            hint: None,
        }
    }

    /// Ask permission; the only way a tool does.
    pub async fn gate(&self, request: GateRequest) -> Result<(), ToolError> {
        match self.gate.check_hinted(&request, self.hint.as_ref()).await {
            Decision::Allow => Ok(()),
            Decision::Deny(why) => Err(ToolError::Denied(why)),
            Decision::DenyAndStop(why) => Err(ToolError::DeniedAndStopped(why)),
            Decision::AllowChanged(input) => Err(ToolError::Changed(input)),
        }
    }

    /// `path` made absolute against the session's folder.
    pub fn resolve(&self, path: &str) -> PathBuf {
        let p = Path::new(path);
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            self.cwd.join(p)
        }
    }
}

/// Why a tool call failed. The message goes to the model, which can often fix its call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolError {
    #[error("invalid arguments: {0}")]
    InvalidArguments(String),
    #[error("not allowed: {0}")]
    Denied(String),
    /// Not allowed, and the turn ends after this step.
    #[error("not allowed: {0}")]
    DeniedAndStopped(String),
    /// Allowed once its input is this (in a hook's spelling): the agent runs the call again
    /// with it, as allowed. A tool asks before it acts, so nothing was done.
    #[error("the call's input was changed by a hook")]
    Changed(serde_json::Value),
    /// A hook refused the call.
    #[error("blocked by a hook: {0}")]
    Blocked(String),
    #[error("{0}")]
    Failed(String),
    #[error("cancelled")]
    Cancelled,
    #[error("timed out after {0:?}")]
    TimedOut(Duration),
}

/// Structured facts about a call, for clients (the model gets `content`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolDetails {
    pub exit_code: Option<i32>,
    /// A unified diff of what an edit changed.
    pub diff: Option<String>,
    /// Files the call changed (absolute).
    pub changed: Vec<PathBuf>,
    /// The session's todo list, when the call replaced it.
    pub todos: Option<Vec<stepper_protocol::TodoItem>>,
    /// The file a `read` showed as a picture or PDF, as it is on disk (the model may get the
    /// picture scaled down: `ToolOutput::media` says what it got).
    pub origin: Option<MediaOrigin>,
}

pub use crate::provider::MediaOrigin;

/// A tool's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    /// What the model reads.
    pub content: String,
    pub details: ToolDetails,
    /// Images and documents the model sees beside `content` (`read` of a picture or PDF).
    pub media: Vec<crate::provider::Media>,
}

impl ToolOutput {
    pub fn text(content: impl Into<String>) -> ToolOutput {
        ToolOutput {
            content: content.into(),
            details: ToolDetails::default(),
            media: Vec::new(),
        }
    }
}

pub type ToolResult = Result<ToolOutput, ToolError>;

/// Tools that come and go while a turn runs (an MCP server's, as it starts or says its list
/// changed): read again before every model call.
pub trait ToolSource: Send + Sync {
    fn tools(&self) -> Vec<Arc<dyn Tool>>;
}

/// A tool the model can call.
pub trait Tool: Send + Sync {
    fn spec(&self) -> ToolSpec;

    /// Whether the call only reads (read-only calls may run in parallel).
    fn read_only(&self) -> bool {
        false
    }

    fn call<'a>(&'a self, args: serde_json::Value, cx: &'a ToolCx) -> BoxFuture<'a, ToolResult>;
}

/// The arguments as `T`, or an error the model can act on.
pub fn parse_args<T: serde::de::DeserializeOwned>(args: serde_json::Value) -> Result<T, ToolError> {
    serde_json::from_value(args).map_err(|e| ToolError::InvalidArguments(e.to_string()))
}
