//! Exact string replacement as edit and multi_edit do it: one unique match unless every match
//! is asked for, the file's own line endings kept, and failures explained well enough for a
//! model to fix its next call.

use std::fmt::Write as _;

/// How many match line numbers an ambiguity error lists.
const LISTED_MATCHES: usize = 20;

/// Why a replacement could not be made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Failure {
    EmptyOld,
    Unchanged,
    NotFound { hint: Option<&'static str> },
    Ambiguous { count: usize, lines: Vec<usize> },
}

impl Failure {
    /// What to tell the model, for the file named `label`.
    pub(crate) fn message(&self, label: &str) -> String {
        match self {
            Failure::EmptyOld => "old_string is empty; to create a file or replace all of its \
                                  content, use write"
                .to_string(),
            Failure::Unchanged => "old_string and new_string are the same (once line endings \
                                   match the file's), so there is nothing to change"
                .to_string(),
            Failure::NotFound { hint } => {
                let mut message = format!("old_string not found in {label}.");
                if let Some(hint) = hint {
                    message.push(' ');
                    message.push_str(hint);
                }
                message
            }
            Failure::Ambiguous { count, lines } => {
                let mut listed = lines
                    .iter()
                    .map(usize::to_string)
                    .collect::<Vec<_>>()
                    .join(", ");
                if *count > lines.len() {
                    let _ = write!(listed, " and {} more", count - lines.len());
                }
                format!(
                    "old_string occurs {count} times in {label} (at lines {listed}); include \
                     more surrounding lines in old_string so it matches exactly one place, or \
                     set replace_all to true to replace every occurrence"
                )
            }
        }
    }
}

/// `content` with `old` replaced by `new` (every occurrence if `replace_all`, else the only
/// one), and how many replacements were made.
///
/// `old` and `new` are first given the file's dominant line ending, so a model that writes
/// `\n` can edit a CRLF file and the file stays CRLF; in a file with mixed endings the strings
/// are also tried as given.
pub(crate) fn apply(
    content: &str,
    old: &str,
    new: &str,
    replace_all: bool,
) -> Result<(String, usize), Failure> {
    if old.is_empty() {
        return Err(Failure::EmptyOld);
    }
    if old == new {
        return Err(Failure::Unchanged);
    }
    let (old_fitted, new_fitted) = if uses_crlf(content) {
        (to_crlf(old), to_crlf(new))
    } else {
        (old.replace("\r\n", "\n"), new.replace("\r\n", "\n"))
    };
    let (old, new) = if content.contains(old_fitted.as_str()) || !content.contains(old) {
        (old_fitted.as_str(), new_fitted.as_str())
    } else {
        (old, new)
    };
    if old == new {
        return Err(Failure::Unchanged);
    }

    let mut matches = content.match_indices(old).map(|(at, _)| at);
    let Some(first) = matches.next() else {
        return Err(Failure::NotFound {
            hint: not_found_hint(content, old),
        });
    };
    if replace_all {
        let count = 1 + matches.count();
        return Ok((content.replace(old, new), count));
    }
    if matches.next().is_some() {
        let count = content.matches(old).count();
        let offsets = content
            .match_indices(old)
            .map(|(at, _)| at)
            .take(LISTED_MATCHES);
        return Err(Failure::Ambiguous {
            count,
            lines: line_numbers(content, offsets),
        });
    }
    let mut replaced = String::with_capacity(content.len() - old.len() + new.len());
    replaced.push_str(&content[..first]);
    replaced.push_str(new);
    replaced.push_str(&content[first + old.len()..]);
    Ok((replaced, 1))
}

/// Whether most of the file's line breaks are `\r\n`.
pub(crate) fn uses_crlf(content: &str) -> bool {
    let crlf = content.matches("\r\n").count();
    crlf > 0 && crlf * 2 >= content.matches('\n').count()
}

/// `s` with every `\n` not already preceded by `\r` turned into `\r\n`.
fn to_crlf(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + s.len() / 16);
    let mut previous = None;
    for c in s.chars() {
        if c == '\n' && previous != Some('\r') {
            out.push('\r');
        }
        out.push(c);
        previous = Some(c);
    }
    out
}

/// The 1-based line of each byte offset (ascending) in `content`.
fn line_numbers(content: &str, offsets: impl Iterator<Item = usize>) -> Vec<usize> {
    let mut line = 1;
    let mut scanned = 0;
    offsets
        .map(|at| {
            line += content.as_bytes()[scanned..at]
                .iter()
                .filter(|&&b| b == b'\n')
                .count();
            scanned = at;
            line
        })
        .collect()
}

/// A likely reason `old` did not match, when one is cheap to spot.
fn not_found_hint(content: &str, old: &str) -> Option<&'static str> {
    let numbered = old
        .lines()
        .filter(|line| !line.trim().is_empty())
        .all(|line| {
            let rest = line.trim_start();
            let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
            digits > 0 && rest[digits..].starts_with('\t')
        });
    if numbered && !old.trim().is_empty() {
        return Some(
            "old_string seems to include the line-number prefixes of read's output (spaces, \
             number, tab); leave them out and copy only the text after the tab.",
        );
    }
    let squeeze = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let wanted = squeeze(old);
    if !wanted.is_empty() && squeeze(content).contains(&wanted) {
        return Some(
            "It would match if whitespace were ignored: the indentation (tabs or spaces), \
             trailing spaces or line breaks differ. Read the file again and copy the lines \
             exactly.",
        );
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_the_single_match() {
        assert_eq!(
            apply("a b c", "b", "B", false).unwrap(),
            ("a B c".into(), 1)
        );
        assert_eq!(
            apply("fn x() {}\n", "x()", "y(n: u8)", false).unwrap().0,
            "fn y(n: u8) {}\n"
        );
    }

    #[test]
    fn replace_all_counts_every_match() {
        assert_eq!(
            apply("x x x", "x", "yy", true).unwrap(),
            ("yy yy yy".into(), 3)
        );
    }

    #[test]
    fn ambiguous_match_lists_line_numbers() {
        let content = "let a = 1;\nfoo();\nlet b = 2;\nfoo();\n\nfoo();\n";
        let err = apply(content, "foo();", "bar();", false).unwrap_err();
        assert_eq!(
            err,
            Failure::Ambiguous {
                count: 3,
                lines: vec![2, 4, 6]
            }
        );
        let message = err.message("src/x.rs");
        assert!(
            message.contains("occurs 3 times in src/x.rs (at lines 2, 4, 6)"),
            "{message}"
        );
        assert!(message.contains("replace_all"), "{message}");
    }

    #[test]
    fn ambiguity_lists_at_most_twenty_lines() {
        let content = "x\n".repeat(30);
        let err = apply(&content, "x", "y", false).unwrap_err();
        let Failure::Ambiguous { count, lines } = &err else {
            panic!("{err:?}")
        };
        assert_eq!(*count, 30);
        assert_eq!(lines, &(1..=20).collect::<Vec<_>>());
        assert!(
            err.message("f").contains("19, 20 and 10 more"),
            "{}",
            err.message("f")
        );
    }

    #[test]
    fn empty_and_identical_strings_are_refused() {
        assert_eq!(apply("abc", "", "x", false), Err(Failure::EmptyOld));
        assert_eq!(apply("abc", "b", "b", false), Err(Failure::Unchanged));
        assert!(Failure::EmptyOld.message("f").contains("use write"));
    }

    #[test]
    fn crlf_file_is_matched_with_lf_strings_and_stays_crlf() {
        let content = "one\r\ntwo\r\nthree\r\n";
        let (out, n) = apply(content, "one\ntwo\n", "one\nTWO\nextra\n", false).unwrap();
        assert_eq!(n, 1);
        assert_eq!(out, "one\r\nTWO\r\nextra\r\nthree\r\n");
    }

    #[test]
    fn lf_file_is_matched_with_crlf_strings_and_stays_lf() {
        let (out, _) = apply("a\nb\n", "a\r\nb", "a\r\nB", false).unwrap();
        assert_eq!(out, "a\nB\n");
        assert_eq!(
            apply("a\nb\n", "a\r\nb", "a\nb", false),
            Err(Failure::Unchanged)
        );
    }

    #[test]
    fn mixed_endings_fall_back_to_the_strings_as_given() {
        let content = "a\r\nb\r\nc\nd\r\n";
        assert_eq!(
            apply(content, "c\nd", "C\nd", false).unwrap().0,
            "a\r\nb\r\nC\nd\r\n"
        );
    }

    #[test]
    fn not_found_hints_at_whitespace() {
        let err = apply(
            "fn main() {\n\tprintln!();\n}\n",
            "    println!();",
            "x",
            false,
        )
        .unwrap_err();
        let message = err.message("main.rs");
        assert!(
            message.starts_with("old_string not found in main.rs."),
            "{message}"
        );
        assert!(message.contains("whitespace"), "{message}");
        let err = apply("abc", "xyz", "q", false).unwrap_err();
        assert_eq!(err, Failure::NotFound { hint: None });
        assert_eq!(err.message("f"), "old_string not found in f.");
    }

    #[test]
    fn not_found_hints_at_line_number_prefixes() {
        let err = apply("alpha\nbeta\n", "     1\talpha\n     2\tbeta", "x", false).unwrap_err();
        assert!(
            err.message("f").contains("line-number prefixes"),
            "{}",
            err.message("f")
        );
    }

    #[test]
    fn multibyte_text_is_replaced_on_char_boundaries() {
        assert_eq!(
            apply("héllo wörld", "wörld", "монд", false).unwrap().0,
            "héllo монд"
        );
    }
}
