//! Slash commands: which ones the TUI knows, and what each typed line asks for.
//!
//! The TUI handles only what is about the terminal (its keys, `/detach`, the model picker)
//! or maps directly to an action (`/mode`, `/rewind`, `/continue`). The daemon's built-ins
//! (`/model ID`, `/context`, `/help`, `/clear`) are submitted as inputs, so every client gets
//! the same answers; every other command goes to the daemon as `Action::Command`, where
//! commands live.

use crate::{Action, PermissionMode};

pub(crate) struct CommandSpec {
    pub name: &'static str,
    pub help: &'static str,
    /// Takes an argument: completing it leaves the cursor after a space instead of running it.
    pub takes_args: bool,
    /// The TUI runs it (or its picker): its `/help` lists it. The daemon's own `/help`
    /// answers the others.
    pub local: bool,
}

pub(crate) const COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "/help",
        help: "keys, commands and skills",
        takes_args: false,
        local: true,
    },
    CommandSpec {
        name: "/model",
        help: "switch model: pick from a list, or /model provider/model-id",
        takes_args: false,
        local: true,
    },
    CommandSpec {
        name: "/mode",
        help: "permission mode: default, accept-edits, plan, auto",
        takes_args: true,
        local: true,
    },
    CommandSpec {
        name: "/rewind",
        help: "undo turns: /rewind N [--files-only|--conversation-only]",
        takes_args: true,
        local: true,
    },
    CommandSpec {
        name: "/continue",
        help: "resume an interrupted turn",
        takes_args: false,
        local: true,
    },
    CommandSpec {
        name: "/cost",
        help: "tokens and cost of this session so far",
        takes_args: false,
        local: true,
    },
    CommandSpec {
        name: "/context",
        help: "how full the model's context window is, by part",
        takes_args: false,
        local: false,
    },
    CommandSpec {
        name: "/compact",
        help: "compact the conversation now: /compact [what to keep]",
        takes_args: true,
        local: false,
    },
    CommandSpec {
        name: "/fork",
        help: "continue in a copy of this session: /fork [TURN]",
        takes_args: false,
        local: true,
    },
    CommandSpec {
        name: "/init",
        help: "scaffold .stepper/stepper.md and .stepper/setting.json",
        takes_args: false,
        local: true,
    },
    CommandSpec {
        name: "/memory",
        help: "the instructions turns get, and their files",
        takes_args: false,
        local: true,
    },
    CommandSpec {
        name: "/clear",
        help: "forget the conversation: the model starts afresh (the transcript stays)",
        takes_args: false,
        local: false,
    },
    CommandSpec {
        name: "/detach",
        help: "leave; the session goes on",
        takes_args: false,
        local: true,
    },
    CommandSpec {
        name: "/quit",
        help: "leave; the session goes on",
        takes_args: false,
        local: true,
    },
];

#[derive(Debug, PartialEq)]
pub(crate) enum Parsed {
    Action(Action),
    /// The TUI's keys and commands, then the daemon's `/help`.
    Help,
    /// Show the session's tokens and cost (the TUI knows them).
    Cost,
    /// The command was misused: say how to use it.
    Usage(String),
}

pub(crate) const CONTINUE_TEXT: &str = "Continue from where you left off.";

/// Whether `line` is a slash command: its first word is a name after a `/` (`/compact`,
/// `/review:pr` — commands the daemon may know that the TUI does not). A path —
/// "/etc/hosts is wrong" — is text for the model.
pub(crate) fn is_command(line: &str) -> bool {
    let name = line.split_whitespace().next().unwrap_or("");
    match name.strip_prefix('/') {
        Some(rest) => {
            !rest.is_empty()
                && rest
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | ':'))
        }
        None => false,
    }
}

/// `line` is a command (see [`is_command`]).
pub(crate) fn parse(line: &str) -> Parsed {
    let line = line.trim();
    let (name, args) = match line.split_once(char::is_whitespace) {
        Some((n, a)) => (n, a.trim()),
        None => (line, ""),
    };
    match name {
        "/help" => Parsed::Help,
        "/cost" => Parsed::Cost,
        "/detach" | "/quit" | "/exit" => Parsed::Action(Action::Detach),
        "/continue" => Parsed::Action(Action::Submit {
            text: CONTINUE_TEXT.to_string(),
            attachments: Vec::new(),
        }),
        "/model" if args.is_empty() => Parsed::Action(Action::ListModels),
        // The daemon's built-ins: answered there, as for any client.
        "/model" | "/context" | "/clear" => Parsed::Action(Action::Submit {
            text: line.to_string(),
            attachments: Vec::new(),
        }),
        "/mode" => match args.parse() {
            Ok(mode) => Parsed::Action(Action::SetMode { mode }),
            Err(_) => Parsed::Usage(format!(
                "usage: /mode {}",
                PermissionMode::ALL.map(PermissionMode::as_str).join("|")
            )),
        },
        "/rewind" => rewind(args),
        "/memory" => Parsed::Action(Action::Memory),
        "/compact" => Parsed::Action(Action::Compact {
            instructions: args.to_string(),
        }),
        "/fork" => Parsed::Action(Action::Fork {
            args: args.to_string(),
        }),
        "/init" => Parsed::Action(Action::Init),
        _ => Parsed::Action(Action::Command {
            name: name.trim_start_matches('/').to_string(),
            args: args.to_string(),
        }),
    }
}

fn rewind(args: &str) -> Parsed {
    let usage = || Parsed::Usage("usage: /rewind N [--files-only|--conversation-only]".into());
    let mut turn = None;
    let (mut files, mut conversation) = (true, true);
    for word in args.split_whitespace() {
        match word {
            "--files-only" => conversation = false,
            "--conversation-only" => files = false,
            n => match n.parse::<u32>() {
                Ok(n) if turn.is_none() && n > 0 => turn = Some(n),
                _ => return usage(),
            },
        }
    }
    match (turn, files || conversation) {
        (Some(turn), true) => Parsed::Action(Action::Rewind {
            turn,
            files,
            conversation,
        }),
        _ => usage(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_map_to_actions() {
        assert_eq!(
            parse("/model openai/gpt-5"),
            Parsed::Action(Action::Submit {
                text: "/model openai/gpt-5".into(),
                attachments: Vec::new(),
            })
        );
        assert_eq!(parse("/model"), Parsed::Action(Action::ListModels));
        assert_eq!(
            parse("/mode plan"),
            Parsed::Action(Action::SetMode {
                mode: PermissionMode::Plan
            })
        );
        assert!(matches!(parse("/mode nope"), Parsed::Usage(_)));
        assert_eq!(
            parse("/rewind 3 --files-only"),
            Parsed::Action(Action::Rewind {
                turn: 3,
                files: true,
                conversation: false
            })
        );
        assert_eq!(
            parse("/rewind 2"),
            Parsed::Action(Action::Rewind {
                turn: 2,
                files: true,
                conversation: true
            })
        );
        assert!(matches!(parse("/rewind"), Parsed::Usage(_)));
        assert!(matches!(
            parse("/rewind 2 --files-only --conversation-only"),
            Parsed::Usage(_)
        ));
        assert_eq!(
            parse("/continue"),
            Parsed::Action(Action::Submit {
                text: CONTINUE_TEXT.into(),
                attachments: Vec::new(),
            })
        );
        for quit in ["/detach", "/quit", "/exit"] {
            assert_eq!(parse(quit), Parsed::Action(Action::Detach));
        }
        assert_eq!(parse("/help"), Parsed::Help);
        for builtin in ["/clear", "/context"] {
            assert_eq!(
                parse(builtin),
                Parsed::Action(Action::Submit {
                    text: builtin.into(),
                    attachments: Vec::new(),
                })
            );
        }
        assert_eq!(
            parse("/compact keep names"),
            Parsed::Action(Action::Compact {
                instructions: "keep names".into()
            })
        );
    }

    #[test]
    fn names_are_commands_and_paths_are_text() {
        assert!(is_command("/help") && is_command("/mode plan") && is_command("/exit"));
        // Not known here, but a command's name: the core says whether it knows it.
        assert!(is_command("/compact") && is_command("/review:pr 12"));
        assert!(!is_command("/etc/hosts is wrong"));
        assert!(!is_command("/"));
        assert!(!is_command("/tmp/x.log"));
    }
}
