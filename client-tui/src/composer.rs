//! The input box: a multi-line editor with a cursor and a history of previous inputs.
//!
//! It knows text, keys and the attachments the core has read for it (shown on a row of
//! their own above the text); what a submitted line means (input, steer, command) is the
//! app's business.

use ratatui::text::{Line, Span};

use unicode_segmentation::UnicodeSegmentation;

use crate::theme;
use crate::wrap::{grapheme_width, sanitize, truncate};

#[derive(Debug, Default)]
pub(crate) struct Composer {
    /// Sanitized (no tabs, no control characters but newlines), so a grapheme's width is
    /// what the terminal draws.
    text: String,
    /// Byte offset into `text`, always on a grapheme boundary.
    cursor: usize,
    history: Vec<String>,
    /// Which history entry is shown, while browsing it.
    browsing: Option<usize>,
    /// What was typed before browsing began, restored when browsing past the newest entry.
    draft: String,
    /// Large pastes, shown in the text as their token and sent as what they stand for.
    pastes: Vec<Paste>,
    /// Pastes made so far, for the tokens' numbers.
    pasted: usize,
    /// Images and PDFs that go with the input, in the order attached.
    attachments: Vec<crate::Attached>,
}

/// A paste of more lines than this shows as a token (`[Pasted text #1 +200 lines]`).
const PASTE_LINES: usize = 10;
/// …as does one of more characters than this.
const PASTE_CHARS: usize = 1000;

#[derive(Debug)]
struct Paste {
    token: String,
    text: String,
}

impl Composer {
    pub fn with_history(history: Vec<String>) -> Self {
        Composer {
            history: history.iter().map(|h| sanitize(h)).collect(),
            ..Composer::default()
        }
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn cursor(&self) -> usize {
        self.cursor
    }

    /// No text and nothing attached.
    pub fn is_empty(&self) -> bool {
        self.text.is_empty() && self.attachments.is_empty()
    }

    pub fn attachments(&self) -> &[crate::Attached] {
        &self.attachments
    }

    pub fn attach(&mut self, attached: crate::Attached) {
        self.attachments.push(attached);
    }

    /// The attachments, for an input being sent; the box keeps none.
    pub fn take_attachments(&mut self) -> Vec<crate::Attached> {
        std::mem::take(&mut self.attachments)
    }

    pub fn set(&mut self, text: String, cursor: usize) {
        self.text = sanitize(&text);
        self.cursor = cursor.min(self.text.len());
        while !self.text.is_char_boundary(self.cursor) {
            self.cursor -= 1;
        }
    }

    pub fn clear(&mut self) {
        self.text.clear();
        self.cursor = 0;
        self.browsing = None;
        self.pastes.clear();
        self.attachments.clear();
    }

    /// Empties the box and remembers what was in it: its pastes' tokens replaced by what
    /// they stand for.
    pub fn take(&mut self) -> String {
        let mut text = std::mem::take(&mut self.text);
        for paste in self.pastes.drain(..) {
            if let Some(at) = text.find(&paste.token) {
                text.replace_range(at..at + paste.token.len(), &paste.text);
            }
        }
        self.cursor = 0;
        self.browsing = None;
        self.remember(&text);
        text
    }

    /// Inserts pasted text: a large paste as a token that stands for it, so the box stays
    /// readable; the whole text is what is sent.
    pub fn paste(&mut self, s: &str) {
        let text = sanitize(&s.replace("\r\n", "\n").replace('\r', "\n"));
        let lines = text.lines().count();
        if lines <= PASTE_LINES && text.chars().count() <= PASTE_CHARS {
            self.insert(&text);
            return;
        }
        self.pasted += 1;
        let token = format!("[Pasted text #{} +{lines} lines]", self.pasted);
        self.insert(&token);
        self.pastes.push(Paste { token, text });
    }

    /// The paste whose token ends (`before`) or starts at the cursor.
    fn token_at_cursor(&self, before: bool) -> Option<usize> {
        self.pastes.iter().position(|p| {
            if before {
                self.text[..self.cursor].ends_with(&p.token)
            } else {
                self.text[self.cursor..].starts_with(&p.token)
            }
        })
    }

    /// Adds an input to the history (the session's inputs, from any client, as they are
    /// queued), unless it repeats the latest entry.
    pub fn remember(&mut self, text: &str) {
        let text = sanitize(text);
        if !text.trim().is_empty() && self.history.last() != Some(&text) {
            self.history.push(text);
        }
    }

    /// Inserts typed or pasted text; a pasted `\r` (old Mac line ends) is a newline.
    pub fn insert(&mut self, s: &str) {
        let s = sanitize(&s.replace("\r\n", "\n").replace('\r', "\n"));
        self.text.insert_str(self.cursor, &s);
        self.cursor += s.len();
    }

    fn prev_boundary(&self) -> usize {
        self.text[..self.cursor]
            .grapheme_indices(true)
            .next_back()
            .map_or(0, |(i, _)| i)
    }

    fn next_boundary(&self) -> usize {
        self.text[self.cursor..]
            .graphemes(true)
            .next()
            .map_or(self.cursor, |g| self.cursor + g.len())
    }

    /// Deletes before the cursor; with no text, the last attachment.
    pub fn backspace(&mut self) {
        if self.text.is_empty() {
            self.attachments.pop();
            return;
        }
        if let Some(i) = self.token_at_cursor(true) {
            let paste = self.pastes.remove(i);
            let start = self.cursor - paste.token.len();
            self.text.drain(start..self.cursor);
            self.cursor = start;
            return;
        }
        let start = self.prev_boundary();
        self.text.drain(start..self.cursor);
        self.cursor = start;
    }

    pub fn delete(&mut self) {
        if let Some(i) = self.token_at_cursor(false) {
            let paste = self.pastes.remove(i);
            self.text
                .drain(self.cursor..self.cursor + paste.token.len());
            return;
        }
        let end = self.next_boundary();
        self.text.drain(self.cursor..end);
    }

    pub fn left(&mut self) {
        self.cursor = self.prev_boundary();
    }

    pub fn right(&mut self) {
        self.cursor = self.next_boundary();
    }

    fn line_start(&self) -> usize {
        self.text[..self.cursor].rfind('\n').map_or(0, |i| i + 1)
    }

    fn line_end(&self) -> usize {
        self.text[self.cursor..]
            .find('\n')
            .map_or(self.text.len(), |i| self.cursor + i)
    }

    pub fn home(&mut self) {
        self.cursor = self.line_start();
    }

    pub fn end(&mut self) {
        self.cursor = self.line_end();
    }

    pub fn word_left(&mut self) {
        let before = &self.text[..self.cursor];
        let trimmed = before.trim_end();
        self.cursor = trimmed.rfind(char::is_whitespace).map_or(0, |i| {
            i + trimmed[i..].chars().next().map_or(1, char::len_utf8)
        });
    }

    pub fn word_right(&mut self) {
        let after = &self.text[self.cursor..];
        let skip = after.len() - after.trim_start().len();
        let rest = &after[skip..];
        let word = rest.find(char::is_whitespace).unwrap_or(rest.len());
        self.cursor += skip + word;
    }

    pub fn delete_word_back(&mut self) {
        let end = self.cursor;
        self.word_left();
        self.text.drain(self.cursor..end);
    }

    pub fn kill_to_start(&mut self) {
        let start = self.line_start();
        self.text.drain(start..self.cursor);
        self.cursor = start;
    }

    pub fn kill_to_end(&mut self) {
        let end = self.line_end();
        if end == self.cursor && end < self.text.len() {
            self.delete();
        } else {
            self.text.drain(self.cursor..end);
        }
    }

    fn column(&self) -> usize {
        self.text[self.line_start()..self.cursor]
            .graphemes(true)
            .count()
    }

    fn move_to_column(&mut self, line_start: usize, column: usize) {
        let line = &self.text[line_start..];
        let line = &line[..line.find('\n').unwrap_or(line.len())];
        self.cursor = line_start
            + line
                .grapheme_indices(true)
                .nth(column)
                .map_or(line.len(), |(i, _)| i);
    }

    /// Up: to the line above, or to the previous history entry from the first line.
    pub fn up(&mut self) {
        let start = self.line_start();
        if start > 0 {
            let column = self.column();
            let prev_start = self.text[..start - 1].rfind('\n').map_or(0, |i| i + 1);
            self.move_to_column(prev_start, column);
            return;
        }
        let next = match self.browsing {
            None if !self.history.is_empty() => {
                self.draft = self.text.clone();
                self.history.len() - 1
            }
            Some(i) if i > 0 => i - 1,
            _ => return,
        };
        self.browsing = Some(next);
        self.text = self.history[next].clone();
        self.cursor = self.text.find('\n').unwrap_or(self.text.len());
    }

    /// Down: to the line below, or to the next history entry (then the draft) from the last.
    pub fn down(&mut self) {
        let end = self.line_end();
        if end < self.text.len() {
            let column = self.column();
            self.move_to_column(end + 1, column);
            return;
        }
        match self.browsing {
            Some(i) if i + 1 < self.history.len() => {
                self.browsing = Some(i + 1);
                self.text = self.history[i + 1].clone();
            }
            Some(_) => {
                self.browsing = None;
                self.text = std::mem::take(&mut self.draft);
            }
            None => return,
        }
        self.cursor = self.text.len();
    }

    /// The box's rows wrapped to `width` (prompt included) and where the cursor is in them.
    pub fn render(&self, width: u16, placeholder: &str) -> (Vec<Line<'static>>, (u16, u16)) {
        let width = usize::from(width.max(3));
        let avail = width - 2;
        let mut rows: Vec<Line<'static>> = Vec::new();
        if !self.attachments.is_empty() {
            let labels: Vec<String> = self
                .attachments
                .iter()
                .map(|a| sanitize(&a.label()))
                .collect();
            rows.push(Line::from(vec![
                Span::raw("  "),
                Span::styled(truncate(&labels.join(" "), avail), theme::accent()),
            ]));
        }
        let top = rows.len() as u16;
        let mut cursor = (2u16, top);
        if self.text.is_empty() {
            rows.push(Line::from(vec![
                Span::styled("› ", theme::user_prompt()),
                Span::styled(truncate(placeholder, avail), theme::dim()),
            ]));
            return (rows, cursor);
        }
        let mut offset = 0;
        for (n, line) in self.text.split('\n').enumerate() {
            let mut row = String::new();
            let mut used = 0;
            let mut first_row = true;
            let flush = |row: &mut String, first: bool, rows: &mut Vec<Line<'static>>| {
                let lead = if n == 0 && first {
                    Span::styled("› ", theme::user_prompt())
                } else {
                    Span::raw("  ")
                };
                rows.push(Line::from(vec![lead, Span::raw(std::mem::take(row))]));
            };
            for (i, g) in line.grapheme_indices(true) {
                let w = grapheme_width(g);
                if used + w > avail && used > 0 {
                    flush(&mut row, first_row, &mut rows);
                    first_row = false;
                    used = 0;
                }
                if offset + i == self.cursor {
                    cursor = (2 + used as u16, rows.len() as u16);
                }
                row.push_str(g);
                used += w;
            }
            if offset + line.len() == self.cursor {
                if used >= avail {
                    flush(&mut row, first_row, &mut rows);
                    first_row = false;
                    used = 0;
                }
                cursor = (2 + used as u16, rows.len() as u16);
            }
            flush(&mut row, first_row, &mut rows);
            offset += line.len() + 1;
        }
        (rows, cursor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn editing_moves_by_characters_not_bytes() {
        let mut c = Composer::default();
        c.insert("héllo");
        c.left();
        c.left();
        c.backspace();
        assert_eq!(c.text(), "hélo");
        c.home();
        c.delete();
        assert_eq!(c.text(), "élo");
        c.end();
        c.insert("\nworld");
        c.up();
        c.insert("X");
        assert_eq!(c.text(), "éloX\nworld");
    }

    #[test]
    fn history_is_browsed_from_the_first_line_and_the_draft_comes_back() {
        let mut c = Composer::with_history(vec!["one".into(), "two".into()]);
        c.insert("draft");
        c.up();
        assert_eq!(c.text(), "two");
        c.up();
        assert_eq!(c.text(), "one");
        c.up();
        assert_eq!(c.text(), "one");
        c.down();
        assert_eq!(c.text(), "two");
        c.down();
        assert_eq!(c.text(), "draft");
        assert_eq!(c.take(), "draft");
        c.up();
        assert_eq!(c.text(), "draft");
    }

    #[test]
    fn the_cursor_follows_wrapping() {
        let mut c = Composer::default();
        c.insert("abcdefgh\nxy");
        let (rows, cursor) = c.render(7, "");
        let text: Vec<String> = rows.iter().map(|l| l.to_string()).collect();
        assert_eq!(text, ["› abcde", "  fgh", "  xy"]);
        assert_eq!(cursor, (4, 2));
        c.set("abcde".into(), 5);
        let (rows, cursor) = c.render(7, "");
        assert_eq!(rows.len(), 2);
        assert_eq!(cursor, (2, 1));
    }

    #[test]
    fn words_and_kills() {
        let mut c = Composer::default();
        c.insert("cargo test  -p tui");
        c.word_left();
        c.word_left();
        assert_eq!(&c.text()[c.cursor()..], "-p tui");
        c.delete_word_back();
        assert_eq!(c.text(), "cargo -p tui");
        c.kill_to_end();
        assert_eq!(c.text(), "cargo ");
        c.kill_to_start();
        assert!(c.is_empty());
    }

    #[test]
    fn the_cursor_moves_and_measures_by_grapheme() {
        let mut c = Composer::default();
        c.insert("a❤\u{fe0f}b");
        c.left();
        c.left();
        assert_eq!(
            &c.text()[c.cursor()..],
            "❤\u{fe0f}b",
            "one step over the heart"
        );
        let (_, cursor) = c.render(20, "");
        assert_eq!(cursor, (3, 0));
        c.right();
        let (_, cursor) = c.render(20, "");
        assert_eq!(cursor, (5, 0), "the heart is two columns wide");
        c.backspace();
        assert_eq!(c.text(), "ab");
    }

    #[test]
    fn pasted_text_is_cleaned() {
        let mut c = Composer::default();
        c.insert("x\tif a {\r\n\u{1b}[1mb\u{1b}[0m\n");
        assert_eq!(c.text(), "x   if a {\nb\n");
    }
}
