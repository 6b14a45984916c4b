//! Where an `old_string` that misses the file only by whitespace was meant to go. Models copy
//! text with trailing spaces the file lacks, spaces for its tabs, or a whole block indented more
//! or less than the file has it. replace.rs asks here only after the exact match failed, and a
//! place is taken only when it is the one place that fits, so no guess is made between two.
//!
//! The comparison goes by whole lines, in two levels, the looser tried only when the stricter
//! found nothing:
//! 1. trailing whitespace ignored, whitespace-only lines taken as blank, indentation exact (a
//!    first line with none may start after the file's, as an exact match may); `new_string`
//!    goes in as given;
//! 2. indentation compared by width: every non-blank line must be off by the same number of
//!    columns, a tab counted as 4, 8 or 2 columns (the first width that fits without a shift,
//!    else the first that fits); `new_string` is re-indented the same way, in the file's own
//!    indentation characters.
//!
//! **An edit never guesses between two places.** An old_string that is nowhere exactly is taken
//! loosely (trailing whitespace, one indentation shift, tabs for spaces) only where the first level
//! of looseness that finds anything finds exactly one place; otherwise the edit fails naming the
//! candidates. `replace_all` stays exact. The near-miss corpus (`daemon/tools/tests/near_miss/`)
//! holds it: no case may be applied wrong.

use std::cmp::Reverse;
use std::collections::HashMap;
use std::fmt;
use std::ops::Range;

use similar::TextDiff;

/// Tab widths tried when tabs and spaces are compared, most likely first.
const TAB_WIDTHS: [usize; 3] = [4, 8, 2];

/// How many differing lines a not-found explanation quotes.
const QUOTED_LINES: usize = 3;

/// Characters of a line quoted in a message before it is cut.
const QUOTED_CHARS: usize = 100;

/// A line text shared by more file lines than this casts no vote for where old_string is
/// closest (`}` or `end` would only add noise and cost).
const COMMON_LINE: usize = 64;

/// Files longer than this are not searched line by line for a similar first line: the
/// explanation is a courtesy and must stay cheap.
const FUZZY_SEARCH_LINES: usize = 20_000;

/// How alike (0 to 1) a file line must be to old_string's first line to be shown as closest.
const FUZZY_RATIO: f32 = 0.6;

/// How loose the comparison that found a place was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Level {
    /// Trailing whitespace ignored and whitespace-only lines taken as blank.
    TrailingWhitespace,
    /// Indentation compared by width and allowed one shift for the whole block.
    Indentation,
}

impl Level {
    /// What was ignored, to finish "matches once ...".
    pub(crate) fn ignoring(self) -> &'static str {
        match self {
            Level::TrailingWhitespace => "trailing whitespace is ignored",
            Level::Indentation => "indentation and trailing whitespace are ignored",
        }
    }
}

/// How old_string's indentation differed from the file's, and so how new_string was re-indented.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Reindent {
    /// Columns the file indents the block more than old_string did (negative: fewer).
    pub(crate) shift: isize,
    /// Columns a tab counted for in the comparison.
    pub(crate) tab_width: usize,
    pub(crate) chars: IndentChars,
}

/// Which characters old_string indented with, next to the file's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IndentChars {
    /// Spaces only, on both sides.
    Spaces,
    /// Tabs on both sides (with spaces perhaps).
    Tabs,
    /// old_string had spaces where the file has tabs.
    SpacesForTabs,
    /// old_string had tabs where the file has spaces.
    TabsForSpaces,
}

/// Lines of the file, 1-based and inclusive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Span {
    pub(crate) first: usize,
    pub(crate) last: usize,
}

impl fmt::Display for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.first == self.last {
            write!(f, "{}", self.first)
        } else {
            write!(f, "{}-{}", self.first, self.last)
        }
    }
}

impl Span {
    /// "line 3" or "lines 3-5".
    pub(crate) fn lines(&self) -> String {
        if self.first == self.last {
            format!("line {self}")
        } else {
            format!("lines {self}")
        }
    }
}

/// "3-5, 9-11 and 2 more", for an error that names candidates.
pub(crate) fn list_spans(spans: &[Span], count: usize) -> String {
    let mut listed = spans
        .iter()
        .map(Span::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    if count > spans.len() {
        listed.push_str(&format!(" and {} more", count - spans.len()));
    }
    listed
}

/// The one place old_string fits loosely, and what goes there instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NearMiss {
    pub(crate) span: Span,
    pub(crate) level: Level,
    /// Set when the indentation differed, so new_string was re-indented.
    pub(crate) reindent: Option<Reindent>,
    range: Range<usize>,
    replacement: String,
}

impl NearMiss {
    /// `content` (the text searched) with the replacement made.
    pub(crate) fn apply(&self, content: &str) -> String {
        let mut out =
            String::with_capacity(content.len() - self.range.len() + self.replacement.len());
        out.push_str(&content[..self.range.start]);
        out.push_str(&self.replacement);
        out.push_str(&content[self.range.end..]);
        out
    }

    /// What the model and the user are told about the looseness, as a sentence.
    pub(crate) fn describe(&self) -> String {
        let lines = self.span.lines();
        let Some(reindent) = self.reindent else {
            return format!(
                "old_string matched {lines} only once trailing whitespace was ignored; \
                 new_string went in as written."
            );
        };
        let tab = reindent.tab_width;
        // Where both indent with tabs, a shift of whole tabs is said in tabs: the width taken
        // for a tab is the comparison's choice, not something the model wrote.
        let columns = |n: isize| {
            let n = n.unsigned_abs();
            let (n, unit) = if reindent.chars == IndentChars::Tabs && n.is_multiple_of(tab) {
                (n / tab, "tab")
            } else {
                (n, "column")
            };
            format!("{n} {unit}{}", if n == 1 { "" } else { "s" })
        };
        let chars = match reindent.chars {
            IndentChars::SpacesForTabs => Some("spaces where the file has tabs"),
            IndentChars::TabsForSpaces => Some("tabs where the file has spaces"),
            IndentChars::Spaces | IndentChars::Tabs => None,
        };
        let shift = (reindent.shift != 0).then(|| {
            format!(
                "was indented {} {} than the file",
                columns(reindent.shift),
                if reindent.shift > 0 { "less" } else { "more" }
            )
        });
        let how = match (chars, shift) {
            (Some(chars), Some(shift)) => {
                format!("it had {chars} (a tab taken as {tab} columns) and {shift}")
            }
            (Some(chars), None) => format!("it had {chars} (a tab taken as {tab} columns)"),
            (None, Some(shift)) => format!("it {shift}"),
            (None, None) => "its tabs and spaces differ from the file's".into(),
        };
        format!(
            "old_string matched {lines} only once its indentation was adjusted: {how}. \
             new_string was re-indented the same way."
        )
    }
}

/// What a loose search found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Search {
    /// Exactly one place fits at the first level that found any.
    Unique(NearMiss),
    /// Several places fit at `level`; `spans` lists them all, in file order.
    Ambiguous { level: Level, spans: Vec<Span> },
    /// No place fits even loosely.
    None,
}

/// Looks for the one place in `content` that `old` fits loosely, with `new` prepared to replace
/// it: re-indented when the indentation had to be adjusted, and with `eol` for line breaks.
pub(crate) fn find(content: &str, old: &str, new: &str, eol: &str) -> Search {
    let old = old.replace("\r\n", "\n");
    let old = Block::of(&old);
    // A block of blank lines fits every run of blank lines; it is no place at all.
    if old.lines.iter().all(|line| is_blank(line)) {
        return Search::None;
    }
    let file = FileLines::of(content);
    let n = old.lines.len();
    if n > file.len() {
        return Search::None;
    }
    let starts = 0..=file.len() - n;

    let found: Vec<(usize, usize)> = starts
        .clone()
        .filter_map(|j| fits_trailing(&file, j, &old).map(|at| (j, at)))
        .collect();
    match found.as_slice() {
        [] => {}
        [(j, at)] => {
            let range = *at..file.block_end(*j, &old);
            let replacement = render(&new.replace("\r\n", "\n"), eol, &file, *j, &old, None);
            return Search::Unique(NearMiss {
                span: file.span(*j, n),
                level: Level::TrailingWhitespace,
                reindent: None,
                range,
                replacement,
            });
        }
        _ => {
            return Search::Ambiguous {
                level: Level::TrailingWhitespace,
                spans: found.iter().map(|&(j, _)| file.span(j, n)).collect(),
            };
        }
    }

    let found: Vec<(usize, Reindent)> = starts
        .filter_map(|j| fits_indentation(&file, j, &old).map(|fit| (j, fit)))
        .collect();
    match found.as_slice() {
        [] => Search::None,
        [(j, fit)] => {
            let range = file.lines[*j].start..file.block_end(*j, &old);
            let indent = Indenter::new(&file, *j, &old, fit);
            let replacement = render(
                &new.replace("\r\n", "\n"),
                eol,
                &file,
                *j,
                &old,
                Some(&indent),
            );
            Search::Unique(NearMiss {
                span: file.span(*j, n),
                level: Level::Indentation,
                reindent: Some(*fit),
                range,
                replacement,
            })
        }
        _ => Search::Ambiguous {
            level: Level::Indentation,
            spans: found.iter().map(|&(j, _)| file.span(j, n)).collect(),
        },
    }
}

/// old_string or new_string cut into lines (`\n` only: callers normalise `\r\n`).
struct Block<'a> {
    lines: Vec<&'a str>,
    ends_with_newline: bool,
}

impl<'a> Block<'a> {
    fn of(s: &'a str) -> Block<'a> {
        let body = s.strip_suffix('\n');
        Block {
            lines: body.unwrap_or(s).split('\n').collect(),
            ends_with_newline: body.is_some(),
        }
    }
}

/// Where each line of the file starts, where its text ends (before `\r\n` or `\n`) and where
/// the next line starts.
struct FileLine {
    start: usize,
    text_end: usize,
    end: usize,
}

struct FileLines<'a> {
    content: &'a str,
    lines: Vec<FileLine>,
}

impl<'a> FileLines<'a> {
    fn of(content: &'a str) -> FileLines<'a> {
        let mut lines = Vec::new();
        let mut start = 0;
        while start < content.len() {
            let line = match content[start..].find('\n') {
                Some(at) => {
                    let newline = start + at;
                    let text_end = if content[start..newline].ends_with('\r') {
                        newline - 1
                    } else {
                        newline
                    };
                    FileLine {
                        start,
                        text_end,
                        end: newline + 1,
                    }
                }
                None => FileLine {
                    start,
                    text_end: content.len(),
                    end: content.len(),
                },
            };
            start = line.end;
            lines.push(line);
        }
        FileLines { content, lines }
    }

    fn len(&self) -> usize {
        self.lines.len()
    }

    fn text(&self, j: usize) -> &'a str {
        let line = &self.lines[j];
        &self.content[line.start..line.text_end]
    }

    fn span(&self, j: usize, n: usize) -> Span {
        Span {
            first: j + 1,
            last: j + n,
        }
    }

    /// Where the text `old` covers from line `j` ends: after the last line's break if `old`
    /// ends with one, else before it (the last line's trailing whitespace included).
    fn block_end(&self, j: usize, old: &Block) -> usize {
        let last = &self.lines[j + old.lines.len() - 1];
        if old.ends_with_newline {
            last.end
        } else {
            last.text_end
        }
    }

    /// Whether the last line of the block from `j` is the file's last and has no line break.
    fn block_ends_file_without_newline(&self, j: usize, old: &Block) -> bool {
        let last = &self.lines[j + old.lines.len() - 1];
        last.end == last.text_end
    }

    /// Whether the file indents with tabs rather than spaces, by a count of its indented lines.
    fn indents_with_tabs(&self) -> bool {
        let (mut tabs, mut spaces) = (0usize, 0usize);
        for j in 0..self.len() {
            match self.text(j).as_bytes().first() {
                Some(b'\t') => tabs += 1,
                Some(b' ') => spaces += 1,
                _ => {}
            }
        }
        tabs > spaces
    }
}

fn is_indent(c: char) -> bool {
    c == ' ' || c == '\t'
}

fn is_blank(line: &str) -> bool {
    line.chars().all(|c| c.is_ascii_whitespace())
}

fn trim_end(line: &str) -> &str {
    line.trim_end_matches(|c: char| c.is_ascii_whitespace())
}

/// A line's leading spaces and tabs, and the rest.
fn split_indent(line: &str) -> (&str, &str) {
    let rest = line.trim_start_matches(is_indent);
    (&line[..line.len() - rest.len()], rest)
}

/// The column an indentation reaches, with tab stops every `tab` columns.
fn width(indent: &str, tab: usize) -> usize {
    indent.chars().fold(0, |column, c| {
        if c == '\t' {
            (column / tab + 1) * tab
        } else {
            column + 1
        }
    })
}

/// Level 1 at line `j`: where the replaced text starts, if `old` fits there once trailing
/// whitespace is ignored. A first line with no indentation may begin after the file line's, as
/// an exact match may; any other line must be indented exactly as the file's (an indentation
/// that is only part of the file's is a shift, for level 2 to re-indent).
fn fits_trailing(file: &FileLines, j: usize, old: &Block) -> Option<usize> {
    let mut at = file.lines[j].start;
    for (k, line) in old.lines.iter().enumerate() {
        let text = file.text(j + k);
        if is_blank(line) {
            if !is_blank(text) {
                return None;
            }
            continue;
        }
        let (text, line) = (trim_end(text), trim_end(line));
        if k == 0 && !line.starts_with(is_indent) {
            let before = text.strip_suffix(line)?;
            if !before.chars().all(is_indent) {
                return None;
            }
            at += before.len();
        } else if text != line {
            return None;
        }
    }
    Some(at)
}

/// Level 2 at line `j`: whether `old` fits there once each line's indentation is compared by
/// width, all non-blank lines shifted by the same number of columns.
fn fits_indentation(file: &FileLines, j: usize, old: &Block) -> Option<Reindent> {
    let mut pairs = Vec::with_capacity(old.lines.len());
    for (k, line) in old.lines.iter().enumerate() {
        let text = file.text(j + k);
        match (is_blank(line), is_blank(text)) {
            (true, true) => continue,
            (false, false) => {}
            _ => return None,
        }
        let (ours, rest) = split_indent(trim_end(line));
        let (theirs, file_rest) = split_indent(trim_end(text));
        if rest != file_rest {
            return None;
        }
        pairs.push((ours, theirs));
    }
    fit(&pairs)
}

/// The shift and tab width that make every (old_string, file) indentation pair line up, if
/// any: a width that needs no shift is preferred, then the order of `TAB_WIDTHS`.
fn fit(pairs: &[(&str, &str)]) -> Option<Reindent> {
    let old_tabs = pairs.iter().any(|(ours, _)| ours.contains('\t'));
    let file_tabs = pairs.iter().any(|(_, theirs)| theirs.contains('\t'));
    let chars = match (old_tabs, file_tabs) {
        (false, true) => IndentChars::SpacesForTabs,
        (true, false) => IndentChars::TabsForSpaces,
        (false, false) => IndentChars::Spaces,
        (true, true) => IndentChars::Tabs,
    };
    let mut fallback = None;
    for tab_width in TAB_WIDTHS {
        let mut shifts = pairs.iter().map(|(ours, theirs)| {
            width(theirs, tab_width) as isize - width(ours, tab_width) as isize
        });
        let shift = shifts.next().unwrap_or(0);
        if shifts.all(|s| s == shift) {
            let fit = Reindent {
                shift,
                tab_width,
                chars,
            };
            if shift == 0 {
                return Some(fit);
            }
            fallback.get_or_insert(fit);
        }
        if !old_tabs && !file_tabs {
            // Without tabs the width tried changes nothing.
            break;
        }
    }
    fallback
}

/// Re-indents new_string's lines the way old_string's had to be to fit the file.
struct Indenter<'a> {
    /// old_string's indentations and the file's at the same lines, first seen first.
    known: Vec<(&'a str, &'a str)>,
    fit: Reindent,
    tabs: bool,
}

impl<'a> Indenter<'a> {
    fn new(file: &FileLines<'a>, j: usize, old: &Block<'a>, fit: &Reindent) -> Indenter<'a> {
        let mut known: Vec<(&str, &str)> = Vec::new();
        let mut block_tabs = None;
        for (k, line) in old.lines.iter().enumerate() {
            if is_blank(line) {
                continue;
            }
            let (ours, _) = split_indent(line);
            let (theirs, _) = split_indent(file.text(j + k));
            if !theirs.is_empty() {
                block_tabs = Some(block_tabs.unwrap_or(false) || theirs.contains('\t'));
            }
            if !known.iter().any(|(seen, _)| *seen == ours) {
                known.push((ours, theirs));
            }
        }
        Indenter {
            known,
            fit: *fit,
            tabs: block_tabs.unwrap_or_else(|| file.indents_with_tabs()),
        }
    }

    /// `line` of new_string as the file would indent it. An indentation old_string used becomes
    /// the file's at that line; another is shifted by width and written in the file's
    /// characters. Whitespace-only lines become empty.
    fn line(&self, line: &str) -> String {
        if is_blank(line) {
            return String::new();
        }
        let (ours, rest) = split_indent(line);
        if let Some((_, theirs)) = self.known.iter().find(|(seen, _)| *seen == ours) {
            return format!("{theirs}{rest}");
        }
        let column = width(ours, self.fit.tab_width) as isize + self.fit.shift;
        let column = column.max(0).unsigned_abs();
        let indent = if self.tabs {
            let tab = self.fit.tab_width;
            format!("{}{}", "\t".repeat(column / tab), " ".repeat(column % tab))
        } else {
            " ".repeat(column)
        };
        format!("{indent}{rest}")
    }
}

/// new_string as it goes into the file at the block from line `j`: re-indented if `indent` is
/// given, with `eol` line breaks, and without its final line break where old_string's last
/// line is the file's last and has none (so the file does not gain one).
fn render(
    new: &str,
    eol: &str,
    file: &FileLines,
    j: usize,
    old: &Block,
    indent: Option<&Indenter>,
) -> String {
    let new = Block::of(new);
    let lines: Vec<String> = new
        .lines
        .iter()
        .map(|line| match indent {
            Some(indent) => indent.line(line),
            None => (*line).to_string(),
        })
        .collect();
    let mut out = lines.join(eol);
    let keep_newline = !(old.ends_with_newline && file.block_ends_file_without_newline(j, old));
    if new.ends_with_newline && keep_newline {
        out.push_str(eol);
    }
    out
}

/// Where the file comes closest to `old` and how it differs there, as sentences for a
/// not-found error; `None` when nothing in the file is close.
pub(crate) fn closest(content: &str, old: &str) -> Option<String> {
    let old = old.replace("\r\n", "\n");
    let old = Block::of(&old);
    let file = FileLines::of(content);
    let texts: Vec<&str> = (0..file.len()).map(|j| file.text(j)).collect();
    let start = anchor(&texts, &old.lines)?;
    explain(&texts, &old.lines, start)
}

/// A line with its whitespace runs squeezed to one space and its ends trimmed.
fn squeeze(line: &str) -> String {
    line.split_ascii_whitespace().collect::<Vec<_>>().join(" ")
}

/// Which file line old_string's first line is best lined up with: the offset most of its
/// lines agree on once whitespace is squeezed, or else where the file has the line most like
/// its first non-blank one. Can be negative when old_string starts before the file does.
fn anchor(texts: &[&str], old: &[&str]) -> Option<isize> {
    let mut by_text: HashMap<String, Vec<usize>> = HashMap::new();
    for (j, text) in texts.iter().enumerate() {
        let key = squeeze(text);
        if !key.is_empty() {
            by_text.entry(key).or_default().push(j);
        }
    }
    let mut votes: HashMap<isize, usize> = HashMap::new();
    for (k, line) in old.iter().enumerate() {
        let Some(places) = by_text.get(&squeeze(line)) else {
            continue;
        };
        if places.len() > COMMON_LINE {
            continue;
        }
        for &j in places {
            *votes.entry(j as isize - k as isize).or_default() += 1;
        }
    }
    if let Some((start, _)) = votes
        .into_iter()
        .max_by_key(|&(start, count)| (count, Reverse(start)))
    {
        return Some(start);
    }

    if texts.len() > FUZZY_SEARCH_LINES {
        return None;
    }
    let (k, first) = old.iter().enumerate().find(|(_, line)| !is_blank(line))?;
    let wanted = squeeze(first);
    let wanted_bytes = byte_counts(&wanted);
    let mut best: Option<(f32, usize)> = None;
    for (j, text) in texts.iter().enumerate() {
        let text = squeeze(text);
        // The diff is the cost; skip it where the bytes the two share (an upper bound of what
        // it can match) cannot reach the ratio, or beat the best so far.
        let shared: usize = byte_counts(&text)
            .iter()
            .zip(&wanted_bytes)
            .map(|(a, b)| a.min(b))
            .sum::<u32>() as usize;
        let total = text.len() + wanted.len();
        let bound = 2.0 * shared as f32 / total.max(1) as f32;
        if bound < FUZZY_RATIO || best.is_some_and(|(top, _)| bound <= top) {
            continue;
        }
        let ratio = TextDiff::from_chars(text.as_str(), wanted.as_str()).ratio();
        if ratio >= FUZZY_RATIO && best.is_none_or(|(top, _)| ratio > top) {
            best = Some((ratio, j));
        }
    }
    best.map(|(_, j)| j as isize - k as isize)
}

/// How often each byte occurs in `s`.
fn byte_counts(s: &str) -> [u32; 256] {
    let mut counts = [0u32; 256];
    for &b in s.as_bytes() {
        counts[usize::from(b)] += 1;
    }
    counts
}

/// A line quoted in a message: cut if long, with tabs and quotes escaped so they show.
fn quote(line: &str) -> String {
    if line.chars().count() > QUOTED_CHARS {
        let cut: String = line.chars().take(QUOTED_CHARS).collect();
        format!("{:?}…", cut)
    } else {
        format!("{line:?}")
    }
}

/// How `old`, lined up with the file from line `start` (0-based), differs from it.
fn explain(texts: &[&str], old: &[&str], start: isize) -> Option<String> {
    // Lines whose text differs, and lines equal but for indentation with the columns the file
    // indents them more than old_string.
    let mut differ = Vec::new();
    let mut aligned: Vec<(usize, &str, &str, isize)> = Vec::new();
    let (mut before, mut after) = (0usize, 0usize);
    for (k, line) in old.iter().enumerate() {
        let j = start + k as isize;
        let Some(text) = usize::try_from(j).ok().and_then(|j| texts.get(j)) else {
            if j < 0 {
                before += 1;
            } else {
                after += 1;
            }
            continue;
        };
        let number = j.unsigned_abs() + 1;
        if is_blank(text) && is_blank(line) {
            continue;
        }
        let (theirs, file_rest) = split_indent(trim_end(text));
        let (ours, rest) = split_indent(trim_end(line));
        if rest == file_rest {
            let shift = width(theirs, 4) as isize - width(ours, 4) as isize;
            aligned.push((number, text, line, shift));
        } else {
            differ.push((number, *text, *line));
        }
    }

    let first = start.max(0).unsigned_abs() + 1;
    let last = (start + old.len() as isize)
        .min(texts.len() as isize)
        .max(0)
        .unsigned_abs();
    if first > last {
        return None;
    }
    let mut out = format!("The closest text is at {}", Span { first, last }.lines());
    // The shift most lines agree on; the lines off it are the ones to show.
    let mut shifts: HashMap<isize, usize> = HashMap::new();
    for &(_, _, _, shift) in &aligned {
        *shifts.entry(shift).or_default() += 1;
    }
    let usual = shifts
        .into_iter()
        .max_by_key(|&(shift, count)| (count, Reverse(shift.abs())))
        .map(|(shift, _)| shift);
    let uneven: Vec<_> = aligned
        .iter()
        .filter(|&&(_, _, _, shift)| Some(shift) != usual)
        .collect();
    if !differ.is_empty() {
        let quoted: Vec<String> = differ
            .iter()
            .take(QUOTED_LINES)
            .map(|(number, text, line)| {
                format!(
                    "line {number} differs: file has {}, old_string has {}",
                    quote(text),
                    quote(line)
                )
            })
            .collect();
        out.push_str(", where ");
        out.push_str(&quoted.join("; "));
        if differ.len() > QUOTED_LINES {
            out.push_str(&format!(
                "; and {} more lines differ",
                differ.len() - QUOTED_LINES
            ));
        }
    } else if !uneven.is_empty() {
        // One line off by the usual amount, then those that are not.
        let usual = aligned
            .iter()
            .find(|&&(_, _, _, shift)| Some(shift) == usual);
        let shown: Vec<String> = usual
            .into_iter()
            .chain(uneven.iter().copied().take(QUOTED_LINES - 1))
            .map(|&(number, text, line, _)| {
                if text == line {
                    format!("line {number} is {} in both", quote(text))
                } else {
                    format!(
                        "line {number} is {} in the file but {} in old_string",
                        quote(text),
                        quote(line)
                    )
                }
            })
            .collect();
        out.push_str(
            ", which matches apart from indentation; but old_string's indentation is not off by \
             the same amount on every line, so it cannot be re-indented as one block: ",
        );
        out.push_str(&shown.join("; "));
    } else if before == 0 && after == 0 {
        // Nothing differs but what a loose match forgives: not a closest text worth showing.
        return None;
    }
    if after > 0 {
        out.push_str(&format!(
            "; old_string goes on for {after} more line{} than the file has",
            if after == 1 { "" } else { "s" }
        ));
    }
    if before > 0 {
        out.push_str(&format!(
            "; old_string has {before} line{} before the file's first",
            if before == 1 { "" } else { "s" }
        ));
    }
    out.push_str(". Read those lines again and copy them exactly.");
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The unique near miss of `old` in `content`, with `new` put in its place.
    fn fitted(content: &str, old: &str, new: &str) -> (String, NearMiss) {
        match find(content, old, new, "\n") {
            Search::Unique(near_miss) => (near_miss.apply(content), near_miss),
            other => panic!("expected one place, got {other:?}"),
        }
    }

    fn spans(search: Search) -> (Level, Vec<(usize, usize)>) {
        let Search::Ambiguous { level, spans } = search else {
            panic!("expected ambiguity, got {search:?}")
        };
        (level, spans.iter().map(|s| (s.first, s.last)).collect())
    }

    #[test]
    fn width_follows_tab_stops() {
        assert_eq!(width("", 4), 0);
        assert_eq!(width("\t\t", 4), 8);
        assert_eq!(width("  \t", 4), 4);
        assert_eq!(width("\t  ", 8), 10);
    }

    #[test]
    fn trailing_whitespace_is_ignored_and_new_string_goes_in_as_written() {
        let content = "fn a() {\n    one();\n    two();\n}\n";
        let (out, near_miss) = fitted(
            content,
            "    one();  \n    two();\t",
            "    one();\n    three();",
        );
        assert_eq!(out, "fn a() {\n    one();\n    three();\n}\n");
        assert_eq!(near_miss.level, Level::TrailingWhitespace);
        assert_eq!(near_miss.reindent, None);
        assert_eq!(near_miss.span, Span { first: 2, last: 3 });
        // The file's own trailing whitespace is forgiven the same way.
        let (out, _) = fitted("a = 1   \nb = 2\t\n", "a = 1\nb = 2\n", "a = 1\nb = 3\n");
        assert_eq!(out, "a = 1\nb = 3\n");
    }

    #[test]
    fn an_unindented_first_line_may_start_after_the_indentation_as_an_exact_match_may() {
        let content = "def f():\n    x = 1   \n    return x\n";
        let (out, near_miss) = fitted(content, "x = 1\n    return x\n", "x = 2\n    return x\n");
        assert_eq!(out, "def f():\n    x = 2\n    return x\n");
        assert_eq!(near_miss.level, Level::TrailingWhitespace);
    }

    #[test]
    fn blank_lines_match_whitespace_only_lines() {
        let content = "a()\n    \nb()\n";
        let (out, _) = fitted(content, "a()\n\nb()", "a()\n\nc()");
        assert_eq!(out, "a()\n\nc()\n");
        // But a blank line never stands for a line with text.
        assert_eq!(find("a()\nx\nb()\n", "a()\n\nb()", "q", "\n"), Search::None);
    }

    #[test]
    fn a_uniform_shift_re_indents_new_string_by_the_same_amount() {
        let content = "class A:\n    def f(self):\n        return 1\n";
        let (out, near_miss) = fitted(
            content,
            "def f(self):\n    return 1",
            "def f(self):\n    if self:\n        return 2\n\n    return 1",
        );
        assert_eq!(
            out,
            "class A:\n    def f(self):\n        if self:\n            return 2\n\n        return 1\n"
        );
        assert_eq!(
            near_miss.reindent,
            Some(Reindent {
                shift: 4,
                tab_width: 4,
                chars: IndentChars::Spaces
            })
        );
        assert_eq!(
            near_miss.describe(),
            "old_string matched lines 2-3 only once its indentation was adjusted: it was \
             indented 4 columns less than the file. new_string was re-indented the same way."
        );
        // And the other way: old_string indented more than the file.
        let (out, _) = fitted(
            "x:\n  y: 1\n  z: 2\n",
            "      y: 1\n      z: 2",
            "      y: 3",
        );
        assert_eq!(out, "x:\n  y: 3\n");
    }

    #[test]
    fn an_uneven_shift_is_refused() {
        let content = "if a:\n    b()\n    c()\n";
        assert_eq!(
            find(content, "  if a:\n    b()\n      c()", "x", "\n"),
            Search::None
        );
    }

    #[test]
    fn text_that_differs_inside_a_line_is_refused() {
        let content = "    return x + 1\n";
        assert_eq!(find(content, "  return x+1", "y", "\n"), Search::None);
        assert_eq!(find(content, "  return x + 2", "y", "\n"), Search::None);
    }

    #[test]
    fn spaces_for_tabs_become_the_files_tabs() {
        let content = "all:\n\tcc -o app main.c\n\techo done\n";
        let (out, near_miss) = fitted(
            content,
            "all:\n    cc -o app main.c\n    echo done",
            "all:\n    cc -O2 -o app main.c\n        # nested\n    echo done",
        );
        assert_eq!(
            out,
            "all:\n\tcc -O2 -o app main.c\n\t\t# nested\n\techo done\n"
        );
        assert_eq!(
            near_miss.reindent,
            Some(Reindent {
                shift: 0,
                tab_width: 4,
                chars: IndentChars::SpacesForTabs
            })
        );
    }

    #[test]
    fn the_tab_width_that_fits_is_found() {
        // Two spaces per tab: only a width of 2 lines the levels up.
        let content = "func f() {\n\tif x {\n\t\ty()\n\t}\n}\n";
        let (out, near_miss) = fitted(content, "  if x {\n    y()\n  }", "  if x {\n    z()\n  }");
        assert_eq!(out, "func f() {\n\tif x {\n\t\tz()\n\t}\n}\n");
        assert_eq!(near_miss.reindent.map(|r| r.tab_width), Some(2));
        // Eight.
        let (_, near_miss) = fitted(content, "        if x {\n                y()", "q");
        assert_eq!(near_miss.reindent.map(|r| r.tab_width), Some(8));
    }

    #[test]
    fn tabs_for_spaces_become_the_files_spaces() {
        let content = "fn f() {\n    let a = 1;\n    if a > 0 {\n        g(a);\n    }\n}\n";
        let (out, near_miss) = fitted(
            content,
            "\tif a > 0 {\n\t\tg(a);\n\t}",
            "\tif a > 0 {\n\t\tg(a);\n\t\th(a);\n\t}",
        );
        assert_eq!(
            out,
            "fn f() {\n    let a = 1;\n    if a > 0 {\n        g(a);\n        h(a);\n    }\n}\n"
        );
        assert_eq!(
            near_miss.reindent.map(|r| r.chars),
            Some(IndentChars::TabsForSpaces)
        );
    }

    #[test]
    fn two_places_that_fit_are_never_chosen_between() {
        let content = "a:\n  x: 1\nb:\n  x: 1\n";
        assert_eq!(
            spans(find(content, "x: 1  ", "x: 2", "\n")),
            (Level::TrailingWhitespace, vec![(2, 2), (4, 4)])
        );
        assert_eq!(
            spans(find(content, "    x: 1", "x: 2", "\n")),
            (Level::Indentation, vec![(2, 2), (4, 4)])
        );
    }

    #[test]
    fn the_strictest_level_that_finds_a_place_decides() {
        // Lines 2-3 fit once trailing whitespace is forgiven; lines 5-6 would fit too, but only
        // with a shift, so they are not a rival.
        let content = "if x:\n    a()\n    b()\nif y:\n        a()\n        b()\n";
        let (out, near_miss) = fitted(content, "    a()  \n    b()", "    a()\n    c()");
        assert_eq!(near_miss.level, Level::TrailingWhitespace);
        assert_eq!(
            out,
            "if x:\n    a()\n    c()\nif y:\n        a()\n        b()\n"
        );
        // An unindented first line may start after any indentation, as an exact match may, so
        // each line that ends with it is a rival.
        assert_eq!(
            spans(find("x = 1\n    x = 1\n", "x = 1 ", "x = 2", "\n")),
            (Level::TrailingWhitespace, vec![(1, 1), (2, 2)])
        );
        // An indented one must match the indentation whole at this level.
        let (out, _) = fitted("  x = 1\n    x = 1\n", "  x = 1 ", "  x = 2");
        assert_eq!(out, "  x = 2\n    x = 1\n");
    }

    #[test]
    fn crlf_files_keep_their_line_breaks() {
        let content = "a:\r\n\tb\r\n\tc\r\n";
        let Search::Unique(near_miss) =
            find(content, "a:\n    b\n    c\n", "a:\n    b\n    d\n", "\r\n")
        else {
            panic!("no place found")
        };
        assert_eq!(near_miss.apply(content), "a:\r\n\tb\r\n\td\r\n");
    }

    #[test]
    fn a_file_without_a_final_newline_does_not_gain_one() {
        let (out, _) = fitted("x\n  last", "last  \n", "final\n");
        assert_eq!(out, "x\n  final");
        let (out, _) = fitted("x\n  last", "    last", "    final\n    more");
        assert_eq!(out, "x\n  final\n  more");
    }

    #[test]
    fn blank_old_strings_fit_nowhere() {
        assert_eq!(find("a\n\n  \nb\n", "\n  \n", "x", "\n"), Search::None);
    }

    #[test]
    fn closest_names_the_lines_that_differ() {
        let content = "def f(x):\n    y = x\n    return  y\n";
        let message = closest(content, "def f(x):\n    y = x\n    return y + 1").unwrap();
        assert_eq!(
            message,
            "The closest text is at lines 1-3, where line 3 differs: file has \"    return  y\", \
             old_string has \"    return y + 1\". Read those lines again and copy them exactly."
        );
        // A single line unlike any other still finds its nearest neighbour.
        let message = closest(
            "let total = sum(items);\nprint(total)\n",
            "let totl = sum(items)",
        )
        .unwrap();
        assert!(
            message.starts_with("The closest text is at line 1, where line 1 differs"),
            "{message}"
        );
        assert_eq!(closest("alpha\nbeta\n", "completely different"), None);
    }

    #[test]
    fn closest_explains_uneven_indentation_and_running_past_the_end() {
        let content = "if a:\n    b()\n    c()\n";
        let message = closest(content, "if a:\n  b()\n    c()").unwrap();
        assert_eq!(
            message,
            "The closest text is at lines 1-3, which matches apart from indentation; but \
             old_string's indentation is not off by the same amount on every line, so it cannot \
             be re-indented as one block: line 1 is \"if a:\" in both; line 2 is \"    b()\" in \
             the file but \"  b()\" in old_string. Read those lines again and copy them exactly."
        );
        let message = closest(content, "    c()\n    d()").unwrap();
        assert!(
            message.contains("old_string goes on for 1 more line than the file has"),
            "{message}"
        );
    }
}
