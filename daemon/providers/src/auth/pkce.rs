//! PKCE (RFC 7636) and the OAuth `state`: the two random values that tie a browser sign-in to
//! the process that started it, so that a code intercepted on its way back is useless.

use std::fmt;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};

use super::error::{AuthError, Result};
use super::redact;

/// A verifier kept by this process and the challenge sent to the authorization server.
#[derive(Clone)]
pub struct Pkce {
    /// Sent only to the token endpoint, with the code. A secret until the sign-in is over.
    pub verifier: String,
    /// Sent in the authorize URL: `BASE64URL(SHA-256(verifier))`.
    pub challenge: String,
}

impl Pkce {
    /// The `code_challenge_method`: only S256, since "plain" would put the verifier itself in
    /// the browser's URL.
    pub const METHOD: &'static str = "S256";

    /// A fresh pair. The verifier is 64 random bytes in base64url (86 characters), inside the
    /// 43..=128 RFC 7636 allows, and as long as the Codex CLI's.
    pub fn new() -> Result<Pkce> {
        let verifier = random_base64url::<64>()?;
        let challenge = challenge_for(&verifier);
        Ok(Pkce {
            verifier,
            challenge,
        })
    }
}

impl fmt::Debug for Pkce {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pkce")
            .field("verifier", &redact(&self.verifier))
            .field("challenge", &self.challenge)
            .finish()
    }
}

/// The S256 challenge for `verifier`: base64url without padding of its SHA-256.
pub fn challenge_for(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

/// A fresh OAuth `state` (32 random bytes, base64url): the callback must bring it back, which
/// proves the browser's answer belongs to this sign-in and not to a forged request.
pub fn random_state() -> Result<String> {
    random_base64url::<32>()
}

fn random_base64url<const N: usize>() -> Result<String> {
    let mut bytes = [0u8; N];
    getrandom::fill(&mut bytes).map_err(AuthError::Randomness)?;
    Ok(URL_SAFE_NO_PAD.encode(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenge_matches_rfc7636_appendix_b() {
        // The vector as printed in the RFC (and as Python's hashlib computes it).
        assert_eq!(
            challenge_for("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
    }

    #[test]
    fn new_pair_is_consistent_and_uses_the_allowed_alphabet() {
        let pkce = Pkce::new().unwrap();
        assert_eq!(pkce.verifier.len(), 86);
        assert!(
            pkce.verifier
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'),
            "{}",
            pkce.verifier
        );
        assert_eq!(pkce.challenge, challenge_for(&pkce.verifier));
        assert_ne!(Pkce::new().unwrap().verifier, pkce.verifier);
    }

    #[test]
    fn state_is_32_bytes_of_base64url() {
        let state = random_state().unwrap();
        assert_eq!(URL_SAFE_NO_PAD.decode(&state).unwrap().len(), 32);
        assert_ne!(random_state().unwrap(), state);
    }

    #[test]
    fn debug_hides_the_verifier() {
        let pkce = Pkce::new().unwrap();
        let shown = format!("{pkce:?}");
        assert!(!shown.contains(&pkce.verifier), "{shown}");
        assert!(shown.contains(&pkce.challenge), "{shown}");
    }
}
