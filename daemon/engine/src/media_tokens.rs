//! What an image or a PDF costs a context, in tokens, by its provider's documented
//! accounting — so compaction's threshold and `/context` count a screenshot as the model
//! will, not as the few bytes of its [`Attachment`] in a context's JSON.
//!
//! - Anthropic: an image is scaled to fit a long edge of 1568 px and about 1.15 megapixels,
//!   then costs `width × height / 750`.
//! - OpenAI: an image (high detail, which `auto` comes to for anything but a thumbnail) is
//!   fitted in a 2048 px square, its short side brought down to 768 px, then costs 85 plus
//!   170 per 512 px tile.
//! - A PDF costs [`PDF_PAGE_TOKENS`] a page with either; without a page count, its pages are
//!   guessed from its size ([`PDF_BYTES_PER_PAGE`]).

use stepper_protocol::{Attachment, AttachmentKind};

use crate::provider::ProviderKind;

/// A PDF page's tokens. Anthropic documents 1,500–3,000 tokens of text a page, and charges
/// each page's picture on top as an image; OpenAI also sends each page's text and picture
/// and gives no figure. The top of Anthropic's range, then: an estimate under the truth lets
/// a context overflow its window before compaction starts, one over it only compacts sooner.
pub const PDF_PAGE_TOKENS: u64 = 3_000;
/// A page of a PDF whose pages could not be counted, in bytes: text PDFs hold a few KB a
/// page, scanned ones a few hundred; this is between.
pub const PDF_BYTES_PER_PAGE: u64 = 50_000;
/// Providers read at most this many pages of a PDF (Anthropic's limit).
const PDF_MAX_PAGES: u64 = 100;

/// How a vendor counts images.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Accounting {
    Anthropic,
    OpenAi,
}

impl Accounting {
    /// The accounting of the models behind a provider kind. A recording played back counts
    /// as Anthropic's (its models are unknown; Anthropic's count is the larger).
    pub fn of(kind: ProviderKind) -> Accounting {
        match kind {
            ProviderKind::Openai
            | ProviderKind::OpenaiChat
            | ProviderKind::Codex
            | ProviderKind::CodexCli => Accounting::OpenAi,
            _ => Accounting::Anthropic,
        }
    }

    /// The accounting of a model by its id (`claude-…` is Anthropic's, others OpenAI's),
    /// where the provider kind is not at hand.
    pub fn of_model(model: &str) -> Accounting {
        let id = model.rsplit('/').next().unwrap_or(model);
        match crate::catalogue::vendor(id) {
            "anthropic" => Accounting::Anthropic,
            _ => Accounting::OpenAi,
        }
    }

    /// The accounting of a model call: the model decides how it counts, whichever wire
    /// carries it (a Claude model through OpenRouter counts as Anthropic's), and Claude
    /// Code's back-end, whose ids are aliases (`sonnet`), is Anthropic's.
    pub fn of_call(kind: Option<ProviderKind>, model: &str) -> Accounting {
        match kind {
            Some(ProviderKind::Anthropic | ProviderKind::ClaudeCode) => Accounting::Anthropic,
            _ => Accounting::of_model(model),
        }
    }

    /// What `a` costs a context.
    pub fn tokens(self, a: &Attachment) -> u64 {
        match a.kind {
            AttachmentKind::Document => pdf_tokens(a),
            _ => match (a.width, a.height, self) {
                (Some(w), Some(h), Accounting::Anthropic) => anthropic_image(w, h),
                (Some(w), Some(h), Accounting::OpenAi) => openai_image(w, h),
                // Not measured: the most an image can cost.
                (_, _, Accounting::Anthropic) => anthropic_image(1072, 1072),
                (_, _, Accounting::OpenAi) => openai_image(2048, 768),
            },
        }
    }
}

/// What `a` costs a context with a provider of `kind`.
pub fn tokens(kind: ProviderKind, a: &Attachment) -> u64 {
    Accounting::of(kind).tokens(a)
}

/// Anthropic: fitted to a 1568 px long edge and about 1.15 megapixels, then one token per
/// 750 pixels.
fn anthropic_image(width: u32, height: u32) -> u64 {
    const LONG_EDGE: f64 = 1568.0;
    const PIXELS: f64 = 1_150_000.0;
    let (mut w, mut h) = (f64::from(width.max(1)), f64::from(height.max(1)));
    let long = w.max(h);
    if long > LONG_EDGE {
        w *= LONG_EDGE / long;
        h *= LONG_EDGE / long;
    }
    if w * h > PIXELS {
        let k = (PIXELS / (w * h)).sqrt();
        w *= k;
        h *= k;
    }
    (w.round() * h.round() / 750.0).ceil() as u64
}

/// OpenAI, high detail: fitted in a 2048 px square, the short side brought down to 768 px,
/// then 85 tokens and 170 per 512 px tile.
fn openai_image(width: u32, height: u32) -> u64 {
    let (mut w, mut h) = (f64::from(width.max(1)), f64::from(height.max(1)));
    let long = w.max(h);
    if long > 2048.0 {
        w *= 2048.0 / long;
        h *= 2048.0 / long;
    }
    let short = w.min(h);
    if short > 768.0 {
        w *= 768.0 / short;
        h *= 768.0 / short;
    }
    let tiles = (w.round() / 512.0).ceil() as u64 * (h.round() / 512.0).ceil() as u64;
    85 + 170 * tiles
}

fn pdf_tokens(a: &Attachment) -> u64 {
    let pages = a
        .pages
        .map(u64::from)
        .unwrap_or_else(|| a.size.div_ceil(PDF_BYTES_PER_PAGE))
        .clamp(1, PDF_MAX_PAGES);
    pages * PDF_PAGE_TOKENS
}

#[cfg(test)]
mod tests {
    use super::*;

    fn image(width: u32, height: u32) -> Attachment {
        Attachment {
            kind: AttachmentKind::Image,
            media_type: "image/png".into(),
            name: "shot.png".into(),
            size: 120 * 1024,
            sha256: "ab".into(),
            width: Some(width),
            height: Some(height),
            pages: None,
        }
    }

    fn pdf(size: u64, pages: Option<u32>) -> Attachment {
        Attachment {
            kind: AttachmentKind::Document,
            media_type: "application/pdf".into(),
            size,
            pages,
            width: None,
            height: None,
            ..image(0, 0)
        }
    }

    #[test]
    fn anthropic_counts_pixels_after_fitting_its_limits() {
        // The examples of Anthropic's vision guide: 200 × 200 ≈ 54, 1000 × 1000 ≈ 1334.
        assert_eq!(tokens(ProviderKind::Anthropic, &image(200, 200)), 54);
        assert_eq!(tokens(ProviderKind::Anthropic, &image(1000, 1000)), 1334);
        // A 4K screenshot costs what it is scaled to, not its 8 megapixels.
        let big = tokens(ProviderKind::Anthropic, &image(3840, 2160));
        assert!((1500..=1534).contains(&big), "{big}");
        // A tall strip: its long edge is brought to 1568 px first.
        assert_eq!(
            tokens(ProviderKind::ClaudeCode, &image(400, 3136)),
            (200.0_f64 * 1568.0 / 750.0).ceil() as u64
        );
    }

    #[test]
    fn openai_counts_tiles() {
        // OpenAI's examples: 1024 × 1024 is 4 tiles (765), 2048 × 4096 is 6 (1105).
        assert_eq!(tokens(ProviderKind::Openai, &image(1024, 1024)), 765);
        assert_eq!(tokens(ProviderKind::OpenaiChat, &image(2048, 4096)), 1105);
        assert_eq!(tokens(ProviderKind::Codex, &image(100, 100)), 255);
    }

    #[test]
    fn an_image_not_measured_counts_as_the_most_it_can_cost() {
        let unmeasured = Attachment {
            width: None,
            height: None,
            ..image(1, 1)
        };
        assert_eq!(tokens(ProviderKind::Openai, &unmeasured), 85 + 170 * 8);
        assert_eq!(
            tokens(ProviderKind::Anthropic, &unmeasured),
            (1072.0_f64 * 1072.0 / 750.0).ceil() as u64
        );
    }

    #[test]
    fn a_pdf_counts_by_its_pages_or_its_size() {
        assert_eq!(
            tokens(ProviderKind::Anthropic, &pdf(900_000, Some(3))),
            9_000
        );
        assert_eq!(tokens(ProviderKind::Openai, &pdf(900_000, Some(3))), 9_000);
        // 120 KB, pages unknown: three pages' worth.
        assert_eq!(tokens(ProviderKind::Anthropic, &pdf(120_000, None)), 9_000);
        assert_eq!(tokens(ProviderKind::Anthropic, &pdf(10, None)), 3_000);
        assert_eq!(
            tokens(ProviderKind::Anthropic, &pdf(1, Some(500))),
            100 * PDF_PAGE_TOKENS
        );
    }

    #[test]
    fn a_model_id_tells_the_accounting_when_the_kind_is_not_at_hand() {
        assert_eq!(
            Accounting::of_model("anthropic/claude-sonnet-4-5"),
            Accounting::Anthropic
        );
        assert_eq!(
            Accounting::of_model("openrouter/anthropic/claude-haiku-4-5"),
            Accounting::Anthropic
        );
        assert_eq!(Accounting::of_model("gpt-5.1"), Accounting::OpenAi);
        assert_eq!(
            Accounting::of_call(
                Some(ProviderKind::OpenaiChat),
                "openrouter/anthropic/claude-opus-4-1"
            ),
            Accounting::Anthropic
        );
        assert_eq!(
            Accounting::of_call(Some(ProviderKind::ClaudeCode), "claude-code/sonnet"),
            Accounting::Anthropic
        );
        assert_eq!(
            Accounting::of_call(Some(ProviderKind::CodexCli), "codex-cli/gpt-5-codex"),
            Accounting::OpenAi
        );
    }
}
