//! Command lines read the way the programs read them: getopt's clusters of short options
//! (`-uo f` is `-u -o f`), values attached or in the next word, long options matched by
//! unique prefix when the program allows it (`--out=f` is `--output=f` for sort), `--`, and
//! options after operands as GNU programs permute them. An option the table does not know is
//! never guessed at: the command is refused, and the line asks.

use crate::gate::shell::{Value, Word};

/// One program's options.
///
/// `short` is getopt's option string: a letter alone is a flag, `:` after it takes a value
/// (attached or the next word), `::` an optional value (attached only), `@` a value that is
/// a file the program reads. `long` lists long options the same way: `name`, `name=`
/// (value, attached with `=` or the next word), `name=?` (optional value, only with `=`),
/// `name=!` (a value only with `=`: the next word is never taken), `name=@` (a file it
/// reads). `refused`
/// names options that exist but write, run a program or read files the gate cannot see —
/// listed so that abbreviations resolve as the program resolves them.
#[derive(Debug, Clone, Copy)]
pub struct Spec<'a> {
    pub short: &'a str,
    pub long: &'a [&'a str],
    pub refused: &'a [(&'a str, &'a str)],
    /// `-5` is an option (`head -5`, `grep -3`).
    pub numeric: bool,
    /// Long options may be abbreviated to a unique prefix (GNU getopt_long).
    pub abbrev: bool,
    pub style: Style,
}

/// How a program reads option values, where programs differ from getopt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// getopt: a value is the rest of the cluster, or the next word.
    Getopt,
    /// tree: each value-taking letter of a cluster takes the next word, in order, and the
    /// letters after it are still options (`-La 2` is `-L 2 -a`).
    NextWords,
    /// ripgrep: as getopt, and one `=` before an attached value is dropped (`-f=x` reads `x`);
    /// a value in the next word may not start with `-` (ripgrep 13 takes it as an option).
    DropEquals,
}

impl Spec<'static> {
    pub const EMPTY: Spec<'static> = Spec {
        short: "",
        long: &[],
        refused: &[],
        numeric: false,
        abbrev: true,
        style: Style::Getopt,
    };
}

/// What an option takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arg {
    None,
    Text,
    OptionalText,
    /// A value given only as `--name=value`.
    Attached,
    File,
}

/// A command's words sorted into options and operands.
#[derive(Debug, Default)]
pub struct Parsed<'w> {
    /// Options as `-c` or `--name` (the long name in full), with their value.
    pub options: Vec<(String, Option<String>)>,
    pub operands: Vec<&'w Word>,
    /// Files named by options that read them (`grep -f FILE`).
    pub files: Vec<Word>,
    /// An option's value is text known only at run time (`--format "$X"`).
    pub dynamic: bool,
}

impl Parsed<'_> {
    /// Whether any of `names` (`-e`, `--regexp`) was given.
    pub fn has(&self, names: &[&str]) -> bool {
        self.options
            .iter()
            .any(|(o, _)| names.contains(&o.as_str()))
    }

    /// The value of the last of `names` given.
    pub fn value(&self, names: &[&str]) -> Option<&str> {
        self.options
            .iter()
            .rev()
            .find(|(o, _)| names.contains(&o.as_str()))
            .and_then(|(_, v)| v.as_deref())
    }
}

fn short_arg(spec: &Spec<'_>, c: char) -> Option<Arg> {
    let s: Vec<char> = spec.short.chars().collect();
    let i = s.iter().position(|&x| x == c && x != ':' && x != '@')?;
    Some(match (s.get(i + 1), s.get(i + 2)) {
        (Some(':'), Some(':')) => Arg::OptionalText,
        (Some(':'), _) => Arg::Text,
        (Some('@'), _) => Arg::File,
        _ => Arg::None,
    })
}

fn long_entry(entry: &str) -> (&str, Arg) {
    if let Some(name) = entry.strip_suffix("=?") {
        (name, Arg::OptionalText)
    } else if let Some(name) = entry.strip_suffix("=!") {
        (name, Arg::Attached)
    } else if let Some(name) = entry.strip_suffix("=@") {
        (name, Arg::File)
    } else if let Some(name) = entry.strip_suffix('=') {
        (name, Arg::Text)
    } else {
        (entry, Arg::None)
    }
}

/// A long option resolved: its full name and what it takes, or why it is refused.
fn resolve_long(spec: &Spec<'_>, given: &str) -> Result<(String, Arg), String> {
    let refused = |name: &str| {
        spec.refused
            .iter()
            .find(|(n, _)| n.len() > 1 && *n == name)
            .map(|(n, why)| format!("--{n} {why}"))
    };
    let known = spec.long.iter().map(|e| long_entry(e));
    let exact = known.clone().find(|(n, _)| *n == given);
    if let Some((name, arg)) = exact {
        return Ok((name.to_string(), arg));
    }
    if let Some(why) = refused(given) {
        return Err(why);
    }
    if !spec.abbrev || given.is_empty() {
        return Err(format!("--{given} is an option the gate does not know"));
    }
    let mut names: Vec<(&str, Option<Arg>)> = known
        .filter(|(n, _)| n.starts_with(given))
        .map(|(n, a)| (n, Some(a)))
        .collect();
    names.extend(
        spec.refused
            .iter()
            .filter(|(n, _)| n.len() > 1 && n.starts_with(given))
            .map(|(n, _)| (*n, None)),
    );
    match names.as_slice() {
        [(name, Some(arg))] => Ok((name.to_string(), *arg)),
        [(name, None)] => Err(refused(name).unwrap_or_default()),
        [] => Err(format!("--{given} is an option the gate does not know")),
        _ => Err(format!("--{given} is ambiguous")),
    }
}

/// Sort `args` (the words after the command name) into options and operands.
pub fn parse<'w>(spec: &Spec<'_>, args: &'w [Word]) -> Result<Parsed<'w>, String> {
    let mut out = Parsed::default();
    let mut i = 0;
    let mut done = false;
    while i < args.len() {
        let word = &args[i];
        i += 1;
        let owned;
        let text = match &word.value {
            Value::Literal(t) => t.as_str(),
            Value::Pattern(p) => {
                // A pattern that matches nothing reaches the program as written: one that
                // starts with `-` is judged as the option it then is. (Its matches are checked
                // when expanded; none may start with `-`.)
                owned = p.text();
                if done || !owned.starts_with('-') {
                    out.operands.push(word);
                    continue;
                }
                owned.as_str()
            }
            Value::Inert(why) => {
                if done {
                    out.operands.push(word);
                    continue;
                }
                return Err(format!(
                    "{} ({why}) may be an option, known only at run time",
                    word.raw
                ));
            }
            Value::Splits(why) => {
                return Err(format!(
                    "{} ({why}) is expanded unquoted and may become several words",
                    word.raw
                ));
            }
            Value::Unsafe(why) => return Err(why.clone()),
        };
        if done || text == "-" || !text.starts_with('-') {
            out.operands.push(word);
            continue;
        }
        if text == "--" {
            done = true;
            continue;
        }
        if let Some(long) = text.strip_prefix("--") {
            let (given, attached) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (long, None),
            };
            let (name, arg) = resolve_long(spec, given)?;
            let value = match (arg, attached) {
                (Arg::None, Some(_)) => {
                    return Err(format!("--{name} takes no value"));
                }
                (Arg::None | Arg::OptionalText, v) => v,
                (Arg::Attached, Some(v)) => Some(v),
                (Arg::Attached, None) => return Err(format!("--{name} needs =VALUE")),
                (Arg::Text | Arg::File, Some(v)) => Some(v),
                (Arg::Text | Arg::File, None) => Some(next_value(
                    args,
                    &mut i,
                    &name,
                    arg,
                    &mut out.dynamic,
                    spec.style == Style::DropEquals,
                )?),
            };
            if arg == Arg::File
                && let Some(v) = &value
            {
                out.files.push(Word::literal(v));
            }
            out.options.push((format!("--{name}"), value));
            continue;
        }
        let cluster = &text[1..];
        if spec.numeric && cluster.bytes().all(|b| b.is_ascii_digit()) {
            out.options.push((format!("-{cluster}"), None));
            continue;
        }
        for (at, c) in cluster.char_indices() {
            if let Some((_, why)) = spec
                .refused
                .iter()
                .find(|(n, _)| n.chars().count() == 1 && n.starts_with(c))
            {
                return Err(format!("-{c} {why}"));
            }
            let arg = short_arg(spec, c)
                .ok_or_else(|| format!("-{c} is an option the gate does not know"))?;
            let mut rest = &cluster[at + c.len_utf8()..];
            if spec.style == Style::DropEquals {
                rest = rest.strip_prefix('=').unwrap_or(rest);
            }
            let value = match arg {
                Arg::None | Arg::Attached => {
                    out.options.push((format!("-{c}"), None));
                    continue;
                }
                Arg::Text | Arg::File if spec.style == Style::NextWords => Some(next_value(
                    args,
                    &mut i,
                    &c.to_string(),
                    arg,
                    &mut out.dynamic,
                    spec.style == Style::DropEquals,
                )?),
                Arg::OptionalText if spec.style == Style::NextWords => None,
                Arg::OptionalText => (!rest.is_empty()).then(|| rest.to_string()),
                Arg::Text | Arg::File if !rest.is_empty() => Some(rest.to_string()),
                Arg::Text | Arg::File => Some(next_value(
                    args,
                    &mut i,
                    &c.to_string(),
                    arg,
                    &mut out.dynamic,
                    spec.style == Style::DropEquals,
                )?),
            };
            if arg == Arg::File
                && let Some(v) = &value
            {
                out.files.push(Word::literal(v));
            }
            out.options.push((format!("-{c}"), value));
            if spec.style == Style::NextWords {
                continue;
            }
            break;
        }
    }
    Ok(out)
}

/// The word after an option as its value: a literal, or inert text where the value is text; a
/// pattern would turn into several words (shifting every word after it), so it is refused.
fn next_value(
    args: &[Word],
    i: &mut usize,
    option: &str,
    arg: Arg,
    dynamic: &mut bool,
    strict: bool,
) -> Result<String, String> {
    let word = args
        .get(*i)
        .ok_or_else(|| format!("{option} is missing its value"))?;
    *i += 1;
    match &word.value {
        Value::Literal(t) if strict && t.starts_with('-') => Err(format!(
            "the value of {option} looks like an option ({t}), which some versions take as one"
        )),
        Value::Literal(t) => Ok(t.clone()),
        Value::Inert(_) if arg != Arg::File => {
            *dynamic = true;
            Ok(word.raw.clone())
        }
        Value::Splits(why) => Err(format!(
            "the value of {option} ({why}) is expanded unquoted and may become several words"
        )),
        Value::Inert(why) => Err(format!(
            "the file {option} reads is known only at run time ({why})"
        )),
        Value::Pattern(_) => Err(format!(
            "the value of {option} is a pattern ({}), which bash may turn into several words",
            word.raw
        )),
        Value::Unsafe(why) => Err(why.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SORT: Spec = Spec {
        short: "bcdfgiMhnRrsuVzk:t:S:",
        long: &["unique", "key=", "random-source=@", "reverse", "output-x"],
        refused: &[
            ("o", "writes a file"),
            ("output", "writes a file"),
            ("compress-program", "runs a program"),
        ],
        numeric: false,
        abbrev: true,
        style: Style::Getopt,
    };

    fn words(line: &str) -> Vec<Word> {
        line.split(' ').map(Word::parse).collect()
    }

    fn parsed(line: &str) -> Result<Vec<String>, String> {
        let w = words(line);
        parse(&SORT, &w).map(|p| {
            p.options
                .iter()
                .map(|(o, v)| {
                    format!(
                        "{o}{}",
                        v.as_ref().map(|v| format!("={v}")).unwrap_or_default()
                    )
                })
                .chain(p.operands.iter().map(|o| o.raw.clone()))
                .collect()
        })
    }

    #[test]
    fn clusters_values_and_prefixes_resolve_as_getopt_does() {
        assert_eq!(parsed("-ru a").unwrap(), ["-r", "-u", "a"]);
        assert_eq!(parsed("-k2 -t , a").unwrap(), ["-k=2", "-t=,", "a"]);
        assert_eq!(parsed("-rk 2 a").unwrap(), ["-r", "-k=2", "a"]);
        assert_eq!(parsed("--uni a -r").unwrap(), ["--unique", "-r", "a"]);
        assert_eq!(parsed("--key=1 -- -r").unwrap(), ["--key=1", "-r"]);
        assert_eq!(parsed("- a").unwrap(), ["-", "a"]);
        assert!(parsed("-uo f").unwrap_err().contains("-o"));
        assert!(
            parsed("--out=f").unwrap_err().contains("ambiguous"),
            "output, output-x"
        );
        assert!(parsed("--outp=f").unwrap_err().contains("ambiguous"));
        assert!(parsed("--output=f").unwrap_err().contains("writes"));
        assert!(parsed("--comp=gzip").unwrap_err().contains("runs"));
        assert!(parsed("-x").unwrap_err().contains("does not know"));
        assert!(
            parsed("--frobnicate")
                .unwrap_err()
                .contains("does not know")
        );
        assert!(parsed("-k").unwrap_err().contains("missing"));
        assert!(parsed("--unique=yes").is_err());
        let w = words("--random-source=r.bin -u");
        let p = parse(&SORT, &w).unwrap();
        assert_eq!(p.files[0].text(), Some("r.bin"));
        let w = words("-k \"$HOME\" x");
        assert!(parse(&SORT, &w).unwrap().dynamic, "an inert value");
        let w = words("-k $HOME x");
        assert!(parse(&SORT, &w).is_err(), "an unquoted value may split");
        let w = words("$HOME x");
        assert!(
            parse(&SORT, &w).is_err(),
            "an inert word where an option may be"
        );
        let w = words("-- \"$HOME\"");
        assert!(parse(&SORT, &w).is_ok(), "after -- it is an operand");
        let w = words("-k *.rs x");
        assert!(parse(&SORT, &w).is_err(), "a pattern as a value");
    }
}
