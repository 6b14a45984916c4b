//! The editor's session requests: `initialize` (and whether a provider is set up),
//! `session/new`, `session/load` and `session/list`, and the commands a session offers.
//!
//! `session/load` subscribes with `skipFinishedDeltas` and answers once the follower has reached
//! the session's last seq; approvals found in that history are held until the replay ends (most
//! were answered meanwhile).

use std::sync::Arc;

use serde_json::{Value, json};
use stepper_protocol::PermissionMode;
use stepper_protocol::methods::{
    CommandInfo, CommandsList, CwdParams, ProvidersStatus, ProvidersStatusParams, SessionCreate,
    SessionCreateParams, SessionGet, SessionList, SessionListParams, SessionParams,
};

use super::{AcpError, Conn, PROTOCOL_VERSION, Reply, map, session_id};
use crate::session::client_env;

impl Conn {
    pub(super) async fn initialize(&self, params: Value) -> Result<Value, AcpError> {
        if params
            .get("protocolVersion")
            .and_then(Value::as_u64)
            .is_none()
        {
            return Err(AcpError::invalid(
                "initialize needs protocolVersion (an integer; this agent speaks 1)",
            ));
        }
        let usable = self.provider_usable().await?;
        let auth_methods = if usable {
            json!([])
        } else {
            json!([{
                "id": "stepper",
                "name": "Set up a provider",
                "description": "No model provider is set up: run 'stepper' in a terminal \
                                (or 'stepper auth login'), then try again",
            }])
        };
        Ok(json!({
            "protocolVersion": PROTOCOL_VERSION,
            "agentCapabilities": {
                "loadSession": true,
                "promptCapabilities": {"image": true, "audio": false, "embeddedContext": true},
                "mcpCapabilities": {"http": false, "sse": false},
                "sessionCapabilities": {"list": {}},
            },
            "agentInfo": {"name": "stepper", "title": "stepper", "version": env!("CARGO_PKG_VERSION")},
            "authMethods": auth_methods,
        }))
    }

    async fn provider_usable(&self) -> Result<bool, AcpError> {
        let status = self
            .daemon()
            .await?
            .call::<ProvidersStatus>(ProvidersStatusParams {
                cwd: None,
                env: client_env(),
                probe: false,
            })
            .await?;
        Ok(status.default_usable)
    }

    pub(super) async fn check_provider(&self) -> Result<(), AcpError> {
        if self.provider_usable().await? {
            return Ok(());
        }
        Err(AcpError::new(
            -32000,
            "no model provider is set up: run 'stepper' in a terminal and choose one (or \
             'stepper auth login'), then try again",
        ))
    }

    pub(super) async fn new_session(self: &Arc<Self>, params: Value) -> Result<Reply, AcpError> {
        let cwd = absolute_cwd(&params)?;
        ignore_mcp_servers(&params);
        let daemon = self.daemon().await?;
        let created = daemon
            .call::<SessionCreate>(SessionCreateParams {
                input_parts: Vec::new(),
                cwd: cwd.clone(),
                env: client_env(),
                model: None,
                title: None,
                record: None,
                mode: None,
                sandbox: None,
                input: None,
                system_prompt: None,
                append_system_prompt: None,
            })
            .await?;
        let id = created.session.id.clone();
        let events = daemon.subscribe_events(&id, 0).await?;
        self.follow(&id, &cwd, &created.session.model, events, 0)
            .await;
        Ok(Reply {
            result: json!({"sessionId": id, "modes": map::modes(created.mode.unwrap_or(PermissionMode::Default))}),
            then: vec![commands(&id, &self.session_commands(&cwd).await)],
        })
    }

    pub(super) async fn load_session(self: &Arc<Self>, params: Value) -> Result<Reply, AcpError> {
        let id = session_id(&params)?;
        ignore_mcp_servers(&params);
        let daemon = self.daemon().await?;
        let got = daemon
            .call::<SessionGet>(SessionParams {
                session_id: id.clone(),
            })
            .await?;
        // The whole conversation, as updates, before the answer: finished turns without
        // their streamed pieces (their messages carry the text).
        let events = daemon.subscribe_history(&id, 0).await?;
        let target = got.session.last_seq;
        let live = self
            .follow(&id, &got.session.cwd, &got.session.model, events, target)
            .await;
        let mut handled = live.handled.subscribe();
        // An error means the subscription ended: whatever was replayed is all there is.
        let _ = handled.wait_for(|seq| *seq >= target).await;
        Ok(Reply {
            result: json!({"modes": map::modes(got.mode.unwrap_or(PermissionMode::Default))}),
            then: vec![commands(
                &id,
                &self.session_commands(&got.session.cwd).await,
            )],
        })
    }

    /// The commands of sessions in `cwd` (none when the daemon cannot say).
    async fn session_commands(&self, cwd: &str) -> Vec<CommandInfo> {
        let Ok(daemon) = self.daemon().await else {
            return Vec::new();
        };
        daemon
            .call::<CommandsList>(CwdParams { cwd: cwd.into() })
            .await
            .map(|l| l.commands)
            .unwrap_or_default()
    }

    pub(super) async fn list_sessions(&self, params: Value) -> Result<Value, AcpError> {
        let cwd = params
            .get("cwd")
            .and_then(Value::as_str)
            .map(str::to_string);
        let cursor = params
            .get("cursor")
            .and_then(Value::as_str)
            .map(str::to_string);
        let list = self
            .daemon()
            .await?
            .call::<SessionList>(SessionListParams {
                cwd,
                limit: None,
                cursor,
            })
            .await?;
        let sessions: Vec<Value> = list
            .sessions
            .iter()
            .map(|s| {
                let mut info = json!({
                    "sessionId": s.id,
                    "cwd": s.cwd,
                    "updatedAt": map::iso8601(s.updated_at),
                    "_meta": {"model": s.model, "turns": s.turns},
                });
                if let Some(title) = &s.title {
                    info["title"] = json!(title);
                }
                info
            })
            .collect();
        let mut result = json!({"sessions": sessions});
        if let Some(next) = list.next_cursor {
            result["nextCursor"] = json!(next);
        }
        Ok(result)
    }
}

fn absolute_cwd(params: &Value) -> Result<String, AcpError> {
    let cwd = params
        .get("cwd")
        .and_then(Value::as_str)
        .ok_or_else(|| AcpError::invalid("session/new needs cwd, an absolute path"))?;
    if !std::path::Path::new(cwd).is_absolute() {
        return Err(AcpError::invalid(format!(
            "cwd must be an absolute path, not {cwd:?}"
        )));
    }
    Ok(cwd.to_string())
}

/// MCP servers from the editor are not run yet: said once on stderr, the session goes on.
fn ignore_mcp_servers(params: &Value) {
    if let Some(servers) = params.get("mcpServers").and_then(Value::as_array)
        && !servers.is_empty()
    {
        eprintln!(
            "stepper acp: the editor's {} MCP server(s) are not used: stepper does not run MCP \
             servers yet",
            servers.len()
        );
    }
}

/// The slash commands an editor is offered: the daemon's built-ins (`/model`, `/context`,
/// `/help`, `/clear`, `/compact`), which it answers as turns, and the folder's custom
/// commands, skills and MCP prompts, which it expands — all of them sent as prompts. Those
/// only a terminal runs (`client`) are not offered.
fn commands(session: &str, listed: &[CommandInfo]) -> Value {
    let available: Vec<Value> = listed
        .iter()
        .filter(|c| c.kind != stepper_protocol::methods::CommandKind::Client)
        .map(|c| {
            let mut entry = json!({"name": c.name, "description": c.description});
            if let Some(hint) = &c.argument_hint {
                entry["input"] = json!({"hint": hint});
            }
            entry
        })
        .collect();
    json!({"sessionId": session, "update": {
        "sessionUpdate": "available_commands_update",
        "availableCommands": available,
    }})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cwds_are_checked() {
        assert!(absolute_cwd(&json!({"cwd": "rel"})).is_err());
        assert_eq!(absolute_cwd(&json!({"cwd": "/abs"})).unwrap(), "/abs");
    }
}
