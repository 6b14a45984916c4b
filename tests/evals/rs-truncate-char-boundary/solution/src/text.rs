/// Shortens `s` to at most `max` characters. A string that has to be cut ends with `…`
/// (which counts as one of the `max` characters); one that fits is returned unchanged.
pub fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    if max == 0 {
        return String::new();
    }
    // The byte offset where the (max - 1)th character ends.
    let cut = s.char_indices().nth(max - 1).map_or(s.len(), |(i, _)| i);
    let mut out = String::with_capacity(cut + '…'.len_utf8());
    out.push_str(&s[..cut]);
    out.push('…');
    out
}

/// Pads `s` with spaces on the right to `width` characters.
pub fn pad_right(s: &str, width: usize) -> String {
    let len = s.chars().count();
    let mut out = s.to_string();
    out.push_str(&" ".repeat(width.saturating_sub(len)));
    out
}
