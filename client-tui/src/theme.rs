//! The palette: every colour and emphasis the TUI uses, named by what it means.
//!
//! One home so that cells, overlays and the status line agree, and so that a change of taste
//! (or a light-background theme later) touches one file.

use ratatui::style::{Color, Modifier, Style};

pub(crate) fn dim() -> Style {
    Style::new().add_modifier(Modifier::DIM)
}

pub(crate) fn bold() -> Style {
    Style::new().add_modifier(Modifier::BOLD)
}

pub(crate) fn accent() -> Style {
    Style::new().fg(Color::Cyan)
}

pub(crate) fn user_prompt() -> Style {
    Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD)
}

pub(crate) fn ok() -> Style {
    Style::new().fg(Color::Green)
}

pub(crate) fn error() -> Style {
    Style::new().fg(Color::Red)
}

pub(crate) fn warning() -> Style {
    Style::new().fg(Color::Yellow)
}

pub(crate) fn diff_added() -> Style {
    Style::new().fg(Color::Green)
}

pub(crate) fn diff_removed() -> Style {
    Style::new().fg(Color::Red)
}

pub(crate) fn diff_hunk() -> Style {
    Style::new().fg(Color::Cyan)
}

pub(crate) fn inline_code() -> Style {
    Style::new().fg(Color::Magenta)
}

pub(crate) fn link() -> Style {
    Style::new()
        .fg(Color::Blue)
        .add_modifier(Modifier::UNDERLINED)
}

pub(crate) fn selected() -> Style {
    Style::new().add_modifier(Modifier::REVERSED)
}

pub(crate) fn border() -> Style {
    Style::new().fg(Color::DarkGray)
}
