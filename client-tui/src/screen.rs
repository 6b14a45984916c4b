//! The inline screen: a viewport of changing height at the bottom of the terminal's normal
//! screen, with finished lines written above it into the terminal's own scrollback.
//!
//! ratatui's `Viewport::Inline` has a fixed height and asks the terminal where its cursor is
//! on every resize; the live area here grows and shrinks with what it shows, and a key
//! reader runs beside it, so this small layer keeps the geometry itself: where the viewport's
//! top row is, how tall it is, and what was drawn there last (for diffing). History goes out
//! by drawing lines at the viewport's top and scrolling the whole screen with newlines, which
//! every terminal turns into scrollback.

use std::io;

use ratatui::backend::{Backend, ClearType};
use ratatui::buffer::Buffer;
use ratatui::layout::{Position, Rect, Size};
use ratatui::text::Line;

fn io_err<E: std::error::Error + Send + Sync + 'static>(e: E) -> io::Error {
    io::Error::other(e)
}

pub struct Screen<B: Backend> {
    backend: B,
    size: Size,
    top: u16,
    height: u16,
    /// What the viewport shows, for diffing; `None` after anything invalidated it.
    prev: Option<Buffer>,
    /// The cursor's row within the viewport at the last draw: after a resize, the terminal
    /// tells where the cursor went, and the viewport is found from it.
    cursor_offset: u16,
}

impl<B: Backend> Screen<B>
where
    B::Error: std::error::Error + Send + Sync + 'static,
{
    /// A screen whose viewport starts at `cursor` (where the shell left it), on the next row
    /// when that row already has text.
    pub fn new(backend: B, cursor: Position) -> io::Result<Self> {
        let size = backend.size().map_err(io_err)?;
        let top = if cursor.x > 0 { cursor.y + 1 } else { cursor.y };
        Ok(Screen {
            backend,
            size,
            top,
            height: 0,
            prev: None,
            cursor_offset: 0,
        })
    }

    pub fn backend(&self) -> &B {
        &self.backend
    }

    pub fn backend_mut(&mut self) -> &mut B {
        &mut self.backend
    }

    pub fn size(&self) -> Size {
        self.size
    }

    /// The viewport's rows on the screen.
    pub fn area(&self) -> Rect {
        Rect::new(0, self.top, self.size.width, self.height)
    }

    /// Scrolls the whole screen up by `n` rows, the top ones into scrollback.
    fn scroll_up(&mut self, n: u16) -> io::Result<()> {
        if n == 0 {
            return Ok(());
        }
        let bottom = self.size.height.saturating_sub(1);
        self.backend
            .set_cursor_position(Position::new(0, bottom))
            .map_err(io_err)?;
        self.backend.append_lines(n).map_err(io_err)
    }

    fn clear_from(&mut self, row: u16) -> io::Result<()> {
        if row >= self.size.height {
            return Ok(());
        }
        self.backend
            .set_cursor_position(Position::new(0, row))
            .map_err(io_err)?;
        self.backend
            .clear_region(ClearType::AfterCursor)
            .map_err(io_err)
    }

    fn set_height(&mut self, height: u16) -> io::Result<()> {
        let height = height.min(self.size.height);
        if height == self.height && self.prev.is_some() {
            return Ok(());
        }
        let overflow = self
            .top
            .saturating_add(height)
            .saturating_sub(self.size.height);
        self.scroll_up(overflow)?;
        self.top -= overflow.min(self.top);
        self.height = height;
        // Rows the old viewport used below the new one are cleared with it.
        self.clear_from(self.top)?;
        self.prev = None;
        Ok(())
    }

    /// Draws a frame of `height` rows; `render` fills the buffer and says where the cursor
    /// goes (hidden when `None`).
    pub fn draw(
        &mut self,
        height: u16,
        render: impl FnOnce(Rect, &mut Buffer) -> Option<Position>,
    ) -> io::Result<()> {
        if self.size.width == 0 || self.size.height == 0 {
            return Ok(());
        }
        self.set_height(height.max(1))?;
        let area = self.area();
        let mut next = Buffer::empty(area);
        let cursor = render(area, &mut next);
        let empty;
        let prev = match &self.prev {
            Some(p) => p,
            None => {
                empty = Buffer::empty(area);
                &empty
            }
        };
        let updates = prev.diff(&next);
        self.backend.draw(updates.into_iter()).map_err(io_err)?;
        match cursor {
            Some(p) => {
                self.backend.set_cursor_position(p).map_err(io_err)?;
                self.backend.show_cursor().map_err(io_err)?;
                self.cursor_offset = p.y.saturating_sub(self.top);
            }
            None => {
                self.backend.hide_cursor().map_err(io_err)?;
                self.backend
                    .set_cursor_position(Position::new(0, self.top))
                    .map_err(io_err)?;
                self.cursor_offset = 0;
            }
        }
        self.backend.flush().map_err(io_err)?;
        self.prev = Some(next);
        Ok(())
    }

    /// Writes `lines` (already wrapped to the width) above the viewport, into scrollback as
    /// the screen fills, and moves the viewport below them.
    pub fn insert_history(&mut self, lines: &[Line<'_>]) -> io::Result<()> {
        if lines.is_empty() || self.size.width == 0 || self.size.height == 0 {
            return Ok(());
        }
        let h = self.size.height;
        let width = self.size.width;
        self.clear_from(self.top)?;
        let mut row = self.top.min(h);
        let mut i = 0;
        while i < lines.len() {
            if row >= h {
                let k = ((lines.len() - i).min(usize::from(h))) as u16;
                self.scroll_up(k)?;
                row = h - k;
            }
            let take = (usize::from(h - row)).min(lines.len() - i);
            let area = Rect::new(0, row, width, take as u16);
            let mut buf = Buffer::empty(area);
            for (n, line) in lines[i..i + take].iter().enumerate() {
                buf.set_line(0, row + n as u16, line, width);
            }
            // Blank cells are not written: trailing spaces would travel with copied text and
            // be re-wrapped by terminals that reflow on resize.
            let updates = Buffer::empty(area).diff(&buf);
            self.backend.draw(updates.into_iter()).map_err(io_err)?;
            row += take as u16;
            i += take;
        }
        // Room for one row of the viewport below the history, no more: the next draw knows
        // the viewport's new height and scrolls for what it needs. Making room for the old
        // height here would scroll a tall viewport that is about to shrink (a long answer
        // interrupted and written out) off the screen, and leave the input box high above
        // blank rows.
        self.top = row;
        let overflow = self.top.saturating_add(1).saturating_sub(h);
        self.scroll_up(overflow)?;
        self.top -= overflow.min(self.top);
        self.prev = None;
        self.backend.flush().map_err(io_err)
    }

    /// The terminal is now `size`. `cursor_row` is where it says the cursor is, if it was
    /// asked: terminals that reflow move the viewport along with the cursor.
    pub fn resize(&mut self, size: Size, cursor_row: Option<u16>) -> io::Result<()> {
        let old_width = self.size.width;
        self.size = size;
        let top = match cursor_row {
            Some(row) => {
                // Rows of the old viewport above the cursor may have wrapped at a narrower
                // width; count them as the terminal will have.
                let mut above = self.cursor_offset;
                if size.width < old_width
                    && let Some(prev) = &self.prev
                {
                    above = 0;
                    for y in 0..self.cursor_offset {
                        above += wrapped_rows(prev, self.top + y, size.width);
                    }
                }
                row.saturating_sub(above)
            }
            None => self.top,
        };
        self.height = self.height.min(size.height);
        self.top = top.min(size.height);
        // A viewport that no longer fits below the cursor scrolls the screen rather than
        // move up over the history above it.
        let overflow = self
            .top
            .saturating_add(self.height)
            .saturating_sub(size.height);
        self.scroll_up(overflow)?;
        self.top -= overflow.min(self.top);
        self.prev = None;
        self.clear_from(self.top)?;
        self.backend.flush().map_err(io_err)
    }

    /// Clears the whole screen (what scrolled into scrollback stays there) and puts the
    /// viewport at its top.
    pub fn clear(&mut self) -> io::Result<()> {
        self.backend.clear_region(ClearType::All).map_err(io_err)?;
        self.top = 0;
        self.prev = None;
        self.backend.flush().map_err(io_err)
    }

    /// Clears the viewport and leaves the cursor at its top, for the shell to continue there.
    pub fn leave(&mut self) -> io::Result<()> {
        self.clear_from(self.top)?;
        self.backend
            .set_cursor_position(Position::new(
                0,
                self.top.min(self.size.height.saturating_sub(1)),
            ))
            .map_err(io_err)?;
        self.backend.show_cursor().map_err(io_err)?;
        self.backend.flush().map_err(io_err)
    }
}

/// How many rows row `y` of `buf` takes at `width` columns.
fn wrapped_rows(buf: &Buffer, y: u16, width: u16) -> u16 {
    let area = buf.area;
    if y < area.top() || y >= area.bottom() || width == 0 {
        return 1;
    }
    let used = (area.left()..area.right())
        .rev()
        .find(|&x| buf.cell((x, y)).is_some_and(|c| c.symbol() != " "))
        .map_or(0, |x| x - area.left() + 1);
    used.div_ceil(width).max(1)
}

#[cfg(test)]
mod tests {
    use ratatui::backend::TestBackend;
    use ratatui::text::Line;

    use super::*;

    fn text(lines: &[&str]) -> Vec<Line<'static>> {
        lines.iter().map(|l| Line::raw(l.to_string())).collect()
    }

    fn shown(b: &Buffer) -> Vec<String> {
        (0..b.area.height)
            .map(|y| {
                (0..b.area.width)
                    .map(|x| b[(x, y)].symbol().to_string())
                    .collect::<String>()
                    .trim_end()
                    .to_string()
            })
            .collect()
    }

    fn draw(s: &mut Screen<TestBackend>, rows: &[&str]) {
        let rows: Vec<String> = rows.iter().map(|r| r.to_string()).collect();
        s.draw(rows.len() as u16, |area, buf| {
            for (i, r) in rows.iter().take(usize::from(area.height)).enumerate() {
                buf.set_string(0, area.y + i as u16, r, ratatui::style::Style::new());
            }
            None
        })
        .unwrap();
    }

    #[test]
    fn history_goes_above_the_viewport_and_into_scrollback() {
        let mut s = Screen::new(TestBackend::new(10, 4), Position::new(0, 1)).unwrap();
        draw(&mut s, &["input", "status"]);
        assert_eq!(shown(s.backend().buffer()), ["", "input", "status", ""]);
        s.insert_history(&text(&["one", "two", "three"])).unwrap();
        draw(&mut s, &["input", "status"]);
        assert_eq!(
            shown(s.backend().buffer()),
            ["two", "three", "input", "status"]
        );
        assert_eq!(shown(s.backend().scrollback()), ["", "one"]);
    }

    #[test]
    fn the_viewport_grows_by_scrolling_and_shrinks_in_place() {
        let mut s = Screen::new(TestBackend::new(10, 4), Position::new(3, 2)).unwrap();
        draw(&mut s, &["a"]);
        assert_eq!(s.area(), Rect::new(0, 3, 10, 1));
        draw(&mut s, &["a", "b", "c"]);
        assert_eq!(s.area(), Rect::new(0, 1, 10, 3));
        draw(&mut s, &["x"]);
        assert_eq!(shown(s.backend().buffer()), ["", "x", "", ""]);
        draw(&mut s, &["1", "2", "3", "4", "5", "6"]);
        assert_eq!(s.area(), Rect::new(0, 0, 10, 4));
    }

    #[test]
    fn a_tall_viewport_that_shrinks_as_history_goes_out_stays_below_it() {
        let mut s = Screen::new(TestBackend::new(10, 10), Position::new(0, 2)).unwrap();
        draw(&mut s, &["1", "2", "3", "4", "5", "6", "in", "st"]);
        assert_eq!(s.area(), Rect::new(0, 2, 10, 8));
        s.insert_history(&text(&["1", "2", "3", "4", "5", "6"]))
            .unwrap();
        draw(&mut s, &["in", "st"]);
        assert_eq!(s.area(), Rect::new(0, 8, 10, 2));
        assert_eq!(
            shown(s.backend().buffer()),
            ["", "", "1", "2", "3", "4", "5", "6", "in", "st"]
        );
        // History that fills the screen still leaves the viewport its rows.
        s.insert_history(&text(&["a"; 12])).unwrap();
        draw(&mut s, &["in", "st"]);
        assert_eq!(s.area(), Rect::new(0, 8, 10, 2));
        assert_eq!(shown(s.backend().buffer())[7], "a");
    }

    #[test]
    fn resizing_keeps_the_viewport_on_screen() {
        let mut s = Screen::new(TestBackend::new(20, 10), Position::new(0, 0)).unwrap();
        s.insert_history(&text(&["h"; 12])).unwrap();
        draw(&mut s, &["input", "status"]);
        assert_eq!(s.area(), Rect::new(0, 8, 20, 2));
        s.backend_mut().resize(8, 5);
        s.resize(Size::new(8, 5), None).unwrap();
        draw(&mut s, &["input", "status"]);
        assert_eq!(s.area(), Rect::new(0, 3, 8, 2));
        s.backend_mut().resize(8, 1);
        s.resize(Size::new(8, 1), Some(0)).unwrap();
        draw(&mut s, &["input", "status"]);
        assert_eq!(s.area(), Rect::new(0, 0, 8, 1));
    }
}
