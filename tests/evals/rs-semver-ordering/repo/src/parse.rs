use std::fmt;

use crate::{Identifier, Version};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError(pub String);

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid version: {}", self.0)
    }
}

impl std::error::Error for ParseError {}

fn number(part: &str, what: &str) -> Result<u64, ParseError> {
    if part.is_empty() || !part.bytes().all(|b| b.is_ascii_digit()) {
        return Err(ParseError(format!("{what} {part:?} is not a number")));
    }
    if part.len() > 1 && part.starts_with('0') {
        return Err(ParseError(format!("{what} {part:?} has a leading zero")));
    }
    part.parse()
        .map_err(|_| ParseError(format!("{what} {part:?} is too large")))
}

fn identifier(part: &str) -> Result<Identifier, ParseError> {
    if part.is_empty() || !part.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
        return Err(ParseError(format!("bad pre-release identifier {part:?}")));
    }
    if part.bytes().all(|b| b.is_ascii_digit()) {
        number(part, "pre-release identifier").map(Identifier::Numeric)
    } else {
        Ok(Identifier::Alpha(part.to_string()))
    }
}

pub fn version(text: &str) -> Result<Version, ParseError> {
    let text = text.trim();
    let text = text.strip_prefix('v').unwrap_or(text);
    let (core, pre) = match text.split_once('-') {
        Some((core, pre)) => (core, Some(pre)),
        None => (text, None),
    };
    let parts: Vec<&str> = core.split('.').collect();
    let [major, minor, patch] = parts[..] else {
        return Err(ParseError(format!("{text:?} is not MAJOR.MINOR.PATCH")));
    };
    Ok(Version {
        major: number(major, "major")?,
        minor: number(minor, "minor")?,
        patch: number(patch, "patch")?,
        pre: match pre {
            Some(pre) => pre.split('.').map(identifier).collect::<Result<_, _>>()?,
            None => Vec::new(),
        },
    })
}
