//! An Update File's hunks laid onto the file's text in memory. Each hunk is looked for after
//! the one before it, first exactly, then ignoring trailing whitespace, then ignoring
//! surrounding whitespace, then with typographic punctuation read as ASCII (as Codex's
//! `seek_sequence` does: models retype context imperfectly). Unchanged lines keep the file's
//! own text and line endings; added lines take the file's dominant ending.
//!
//! Every search is a forward scan comparing a hunk's lines at each position, so a patch costs
//! time proportional to the file's length times its hunks' lengths, never the square of the
//! file.

use std::fmt::Write as _;

use super::parse::{Hunk, HunkLine, quote};
use crate::fs::replace::uses_crlf;

/// How many lines of a hunk, and of the file near where it should be, an error shows.
const SHOWN_LINES: usize = 12;

/// How many lines are compared by similarity when a hunk's text is nowhere near the file.
const SIMILARITY_SCAN_LIMIT: usize = 20_000;

/// A line of the file being patched: its text and the line break after it (`""` for a last
/// line without one).
struct Line<'a> {
    text: &'a str,
    ending: &'a str,
}

fn split(content: &str) -> Vec<Line<'_>> {
    content
        .split_inclusive('\n')
        .map(|piece| {
            let text = piece.strip_suffix('\n').unwrap_or(piece);
            let text = if text.len() < piece.len() {
                text.strip_suffix('\r').unwrap_or(text)
            } else {
                text
            };
            Line {
                text,
                ending: &piece[text.len()..],
            }
        })
        .collect()
}

/// Where a hunk goes: the index of the first file line it covers, and its lines (maybe with
/// blank context trimmed off so it could match).
struct Placed<'h> {
    start: usize,
    lines: &'h [HunkLine],
}

/// `content` with `hunks` applied in order, or why a hunk could not be placed.
pub(crate) fn apply(content: &str, hunks: &[Hunk]) -> Result<String, Mismatch> {
    let lines = split(content);
    let texts: Vec<&str> = lines.iter().map(|l| l.text).collect();
    let mut placed = Vec::with_capacity(hunks.len());
    let mut cursor = 0;
    for (index, hunk) in hunks.iter().enumerate() {
        let mut anchored = None;
        for anchor in &hunk.anchors {
            match seek(&texts, &[anchor.as_str()], cursor, None) {
                Some(at) => {
                    cursor = at + 1;
                    anchored = Some(at);
                }
                None => {
                    return Err(Mismatch {
                        hunk: index,
                        after: cursor,
                        kind: Kind::Anchor {
                            anchor: anchor.clone(),
                            earlier: seek(&texts, &[anchor.as_str()], 0, None),
                            similar: similar_line(&texts, anchor),
                        },
                    });
                }
            }
        }
        let Some(found) = place(&texts, hunk, cursor, anchored) else {
            let old = old_side(&hunk.lines);
            return Err(Mismatch {
                hunk: index,
                after: cursor,
                kind: Kind::Lines {
                    earlier: seek(&texts, &old, 0, None).filter(|&at| at < cursor),
                    closest: closest(&texts, &old),
                    expected: old.iter().map(|s| s.to_string()).collect(),
                    end_of_file: hunk.end_of_file,
                },
            });
        };
        cursor = found.start + old_side(found.lines).len();
        placed.push(found);
    }
    Ok(render(content, &lines, &placed))
}

/// Where `hunk` goes, searching from `cursor`. `anchored` is the line its last `@@` line
/// matched: a hunk whose first line repeats that line (a common slip) may start there.
fn place<'h>(
    texts: &[&str],
    hunk: &'h Hunk,
    cursor: usize,
    anchored: Option<usize>,
) -> Option<Placed<'h>> {
    let full = hunk.lines.as_slice();
    // Blank context at a hunk's edges is often a separator the model left, not a line of the
    // file: try without it when the hunk does not match as written.
    let trimmed = trim_blank_context(full);
    let candidates = if trimmed.len() < full.len() {
        vec![full, trimmed]
    } else {
        vec![full]
    };
    for lines in candidates {
        let old = old_side(lines);
        if old.is_empty() {
            // Only additions: after the anchors, or at the end of the file without one.
            let start = if hunk.anchors.is_empty() || hunk.end_of_file {
                texts.len()
            } else {
                cursor
            };
            return Some(Placed { start, lines });
        }
        let at_end = texts
            .len()
            .checked_sub(old.len())
            .filter(|&end| hunk.end_of_file && end >= cursor);
        let found = at_end
            .and_then(|end| seek(texts, &old, end, Some(end)))
            .or_else(|| seek(texts, &old, cursor, None))
            .or_else(|| anchored.and_then(|at| seek(texts, &old, at, Some(at))));
        if let Some(start) = found {
            return Some(Placed { start, lines });
        }
    }
    None
}

fn trim_blank_context(mut lines: &[HunkLine]) -> &[HunkLine] {
    let blank = |line: &HunkLine| matches!(line, HunkLine::Context(text) if text.trim().is_empty());
    while let Some((first, rest)) = lines.split_first()
        && blank(first)
    {
        lines = rest;
    }
    while let Some((last, rest)) = lines.split_last()
        && blank(last)
    {
        lines = rest;
    }
    lines
}

/// The lines a hunk expects in the file: its context and removed lines.
fn old_side(lines: &[HunkLine]) -> Vec<&str> {
    lines
        .iter()
        .filter_map(|line| match line {
            HunkLine::Context(text) | HunkLine::Remove(text) => Some(text.as_str()),
            HunkLine::Add(_) => None,
        })
        .collect()
}

/// The first index from `from` (up to `last`, inclusive, when given) where `pattern` matches
/// `texts`, trying each way of comparing lines in turn from strictest to loosest.
fn seek(texts: &[&str], pattern: &[&str], from: usize, last: Option<usize>) -> Option<usize> {
    let end = texts.len().checked_sub(pattern.len())?;
    let end = last.map_or(end, |last| last.min(end));
    if from > end {
        return None;
    }
    let passes: [fn(&str, &str) -> bool; 4] = [
        |a, b| a == b,
        |a, b| a.trim_end() == b.trim_end(),
        |a, b| a.trim() == b.trim(),
        |a, b| a.trim().chars().map(plain).eq(b.trim().chars().map(plain)),
    ];
    passes.iter().find_map(|same| {
        (from..=end).find(|&at| {
            pattern
                .iter()
                .zip(&texts[at..])
                .all(|(want, have)| same(have, want))
        })
    })
}

/// `c` with typographic dashes, quotes and spaces read as their ASCII forms.
fn plain(c: char) -> char {
    match c {
        '\u{2010}'..='\u{2015}' | '\u{2212}' => '-',
        '\u{2018}'..='\u{201B}' => '\'',
        '\u{201C}'..='\u{201F}' => '"',
        '\u{00A0}' | '\u{2002}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}' => ' ',
        other => other,
    }
}

/// The new text: the file's lines copied around the placed hunks, each hunk's context lines
/// taken from the file (they may have matched only loosely) and its added lines given the
/// file's dominant line ending. A file that did not end with a line break still does not.
fn render(content: &str, lines: &[Line<'_>], placed: &[Placed<'_>]) -> String {
    let ending = if uses_crlf(content) { "\r\n" } else { "\n" };
    let mut out = String::with_capacity(content.len() + content.len() / 8);
    let copy = |out: &mut String, line: &Line<'_>| {
        out.push_str(line.text);
        out.push_str(if line.ending.is_empty() {
            ending
        } else {
            line.ending
        });
    };
    let mut next = 0;
    for hunk in placed {
        for line in &lines[next..hunk.start] {
            copy(&mut out, line);
        }
        let mut at = hunk.start;
        for line in hunk.lines {
            match line {
                HunkLine::Context(_) => {
                    copy(&mut out, &lines[at]);
                    at += 1;
                }
                HunkLine::Remove(_) => at += 1,
                HunkLine::Add(text) => {
                    out.push_str(text);
                    out.push_str(ending);
                }
            }
        }
        next = at;
    }
    for line in &lines[next..] {
        copy(&mut out, line);
    }
    let ended = content.is_empty() || content.ends_with('\n');
    if !ended {
        let cut = out.strip_suffix('\n').map_or(out.len(), str::len);
        let cut = out[..cut].strip_suffix('\r').map_or(cut, str::len);
        out.truncate(cut);
    }
    out
}

/// The file's line most like `wanted`, when one is alike enough to be a likely meaning.
fn similar_line(texts: &[&str], wanted: &str) -> Option<usize> {
    let wanted = wanted.trim();
    if wanted.is_empty() {
        return None;
    }
    let candidates: Vec<&str> = texts
        .iter()
        .take(SIMILARITY_SCAN_LIMIT)
        .map(|t| t.trim())
        .collect();
    let best = similar::get_close_matches(wanted, &candidates, 1, 0.6);
    let best = best.first()?;
    candidates.iter().position(|c| c == best)
}

/// The place in the file that shares the most lines (ignoring surrounding whitespace) with
/// `old`, or failing that the line most like its first non-blank line.
fn closest(texts: &[&str], old: &[&str]) -> Option<usize> {
    let mut best = (0, 0);
    for at in 0..texts.len() {
        let shared = old
            .iter()
            .zip(&texts[at..])
            .filter(|(want, have)| !want.trim().is_empty() && want.trim() == have.trim())
            .count();
        if shared > best.1 {
            best = (at, shared);
        }
    }
    if best.1 > 0 {
        return Some(best.0);
    }
    let first = old.iter().position(|line| !line.trim().is_empty())?;
    Some(similar_line(texts, old[first])?.saturating_sub(first))
}

/// A hunk that could not be placed, with what is needed to explain it.
#[derive(Debug)]
pub(crate) struct Mismatch {
    /// Which hunk (0-based).
    pub(crate) hunk: usize,
    /// The file line (0-based) from which it was searched for.
    after: usize,
    kind: Kind,
}

#[derive(Debug)]
enum Kind {
    /// An `@@` line not found.
    Anchor {
        anchor: String,
        earlier: Option<usize>,
        similar: Option<usize>,
    },
    /// The hunk's context and removed lines not found.
    Lines {
        expected: Vec<String>,
        earlier: Option<usize>,
        closest: Option<usize>,
        end_of_file: bool,
    },
}

impl Mismatch {
    /// What went wrong with hunk `self.hunk` of `hunks`, in the file named `label` whose
    /// text is `content`, for the model to fix its patch.
    pub(crate) fn describe(&self, label: &str, content: &str, hunks: &[Hunk]) -> String {
        let texts: Vec<&str> = split(content).iter().map(|l| l.text).collect();
        let at = hunks.get(self.hunk).map_or(0, |h| h.at);
        let mut out = format!(
            "hunk {} of {} (patch line {at}) does not match {label}: ",
            self.hunk + 1,
            hunks.len()
        );
        let searched = if self.after == 0 {
            String::new()
        } else {
            format!(" after line {}", self.after)
        };
        match &self.kind {
            Kind::Anchor {
                anchor,
                earlier,
                similar,
            } => {
                let _ = write!(
                    out,
                    "its `@@ {}` line is not in the file{searched}.",
                    quote(anchor)
                );
                if let Some(line) = earlier {
                    let _ = write!(
                        out,
                        " It is at line {}, above where the previous hunk or `@@` line left \
                         off: hunks must follow the order of the file.",
                        line + 1
                    );
                } else if let Some(line) = similar {
                    let _ = write!(
                        out,
                        " The closest line is {}: `{}`.",
                        line + 1,
                        quote(texts[*line].trim())
                    );
                }
            }
            Kind::Lines {
                expected,
                earlier,
                closest,
                end_of_file,
            } => {
                let place = if *end_of_file {
                    " at the end of the file or".to_string()
                } else {
                    String::new()
                };
                let _ = write!(
                    out,
                    "its unchanged and removed lines were not found{place}{searched}, even \
                     ignoring whitespace. It expects:\n{}",
                    shown(expected.iter().map(String::as_str), None)
                );
                if let Some(line) = earlier {
                    let _ = write!(
                        out,
                        "\nThey are at line {}, above where the previous hunk left off: hunks \
                         must follow the order of the file.",
                        line + 1
                    );
                } else if let Some(start) = closest {
                    let end = (start + expected.len().max(1)).min(texts.len());
                    let _ = write!(
                        out,
                        "\nThe closest lines in {label} ({}-{}) are:\n{}",
                        start + 1,
                        end,
                        shown(texts[*start..end].iter().copied(), Some(start + 1))
                    );
                } else {
                    out.push_str("\nNo line like them is in the file.");
                }
            }
        }
        out
    }
}

/// Lines for an error, indented (with their numbers when `first` is given), at most
/// [`SHOWN_LINES`] of them.
fn shown<'a>(lines: impl ExactSizeIterator<Item = &'a str>, first: Option<usize>) -> String {
    let total = lines.len();
    let mut out = String::new();
    for (i, line) in lines.take(SHOWN_LINES).enumerate() {
        match first {
            Some(first) => {
                let _ = writeln!(out, "{:>6} | {}", first + i, line);
            }
            None => {
                let _ = writeln!(out, "    {line}");
            }
        }
    }
    if total > SHOWN_LINES {
        let _ = writeln!(out, "    … and {} more", total - SHOWN_LINES);
    }
    out.truncate(out.trim_end().len());
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::patch::parse::{FileOp, parse};

    /// The hunks of a patch's one Update File.
    fn hunks(body: &str) -> Vec<Hunk> {
        let ops = parse(&format!(
            "*** Begin Patch\n*** Update File: f\n{body}\n*** End Patch"
        ))
        .unwrap();
        match ops.into_iter().next() {
            Some(FileOp::Update { hunks, .. }) => hunks,
            other => panic!("{other:?}"),
        }
    }

    fn patched(content: &str, body: &str) -> String {
        apply(content, &hunks(body)).unwrap()
    }

    fn mismatch(content: &str, body: &str) -> String {
        let hunks = hunks(body);
        apply(content, &hunks)
            .unwrap_err()
            .describe("f", content, &hunks)
    }

    #[test]
    fn replaces_lines_in_context() {
        assert_eq!(
            patched("a\nb\nc\nd\n", "@@\n a\n-b\n+B\n+B2\n c"),
            "a\nB\nB2\nc\nd\n"
        );
    }

    #[test]
    fn hunks_apply_in_order_each_after_the_previous_one() {
        let content = "x = 1\ny\nx = 1\nz\n";
        assert_eq!(
            patched(content, "@@\n-x = 1\n+x = 2\n@@\n-x = 1\n+x = 3"),
            "x = 2\ny\nx = 3\nz\n"
        );
        let err = mismatch("a\nb\nc\n", "@@\n-c\n+C\n@@\n-a\n+A");
        assert!(
            err.starts_with("hunk 2 of 2 (patch line 6) does not match f"),
            "{err}"
        );
        assert!(
            err.contains("They are at line 1, above where the previous hunk"),
            "{err}"
        );
    }

    #[test]
    fn anchors_jump_to_the_line_after_them() {
        let content = "def a():\n    return 1\ndef b():\n    return 1\n";
        assert_eq!(
            patched(content, "@@ def b():\n-    return 1\n+    return 2"),
            "def a():\n    return 1\ndef b():\n    return 2\n"
        );
        let content = "class A:\n  def f():\n    x\nclass B:\n  def f():\n    x\n";
        assert_eq!(
            patched(content, "@@ class B:\n@@   def f():\n-    x\n+    y"),
            "class A:\n  def f():\n    x\nclass B:\n  def f():\n    y\n"
        );
        // The hunk may repeat its anchor as its first line.
        assert_eq!(
            patched(
                content,
                "@@ class B:\n class B:\n   def f():\n-    x\n+    z"
            ),
            "class A:\n  def f():\n    x\nclass B:\n  def f():\n    z\n"
        );
        let err = mismatch("fn main() {}\n", "@@ fn mian() {}\n-x");
        assert!(
            err.contains("its `@@ fn mian() {}` line is not in the file."),
            "{err}"
        );
        assert!(
            err.contains("The closest line is 1: `fn main() {}`"),
            "{err}"
        );
    }

    #[test]
    fn additions_alone_go_after_their_anchor_or_at_the_end() {
        assert_eq!(
            patched("fn a() {\n}\nfn b() {\n}\n", "@@ fn a() {\n+    x();"),
            "fn a() {\n    x();\n}\nfn b() {\n}\n"
        );
        assert_eq!(patched("a\n", "@@\n+b"), "a\nb\n");
        assert_eq!(patched("", "@@\n+first"), "first\n");
    }

    #[test]
    fn end_of_file_hunks_match_the_last_lines() {
        let content = "end\nmiddle\nend\n";
        assert_eq!(
            patched(content, "@@\n-end\n+END\n*** End of File"),
            "end\nmiddle\nEND\n"
        );
        assert_eq!(
            patched(content, "@@\n+tail\n*** End of File"),
            "end\nmiddle\nend\ntail\n"
        );
    }

    #[test]
    fn context_matches_loosely_but_keeps_the_files_own_text() {
        // Trailing whitespace in the file, different indentation, typographic quotes.
        let content = "fn f() {   \n\tlet s = “hi”;\n        old();\n}\n";
        assert_eq!(
            patched(
                content,
                "@@\n fn f() {\n     let s = \"hi\";\n-    old();\n+    new();\n }"
            ),
            "fn f() {   \n\tlet s = “hi”;\n    new();\n}\n"
        );
    }

    #[test]
    fn exact_matches_win_over_loose_ones_earlier_in_the_file() {
        assert_eq!(
            patched("  x\nx\n", "@@\n-x\n+y"),
            "  x\ny\n",
            "the exact line is preferred to an earlier indented one"
        );
    }

    #[test]
    fn blank_context_at_a_hunks_edge_may_be_a_separator() {
        assert_eq!(
            patched("a\nb\nc\n", "@@\n a\n-b\n+B\n\n@@\n-c\n+C"),
            "a\nB\nC\n"
        );
    }

    #[test]
    fn crlf_files_stay_crlf_and_a_missing_final_newline_stays_missing() {
        assert_eq!(
            patched("a\r\nb\r\nc\r\n", "@@\n a\n-b\n+B\n+B2"),
            "a\r\nB\r\nB2\r\nc\r\n"
        );
        assert_eq!(patched("a\nb", "@@\n-b\n+B"), "a\nB");
        assert_eq!(patched("a\nb", "@@\n b\n+c"), "a\nb\nc");
        assert_eq!(patched("a\r\nb", "@@\n b\n+c"), "a\r\nb\r\nc");
        // A mixed file keeps each untouched line's own ending.
        assert_eq!(patched("a\r\nb\nc\r\n", "@@\n-c\n+C"), "a\r\nb\nC\r\n");
    }

    #[test]
    fn a_hunk_not_found_shows_what_it_expected_and_the_closest_lines() {
        let content = "one\ntwo\nthree\nfour\nfive\n";
        let err = mismatch(content, "@@\n two\n-3\n+THREE\n four");
        assert_eq!(
            err,
            "hunk 1 of 1 (patch line 3) does not match f: its unchanged and removed lines were \
             not found, even ignoring whitespace. It expects:\n    two\n    3\n    four\n\
             The closest lines in f (2-4) are:\n     2 | two\n     3 | three\n     4 | four"
        );
        let err = mismatch(content, "@@\n-zzz qqq\n+x");
        assert!(err.ends_with("No line like them is in the file."), "{err}");
        let err = mismatch(content, "@@\n-four\n+4\n@@ five\n-nothing");
        assert!(err.contains("not found after line 5"), "{err}");
    }

    #[test]
    fn a_three_hunk_patch_on_a_large_file_scans_it_linearly() {
        // 200,000 lines with the hunks near the end: a quadratic scan would take minutes.
        let lines: Vec<String> = (0..200_000).map(|i| format!("line {i}")).collect();
        let content = lines.join("\n") + "\n";
        let body = "@@\n line 150000\n-line 150001\n+changed 1\n\
                    @@ line 180000\n-line 180001\n+changed 2\n\
                    @@\n-line 199999\n+changed 3\n*** End of File";
        let out = patched(&content, body);
        assert_eq!(out.lines().count(), 200_000);
        assert!(out.contains("line 150000\nchanged 1\nline 150002\n"));
        assert!(out.contains("line 180000\nchanged 2\nline 180002\n"));
        assert!(out.ends_with("line 199998\nchanged 3\n"));
    }
}
