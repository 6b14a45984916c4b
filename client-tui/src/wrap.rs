//! Word wrapping of styled lines to a width, with hanging prefixes.
//!
//! Every cell renders to logical lines and wraps them here, so the height of anything on
//! screen is simply its number of lines — the viewport, the scrollback commit and the tests
//! all agree on it without asking a widget.

use ratatui::style::Style;
use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthChar;

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

pub(crate) fn str_width(s: &str) -> usize {
    s.chars().map(char_width).sum()
}

fn spans_width(spans: &[Span<'_>]) -> usize {
    spans.iter().map(|s| str_width(&s.content)).sum()
}

/// Control characters (a stray `\r`, an escape from tool output) would move the terminal's
/// cursor behind the renderer's back, so they take no cell and are dropped.
pub(crate) fn char_width(c: char) -> usize {
    if c == '\t' {
        return 4;
    }
    c.width().unwrap_or(0)
}

/// Cuts `s` to at most `width` columns, ending with `…` when something was cut.
pub(crate) fn truncate(s: &str, width: usize) -> String {
    if str_width(s) <= width {
        return s.to_string();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in s.chars() {
        let w = char_width(c);
        if used + w + 1 > width {
            break;
        }
        used += w;
        out.push(c);
    }
    if width > 0 {
        out.push('…');
    }
    out
}

struct Row {
    cells: Vec<(char, Style)>,
    width: usize,
}

fn wrap_into(p: &Para, width: usize, out: &mut Vec<Line<'static>>) {
    let first_w = spans_width(&p.first);
    let rest_w = spans_width(&p.rest);
    let avail = |row: usize| {
        let prefix = if row == 0 { first_w } else { rest_w };
        width.saturating_sub(prefix).max(1)
    };

    let chars: Vec<(char, Style)> = p
        .content
        .iter()
        .flat_map(|s| {
            let style = s.style;
            s.content.chars().filter_map(move |c| match c {
                '\t' => Some(vec![(' ', style); 4]),
                c if char_width(c) == 0 && c.is_control() => None,
                c => Some(vec![(c, style)]),
            })
        })
        .flatten()
        .collect();

    let mut rows: Vec<Row> = vec![Row {
        cells: Vec::new(),
        width: 0,
    }];
    let mut i = 0;
    while i < chars.len() {
        // A token is a word and the spaces after it: the word must fit, its spaces may hang.
        let start = i;
        let mut word_w = 0;
        while i < chars.len() && (p.hard || chars[i].0 != ' ') {
            word_w += char_width(chars[i].0);
            i += 1;
            if p.hard {
                break;
            }
        }
        let word_end = i;
        while !p.hard && i < chars.len() && chars[i].0 == ' ' {
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
        for &(c, style) in &chars[start..word_end] {
            let w = char_width(c);
            let row_idx = rows.len() - 1;
            if rows[row_idx].width + w > avail(row_idx) && rows[row_idx].width > 0 {
                rows.push(Row {
                    cells: Vec::new(),
                    width: 0,
                });
            }
            let row = rows.last_mut();
            if let Some(row) = row {
                row.cells.push((c, style));
                row.width += w;
            }
        }
        for &(c, style) in &chars[word_end..i] {
            let row_idx = rows.len() - 1;
            if rows[row_idx].width < avail(row_idx)
                && let Some(row) = rows.last_mut()
            {
                row.cells.push((c, style));
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
            while cells.last().is_some_and(|(c, _)| *c == ' ') {
                cells.pop();
            }
        }
        let mut current: Option<(String, Style)> = None;
        for (c, style) in cells {
            match &mut current {
                Some((text, s)) if *s == style => text.push(c),
                _ => {
                    if let Some((text, s)) = current.take() {
                        spans.push(Span::styled(text, s));
                    }
                    current = Some((c.to_string(), style));
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
}
