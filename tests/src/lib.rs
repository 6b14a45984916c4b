//! The end-to-end harness: a temp `STEPPER_HOME`, the real `stepper` and `stepperd`
//! binaries, a fake Anthropic server speaking the real SSE wire format, and tmux terminals
//! for the TUI.
//!
//! `TestEnv` runs the real binaries (built by the harness: `cargo test` does not build other
//! packages' binaries) in a temp `STEPPER_HOME`; `FakeLlm` (axum) speaks the Anthropic, Responses,
//! Chat Completions and Codex wire formats from `tests/fixtures/`, or answers each request by what
//! it holds (`respond_with`); `normalize` makes what a test saw the same on every machine (folders
//! as `$HOME`/`$PROJECT`, ids, times, pids, the version) for CLI output (`output::CommandOutput`,
//! jj's model) and for the requests the fake records; `events` reads event streams to a condition,
//! `wait` polls with a deadline, `needs` skips a test whose program is missing locally and fails it
//! in CI; `tmux` drives real terminals; `sshd` runs a real sshd on a loopback port, the other
//! machine of the `--host` tests.
//!
//! The suite is `e2e/` (one binary, `all`): among it the crate-boundary test (`boundaries.rs`), the
//! gate's adversarial corpus (`gate_corpus.rs`: every line run for real in a sandbox, where its
//! canary must fire, then through the daemon, where the gate must ask), and the `stepper eval` test
//! (`eval.rs`). `acp-client/client.mjs` is an editor written on the official ACP TypeScript SDK,
//! whose schemas check what `stepper acp` sends. `benches/` measures the daemon end to end.

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
