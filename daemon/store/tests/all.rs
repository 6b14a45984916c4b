//! Integration tests of the store against a real SQLite file.

// Test code: a panic with a message is how a test fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod recovery;
mod store;
