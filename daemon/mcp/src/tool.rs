//! A server's tool as the engine's `Tool`: named `mcp__<server>__<tool>`, asked of the gate
//! (rules `mcp__server__tool` and `mcp__server__*`), its result mapped to what the model
//! reads and sees (`content`).

use std::sync::Arc;

use futures::future::BoxFuture;
use stepper_engine::tool::{GateRequest, Sampler, Tool, ToolCx, ToolError, ToolResult, ToolSpec};

use crate::pool::{Servers, Slot};

/// The name the model and the rules know a server's tool by.
pub fn tool_name(server: &str, tool: &str) -> String {
    format!("mcp__{server}__{tool}")
}

pub struct McpTool {
    slot: Slot,
    tool: rmcp::model::Tool,
    /// The session's model, for the server's sampling requests (when `mcpSampling` is on).
    sampler: Option<Arc<dyn Sampler>>,
}

impl McpTool {
    /// Every tool `slot`'s server offers now.
    pub fn all(slot: &Slot, sampler: Option<&Arc<dyn Sampler>>) -> Vec<Arc<dyn Tool>> {
        slot.tools()
            .into_iter()
            .map(|tool| {
                Arc::new(McpTool {
                    slot: slot.clone(),
                    tool,
                    sampler: sampler.cloned(),
                }) as Arc<dyn Tool>
            })
            .collect()
    }

    /// What the server says of the tool, for the approval: its title and hints.
    fn annotations(&self) -> Option<String> {
        let a = self.tool.annotations.as_ref()?;
        let mut said = Vec::new();
        if let Some(title) = a.title.as_deref().filter(|t| !t.is_empty()) {
            said.push(format!("\"{title}\""));
        }
        if a.read_only_hint == Some(true) {
            said.push("read-only".into());
        } else {
            match a.destructive_hint {
                Some(true) => said.push("may delete or overwrite".into()),
                Some(false) => said.push("only adds".into()),
                None => {}
            }
            if a.idempotent_hint == Some(true) {
                said.push("idempotent".into());
            }
        }
        if a.open_world_hint == Some(true) {
            said.push("reaches outside systems".into());
        }
        (!said.is_empty()).then(|| format!("the server says: {}", said.join(", ")))
    }
}

/// The tools of a turn's servers, as they are before each model call: theirs, and the
/// resource tools while one of them has resources.
pub struct McpTools {
    pub servers: Arc<Servers>,
    /// The session's model, lent to servers that ask (`mcpSampling`).
    pub sampler: Option<Arc<dyn Sampler>>,
}

impl stepper_engine::tool::ToolSource for McpTools {
    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        let sampler = self.sampler.as_ref();
        let mut tools: Vec<Arc<dyn Tool>> = self
            .servers
            .slots
            .iter()
            .flat_map(|slot| McpTool::all(slot, sampler))
            .collect();
        if crate::resources::any(&self.servers) {
            let servers = &self.servers;
            tools.push(Arc::new(crate::resources::ListResources(Arc::clone(
                servers,
            ))));
            tools.push(Arc::new(crate::resources::ReadResource(Arc::clone(
                servers,
            ))));
        }
        tools
    }
}

impl Tool for McpTool {
    fn spec(&self) -> ToolSpec {
        let mut description = self.tool.description.as_deref().unwrap_or("").to_string();
        if description.is_empty() {
            description = format!(
                "The {} tool of the MCP server {}.",
                self.tool.name, self.slot.name
            );
        }
        ToolSpec {
            name: tool_name(&self.slot.name, &self.tool.name),
            description,
            input_schema: serde_json::Value::Object((*self.tool.input_schema).clone()),
        }
    }

    fn read_only(&self) -> bool {
        // A server says so itself; it is taken as a hint for running calls together only.
        self.tool
            .annotations
            .as_ref()
            .and_then(|a| a.read_only_hint)
            .unwrap_or(false)
    }

    fn call<'a>(&'a self, args: serde_json::Value, cx: &'a ToolCx) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            cx.gate(GateRequest::Mcp {
                server: self.slot.name.clone(),
                tool: self.tool.name.to_string(),
                arguments: args.to_string(),
                annotations: self.annotations(),
            })
            .await?;
            let output = Some(Arc::clone(&cx.output));
            let call = async {
                // A server starting again is waited for; one that stopped is reported.
                let server = self.slot.server(crate::connect_timeout()).await?;
                if !server.tools().iter().any(|t| t.name == self.tool.name) {
                    return Err(format!(
                        "MCP server {:?} no longer offers {:?}",
                        self.slot.name, self.tool.name
                    ));
                }
                let with = crate::server::CallWith {
                    output,
                    gate: Some(Arc::clone(&cx.gate)),
                    sampler: self.sampler.clone(),
                    sign_in: None,
                };
                server
                    .call(&self.tool.name, args, crate::call_timeout(), with)
                    .await
            };
            let result = tokio::select! {
                biased;
                () = cx.cancel.cancelled() => return Err(ToolError::Cancelled),
                result = call => result.map_err(ToolError::Failed)?,
            };
            let failed = result.is_error == Some(true);
            let tool = self.tool.name.to_string();
            // A large picture is scaled down: off the runtime's threads.
            let out =
                tokio::task::spawn_blocking(move || crate::content::tool_output(&result, &tool))
                    .await
                    .map_err(|e| ToolError::Failed(format!("reading the result failed: {e}")))?;
            if failed {
                return Err(ToolError::Failed(out.content));
            }
            Ok(out)
        })
    }
}
