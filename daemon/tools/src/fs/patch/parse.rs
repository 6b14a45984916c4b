//! The patch text read into file operations, without touching the disk. The grammar is
//! Codex's (`*** Begin Patch`, `*** Add/Delete/Update File:`, `@@` hunks, `*** End Patch`);
//! where models commonly slip around it (a heredoc or code fence around the patch, a missing
//! wrapper line, padded markers, a unified-diff `@@ -1,3 +1,4 @@` header) the meaning is
//! still unambiguous, so it is accepted rather than sent back.

const BEGIN: &str = "*** Begin Patch";
const END: &str = "*** End Patch";
const ADD: &str = "*** Add File:";
const DELETE: &str = "*** Delete File:";
const UPDATE: &str = "*** Update File:";
const MOVE_TO: &str = "*** Move to:";
const END_OF_FILE: &str = "*** End of File";

/// How much of a line an error quotes.
const QUOTED_CHARS: usize = 80;

/// One file operation of a patch. `at` is the patch line (1-based) of its header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FileOp {
    Add {
        path: String,
        content: String,
        at: usize,
    },
    Delete {
        path: String,
        at: usize,
    },
    Update {
        path: String,
        move_to: Option<String>,
        hunks: Vec<Hunk>,
        at: usize,
    },
}

impl FileOp {
    /// The header as the patch wrote it, for errors: `Update File src/lib.rs (patch line 3)`.
    pub(crate) fn title(&self) -> String {
        let (kind, path, at) = match self {
            FileOp::Add { path, at, .. } => ("Add File", path, at),
            FileOp::Delete { path, at } => ("Delete File", path, at),
            FileOp::Update { path, at, .. } => ("Update File", path, at),
        };
        format!("{kind} {path} (patch line {at})")
    }
}

/// One hunk of an Update File: the `@@` lines that lead to it and its lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Hunk {
    /// The text after each `@@` (a line such as a function's header) that must be found, in
    /// order, before the hunk's lines are looked for.
    pub(crate) anchors: Vec<String>,
    pub(crate) lines: Vec<HunkLine>,
    /// `*** End of File` closed it: its lines are at the end of the file.
    pub(crate) end_of_file: bool,
    /// The patch line where it starts.
    pub(crate) at: usize,
}

/// A line of a hunk, without its prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum HunkLine {
    /// ` line`: there before and after.
    Context(String),
    /// `-line`: taken out.
    Remove(String),
    /// `+line`: put in.
    Add(String),
}

/// Why a patch could not be read, at which line of it (1-based).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {message}")]
pub(crate) struct ParseError {
    pub(crate) line: usize,
    pub(crate) message: String,
}

fn error(line: usize, message: impl Into<String>) -> ParseError {
    ParseError {
        line,
        message: message.into(),
    }
}

/// A patch line with its number.
#[derive(Clone, Copy)]
struct Line<'a> {
    number: usize,
    text: &'a str,
}

/// The file operations of `input`, in order.
pub(crate) fn parse(input: &str) -> Result<Vec<FileOp>, ParseError> {
    let all: Vec<Line<'_>> = input
        .lines()
        .enumerate()
        .map(|(i, text)| Line {
            number: i + 1,
            text,
        })
        .collect();
    let body = unwrap(&all)?;
    let ops = Parser {
        lines: body,
        next: 0,
    }
    .ops()?;
    if ops.is_empty() {
        let line = body.first().map_or(1, |l| l.number);
        return Err(error(
            line,
            "the patch changes no file: put `*** Add File: path`, `*** Update File: path` or \
             `*** Delete File: path` sections between `*** Begin Patch` and `*** End Patch`",
        ));
    }
    Ok(ops)
}

/// The lines between the patch's wrappers: a heredoc (`apply_patch <<'EOF'` … `EOF`) or a
/// code fence around it is dropped, then `*** Begin Patch` and `*** End Patch`. Either of
/// those may be missing when the text starts with a file header, since nothing else could
/// be meant.
fn unwrap<'a, 'b>(lines: &'b [Line<'a>]) -> Result<&'b [Line<'a>], ParseError> {
    let mut lines = trim_blank(lines);
    if let Some((first, rest)) = lines.split_first()
        && let Some(delimiter) = heredoc_delimiter(first.text)
    {
        lines = rest;
        if let Some((last, rest)) = lines.split_last()
            && last.text.trim() == delimiter
        {
            lines = rest;
        }
        lines = trim_blank(lines);
    }
    if let (Some(first), Some(last)) = (lines.first(), lines.last())
        && lines.len() >= 2
        && first.text.trim_start().starts_with("```")
        && last.text.trim() == "```"
    {
        lines = trim_blank(&lines[1..lines.len() - 1]);
    }
    let Some(first) = lines.first() else {
        return Err(error(1, "the patch is empty"));
    };
    if first.text.trim() == BEGIN {
        lines = &lines[1..];
    } else if file_header(first.text).is_none() {
        return Err(error(
            first.number,
            format!("a patch starts with `{BEGIN}`, not `{}`", quote(first.text)),
        ));
    }
    if let Some((last, rest)) = lines.split_last()
        && last.text.trim() == END
    {
        lines = rest;
    }
    Ok(lines)
}

fn trim_blank<'a, 'b>(mut lines: &'b [Line<'a>]) -> &'b [Line<'a>] {
    while let Some((first, rest)) = lines.split_first()
        && first.text.trim().is_empty()
    {
        lines = rest;
    }
    while let Some((last, rest)) = lines.split_last()
        && last.text.trim().is_empty()
    {
        lines = rest;
    }
    lines
}

/// The delimiter of a heredoc opening line: `<<EOF`, `<<'EOF'`, `<<"EOF"` or `<<-EOF`,
/// optionally after the command (`apply_patch <<'PATCH'`).
fn heredoc_delimiter(line: &str) -> Option<&str> {
    let line = line.trim();
    let line = line
        .strip_prefix("apply_patch")
        .or_else(|| line.strip_prefix("applypatch"))
        .unwrap_or(line)
        .trim_start();
    let rest = line.strip_prefix("<<")?;
    let rest = rest.strip_prefix('-').unwrap_or(rest).trim_start();
    let word = ['\'', '"']
        .iter()
        .find_map(|q| rest.strip_prefix(*q)?.strip_suffix(*q))
        .unwrap_or(rest);
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    plain.then_some(word)
}

/// Which file operation a line opens, and the path after it, when it is a file header
/// (surrounding whitespace allowed).
fn file_header(line: &str) -> Option<(Kind, &str)> {
    let line = line.trim();
    [
        (ADD, Kind::Add),
        (DELETE, Kind::Delete),
        (UPDATE, Kind::Update),
    ]
    .into_iter()
    .find_map(|(marker, kind)| Some((kind, line.strip_prefix(marker)?.trim())))
}

#[derive(Clone, Copy)]
enum Kind {
    Add,
    Delete,
    Update,
}

struct Parser<'a, 'b> {
    lines: &'b [Line<'a>],
    next: usize,
}

impl<'a> Parser<'a, '_> {
    fn peek(&self) -> Option<Line<'a>> {
        self.lines.get(self.next).copied()
    }

    fn ops(&mut self) -> Result<Vec<FileOp>, ParseError> {
        let mut ops = Vec::new();
        while let Some(line) = self.peek() {
            let trimmed = line.text.trim();
            if trimmed.is_empty() {
                self.next += 1;
                continue;
            }
            if trimmed == END {
                if let Some(more) = self.lines[self.next + 1..]
                    .iter()
                    .find(|l| !l.text.trim().is_empty())
                {
                    return Err(error(
                        more.number,
                        format!(
                            "`{END}` at line {} ends the patch, yet more follows; put every \
                             file in one patch before `{END}`",
                            line.number
                        ),
                    ));
                }
                break;
            }
            let Some((kind, path)) = file_header(line.text) else {
                return Err(self.not_a_header(line));
            };
            if path.is_empty() {
                return Err(error(line.number, "the file header has no path after it"));
            }
            self.next += 1;
            let op = match kind {
                Kind::Add => self.add(path, line.number)?,
                Kind::Delete => self.delete(path, line.number)?,
                Kind::Update => self.update(path, line.number)?,
            };
            ops.push(op);
        }
        Ok(ops)
    }

    fn not_a_header(&self, line: Line<'_>) -> ParseError {
        let mut message = format!(
            "expected `{ADD} path`, `{UPDATE} path` or `{DELETE} path`, found `{}`",
            quote(line.text)
        );
        if line.text.starts_with(['@', '+', '-', ' ']) {
            message.push_str("; hunk lines belong after `*** Update File: path`");
        } else if line.text.trim() == BEGIN {
            message = format!("`{BEGIN}` may only open the patch");
        }
        error(line.number, message)
    }

    /// `*** Add File:` lines, each `+`. A blank line between them is taken as an empty line
    /// whose `+` was lost (text after it is still `+` lines); blank lines after the last one
    /// only separate it from the next header.
    fn add(&mut self, path: &str, at: usize) -> Result<FileOp, ParseError> {
        let mut content = String::new();
        while let Some(line) = self.peek() {
            if let Some(text) = line.text.strip_prefix('+') {
                content.push_str(text);
                content.push('\n');
                self.next += 1;
            } else if line.text.trim().is_empty() {
                let more = self.lines[self.next..]
                    .iter()
                    .find(|l| !l.text.trim().is_empty())
                    .is_some_and(|l| l.text.starts_with('+'));
                if !more {
                    break;
                }
                content.push('\n');
                self.next += 1;
            } else if line.text.trim_start().starts_with("***") {
                break;
            } else {
                return Err(error(
                    line.number,
                    format!(
                        "every line of an added file starts with `+`, even an empty one; \
                         found `{}`",
                        quote(line.text)
                    ),
                ));
            }
        }
        Ok(FileOp::Add {
            path: path.to_string(),
            content,
            at,
        })
    }

    fn delete(&mut self, path: &str, at: usize) -> Result<FileOp, ParseError> {
        if let Some(line) = self.peek()
            && !line.text.trim().is_empty()
            && !line.text.trim_start().starts_with("***")
        {
            return Err(error(
                line.number,
                format!(
                    "`{DELETE}` takes no lines after it (found `{}`); to take lines out of a \
                     file, use `{UPDATE}` with `-` lines",
                    quote(line.text)
                ),
            ));
        }
        Ok(FileOp::Delete {
            path: path.to_string(),
            at,
        })
    }

    fn update(&mut self, path: &str, at: usize) -> Result<FileOp, ParseError> {
        let mut move_to = None;
        if let Some(line) = self.peek()
            && let Some(target) = line.text.trim().strip_prefix(MOVE_TO)
        {
            let target = target.trim();
            if target.is_empty() {
                return Err(error(
                    line.number,
                    format!("`{MOVE_TO}` has no path after it"),
                ));
            }
            move_to = Some(target.to_string());
            self.next += 1;
        }

        let mut hunks = Vec::new();
        let mut current: Option<Hunk> = None;
        while let Some(line) = self.peek() {
            let text = line.text;
            // Inside a hunk a marker starts at the line's first column: ` *** x` is a context
            // line of a file that holds `*** x`.
            if text.trim() == END_OF_FILE {
                match current.take() {
                    Some(mut hunk) if !hunk.lines.is_empty() => {
                        hunk.end_of_file = true;
                        hunks.push(hunk);
                    }
                    _ => {
                        return Err(error(
                            line.number,
                            format!("`{END_OF_FILE}` must follow the lines of a hunk"),
                        ));
                    }
                }
                self.next += 1;
                continue;
            }
            if text.starts_with("***") || (current.is_none() && file_header(text).is_some()) {
                if text.trim().starts_with(MOVE_TO) {
                    return Err(error(
                        line.number,
                        format!("`{MOVE_TO}` must come right after `{UPDATE} {path}`"),
                    ));
                }
                if file_header(text).is_none() && text.trim() != END && text.trim() != BEGIN {
                    return Err(error(
                        line.number,
                        format!(
                            "unknown marker `{}`; the markers are `{ADD}`, `{DELETE}`, \
                             `{UPDATE}`, `{MOVE_TO}`, `{END_OF_FILE}` and `{END}`",
                            quote(text)
                        ),
                    ));
                }
                break;
            }
            self.next += 1;
            if let Some(anchor) = hunk_header(text) {
                let hunk = match current.take() {
                    Some(hunk) if hunk.lines.is_empty() => hunk,
                    done => {
                        hunks.extend(done);
                        Hunk {
                            anchors: Vec::new(),
                            lines: Vec::new(),
                            end_of_file: false,
                            at: line.number,
                        }
                    }
                };
                current = Some(Hunk {
                    anchors: hunk.anchors.into_iter().chain(anchor).collect(),
                    ..hunk
                });
                continue;
            }
            let hunk_line = match text.chars().next() {
                // A blank line between hunks separates them; inside one it is an empty
                // context line whose leading space was lost.
                None if current.is_none() => continue,
                None => HunkLine::Context(String::new()),
                Some(' ') => HunkLine::Context(text[1..].to_string()),
                Some('-') => HunkLine::Remove(text[1..].to_string()),
                Some('+') => HunkLine::Add(text[1..].to_string()),
                Some(_) => {
                    return Err(error(
                        line.number,
                        format!(
                            "`{}` is not a hunk line: start an unchanged line with a space, a \
                             removed one with `-` and an added one with `+`",
                            quote(text)
                        ),
                    ));
                }
            };
            current
                .get_or_insert_with(|| Hunk {
                    anchors: Vec::new(),
                    lines: Vec::new(),
                    end_of_file: false,
                    at: line.number,
                })
                .lines
                .push(hunk_line);
        }
        if let Some(hunk) = current {
            if hunk.lines.is_empty() {
                return Err(error(
                    hunk.at,
                    "this hunk has no lines: after `@@` give its unchanged (` `), removed (`-`) \
                     and added (`+`) lines",
                ));
            }
            hunks.push(hunk);
        }
        if hunks.is_empty() && move_to.is_none() {
            return Err(error(
                at,
                format!(
                    "`{UPDATE} {path}` has no hunks: follow it with `@@` and the lines to change"
                ),
            ));
        }
        Ok(FileOp::Update {
            path: path.to_string(),
            move_to,
            hunks,
            at,
        })
    }
}

/// For a line opening a hunk (`@@`, `@@ anchor`, or a unified diff's `@@ -1,3 +1,4 @@` with
/// an optional anchor after it), its anchor if it has one.
fn hunk_header(line: &str) -> Option<Option<String>> {
    let rest = line.strip_prefix("@@")?;
    let rest = unified_range(rest).unwrap_or(rest);
    let anchor = rest.strip_prefix(' ').unwrap_or(rest).trim_end();
    Some((!anchor.trim().is_empty()).then(|| anchor.to_string()))
}

/// What follows a unified diff's ` -12,7 +12,8 @@` range, which says nothing the hunk's lines
/// do not.
fn unified_range(rest: &str) -> Option<&str> {
    let mut words = rest.trim_start().splitn(3, ' ');
    let old = words.next()?.strip_prefix('-')?;
    let new = words.next()?.strip_prefix('+')?;
    let numbers =
        |s: &str| !s.is_empty() && s.split(',').count() <= 2 && s.split(',').all(is_number);
    if !numbers(old) || !numbers(new) {
        return None;
    }
    words.next().unwrap_or("@@").strip_prefix("@@")
}

fn is_number(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

/// `line` cut short for an error message.
pub(crate) fn quote(line: &str) -> String {
    match line.char_indices().nth(QUOTED_CHARS) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn context(s: &str) -> HunkLine {
        HunkLine::Context(s.into())
    }
    fn remove(s: &str) -> HunkLine {
        HunkLine::Remove(s.into())
    }
    fn add(s: &str) -> HunkLine {
        HunkLine::Add(s.into())
    }

    fn parse_err(input: &str) -> ParseError {
        parse(input).unwrap_err()
    }

    #[test]
    fn every_operation_in_one_patch() {
        let ops = parse(
            "*** Begin Patch\n\
             *** Add File: docs/new.md\n\
             +# Title\n\
             +\n\
             +text\n\
             *** Delete File: old.txt\n\
             *** Update File: src/app.py\n\
             *** Move to: src/main.py\n\
             @@ def greet():\n\
             -    print(\"Hi\")\n\
             +    print(\"Hello\")\n\
             *** End Patch\n",
        )
        .unwrap();
        assert_eq!(
            ops,
            [
                FileOp::Add {
                    path: "docs/new.md".into(),
                    content: "# Title\n\ntext\n".into(),
                    at: 2
                },
                FileOp::Delete {
                    path: "old.txt".into(),
                    at: 6
                },
                FileOp::Update {
                    path: "src/app.py".into(),
                    move_to: Some("src/main.py".into()),
                    hunks: vec![Hunk {
                        anchors: vec!["def greet():".into()],
                        lines: vec![remove("    print(\"Hi\")"), add("    print(\"Hello\")")],
                        end_of_file: false,
                        at: 9
                    }],
                    at: 7
                }
            ]
        );
    }

    #[test]
    fn hunks_split_at_each_anchor_and_consecutive_anchors_narrow_one_hunk() {
        let ops = parse(
            "*** Begin Patch\n\
             *** Update File: f.py\n\
             @@ class A\n\
             @@     def run(self):\n\
             \x20        x = 1\n\
             -        y = 2\n\
             +        y = 3\n\
             @@\n\
             -tail\n\
             +TAIL\n\
             *** End of File\n\
             *** End Patch",
        )
        .unwrap();
        let FileOp::Update { hunks, .. } = &ops[0] else {
            panic!("{ops:?}")
        };
        assert_eq!(hunks.len(), 2);
        assert_eq!(hunks[0].anchors, ["class A", "    def run(self):"]);
        assert_eq!(
            hunks[0].lines,
            [
                context("        x = 1"),
                remove("        y = 2"),
                add("        y = 3")
            ]
        );
        assert!(!hunks[0].end_of_file);
        assert_eq!(hunks[0].at, 3);
        assert!(hunks[1].anchors.is_empty());
        assert_eq!(hunks[1].lines, [remove("tail"), add("TAIL")]);
        assert!(hunks[1].end_of_file);
    }

    #[test]
    fn a_first_hunk_may_start_without_its_at_at_line_and_unified_ranges_are_ignored() {
        let ops = parse(
            "*** Begin Patch\n*** Update File: a\n import x\n+import y\n@@ -10,3 +11,4 @@ fn main() {\n-a\n+b\n@@ -1 +1 @@\n-c\n+d\n*** End Patch",
        )
        .unwrap();
        let FileOp::Update { hunks, .. } = &ops[0] else {
            panic!()
        };
        assert_eq!(hunks[0].anchors, Vec::<String>::new());
        assert_eq!(hunks[0].lines, [context("import x"), add("import y")]);
        assert_eq!(hunks[1].anchors, ["fn main() {"]);
        assert_eq!(hunks[2].anchors, Vec::<String>::new());
        assert_eq!(hunks[2].lines, [remove("c"), add("d")]);
    }

    #[test]
    fn blank_lines_inside_a_hunk_are_empty_context_and_between_hunks_separate() {
        let ops =
            parse("*** Begin Patch\n*** Update File: a\n\n@@\n x\n\n-y\n\n@@\n-z\n*** End Patch")
                .unwrap();
        let FileOp::Update { hunks, .. } = &ops[0] else {
            panic!()
        };
        assert_eq!(
            hunks[0].lines,
            [context("x"), context(""), remove("y"), context("")]
        );
        assert_eq!(hunks[1].lines, [remove("z")]);
    }

    #[test]
    fn a_marker_inside_a_hunk_must_start_the_line() {
        let ops = parse(
            "*** Begin Patch\n*** Update File: t.rs\n@@\n *** Update File: x\n-old\n+new\n+*** End Patch\n*** End Patch",
        )
        .unwrap();
        let FileOp::Update { hunks, .. } = &ops[0] else {
            panic!()
        };
        assert_eq!(
            hunks[0].lines,
            [
                context("*** Update File: x"),
                remove("old"),
                add("new"),
                add("*** End Patch")
            ]
        );
    }

    #[test]
    fn a_pure_move_needs_no_hunk() {
        let ops = parse("*** Begin Patch\n*** Update File: a.rs\n*** Move to: b.rs\n*** End Patch")
            .unwrap();
        assert_eq!(
            ops,
            [FileOp::Update {
                path: "a.rs".into(),
                move_to: Some("b.rs".into()),
                hunks: vec![],
                at: 2
            }]
        );
    }

    #[test]
    fn an_empty_added_file_and_blank_lines_lost_their_plus() {
        let ops = parse(
            "*** Begin Patch\n*** Add File: empty\n*** Add File: gaps\n+a\n\n+b\n\n*** Delete File: x\n*** End Patch",
        )
        .unwrap();
        assert_eq!(
            ops[0],
            FileOp::Add {
                path: "empty".into(),
                content: String::new(),
                at: 2
            }
        );
        assert_eq!(
            ops[1],
            FileOp::Add {
                path: "gaps".into(),
                content: "a\n\nb\n".into(),
                at: 3
            }
        );
        assert!(matches!(&ops[2], FileOp::Delete { path, .. } if path == "x"));
    }

    #[test]
    fn wrappers_may_be_missing_padded_or_inside_a_heredoc_or_fence() {
        let expected = parse("*** Begin Patch\n*** Delete File: a\n*** End Patch").unwrap();
        for input in [
            "*** Delete File: a",
            "*** Delete File: a\n*** End Patch",
            "*** Begin Patch\n*** Delete File: a",
            "  *** Begin Patch  \n  *** Delete File: a \n *** End Patch\n\n",
            "<<'EOF'\n*** Begin Patch\n*** Delete File: a\n*** End Patch\nEOF\n",
            "apply_patch <<\"PATCH\"\n*** Begin Patch\n*** Delete File: a\n*** End Patch\nPATCH",
            "apply_patch <<EOF\n*** Begin Patch\n*** Delete File: a\n*** End Patch",
            "```\n*** Begin Patch\n*** Delete File: a\n*** End Patch\n```",
            "*** Begin Patch\r\n*** Delete File: a\r\n*** End Patch\r\n",
        ] {
            let ops = parse(input).unwrap_or_else(|e| panic!("{input:?}: {e}"));
            let paths = |ops: &[FileOp]| -> Vec<String> {
                ops.iter()
                    .map(|op| match op {
                        FileOp::Delete { path, .. } => path.clone(),
                        other => panic!("{other:?}"),
                    })
                    .collect()
            };
            assert_eq!(paths(&ops), paths(&expected), "{input:?}");
        }
    }

    #[test]
    fn line_numbers_count_from_the_text_as_sent() {
        let err =
            parse_err("<<'EOF'\n*** Begin Patch\n*** Update File: a\n@@\nnope\n*** End Patch\nEOF");
        assert_eq!(err.line, 5);
    }

    #[test]
    fn malformed_patches_say_where_and_what_to_do() {
        let cases: &[(&str, usize, &str)] = &[
            ("", 1, "the patch is empty"),
            (
                "hello\n*** Delete File: a",
                1,
                "a patch starts with `*** Begin Patch`, not `hello`",
            ),
            (
                "*** Begin Patch\n*** End Patch",
                1,
                "the patch changes no file",
            ),
            (
                "*** Begin Patch\n*** Frobnicate: a\n*** End Patch",
                2,
                "expected `*** Add File: path`",
            ),
            (
                "*** Begin Patch\n@@\n-a\n*** End Patch",
                2,
                "hunk lines belong after `*** Update File: path`",
            ),
            (
                "*** Begin Patch\n*** Add File:   \n*** End Patch",
                2,
                "no path",
            ),
            (
                "*** Begin Patch\n*** Add File: a\nhello\n*** End Patch",
                3,
                "every line of an added file starts with `+`",
            ),
            (
                "*** Begin Patch\n*** Delete File: a\n-x\n*** End Patch",
                3,
                "takes no lines",
            ),
            (
                "*** Begin Patch\n*** Update File: a\n*** End Patch",
                2,
                "has no hunks",
            ),
            (
                "*** Begin Patch\n*** Update File: a\n@@ fn x\n*** End Patch",
                3,
                "this hunk has no lines",
            ),
            (
                "*** Begin Patch\n*** Update File: a\n@@\nbare\n*** End Patch",
                4,
                "`bare` is not a hunk line",
            ),
            (
                "*** Begin Patch\n*** Update File: a\n*** End of File\n*** End Patch",
                3,
                "must follow the lines of a hunk",
            ),
            (
                "*** Begin Patch\n*** Update File: a\n@@\n-x\n*** Move to: b\n*** End Patch",
                5,
                "must come right after",
            ),
            (
                "*** Begin Patch\n*** Update File: a\n@@\n-x\n*** Rename: b\n*** End Patch",
                5,
                "unknown marker",
            ),
            (
                "*** Begin Patch\n*** Update File: a\n*** Move to:\n*** End Patch",
                3,
                "no path",
            ),
            (
                "*** Begin Patch\n*** Delete File: a\n*** End Patch\n*** Delete File: b",
                4,
                "ends the patch, yet more follows",
            ),
            (
                "*** Begin Patch\n*** Delete File: a\n*** Begin Patch\n*** End Patch",
                3,
                "may only open the patch",
            ),
        ];
        for (input, line, message) in cases {
            let err = parse_err(input);
            assert_eq!(err.line, *line, "{input:?}: {err}");
            assert!(err.message.contains(message), "{input:?}: {err}");
        }
    }

    #[test]
    fn long_lines_are_cut_short_in_errors() {
        let long = "x".repeat(500);
        let err = parse_err(&format!(
            "*** Begin Patch\n*** Add File: a\n{long}\n*** End Patch"
        ));
        assert!(err.message.len() < 300, "{}", err.message);
        assert!(err.message.contains('…'), "{}", err.message);
    }
}
