//! Shell builtins: the few that only print or test (`echo`, `printf`, `test`/`[`, `pwd`,
//! `type`, `command -v`, `true`, `false`), `cd` (followed, so later paths resolve where bash
//! will be), and the many that change the shell itself, which always ask.

use super::options::{Spec, parse};
use super::{Judgement, Reads, path};
use crate::gate::shell::{Value, Word};

/// Builtins that change variables, options, functions, the descriptor table or what runs
/// next. `printf -v` is among them, judged with `printf`.
const CHANGES_THE_SHELL: &[(&str, &str)] = &[
    (".", "runs a file's commands in this shell"),
    ("source", "runs a file's commands in this shell"),
    ("eval", "runs its arguments as commands"),
    ("exec", "replaces the shell with another program"),
    ("builtin", "runs the builtin named after it"),
    ("export", "changes the environment"),
    ("declare", "sets variables"),
    ("typeset", "sets variables"),
    ("local", "sets variables"),
    ("readonly", "sets variables"),
    ("unset", "unsets variables or functions"),
    ("set", "changes the shell's options"),
    ("shopt", "changes the shell's options"),
    ("alias", "defines aliases"),
    ("unalias", "removes aliases"),
    ("enable", "loads or turns off builtins"),
    ("hash", "changes where commands are found"),
    ("trap", "runs commands on signals"),
    ("read", "sets variables from input"),
    ("mapfile", "sets variables from input"),
    ("readarray", "sets variables from input"),
    ("let", "evaluates arithmetic, which can run code"),
    ("getopts", "sets variables"),
    ("pushd", "changes the folder"),
    ("popd", "changes the folder"),
    ("umask", "changes the permissions of new files"),
    ("ulimit", "changes resource limits"),
    ("fc", "runs commands from history"),
    ("history", "changes the history"),
    ("bind", "changes key bindings"),
    ("complete", "changes completions"),
    ("compgen", "can run commands to complete"),
    ("compopt", "changes completions"),
    ("coproc", "starts a coprocess"),
    ("exit", "ends the shell"),
    ("logout", "ends the shell"),
    ("return", "returns from a function"),
    ("shift", "changes the positional parameters"),
    ("disown", "detaches jobs"),
    ("suspend", "suspends the shell"),
];

const PWD: Spec = Spec {
    short: "LP",
    ..Spec::EMPTY
};
const TYPE: Spec = Spec {
    short: "afptP",
    ..Spec::EMPTY
};
const COMMAND: Spec = Spec {
    short: "pvV",
    ..Spec::EMPTY
};
const JOBS: Spec = Spec {
    short: "lnprs",
    refused: &[("x", "runs a command")],
    ..Spec::EMPTY
};
const WAIT: Spec = Spec {
    short: "nf",
    refused: &[("p", "assigns a variable")],
    ..Spec::EMPTY
};
const CD: Spec = Spec {
    short: "LPe@",
    ..Spec::EMPTY
};

fn builtin(paths: Vec<Word>) -> Judgement {
    Judgement::Reads(Reads {
        paths,
        builtin: true,
        ..Reads::default()
    })
}

/// The builtins' judgement, or None when `name` is not a builtin the gate knows.
pub fn judge(name: &str, args: &[Word]) -> Option<Judgement> {
    if let Some((_, why)) = CHANGES_THE_SHELL.iter().find(|(n, _)| *n == name) {
        return Some(Judgement::Shell(format!("{name} {why}")));
    }
    Some(match name {
        "echo" | "true" | "false" | ":" => builtin(Vec::new()),
        // `jobs -x` runs a command; `wait -p NAME` assigns (a subscript runs code).
        "jobs" => options(&JOBS, args, true),
        "wait" => options(&WAIT, args, true),
        "printf" => printf(args),
        "test" => test(args, false),
        "[" => match args.last().and_then(Word::text) {
            Some("]") => test(&args[..args.len() - 1], false),
            _ => Judgement::Refused("[ without its closing ]".into()),
        },
        "[[" => match args.last().and_then(Word::text) {
            Some("]]") => test(&args[..args.len() - 1], true),
            _ => Judgement::Refused("[[ without its closing ]]".into()),
        },
        "pwd" => options(&PWD, args, false),
        "type" => options(&TYPE, args, true),
        "command" => {
            let j = options(&COMMAND, args, true);
            let lists = args
                .iter()
                .take_while(|w| w.text().is_some_and(|t| t.starts_with('-')))
                .any(|w| w.text().is_some_and(|t| t.contains('v') || t.contains('V')));
            if lists {
                j
            } else {
                Judgement::Refused("command runs the command named after it".into())
            }
        }
        "cd" => cd(args),
        _ => return None,
    })
}

/// A builtin with options and text operands (or none).
fn options(spec: &Spec, args: &[Word], text: bool) -> Judgement {
    match parse(spec, args) {
        Ok(p) if text || p.operands.is_empty() => builtin(Vec::new()),
        Ok(_) => Judgement::Refused("takes no operand".into()),
        Err(why) => Judgement::Refused(why),
    }
}

/// `printf FORMAT ARGS…` only prints; `printf -v NAME` assigns (to `PATH`, to an array
/// element whose subscript runs code): always asked.
fn printf(args: &[Word]) -> Judgement {
    let first = args.first().and_then(Word::unexpanded);
    match args.first().map(|w| &w.value) {
        _ if first
            .as_deref()
            .is_some_and(|t| t.starts_with('-') && t != "--" && t != "-") =>
        {
            Judgement::Shell("printf -v assigns a variable".into())
        }
        Some(Value::Inert(why) | Value::Splits(why)) => Judgement::Refused(format!(
            "printf's first word is known only at run time ({why}) and may be -v"
        )),
        _ => {
            let format = match args.first().and_then(Word::text) {
                Some("--") => args.get(1),
                _ => args.first(),
            };
            match format.map(|w| (w, w.text())) {
                None => builtin(Vec::new()),
                Some((_, Some(text))) => match assigning_directive(text) {
                    Some(why) => Judgement::Shell(why),
                    None => builtin(Vec::new()),
                },
                Some((w, None)) => Judgement::Refused(format!(
                    "printf's format {} is known only at run time, and %n in it assigns a \
                     variable",
                    w.raw
                )),
            }
        }
    }
}

/// Conversions of bash's `printf` that only print (`%n` stores a count in the variable its
/// argument names).
const PRINTF_CONVERSIONS: &str = "diouxXfFeEgGaAcsbqQT";

/// Why a `printf` format would do more than print: a conversion outside the allow-list.
fn assigning_directive(format: &str) -> Option<String> {
    let mut chars = format.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '%' {
            continue;
        }
        if chars.peek() == Some(&'%') {
            chars.next();
            continue;
        }
        // Flags, width, precision, length modifiers, a strftime format in parentheses.
        while let Some(&c) = chars.peek() {
            match c {
                '-'
                | '+'
                | ' '
                | '#'
                | '0'..='9'
                | '\''
                | '.'
                | '*'
                | 'h'
                | 'l'
                | 'L'
                | 'j'
                | 'z'
                | 't' => {
                    chars.next();
                }
                '(' => {
                    for c in chars.by_ref() {
                        if c == ')' {
                            break;
                        }
                    }
                }
                _ => break,
            }
        }
        match chars.next() {
            Some(c) if PRINTF_CONVERSIONS.contains(c) => {}
            Some('n') => {
                return Some("printf %n assigns a variable".into());
            }
            other => {
                return Some(format!(
                    "printf's format has the conversion %{}, which the gate does not know",
                    other.map(String::from).unwrap_or_default()
                ));
            }
        }
    }
    None
}

/// Unary operators of `test` that look at a file.
const FILE_TESTS: &[&str] = &[
    "-a", "-b", "-c", "-d", "-e", "-f", "-g", "-h", "-k", "-p", "-r", "-s", "-u", "-w", "-x", "-G",
    "-L", "-N", "-O", "-S",
];
const ARITHMETIC: &[&str] = &["-eq", "-ne", "-lt", "-le", "-gt", "-ge"];

/// `test`, `[` and `[[`: file tests read paths, `-v NAME[SUBSCRIPT]` evaluates the subscript
/// (code), and the operands of arithmetic comparisons must be plain numbers — in `[[`
/// (`double`) even a variable's value is evaluated as arithmetic, so only a literal number
/// will do. Every word is taken in every role it could play, so an ambiguous one is checked
/// as strictly as its strictest reading.
fn test(args: &[Word], double: bool) -> Judgement {
    let mut paths = Vec::new();
    // A word known only at run time could be any operator (`-v`, `-eq`) for `test` and `[`:
    // then no other word may hold a subscript, and none may split. `[[` parses its operators
    // itself and splits nothing.
    let dynamic = args
        .iter()
        .any(|w| matches!(w.value, Value::Inert(_) | Value::Splits(_)));
    if !double && dynamic {
        if args.iter().any(|w| matches!(w.value, Value::Splits(_))) {
            return Judgement::Refused(
                "an unquoted expansion in a test may become several words, operators included"
                    .into(),
            );
        }
        if args
            .iter()
            .any(|w| w.unexpanded().is_some_and(|t| t.contains('[')))
        {
            return Judgement::Refused(
                "a test with a word known only at run time, which may be -v, and a subscript"
                    .into(),
            );
        }
    }
    for (i, w) in args.iter().enumerate() {
        let op = w.unexpanded().unwrap_or_default();
        let op = op.as_str();
        let next = args.get(i + 1);
        if FILE_TESTS.contains(&op) || matches!(op, "-ef" | "-nt" | "-ot") {
            if let Some(n) = next {
                match path(n) {
                    Ok(p) => paths.push(p),
                    Err(why) => return Judgement::Refused(why),
                }
            }
            if matches!(op, "-ef" | "-nt" | "-ot")
                && let Some(prev) = i.checked_sub(1).map(|p| &args[p])
            {
                match path(prev) {
                    Ok(p) => paths.push(p),
                    Err(why) => return Judgement::Refused(why),
                }
            }
        }
        if matches!(op, "-v" | "-R")
            && next.is_some_and(|n| !n.text().is_some_and(crate::gate::shell::word::is_name))
        {
            return Judgement::Shell(format!(
                "test {op} evaluates a subscript, which can run code"
            ));
        }
        if ARITHMETIC.contains(&op) {
            let numeric = |w: Option<&Word>| {
                w.is_none_or(|w| match &w.value {
                    Value::Literal(t) => {
                        let t = t.trim();
                        let digits = t.strip_prefix(['-', '+']).unwrap_or(t);
                        !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
                    }
                    // `test` reads an integer without evaluating it; `[[` evaluates.
                    Value::Inert(_) | Value::Splits(_) => !double,
                    _ => false,
                })
            };
            if !numeric(i.checked_sub(1).map(|p| &args[p])) || !numeric(next) {
                return Judgement::Refused(format!(
                    "{op} compares numbers, and one side is not a plain number"
                ));
            }
        }
    }
    builtin(paths)
}

/// `cd DIR` with a literal folder: followed, so the commands after it are judged where they
/// will run. `cd` alone, `cd -` and computed folders ask.
fn cd(args: &[Word]) -> Judgement {
    let parsed = match parse(&CD, args) {
        Ok(p) => p,
        Err(why) => return Judgement::Refused(why),
    };
    match parsed.operands.as_slice() {
        [dir] => match &dir.value {
            Value::Literal(t) if t != "-" => Judgement::Reads(Reads {
                paths: vec![(*dir).clone()],
                builtin: true,
                cd: Some((*dir).clone()),
                env: &["CDPATH"],
                ..Reads::default()
            }),
            _ => Judgement::Shell(format!("cd to {}, known only at run time", dir.raw)),
        },
        [] => Judgement::Shell("cd to the home folder".into()),
        _ => Judgement::Refused("cd takes one folder".into()),
    }
}
