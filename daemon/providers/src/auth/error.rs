//! The one error type of sign-in and the credentials file. Each message says what happened and
//! what the user can do next, and none ever contains a token or key: callers log them as is.

use std::fmt;
use std::io;
use std::path::PathBuf;

/// What to tell a user whose ChatGPT credentials are gone or unusable.
pub(crate) const LOGIN_HINT: &str = "sign in again with 'stepper auth login --codex'";

pub type Result<T> = std::result::Result<T, AuthError>;

/// Which request to the token endpoint failed: it changes both the wording and whether a retry
/// can help (a refresh can fail for a passing reason, a spent authorization code cannot).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenOperation {
    /// Trading the authorization code from the browser for tokens.
    SignIn,
    /// Trading the refresh token for a new access token.
    Refresh,
}

impl fmt::Display for TokenOperation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TokenOperation::SignIn => "signing in to ChatGPT",
            TokenOperation::Refresh => "refreshing the ChatGPT session",
        })
    }
}

#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    /// getrandom's error only implements `std::error::Error` with its `std` feature, so it is
    /// kept as a plain value rather than a `source`.
    #[error(
        "the system's random number generator failed ({0}), so no secure sign-in can be \
         started — try again"
    )]
    Randomness(getrandom::Error),

    #[error(
        "{operation} failed: cannot reach the sign-in server at {url}: {reason} — check the \
         network (and STEPPER_CODEX_ISSUER, if set) and try again"
    )]
    Unreachable {
        operation: TokenOperation,
        url: String,
        reason: String,
    },

    /// The token endpoint answered with an error status. `code` and `description` are the
    /// server's `error` and `error_description`, with anything stepper sent scrubbed out.
    #[error("{}", token_endpoint_message(*.operation, *.status, .code, .description))]
    TokenEndpoint {
        operation: TokenOperation,
        status: u16,
        code: Option<String>,
        description: Option<String>,
    },

    #[error(
        "{operation} failed: the sign-in server's answer is not what stepper expects \
         ({reason}) — {LOGIN_HINT}"
    )]
    UnexpectedResponse {
        operation: TokenOperation,
        reason: String,
    },

    #[error(
        "the stored ChatGPT session has no refresh token, so it cannot be renewed — {LOGIN_HINT}"
    )]
    NoRefreshToken,

    /// The browser came back without a usable authorization code.
    #[error("the ChatGPT sign-in in the browser did not complete: {reason} — {LOGIN_HINT}")]
    Callback { reason: String },

    #[error("the {which} from the ChatGPT sign-in server cannot be read ({reason}) — {LOGIN_HINT}")]
    MalformedJwt {
        which: &'static str,
        reason: &'static str,
    },

    #[error("STEPPER_CODEX_ISSUER={value:?} is not an http(s) URL ({reason}) — fix or unset it")]
    BadIssuer { value: String, reason: String },

    #[error(
        "cannot read the credentials file {}: {source} — check its owner and permissions",
        .path.display()
    )]
    StoreRead { path: PathBuf, source: io::Error },

    #[error(
        "the credentials file {} is corrupt ({reason}) — delete it, then sign in again with \
         'stepper auth login' (API keys must be entered again too)",
        .path.display()
    )]
    StoreCorrupt { path: PathBuf, reason: String },

    #[error(
        "cannot write the credentials file {}: {source} — check that its directory is \
         writable and the disk is not full",
        .path.display()
    )]
    StoreWrite { path: PathBuf, source: io::Error },

    #[error("the API key for {provider:?} is empty — paste the whole key")]
    EmptyApiKey { provider: String },
}

impl AuthError {
    /// Whether only a new sign-in can fix this (as opposed to retrying later). The daemon uses
    /// it to decide between "try again" and "your session is gone".
    pub fn needs_sign_in(&self) -> bool {
        match self {
            AuthError::TokenEndpoint {
                operation, status, ..
            } => match operation {
                // An authorization code is single-use: whatever went wrong, a new one is needed.
                TokenOperation::SignIn => true,
                TokenOperation::Refresh => !refresh_may_succeed_later(*status),
            },
            AuthError::UnexpectedResponse { .. }
            | AuthError::Callback { .. }
            | AuthError::NoRefreshToken
            | AuthError::MalformedJwt { .. }
            | AuthError::StoreCorrupt { .. } => true,
            AuthError::Randomness(_)
            | AuthError::Unreachable { .. }
            | AuthError::BadIssuer { .. }
            | AuthError::StoreRead { .. }
            | AuthError::StoreWrite { .. }
            | AuthError::EmptyApiKey { .. } => false,
        }
    }
}

/// Server-side trouble and rate limits pass; a 4xx on refresh means the refresh token itself
/// was refused (expired, reused or revoked), which no retry fixes.
fn refresh_may_succeed_later(status: u16) -> bool {
    status == 408 || status == 429 || status >= 500
}

fn token_endpoint_message(
    operation: TokenOperation,
    status: u16,
    code: &Option<String>,
    description: &Option<String>,
) -> String {
    let (code, description) = (code.as_deref(), description.as_deref());
    let mut said = format!("the sign-in server answered {status}");
    if let Some(code) = code {
        said.push_str(&format!(" {code}"));
    }
    if let Some(description) = description {
        said.push_str(&format!(": {description}"));
    }
    match operation {
        TokenOperation::SignIn => format!("{operation} failed: {said} — {LOGIN_HINT}"),
        TokenOperation::Refresh if refresh_may_succeed_later(status) => format!(
            "{operation} failed: {said} — try again in a moment; if it keeps failing, \
             {LOGIN_HINT}"
        ),
        TokenOperation::Refresh => {
            // The codes OpenAI's auth server gives for a refused refresh token, in words.
            let why = match code {
                Some("refresh_token_expired") => " (the session has expired)",
                Some("refresh_token_reused") => {
                    " (the refresh token was already used, perhaps by another program sharing \
                     this sign-in)"
                }
                Some("refresh_token_invalidated") => " (the session was revoked or signed out)",
                _ => "",
            };
            format!("the ChatGPT session cannot be refreshed: {said}{why} — {LOGIN_HINT}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refused_refresh_says_why_and_how_to_recover() {
        let e = AuthError::TokenEndpoint {
            operation: TokenOperation::Refresh,
            status: 401,
            code: Some("refresh_token_expired".into()),
            description: None,
        };
        let msg = e.to_string();
        assert!(msg.contains("401 refresh_token_expired"), "{msg}");
        assert!(msg.contains("the session has expired"), "{msg}");
        assert!(msg.contains("stepper auth login --codex"), "{msg}");
        assert!(e.needs_sign_in());
    }

    #[test]
    fn server_trouble_on_refresh_is_worth_a_retry() {
        let e = AuthError::TokenEndpoint {
            operation: TokenOperation::Refresh,
            status: 503,
            code: None,
            description: Some("upstream unavailable".into()),
        };
        assert!(!e.needs_sign_in());
        assert!(e.to_string().contains("try again in a moment"), "{e}");
    }

    #[test]
    fn any_failed_code_exchange_needs_a_new_sign_in() {
        let e = AuthError::TokenEndpoint {
            operation: TokenOperation::SignIn,
            status: 503,
            code: None,
            description: None,
        };
        assert!(e.needs_sign_in());
    }
}
