//! Built-in tools — bash, read/write/edit, glob/grep, web_fetch, todo — each implementing the
//! engine's `Tool` trait and asking permission only through `ToolCx::gate`.
//!
//! Empty until the agent loop with tools lands: the crate exists now so that its boundary
//! (HTTP allowed for web_fetch; processes only through `stepper-process`) is fixed from day one.
