//! Servers' resources for the model (Claude Code's `ListMcpResourcesTool` and
//! `ReadMcpResourceTool`): `list_mcp_resources {server?}` and `read_mcp_resource {server,
//! uri}`, offered when a server of the turn has resources. Reading data a server exposes
//! for reading changes nothing, so neither asks.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::json;
use stepper_engine::tool::{Tool, ToolCx, ToolError, ToolOutput, ToolResult, ToolSpec};

use crate::pool::{Servers, State};
use crate::server::McpServer;

/// The longest resource text given to the model.
const MAX_TEXT: usize = 256 * 1024;

pub struct ListResources(pub Arc<Servers>);
pub struct ReadResource(pub Arc<Servers>);

/// The running servers with resources, by name.
fn with_resources(servers: &Servers) -> Vec<(String, Arc<McpServer>)> {
    servers
        .slots
        .iter()
        .filter_map(|slot| match slot.state() {
            State::Ready(server) if server.has_resources() => Some((slot.name.clone(), server)),
            _ => None,
        })
        .collect()
}

/// Whether any running server of `servers` has resources.
pub fn any(servers: &Servers) -> bool {
    !with_resources(servers).is_empty()
}

fn server_arg(args: &serde_json::Value) -> Result<Option<String>, ToolError> {
    match &args["server"] {
        serde_json::Value::Null => Ok(None),
        serde_json::Value::String(s) if !s.is_empty() => Ok(Some(s.clone())),
        _ => Err(ToolError::InvalidArguments(
            "`server` must be a server's name".into(),
        )),
    }
}

impl Tool for ListResources {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "list_mcp_resources".into(),
            description: "List the resources (files, records, documents) the MCP servers offer, \
                          by server. Read one with read_mcp_resource."
                .into(),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "server": {"type": "string", "description": "Only this server's resources."}
                },
                "additionalProperties": false
            }),
        }
    }

    fn read_only(&self) -> bool {
        true
    }

    fn call<'a>(&'a self, args: serde_json::Value, cx: &'a ToolCx) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let only = server_arg(&args)?;
            let servers = with_resources(&self.0);
            let names: Vec<&str> = servers.iter().map(|(n, _)| n.as_str()).collect();
            if let Some(only) = &only
                && !names.contains(&only.as_str())
            {
                return Err(ToolError::InvalidArguments(format!(
                    "no running MCP server {only:?} has resources; those that do: {}",
                    names.join(", ")
                )));
            }
            let mut lines = Vec::new();
            for (name, server) in &servers {
                if only.as_ref().is_some_and(|o| o != name) {
                    continue;
                }
                let listed = tokio::select! {
                    () = cx.cancel.cancelled() => return Err(ToolError::Cancelled),
                    listed = server.resources(crate::call_timeout()) => listed,
                };
                match listed {
                    Ok(resources) => {
                        lines.push(format!("{name}: {} resources", resources.len()));
                        for r in resources {
                            let mut line = format!("  {}", r["uri"].as_str().unwrap_or(""));
                            if let Some(n) = r["name"].as_str() {
                                line.push_str(&format!(" — {n}"));
                            }
                            if let Some(m) = r["mimeType"].as_str() {
                                line.push_str(&format!(" ({m})"));
                            }
                            if let Some(d) = r["description"].as_str() {
                                line.push_str(&format!(": {d}"));
                            }
                            lines.push(line);
                        }
                    }
                    Err(why) => lines.push(format!("{name}: {why}")),
                }
            }
            Ok(ToolOutput::text(lines.join("\n")))
        })
    }
}

impl Tool for ReadResource {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "read_mcp_resource".into(),
            description: "Read a resource of an MCP server by its URI (see list_mcp_resources)."
                .into(),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "server": {"type": "string"},
                    "uri": {"type": "string"}
                },
                "required": ["server", "uri"],
                "additionalProperties": false
            }),
        }
    }

    fn read_only(&self) -> bool {
        true
    }

    fn call<'a>(&'a self, args: serde_json::Value, cx: &'a ToolCx) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let Some(name) = server_arg(&args)? else {
                return Err(ToolError::InvalidArguments("give `server`".into()));
            };
            let Some(uri) = args["uri"].as_str().filter(|u| !u.is_empty()) else {
                return Err(ToolError::InvalidArguments("give `uri`".into()));
            };
            let servers = with_resources(&self.0);
            let Some((_, server)) = servers.iter().find(|(n, _)| *n == name) else {
                return Err(ToolError::InvalidArguments(format!(
                    "no running MCP server {name:?} has resources"
                )));
            };
            let read = tokio::select! {
                () = cx.cancel.cancelled() => return Err(ToolError::Cancelled),
                read = server.read_resource(uri, crate::call_timeout()) => read,
            };
            let contents = read.map_err(ToolError::Failed)?;
            let mut parts = Vec::new();
            for c in contents {
                let uri = c["uri"].as_str().unwrap_or("");
                match (c["text"].as_str(), c["blob"].as_str()) {
                    (Some(text), _) => {
                        let mut text = text.to_string();
                        if text.len() > MAX_TEXT {
                            let mut cut = MAX_TEXT;
                            while !text.is_char_boundary(cut) {
                                cut -= 1;
                            }
                            text.truncate(cut);
                            text.push_str("\n[… cut]");
                        }
                        parts.push(format!("[{uri}]\n{text}"));
                    }
                    (None, Some(blob)) => parts.push(format!(
                        "[{uri}: {}, {} bytes of base64]",
                        c["mimeType"].as_str().unwrap_or("binary"),
                        blob.len()
                    )),
                    _ => parts.push(format!("[{uri}: empty]")),
                }
            }
            Ok(ToolOutput::text(parts.join("\n\n")))
        })
    }
}
