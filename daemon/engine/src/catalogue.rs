//! The model catalogue: what stepper knows of each model — context window, largest answer,
//! price per million tokens — for cost in `UsageUpdated` and compaction thresholds.
//!
//! Settings may describe models the table lacks (a local model's window) or override it;
//! unknown models get conservative defaults and no price.
//!
//! It also knows each model's vendor, Claude Code's aliases, and how ids vary (dated, versioned),
//! and which models take images and PDFs: an attachment a model cannot take is refused before
//! any request ([`ModelInfo::refuses`]).

use serde::{Deserialize, Serialize};
use stepper_protocol::Usage;

/// What is known of a model. Prices are US dollars per million tokens.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModelInfo {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_window: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_price: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_price: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read_price: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_price: Option<f64>,
    /// The model reasons (thinks) when asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<bool>,
    /// The tool names and shapes the model was trained on: `anthropic` (Claude Code's),
    /// `openai` (Codex's apply_patch and shell) or `plain` (stepper's). By default, its
    /// provider's kind decides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_dialect: Option<crate::dialect::ToolDialect>,
    /// The model takes images. Unknown (absent): tried, and the provider says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub images: Option<bool>,
    /// The model takes PDF documents. Unknown (absent): tried, and the provider says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pdf: Option<bool>,
}

/// For models nobody described: a window most models have, and an answer length every API
/// accepts.
pub const DEFAULT_CONTEXT_WINDOW: u64 = 128_000;
pub const DEFAULT_MAX_OUTPUT: u32 = 8192;

impl ModelInfo {
    /// Fields of `over` replace ours where set.
    pub fn overlay(&self, over: &ModelInfo) -> ModelInfo {
        ModelInfo {
            context_window: over.context_window.or(self.context_window),
            max_output: over.max_output.or(self.max_output),
            input_price: over.input_price.or(self.input_price),
            output_price: over.output_price.or(self.output_price),
            cache_read_price: over.cache_read_price.or(self.cache_read_price),
            cache_write_price: over.cache_write_price.or(self.cache_write_price),
            reasoning: over.reasoning.or(self.reasoning),
            tool_dialect: over.tool_dialect.or(self.tool_dialect),
            images: over.images.or(self.images),
            pdf: over.pdf.or(self.pdf),
        }
    }

    /// Why `model` cannot take the attachment `a`, as the user reads it; `None` when it can,
    /// or when nobody knows (the provider then says).
    pub fn refuses(&self, model: &str, a: &stepper_protocol::Attachment) -> Option<String> {
        use stepper_protocol::AttachmentKind;
        let (takes, what) = match a.kind {
            AttachmentKind::Image => (self.images, "images"),
            AttachmentKind::Document => (self.pdf, "PDF documents"),
            // A kind from a newer client: the provider says.
            _ => return None,
        };
        if takes != Some(false) {
            return None;
        }
        Some(format!(
            "model {model} takes no {what} ({}): switch with /model to one that does ({}), \
             or send the text alone",
            a.label(),
            SEES_ALL.join(", ")
        ))
    }

    pub fn context_window(&self) -> u64 {
        self.context_window.unwrap_or(DEFAULT_CONTEXT_WINDOW)
    }

    pub fn max_output(&self) -> u32 {
        self.max_output.unwrap_or(DEFAULT_MAX_OUTPUT)
    }

    /// What `usage` cost, when the prices are known. Cache reads and writes fall back to the
    /// input price when only that is known.
    pub fn cost(&self, usage: &Usage) -> Option<f64> {
        let input = self.input_price?;
        let output = self.output_price?;
        let per = |tokens: u64, price: f64| tokens as f64 * price / 1_000_000.0;
        Some(
            per(usage.input_tokens, input)
                + per(usage.output_tokens, output)
                + per(
                    usage.cache_read_tokens,
                    self.cache_read_price.unwrap_or(input),
                )
                + per(
                    usage.cache_write_tokens,
                    self.cache_write_price.unwrap_or(input),
                ),
        )
    }
}

struct Known {
    /// Matches the id and any dated or suffixed variant of it (`claude-sonnet-4-5-20250929`).
    prefix: &'static str,
    window: u64,
    max_output: u32,
    /// input, output, cache read, cache write — $ per million tokens.
    prices: (f64, f64, f64, f64),
    reasoning: bool,
    /// Takes images; `None` where the vendors' pages disagree.
    images: Option<bool>,
    /// Takes PDF documents.
    pdf: Option<bool>,
}

/// Models that take images and PDFs, named when another cannot.
const SEES_ALL: &[&str] = &["anthropic/claude-sonnet-4-5", "openai/gpt-5"];

// Public list prices as of late 2025. Longer prefixes first, so the most specific wins.
const KNOWN: &[Known] = &[
    Known {
        prefix: "claude-opus-4-1",
        window: 200_000,
        max_output: 32_000,
        prices: (15.0, 75.0, 1.5, 18.75),
        reasoning: true,
        images: Some(true),
        pdf: Some(true),
    },
    Known {
        prefix: "claude-opus-4",
        window: 200_000,
        max_output: 32_000,
        prices: (15.0, 75.0, 1.5, 18.75),
        reasoning: true,
        images: Some(true),
        pdf: Some(true),
    },
    Known {
        prefix: "claude-sonnet-4-5",
        window: 200_000,
        max_output: 64_000,
        prices: (3.0, 15.0, 0.3, 3.75),
        reasoning: true,
        images: Some(true),
        pdf: Some(true),
    },
    Known {
        prefix: "claude-sonnet-4",
        window: 200_000,
        max_output: 64_000,
        prices: (3.0, 15.0, 0.3, 3.75),
        reasoning: true,
        images: Some(true),
        pdf: Some(true),
    },
    Known {
        prefix: "claude-haiku-4-5",
        window: 200_000,
        max_output: 64_000,
        prices: (1.0, 5.0, 0.1, 1.25),
        reasoning: true,
        images: Some(true),
        pdf: Some(true),
    },
    Known {
        prefix: "claude-3-5-haiku",
        window: 200_000,
        max_output: 8192,
        prices: (0.8, 4.0, 0.08, 1.0),
        reasoning: false,
        // Anthropic's and resellers' pages disagree on whether it sees: left to the API.
        images: None,
        pdf: None,
    },
    Known {
        prefix: "gpt-5-codex",
        window: 400_000,
        max_output: 128_000,
        prices: (1.25, 10.0, 0.125, 1.25),
        reasoning: true,
        images: Some(true),
        pdf: Some(true),
    },
    Known {
        prefix: "gpt-5-mini",
        window: 400_000,
        max_output: 128_000,
        prices: (0.25, 2.0, 0.025, 0.25),
        reasoning: true,
        images: Some(true),
        pdf: Some(true),
    },
    Known {
        prefix: "gpt-5-nano",
        window: 400_000,
        max_output: 128_000,
        prices: (0.05, 0.4, 0.005, 0.05),
        reasoning: true,
        images: Some(true),
        pdf: Some(true),
    },
    Known {
        prefix: "gpt-5",
        window: 400_000,
        max_output: 128_000,
        prices: (1.25, 10.0, 0.125, 1.25),
        reasoning: true,
        images: Some(true),
        pdf: Some(true),
    },
    Known {
        prefix: "gpt-4.1-mini",
        window: 1_047_576,
        max_output: 32_768,
        prices: (0.4, 1.6, 0.1, 0.4),
        reasoning: false,
        images: Some(true),
        pdf: Some(true),
    },
    Known {
        prefix: "gpt-4.1",
        window: 1_047_576,
        max_output: 32_768,
        prices: (2.0, 8.0, 0.5, 2.0),
        reasoning: false,
        images: Some(true),
        pdf: Some(true),
    },
    Known {
        prefix: "gpt-4o-mini",
        window: 128_000,
        max_output: 16_384,
        prices: (0.15, 0.6, 0.075, 0.15),
        reasoning: false,
        images: Some(true),
        pdf: Some(true),
    },
    Known {
        prefix: "gpt-4o",
        window: 128_000,
        max_output: 16_384,
        prices: (2.5, 10.0, 1.25, 2.5),
        reasoning: false,
        images: Some(true),
        pdf: Some(true),
    },
    Known {
        prefix: "o4-mini",
        window: 200_000,
        max_output: 100_000,
        prices: (1.1, 4.4, 0.275, 1.1),
        reasoning: true,
        images: Some(true),
        pdf: Some(true),
    },
    Known {
        prefix: "o3",
        window: 200_000,
        max_output: 100_000,
        prices: (2.0, 8.0, 0.5, 2.0),
        reasoning: true,
        images: Some(true),
        pdf: Some(true),
    },
];

/// Older models still served: known for their window, prices and what they take (o3-mini,
/// o1-mini and gpt-3.5 read text only), but not offered in `/model`'s list.
const OLDER: &[Known] = &[
    Known {
        prefix: "o3-mini",
        window: 200_000,
        max_output: 100_000,
        prices: (1.1, 4.4, 0.55, 1.1),
        reasoning: true,
        images: Some(false),
        pdf: Some(false),
    },
    Known {
        prefix: "o1-mini",
        window: 128_000,
        max_output: 65_536,
        prices: (1.1, 4.4, 0.55, 1.1),
        reasoning: true,
        images: Some(false),
        pdf: Some(false),
    },
    Known {
        prefix: "o1",
        window: 200_000,
        max_output: 100_000,
        prices: (15.0, 60.0, 7.5, 15.0),
        reasoning: true,
        images: Some(true),
        pdf: Some(true),
    },
    Known {
        prefix: "gpt-3.5-turbo",
        window: 16_385,
        max_output: 4096,
        prices: (0.5, 1.5, 0.5, 0.5),
        reasoning: false,
        images: Some(false),
        pdf: Some(false),
    },
];

/// What the built-in table knows of `model` (a model id without its provider).
pub fn lookup(model: &str) -> ModelInfo {
    let id = model.rsplit('/').next().unwrap_or(model);
    KNOWN
        .iter()
        .chain(OLDER)
        .filter(|k| id.starts_with(k.prefix))
        .max_by_key(|k| k.prefix.len())
        .map(|k| ModelInfo {
            context_window: Some(k.window),
            max_output: Some(k.max_output),
            input_price: Some(k.prices.0),
            output_price: Some(k.prices.1),
            cache_read_price: Some(k.prices.2),
            cache_write_price: Some(k.prices.3),
            reasoning: Some(k.reasoning),
            tool_dialect: None,
            images: k.images,
            pdf: k.pdf,
        })
        .unwrap_or_default()
}

/// The ids the built-in table knows, for `models/list`.
pub fn known_ids() -> impl Iterator<Item = &'static str> {
    KNOWN.iter().map(|k| k.prefix)
}

/// Whether `id` is one of the older models the table knows without listing them.
pub fn is_older(id: &str) -> bool {
    OLDER.iter().any(|k| id.starts_with(k.prefix))
}

/// The provider whose own API serves a catalogue id: `anthropic` for Claude's, `openai`
/// for the others.
pub fn vendor(id: &str) -> &'static str {
    if id.starts_with("claude") {
        "anthropic"
    } else {
        "openai"
    }
}

/// Claude Code's model aliases, as a bare word names them (`/model opus`, an agent file's
/// `model: haiku`).
pub const ALIASES: &[(&str, &str)] = &[
    ("sonnet", "anthropic/claude-sonnet-4-5"),
    ("opus", "anthropic/claude-opus-4-1"),
    ("haiku", "anthropic/claude-haiku-4-5"),
];

/// The model an alias names.
pub fn alias(word: &str) -> Option<&'static str> {
    ALIASES.iter().find(|(a, _)| *a == word).map(|(_, m)| *m)
}

/// Whether `id` is `known`, or a dated or versioned variant of it
/// (`claude-sonnet-4-5-20250929`, `gpt-5.1`, `gpt-5-codex` of `gpt-5`) — as [`lookup`]
/// matches ids.
pub fn variant_of(id: &str, known: &str) -> bool {
    id == known
        || id
            .strip_prefix(known)
            .is_some_and(|rest| rest.starts_with(['-', '.', '@', ':']))
}

/// The `n` of `ids` nearest to `word`, nearest first: those holding it (or a near spelling
/// of it) come before those that only look alike.
pub fn nearest<'a>(word: &str, ids: impl IntoIterator<Item = &'a str>, n: usize) -> Vec<&'a str> {
    let word = word.to_lowercase();
    let mut scored: Vec<(usize, usize, &str)> = ids
        .into_iter()
        .map(|id| {
            let lower = id.to_lowercase();
            (
                within(&word, &lower),
                crate::config::problem::edit_distance(&word, &lower),
                id,
            )
        })
        .collect();
    scored.sort();
    scored.dedup_by_key(|(_, _, id)| *id);
    scored.into_iter().take(n).map(|(_, _, id)| id).collect()
}

/// The fewest edits that make `word` a part of `text` (0: `text` holds it).
fn within(word: &str, text: &str) -> usize {
    let text: Vec<char> = text.chars().collect();
    // A match may start and end anywhere in `text`: the first row and the last are free.
    let mut prev = vec![0; text.len() + 1];
    for (i, w) in word.chars().enumerate() {
        let mut row = vec![i + 1];
        for (j, t) in text.iter().enumerate() {
            let cost = usize::from(w != *t);
            row.push((prev[j] + cost).min(prev[j + 1] + 1).min(row[j] + 1));
        }
        prev = row;
    }
    prev.into_iter().min().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn most_specific_prefix_wins_and_dates_match() {
        assert_eq!(lookup("gpt-5-mini-2025-08-07").input_price, Some(0.25));
        assert_eq!(lookup("gpt-5").input_price, Some(1.25));
        assert_eq!(
            lookup("claude-sonnet-4-5-20250929").max_output,
            Some(64_000)
        );
        assert_eq!(
            lookup("openrouter/anthropic/claude-sonnet-4-5").context_window,
            Some(200_000)
        );
        assert_eq!(lookup("llama3.2:3b"), ModelInfo::default());
        assert_eq!(
            lookup("llama3.2:3b").context_window(),
            DEFAULT_CONTEXT_WINDOW
        );
    }

    #[test]
    fn variants_and_the_nearest_ids() {
        assert!(variant_of(
            "claude-sonnet-4-5-20250929",
            "claude-sonnet-4-5"
        ));
        assert!(variant_of("gpt-5.1", "gpt-5") && variant_of("gpt-5", "gpt-5"));
        assert!(!variant_of("gpt-50", "gpt-5") && !variant_of("o3x", "o3"));
        let ids = known_ids().collect::<Vec<_>>();
        assert_eq!(
            nearest("sonet", ids.iter().copied(), 2),
            ["claude-sonnet-4", "claude-sonnet-4-5"]
        );
        assert_eq!(nearest("gpt5-mini", ids.iter().copied(), 1), ["gpt-5-mini"]);
        assert_eq!(alias("opus"), Some("anthropic/claude-opus-4-1"));
        assert_eq!(vendor("o3"), "openai");
    }

    fn attachment(
        kind: stepper_protocol::AttachmentKind,
        name: &str,
    ) -> stepper_protocol::Attachment {
        stepper_protocol::Attachment {
            kind,
            media_type: "image/png".into(),
            name: name.into(),
            size: 120 * 1024,
            sha256: "ab".into(),
            width: None,
            height: None,
            pages: None,
        }
    }

    #[test]
    fn a_model_that_takes_no_images_says_so_and_what_to_do() {
        use stepper_protocol::AttachmentKind::{Document, Image};
        let shot = attachment(Image, "shot.png");
        let spec = attachment(Document, "spec.pdf");
        assert_eq!(
            lookup("o3-mini-2025-01-31")
                .refuses("openai/o3-mini", &shot)
                .as_deref(),
            Some(
                "model openai/o3-mini takes no images ([image: shot.png 120 KB]): switch with \
                 /model to one that does (anthropic/claude-sonnet-4-5, openai/gpt-5), or send \
                 the text alone"
            )
        );
        assert!(
            lookup("gpt-3.5-turbo")
                .refuses("gpt-3.5-turbo", &spec)
                .is_some_and(|m| m.starts_with("model gpt-3.5-turbo takes no PDF documents"))
        );
        assert!(lookup("o1-mini").refuses("o1-mini", &shot).is_some());
        for seeing in [
            "claude-sonnet-4-5",
            "claude-haiku-4-5",
            "gpt-4o-mini",
            "gpt-4.1",
            "gpt-5.1",
            "o3",
            "o4-mini",
            "o1",
        ] {
            let info = lookup(seeing);
            assert_eq!(info.refuses(seeing, &shot), None, "{seeing}");
            assert_eq!(info.refuses(seeing, &spec), None, "{seeing}");
        }
        // Known, though not listed.
        assert!(!known_ids().any(|id| id.starts_with("gpt-3.5") || id == "o3-mini"));
        assert!(is_older("gpt-3.5-turbo-0125") && !is_older("gpt-4o"));
        assert_eq!(lookup("o3-mini").input_price, Some(1.1));
        // Nobody knows: the provider is asked, and says.
        assert_eq!(lookup("llama3.2:3b").refuses("llama3.2:3b", &shot), None);
    }

    #[test]
    fn settings_say_what_a_model_takes_over_the_table() {
        let local: ModelInfo = serde_json::from_value(serde_json::json!({
            "contextWindow": 32768, "images": false, "pdf": true
        }))
        .unwrap();
        assert_eq!((local.images, local.pdf), (Some(false), Some(true)));
        let merged = lookup("gpt-4o").overlay(&local);
        assert_eq!((merged.images, merged.pdf), (Some(false), Some(true)));
        let kept = lookup("gpt-4o").overlay(&ModelInfo::default());
        assert_eq!((kept.images, kept.pdf), (Some(true), Some(true)));
        assert_eq!(
            serde_json::to_value(&local).unwrap(),
            serde_json::json!({"contextWindow": 32768, "images": false, "pdf": true})
        );
    }

    #[test]
    fn cost_counts_cache_reads_and_writes_apart() {
        let info = lookup("claude-sonnet-4-5");
        let usage = Usage {
            input_tokens: 1_000_000,
            output_tokens: 100_000,
            cache_read_tokens: 2_000_000,
            cache_write_tokens: 0,
        };
        let cost = info.cost(&usage).unwrap();
        assert!((cost - (3.0 + 1.5 + 0.6)).abs() < 1e-9, "{cost}");
        assert_eq!(ModelInfo::default().cost(&usage), None);
        let custom = ModelInfo::default().overlay(&ModelInfo {
            input_price: Some(1.0),
            output_price: Some(2.0),
            ..Default::default()
        });
        assert!((custom.cost(&usage).unwrap() - (1.0 + 0.2 + 2.0)).abs() < 1e-9);
    }
}
