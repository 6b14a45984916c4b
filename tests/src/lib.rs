//! The end-to-end harness: a temp `STEPPER_HOME`, the real `stepper` and `stepperd`
//! binaries, a fake Anthropic server speaking the real SSE wire format, and tmux terminals
//! for the TUI.

// A harness failure is a test failure: panicking with a message is the right behaviour here.
#![allow(clippy::unwrap_used, clippy::expect_used)]

pub mod env;
pub mod events;
pub mod fake_llm;
pub mod fake_mcp_oauth;
pub mod needs;
pub mod normalize;
pub mod output;
pub mod sshd;
pub mod tmux;
pub mod wait;
pub mod ws;

pub use env::{TestEnv, bin_dir, files_under, submit};
pub use events::{Asked, next_approval, read_until, stream_json, until_turn_finished};
pub use fake_llm::{FakeLlm, Gate, Reply, Route};
pub use normalize::Normalizer;
pub use output::CommandOutput;
pub use tmux::{Pane, Tmux};
pub use wait::{wait_until, wait_until_async};
