//! End-to-end tests: the real binaries in a temp STEPPER_HOME against a fake Anthropic server.

// Test code: a panic with a message is how a test fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod acp;
mod ask;
mod attach;
mod backends;
mod boundaries;
mod builtins;
mod capabilities;
mod captures;
mod claude_parity;
mod claude_settings;
mod cli;
mod compaction;
mod config;
mod conformance;
mod crash;
mod escape;
mod eval;
mod exit_codes;
mod extensions;
mod first_run;
mod gate;
mod gate_corpus;
mod hooks;
mod layers;
mod lifecycle;
mod mcp;
mod mcp_conformance;
mod memory;
mod prompt;
mod protocol;
mod providers;
mod remote;
mod resume;
mod sandbox;
mod security;
mod service;
mod store_damage;
mod store_faults;
mod subscribe;
mod tool_env;
mod tools;
mod trust;
mod worktrees;
