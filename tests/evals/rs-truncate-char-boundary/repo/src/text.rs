/// Shortens `s` to at most `max` characters. A string that has to be cut ends with `…`
/// (which counts as one of the `max` characters); one that fits is returned unchanged.
pub fn truncate(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    if max == 0 {
        return String::new();
    }
    let mut out = String::with_capacity(max + 2);
    out.push_str(&s[..max - 1]);
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
