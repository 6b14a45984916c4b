//! One connected server: its child (own process group, in the child registry), the SDK's
//! client service over the child's pipes, and the tools it listed.

use std::collections::HashMap;
use std::future::Future;
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, ClientRequest, NumberOrString,
    ProgressNotificationParam, ProgressToken, ServerResult, Tool,
};
use rmcp::service::PeerRequestOptions;
use rmcp::service::{RoleClient, RunningService};
use stepper_engine::tool::OutputSink;
use stepper_process::group::GroupChild;
use stepper_protocol::session::Env;
use tokio::io::AsyncBufReadExt;

use crate::config::{ServerSpec, Transport};

/// Why a server cannot be used, for a notice: its name, what happened, what to do.
#[derive(Debug, Clone, thiserror::Error)]
#[error("MCP server {server:?}: {message}")]
pub struct McpError {
    pub server: String,
    pub message: String,
}

/// What the client does with what a server sends on its own: a changed tool list is noted,
/// to be listed again before the next turn takes the server's tools.
/// Progress of a running call goes to that call's output (what clients see stream).
#[derive(Clone, Default)]
struct Handler {
    tools_changed: Arc<AtomicBool>,
    /// Running calls' outputs, by progress token.
    progress: Arc<Mutex<HashMap<String, Arc<dyn OutputSink>>>>,
}

impl rmcp::ClientHandler for Handler {
    fn on_tool_list_changed(
        &self,
        _: rmcp::service::NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + Send + '_ {
        self.tools_changed.store(true, Ordering::SeqCst);
        std::future::ready(())
    }

    fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _: rmcp::service::NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + Send + '_ {
        let key = token_key(&params.progress_token);
        let sink = self
            .progress
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&key)
            .cloned();
        if let Some(sink) = sink {
            let amount = match params.total {
                Some(total) => format!("{}/{}", params.progress, total),
                None => params.progress.to_string(),
            };
            let line = match &params.message {
                Some(message) => format!("progress {amount}: {message}\n"),
                None => format!("progress {amount}\n"),
            };
            sink.delta(&line);
        }
        std::future::ready(())
    }
}

fn token_key(token: &ProgressToken) -> String {
    match &token.0 {
        NumberOrString::Number(n) => n.to_string(),
        NumberOrString::String(s) => s.to_string(),
    }
}

/// A running, initialised server.
pub struct McpServer {
    pub name: String,
    service: RunningService<RoleClient, Handler>,
    /// The server's process group: killed when this is dropped.
    _child: Mutex<GroupChild>,
    /// The tools it listed last.
    tools: Mutex<Vec<Tool>>,
    tools_changed: Arc<AtomicBool>,
    progress: Arc<Mutex<HashMap<String, Arc<dyn OutputSink>>>>,
}

impl McpServer {
    /// Start `spec` with the session's environment `env` in `cwd`, initialise it and list
    /// its tools, all within `timeout`.
    pub async fn connect(
        spec: &ServerSpec,
        env: &Env,
        cwd: &Path,
        timeout: Duration,
    ) -> Result<Arc<McpServer>, McpError> {
        let fail = |message: String| McpError {
            server: spec.name.clone(),
            message,
        };
        let (command, args, extra, dir) = match &spec.transport {
            Transport::Stdio {
                command,
                args,
                env,
                cwd: dir,
            } => (command, args, env, dir),
            Transport::Http { sse, .. } => {
                let kind = if *sse { "SSE" } else { "streamable HTTP" };
                return Err(fail(format!(
                    "{kind} servers are not supported yet — only stdio servers (`command`) run for now"
                )));
            }
        };
        let mut cmd = tokio::process::Command::new(command);
        cmd.args(args)
            .env_clear()
            .envs(env)
            .envs(extra)
            .current_dir(
                dir.as_ref()
                    .map_or_else(|| cwd.to_path_buf(), |d| cwd.join(d)),
            )
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = stepper_process::group::spawn(cmd).map_err(|e| {
            fail(format!(
                "cannot start `{command}`: {e} — check `command` and PATH"
            ))
        })?;
        let (Some(stdout), Some(stdin)) = (
            child.child_mut().stdout.take(),
            child.child_mut().stdin.take(),
        ) else {
            return Err(fail("its pipes could not be opened".into()));
        };
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
        let handler = Handler::default();
        let tools_changed = Arc::clone(&handler.tools_changed);
        let progress = Arc::clone(&handler.progress);
        let started = async {
            let service = handler
                .serve((stdout, stdin))
                .await
                .map_err(|e| format!("it did not initialise: {e}"))?;
            let tools = service
                .list_all_tools()
                .await
                .map_err(|e| format!("it did not list its tools: {e}"))?;
            Ok::<_, String>((service, tools))
        };
        let (service, tools) = match tokio::time::timeout(timeout, started).await {
            Ok(Ok(done)) => done,
            Ok(Err(why)) => return Err(fail(why)),
            Err(_) => {
                return Err(fail(format!(
                    "it did not answer within {} ms (STEPPER_MCP_CONNECT_TIMEOUT_MS)",
                    timeout.as_millis()
                )));
            }
        };
        // What changed before the first listing is in it.
        tools_changed.store(false, Ordering::SeqCst);
        Ok(Arc::new(McpServer {
            name: spec.name.clone(),
            service,
            _child: Mutex::new(child),
            tools: Mutex::new(tools),
            tools_changed,
            progress,
        }))
    }

    /// The tools it listed last.
    pub fn tools(&self) -> Vec<Tool> {
        self.tools.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// List the tools again if the server said they changed (`tools/list_changed`).
    pub async fn refresh_tools(&self, timeout: Duration) -> Result<(), McpError> {
        if !self.tools_changed.swap(false, Ordering::SeqCst) {
            return Ok(());
        }
        let listed = tokio::time::timeout(timeout, self.service.list_all_tools()).await;
        match listed {
            Ok(Ok(tools)) => {
                *self.tools.lock().unwrap_or_else(|p| p.into_inner()) = tools;
                Ok(())
            }
            Ok(Err(e)) => Err(McpError {
                server: self.name.clone(),
                message: format!("it did not list its changed tools: {e}"),
            }),
            Err(_) => Err(McpError {
                server: self.name.clone(),
                message: "it did not list its changed tools in time".into(),
            }),
        }
    }

    /// Whether the server still answers (its pipes are open).
    pub fn is_alive(&self) -> bool {
        !self.service.is_closed() && !self.service.is_transport_closed()
    }

    /// Call `tool` with `arguments` (a JSON object), within `timeout`; the server's progress
    /// notifications of the call go to `output`. A call past `timeout` is cancelled at the
    /// server (`notifications/cancelled`).
    pub async fn call(
        &self,
        tool: &str,
        arguments: serde_json::Value,
        timeout: Duration,
        output: Option<Arc<dyn OutputSink>>,
    ) -> Result<CallToolResult, String> {
        let mut params = CallToolRequestParams::new(tool.to_string());
        params.arguments = match arguments {
            serde_json::Value::Object(map) => Some(map),
            serde_json::Value::Null => None,
            other => return Err(format!("the arguments must be an object, not {other}")),
        };
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let mut options = PeerRequestOptions::no_options();
        options.timeout = Some(timeout);
        let handle = self
            .service
            .send_cancellable_request(request, options)
            .await
            .map_err(|e| format!("the call could not be sent: {e}"))?;
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
        match answer {
            Ok(ServerResult::CallToolResult(result)) => Ok(result),
            Ok(_) => Err("the server answered the call with something else than a result".into()),
            Err(rmcp::ServiceError::Timeout { .. }) => Err(format!(
                "no answer within {} ms (STEPPER_MCP_TOOL_TIMEOUT_MS): the call was cancelled",
                timeout.as_millis()
            )),
            Err(e) => Err(format!("the server failed the call: {e}")),
        }
    }
}
