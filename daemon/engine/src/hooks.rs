//! What a turn asks of the user's hooks (Claude Code's `PreToolUse`, `PostToolUse`, `Stop`):
//! the engine says when, the daemon runs them. A hook can change a call's input, settle its
//! permission, block it, give the model feedback on a result, or keep the turn going.

use futures::future::BoxFuture;
use serde_json::{Value, json};

use crate::provider::Media;
use crate::provider::MediaOrigin;

pub mod settings;

/// The events hooks may be configured for, by Claude Code's names ([`HookEvent::ALL`]).
pub use stepper_protocol::event::HookEvent;

/// The events' names, as settings spell them.
pub fn event_names() -> Vec<&'static str> {
    HookEvent::ALL.iter().map(|e| e.as_str()).collect()
}

/// Claude Code's events stepper accepts in settings and never fires, each with why and
/// what to do instead: a repository's settings that have them load as they are.
pub const NOT_FIRED: &[(&str, &str)] = &[(
    "Setup",
    "Claude Code fires it only for `claude --init` and `--maintenance`, which stepper has no \
     counterpart of; to set a project up at each session's start, use SessionStart with the \
     matcher \"startup\"",
)];

/// Why `event` is accepted and not run, if it is one of [`NOT_FIRED`].
pub fn not_fired(event: &str) -> Option<&'static str> {
    NOT_FIRED
        .iter()
        .find_map(|(name, why)| (*name == event).then_some(*why))
}

/// What a `PreToolUse` hook settled about a call's permission. Deny rules hold either way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GateHint {
    /// Run without asking (unless a deny rule refuses it).
    Allow,
    /// Ask the user, even where the gate would allow it; the reason is shown.
    Ask(String),
}

/// Before a tool call runs.
#[derive(Debug, Clone, PartialEq)]
pub enum BeforeTool {
    /// Run it: with this input instead of the model's, and this permission, when given;
    /// `context` is added to what the model reads of its result.
    Run {
        input: Option<serde_json::Value>,
        hint: Option<GateHint>,
        context: Option<String>,
    },
    /// Do not run it; the reason goes to the model.
    Block(String),
    /// Do not run it, and end the turn after this step; the reason is said to the user.
    StopTurn(String),
}

impl BeforeTool {
    pub const RUN: BeforeTool = BeforeTool::Run {
        input: None,
        hint: None,
        context: None,
    };
}

/// After a tool call ran.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AfterTool {
    /// Added to what the model reads of the result.
    pub feedback: Option<String>,
    /// End the turn after this step (`continue: false`); the reason is said to the user.
    pub stop: Option<String>,
}

/// A call's result as `PostToolUse` hooks are told it.
#[derive(Debug, Clone, Copy)]
pub struct ToolEnd<'a> {
    /// What the model reads of it (redacted); the error, when it failed.
    pub output: &'a str,
    /// It succeeded.
    pub ok: bool,
    /// Pictures and PDFs the model sees beside `output` (`read` of a picture or PDF).
    pub media: &'a [Media],
    /// The file a `read` showed as a picture or PDF, as it is on disk.
    pub origin: Option<MediaOrigin>,
}

impl<'a> ToolEnd<'a> {
    /// A result of text alone.
    pub fn text(output: &'a str, ok: bool) -> ToolEnd<'a> {
        ToolEnd {
            output,
            ok,
            media: &[],
            origin: None,
        }
    }
}

/// A `read`'s result as Claude Code gives it to `PostToolUse` hooks (`tool_response`), for the
/// file at `file_path` (absolute, as the hook's `tool_input` has it): `{"type": "image"}` with
/// the picture the model saw (base64), its type, the file's size and both sizes in pixels;
/// `{"type": "pdf"}` with the PDF; `{"type": "text"}` with what the model read otherwise.
pub fn claude_read_response(file_path: &Value, end: &ToolEnd<'_>) -> Value {
    let Some(shown) = end.media.first() else {
        return json!({
            "type": "text",
            "file": {"filePath": file_path, "content": end.output},
        });
    };
    let original_size = end.origin.map_or(shown.about.size, |o| o.size);
    if !shown.is_image() {
        return json!({
            "type": "pdf",
            "file": {
                "filePath": file_path,
                "base64": shown.base64(),
                "originalSize": original_size,
            },
        });
    }
    let mut dimensions = serde_json::Map::new();
    let origin = end.origin.unwrap_or_default();
    for (key, value) in [
        ("originalWidth", origin.width.or(shown.about.width)),
        ("originalHeight", origin.height.or(shown.about.height)),
        ("displayWidth", shown.about.width),
        ("displayHeight", shown.about.height),
    ] {
        if let Some(value) = value {
            dimensions.insert(key.into(), json!(value));
        }
    }
    let mut file = json!({
        "base64": shown.base64(),
        "type": shown.about.media_type,
        "originalSize": original_size,
    });
    if !dimensions.is_empty() {
        file["dimensions"] = Value::Object(dimensions);
    }
    json!({"type": "image", "file": file})
}

pub trait TurnHooks: Send + Sync {
    /// `tool` is about to run with `input` (the names are stepper's: `bash`, `edit`, …).
    fn before_tool<'a>(
        &'a self,
        call_id: &'a str,
        tool: &'a str,
        input: &'a serde_json::Value,
    ) -> BoxFuture<'a, BeforeTool>;

    /// `tool` ran and ended as `end` says: what to add to what the model reads of it, and
    /// whether the turn ends after this step.
    fn after_tool<'a>(
        &'a self,
        call_id: &'a str,
        tool: &'a str,
        input: &'a serde_json::Value,
        end: ToolEnd<'a>,
    ) -> BoxFuture<'a, AfterTool>;

    /// A call's input as a hook changed it when asked for permission (`changed`, in the
    /// hook's spelling), over the call's own `input`, in stepper's spelling.
    fn changed_input(
        &self,
        tool: &str,
        changed: &serde_json::Value,
        input: &serde_json::Value,
    ) -> serde_json::Value {
        let _ = (tool, input);
        changed.clone()
    }

    /// The model is done; `Some(reason)` keeps the turn going with the reason as the user's
    /// words. `active`: a hook already kept it going once in this turn.
    fn before_stop<'a>(&'a self, active: bool, last_text: &'a str)
    -> BoxFuture<'a, Option<String>>;

    /// The context is being compacted (`done`: it was): `trigger` is `auto` or `manual`,
    /// `instructions` what the user asked the summary to keep (`PreCompact`, `PostCompact`).
    fn compacting<'a>(
        &'a self,
        trigger: &'a str,
        instructions: Option<&'a str>,
        done: bool,
    ) -> BoxFuture<'a, ()> {
        let _ = (trigger, instructions, done);
        Box::pin(async {})
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use stepper_protocol::{Attachment, AttachmentKind};

    use super::*;

    fn media(
        kind: AttachmentKind,
        media_type: &str,
        bytes: &[u8],
        pixels: Option<(u32, u32)>,
    ) -> Media {
        Media::new(
            Attachment {
                kind,
                media_type: media_type.into(),
                name: "x".into(),
                size: bytes.len() as u64,
                sha256: "0".repeat(64),
                width: pixels.map(|p| p.0),
                height: pixels.map(|p| p.1),
                pages: None,
            },
            Arc::from(bytes),
        )
    }

    #[test]
    fn a_read_picture_reaches_hooks_in_claude_codes_shape() {
        let shown = [media(
            AttachmentKind::Image,
            "image/jpeg",
            b"\xff\xd8\xffscaled",
            Some((2000, 1500)),
        )];
        let end = ToolEnd {
            output: "Image read: big.png (…)",
            ok: true,
            media: &shown,
            origin: Some(MediaOrigin {
                size: 9_000_000,
                width: Some(4000),
                height: Some(3000),
            }),
        };
        assert_eq!(
            claude_read_response(&json!("/p/big.png"), &end),
            json!({
                "type": "image",
                "file": {
                    "base64": "/9j/c2NhbGVk",
                    "type": "image/jpeg",
                    "originalSize": 9_000_000,
                    "dimensions": {
                        "originalWidth": 4000,
                        "originalHeight": 3000,
                        "displayWidth": 2000,
                        "displayHeight": 1500,
                    },
                },
            })
        );
    }

    #[test]
    fn a_picture_kept_as_it_is_has_the_same_sizes_both_ways() {
        let shown = [media(
            AttachmentKind::Image,
            "image/png",
            b"\x89PNG",
            Some((40, 30)),
        )];
        let end = ToolEnd {
            media: &shown,
            ..ToolEnd::text("Image read: a.png", true)
        };
        let response = claude_read_response(&json!("/p/a.png"), &end);
        assert_eq!(response["file"]["originalSize"], 4);
        assert_eq!(
            response["file"]["dimensions"],
            json!({"originalWidth": 40, "originalHeight": 30, "displayWidth": 40, "displayHeight": 30})
        );
    }

    #[test]
    fn a_read_pdf_reaches_hooks_as_claude_codes_pdf() {
        let shown = [media(
            AttachmentKind::Document,
            "application/pdf",
            b"%PDF-1.4",
            None,
        )];
        let end = ToolEnd {
            output: "PDF read: spec.pdf (1 page, 8 B)",
            ok: true,
            media: &shown,
            origin: Some(MediaOrigin {
                size: 8,
                width: None,
                height: None,
            }),
        };
        assert_eq!(
            claude_read_response(&json!("/p/spec.pdf"), &end),
            json!({
                "type": "pdf",
                "file": {"filePath": "/p/spec.pdf", "base64": "JVBERi0xLjQ=", "originalSize": 8},
            })
        );
    }

    #[test]
    fn a_read_text_file_keeps_its_shape() {
        assert_eq!(
            claude_read_response(&json!("/p/a.txt"), &ToolEnd::text("     1\thi\n", true)),
            json!({"type": "text", "file": {"filePath": "/p/a.txt", "content": "     1\thi\n"}})
        );
    }
}
