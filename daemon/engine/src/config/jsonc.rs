//! JSON with comments and trailing commas, as people write settings by hand.
//!
//! Comments and trailing commas are blanked to spaces (newlines kept), so the result is
//! plain JSON whose every line and column is the one in the file — errors point at the
//! user's text, not at a rewritten copy.
//!
//! *Settings are JSON with comments*, blanked in place so every error keeps its line and column;
//! validation checks each key and provider separately to report every problem.

/// The text with `//` and `/* */` comments and trailing commas replaced by spaces.
pub fn strip(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = bytes.to_vec();
    let mut i = 0;
    let mut in_string = false;
    // The last significant comma outside strings, still waiting to learn what follows it.
    let mut pending_comma: Option<usize> = None;
    // The last significant byte before it: only a comma after a value can be trailing (one
    // after `:` or `[` is a mistake that must stay visible where it is).
    let mut prev: u8 = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if in_string {
            match b {
                b'\\' => i += 1,
                b'"' => {
                    in_string = false;
                    prev = b'"';
                }
                _ => {}
            }
            i += 1;
            continue;
        }
        match b {
            b'"' => {
                in_string = true;
                pending_comma = None;
            }
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    out[i] = b' ';
                    i += 1;
                }
                continue;
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                let start = i;
                i += 2;
                while i < bytes.len() && !(bytes[i] == b'*' && bytes.get(i + 1) == Some(&b'/')) {
                    i += 1;
                }
                let end = (i + 2).min(bytes.len());
                for (k, o) in out.iter_mut().enumerate().take(end).skip(start) {
                    if bytes[k] != b'\n' {
                        *o = b' ';
                    }
                }
                i = end;
                continue;
            }
            b',' => {
                let after_value = prev == b'"'
                    || prev == b'}'
                    || prev == b']'
                    || prev.is_ascii_alphanumeric()
                    || prev == b'.';
                pending_comma = after_value.then_some(i);
                prev = b',';
            }
            b'}' | b']' => {
                if let Some(c) = pending_comma.take() {
                    out[c] = b' ';
                }
                prev = b;
            }
            b' ' | b'\t' | b'\r' | b'\n' => {}
            _ => {
                pending_comma = None;
                prev = b;
            }
        }
        i += 1;
    }
    // Only ASCII bytes were replaced, by ASCII: still valid UTF-8.
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_and_trailing_commas_vanish_in_place() {
        let text = "{\n  // the model\n  \"model\": \"a//b\", /* inline */\n  \"x\": [1, 2,],\n}\n";
        let plain = strip(text);
        let v: serde_json::Value = serde_json::from_str(&plain).unwrap();
        assert_eq!(v["model"], "a//b");
        assert_eq!(v["x"], serde_json::json!([1, 2]));
        assert_eq!(plain.lines().count(), text.lines().count());
        assert_eq!(plain.find("\"model\""), text.find("\"model\""));
    }

    #[test]
    fn a_comma_after_a_colon_is_not_trailing() {
        let text = "{\n  \"model\": ,\n}";
        assert_eq!(strip(text), text);
    }

    #[test]
    fn strings_keep_their_slashes_and_commas() {
        let text = r#"{"a": "x, }", "b": "/* not */", "c": "\"//\""}"#;
        assert_eq!(strip(text), text);
    }
}
