//! The daemon's MCP servers: started on the first turn of a project that needs them,
//! shared by that project's sessions (one per folder and configuration), started again
//! when one died. Their tools join each turn's tools.
//!
//! Servers in the user's own `setting.json` run. A server a project names (its `.mcp.json`,
//! Claude Code's file, or its `.stepper/setting.json`) runs a command from the repository,
//! so it runs only once the user approved it, as Claude Code has it:
//! `enableAllProjectMcpServers`, `enabledMcpjsonServers`, `disabledMcpjsonServers` — read from
//! the user's `setting.json` and the project's git-ignored `setting.local.json` only, never
//! from files the repository ships.

use std::collections::{BTreeMap, HashMap};
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
    /// `trusted`: those and the project's `setting.local.json`, `merged`: every file's),
    /// starting those that do not run; what went wrong, as notices.
    pub async fn tools(
        &self,
        cwd: &Path,
        user: &Settings,
        trusted: &Settings,
        merged: &Settings,
        env: &Env,
    ) -> (Vec<Arc<dyn Tool>>, Vec<String>) {
        let mut notices = Vec::new();
        // The project's servers: its settings' (those the user's do not name the same) and
        // its `.mcp.json`.
        let mut project: BTreeMap<String, serde_json::Value> = merged
            .mcp_servers
            .iter()
            .filter(|(name, value)| user.mcp_servers.get(*name) != Some(*value))
            .map(|(n, v)| (n.clone(), v.clone()))
            .collect();
        match mcp_json(cwd) {
            Ok(Some(servers)) => project.extend(servers),
            Ok(None) => {}
            Err(why) => notices.push(why),
        }
        let mut servers = user.mcp_servers.clone();
        let mut waiting = Vec::new();
        for (name, value) in project {
            let refused = trusted.disabled_mcpjson_servers.contains(&name);
            let approved = trusted.enable_all_project_mcp_servers == Some(true)
                || trusted.enabled_mcpjson_servers.contains(&name);
            if approved && !refused {
                servers.insert(name, value);
            } else if !refused {
                waiting.push(name);
            }
        }
        if !waiting.is_empty() {
            notices.push(format!(
                "the project's MCP servers {} are not approved, so they do not run — approve them \
                 with \"enabledMcpjsonServers\": [{}] (or \"enableAllProjectMcpServers\": true) in \
                 ~/.config/stepper/setting.json or .stepper/setting.local.json",
                waiting.join(", "),
                waiting
                    .iter()
                    .map(|n| format!("\"{n}\""))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        let (specs, problems) = parse_servers(&servers, env);
        notices.extend(problems);
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
                    tracing::info!(server = %spec.name, tools = server.tools().len(), "MCP server started");
                    servers.insert(key(spec), server);
                }
                Err(e) => notices.push(format!("{e} — its tools are left out of this turn")),
            }
        }
        // A server whose tools changed since the last turn lists them again.
        let running: Vec<Arc<McpServer>> = specs
            .iter()
            .filter_map(|spec| servers.get(&key(spec)).cloned())
            .collect();
        drop(servers);
        for server in &running {
            if let Err(e) = server.refresh_tools(timeout).await {
                notices.push(format!("{e} — its earlier tools are kept"));
            }
        }
        let tools = running.iter().flat_map(McpTool::all).collect();
        (tools, notices)
    }
}

/// The servers of the project's `.mcp.json` (in `cwd`, else at the repository root).
fn mcp_json(cwd: &Path) -> Result<Option<BTreeMap<String, serde_json::Value>>, String> {
    let root = stepper_engine::config::memory::repository_root(cwd);
    let Some(path) = [cwd.join(".mcp.json"), root.join(".mcp.json")]
        .into_iter()
        .find(|p| p.is_file())
    else {
        return Ok(None);
    };
    let text = std::fs::read_to_string(&path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
        format!(
            "{}:{}:{}: {e} — its MCP servers are left out until it is fixed",
            path.display(),
            e.line(),
            e.column()
        )
    })?;
    match value.get("mcpServers") {
        None => Ok(None),
        Some(servers) => serde_json::from_value(servers.clone())
            .map(Some)
            .map_err(|_| {
                format!(
                    "{}: `mcpServers` must be an object of servers by name",
                    path.display()
                )
            }),
    }
}
