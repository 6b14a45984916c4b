//! Tables laid out for a terminal: each column as wide as its widest cell and aligned as the
//! delimiter row says; a table wider than the screen shrinks its columns in proportion and
//! wraps cells within them, so no row runs past the edge (unless the screen cannot hold the
//! separators and one column for each, where ratatui cuts the rows).

use std::cmp::Reverse;

use pulldown_cmark::Alignment;
use ratatui::text::{Line, Span};

use crate::theme;
use crate::wrap::{Para, grapheme_width, graphemes, spans_width};

/// A cell's lines (a `<br>` starts a new one), each a run of styled text.
pub(super) type Cell = Vec<Vec<Span<'static>>>;

/// Between two columns.
const SEPARATOR: &str = " │ ";
const SEPARATOR_WIDTH: usize = 3;
/// Words up to this wide keep their column from shrinking below them while the table can
/// afford it: a column of short names stays whole, the long prose beside it wraps.
const WORD_KEPT: usize = 16;

/// A table read from markdown: the head row first, then the body.
pub(super) struct Table {
    aligns: Vec<Alignment>,
    rows: Vec<Vec<Cell>>,
}

impl Table {
    pub fn new(aligns: Vec<Alignment>) -> Self {
        Table {
            aligns,
            rows: Vec::new(),
        }
    }

    pub fn push_row(&mut self, row: Vec<Cell>) {
        self.rows.push(row);
    }

    /// The table in `width` columns, its first line led by `first` and the others by `rest`
    /// (a list item's bullet and indent, a quote's bars).
    pub fn render(
        self,
        first: &[Span<'static>],
        rest: &[Span<'static>],
        width: u16,
        out: &mut Vec<Line<'static>>,
    ) {
        let columns = self
            .rows
            .iter()
            .map(Vec::len)
            .max()
            .unwrap_or(0)
            .max(self.aligns.len());
        if columns == 0 {
            return;
        }
        // Each column's widest line and longest word.
        let mut natural = vec![1; columns];
        let mut words = vec![1; columns];
        for row in &self.rows {
            for (c, cell) in row.iter().enumerate() {
                for line in cell {
                    let (width, word) = measure(line);
                    natural[c] = natural[c].max(width);
                    words[c] = words[c].max(word);
                }
            }
        }
        let prefix = spans_width(first).max(spans_width(rest));
        let budget = usize::from(width)
            .saturating_sub(prefix)
            .saturating_sub(SEPARATOR_WIDTH * (columns - 1));
        let widths = column_widths(&natural, &words, budget);

        let rows: Vec<Vec<Vec<Line<'static>>>> = self
            .rows
            .into_iter()
            .map(|row| {
                let mut cells = row.into_iter();
                (0..columns)
                    .map(|c| wrap_cell(cells.next().unwrap_or_default(), widths[c]))
                    .collect()
            })
            .collect();
        // Rows of one line read as rows; once some wrap, rules show where each one ends.
        let ruled = rows
            .iter()
            .skip(1)
            .any(|row| row.iter().any(|cell| cell.len() > 1));
        let mut lines = Vec::new();
        for (i, row) in rows.into_iter().enumerate() {
            if i > 1 && ruled {
                lines.push(rule(&widths));
            }
            row_lines(row, &self.aligns, &widths, i == 0, &mut lines);
            if i == 0 {
                lines.push(rule(&widths));
            }
        }
        for (i, line) in lines.into_iter().enumerate() {
            let mut spans = if i == 0 {
                first.to_vec()
            } else {
                rest.to_vec()
            };
            spans.extend(line);
            out.push(Line::from(spans));
        }
    }
}

/// One row's cells side by side, each padded to its column as its alignment says; the row
/// is as tall as its tallest cell.
fn row_lines(
    cells: Vec<Vec<Line<'static>>>,
    aligns: &[Alignment],
    widths: &[usize],
    head: bool,
    lines: &mut Vec<Vec<Span<'static>>>,
) {
    let height = cells.iter().map(Vec::len).max().unwrap_or(1);
    let mut cells: Vec<_> = cells.into_iter().map(Vec::into_iter).collect();
    for _ in 0..height {
        let mut spans = Vec::new();
        for (c, cell) in cells.iter_mut().enumerate() {
            if c > 0 {
                spans.push(Span::styled(SEPARATOR, theme::dim()));
            }
            let content = cell.next().map(|l| l.spans).unwrap_or_default();
            let pad = widths[c].saturating_sub(spans_width(&content));
            let (left, right) = match aligns.get(c) {
                Some(Alignment::Right) => (pad, 0),
                Some(Alignment::Center) => (pad / 2, pad - pad / 2),
                _ => (0, pad),
            };
            if left > 0 {
                spans.push(Span::raw(" ".repeat(left)));
            }
            spans.extend(content.into_iter().map(|span| {
                if head {
                    span.patch_style(theme::bold())
                } else {
                    span
                }
            }));
            if right > 0 {
                spans.push(Span::raw(" ".repeat(right)));
            }
        }
        trim_end(&mut spans);
        lines.push(spans);
    }
}

/// Nothing follows the last column: a row ends where its text does, not in blanks that
/// would travel with copied text.
fn trim_end(spans: &mut Vec<Span<'static>>) {
    while let Some(last) = spans.last_mut() {
        let trimmed = last.content.trim_end_matches(' ');
        if !trimmed.is_empty() {
            if trimmed.len() < last.content.len() {
                last.content = trimmed.to_string().into();
            }
            return;
        }
        spans.pop();
    }
}

fn wrap_cell(cell: Cell, width: usize) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    for line in cell {
        if spans_width(&line) <= width {
            out.push(Line::from(line));
        } else {
            Para::new(line).wrap(u16::try_from(width).unwrap_or(u16::MAX), &mut out);
        }
    }
    if out.is_empty() {
        out.push(Line::default());
    }
    out
}

/// The rule under the head (and between wrapped rows), crossing the column separators.
fn rule(widths: &[usize]) -> Vec<Span<'static>> {
    let text = widths
        .iter()
        .map(|w| "─".repeat(*w))
        .collect::<Vec<_>>()
        .join("─┼─");
    vec![Span::styled(text, theme::dim())]
}

/// A line's width and its widest run of text without a space, across spans.
fn measure(line: &[Span<'static>]) -> (usize, usize) {
    let mut width = 0;
    let mut longest = 0;
    let mut run = 0;
    for g in line.iter().flat_map(|s| graphemes(&s.content)) {
        let w = grapheme_width(g);
        width += w;
        if g == " " {
            run = 0;
        } else {
            run += w;
            longest = longest.max(run);
        }
    }
    (width, longest)
}

/// Columns as wide as their widest cell when that fits in `budget`. Otherwise each column
/// keeps a floor — its longest word, capped, the cap halved until the floors fit — and the
/// room left is shared in proportion to what each column wanted beyond its floor.
fn column_widths(natural: &[usize], words: &[usize], budget: usize) -> Vec<usize> {
    if natural.iter().sum::<usize>() <= budget {
        return natural.to_vec();
    }
    let mut cap = WORD_KEPT;
    let floors = loop {
        let floors: Vec<usize> = natural
            .iter()
            .zip(words)
            .map(|(n, w)| (*w).min(cap).min(*n).max(1))
            .collect();
        if cap == 1 || floors.iter().sum::<usize>() <= budget {
            break floors;
        }
        cap /= 2;
    };
    let spare = budget.saturating_sub(floors.iter().sum());
    let wants: Vec<usize> = natural.iter().zip(&floors).map(|(n, f)| n - f).collect();
    let total: usize = wants.iter().sum();
    if total == 0 {
        return floors;
    }
    // `spare < total` (the table did not fit), so no column gets more than it wanted.
    let mut widths: Vec<usize> = floors
        .iter()
        .zip(&wants)
        .map(|(f, w)| f + spare * w / total)
        .collect();
    let mut left = spare + floors.iter().sum::<usize>() - widths.iter().sum::<usize>();
    // What rounding down left over goes to the columns it cut most.
    let mut order: Vec<usize> = (0..widths.len()).collect();
    order.sort_by_key(|c| Reverse(spare * wants[*c] % total));
    for c in order {
        if left == 0 {
            break;
        }
        if widths[c] < natural[c] {
            widths[c] += 1;
            left -= 1;
        }
    }
    widths
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_keep_their_width_when_the_table_fits() {
        assert_eq!(column_widths(&[4, 10, 3], &[4, 5, 3], 17), [4, 10, 3]);
    }

    #[test]
    fn a_wide_table_shrinks_its_columns_in_proportion_above_their_longest_word() {
        // The short column keeps its word; the two long ones share the rest by their want.
        let widths = column_widths(&[3, 40, 80], &[3, 10, 12], 63);
        assert_eq!(widths.iter().sum::<usize>(), 63);
        assert_eq!(widths[0], 3);
        assert_eq!(widths, [3, 22, 38]);
    }

    #[test]
    fn when_even_words_do_not_fit_they_break() {
        let widths = column_widths(&[30, 30, 30], &[20, 20, 20], 12);
        assert_eq!(widths, [4, 4, 4]);
        // Narrower than one column each: one each, and the line runs over (ratatui cuts it).
        assert_eq!(column_widths(&[5, 5], &[5, 5], 0), [1, 1]);
    }
}
