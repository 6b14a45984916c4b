//! String replacement as edit and multi_edit do it: an exact match first, one unique match
//! unless every match is asked for; failing that, the one place old_string fits once whitespace
//! is forgiven (`near_miss`). The file's own line endings are kept, and failures are explained
//! well enough for a model to fix its next call.

use std::fmt::Write as _;

use super::near_miss::{self, Level, NearMiss, Search, Span};

/// How many match line numbers an ambiguity error lists.
const LISTED_MATCHES: usize = 20;

/// Why a replacement could not be made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Failure {
    EmptyOld,
    Unchanged,
    NotFound {
        hint: Option<String>,
    },
    Ambiguous {
        count: usize,
        lines: Vec<usize>,
    },
    /// No exact match, and several places fit once `level` of whitespace is forgiven.
    NearMissAmbiguous {
        level: Level,
        count: usize,
        spans: Vec<Span>,
    },
}

/// A replacement made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Replaced {
    pub(crate) content: String,
    pub(crate) count: usize,
    /// Set when old_string matched only loosely, to tell the model and the user.
    pub(crate) near_miss: Option<NearMiss>,
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
            Failure::NearMissAmbiguous {
                level,
                count,
                spans,
            } => format!(
                "old_string is not in {label} exactly, and once {} it matches {count} places \
                 (lines {}), so nothing was changed; include more surrounding lines so it \
                 matches one place, copied exactly as the file has them",
                level.ignoring(),
                near_miss::list_spans(spans, *count)
            ),
        }
    }
}

/// `content` with `old` replaced by `new` (every occurrence if `replace_all`, else the only
/// one), and how many replacements were made.
///
/// `old` and `new` are first given the file's dominant line ending, so a model that writes
/// `\n` can edit a CRLF file and the file stays CRLF; in a file with mixed endings the strings
/// are also tried as given. Only when `old` is nowhere exactly, and `replace_all` is not set,
/// is the one place it fits loosely taken (see `near_miss`).
pub(crate) fn apply(
    content: &str,
    old: &str,
    new: &str,
    replace_all: bool,
) -> Result<Replaced, Failure> {
    if old.is_empty() {
        return Err(Failure::EmptyOld);
    }
    if old == new {
        return Err(Failure::Unchanged);
    }
    let crlf = uses_crlf(content);
    let (old_fitted, new_fitted) = if crlf {
        (to_crlf(old), to_crlf(new))
    } else {
        (old.replace("\r\n", "\n"), new.replace("\r\n", "\n"))
    };
    let (old_given, new_given) = (old, new);
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
        let eol = if crlf { "\r\n" } else { "\n" };
        return near(content, old_given, new_given, eol, replace_all);
    };
    if replace_all {
        let count = 1 + matches.count();
        return Ok(Replaced {
            content: content.replace(old, new),
            count,
            near_miss: None,
        });
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
    Ok(Replaced {
        content: replaced,
        count: 1,
        near_miss: None,
    })
}

/// What to do when `old` is nowhere exactly: take the one place it fits loosely, or explain why
/// not. `replace_all` stays exact, so a loose fit only makes its error more helpful.
fn near(
    content: &str,
    old: &str,
    new: &str,
    eol: &str,
    replace_all: bool,
) -> Result<Replaced, Failure> {
    match near_miss::find(content, old, new, eol) {
        Search::Unique(near_miss) if !replace_all => Ok(Replaced {
            content: near_miss.apply(content),
            count: 1,
            near_miss: Some(near_miss),
        }),
        Search::Unique(near_miss) => Err(Failure::NotFound {
            hint: Some(exact_only(near_miss.level, &[near_miss.span])),
        }),
        Search::Ambiguous { level, spans } if replace_all => Err(Failure::NotFound {
            hint: Some(exact_only(level, &spans)),
        }),
        Search::Ambiguous { level, spans } => Err(Failure::NearMissAmbiguous {
            level,
            count: spans.len(),
            spans: spans.into_iter().take(LISTED_MATCHES).collect(),
        }),
        Search::None => Err(Failure::NotFound {
            hint: not_found_hint(content, old),
        }),
    }
}

/// Why replace_all found nothing though old_string fits loosely at `spans`.
fn exact_only(level: Level, spans: &[Span]) -> String {
    let places = match spans {
        [one] => one.lines(),
        _ => format!(
            "{} places (lines {})",
            spans.len(),
            near_miss::list_spans(&spans[..spans.len().min(LISTED_MATCHES)], spans.len())
        ),
    };
    format!(
        "replace_all replaces exact matches only, and old_string would match {places} only \
         once {}. Copy the text exactly as the file has it{}.",
        level.ignoring(),
        if spans.len() == 1 {
            ", or leave out replace_all to edit that one place"
        } else {
            ""
        }
    )
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

/// A likely reason `old` did not match: line-number prefixes copied from read, else the closest
/// text in the file and how it differs, else whitespace that no loose match forgives.
fn not_found_hint(content: &str, old: &str) -> Option<String> {
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
             number, tab); leave them out and copy only the text after the tab."
                .into(),
        );
    }
    let squeeze = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let wanted = squeeze(old);
    let spacing = !wanted.is_empty() && squeeze(content).contains(&wanted);
    match (near_miss::closest(content, old), spacing) {
        (Some(closest), false) => Some(closest),
        (Some(closest), true) => Some(format!(
            "{closest} All of old_string's text is in the file once whitespace is ignored, so \
             only spacing or line breaks differ."
        )),
        (None, true) => Some(
            "All of old_string's text is in the file once whitespace is ignored, so only \
             spacing or line breaks differ. Read the file again and copy the lines exactly."
                .into(),
        ),
        (None, false) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The file and the count after a replacement that must have matched exactly.
    fn exact(content: &str, old: &str, new: &str, replace_all: bool) -> (String, usize) {
        let replaced = apply(content, old, new, replace_all).unwrap();
        assert_eq!(replaced.near_miss, None);
        (replaced.content, replaced.count)
    }

    #[test]
    fn replaces_the_single_match() {
        assert_eq!(exact("a b c", "b", "B", false), ("a B c".into(), 1));
        assert_eq!(
            exact("fn x() {}\n", "x()", "y(n: u8)", false).0,
            "fn y(n: u8) {}\n"
        );
    }

    #[test]
    fn an_exact_match_is_taken_before_any_near_miss() {
        // Line 1 would fit with a shift too, but the exact match on line 2 decides.
        assert_eq!(
            exact("  bar()\n    bar()\n", "    bar()", "    baz()", false).0,
            "  bar()\n    baz()\n"
        );
        // Only when nothing matches exactly is a near miss taken, and it says so.
        let replaced = apply("  bar()\n", "bar()  \n", "baz()\n", false).unwrap();
        assert_eq!(replaced.content, "  baz()\n");
        assert!(replaced.near_miss.is_some());
    }

    #[test]
    fn two_near_misses_are_an_ambiguity_that_names_them() {
        let err = apply("a:\n  x()\nb:\n  x()\n", "\tx()", "\ty()", false).unwrap_err();
        assert!(
            matches!(&err, Failure::NearMissAmbiguous { count: 2, .. }),
            "{err:?}"
        );
        assert!(
            err.message("f").contains("matches 2 places (lines 2, 4)"),
            "{}",
            err.message("f")
        );
    }

    #[test]
    fn replace_all_counts_every_match() {
        assert_eq!(exact("x x x", "x", "yy", true), ("yy yy yy".into(), 3));
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
        let (out, n) = exact(content, "one\ntwo\n", "one\nTWO\nextra\n", false);
        assert_eq!(n, 1);
        assert_eq!(out, "one\r\nTWO\r\nextra\r\nthree\r\n");
    }

    #[test]
    fn lf_file_is_matched_with_crlf_strings_and_stays_lf() {
        let (out, _) = exact("a\nb\n", "a\r\nb", "a\r\nB", false);
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
            exact(content, "c\nd", "C\nd", false).0,
            "a\r\nb\r\nC\nd\r\n"
        );
    }

    #[test]
    fn not_found_hints_at_whitespace_no_loose_match_forgives() {
        let err = apply("call(a, b);\n", "call(a,\n     b);", "x", false).unwrap_err();
        let message = err.message("main.rs");
        assert!(
            message.starts_with("old_string not found in main.rs."),
            "{message}"
        );
        assert!(
            message
                .contains("line 1 differs: file has \"call(a, b);\", old_string has \"call(a,\""),
            "{message}"
        );
        assert!(
            message.contains("only spacing or line breaks differ"),
            "{message}"
        );
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
        assert_eq!(exact("héllo wörld", "wörld", "монд", false).0, "héllo монд");
    }
}
