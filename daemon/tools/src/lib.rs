//! Built-in tools — bash, read/write/edit, glob/grep, web_fetch, todo — each implementing the
//! engine's `Tool` trait and asking permission only through `ToolCx::gate`.
//!
//! [`all`] is what a session offers; MCP tools join them in the daemon.

pub mod bash;
pub mod fs;
pub mod media;
pub mod search;
pub mod todo;
pub mod web_fetch;

use std::sync::Arc;

use stepper_engine::tool::Tool;

/// Every built-in tool, as a session offers them.
pub fn all() -> Vec<Arc<dyn Tool>> {
    let mut tools: Vec<Arc<dyn Tool>> = vec![Arc::new(bash::Bash)];
    tools.extend(fs::tools());
    // Offered only where the model's dialect has it (OpenAI's models); the others keep
    // edit, write and multi_edit.
    tools.push(Arc::new(fs::ApplyPatch));
    tools.extend(search::tools());
    tools.push(Arc::new(todo::TodoWrite));
    match web_fetch::WebFetch::new() {
        Ok(fetch) => tools.push(Arc::new(fetch)),
        Err(e) => tracing::warn!(error = %e, "web_fetch is unavailable"),
    }
    tools
}
