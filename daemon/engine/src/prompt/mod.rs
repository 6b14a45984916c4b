//! What the model is told: the base instructions of its family, the environment it works in,
//! and how the user's own instructions compose on top. Assembled here, in one place, so every
//! agent of a turn (layers, workers, subagents) is told the same way, and the requests'
//! snapshot tests show every change.
//!
//! The system prompt holds what rarely changes (instructions, folder, platform, mode), first,
//! for the prompt cache. What changes between turns (the date, git's state) goes to the
//! conversation as an `<environment_context>` message when it changed, as Codex does, so the
//! cached prefix stays valid.
//!
//! **What the model sees is assembled in one place.** The system prompt of every agent of a turn is
//! `prompt::SystemPrompt` (stable parts first, for the prompt cache); what changes between turns
//! goes in an `<environment_context>` after the user's words, sent only when it changed; tools pass
//! through the model's `ToolDialect` both ways. The requests are insta snapshots
//! (`tests/e2e/prompt.rs`): a change to either shows in review.

pub mod environment;

pub use environment::{Environment, GitState, Moment};

use crate::dialect::ToolDialect;

const BASE: &str = include_str!("base.md");

/// How to edit files, in each dialect's tools.
fn editing(dialect: ToolDialect) -> &'static str {
    match dialect {
        ToolDialect::Openai => {
            "- Change files with apply_patch: update with a few lines of context around each \
             change, add and delete files, several files in one patch. Read the part of the \
             file you change first. Don't edit files through shell commands (sed -i, echo >, \
             cat <<EOF)."
        }
        ToolDialect::Anthropic => {
            "- Read a file before you Edit it. Edit replaces one exact, unique old_string: \
             copy it from the file with its indentation, and include enough lines to make it \
             unique, or set replace_all. Use MultiEdit for several changes to one file, and \
             Write only for new files or whole rewrites. Don't edit files through Bash (sed \
             -i, echo >)."
        }
        ToolDialect::Plain => {
            "- Read a file before you edit it. edit replaces one exact, unique old_string: \
             copy it from the file with its indentation, and include enough lines to make it \
             unique, or set replace_all. Use multi_edit for several changes to one file, and \
             write only for new files or whole rewrites. Don't edit files through bash (sed \
             -i, echo >)."
        }
    }
}

/// The base instructions for models offered tools in `dialect`.
pub fn base(dialect: ToolDialect) -> String {
    let name = |internal| format!("`{}`", dialect.name_of(internal));
    BASE.replace("{editing}", editing(dialect))
        .replace("{read}", &name("read"))
        .replace("{grep}", &name("grep"))
        .replace("{glob}", &name("glob"))
        .replace("{shell}", &name("bash"))
        .replace("{todo}", &name("todo_write"))
}

/// Instructions a user gives in place of or after the base: `systemPrompt` and
/// `appendSystemPrompt` in settings, `--system-prompt` and `--append-system-prompt` for a
/// session (which win over the settings').
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UserInstructions {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub append_system_prompt: Option<String>,
}

impl UserInstructions {
    pub fn is_empty(&self) -> bool {
        self.system_prompt.is_none() && self.append_system_prompt.is_none()
    }

    /// `self` where it says something, else `fallback`'s, field by field.
    pub fn over(&self, fallback: &UserInstructions) -> UserInstructions {
        UserInstructions {
            system_prompt: self
                .system_prompt
                .clone()
                .or_else(|| fallback.system_prompt.clone()),
            append_system_prompt: self
                .append_system_prompt
                .clone()
                .or_else(|| fallback.append_system_prompt.clone()),
        }
    }

    /// The base these leave.
    pub fn base(&self) -> Base {
        match &self.system_prompt {
            Some(text) => Base::Replaced(text.clone()),
            None => Base::Family,
        }
    }
}

/// Where the base instructions come from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Base {
    /// The family's own.
    #[default]
    Family,
    /// The user's text in their place (`systemPrompt`, `--system-prompt`).
    Replaced(String),
    /// None at all: a layer or agent whose front matter says `base-instructions: false`.
    Left,
}

/// Everything a system prompt is assembled from, in the order it is sent.
#[derive(Debug, Clone, Default)]
pub struct SystemPrompt<'a> {
    pub dialect: ToolDialect,
    pub base: Base,
    /// The environment, rendered (see [`Environment::render`]).
    pub environment: &'a str,
    /// The memory files' joined text, and what hooks added.
    pub memory: &'a str,
    /// `appendSystemPrompt`, `--append-system-prompt`.
    pub append: &'a str,
    /// The agent's own: a layer's prompt, a subagent's definition.
    pub agent: &'a str,
}

impl SystemPrompt<'_> {
    pub fn render(&self) -> String {
        let base = match &self.base {
            Base::Family => base(self.dialect),
            Base::Replaced(text) => text.clone(),
            Base::Left => String::new(),
        };
        let parts = [
            base.trim(),
            self.environment.trim(),
            self.memory.trim(),
            self.append.trim(),
            self.agent.trim(),
        ];
        parts
            .iter()
            .filter(|p| !p.is_empty())
            .copied()
            .collect::<Vec<_>>()
            .join("\n\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_family_names_its_own_tools() {
        let anthropic = base(ToolDialect::Anthropic);
        assert!(anthropic.contains("`TodoWrite`") && anthropic.contains("`Bash`"));
        assert!(
            !anthropic.contains('{'),
            "every placeholder is filled:\n{anthropic}"
        );
        let openai = base(ToolDialect::Openai);
        assert!(openai.contains("apply_patch") && openai.contains("`update_plan`"));
        assert!(openai.contains("`shell`") && !openai.contains("`Bash`"));
        let plain = base(ToolDialect::Plain);
        assert!(plain.contains("`todo_write`") && plain.contains("`bash`"));
    }

    #[test]
    fn parts_compose_in_order_and_empty_ones_leave_no_gap() {
        let prompt = SystemPrompt {
            dialect: ToolDialect::Plain,
            base: Base::Replaced("You review code.".into()),
            environment: "# Environment\nx",
            memory: "",
            append: "Answer in French.",
            agent: "",
        };
        assert_eq!(
            prompt.render(),
            "You review code.\n\n# Environment\nx\n\nAnswer in French."
        );
        let left = SystemPrompt {
            base: Base::Left,
            ..Default::default()
        };
        assert_eq!(left.render(), "");
    }
}
