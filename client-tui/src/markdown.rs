//! Markdown to styled, wrapped lines: what assistant text looks like on screen. Lines end
//! where the author ended them (a single newline too, as terminal renderers show it), long
//! ones wrap; headings lose their `#`s to weight; tables are laid out to the width (`table`).
//!
//! The renderer is a pure function of the source and the width, so a streaming message is
//! simply re-rendered as it grows; `stable_len` tells how much of a growing source is made of
//! finished blocks, which can go to scrollback and never change again. A fenced code block
//! is the exception to "blocks": it can be thousands of lines long, so while it streams it is
//! an [`OpenFence`] whose lines go to scrollback one by one as they complete.

use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

use crate::highlight::{LineHighlighter, highlight};
use crate::theme;
use crate::wrap::{Para, spans_width, str_width};

mod table;

use table::{Cell, Table};

/// Renders `src` wrapped to `width`.
pub(crate) fn render(src: &str, width: u16) -> Vec<Line<'static>> {
    let mut r = Renderer {
        width,
        ..Renderer::default()
    };
    let options =
        Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TABLES | Options::ENABLE_TASKLISTS;
    for event in Parser::new_ext(src, options) {
        r.event(event);
    }
    r.flush();
    r.out
}

/// The length of the longest prefix of `src` that ends after a blank line outside any code
/// fence: the blocks before it are complete, so their rendering is final.
pub(crate) fn stable_len(src: &str) -> usize {
    scan(src).stable
}

/// Where a fenced code block opens at the top level of `src` (no indent: one in a list or a
/// quote is indented or prefixed) and is not closed yet: the byte range of its opening line.
pub(crate) fn open_fence(src: &str) -> Option<(usize, usize)> {
    scan(src)
        .open
        .filter(|(start, _)| !src[*start..].starts_with(' '))
}

struct Scan {
    stable: usize,
    open: Option<(usize, usize)>,
}

/// A fence line: its marker, the marker's run and what follows it.
fn fence_marker(line: &str) -> Option<(char, usize, &str)> {
    let trimmed = line.trim_start_matches(' ');
    if line.len() - trimmed.len() >= 4 {
        return None;
    }
    let c = trimmed.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let run = trimmed.chars().take_while(|x| *x == c).count();
    let rest = &trimmed[run..];
    // A backtick fence's info string has no backtick (else it is inline code).
    (run >= 3 && !(c == '`' && rest.contains('`'))).then_some((c, run, rest))
}

/// Complete lines only: a line still growing may yet become a fence.
fn scan(src: &str) -> Scan {
    let mut fence: Option<(char, usize, usize, usize)> = None;
    let mut stable = 0;
    let mut offset = 0;
    for line in src.split_inclusive('\n') {
        if !line.ends_with('\n') {
            break;
        }
        let start = offset;
        offset += line.len();
        if let Some((c, run, rest)) = fence_marker(line) {
            match fence {
                None => fence = Some((c, run, start, offset)),
                Some((open, len, ..)) if open == c && run >= len && rest.trim().is_empty() => {
                    fence = None;
                }
                Some(_) => {}
            }
            continue;
        }
        if fence.is_none() && line.trim().is_empty() {
            stable = offset;
        }
    }
    Scan {
        stable,
        open: fence.map(|(_, _, start, end)| (start, end)),
    }
}

/// A fenced code block at the top level of a streaming message, still open. Its complete
/// lines leave the message as rows for scrollback, each highlighted once with the state the
/// line before left; only the line still growing is drawn in every frame.
#[derive(Debug, Clone)]
pub(crate) struct OpenFence {
    /// The opening line, to render the rest as markdown if the message ends oddly.
    pub opener: String,
    marker: char,
    run: usize,
    highlighter: Option<LineHighlighter>,
    /// Rows already went to scrollback: the next ones continue them without a gap.
    pub started: bool,
}

impl OpenFence {
    /// `line` is an opening fence line (from [`open_fence`]).
    pub fn new(line: &str) -> Self {
        let (marker, run, info) = fence_marker(line).unwrap_or(('`', 3, ""));
        OpenFence {
            opener: line.to_string(),
            marker,
            run,
            highlighter: LineHighlighter::new(info.trim()),
            started: false,
        }
    }

    /// Whether `line` ends the block.
    pub fn closes(&self, line: &str) -> bool {
        fence_marker(line).is_some_and(|(c, run, rest)| {
            c == self.marker && run >= self.run && rest.trim().is_empty()
        })
    }

    /// The next complete line of code (its newline included) as a row.
    pub fn row(&mut self, line: &str) -> Vec<Span<'static>> {
        let spans = self.highlighter.as_mut().and_then(|h| h.line(line));
        spans.unwrap_or_else(|| plain_code(line))
    }

    /// The line still growing as a row, the state left as it is.
    pub fn peek(&self, line: &str) -> Vec<Span<'static>> {
        let spans = self.highlighter.as_ref().and_then(|h| h.peek(line));
        spans.unwrap_or_else(|| plain_code(line))
    }
}

fn plain_code(line: &str) -> Vec<Span<'static>> {
    vec![Span::styled(
        line.trim_end_matches(['\n', '\r']).to_string(),
        theme::accent(),
    )]
}

/// Rows of code as a block draws them: each broken anywhere to fit `width`.
pub(crate) fn code_lines(
    rows: &[Vec<Span<'static>>],
    prefix: &[Span<'static>],
    width: u16,
    out: &mut Vec<Line<'static>>,
) {
    for content in rows {
        Para {
            first: prefix.to_vec(),
            rest: prefix.to_vec(),
            content: content.clone(),
            hard: true,
        }
        .wrap(width, out);
    }
}

#[derive(Default)]
struct Renderer {
    width: u16,
    out: Vec<Line<'static>>,
    inline: Vec<Span<'static>>,
    styles: Vec<Style>,
    /// One entry per open list: the next number of an ordered list.
    lists: Vec<Option<u64>>,
    /// The marker widths of the open items, which give the indent of their content.
    items: Vec<usize>,
    /// The marker of an item whose first block has not been written yet.
    bullet: Option<String>,
    quote: usize,
    code: Option<(String, String)>,
    /// The open links: where each goes, and where its text starts in `inline`.
    links: Vec<(String, usize)>,
    /// A block ended: the next one is separated by an empty line.
    blank: bool,
    table: Option<Table>,
    row: Vec<Cell>,
    /// The lines of the current cell before a `<br>`.
    cell: Cell,
}

impl Renderer {
    fn style(&self) -> Style {
        self.styles.last().copied().unwrap_or_default()
    }

    fn push_style(&mut self, f: impl FnOnce(Style) -> Style) {
        let s = f(self.style());
        self.styles.push(s);
    }

    fn quote_prefix(&self) -> Vec<Span<'static>> {
        (0..self.quote)
            .map(|_| Span::styled("│ ", theme::dim()))
            .collect()
    }

    /// Before a block: the text before it is written, then an empty line if a block ended.
    /// The first block of a list item goes on the item's bullet line instead.
    fn start_block(&mut self) {
        if self.bullet.is_some() && self.inline.is_empty() {
            return;
        }
        self.flush();
        if self.blank && !self.out.is_empty() {
            let mut prefix = self.quote_prefix();
            if let Some(last) = prefix.last_mut() {
                last.content = "│".into();
            }
            self.out.push(Line::from(prefix));
        }
        self.blank = false;
    }

    /// A block that reads as the text before it going on if it follows it directly — code,
    /// a table — is set apart even in a tight list item, where that text has no paragraph.
    fn start_set_apart_block(&mut self) {
        if !self.inline.is_empty() {
            self.blank = true;
        }
        self.start_block();
    }

    fn prefixes(&mut self) -> (Vec<Span<'static>>, Vec<Span<'static>>) {
        let mut first = self.quote_prefix();
        let mut rest = first.clone();
        let depth: usize = self.items.iter().sum();
        match self.bullet.take() {
            Some(bullet) => {
                let outer = depth.saturating_sub(str_width(&bullet));
                first.push(Span::raw(" ".repeat(outer)));
                first.push(Span::styled(bullet, theme::accent()));
            }
            None => first.push(Span::raw(" ".repeat(depth))),
        }
        rest.push(Span::raw(" ".repeat(depth)));
        (first, rest)
    }

    fn flush(&mut self) {
        if self.inline.is_empty() && self.bullet.is_none() {
            return;
        }
        let content = std::mem::take(&mut self.inline);
        let (first, rest) = self.prefixes();
        Para {
            first,
            rest,
            content,
            hard: false,
        }
        .wrap(self.width, &mut self.out);
    }

    /// A line ends here: the author's line structure is kept, as terminal renderers keep it
    /// (a 120-line answer of short lines stays 120 lines), for soft breaks as for hard ones.
    fn line_break(&mut self) {
        if self.table.is_some() {
            let line = std::mem::take(&mut self.inline);
            self.cell.push(line);
        } else {
            self.flush();
        }
    }

    fn text(&mut self, text: &str) {
        if let Some((_, code)) = &mut self.code {
            code.push_str(text);
            return;
        }
        let style = self.style();
        self.inline.push(Span::styled(text.to_string(), style));
    }

    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(t) => self.text(&t),
            Event::Code(t) => {
                let style = self.style().patch(theme::inline_code());
                self.inline.push(Span::styled(t.to_string(), style));
            }
            // Models write `<br>` where markdown has no line break, in table cells above all.
            Event::InlineHtml(t) if is_br(&t) => self.line_break(),
            Event::Html(t) => {
                self.text(t.trim_end_matches('\n'));
                self.line_break();
            }
            Event::InlineHtml(t) | Event::InlineMath(t) | Event::DisplayMath(t) => {
                self.text(t.trim_end_matches('\n'));
            }
            Event::SoftBreak | Event::HardBreak => self.line_break(),
            Event::Rule => {
                self.start_block();
                let (mut line, _) = self.prefixes();
                let width = usize::from(self.width)
                    .saturating_sub(spans_width(&line))
                    .min(40);
                line.push(Span::styled("─".repeat(width), theme::dim()));
                self.out.push(Line::from(line));
                self.blank = true;
            }
            Event::TaskListMarker(done) => {
                let mark = if done { "☑ " } else { "☐ " };
                // The box is the bullet of an unordered item; a numbered one keeps its number.
                if self.bullet.is_some() && self.lists.last() == Some(&None) {
                    self.bullet = Some(mark.to_string());
                } else {
                    self.inline.push(Span::styled(mark, theme::accent()));
                }
            }
            Event::FootnoteReference(t) => self.text(&format!("[{t}]")),
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Paragraph | Tag::HtmlBlock => self.start_block(),
            Tag::Heading { level, .. } => {
                self.start_block();
                self.push_style(|s| s.patch(heading(level)));
            }
            Tag::BlockQuote(_) => {
                self.start_block();
                self.quote += 1;
                self.push_style(|s| s.add_modifier(Modifier::ITALIC));
            }
            Tag::CodeBlock(kind) => {
                self.start_set_apart_block();
                let lang = match kind {
                    CodeBlockKind::Fenced(lang) => lang.to_string(),
                    CodeBlockKind::Indented => String::new(),
                };
                self.code = Some((lang, String::new()));
            }
            Tag::List(start) => {
                if self.lists.is_empty() {
                    self.start_block();
                } else {
                    self.flush();
                }
                self.lists.push(start);
            }
            Tag::Item => {
                self.flush();
                let depth = self.lists.len();
                let marker = match self.lists.last_mut() {
                    Some(Some(n)) => {
                        let m = format!("{n}. ");
                        *n += 1;
                        m
                    }
                    _ => match depth {
                        1 => "• ".to_string(),
                        2 => "◦ ".to_string(),
                        _ => "▪ ".to_string(),
                    },
                };
                self.items.push(str_width(&marker));
                self.bullet = Some(marker);
            }
            Tag::Emphasis => self.push_style(|s| s.add_modifier(Modifier::ITALIC)),
            Tag::Strong => self.push_style(|s| s.add_modifier(Modifier::BOLD)),
            Tag::Strikethrough => self.push_style(|s| s.add_modifier(Modifier::CROSSED_OUT)),
            Tag::Link { dest_url, .. } => {
                self.links.push((dest_url.to_string(), self.inline.len()));
                self.push_style(|s| s.patch(theme::link()));
            }
            Tag::Image { .. } => {
                self.text("[image: ");
                self.push_style(|s| s.add_modifier(Modifier::ITALIC));
            }
            Tag::Table(aligns) => {
                self.start_set_apart_block();
                self.table = Some(Table::new(aligns));
            }
            _ => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph | TagEnd::HtmlBlock => {
                self.flush();
                self.blank = true;
            }
            TagEnd::Heading(_) => {
                self.styles.pop();
                self.flush();
                self.blank = true;
            }
            TagEnd::BlockQuote(_) => {
                self.flush();
                self.styles.pop();
                self.quote = self.quote.saturating_sub(1);
                self.blank = true;
            }
            TagEnd::CodeBlock => {
                if let Some((lang, code)) = self.code.take() {
                    self.code_block(&lang, &code);
                }
                self.blank = true;
            }
            TagEnd::List(_) => {
                self.flush();
                self.lists.pop();
                if self.lists.is_empty() {
                    self.blank = true;
                }
            }
            TagEnd::Item => {
                self.flush();
                self.items.pop();
                // Loose items end their paragraphs with a blank; the next item needs none.
                self.blank = false;
            }
            TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough => {
                self.styles.pop();
            }
            TagEnd::Link => {
                self.styles.pop();
                if let Some((url, start)) = self.links.pop() {
                    let text: String = self.inline[start.min(self.inline.len())..]
                        .iter()
                        .map(|s| s.content.as_ref())
                        .collect();
                    if !url.is_empty() && !url.starts_with('#') && !same_target(&text, &url) {
                        self.inline
                            .push(Span::styled(format!(" ({url})"), theme::dim()));
                    }
                }
            }
            TagEnd::Image => {
                self.styles.pop();
                self.text("]");
            }
            TagEnd::TableCell => {
                let mut cell = std::mem::take(&mut self.cell);
                cell.push(std::mem::take(&mut self.inline));
                self.row.push(cell);
            }
            TagEnd::TableHead | TagEnd::TableRow => {
                let row = std::mem::take(&mut self.row);
                if let Some(table) = &mut self.table {
                    table.push_row(row);
                }
            }
            TagEnd::Table => {
                if let Some(table) = self.table.take() {
                    let (first, rest) = self.prefixes();
                    table.render(&first, &rest, self.width, &mut self.out);
                }
                self.blank = true;
            }
            _ => {}
        }
    }

    fn code_block(&mut self, lang: &str, code: &str) {
        let (first, rest) = self.prefixes();
        let rows: Vec<Vec<Span<'static>>> =
            highlight(code, lang).unwrap_or_else(|| code.lines().map(plain_code).collect());
        let (head, tail) = rows.split_at(rows.len().min(1));
        code_lines(head, &first, self.width, &mut self.out);
        code_lines(tail, &rest, self.width, &mut self.out);
    }
}

/// Headings by weight, without their `#`s: the first level underlined, the deeper ones
/// slanted.
fn heading(level: HeadingLevel) -> Style {
    let style = theme::bold();
    match level {
        HeadingLevel::H1 => style.add_modifier(Modifier::UNDERLINED),
        HeadingLevel::H2 => style,
        _ => style.add_modifier(Modifier::ITALIC),
    }
}

fn is_br(html: &str) -> bool {
    let tag = html.trim().to_ascii_lowercase();
    matches!(tag.as_str(), "<br>" | "<br/>" | "<br />")
}

/// Whether a link's text already says where it goes: the URL itself, or it without its
/// scheme (`docs.rs/x` for `https://docs.rs/x`), or an address for its `mailto:`.
fn same_target(text: &str, url: &str) -> bool {
    let bare = |s: &str| {
        let s = ["https://", "http://", "mailto:"]
            .iter()
            .find_map(|scheme| s.strip_prefix(scheme))
            .unwrap_or(s);
        s.trim_end_matches('/').to_string()
    };
    text == url || bare(text) == bare(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(src: &str, width: u16) -> Vec<String> {
        render(src, width).iter().map(|l| l.to_string()).collect()
    }

    #[test]
    fn blocks_are_separated_and_lists_indented() {
        let lines = plain(
            "# Title\n\nSome *text* here.\n\n- one\n- two\n  - nested\n\n1. a\n2. b\n",
            40,
        );
        assert_eq!(
            lines,
            [
                "Title",
                "",
                "Some text here.",
                "",
                "• one",
                "• two",
                "  ◦ nested",
                "",
                "1. a",
                "2. b"
            ]
        );
    }

    #[test]
    fn fenced_code_keeps_its_lines_and_links_show_their_target() {
        let lines = plain(
            "see [docs](https://x.y)\n\n```rust\nfn a() {}\n  let b = 2;\n```\n",
            40,
        );
        assert_eq!(
            lines,
            ["see docs (https://x.y)", "", "fn a() {}", "  let b = 2;"]
        );
    }

    #[test]
    fn a_br_breaks_a_line_inside_a_table_cell() {
        let lines = plain("| a | b |\n|---|--:|\n| x<br>y<br/>z | `w` |\n", 40);
        assert_eq!(lines, ["a │ b", "──┼──", "x │ w", "y │", "z │"]);
    }

    #[test]
    fn a_table_in_an_item_or_a_quote_keeps_their_prefixes() {
        let lines = plain("- | a | b |\n  |---|---|\n  | 1 | 2 |\n- next\n", 40);
        assert_eq!(lines, ["• a │ b", "  ──┼──", "  1 │ 2", "• next"]);
        let lines = plain("> | a | b |\n> |---|---|\n> | 1 | two words |\n", 12);
        assert_eq!(
            lines,
            ["│ a │ b", "│ ──┼───────", "│ 1 │ two", "│   │ words"]
        );
    }

    #[test]
    fn a_table_never_runs_past_the_edge_while_its_columns_can_fit() {
        let src = "| Name | Meaning | Where |\n|---|:-:|--:|\n| `stable_len` | the longest prefix made of finished blocks, which go to scrollback | markdown.rs |\n| 漢字 | wide 🙂 glyphs | wrap.rs |\n";
        for width in 16..=100 {
            for line in render(src, width) {
                assert!(line.width() <= usize::from(width), "{line} at {width}");
            }
        }
    }

    #[test]
    fn the_stable_prefix_ends_at_a_blank_line_outside_fences() {
        assert_eq!(stable_len("para one\n\npara two"), 10);
        assert_eq!(stable_len("```\ncode\n\nmore\n"), 0);
        assert_eq!(stable_len("```\ncode\n\n```\n\nafter"), 15);
        assert_eq!(stable_len("no blank yet\n"), 0);
        // A table or a paragraph can still change (a row, a setext underline) until then.
        let table = "| a | b |\n|---|---|\n| 1 | 2 |\n";
        assert_eq!(stable_len(table), 0);
        assert_eq!(stable_len(&format!("{table}\nafter")), table.len() + 1);
        assert_eq!(stable_len("one\ntwo\n"), 0);
    }

    #[test]
    fn an_open_fence_is_found_only_at_the_top_level() {
        assert_eq!(open_fence("text\n```rust\nfn a"), Some((5, 13)));
        assert_eq!(open_fence("```\ndone\n```\nmore"), None);
        assert_eq!(open_fence("- item\n  ```\n  code\n"), None);
        assert_eq!(open_fence("> ```\n> code\n"), None);
        assert_eq!(open_fence("```rust"), None, "a line still growing");
        assert_eq!(open_fence("```a`b\n"), None, "inline code, not a fence");
    }

    #[test]
    fn an_open_fence_highlights_line_by_line_as_a_whole_block_would() {
        let code = "/* a comment\n   that goes on */\nfn main() {}\n";
        let whole = highlight(code, "rust").unwrap();
        let mut fence = OpenFence::new("```rust\n");
        let rows: Vec<_> = code.split_inclusive('\n').map(|l| fence.row(l)).collect();
        assert_eq!(rows, whole, "the state carries over from line to line");
        assert!(fence.closes("```\n") && fence.closes("````  \n"));
        assert!(!fence.closes("~~~\n") && !fence.closes("``` x\n"));
    }
}
