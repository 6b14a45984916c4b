//! The models a provider takes, for choosing one (`session/setModel`, `/model`): the
//! catalogue's for the vendors' own APIs, those the settings describe, and for an
//! OpenAI-compatible server what it lists at `GET {baseUrl}/models`. A bare word is resolved
//! to the one catalogue model it names.

use stepper_engine::ModelRef;
use stepper_engine::catalogue;
use stepper_engine::config::{ProviderKind, Settings};

use crate::status::ProbeError;
use crate::{Providers, ResolveContext, base_url_of, convention, daemon_env};

/// Ids named in a hint, at most.
const HINT: usize = 6;

/// What a provider takes.
#[derive(Debug, Clone, PartialEq)]
pub enum Offer {
    /// These ids, and their dated or versioned variants (`claude-sonnet-4-5-20250929`).
    Listed(Vec<String>),
    /// What its server lists (with the models the settings describe): these ids exactly.
    Served(Vec<String>),
    /// Any id: the provider itself decides. Why, in words.
    Any(&'static str),
}

impl Offer {
    /// Whether `id` is one the provider takes.
    pub fn takes(&self, id: &str) -> bool {
        match self {
            Offer::Listed(ids) => ids.iter().any(|known| catalogue::variant_of(id, known)),
            // A server that lists `qwen3:latest` serves it as `qwen3` too (Ollama).
            Offer::Served(ids) => ids
                .iter()
                .any(|known| known == id || known.strip_suffix(":latest") == Some(id)),
            Offer::Any(_) => true,
        }
    }

    /// The ids it names, if it names them.
    pub fn ids(&self) -> &[String] {
        match self {
            Offer::Listed(ids) | Offer::Served(ids) => ids,
            Offer::Any(_) => &[],
        }
    }
}

/// Why a model cannot be chosen; each says what to do instead.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ChoiceError {
    #[error("{provider} has no model {id:?}{} — 'stepper models' lists the models it knows", hint(.known))]
    Unknown {
        provider: String,
        id: String,
        /// The nearest ids it does have.
        known: Vec<String>,
    },
    #[error("no model is called {word:?}{} — give it as provider/model-id", hint(.nearest))]
    NoSuchName { word: String, nearest: Vec<String> },
    #[error(
        "{word:?} names more than one model ({}) — say which, as provider/model-id",
        .models.join(", ")
    )]
    Ambiguous { word: String, models: Vec<String> },
    #[error(
        "cannot check {model} against the models its server lists: {why} — or describe the \
         model under \"providers\" → \"{provider}\" → \"models\" in setting.json to choose it \
         without asking the server"
    )]
    Unreachable {
        model: String,
        provider: String,
        why: ProbeError,
    },
}

fn hint(ids: &[String]) -> String {
    if ids.is_empty() {
        String::new()
    } else {
        format!(" (it knows {})", ids.join(", "))
    }
}

impl Providers {
    /// The catalogue a bare word and `models/list` choose from: the models each provider of
    /// the settings describes (`true`: configured), then the built-in table's under their
    /// vendor.
    pub fn catalogue(&self, settings: &Settings) -> Vec<(ModelRef, bool)> {
        let mut out = Vec::new();
        for (name, config) in &settings.providers {
            for id in config.models.keys() {
                out.push((model(name, id), true));
            }
        }
        for id in catalogue::known_ids() {
            out.push((model(catalogue::vendor(id), id), false));
        }
        out
    }

    /// The model a bare word names: an alias (`opus`), or the one catalogue model whose id
    /// it is (or a dated or versioned variant of). None, or more than one, is an error
    /// naming the nearest.
    pub fn resolve_bare(&self, word: &str, settings: &Settings) -> Result<ModelRef, ChoiceError> {
        if let Some(model) = catalogue::alias(word).and_then(|m| ModelRef::parse(m).ok()) {
            return Ok(model);
        }
        let entries = self.catalogue(settings);
        let exact: Vec<&ModelRef> = entries
            .iter()
            .map(|(m, _)| m)
            .filter(|m| m.model == word)
            .collect();
        let mut found: Vec<ModelRef> = if exact.is_empty() {
            entries
                .iter()
                .filter(|(m, _)| catalogue::variant_of(word, &m.model))
                .map(|(m, _)| model(&m.provider, word))
                .collect()
        } else {
            exact.into_iter().cloned().collect()
        };
        found.sort_by_key(ToString::to_string);
        found.dedup();
        match found.len() {
            1 => Ok(found.remove(0)),
            0 => {
                let ids: Vec<String> = entries.iter().map(|(m, _)| m.to_string()).collect();
                Err(ChoiceError::NoSuchName {
                    word: word.to_string(),
                    nearest: nearest(word, &ids),
                })
            }
            _ => Err(ChoiceError::Ambiguous {
                word: word.to_string(),
                models: found.iter().map(ToString::to_string).collect(),
            }),
        }
    }

    /// What provider `name` takes. An OpenAI-compatible server is asked for its list (with
    /// a short timeout); one that does not answer is the error.
    pub async fn offer(&self, name: &str, cx: &ResolveContext<'_>) -> Result<Offer, ProbeError> {
        let Some(config) = self.config_for(name, cx.settings) else {
            return Ok(Offer::Listed(Vec::new()));
        };
        let mut ids: Vec<String> = config.models.keys().cloned().collect();
        match config.kind {
            ProviderKind::ClaudeCode | ProviderKind::CodexCli => {
                Ok(Offer::Any("its CLI decides which models it runs"))
            }
            ProviderKind::Replay => Ok(Offer::Any("a replay names a recorded file")),
            ProviderKind::Anthropic | ProviderKind::Openai | ProviderKind::Codex => {
                // A provider of the user's own (a gateway) serves what it serves: its
                // `models` list when it has one, anything otherwise.
                if convention(name).is_none() && ids.is_empty() {
                    return Ok(Offer::Any(
                        "a provider of your own without a \"models\" list takes any id",
                    ));
                }
                let family = if config.kind == ProviderKind::Anthropic {
                    "anthropic"
                } else {
                    "openai"
                };
                ids.extend(
                    catalogue::known_ids()
                        .filter(|id| catalogue::vendor(id) == family)
                        .map(str::to_string),
                );
                Ok(Offer::Listed(ids))
            }
            ProviderKind::OpenaiChat => {
                let var = |v: &str| {
                    cx.env
                        .get(v)
                        .cloned()
                        .or_else(|| daemon_env::var(v))
                        .filter(|v| !v.trim().is_empty())
                };
                let Some(base) = base_url_of(name, &config, cx.settings, var) else {
                    return Ok(Offer::Served(ids));
                };
                let key = config
                    .api_key_env
                    .as_deref()
                    .and_then(var)
                    .or_else(|| self.stored_key(name, config.kind));
                ids.extend(self.probe(&base, key.as_deref()).await?);
                Ok(Offer::Served(ids))
            }
        }
    }

    /// Whether `model`'s provider takes its id. A model the settings describe is taken
    /// without asking its server. Call after [`Providers::check`]: a key goes to a server
    /// only once that allowed it.
    pub async fn check_choice(
        &self,
        model: &ModelRef,
        cx: &ResolveContext<'_>,
    ) -> Result<(), ChoiceError> {
        let described = cx
            .settings
            .providers
            .get(&model.provider)
            .is_some_and(|p| p.models.contains_key(&model.model));
        if described {
            return Ok(());
        }
        let offer =
            self.offer(&model.provider, cx)
                .await
                .map_err(|why| ChoiceError::Unreachable {
                    model: model.to_string(),
                    provider: model.provider.clone(),
                    why,
                })?;
        if offer.takes(&model.model) {
            return Ok(());
        }
        Err(ChoiceError::Unknown {
            provider: model.provider.clone(),
            id: model.model.clone(),
            known: nearest(&model.model, offer.ids()),
        })
    }
}

fn model(provider: &str, id: &str) -> ModelRef {
    ModelRef {
        provider: provider.to_string(),
        model: id.to_string(),
    }
}

fn nearest(word: &str, ids: &[String]) -> Vec<String> {
    catalogue::nearest(word, ids.iter().map(String::as_str), HINT)
        .into_iter()
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use stepper_protocol::session::Env;

    fn providers() -> (tempfile::TempDir, Providers) {
        let dir = tempfile::tempdir().unwrap();
        let providers = Providers::new(dir.path().join("credentials.json")).unwrap();
        (dir, providers)
    }

    #[test]
    fn a_bare_word_names_one_catalogue_model_or_says_which_are_near() {
        let (_dir, providers) = providers();
        let settings: Settings = serde_json::from_value(serde_json::json!({"providers": {
            "local": {"kind": "openai-chat", "baseUrl": "http://127.0.0.1:9", "models": {"qwen3:8b": {}}},
            "other": {"kind": "openai-chat", "baseUrl": "http://127.0.0.1:9", "models": {"gpt-5": {}}}
        }}))
        .unwrap();
        let bare = |w: &str| {
            providers
                .resolve_bare(w, &settings)
                .map(|m| m.to_string())
                .map_err(|e| e.to_string())
        };
        assert_eq!(bare("opus").unwrap(), "anthropic/claude-opus-4-1");
        assert_eq!(
            bare("claude-haiku-4-5").unwrap(),
            "anthropic/claude-haiku-4-5"
        );
        assert_eq!(
            bare("claude-sonnet-4-5-20250929").unwrap(),
            "anthropic/claude-sonnet-4-5-20250929"
        );
        assert_eq!(bare("qwen3:8b").unwrap(), "local/qwen3:8b");
        let two = bare("gpt-5").unwrap_err();
        assert!(two.contains("openai/gpt-5, other/gpt-5"), "{two}");
        let none = bare("sonet").unwrap_err();
        assert!(
            none.contains("no model is called \"sonet\"")
                && none.contains("anthropic/claude-sonnet-4"),
            "{none}"
        );
    }

    #[tokio::test]
    async fn an_unknown_id_of_a_known_provider_is_refused_and_any_id_where_the_provider_decides() {
        let (dir, providers) = providers();
        let settings: Settings = serde_json::from_value(serde_json::json!({"providers": {
            "gateway": {"kind": "openai", "baseUrl": "http://127.0.0.1:9"},
            "listed": {"kind": "anthropic", "baseUrl": "http://127.0.0.1:9", "models": {"house-model": {}}},
            "down": {"kind": "openai-chat", "baseUrl": "http://127.0.0.1:9"}
        }}))
        .unwrap();
        let env = Env::new();
        let cx = ResolveContext {
            env: &env,
            settings: &settings,
            user: &settings,
            cwd: dir.path(),
        };
        let check = |m: &'static str| {
            let providers = providers.clone();
            let cx = &cx;
            async move {
                providers
                    .check_choice(&ModelRef::parse(m).unwrap(), cx)
                    .await
                    .map_err(|e| e.to_string())
            }
        };
        check("anthropic/claude-opus-4-1").await.unwrap();
        check("openai/gpt-5.1").await.unwrap();
        let wrong = check("anthropic/claude-sonet-4-5").await.unwrap_err();
        assert!(
            wrong.starts_with(
                "anthropic has no model \"claude-sonet-4-5\" (it knows claude-sonnet-4-5"
            ),
            "{wrong}"
        );
        assert!(
            check("openai/claude-opus-4-1").await.is_err(),
            "not openai's"
        );
        check("gateway/anything").await.unwrap();
        check("claude-code/opus").await.unwrap();
        check("listed/house-model").await.unwrap();
        check("listed/claude-opus-4-1").await.unwrap();
        assert!(check("listed/other").await.is_err());
        // A server that cannot be asked is said, not taken on trust.
        let down = check("down/qwen3").await.unwrap_err();
        assert!(down.contains("cannot check down/qwen3"), "{down}");
    }
}
