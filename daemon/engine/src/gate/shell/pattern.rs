//! Pathname expansion the way bash does it, so the gate can check every name a pattern
//! would hand a program. The matcher errs towards matching more than bash (character
//! classes match any character, ranges ignore case, `.` and `..` are offered to patterns
//! starting with a dot as older bash does): checking a name bash would not produce costs at
//! most a question, missing one could let a read through.
//!
//! Why a pattern cannot be expanded (too many names, an unreadable folder) is a `String`:
//! it only becomes the reason the gate asks.

use std::path::{Path, PathBuf};
use std::time::Instant;

/// A pathname pattern: each character, and whether it was quoted (a quoted `*` matches
/// itself only).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pattern {
    pub chars: Vec<(char, bool)>,
}

impl Pattern {
    /// The pattern as text, quoting lost (for messages).
    pub fn text(&self) -> String {
        self.chars.iter().map(|(c, _)| c).collect()
    }
}

/// What the expansions of one line may cost before the gate gives up and asks: folder
/// entries listed, matching steps (names × pattern length × class size), and a deadline.
#[derive(Debug, Clone)]
pub struct Budget {
    pub entries: usize,
    pub steps: u64,
    pub deadline: Instant,
}

/// What expanding a pattern touches.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Expansion {
    /// The words bash would produce, as it produces them (relative when the pattern is).
    pub words: Vec<String>,
    /// Every folder whose entries were listed to find them.
    pub listed: Vec<PathBuf>,
}

/// Names produced by one pattern before the gate stops expanding and asks instead.
const MAX_WORDS: usize = 2_000;

/// Expand `pattern` from `cwd` within `budget` (what it spends is taken off). An error says
/// why the expansion was given up.
pub fn expand(pattern: &Pattern, cwd: &Path, budget: &mut Budget) -> Result<Expansion, String> {
    let components = split(&pattern.chars);
    let absolute = pattern.chars.first().is_some_and(|(c, _)| *c == '/');
    // (the word so far, the folder it names)
    let mut found: Vec<(String, PathBuf)> = vec![if absolute {
        ("/".to_string(), PathBuf::from("/"))
    } else {
        (String::new(), cwd.to_path_buf())
    }];
    let mut out = Expansion::default();
    let last = components.len().saturating_sub(1);
    for (n, component) in components.iter().enumerate() {
        let separator = if n < last { "/" } else { "" };
        let tokens = tokenize(component);
        if !tokens.iter().any(Token::is_wild) {
            let text: String = component.iter().map(|(c, _)| c).collect();
            for (word, path) in &mut found {
                word.push_str(&text);
                word.push_str(separator);
                path.push(&text);
            }
            continue;
        }
        let mut next = Vec::new();
        for (word, dir) in &found {
            out.listed.push(dir.clone());
            let Ok(entries) = std::fs::read_dir(dir) else {
                continue;
            };
            let mut names: Vec<String> = Vec::new();
            if component.first().is_some_and(|(c, _)| *c == '.') {
                names.push(".".into());
                names.push("..".into());
            }
            if Instant::now() > budget.deadline {
                return Err(format!(
                    "the patterns of the line take longer to expand than the gate waits ({})",
                    pattern.text()
                ));
            }
            for entry in entries.flatten() {
                budget.entries = budget.entries.checked_sub(1).ok_or_else(|| {
                    format!(
                        "the patterns of the line list more files than the gate reads ({})",
                        pattern.text()
                    )
                })?;
                // A name that is not UTF-8 cannot be checked by the name the gate would
                // see: give up instead.
                let name = entry.file_name().into_string().map_err(|n| {
                    format!(
                        "the pattern {} matches a name that is not UTF-8 ({n:?})",
                        pattern.text()
                    )
                })?;
                names.push(name);
            }
            let cost_per_char = tokens.iter().map(Token::cost).sum::<u64>().max(1);
            for name in names {
                let cost = cost_per_char.saturating_mul(name.len() as u64 + 1);
                budget.steps = budget.steps.checked_sub(cost).ok_or_else(|| {
                    format!(
                        "the patterns of the line take more matching than the gate does ({})",
                        pattern.text()
                    )
                })?;
                if matches(&tokens, &name) {
                    next.push((format!("{word}{name}{separator}"), dir.join(&name)));
                    if next.len() > MAX_WORDS {
                        return Err(format!(
                            "the pattern {} matches more than {MAX_WORDS} names",
                            pattern.text()
                        ));
                    }
                }
            }
        }
        found = next;
    }
    out.words = found.into_iter().map(|(w, _)| w).collect();
    Ok(out)
}

/// Whether bash would expand `pattern` at all: it holds a `*`, a `?` or a closed `[…]`.
pub fn is_wild(pattern: &Pattern) -> bool {
    split(&pattern.chars)
        .iter()
        .any(|c| tokenize(c).iter().any(Token::is_wild))
}

/// The pattern split at every `/` (quoted or not: bash never matches one).
fn split(chars: &[(char, bool)]) -> Vec<Vec<(char, bool)>> {
    chars
        .split(|(c, _)| *c == '/')
        .filter(|c| !c.is_empty())
        .map(<[_]>::to_vec)
        .collect()
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Char(char),
    Any,
    Star,
    Class {
        negated: bool,
        items: Vec<ClassItem>,
    },
}

impl Token {
    fn is_wild(&self) -> bool {
        !matches!(self, Token::Char(_))
    }

    /// What comparing one character against it costs, at most.
    fn cost(&self) -> u64 {
        match self {
            Token::Class { items, .. } => items.len() as u64 + 1,
            _ => 1,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
enum ClassItem {
    Char(char),
    Range(char, char),
    /// `[:alpha:]` and friends: taken to match anything.
    Named,
}

fn tokenize(chars: &[(char, bool)]) -> Vec<Token> {
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let (c, quoted) = chars[i];
        if quoted {
            tokens.push(Token::Char(c));
            i += 1;
            continue;
        }
        match c {
            '*' => {
                if tokens.last() != Some(&Token::Star) {
                    tokens.push(Token::Star);
                }
                i += 1;
            }
            '?' => {
                tokens.push(Token::Any);
                i += 1;
            }
            '[' => match class(chars, i + 1) {
                Some((token, end)) => {
                    tokens.push(token);
                    i = end;
                }
                None => {
                    tokens.push(Token::Char('['));
                    i += 1;
                }
            },
            _ => {
                tokens.push(Token::Char(c));
                i += 1;
            }
        }
    }
    tokens
}

/// A bracket expression starting after `[` at `i`: the token and the index after its `]`,
/// or None when it never closes (then `[` is itself).
fn class(chars: &[(char, bool)], mut i: usize) -> Option<(Token, usize)> {
    let negated = matches!(chars.get(i), Some(('!' | '^', false)));
    if negated {
        i += 1;
    }
    let mut items = Vec::new();
    let start = i;
    while i < chars.len() {
        let (c, quoted) = chars[i];
        if c == ']' && !quoted && i > start {
            return Some((Token::Class { negated, items }, i + 1));
        }
        if c == '[' && !quoted && matches!(chars.get(i + 1), Some((':' | '=' | '.', false))) {
            let kind = chars[i + 1].0;
            let close = (i + 2..chars.len().saturating_sub(1))
                .find(|&j| chars[j].0 == kind && chars[j + 1].0 == ']')?;
            items.push(ClassItem::Named);
            i = close + 2;
            continue;
        }
        if matches!(chars.get(i + 1), Some(('-', _)))
            && chars.get(i + 2).is_some_and(|(d, q)| *d != ']' || *q)
        {
            items.push(ClassItem::Range(c, chars[i + 2].0));
            i += 3;
            continue;
        }
        items.push(ClassItem::Char(c));
        i += 1;
    }
    None
}

fn class_matches(items: &[ClassItem], negated: bool, c: char) -> bool {
    let hit = items.iter().any(|item| match *item {
        ClassItem::Char(x) => x == c,
        ClassItem::Range(a, b) => {
            let within = |c: char| a <= c && c <= b;
            within(c) || within(c.to_ascii_lowercase()) || within(c.to_ascii_uppercase())
        }
        ClassItem::Named => true,
    });
    // A negated class with a named class in it may match anything too.
    if negated {
        !hit || items.contains(&ClassItem::Named)
    } else {
        hit
    }
}

/// Whether `name` (one path component) matches: a leading `.` only by a literal one.
fn matches(tokens: &[Token], name: &str) -> bool {
    let name: Vec<char> = name.chars().collect();
    if name.first() == Some(&'.') && tokens.first() != Some(&Token::Char('.')) {
        return false;
    }
    // Wildcard matching with one backtrack point per `*`: linear in practice, quadratic at
    // worst, never exponential.
    let (mut t, mut n) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        let step = match tokens.get(t) {
            Some(Token::Star) => {
                star = Some((t, n));
                t += 1;
                continue;
            }
            Some(Token::Char(c)) => *c == name[n],
            Some(Token::Any) => true,
            Some(Token::Class { negated, items }) => class_matches(items, *negated, name[n]),
            None => false,
        };
        if step {
            t += 1;
            n += 1;
        } else if let Some((st, sn)) = star {
            t = st + 1;
            n = sn + 1;
            star = Some((st, sn + 1));
        } else {
            return false;
        }
    }
    tokens[t..].iter().all(|t| *t == Token::Star)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::shell::word::{Value, Word};

    fn pattern(raw: &str) -> Pattern {
        match Word::parse(raw).value {
            Value::Pattern(p) => p,
            other => panic!("{raw}: {other:?}"),
        }
    }

    fn m(pat: &str, name: &str) -> bool {
        matches(&tokenize(&pattern(pat).chars), name)
    }

    #[test]
    fn names_match_as_in_bash() {
        assert!(m("*.rs", "main.rs"));
        assert!(!m("*.rs", "main.rst"));
        assert!(!m("*", ".env"), "a leading dot needs a literal dot");
        assert!(m(".*", ".env"));
        assert!(m("a?c", "abc"));
        assert!(m("[ab]*", "bx"));
        assert!(!m("[!ab]*", "bx"));
        assert!(m("[a-c]x", "Bx"), "ranges are taken wide");
        assert!(m("[[:digit:]]", "z"), "named classes match anything");
        assert!(m("'*'*", "*x"));
        assert!(!m("'*'*", "x"));
        assert!(m("[*", "[x"), "an unclosed [ is itself");
        assert!(m("*a*a*a*a*a*b", &"a".repeat(60).replace("aaaa", "aaab")));
        assert!(!m("*a*a*a*a*a*a*a*a*b", &"a".repeat(5000)));
    }

    #[test]
    fn expansion_lists_what_bash_would() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("src/sub")).unwrap();
        for f in [
            "src/a.rs",
            "src/b.rs",
            "src/sub/c.rs",
            "-rf.rs",
            ".hidden.rs",
        ] {
            std::fs::write(root.join(f), "").unwrap();
        }
        let budget = &mut Budget {
            entries: 10_000,
            steps: 10_000_000,
            deadline: Instant::now() + std::time::Duration::from_secs(60),
        };
        let mut e = expand(&pattern("src/*.rs"), root, budget).unwrap();
        e.words.sort();
        assert_eq!(e.words, ["src/a.rs", "src/b.rs"]);
        assert_eq!(e.listed, [root.join("src")]);
        let mut e = expand(&pattern("*.rs"), root, budget).unwrap();
        e.words.sort();
        assert_eq!(e.words, ["-rf.rs"], "a name that bash passes as an option");
        let mut e = expand(&pattern("src/*/*.rs"), root, budget).unwrap();
        e.words.sort();
        assert_eq!(e.words, ["src/sub/c.rs"]);
        let e = expand(&pattern(".*"), root, budget).unwrap();
        assert!(e.words.contains(&"..".to_string()), "{:?}", e.words);
        let e = expand(&pattern("/e*c"), root, budget).unwrap();
        assert!(e.words.contains(&"/etc".to_string()));
        assert_eq!(e.listed, [PathBuf::from("/")]);
        assert!(
            expand(&pattern("nothing*"), root, budget)
                .unwrap()
                .words
                .is_empty()
        );
        let small = &mut Budget {
            entries: 10,
            ..budget.clone()
        };
        assert!(
            expand(&pattern("/*/*"), root, small).is_err(),
            "the budget holds"
        );
        #[cfg(unix)]
        {
            use std::os::unix::ffi::OsStrExt;
            let odd = std::ffi::OsStr::from_bytes(b"z\xff");
            std::fs::write(root.join(odd), "").unwrap();
            assert!(
                expand(&pattern("z*"), root, budget).is_err(),
                "a name that is not UTF-8"
            );
        }
    }
}
