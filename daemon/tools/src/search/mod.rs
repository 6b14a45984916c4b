//! Search tools: glob and grep, on ripgrep's own crates.
