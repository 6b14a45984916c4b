//! Syntax highlighting of fenced code blocks, through syntect's bundled grammars.
//!
//! The grammars and theme load once, lazily, on the first code block (tens of milliseconds
//! in a release build), so a session without code never pays for them.

use std::sync::OnceLock;

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Span;
use syntect::easy::HighlightLines;
use syntect::highlighting::{FontStyle, Theme, ThemeSet};
use syntect::parsing::SyntaxSet;
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
    let lang = lang.split([' ', ',', '{']).next().unwrap_or("").trim();
    if lang.is_empty() {
        return None;
    }
    let set = syntaxes();
    let syntax = set
        .find_syntax_by_token(token(&lang.to_ascii_lowercase()))
        .or_else(|| set.find_syntax_by_extension(lang))?;
    let mut h = HighlightLines::new(syntax, theme());
    let mut lines = Vec::new();
    for line in LinesWithEndings::from(code) {
        let Ok(ranges) = h.highlight_line(line, set) else {
            return None;
        };
        let spans = ranges
            .into_iter()
            .filter_map(|(style, text)| {
                let text = text.trim_end_matches(['\n', '\r']);
                (!text.is_empty()).then(|| Span::styled(text.to_string(), convert(style)))
            })
            .collect();
        lines.push(spans);
    }
    Some(lines)
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
