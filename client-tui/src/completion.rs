//! The completion popup: slash commands at the start of the input, `@file` mentions
//! anywhere, from the paths the core sent.
//!
//! The popup is derived from the input on every edit, so it can never disagree with what is
//! typed; only the selection and an Esc dismissal are state.

use ratatui::text::{Line, Span};

use crate::command::COMMANDS;
use crate::theme;
use crate::wrap::{str_width, truncate};

const MAX_ITEMS: usize = 8;

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Kind {
    Slash,
    File,
}

#[derive(Debug, Clone)]
pub(crate) struct Item {
    pub label: String,
    pub detail: String,
}

#[derive(Debug, Clone)]
pub(crate) struct Popup {
    pub kind: Kind,
    pub items: Vec<Item>,
    pub selected: usize,
    /// The byte range of the input the accepted item replaces.
    pub start: usize,
    pub end: usize,
}

/// The popup for `text` with the cursor at `cursor`, if the word at the cursor asks for one.
pub(crate) fn popup_for(
    text: &str,
    cursor: usize,
    files: &[String],
    more: &[crate::CommandEntry],
) -> Option<Popup> {
    let before = &text[..cursor];
    if before.starts_with('/') && !before.contains(char::is_whitespace) {
        let own = COMMANDS
            .iter()
            .map(|c| (c.name.to_string(), c.help.to_string()));
        let theirs = more
            .iter()
            .map(|c| (format!("/{}", c.name), c.description.clone()))
            .filter(|(name, _)| !COMMANDS.iter().any(|c| c.name == name));
        let items: Vec<Item> = own
            .chain(theirs)
            .filter(|(name, _)| name.starts_with(before))
            .map(|(label, detail)| Item { label, detail })
            .collect();
        return (!items.is_empty()).then_some(Popup {
            kind: Kind::Slash,
            items,
            selected: 0,
            start: 0,
            end: word_end(text, cursor),
        });
    }
    let start = before.rfind(char::is_whitespace).map_or(0, |i| {
        i + before[i..].chars().next().map_or(1, char::len_utf8)
    });
    let word = &before[start..];
    let query = word.strip_prefix('@')?;
    let items: Vec<Item> = rank(files, query)
        .into_iter()
        .take(MAX_ITEMS)
        .map(|f| Item {
            label: format!("@{f}"),
            detail: String::new(),
        })
        .collect();
    (!items.is_empty()).then_some(Popup {
        kind: Kind::File,
        items,
        selected: 0,
        start,
        end: word_end(text, cursor),
    })
}

/// Where the word under the cursor ends: the accepted item replaces it up to there.
fn word_end(text: &str, cursor: usize) -> usize {
    text[cursor..]
        .find(char::is_whitespace)
        .map_or(text.len(), |i| cursor + i)
}

/// Paths matching `query`: prefix matches of the path or its file name first, then
/// substrings, then subsequences (fuzzy), each group shortest first.
fn rank<'a>(files: &'a [String], query: &str) -> Vec<&'a str> {
    let q = query.to_lowercase();
    let mut scored: Vec<(u8, usize, &str)> = files
        .iter()
        .filter_map(|f| {
            let lower = f.to_lowercase();
            let name = lower.rsplit('/').next().unwrap_or(&lower);
            let score = if lower.starts_with(&q) || name.starts_with(&q) {
                0
            } else if lower.contains(&q) {
                1
            } else if is_subsequence(&q, &lower) {
                2
            } else {
                return None;
            };
            Some((score, f.len(), f.as_str()))
        })
        .collect();
    scored.sort();
    scored.into_iter().map(|(_, _, f)| f).collect()
}

fn is_subsequence(needle: &str, hay: &str) -> bool {
    let mut hay = hay.chars();
    needle.chars().all(|c| hay.any(|h| h == c))
}

impl Popup {
    pub fn lines(&self, width: u16) -> Vec<Line<'static>> {
        let width = usize::from(width);
        let label_w = self
            .items
            .iter()
            .map(|i| str_width(&i.label))
            .max()
            .unwrap_or(0)
            .min(width / 2)
            .max(1);
        self.items
            .iter()
            .take(MAX_ITEMS)
            .enumerate()
            .map(|(n, item)| {
                let label = truncate(&item.label, label_w);
                let pad = " ".repeat(label_w.saturating_sub(str_width(&label)));
                let detail = truncate(&item.detail, width.saturating_sub(label_w + 4));
                let mut spans = vec![
                    Span::raw("  "),
                    Span::styled(format!("{label}{pad}"), theme::accent()),
                    Span::raw("  "),
                    Span::styled(detail, theme::dim()),
                ];
                if n == self.selected {
                    spans = spans
                        .into_iter()
                        .map(|s| s.patch_style(theme::selected()))
                        .collect();
                }
                Line::from(spans)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slash_commands_complete_by_prefix_until_a_space() {
        let p = popup_for("/mo", 3, &[], &[]).unwrap();
        let labels: Vec<_> = p.items.iter().map(|i| i.label.as_str()).collect();
        assert_eq!(labels, ["/model", "/mode"]);
        assert!(popup_for("/model x", 8, &[], &[]).is_none());
        assert!(popup_for("/zzz", 4, &[], &[]).is_none());
    }

    #[test]
    fn files_rank_prefix_then_substring_then_fuzzy() {
        let files: Vec<String> = ["src/main.rs", "src/app.rs", "docs/mainline.md", "README.md"]
            .into_iter()
            .map(String::from)
            .collect();
        let p = popup_for("look at @main", 13, &files, &[]).unwrap();
        let labels: Vec<_> = p.items.iter().map(|i| i.label.as_str()).collect();
        assert_eq!(labels, ["@src/main.rs", "@docs/mainline.md"]);
        assert_eq!((p.start, p.end), (8, 13));
        let p = popup_for("@sapp", 5, &files, &[]).unwrap();
        assert_eq!(p.items[0].label, "@src/app.rs");
        assert!(popup_for("no mention", 10, &files, &[]).is_none());
    }

    #[test]
    fn labels_line_up_by_display_width() {
        let p = Popup {
            kind: Kind::File,
            items: ["@文档/说明.md", "@a.rs"]
                .into_iter()
                .map(|l| Item {
                    label: l.into(),
                    detail: "x".into(),
                })
                .collect(),
            selected: 0,
            start: 0,
            end: 0,
        };
        let cols: Vec<usize> = p
            .lines(60)
            .iter()
            .map(|l| {
                let s = l.to_string();
                str_width(&s[..s.rfind('x').unwrap()])
            })
            .collect();
        assert_eq!(cols[0], cols[1], "details start in one column");
    }
}
