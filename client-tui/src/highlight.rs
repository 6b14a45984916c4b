//! Syntax highlighting of fenced code blocks, through syntect's bundled grammars.
//!
//! The grammars and theme load once, lazily, on the first code block (tens of milliseconds
//! in a release build), so a session without code never pays for them. A block is
//! highlighted line by line with the parser's state carried over, so a block still
//! streaming costs each of its lines once.

use std::sync::OnceLock;

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Span;
use syntect::easy::HighlightLines;
use syntect::highlighting::{FontStyle, HighlightState, Theme, ThemeSet};
use syntect::parsing::{ParseState, SyntaxSet};
use syntect::util::LinesWithEndings;

fn syntaxes() -> &'static SyntaxSet {
    static SET: OnceLock<SyntaxSet> = OnceLock::new();
    SET.get_or_init(SyntaxSet::load_defaults_newlines)
}

fn theme() -> &'static Theme {
    static THEME: OnceLock<Theme> = OnceLock::new();
    THEME.get_or_init(|| {
        let mut set = ThemeSet::load_defaults();
        set.themes.remove("base16-ocean.dark").unwrap_or_default()
    })
}

/// Aliases models write after the fence that syntect's bundled set names differently.
fn token(lang: &str) -> &str {
    match lang {
        "sh" | "shell" | "zsh" | "console" => "bash",
        "ts" | "tsx" | "typescript" => "js",
        "jsx" => "js",
        "yml" => "yaml",
        "rs" => "rust",
        "py" => "python",
        "golang" => "go",
        "c++" | "hpp" | "cc" => "cpp",
        other => other,
    }
}

/// The code as styled spans per line, or `None` when the language is unknown (the caller
/// shows the code plain).
pub(crate) fn highlight(code: &str, lang: &str) -> Option<Vec<Vec<Span<'static>>>> {
    let mut h = LineHighlighter::new(lang)?;
    LinesWithEndings::from(code).map(|l| h.line(l)).collect()
}

/// Highlights a block line by line, keeping syntect's state between lines.
#[derive(Debug, Clone)]
pub(crate) struct LineHighlighter {
    /// `None` once a line failed to parse: the rest of the block shows plain.
    state: Option<(HighlightState, ParseState)>,
}

impl LineHighlighter {
    /// A highlighter for the language after a fence, or `None` when it is unknown.
    pub fn new(lang: &str) -> Option<Self> {
        let lang = lang.split([' ', ',', '{']).next().unwrap_or("").trim();
        if lang.is_empty() {
            return None;
        }
        let set = syntaxes();
        let syntax = set
            .find_syntax_by_token(token(&lang.to_ascii_lowercase()))
            .or_else(|| set.find_syntax_by_extension(lang))?;
        Some(LineHighlighter {
            state: Some(HighlightLines::new(syntax, theme()).state()),
        })
    }

    /// The next line of the block (with its newline, as the grammars expect) as styled spans,
    /// its line end dropped; `None` when it could not be parsed.
    pub fn line(&mut self, line: &str) -> Option<Vec<Span<'static>>> {
        let (highlight, parse) = self.state.take()?;
        let mut h = HighlightLines::from_state(theme(), highlight, parse);
        let ranges = h.highlight_line(line, syntaxes()).ok()?;
        let spans = ranges
            .into_iter()
            .filter_map(|(style, text)| {
                let text = text.trim_end_matches(['\n', '\r']);
                (!text.is_empty()).then(|| Span::styled(text.to_string(), convert(style)))
            })
            .collect();
        self.state = Some(h.state());
        Some(spans)
    }

    /// A line still being written, highlighted as if it were the next one without moving on.
    pub fn peek(&self, line: &str) -> Option<Vec<Span<'static>>> {
        self.clone().line(line)
    }
}

fn convert(s: syntect::highlighting::Style) -> Style {
    let mut style = Style::new().fg(Color::Rgb(s.foreground.r, s.foreground.g, s.foreground.b));
    if s.font_style.contains(FontStyle::BOLD) {
        style = style.add_modifier(Modifier::BOLD);
    }
    if s.font_style.contains(FontStyle::ITALIC) {
        style = style.add_modifier(Modifier::ITALIC);
    }
    if s.font_style.contains(FontStyle::UNDERLINE) {
        style = style.add_modifier(Modifier::UNDERLINED);
    }
    style
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_languages_get_colours_and_unknown_ones_none() {
        let lines = highlight("fn main() {\n    let x = 1;\n}\n", "rust").unwrap();
        assert_eq!(lines.len(), 3);
        let colours: std::collections::BTreeSet<_> = lines
            .iter()
            .flatten()
            .filter_map(|s| s.style.fg)
            .map(|c| format!("{c:?}"))
            .collect();
        assert!(colours.len() > 1, "one colour only: {colours:?}");
        assert!(highlight("x", "no-such-language").is_none());
        assert!(highlight("echo hi", "sh").is_some());
    }
}
