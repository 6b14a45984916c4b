//! The TUI's integration tests: snapshots of what users see, behaviour through `App`, and the
//! loop of `run_with` driven by a mock core over the real channels.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod attachments;
mod behaviour;
mod markdown;
mod run_loop;
mod setup;
mod snapshots;
mod support;
