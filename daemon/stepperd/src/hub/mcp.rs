//! The daemon's MCP servers, by the settings of a turn's folder: the pool
//! (`stepper_mcp::Pool`) starts them in the background, shares them between the folder's
//! sessions, starts them again with backoff and stops them when idle; their tools join the
//! turn's, read again before every model call.
//!
//! Servers in the user's own `setting.json` run. A server a project names (its `.mcp.json`,
//! Claude Code's file, or its `.stepper/setting.json`) runs a command from the repository,
//! so it runs only once the user approved it, as Claude Code has it:
//! `enableAllProjectMcpServers`, `enabledMcpjsonServers`, `disabledMcpjsonServers` — read from
//! the user's `setting.json` and the project's git-ignored `setting.local.json` only, never
//! from files the repository ships.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use stepper_engine::config::Settings;
use stepper_mcp::{McpTools, Pool, parse_servers};
use stepper_protocol::session::Env;

#[derive(Clone, Default)]
pub struct McpPool {
    pool: Pool,
}

impl McpPool {
    pub fn new(pool: Pool) -> McpPool {
        McpPool { pool }
    }

    /// Stop the servers idle for `STEPPER_MCP_IDLE_MS`, checking a few times per period.
    pub fn reap_idle(&self) -> tokio::task::JoinHandle<()> {
        let pool = self.pool.clone();
        let idle = stepper_mcp::idle_timeout();
        let every = (idle / 4).clamp(Duration::from_millis(50), Duration::from_secs(60));
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                pool.reap(idle);
            }
        })
    }

    /// The servers a turn in `cwd` has (`user`: the user's own settings, `trusted`: those
    /// and the project's `setting.local.json`, `merged`: every file's), starting those that
    /// do not run; a server's first start is waited for. What went wrong, as notices.
    pub async fn tools(
        &self,
        cwd: &Path,
        user: &Settings,
        trusted: &Settings,
        merged: &Settings,
        env: &Env,
    ) -> (Option<Arc<McpTools>>, Vec<String>) {
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
            return (None, notices);
        }
        let servers = self.pool.session(cwd, &specs, env);
        // The connect timeout ends a first start; the margin lets it say so itself.
        servers
            .settle(stepper_mcp::connect_timeout() + Duration::from_millis(250))
            .await;
        notices.extend(servers.notices());
        (Some(Arc::new(McpTools(servers))), notices)
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
