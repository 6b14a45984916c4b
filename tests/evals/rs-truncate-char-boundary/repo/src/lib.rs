//! Formats feed entries as fixed-width headline lines for a terminal ticker.

pub mod headline;
pub mod text;

pub use headline::{format_headline, Entry};
