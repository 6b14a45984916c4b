//! One connected server: its child (own process group, in the child registry), the SDK's
//! client service over the child's pipes, and the tools it listed.

use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult, Tool};
use rmcp::service::{RoleClient, RunningService};
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

/// A running, initialised server.
pub struct McpServer {
    pub name: String,
    service: RunningService<RoleClient, ()>,
    /// The server's process group: killed when this is dropped.
    _child: Mutex<GroupChild>,
    /// The tools it listed when it started.
    pub tools: Vec<Tool>,
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
        let started = async {
            let service =
                ().serve((stdout, stdin))
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
        Ok(Arc::new(McpServer {
            name: spec.name.clone(),
            service,
            _child: Mutex::new(child),
            tools,
        }))
    }

    /// Whether the server still answers (its pipes are open).
    pub fn is_alive(&self) -> bool {
        !self.service.is_closed() && !self.service.is_transport_closed()
    }

    /// Call `tool` with `arguments` (a JSON object), within `timeout`.
    pub async fn call(
        &self,
        tool: &str,
        arguments: serde_json::Value,
        timeout: Duration,
    ) -> Result<CallToolResult, String> {
        let mut params = CallToolRequestParams::new(tool.to_string());
        params.arguments = match arguments {
            serde_json::Value::Object(map) => Some(map),
            serde_json::Value::Null => None,
            other => return Err(format!("the arguments must be an object, not {other}")),
        };
        match tokio::time::timeout(timeout, self.service.call_tool(params)).await {
            Ok(Ok(result)) => Ok(result),
            Ok(Err(e)) => Err(format!("the server failed the call: {e}")),
            Err(_) => Err(format!(
                "no answer within {} ms (STEPPER_MCP_TOOL_TIMEOUT_MS): the call was abandoned",
                timeout.as_millis()
            )),
        }
    }
}
