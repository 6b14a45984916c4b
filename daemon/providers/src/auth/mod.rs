//! Credentials: OAuth sign-in for ChatGPT (Codex) and stored API keys.
//!
//! Everything that touches a secret lives here, so that the rules for secrets (never logged,
//! never echoed in an error, written only to a 0600 file) are kept in one place.

pub mod codex;
mod error;
pub mod pkce;
pub mod store;

pub use codex::{CodexOAuth, CodexTokens};
pub use error::{AuthError, Result, TokenOperation};
pub use pkce::{Pkce, random_state};
pub use store::CredentialStore;

/// How many leading characters of a long secret `redact` keeps: enough to tell an
/// `sk-ant-…` key from an `sk-proj-…` one when reading a log, far too few to use.
const KEPT_PREFIX: usize = 6;

/// Secrets shorter than this are hidden whole: a prefix of a short secret is a real part of it.
const MIN_LEN_FOR_PREFIX: usize = 20;

/// A form of `secret` that is safe to print: `"sk-ant…(redacted)"` for a long secret,
/// `"(redacted)"` for a short one. Every `Debug` of a type holding a secret goes through this.
pub fn redact(secret: &str) -> String {
    if secret.chars().count() >= MIN_LEN_FOR_PREFIX {
        let prefix: String = secret.chars().take(KEPT_PREFIX).collect();
        format!("{prefix}…(redacted)")
    } else {
        "(redacted)".to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::redact;

    #[test]
    fn redact_keeps_only_a_short_prefix_of_long_secrets() {
        let key = "sk-ant-api03-abcdefghijklmnopqrstuvwxyz";
        let shown = redact(key);
        assert_eq!(shown, "sk-ant…(redacted)");
        assert!(!shown.contains("api03"));
    }

    #[test]
    fn redact_hides_short_secrets_entirely() {
        assert_eq!(redact("hunter2"), "(redacted)");
        assert_eq!(redact(""), "(redacted)");
    }

    #[test]
    fn redact_counts_characters_not_bytes() {
        // A multi-byte secret must not be cut inside a character (which would panic).
        let secret = "ééééééééééééééééééééééé";
        assert_eq!(redact(secret), "éééééé…(redacted)");
    }
}
