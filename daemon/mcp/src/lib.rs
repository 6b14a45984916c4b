//! The MCP client: stdio, streamable HTTP and SSE servers from `mcpServers`, their tools
//! exposed as `mcp__<server>__<tool>` through the engine's `Tool` trait.
//!
//! Empty until MCP support lands; the crate fixes the boundary now.
