//! The daemon's MCP servers: started on the first turn of a project that needs them,
//! shared by that project's sessions (one per folder and configuration), started again
//! when one died. Their tools join each turn's tools.
//!
//! Only servers in the user's own `setting.json` run for now: a server a project's files
//! name runs a command from the repository, and waits for the approval flow (Claude Code's
//! `.mcp.json` approval) to come; until then such a server is named in a notice and left out.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use stepper_engine::config::Settings;
use stepper_engine::tool::Tool;
use stepper_mcp::{McpServer, McpTool, parse_servers};
use stepper_protocol::session::Env;

#[derive(Default)]
pub struct McpPool {
    /// By folder and server configuration.
    servers: tokio::sync::Mutex<HashMap<String, Arc<McpServer>>>,
}

impl McpPool {
    /// The tools of the servers a turn in `cwd` has (`user`: the user's own settings,
    /// `merged`: every file's), starting those that do not run; what went wrong, as notices.
    pub async fn tools(
        &self,
        cwd: &Path,
        user: &Settings,
        merged: &Settings,
        env: &Env,
    ) -> (Vec<Arc<dyn Tool>>, Vec<String>) {
        let (specs, mut notices) = parse_servers(&user.mcp_servers, env);
        let project: Vec<&str> = merged
            .mcp_servers
            .iter()
            .filter(|(name, value)| user.mcp_servers.get(*name) != Some(*value))
            .map(|(name, _)| name.as_str())
            .collect();
        if !project.is_empty() {
            notices.push(format!(
                "MCP servers from the project's settings are not started: {} — a project's \
                 servers wait for an approval step that is not built yet; to use one now, \
                 put it in your own ~/.config/stepper/setting.json",
                project.join(", ")
            ));
        }
        if specs.is_empty() {
            return (Vec::new(), notices);
        }
        let mut servers = self.servers.lock().await;
        let key = |spec: &stepper_mcp::ServerSpec| format!("{}\u{0}{}", cwd.display(), spec.key());
        // A server that died is started again.
        servers.retain(|_, s| s.is_alive());
        let missing: Vec<_> = specs
            .iter()
            .filter(|s| !servers.contains_key(&key(s)))
            .collect();
        let timeout = stepper_mcp::connect_timeout();
        let started =
            futures::future::join_all(missing.iter().map(|spec| async move {
                (*spec, McpServer::connect(spec, env, cwd, timeout).await)
            }))
            .await;
        for (spec, result) in started {
            match result {
                Ok(server) => {
                    tracing::info!(server = %spec.name, tools = server.tools.len(), "MCP server started");
                    servers.insert(key(spec), server);
                }
                Err(e) => notices.push(format!("{e} — its tools are left out of this turn")),
            }
        }
        let tools = specs
            .iter()
            .filter_map(|spec| servers.get(&key(spec)))
            .flat_map(McpTool::all)
            .collect();
        (tools, notices)
    }
}
