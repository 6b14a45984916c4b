//! The commands the daemon answers itself when an input starts with one, whichever client
//! submitted it (`ask`, the TUI, an editor): `/model [id]`, `/context`, `/help` and `/clear`
//! are turns without a model call — the answer is the turn's message — and `/compact [what
//! to keep]` is a turn of compaction (run in `turn::compact`; the others in
//! `turn::builtin`). They win over a custom command of the
//! same name. What only a client can do (the TUI's `/detach`, its pickers) stays there.

/// A built-in command, as an input names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Builtin<'a> {
    /// `/model` alone lists the models to switch to; with an id, switches.
    Model(&'a str),
    Context,
    Help,
    Clear,
    /// With what the summary should keep.
    Compact(&'a str),
}

/// The built-ins as `/help` and `commands/list` name them: name, arguments, what it does.
pub(crate) const BUILTINS: &[(&str, &str, &str)] = &[
    (
        "model",
        "[provider/model-id]",
        "switch the model of the next turns (a bare id or alias will do); alone, list the models to switch to",
    ),
    (
        "context",
        "",
        "how full the model's context window is, by part",
    ),
    ("compact", "[what to keep]", "compact the conversation now"),
    (
        "clear",
        "",
        "forget the conversation: the model starts afresh (the transcript stays, and a rewind brings it back)",
    ),
    (
        "help",
        "",
        "the built-in commands, and the commands and skills of this folder",
    ),
];

impl Builtin<'_> {
    /// The built-in `text` starts with, if it starts with one (its first word, alone).
    pub(crate) fn parse(text: &str) -> Option<Builtin<'_>> {
        let text = text.trim();
        let (name, args) = match text.split_once(char::is_whitespace) {
            Some((name, args)) => (name, args.trim()),
            None => (text, ""),
        };
        Some(match name {
            "/model" => Builtin::Model(args),
            "/context" => Builtin::Context,
            "/help" => Builtin::Help,
            "/clear" => Builtin::Clear,
            "/compact" => Builtin::Compact(args),
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_builtin_is_the_first_word_alone() {
        assert_eq!(Builtin::parse("/model"), Some(Builtin::Model("")));
        assert_eq!(
            Builtin::parse("  /model  openai/gpt-5 "),
            Some(Builtin::Model("openai/gpt-5"))
        );
        assert_eq!(Builtin::parse("/context"), Some(Builtin::Context));
        assert_eq!(Builtin::parse("/clear\n"), Some(Builtin::Clear));
        assert_eq!(
            Builtin::parse("/compact keep the names"),
            Some(Builtin::Compact("keep the names"))
        );
        assert_eq!(Builtin::parse("/compact"), Some(Builtin::Compact("")));
        for not in [
            "/compacted",
            "/models",
            "/review x",
            "what does /help do",
            "/etc/hosts",
        ] {
            assert_eq!(Builtin::parse(not), None, "{not}");
        }
    }
}
