//! Claude Code's tools: what Claude models were trained to call. stepper's own tools already
//! take most of Claude Code's arguments; this dialect gives them Claude Code's names and
//! `file_path`, and grep its `-i`/`-n`/`-A`/`-B`/`-C`.

use serde_json::Value;

use super::{Translated, rename_keys, rename_schema};
use crate::provider::ToolSpec;

/// (internal, Claude Code's) tool names.
pub(super) const NAMES: &[(&str, &str)] = &[
    ("read", "Read"),
    ("write", "Write"),
    ("edit", "Edit"),
    ("multi_edit", "MultiEdit"),
    ("bash", "Bash"),
    ("glob", "Glob"),
    ("grep", "Grep"),
    ("ls", "LS"),
    ("todo_write", "TodoWrite"),
    ("web_fetch", "WebFetch"),
];

/// The argument renames (internal, Claude Code's) of a tool, by internal name.
fn renames(internal: &str) -> &'static [(&'static str, &'static str)] {
    match internal {
        "read" | "write" | "edit" | "multi_edit" => &[("path", "file_path")],
        "grep" => &[
            ("case_insensitive", "-i"),
            ("line_numbers", "-n"),
            ("after", "-A"),
            ("before", "-B"),
            ("context", "-C"),
        ],
        _ => &[],
    }
}

pub(super) fn offer(spec: ToolSpec) -> ToolSpec {
    let Some((_, name)) = NAMES.iter().find(|(i, _)| *i == spec.name) else {
        return spec;
    };
    ToolSpec {
        input_schema: rename_schema(&spec.input_schema, renames(&spec.name)),
        description: rename_mentions(&spec.description, renames(&spec.name)),
        name: (*name).to_string(),
    }
}

pub(super) fn translate(name: &str, arguments: &Value) -> Option<Translated> {
    let (internal, _) = NAMES.iter().find(|(_, c)| *c == name)?;
    let back: Vec<(&str, &str)> = renames(internal).iter().map(|(i, c)| (*c, *i)).collect();
    Some(Translated {
        name: (*internal).to_string(),
        arguments: rename_keys(arguments, &back),
    })
}

/// A description's mentions of other tools and of renamed arguments in Claude Code's
/// names: `` `write` ``, `multi_edit`, "use write", "read's output", `` `path` ``.
fn rename_mentions(text: &str, renames: &[(&str, &str)]) -> String {
    let mut out = text.to_string();
    for (internal, claude) in NAMES {
        out = out.replace(&format!("`{internal}`"), &format!("`{claude}`"));
        if internal.contains('_') {
            out = out.replace(internal, claude);
        }
        for phrase in [
            "use {}",
            "the {} tool",
            "{}'s output",
            "rules of {}",
            "several {} calls",
        ] {
            out = out.replace(
                &phrase.replace("{}", internal),
                &phrase.replace("{}", claude),
            );
        }
    }
    out = out.replace(
        "the read, edit, glob and grep tools",
        "the Read, Edit, Glob and Grep tools",
    );
    for (internal, claude) in renames {
        out = out.replace(&format!("`{internal}`"), &format!("`{claude}`"));
    }
    out
}
