//! Text as the terminal shows it: widths measured per grapheme the way ratatui draws them,
//! text from outside cleaned of what would move the cursor behind the renderer's back, and
//! word wrapping with hanging prefixes.
//!
//! Every cell renders to logical lines and wraps them here, so the height of anything on
//! screen is simply its number of lines — the viewport, the scrollback commit and the tests
//! all agree on it without asking a widget.

use ratatui::buffer::CellWidth;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use unicode_segmentation::UnicodeSegmentation;

/// Columns between tab stops when tabs are expanded.
const TAB_STOP: usize = 4;

/// A logical line: `content` wrapped to a width, the first row led by `first`, the next rows
/// by `rest` (a hanging indent under a bullet, a quote bar on every row).
#[derive(Debug, Clone, Default)]
pub(crate) struct Para {
    pub first: Vec<Span<'static>>,
    pub rest: Vec<Span<'static>>,
    pub content: Vec<Span<'static>>,
    /// Break anywhere rather than at spaces (code, where a space is not a break point).
    pub hard: bool,
}

impl Para {
    pub fn new(content: Vec<Span<'static>>) -> Self {
        Para {
            content,
            ..Para::default()
        }
    }

    pub fn prefixed(
        first: Span<'static>,
        rest: Span<'static>,
        content: Vec<Span<'static>>,
    ) -> Self {
        Para {
            first: vec![first],
            rest: vec![rest],
            content,
            hard: false,
        }
    }

    pub fn wrap(&self, width: u16, out: &mut Vec<Line<'static>>) {
        wrap_into(self, usize::from(width.max(1)), out);
    }
}

/// Columns one grapheme takes when ratatui draws it ("❤️" with its variation selector is
/// two, "é" as `e` + a combining accent is one). Control characters take none: ratatui drops
/// them.
pub(crate) fn grapheme_width(g: &str) -> usize {
    if g.contains(char::is_control) {
        0
    } else {
        usize::from(g.cell_width())
    }
}

/// Columns `s` takes on screen, grapheme by grapheme.
pub(crate) fn str_width(s: &str) -> usize {
    if s.is_ascii() {
        return s.bytes().filter(|b| !b.is_ascii_control()).count();
    }
    s.graphemes(true).map(grapheme_width).sum()
}

/// The graphemes of `s`. ASCII text, most of what is drawn, is one per byte, found without
/// the segmentation tables (its one exception, `\r\n`, is control characters, which take no
/// cell either way).
pub(crate) fn graphemes(s: &str) -> impl Iterator<Item = &str> {
    let (ascii, other) = if s.is_ascii() {
        (Some((0..s.len()).map(move |i| &s[i..i + 1])), None)
    } else {
        (None, Some(s.graphemes(true)))
    };
    ascii
        .into_iter()
        .flatten()
        .chain(other.into_iter().flatten())
}

/// Columns a run of spans takes on screen.
pub(crate) fn spans_width(spans: &[Span<'_>]) -> usize {
    spans.iter().map(|s| str_width(&s.content)).sum()
}

/// Text from outside (tool output, messages, pasted text) made fit to draw: escape sequences
/// (colours, titles, cursor moves) removed, tabs expanded to the next stop, `\r` and other
/// control characters dropped, newlines kept. Every text enters the app through here once,
/// so nothing downstream has to care.
pub(crate) fn sanitize(s: &str) -> String {
    sanitize_from(0, s)
}

/// Appends `s` to `buf` sanitized, its tabs expanded to the stops of `buf`'s last line (a
/// stream arrives in chunks that cut lines anywhere).
pub(crate) fn push_sanitized(buf: &mut String, s: &str) {
    let column = if s.contains('\t') {
        str_width(&buf[buf.rfind('\n').map_or(0, |i| i + 1)..])
    } else {
        0
    };
    buf.push_str(&sanitize_from(column, s));
}

/// [`sanitize`] for text that starts at `column` of its line.
fn sanitize_from(column: usize, s: &str) -> String {
    let stripped = strip_controls(s);
    if !stripped.contains('\t') {
        return stripped;
    }
    let mut out = String::with_capacity(stripped.len());
    for (n, line) in stripped.split('\n').enumerate() {
        if n > 0 {
            out.push('\n');
        }
        let mut col = if n == 0 { column } else { 0 };
        for (i, piece) in line.split('\t').enumerate() {
            if i > 0 {
                let pad = TAB_STOP - col % TAB_STOP;
                out.extend(std::iter::repeat_n(' ', pad));
                col += pad;
            }
            out.push_str(piece);
            col += str_width(piece);
        }
    }
    out
}

/// Removes escape sequences and control characters but `\n` and `\t`.
fn strip_controls(s: &str) -> String {
    if !s.contains(|c: char| c.is_control() && c != '\n' && c != '\t') {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    // Consumes a string sequence (OSC, DCS…) up to its terminator: BEL or ESC `\`.
    let skip_string = |chars: &mut std::iter::Peekable<std::str::Chars<'_>>| {
        while let Some(c) = chars.next() {
            match c {
                '\u{7}' | '\u{9c}' => break,
                '\u{1b}' => {
                    chars.next_if_eq(&'\\');
                    break;
                }
                _ => {}
            }
        }
    };
    // Consumes a CSI's parameters and intermediates, then its final byte.
    let skip_csi = |chars: &mut std::iter::Peekable<std::str::Chars<'_>>| {
        for c in chars.by_ref() {
            if ('\u{40}'..='\u{7e}').contains(&c) {
                break;
            }
        }
    };
    while let Some(c) = chars.next() {
        match c {
            '\n' | '\t' => out.push(c),
            '\u{1b}' => match chars.peek().copied() {
                Some('[') => {
                    chars.next();
                    skip_csi(&mut chars);
                }
                Some(']' | 'P' | 'X' | '^' | '_') => {
                    chars.next();
                    skip_string(&mut chars);
                }
                Some(c) if ('\u{20}'..='\u{2f}').contains(&c) => {
                    // nF: intermediates, then one final byte (`ESC ( B`).
                    while chars
                        .next_if(|c| ('\u{20}'..='\u{2f}').contains(c))
                        .is_some()
                    {}
                    chars.next_if(|c| ('\u{30}'..='\u{7e}').contains(c));
                }
                Some(c) if ('\u{30}'..='\u{7e}').contains(&c) => {
                    chars.next();
                }
                _ => {}
            },
            '\u{9b}' => skip_csi(&mut chars),
            '\u{90}' | '\u{98}' | '\u{9d}' | '\u{9e}' | '\u{9f}' => skip_string(&mut chars),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

/// Cuts `s` to at most `width` columns, ending with `…` when something was cut.
pub(crate) fn truncate(s: &str, width: usize) -> String {
    let clean;
    let s = if s.contains(char::is_control) {
        clean = sanitize(s).replace('\n', " ");
        clean.as_str()
    } else {
        s
    };
    if str_width(s) <= width {
        return s.to_string();
    }
    let mut out = String::new();
    let mut used = 0;
    for g in s.graphemes(true) {
        let w = grapheme_width(g);
        if used + w + 1 > width {
            break;
        }
        used += w;
        out.push_str(g);
    }
    if width > 0 {
        out.push('…');
    }
    out
}

struct Row<'a> {
    cells: Vec<(&'a str, Style)>,
    width: usize,
}

fn wrap_into(p: &Para, width: usize, out: &mut Vec<Line<'static>>) {
    let first_w = spans_width(&p.first);
    let rest_w = spans_width(&p.rest);
    let avail = |row: usize| {
        let prefix = if row == 0 { first_w } else { rest_w };
        width.saturating_sub(prefix).max(1)
    };

    // Graphemes with their widths; control characters (never in sanitized text) take no
    // cell and are dropped, as ratatui would.
    let cells: Vec<(&str, usize, Style)> = p
        .content
        .iter()
        .flat_map(|s| {
            let style = s.style;
            graphemes(&s.content)
                .filter(|g| !g.contains(char::is_control))
                .map(move |g| (g, grapheme_width(g), style))
        })
        .collect();
    let space = |i: usize| cells[i].0 == " ";

    let mut rows: Vec<Row<'_>> = vec![Row {
        cells: Vec::new(),
        width: 0,
    }];
    let mut i = 0;
    while i < cells.len() {
        // A token is a word and the spaces after it: the word must fit, its spaces may hang.
        let start = i;
        let mut word_w = 0;
        while i < cells.len() && (p.hard || !space(i)) {
            word_w += cells[i].1;
            i += 1;
            if p.hard {
                break;
            }
        }
        let word_end = i;
        while !p.hard && i < cells.len() && space(i) {
            i += 1;
        }
        let row_idx = rows.len() - 1;
        let room = avail(row_idx).saturating_sub(rows[row_idx].width);
        if word_w > room && rows[row_idx].width > 0 && word_w <= avail(row_idx + 1) {
            rows.push(Row {
                cells: Vec::new(),
                width: 0,
            });
        }
        for &(g, w, style) in &cells[start..word_end] {
            let row_idx = rows.len() - 1;
            if rows[row_idx].width + w > avail(row_idx) && rows[row_idx].width > 0 {
                rows.push(Row {
                    cells: Vec::new(),
                    width: 0,
                });
            }
            if let Some(row) = rows.last_mut() {
                row.cells.push((g, style));
                row.width += w;
            }
        }
        for &(g, _, style) in &cells[word_end..i] {
            let row_idx = rows.len() - 1;
            if rows[row_idx].width < avail(row_idx)
                && let Some(row) = rows.last_mut()
            {
                row.cells.push((g, style));
                row.width += 1;
            }
        }
    }

    for (n, row) in rows.into_iter().enumerate() {
        let mut spans: Vec<Span<'static>> = if n == 0 {
            p.first.clone()
        } else {
            p.rest.clone()
        };
        let mut cells = row.cells;
        if !p.hard {
            while cells.last().is_some_and(|(g, _)| *g == " ") {
                cells.pop();
            }
        }
        let mut current: Option<(String, Style)> = None;
        for (g, style) in cells {
            match &mut current {
                Some((text, s)) if *s == style => text.push_str(g),
                _ => {
                    if let Some((text, s)) = current.take() {
                        spans.push(Span::styled(text, s));
                    }
                    current = Some((g.to_string(), style));
                }
            }
        }
        if let Some((text, s)) = current {
            spans.push(Span::styled(text, s));
        }
        out.push(Line::from(spans));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(lines: &[Line<'_>]) -> Vec<String> {
        lines.iter().map(|l| l.to_string()).collect()
    }

    #[test]
    fn words_move_to_the_next_row_whole() {
        let mut out = Vec::new();
        Para::new(vec![Span::raw("the quick brown fox jumps")]).wrap(10, &mut out);
        assert_eq!(plain(&out), ["the quick", "brown fox", "jumps"]);
    }

    #[test]
    fn hanging_prefixes_lead_every_row() {
        let mut out = Vec::new();
        Para::prefixed(
            Span::raw("- "),
            Span::raw("  "),
            vec![Span::raw("aaa bbb ccc")],
        )
        .wrap(7, &mut out);
        assert_eq!(plain(&out), ["- aaa", "  bbb", "  ccc"]);
    }

    #[test]
    fn long_words_and_tiny_widths_break_anywhere() {
        let mut out = Vec::new();
        Para::new(vec![Span::raw("abcdefghij")]).wrap(4, &mut out);
        assert_eq!(plain(&out), ["abcd", "efgh", "ij"]);
        let mut out = Vec::new();
        Para::prefixed(
            Span::raw("> "),
            Span::raw("> "),
            vec![Span::raw("wide 漢字")],
        )
        .wrap(1, &mut out);
        assert!(out.len() >= 3);
    }

    #[test]
    fn control_characters_take_no_cell() {
        let mut out = Vec::new();
        Para::new(vec![Span::raw("a\rb\u{1b}c")]).wrap(10, &mut out);
        assert_eq!(plain(&out), ["abc"]);
    }

    #[test]
    fn widths_are_per_grapheme_as_drawn() {
        // A heart with its emoji variation selector draws two columns, not one.
        assert_eq!(str_width("❤\u{fe0f}"), 2);
        assert_eq!(str_width("e\u{301}"), 1);
        assert_eq!(str_width("漢字/a.rs"), 9);
        let mut out = Vec::new();
        Para::new(vec![Span::raw("❤\u{fe0f}❤\u{fe0f}❤\u{fe0f}")]).wrap(4, &mut out);
        assert_eq!(plain(&out), ["❤\u{fe0f}❤\u{fe0f}", "❤\u{fe0f}"]);
        assert_eq!(truncate("❤\u{fe0f}❤\u{fe0f}ab", 4), "❤\u{fe0f}…");
    }

    #[test]
    fn ascii_is_measured_as_the_segmentation_would() {
        for s in ["plain words", "a\r\nb\tc\u{7f}", "", "  two  spaces "] {
            let segmented: usize = s.graphemes(true).map(grapheme_width).sum();
            assert_eq!(str_width(s), segmented, "{s:?}");
            let visible = |g: &&str| !g.contains(char::is_control);
            assert_eq!(
                graphemes(s).filter(visible).collect::<Vec<_>>(),
                s.graphemes(true).filter(visible).collect::<Vec<_>>(),
                "{s:?}"
            );
        }
        assert_eq!(graphemes("é!").collect::<Vec<_>>(), ["é", "!"]);
    }

    #[test]
    fn sanitizing_strips_escapes_and_expands_tabs() {
        assert_eq!(sanitize("\u{1b}[31mred\u{1b}[0m ok"), "red ok");
        assert_eq!(
            sanitize("\u{1b}]0;title\u{7}x\u{1b}]8;;http://a\u{1b}\\y"),
            "xy"
        );
        assert_eq!(sanitize("\u{1b}(Bz\u{9b}1mw"), "zw");
        assert_eq!(sanitize("a\tb\n\tc\r\n"), "a   b\n    c\n");
        let mut buf = String::from("x\nab");
        push_sanitized(&mut buf, "\tc");
        assert_eq!(buf, "x\nab  c");
        assert_eq!(truncate("a\tb", 10), "a   b");
    }
}
