//! One connected server: its transport (a child spawned in its own process group and the
//! child registry, streamable HTTP, or the legacy HTTP+SSE transport), the SDK's client
//! service over it, and the tools it listed.
//!
//! The protocol era is chosen per server as the spec's versioning section has it: a
//! `server/discover` probe for the 2026-07-28 revision, and `initialize` (2025-11-25) when the
//! server answers it as a legacy server would.
//!
//! A call's failure is a `String` ([`McpServer::call`]): it becomes the tool's result, text
//! the model reads and acts on (sign in again, give another token), which no client
//! branches on. A server that cannot be used is an [`McpError`], said as a notice; signing
//! in is [`crate::oauth::OAuthError`], whose kinds the daemon answers clients with.

use std::collections::HashMap;
use std::future::Future;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[allow(deprecated)] // Root and ListRootsResult: see `Handler`.
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, ClientRequest, ProtocolVersion,
    ServerResult, Tool,
};
use rmcp::service::{ClientLifecycleMode, PeerRequestOptions, RoleClient, RunningService};
use stepper_engine::tool::{Gate, OutputSink, Sampler};
use stepper_process::group::GroupChild;
use stepper_protocol::session::Env;
use tokio::io::AsyncBufReadExt;

use crate::config::{ServerSpec, Transport};

mod handler;
pub use handler::with_defaults;
use handler::{Caller, Callers, Handler, Relist, token_key};

/// What a remote server that answers 401 is told to need.
pub const NEEDS_LOGIN: &str = "it asks for authorization (401) — sign in with \
     `stepper mcp login NAME`, or give a token in its \"headers\": \
     {\"Authorization\": \"Bearer ${TOKEN}\"}";

/// A user's sign-in to a server, run again when a call needs a wider scope (a browser round
/// trip: the caller's to give, as `stepper mcp login` is the daemon's user's).
pub type SignIn =
    Arc<dyn Fn() -> futures::future::BoxFuture<'static, Result<(), String>> + Send + Sync>;

/// Why a server cannot be used, for a notice: its name, what happened, what to do.
#[derive(Debug, Clone, thiserror::Error)]
#[error("MCP server {server:?}: {message}")]
pub struct McpError {
    pub server: String,
    pub message: String,
}

/// What a call's server may reach while it runs: where its progress goes, the gate that
/// asks the user (elicitation, sampling), and the session's model (sampling).
#[derive(Clone, Default)]
pub struct CallWith {
    pub output: Option<Arc<dyn OutputSink>>,
    pub gate: Option<Arc<dyn Gate>>,
    pub sampler: Option<Arc<dyn Sampler>>,
    /// Signs the user in again when the server refuses the call for its scope (403
    /// `insufficient_scope`); without it, the call fails saying to sign in again.
    pub sign_in: Option<SignIn>,
}

/// A signed server's sign-in: what a call that needs a wider scope signs in again with.
struct SignedWith {
    url: String,
    tokens: crate::oauth::TokenFile,
    client: Option<crate::config::OAuthClient>,
}

/// Why a call failed: the server's 403 `insufficient_scope` (with the scope it names), its
/// 401 (the token no longer holds), or anything else, said.
enum CallFailure {
    Scope(Option<String>),
    Unauthorized,
    Other(String),
}

/// The first process of a stdio server's group.
#[derive(Clone, Copy)]
struct Leader {
    pid: u32,
    reaper: bool,
}

/// A running, initialised server.
pub struct McpServer {
    pub name: String,
    service: RunningService<RoleClient, Handler>,
    /// A stdio server's process group: killed when this is dropped.
    _child: Option<Mutex<GroupChild>>,
    /// What a stdio server's memory is read from: the first process of its group, and
    /// whether that is the reaper holding the server (the server is then beneath it).
    leader: Option<Leader>,
    /// The tools it listed last.
    tools: Arc<Mutex<Vec<Tool>>>,
    progress: Arc<Mutex<HashMap<String, Arc<dyn OutputSink>>>>,
    callers: Callers,
    relist: Relist,
    calls: std::sync::atomic::AtomicU64,
    /// The protocol revision it speaks.
    pub protocol_version: String,
    /// When a turn or a call last used it (what idle means).
    used: Mutex<Instant>,
    /// Its sign-in, when its requests carry stepper's tokens.
    signed_with: Option<SignedWith>,
}

impl McpServer {
    /// Start `spec` with the session's environment `env` in `cwd` (also its root), set the
    /// session up and list its tools, all within `timeout`.
    ///
    /// The era is probed with `server/discover`; a server that answers the probe with
    /// something a legacy server would not say (an empty result, say) is tried once more
    /// with `initialize` alone, within what is left of `timeout`.
    pub async fn connect(
        spec: &ServerSpec,
        env: &Env,
        cwd: &Path,
        timeout: Duration,
    ) -> Result<Arc<McpServer>, McpError> {
        Self::connect_signed(spec, env, cwd, timeout, None).await
    }

    /// [`McpServer::connect`], a streamable HTTP server's requests signed with the tokens
    /// `tokens` holds for it (when it holds some).
    pub async fn connect_signed(
        spec: &ServerSpec,
        env: &Env,
        cwd: &Path,
        timeout: Duration,
        tokens: Option<&crate::oauth::TokenFile>,
    ) -> Result<Arc<McpServer>, McpError> {
        let started = std::time::Instant::now();
        match Self::connect_era(spec, env, cwd, timeout, tokens).await {
            // A machine client signs in by itself, and the server is tried once more.
            Err(e) if e.message.starts_with(NEEDS_LOGIN) => {
                let (
                    Some(tokens),
                    Transport::Http {
                        url,
                        sse: false,
                        oauth: Some(client),
                        ..
                    },
                ) = (tokens, &spec.transport)
                else {
                    return Err(e);
                };
                match crate::oauth::machine::sign_in_as_client(url, tokens, Some(client)).await {
                    Ok(true) => {
                        let left = timeout.saturating_sub(started.elapsed());
                        Self::connect_era(spec, env, cwd, left, Some(tokens)).await
                    }
                    Ok(false) => Err(e),
                    Err(why) => Err(McpError {
                        server: spec.name.clone(),
                        message: format!("it asks for authorization (401), and {why}"),
                    }),
                }
            }
            other => other,
        }
    }

    /// [`McpServer::connect_signed`] without the machine client's sign-in.
    async fn connect_era(
        spec: &ServerSpec,
        env: &Env,
        cwd: &Path,
        timeout: Duration,
        tokens: Option<&crate::oauth::TokenFile>,
    ) -> Result<Arc<McpServer>, McpError> {
        let started = std::time::Instant::now();
        let auto = ClientLifecycleMode::Auto {
            preferred_versions: vec![ProtocolVersion::LATEST],
            legacy_version: Some(ProtocolVersion::LATEST_WITH_INITIALIZE),
        };
        match Self::connect_with(spec, env, cwd, timeout, auto, tokens).await {
            Ok(server) => Ok(server),
            Err(e) if e.message.contains("did not initialise") => {
                let left = timeout.saturating_sub(started.elapsed());
                tracing::debug!(server = %spec.name, "discovery failed ({}); trying initialize", e.message);
                Self::connect_with(
                    spec,
                    env,
                    cwd,
                    left,
                    ClientLifecycleMode::Initialize,
                    tokens,
                )
                .await
                .map_err(|_| e)
            }
            Err(e) => Err(e),
        }
    }

    async fn connect_with(
        spec: &ServerSpec,
        env: &Env,
        cwd: &Path,
        timeout: Duration,
        lifecycle: ClientLifecycleMode,
        tokens: Option<&crate::oauth::TokenFile>,
    ) -> Result<Arc<McpServer>, McpError> {
        let fail = |message: String| McpError {
            server: spec.name.clone(),
            message,
        };
        let tools = Arc::new(Mutex::new(Vec::new()));
        let progress = Arc::new(Mutex::new(HashMap::new()));
        let callers: Callers = Arc::default();
        let relist = Relist::default();
        let handler = Handler {
            root: cwd.to_path_buf(),
            tools: Arc::clone(&tools),
            progress: Arc::clone(&progress),
            callers: Arc::clone(&callers),
            relist: relist.clone(),
            sampling: spec.sampling,
            name: spec.name.clone(),
        };
        let mut leader = None;
        let mut signed_with = None;
        let (started, child) = match &spec.transport {
            Transport::Stdio {
                command,
                args,
                env: extra,
                cwd: dir,
            } => {
                let mut child = spawn(spec, command, args, env, extra, dir.as_deref(), cwd)?;
                leader = child.child_mut().id().map(|pid| Leader {
                    pid,
                    reaper: stepper_process::reaper::installed(),
                });
                let (Some(stdout), Some(stdin)) = (
                    child.child_mut().stdout.take(),
                    child.child_mut().stdin.take(),
                ) else {
                    return Err(fail("its pipes could not be opened".into()));
                };
                let pipes = rmcp::transport::IntoTransport::<
                    RoleClient,
                    std::io::Error,
                    rmcp::transport::async_rw::TransportAdapterAsyncRW,
                >::into_transport((stdout, stdin));
                (
                    ready(handler.serve(pipes, lifecycle), timeout).await,
                    Some(child),
                )
            }
            Transport::Http {
                url,
                headers,
                sse: false,
                oauth,
            } => {
                let signed = match tokens {
                    Some(tokens) => {
                        let custom = crate::http::headers(headers).map_err(fail)?;
                        crate::oauth::signed(url, custom, tokens, oauth.as_ref())
                            .await
                            .map_err(|e| fail(e.to_string()))?
                    }
                    None => None,
                };
                let serving = match signed {
                    Some(transport) => {
                        signed_with = tokens.map(|tokens| SignedWith {
                            url: url.clone(),
                            tokens: tokens.clone(),
                            client: oauth.clone(),
                        });
                        ready(handler.serve(transport, lifecycle), timeout).await
                    }
                    None => {
                        let transport = crate::http::streamable(url, headers).map_err(fail)?;
                        ready(handler.serve(transport, lifecycle), timeout).await
                    }
                };
                (serving, None)
            }
            Transport::Http {
                url,
                headers,
                sse: true,
                ..
            } => {
                let serving = async {
                    let transport = crate::sse::SseTransport::connect(url, headers)
                        .await
                        .map_err(|e| e.to_string())?;
                    handler
                        .serve(transport, lifecycle)
                        .await
                        .map_err(|e| e.to_string())
                };
                (ready(serving, timeout).await, None)
            }
        };
        let (service, listed) = started.map_err(|why| match &spec.transport {
            Transport::Http { url, .. } if why.contains("error sending request") => fail(format!(
                "cannot reach {url} — check `url` and that the server runs"
            )),
            Transport::Http { .. } if why.contains("Auth required") => fail(NEEDS_LOGIN.into()),
            _ => fail(why),
        })?;
        *tools.lock().unwrap_or_else(|p| p.into_inner()) = listed;
        let protocol_version = service
            .peer()
            .peer_info()
            .map_or_else(|| "unknown".to_string(), |i| i.protocol_version.to_string());
        Ok(Arc::new(McpServer {
            name: spec.name.clone(),
            service,
            _child: child.map(Mutex::new),
            leader,
            tools,
            progress,
            callers,
            relist,
            calls: std::sync::atomic::AtomicU64::new(0),
            protocol_version,
            used: Mutex::new(Instant::now()),
            signed_with,
        }))
    }

    /// The tools it listed last (again on `tools/list_changed`).
    pub fn tools(&self) -> Vec<Tool> {
        self.tools.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Whether the server offers resources (`resources/list`, `resources/read`).
    pub fn has_resources(&self) -> bool {
        self.service
            .peer()
            .peer_info()
            .is_some_and(|i| i.capabilities.resources.is_some())
    }

    /// Whether the server offers prompts.
    pub fn has_prompts(&self) -> bool {
        self.service
            .peer()
            .peer_info()
            .is_some_and(|i| i.capabilities.prompts.is_some())
    }

    /// Its resources, as JSON (`uri`, `name`, `description`, `mimeType`…).
    pub async fn resources(&self, timeout: Duration) -> Result<Vec<serde_json::Value>, String> {
        self.touch();
        let listed = tokio::time::timeout(timeout, self.service.list_all_resources())
            .await
            .map_err(|_| "it did not list its resources in time".to_string())?
            .map_err(|e| format!("it did not list its resources: {e}"))?;
        Ok(listed
            .iter()
            .filter_map(|r| serde_json::to_value(r).ok())
            .collect())
    }

    /// The contents of the resource `uri`, as JSON (`text` or `blob` each).
    pub async fn read_resource(
        &self,
        uri: &str,
        timeout: Duration,
    ) -> Result<Vec<serde_json::Value>, String> {
        self.touch();
        let params = rmcp::model::ReadResourceRequestParams::new(uri);
        let read = tokio::time::timeout(timeout, self.service.read_resource(params))
            .await
            .map_err(|_| format!("no answer within {} ms", timeout.as_millis()))?
            .map_err(|e| format!("it did not read {uri}: {e}"))?;
        Ok(read
            .contents
            .iter()
            .filter_map(|c| serde_json::to_value(c).ok())
            .collect())
    }

    /// Its prompts, as it lists them.
    pub async fn prompts(&self, timeout: Duration) -> Result<Vec<rmcp::model::Prompt>, String> {
        if !self.has_prompts() {
            return Ok(Vec::new());
        }
        tokio::time::timeout(timeout, self.service.list_all_prompts())
            .await
            .map_err(|_| "it did not list its prompts in time".to_string())?
            .map_err(|e| format!("it did not list its prompts: {e}"))
    }

    /// The messages of the prompt `name` with `arguments`, as JSON.
    pub async fn prompt(
        &self,
        name: &str,
        arguments: serde_json::Map<String, serde_json::Value>,
        timeout: Duration,
    ) -> Result<Vec<serde_json::Value>, String> {
        self.touch();
        let mut params = rmcp::model::GetPromptRequestParams::new(name);
        params.arguments = Some(arguments);
        let got = tokio::time::timeout(timeout, self.service.get_prompt(params))
            .await
            .map_err(|_| format!("no answer within {} ms", timeout.as_millis()))?
            .map_err(|e| format!("it did not give the prompt {name:?}: {e}"))?;
        Ok(got
            .messages
            .iter()
            .filter_map(|m| serde_json::to_value(m).ok())
            .collect())
    }

    /// Whether the server still answers (its transport is open).
    pub fn is_alive(&self) -> bool {
        !self.service.is_closed() && !self.service.is_transport_closed()
    }

    /// The resident memory of a stdio server's processes, in bytes (the server and what it
    /// started, not the reaper holding it); `None` for a remote server, or where the system
    /// does not say.
    pub fn memory(&self) -> Option<u64> {
        let leader = self.leader?;
        if leader.reaper {
            stepper_process::memory::resident_beneath(leader.pid)
        } else {
            stepper_process::memory::tree_resident(leader.pid)
        }
    }

    /// When a turn or a call last used it.
    pub fn last_used(&self) -> Instant {
        *self.used.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Note a use: a server in use is not idle.
    pub fn touch(&self) {
        *self.used.lock().unwrap_or_else(|p| p.into_inner()) = Instant::now();
    }

    /// How long since a turn or a call used it.
    pub fn idle_for(&self) -> Duration {
        self.used
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .elapsed()
    }

    /// Call `tool` with `arguments` (a JSON object), within `timeout`; the server's progress
    /// notifications of the call go to `output`, its elicitations to `elicitor`. A call past
    /// `timeout` is cancelled at the server (`notifications/cancelled`).
    pub async fn call(
        &self,
        tool: &str,
        arguments: serde_json::Value,
        timeout: Duration,
        with: CallWith,
    ) -> Result<CallToolResult, String> {
        self.touch();
        let call = self
            .calls
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if let Some(gate) = with.gate {
            self.callers
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(Caller {
                    call,
                    gate,
                    sampler: with.sampler,
                });
        }
        let first = self
            .call_inner(tool, arguments.clone(), timeout, with.output.clone())
            .await;
        let result = self
            .authorized_again(first, tool, arguments, timeout, with.output, with.sign_in)
            .await;
        // A change the server announced during the call is listed before the call returns.
        self.relist.settled().await;
        self.callers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|c| c.call != call);
        result
    }

    /// What became of a call (`first`) the server refused for its authorization: signed in
    /// again — for the wider scope a 403 `insufficient_scope` names, or afresh after a 401
    /// for a machine client — the call is tried once more; otherwise said, with what to do.
    async fn authorized_again(
        &self,
        first: Result<CallToolResult, CallFailure>,
        tool: &str,
        arguments: serde_json::Value,
        timeout: Duration,
        output: Option<Arc<dyn OutputSink>>,
        sign_in: Option<SignIn>,
    ) -> Result<CallToolResult, String> {
        let mut result = first;
        if let Err(CallFailure::Scope(required)) = &result {
            // Signed in again for the wider scope, the call is tried once more.
            result = match self.widen(required.as_deref(), sign_in.as_ref()).await {
                Ok(wanted) => match self
                    .call_inner(tool, arguments.clone(), timeout, output.clone())
                    .await
                {
                    Err(CallFailure::Scope(_)) => Err(CallFailure::Other(format!(
                        "the server still refuses the call for its scope (403 \
                         insufficient_scope), signed in again with {:?} — its authorization \
                         server does not grant what it asks for: tell the server's owner",
                        wanted.join(" ")
                    ))),
                    other => other,
                },
                Err(why) => Err(CallFailure::Other(why)),
            };
        }
        if let (Err(CallFailure::Unauthorized), Some(signed)) = (&result, &self.signed_with) {
            // A machine client's token ran out or was revoked: it signs in again at once.
            let again = crate::oauth::machine::sign_in_as_client(
                &signed.url,
                &signed.tokens,
                signed.client.as_ref(),
            )
            .await;
            result = match again {
                Ok(true) => self.call_inner(tool, arguments, timeout, output).await,
                Ok(false) => Err(CallFailure::Unauthorized),
                Err(why) => Err(CallFailure::Other(format!(
                    "the server asks for authorization again (401), and {why}"
                ))),
            };
        }
        result.map_err(|e| match e {
            CallFailure::Scope(required) => format!(
                "the server refuses the call for its scope (403 insufficient_scope{})",
                required.map_or_else(String::new, |r| format!(", it needs {r:?}"))
            ),
            CallFailure::Unauthorized => format!(
                "the server asks for authorization again (401): sign in with `stepper mcp login \
                 {}`, then try again",
                self.name
            ),
            CallFailure::Other(why) => why,
        })
    }

    /// Sign in again for what a call was refused for (`required`, the scope its 403 named,
    /// with what was granted): at once for a machine client, by `sign_in` for a user when
    /// the caller gives one. The scopes asked for, or why the call cannot go on.
    async fn widen(
        &self,
        required: Option<&str>,
        sign_in: Option<&SignIn>,
    ) -> Result<Vec<String>, String> {
        let Some(signed) = &self.signed_with else {
            return Err(
                "the server refuses the call for its scope (403 insufficient_scope): \
                 the token in its \"headers\" does not allow it — give one that does"
                    .into(),
            );
        };
        let Some(required) = required.filter(|r| !r.trim().is_empty()) else {
            return Err(
                "the server refuses the call for its scope (403 insufficient_scope) \
                 without naming the scope it needs: tell the server's owner"
                    .into(),
            );
        };
        let wanted = signed
            .tokens
            .want(&signed.url, required)
            .map_err(|e| format!("cannot keep the scope the call needs: {e}"))?;
        tracing::info!(server = %self.name, scope = %wanted.join(" "), "the call needs a wider scope: signing in again");
        let machine = crate::oauth::machine::sign_in_as_client(
            &signed.url,
            &signed.tokens,
            signed.client.as_ref(),
        )
        .await
        .map_err(|e| e.to_string())?;
        if machine {
            return Ok(wanted);
        }
        match sign_in {
            Some(sign_in) => sign_in().await.map(|()| wanted),
            None => Err(format!(
                "this call needs more access than the sign-in granted (scope {:?}) — sign in \
                 again with `stepper mcp login {}` (it asks for that scope), then try again",
                wanted.join(" "),
                self.name
            )),
        }
    }

    async fn call_inner(
        &self,
        tool: &str,
        arguments: serde_json::Value,
        timeout: Duration,
        output: Option<Arc<dyn OutputSink>>,
    ) -> Result<CallToolResult, CallFailure> {
        let other = CallFailure::Other;
        let mut params = CallToolRequestParams::new(tool.to_string());
        params.arguments = match arguments {
            serde_json::Value::Object(map) => Some(map),
            serde_json::Value::Null => None,
            value => {
                return Err(other(format!(
                    "the arguments must be an object, not {value}"
                )));
            }
        };
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let mut options = PeerRequestOptions::no_options();
        options.timeout = Some(timeout);
        let handle = self
            .service
            .send_cancellable_request(request, options)
            .await
            .map_err(|e| {
                refusal(&e).unwrap_or_else(|| other(format!("the call could not be sent: {e}")))
            })?;
        // The SDK chose the call's progress token; its notifications go to the call's output.
        let token = token_key(&handle.progress_token);
        if let Some(output) = output {
            self.progress
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(token.clone(), output);
        }
        let answer = handle.await_response().await;
        self.progress
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&token);
        self.touch();
        match answer {
            Ok(ServerResult::CallToolResult(result)) => Ok(result),
            Ok(_) => Err(other(
                "the server answered the call with something else than a result".into(),
            )),
            Err(rmcp::ServiceError::Timeout { .. }) => Err(other(format!(
                "no answer within {} ms (STEPPER_MCP_TOOL_TIMEOUT_MS): the call was cancelled",
                timeout.as_millis()
            ))),
            Err(e) => {
                Err(refusal(&e)
                    .unwrap_or_else(|| other(format!("the server failed the call: {e}"))))
            }
        }
    }
}

/// How the server refused a request for its authorization: 403 `insufficient_scope` (with
/// the scope it names), or 401; `None` when the request failed otherwise.
fn refusal(error: &rmcp::ServiceError) -> Option<CallFailure> {
    use rmcp::transport::streamable_http_client::{AuthRequiredError, InsufficientScopeError};
    let rmcp::ServiceError::TransportSend(sent) = error else {
        return None;
    };
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(sent.error.as_ref());
    while let Some(current) = source {
        if let Some(refused) = current.downcast_ref::<InsufficientScopeError>() {
            return Some(CallFailure::Scope(
                refused.get_required_scope().map(str::to_string),
            ));
        }
        if current.downcast_ref::<AuthRequiredError>().is_some() {
            return Some(CallFailure::Unauthorized);
        }
        source = current.source();
    }
    None
}

/// Start a stdio server's command in its own process group; its stderr goes to the log.
fn spawn(
    spec: &ServerSpec,
    command: &str,
    args: &[String],
    env: &Env,
    extra: &std::collections::BTreeMap<String, String>,
    dir: Option<&Path>,
    cwd: &Path,
) -> Result<GroupChild, McpError> {
    let dir = dir.map_or_else(|| cwd.to_path_buf(), |d| cwd.join(d));
    // Under the reaper: what the server starts dies with it, however it detaches. Found
    // first, so that a missing command is said as such (the reaper would only exit 127).
    let path = extra
        .get("PATH")
        .or_else(|| env.get("PATH"))
        .map(std::ffi::OsStr::new);
    if stepper_process::reaper::installed() {
        stepper_process::reaper::find_program(command.as_ref(), path, &dir).map_err(|e| {
            McpError {
                server: spec.name.clone(),
                message: format!("cannot start `{command}`: {e} — check `command` and PATH"),
            }
        })?;
    }
    let mut cmd = stepper_process::reaper::command(command);
    cmd.args(args)
        .env_clear()
        .envs(env)
        .envs(extra)
        .current_dir(&dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = stepper_process::group::spawn(cmd).map_err(|e| McpError {
        server: spec.name.clone(),
        message: format!("cannot start `{command}`: {e} — check `command` and PATH"),
    })?;
    if let Some(stderr) = child.child_mut().stderr.take() {
        // What a server says on stderr is for the daemon's log, not the session.
        let name = spec.name.clone();
        tokio::spawn(async move {
            let mut lines = tokio::io::BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                tracing::debug!(server = %name, "{line}");
            }
        });
    }
    Ok(child)
}

/// The session set up and the tools listed, within `timeout`.
async fn ready<E: std::fmt::Display>(
    serving: impl Future<Output = Result<RunningService<RoleClient, Handler>, E>>,
    timeout: Duration,
) -> Result<(RunningService<RoleClient, Handler>, Vec<Tool>), String> {
    let started = async {
        let service = serving
            .await
            .map_err(|e| format!("it did not initialise: {e}"))?;
        let tools = service
            .list_all_tools()
            .await
            .map_err(|e| format!("it did not list its tools: {e}"))?;
        Ok::<_, String>((service, tools))
    };
    match tokio::time::timeout(timeout, started).await {
        Ok(done) => done,
        Err(_) => Err(format!(
            "it did not answer within {} ms (STEPPER_MCP_CONNECT_TIMEOUT_MS)",
            timeout.as_millis()
        )),
    }
}
