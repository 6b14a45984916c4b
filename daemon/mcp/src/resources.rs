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
            // A large picture is scaled down: off the runtime's threads.
            tokio::task::spawn_blocking(move || shown(contents))
                .await
                .map_err(|e| ToolError::Failed(format!("reading the resource failed: {e}")))
        })
    }
}

/// What the model gets of a resource's contents: each text under its URI (cut at
/// [`MAX_TEXT`]), a picture or PDF blob as media it sees, another blob described.
fn shown(contents: Vec<serde_json::Value>) -> ToolOutput {
    let mut budget = crate::content::Budget::new();
    let mut media = Vec::new();
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
            (None, Some(blob)) => {
                let (part, shown) = crate::content::resource_blob(&c, blob, &mut budget);
                parts.push(part);
                media.extend(shown);
            }
            _ => parts.push(format!("[{uri}: empty]")),
        }
    }
    ToolOutput {
        media,
        ..ToolOutput::text(parts.join("\n\n"))
    }
}

#[cfg(test)]
mod tests {
    use base64::Engine as _;

    use super::*;

    #[test]
    fn a_pdf_resource_is_shown_and_its_text_neighbour_read() {
        let pdf = b"%PDF-1.4\n1 0 obj << /Type /Page >> endobj\n%%EOF\n";
        let out = shown(vec![
            json!({
                "uri": "file:///spec.pdf",
                "mimeType": "application/pdf",
                "blob": base64::engine::general_purpose::STANDARD.encode(pdf),
            }),
            json!({"uri": "file:///a.txt", "text": "hello"}),
        ]);
        let [m] = &out.media[..] else {
            panic!("one document: {:?}", out.media)
        };
        assert_eq!(m.data.as_deref(), Some(&pdf[..]));
        assert_eq!(m.about.pages, Some(1));
        assert_eq!(
            out.content,
            format!(
                "[resource file:///spec.pdf] {}\n\n[file:///a.txt]\nhello",
                m.about.label()
            )
        );
    }
}
