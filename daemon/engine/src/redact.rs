//! Known secrets taken out of what tools print, before it is stored, shown or sent to a
//! model: a command that prints the environment, a config file or a log must not carry the
//! daemon's provider keys into the event log and the provider's request.

use std::collections::HashMap;

/// What a secret is replaced with.
pub const REDACTED: &str = "[redacted]";

/// The secrets to take out. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    secrets: std::sync::Arc<Vec<String>>,
}

impl Redactor {
    /// Secrets shorter than 8 characters are ignored: they would scrub ordinary text.
    pub fn new(mut secrets: Vec<String>) -> Redactor {
        secrets.retain(|s| s.len() >= 8);
        // Longest first: a secret that contains another is replaced whole.
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        secrets.dedup();
        Redactor {
            secrets: std::sync::Arc::new(secrets),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.secrets.is_empty()
    }

    /// `text` with every secret replaced.
    pub fn redact(&self, text: &str) -> String {
        let mut out = text.to_string();
        for secret in self.secrets.iter() {
            if out.contains(secret.as_str()) {
                out = out.replace(secret.as_str(), REDACTED);
            }
        }
        out
    }

    /// The length of the longest tail of `text` that is the start (not the whole) of a
    /// secret; 0 when none is.
    fn open_tail(&self, text: &str) -> usize {
        let mut longest = 0;
        for secret in self.secrets.iter() {
            let most = text.len().min(secret.len() - 1);
            for len in (longest + 1..=most).rev() {
                if secret.is_char_boundary(len)
                    && text.is_char_boundary(text.len() - len)
                    && text.ends_with(&secret[..len])
                {
                    longest = len;
                    break;
                }
            }
        }
        longest
    }

    /// A redactor for streamed pieces, which keeps back what could be the start of a secret
    /// until the next piece (or the end) shows it is not.
    pub fn stream(&self) -> StreamRedactor {
        StreamRedactor {
            redactor: self.clone(),
            held: HashMap::new(),
        }
    }
}

/// Redacts the streamed output of several calls, each by its id.
#[derive(Debug)]
pub struct StreamRedactor {
    redactor: Redactor,
    held: HashMap<String, String>,
}

impl StreamRedactor {
    /// What of `piece` (after what was held for `id`) can go out now.
    pub fn push(&mut self, id: &str, piece: &str) -> String {
        if self.redactor.is_empty() {
            return piece.to_string();
        }
        let mut text = self.held.remove(id).unwrap_or_default();
        text.push_str(piece);
        let text = self.redactor.redact(&text);
        // Hold back the longest tail that is the start of a secret: only it could still
        // become one, so ordinary text goes out at once.
        let cut = text.len() - self.redactor.open_tail(&text);
        let (now, later) = text.split_at(cut);
        if !later.is_empty() {
            self.held.insert(id.to_string(), later.to_string());
        }
        now.to_string()
    }

    /// The end of `id`'s output: what was held back, redacted.
    pub fn finish(&mut self, id: &str) -> String {
        self.held
            .remove(id)
            .map(|rest| self.redactor.redact(&rest))
            .unwrap_or_default()
    }

    /// Every call that still holds something, with it.
    pub fn finish_all(&mut self) -> Vec<(String, String)> {
        let ids: Vec<String> = self.held.keys().cloned().collect();
        ids.into_iter()
            .map(|id| {
                let rest = self.finish(&id);
                (id, rest)
            })
            .filter(|(_, rest)| !rest.is_empty())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "sk-ant-0123456789abcdef";

    #[test]
    fn a_secret_is_replaced_wherever_it_is() {
        let r = Redactor::new(vec![KEY.into(), "short".into()]);
        assert_eq!(
            r.redact(&format!("ANTHROPIC_API_KEY={KEY}\nagain {KEY} short")),
            "ANTHROPIC_API_KEY=[redacted]\nagain [redacted] short"
        );
    }

    #[test]
    fn a_secret_split_between_pieces_is_caught() {
        let r = Redactor::new(vec![KEY.into()]);
        let mut s = r.stream();
        let text = format!("before {KEY} after — ü");
        // Every split point, including inside the secret and inside a multi-byte char.
        for at in (0..=text.len()).filter(|&i| text.is_char_boundary(i)) {
            let mut out = s.push("c", &text[..at]);
            out.push_str(&s.push("c", &text[at..]));
            out.push_str(&s.finish("c"));
            assert_eq!(out, "before [redacted] after — ü", "split at {at}");
        }
        // Pieces byte by byte (as chars).
        let mut out = String::new();
        for ch in text.chars() {
            out.push_str(&s.push("d", &ch.to_string()));
        }
        out.extend(s.finish_all().into_iter().map(|(_, rest)| rest));
        assert_eq!(out, "before [redacted] after — ü");
    }

    #[test]
    fn only_what_could_start_a_secret_is_held_back() {
        let r = Redactor::new(vec![KEY.into()]);
        let mut s = r.stream();
        assert_eq!(s.push("c", "thinking it over"), "thinking it over");
        assert_eq!(s.push("c", "; the key: sk-an"), "; the key: ");
        assert_eq!(s.push("c", "swer"), "sk-answer");
        assert_eq!(s.push("c", " is s"), " is ");
        assert_eq!(s.finish("c"), "s");
    }

    #[test]
    fn without_secrets_pieces_pass_at_once() {
        let mut s = Redactor::new(vec![]).stream();
        assert_eq!(s.push("c", "abc"), "abc");
        assert_eq!(s.finish("c"), "");
    }
}
