//! Built-in tools — bash, read/write/edit, glob/grep, web_fetch, todo — each implementing the
//! engine's `Tool` trait and asking permission only through `ToolCx::gate`.

pub mod bash;
pub mod fs;
pub mod search;
