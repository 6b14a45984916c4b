//! One shell word as bash reads it: quotes and escapes removed the way bash removes them, and
//! every expansion bash would perform on it found. The gate relies on a word only when it is
//! plain text after that, or a pathname pattern it can expand itself; anything else is either
//! inert text (it expands, but runs nothing) or unsafe.
//!
//! The lexer reads the word's source text itself instead of trusting the parser's nodes, and
//! refuses a word holding an unquoted metacharacter: bash would have split it there, so the
//! parser and bash disagree about where the word ends.
//!
//! Why a word cannot be relied on is a `String`, not an error type: the gate only shows it
//! as the reason it asks (as [`Value::Unsafe`] carries it).

use super::pattern::{Pattern, is_wild};

/// A word of a command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Word {
    /// As written, for messages and rules.
    pub raw: String,
    pub value: Value,
}

/// What bash makes of a word.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// No expansion of any kind: exactly the text the program receives.
    Literal(String),
    /// A pathname pattern (an unquoted `*`, `?` or `[`): bash replaces it with the names it
    /// matches, which the gate finds itself.
    Pattern(Pattern),
    /// Text known only when the line runs, whose expansion runs nothing: a quoted variable
    /// from a short list of harmless ones, `~`, `$'…'`. Acceptable where the program takes
    /// the word as text, never as a command name, an option or a path.
    Inert(String),
    /// Like `Inert`, but expanded unquoted: bash splits the value into words and expands
    /// those as file names, so one word may become several — options included (a folder
    /// named `x -o out.txt` makes `$PWD` three words). Acceptable only where every word is
    /// text (`echo`).
    Splits(String),
    /// Runs code, or cannot be judged: why.
    Unsafe(String),
}

impl Word {
    /// Lex `raw`, the source text of one word.
    pub fn parse(raw: &str) -> Word {
        Word {
            raw: raw.to_string(),
            value: lex(raw),
        }
    }

    /// A word known to be plain text (for tests and synthesised words).
    pub fn literal(text: &str) -> Word {
        Word {
            raw: text.to_string(),
            value: Value::Literal(text.to_string()),
        }
    }

    /// The text when it is a literal.
    pub fn text(&self) -> Option<&str> {
        match &self.value {
            Value::Literal(s) => Some(s),
            _ => None,
        }
    }

    /// The text a program receives when nothing else happens to the word: a literal's text,
    /// or a pattern's own text, which bash passes unchanged when it matches no file. Options
    /// are judged on this (`--format=%G?` reaches git as itself).
    pub fn unexpanded(&self) -> Option<String> {
        match &self.value {
            Value::Literal(s) => Some(s.clone()),
            Value::Pattern(p) => Some(p.text()),
            _ => None,
        }
    }

    /// The literal text, or the source text when it is not a literal (for rules and
    /// messages; never for a decision).
    pub fn shown(&self) -> &str {
        self.text().unwrap_or(&self.raw)
    }
}

/// Variables whose expansion the gate accepts as text. Everything else — and every secret —
/// asks: `echo $ANTHROPIC_API_KEY` must never print a key without a person agreeing.
const HARMLESS_VARIABLES: &[&str] = &[
    "HOME",
    "PWD",
    "OLDPWD",
    "USER",
    "LOGNAME",
    "SHELL",
    "TERM",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TMPDIR",
    "PATH",
    "HOSTNAME",
    "HOSTTYPE",
    "OSTYPE",
    "MACHTYPE",
    "UID",
    "EUID",
    "PPID",
    "BASHPID",
    "BASH_VERSION",
    "RANDOM",
    "SECONDS",
    "LINENO",
    "COLUMNS",
    "LINES",
];

/// Whether `name` is a valid shell variable name.
pub fn is_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
}

/// The lexer's state for one word.
struct Lexer {
    out: Vec<(char, bool)>,
    /// An unquoted `*`, `?` or `[`.
    glob: bool,
    /// Why the word is only inert text (the first reason).
    inert: Option<String>,
    /// An expansion outside quotes: its value is split and globbed.
    splits: bool,
}

impl Lexer {
    fn inert(&mut self, why: impl Into<String>) {
        if self.inert.is_none() {
            self.inert = Some(why.into());
        }
    }

    fn push(&mut self, c: char, quoted: bool) -> Result<(), String> {
        if is_forbidden_control(c) {
            return Err("a control character".into());
        }
        self.out.push((c, quoted));
        Ok(())
    }

    /// Every character of `text`, quoted.
    fn push_quoted(&mut self, text: &str) -> Result<(), String> {
        for c in text.chars() {
            self.push(c, true)?;
        }
        Ok(())
    }
}

fn lex(raw: &str) -> Value {
    match lex_inner(raw) {
        Err(why) => Value::Unsafe(why),
        Ok(lexer) => {
            if let Some(why) = lexer.inert {
                if lexer.glob {
                    return Value::Unsafe(format!(
                        "a pattern whose text is known only at run time ({why})"
                    ));
                }
                if lexer.splits {
                    return Value::Splits(why);
                }
                return Value::Inert(why);
            }
            let pattern = Pattern { chars: lexer.out };
            // `[` without its `]` is itself: only a real wildcard makes a pattern.
            if lexer.glob && is_wild(&pattern) {
                return Value::Pattern(pattern);
            }
            Value::Literal(pattern.chars.into_iter().map(|(c, _)| c).collect())
        }
    }
}

/// The character starting at byte `i` (a char boundary).
fn char_at(raw: &str, i: usize) -> char {
    raw[i..].chars().next().unwrap_or('\0')
}

/// Lex a word. The lexer works on bytes (every character bash treats specially is ASCII) and
/// stops at the first thing it refuses, so a huge word that starts with `$(` costs nothing.
fn lex_inner(raw: &str) -> Result<Lexer, String> {
    let b = raw.as_bytes();
    let mut lx = Lexer {
        out: Vec::new(),
        glob: false,
        inert: None,
        splits: false,
    };
    // Bash removes a line continuation before it expands anything (`$\⏎(` is `$(`): a word
    // holding one is not read here.
    if raw.contains("\\\n") {
        return Err("a line continuation inside a word".into());
    }
    match b {
        [] => return Err("an empty word".into()),
        [b'<' | b'>', b'(', ..] => return Err("process substitution".into()),
        [b'#', ..] => return Err("a word bash would read as a comment".into()),
        _ => {}
    }
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\\' => match b.get(i + 1) {
                Some(b'\n') => i += 2,
                Some(_) => {
                    let c = char_at(raw, i + 1);
                    lx.push(c, true)?;
                    i += 1 + c.len_utf8();
                }
                None => {
                    lx.push('\\', true)?;
                    i += 1;
                }
            },
            b'\'' => {
                let end = find(b, i + 1, b'\'')
                    .ok_or_else(|| "an unterminated single quote".to_string())?;
                lx.push_quoted(&raw[i + 1..end])?;
                i = end + 1;
            }
            b'"' => i = double_quoted(raw, i + 1, &mut lx)?,
            b'$' => i = dollar(raw, i, &mut lx, false)?,
            b'`' => return Err("command substitution (backticks)".into()),
            c @ (b'*' | b'?' | b'[') => {
                lx.glob = true;
                lx.push(char::from(c), false)?;
                i += 1;
            }
            // Bash expands `~` at the start of a word, and after `=` or `:` in words that
            // look like assignments; any unquoted `~` there is taken as an expansion.
            b'~' if i == 0 || matches!(b[i - 1], b'=' | b':') => {
                lx.inert("a `~` expands to a home folder");
                lx.push('~', false)?;
                i += 1;
            }
            c @ (b' ' | b'\t' | b'\n' | b';' | b'&' | b'|' | b'<' | b'>') => {
                return Err(format!(
                    "an unquoted {:?} inside a word: bash would split the line there",
                    char::from(c)
                ));
            }
            b'(' | b')' => {
                return Err("an unquoted parenthesis inside a word (an extended pattern)".into());
            }
            _ => {
                let c = char_at(raw, i);
                lx.push(c, false)?;
                i += c.len_utf8();
            }
        }
    }
    brace_expansion(b)?;
    Ok(lx)
}

/// NUL and control characters other than tab and newline: bash and the parser may disagree
/// on them, and no honest command needs them.
fn is_forbidden_control(c: char) -> bool {
    (c.is_control() && c != '\t' && c != '\n') || c == '\u{2028}' || c == '\u{2029}'
}

fn find(b: &[u8], from: usize, what: u8) -> Option<usize> {
    b.get(from..)?
        .iter()
        .position(|&c| c == what)
        .map(|p| p + from)
}

/// Inside `"…"` from `i` (after the opening quote); returns the index after the closing quote.
fn double_quoted(raw: &str, mut i: usize, lx: &mut Lexer) -> Result<usize, String> {
    let b = raw.as_bytes();
    while i < b.len() {
        match b[i] {
            b'"' => return Ok(i + 1),
            b'\\' => match b.get(i + 1) {
                Some(b'\n') => i += 2,
                Some(&next @ (b'$' | b'`' | b'"' | b'\\')) => {
                    lx.push(char::from(next), true)?;
                    i += 2;
                }
                _ => {
                    lx.push('\\', true)?;
                    i += 1;
                }
            },
            b'$' => i = dollar(raw, i, lx, true)?,
            b'`' => return Err("command substitution (backticks)".into()),
            _ => {
                let c = char_at(raw, i);
                lx.push(c, true)?;
                i += c.len_utf8();
            }
        }
    }
    Err("an unterminated double quote".into())
}

/// A `$` at `i`; returns the index after what it introduces.
fn dollar(raw: &str, i: usize, lx: &mut Lexer, quoted: bool) -> Result<usize, String> {
    let b = raw.as_bytes();
    match b.get(i + 1).copied() {
        Some(b'(') => Err(if b.get(i + 2) == Some(&b'(') {
            "arithmetic expansion".into()
        } else {
            "command substitution".into()
        }),
        Some(b'[') => Err("arithmetic expansion ($[…])".into()),
        Some(b'{') => {
            let end = find(b, i + 2, b'}').ok_or_else(|| "an unterminated ${".to_string())?;
            variable(&raw[i + 2..end], lx)?;
            lx.splits |= !quoted;
            Ok(end + 1)
        }
        Some(b'\'') if !quoted => {
            // ANSI-C quoting: decoded by bash into text the gate does not decode.
            let mut j = i + 2;
            while j < b.len() {
                match b[j] {
                    b'\\' => j += 2,
                    b'\'' => {
                        lx.inert("$'…' text");
                        lx.push('?', true)?;
                        return Ok(j + 1);
                    }
                    _ => j += 1,
                }
            }
            Err("an unterminated $'".into())
        }
        Some(b'"') if !quoted => {
            // A translated string: the locale's catalogue may replace its text.
            lx.inert("$\"…\" text");
            double_quoted(raw, i + 2, lx)
        }
        Some(c) if c == b'_' || c.is_ascii_alphabetic() => {
            let mut j = i + 1;
            while j < b.len() && (b[j] == b'_' || b[j].is_ascii_alphanumeric()) {
                j += 1;
            }
            variable(&raw[i + 1..j], lx)?;
            lx.splits |= !quoted;
            Ok(j)
        }
        Some(c) if c.is_ascii_digit() || b"?#$!-@*".contains(&c) => {
            lx.inert(format!("${}", char::from(c)));
            lx.push('?', true)?;
            lx.splits |= !quoted;
            Ok(i + 2)
        }
        // A lone `$` is itself.
        _ => {
            lx.push('$', quoted)?;
            Ok(i + 1)
        }
    }
}

/// `$NAME` or `${NAME}`: inert when the variable is on the harmless list, otherwise unsafe.
/// Every other `${…}` form (defaults, substrings with arithmetic offsets, `@P` prompt
/// expansion, indirection, array subscripts) can run code or reveal anything.
fn variable(inner: &str, lx: &mut Lexer) -> Result<(), String> {
    if inner == "_" {
        // The last argument of the previous command: whatever the line wrote there.
        return Err("$_, the previous command's last argument".into());
    }
    if inner.len() == 1 && "?#$!-@*0123456789".contains(inner) {
        lx.inert(format!("${inner}"));
        return lx.push('?', true);
    }
    if !is_name(inner) {
        return Err(format!("the expansion ${{{inner}}}"));
    }
    if !HARMLESS_VARIABLES.contains(&inner) {
        return Err(format!(
            "the variable ${inner}, which may hold anything (a key, a path elsewhere)"
        ));
    }
    lx.inert(format!("${inner}"));
    lx.push('?', true)
}

/// Brace expansion (`{a,b}`, `{1..3}`) turns one word into several: never judged. Found
/// conservatively: an unquoted `{` (not `${`) with a later unquoted `}` and an unquoted `,`
/// or `..` between them.
fn brace_expansion(b: &[u8]) -> Result<(), String> {
    let mut quote: Option<u8> = None;
    let mut open = false;
    let mut separator = false;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        match (quote, c) {
            // A backslash escapes, except inside single quotes.
            (None | Some(b'"'), b'\\') => {
                i += 2;
                continue;
            }
            (None, b'\'' | b'"') => quote = Some(c),
            (Some(q), _) if q == c => quote = None,
            (Some(_), _) => {}
            (None, b'{') if i == 0 || b[i - 1] != b'$' => open = true,
            (None, b',') if open => separator = true,
            (None, b'.') if open && b.get(i + 1) == Some(&b'.') => separator = true,
            (None, b'}') if open && separator => return Err("brace expansion".into()),
            _ => {}
        }
        i += 1;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lit(raw: &str) -> Option<String> {
        match Word::parse(raw).value {
            Value::Literal(s) => Some(s),
            _ => None,
        }
    }

    fn kind(raw: &str) -> &'static str {
        match Word::parse(raw).value {
            Value::Literal(_) => "literal",
            Value::Pattern(_) => "pattern",
            Value::Inert(_) => "inert",
            Value::Splits(_) => "splits",
            Value::Unsafe(_) => "unsafe",
        }
    }

    #[test]
    fn quotes_and_escapes_come_off_as_bash_removes_them() {
        assert_eq!(lit("-de''lete").as_deref(), Some("-delete"));
        assert_eq!(lit("-de\"\"lete").as_deref(), Some("-delete"));
        assert_eq!(lit("-de\\lete").as_deref(), Some("-delete"));
        assert_eq!(lit("--outp''ut=f").as_deref(), Some("--output=f"));
        assert_eq!(lit("'a b'").as_deref(), Some("a b"));
        assert_eq!(lit("\"a\\\"b\\$c\\x\"").as_deref(), Some("a\"b$c\\x"));
        assert_eq!(lit("a$").as_deref(), Some("a$"));
        assert_eq!(lit("\\*").as_deref(), Some("*"));
        assert_eq!(lit("'*.rs'").as_deref(), Some("*.rs"));
        assert_eq!(
            lit("HEAD@{1}").as_deref(),
            Some("HEAD@{1}"),
            "no comma: no expansion"
        );
        assert_eq!(lit("{}").as_deref(), Some("{}"));
        assert_eq!(lit("a~b").as_deref(), Some("a~b"));
        assert_eq!(lit("\"~\"").as_deref(), Some("~"));
        assert_eq!(
            lit("[").as_deref(),
            Some("["),
            "no closing bracket: no pattern"
        );
        assert_eq!(lit("a[b").as_deref(), Some("a[b"));
    }

    #[test]
    fn expansions_are_found() {
        for (raw, want) in [
            ("*.rs", "pattern"),
            ("src/[ab].rs", "pattern"),
            ("a?", "pattern"),
            ("$HOME", "splits"),
            ("$_", "unsafe"),
            ("\"$_\"", "unsafe"),
            ("${_}", "unsafe"),
            ("\"$HOME/x\"", "inert"),
            ("${HOME}", "splits"),
            ("\"${HOME}\"", "inert"),
            ("\"$?\"", "inert"),
            ("~", "inert"),
            ("~/x", "inert"),
            ("--prefix=~/x", "inert"),
            ("$'\\x72m'", "inert"),
            ("$\"hi\"", "inert"),
            ("$ANTHROPIC_API_KEY", "unsafe"),
            ("\"${OPENAI_API_KEY}\"", "unsafe"),
            ("${X@P}", "unsafe"),
            ("${!X}", "unsafe"),
            ("${a[$(id)]}", "unsafe"),
            ("${HOME:-x}", "unsafe"),
            ("$(id)", "unsafe"),
            ("\"$(id)\"", "unsafe"),
            ("`id`", "unsafe"),
            ("$((1+2))", "unsafe"),
            ("$[1+2]", "unsafe"),
            ("{-delete,}", "unsafe"),
            ("x{1..3}", "unsafe"),
            ("a'b", "unsafe"),
            ("\"ab", "unsafe"),
            ("a;b", "unsafe"),
            ("a b", "unsafe"),
            ("a>b", "unsafe"),
            ("!(x)", "unsafe"),
            ("a\0b", "unsafe"),
            ("a\rb", "unsafe"),
            ("#x", "unsafe"),
            ("$HOME/*", "unsafe"),
            ("\"$\\\n(id)\"", "unsafe"),
            ("$\\\nANTHROPIC_API_KEY", "unsafe"),
            ("a\\\nb", "unsafe"),
            ("'a\\'{x,y}", "unsafe"),
        ] {
            assert_eq!(kind(raw), want, "{raw:?}: {:?}", Word::parse(raw).value);
        }
    }

    #[test]
    fn quoted_pattern_characters_stay_literal_inside_a_pattern() {
        let Value::Pattern(p) = Word::parse("'*'*").value else {
            panic!("a pattern");
        };
        assert_eq!(p.chars, vec![('*', true), ('*', false)]);
    }
}
