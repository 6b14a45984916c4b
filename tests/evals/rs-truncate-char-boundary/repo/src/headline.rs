use crate::text::{pad_right, truncate};

pub struct Entry {
    pub source: String,
    pub title: String,
}

/// `[source] title`, the source padded to `source_width` and the title cut to fit `width`
/// characters in all.
pub fn format_headline(entry: &Entry, source_width: usize, width: usize) -> String {
    let source = pad_right(&format!("[{}]", entry.source), source_width);
    let room = width.saturating_sub(source.chars().count() + 1);
    let title = truncate(entry.title.trim(), room);
    format!("{source} {title}")
}

/// Parses a `source<TAB>title` line.
pub fn parse_line(line: &str) -> Option<Entry> {
    let (source, title) = line.split_once('\t')?;
    Some(Entry {
        source: source.trim().to_string(),
        title: title.to_string(),
    })
}
