//! Integration tests of the built-in tools through their public `Tool` interface.

// Test code: a panic with a message is how a test fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod near_miss;
