//! Model references: `provider/model-id`.

use std::fmt;

/// The model used when neither the client nor the settings name one.
pub const DEFAULT_MODEL: &str = "anthropic/claude-sonnet-4-5";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelRef {
    pub provider: String,
    pub model: String,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{0:?} is not a model reference — use provider/model-id, for example \
     'anthropic/claude-sonnet-4-5'"
)]
pub struct BadModelRef(pub String);

impl ModelRef {
    /// Parse `provider/model-id`. A bare model id is taken as Anthropic's, the one provider
    /// that needs no configuration beyond its key.
    pub fn parse(s: &str) -> Result<ModelRef, BadModelRef> {
        let s = s.trim();
        let (provider, model) = match s.split_once('/') {
            Some((p, m)) => (p, m),
            None => ("anthropic", s),
        };
        let valid = |part: &str| {
            !part.is_empty() && !part.chars().any(|c| c.is_whitespace() || c.is_control())
        };
        if !valid(provider) || !valid(model) {
            return Err(BadModelRef(s.to_string()));
        }
        Ok(ModelRef {
            provider: provider.to_string(),
            model: model.to_string(),
        })
    }
}

impl fmt::Display for ModelRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.provider, self.model)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_references() {
        let m = ModelRef::parse("openai/gpt-5").unwrap();
        assert_eq!((m.provider.as_str(), m.model.as_str()), ("openai", "gpt-5"));
        assert_eq!(
            ModelRef::parse("claude-x").unwrap().to_string(),
            "anthropic/claude-x"
        );
        assert_eq!(
            ModelRef::parse("openrouter/meta/llama").unwrap().model,
            "meta/llama",
            "only the first slash separates the provider"
        );
        for bad in ["", "/m", "p/", "a b/c"] {
            assert!(ModelRef::parse(bad).is_err(), "{bad:?}");
        }
    }
}
