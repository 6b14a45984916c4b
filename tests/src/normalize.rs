//! What a test saw, made the same on every machine and every run so it can be a snapshot:
//! the test's temp folders become `$HOME`, `$PROJECT`…, ids `[id]`, times `[time]`, the
//! version `[version]`, pids `[pid]`. One [`Normalizer`] serves both what the CLI prints
//! (jj's `TestEnvironment::normalize_output`) and what stepper sends the model (codex's
//! `context_snapshot`), so a placeholder means the same thing in every snapshot.

use std::path::Path;
use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

/// Replaces what differs between machines and runs; see [`crate::TestEnv::normalizer`].
#[derive(Debug, Clone)]
pub struct Normalizer {
    /// Literal text and its placeholder, longest first so a folder inside another is named
    /// by the inner one.
    literals: Vec<(String, String)>,
}

/// A pattern and what it becomes.
struct Rule {
    pattern: Regex,
    with: &'static str,
}

fn rules(list: &[(&str, &'static str)]) -> Vec<Rule> {
    list.iter()
        .map(|(pattern, with)| Rule {
            pattern: Regex::new(pattern).expect("a normalizing pattern"),
            with,
        })
        .collect()
}

/// Ids: UUIDs and the short ids the CLI shows (a prefix of an id's random part); run after
/// the times, whose digits they would otherwise take.
static IDS: LazyLock<Vec<Rule>> = LazyLock::new(|| {
    rules(&[
        (
            r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b",
            "[id]",
        ),
        (r"\b[0-9a-f]{8,32}\b", "[id]"),
    ])
});

/// What only a program's own output has: its version, pids, times and durations.
static OUTPUT: LazyLock<Vec<Rule>> = LazyLock::new(|| {
    rules(&[
        // `stepper --version`: the version, the commit and the build date.
        (
            r"\b\d+\.\d+\.\d+(?:-[0-9A-Za-z.]+)? \([^()]*, built \d{4}-\d\d-\d\d\)",
            "[version]",
        ),
        (
            &format!(r"\b{}\b", regex::escape(env!("CARGO_PKG_VERSION"))),
            "[version]",
        ),
        (r"\bpid \d+", "pid [pid]"),
        (r#""pid": ?\d+"#, r#""pid": [pid]"#),
        (
            r"\b\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)?",
            "[time]",
        ),
        // A time in a file name (`stepper.db.damaged-20261205T112233`).
        (r"\b\d{8}T\d{6}Z?\b", "[time]"),
        (r"\b\d+(?:\.\d+)? ?(?:ms|µs|s)\b", "[time]"),
    ])
});

/// A column of a table: a short id or an age, and the spaces that pad it. Replaced keeping
/// the column's width, so the table stays aligned whatever the digits were.
static COLUMNS: LazyLock<Vec<(Regex, &str)>> = LazyLock::new(|| {
    [
        // `sessions`' age, right-aligned: the padding before it.
        (r"( +)\b\d+[smhd] ago\b", "[time] ago"),
        // A short id, left-aligned: the padding after it.
        (r"\b[0-9a-f]{8,32}( {2,})", "[id]"),
    ]
    .into_iter()
    .map(|(pattern, with)| (Regex::new(pattern).expect("a column pattern"), with))
    .collect()
});

/// `text` with each column of [`COLUMNS`] replaced, its width kept (one space at least).
fn columns(text: String) -> String {
    COLUMNS.iter().fold(text, |text, (pattern, with)| {
        pattern
            .replace_all(&text, |found: &regex::Captures| {
                let width = found[0].chars().count();
                let pad = " ".repeat(width.saturating_sub(with.len()).max(1));
                if found[0].starts_with(' ') {
                    format!("{pad}{with}")
                } else {
                    format!("{with}{pad}")
                }
            })
            .into_owned()
    })
}

/// What a request's environment block says of the machine and the day.
static REQUEST: LazyLock<Vec<Rule>> = LazyLock::new(|| {
    rules(&[
        (r"Today's date: [^\\]*", "Today's date: [date]"),
        (r"- Platform: [^\\]*", "- Platform: [platform]"),
        (r"  [0-9a-f]{7,12} ", "  [commit] "),
    ])
});

fn apply(text: String, rules: &[Rule]) -> String {
    rules.iter().fold(text, |text, rule| {
        rule.pattern.replace_all(&text, rule.with).into_owned()
    })
}

impl Normalizer {
    /// Replacing each folder (as given, and as the file system resolves it) by its name.
    pub fn new(folders: &[(&Path, &str)]) -> Normalizer {
        let mut literals = Vec::new();
        for (folder, name) in folders {
            let shown = folder.display().to_string();
            if let Ok(real) = std::fs::canonicalize(folder) {
                let real = real.display().to_string();
                if real != shown {
                    literals.push((real, name.to_string()));
                }
            }
            literals.push((shown, name.to_string()));
        }
        Normalizer { literals }.sorted()
    }

    /// Also `text`, wherever it appears, as `name` (an address, a value the test made).
    pub fn with(mut self, text: impl Into<String>, name: &str) -> Normalizer {
        self.literals.push((text.into(), name.to_string()));
        self.sorted()
    }

    fn sorted(mut self) -> Normalizer {
        self.literals
            .sort_by_key(|(text, _)| std::cmp::Reverse(text.len()));
        self
    }

    fn places(&self, text: &str) -> String {
        self.literals
            .iter()
            .fold(text.to_string(), |text, (literal, name)| {
                text.replace(literal, name)
            })
    }

    /// What a program printed.
    pub fn text(&self, text: &str) -> String {
        let text = apply(columns(self.places(text)), &OUTPUT);
        apply(text, &IDS)
    }

    /// A request body as the fake model server received it: its structure kept (system
    /// prompt, tools with their schemas, messages), the project's path, the day, the OS,
    /// git's commits and any id replaced.
    pub fn request(&self, body: &Value) -> Value {
        let text = apply(self.places(&body.to_string()), &REQUEST);
        let text = apply(text, &IDS[..1]);
        serde_json::from_str(&text).expect("a normalized request is still JSON")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn normalizer() -> Normalizer {
        Normalizer::new(&[(Path::new("/tmp/stpAb12"), "$HOME")])
            .with("http://127.0.0.1:4242", "$FAKE")
    }

    #[test]
    fn places_versions_pids_and_times() {
        let text = "stepper 0.1.0 (f26fd23397d7, built 2026-12-06)\n\
                    stepperd is running (pid 1357) at /tmp/stpAb12/stepperd.sock\n\
                    asked http://127.0.0.1:4242/v1 in 12 ms; copy at /tmp/stpAb12/db.damaged-20261205T112233\n\
                    at 2026-12-06T00:24:39.123Z\n";
        insta::assert_snapshot!(normalizer().text(text), @r"
        stepper [version]
        stepperd is running (pid [pid]) at $HOME/stepperd.sock
        asked $FAKE/v1 in [time]; copy at $HOME/db.damaged-[time]
        at [time]
        ");
    }

    #[test]
    fn ids_and_table_columns_keep_their_width() {
        let text = "ID        STATUS   UPDATED  TITLE\n\
                    0a1b2c3d  idle      12s ago  one\n\
                    9f8e7d6c  idle       3h ago  two\n\
                    session 0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b\n";
        insta::assert_snapshot!(normalizer().text(text), @r"
        ID        STATUS   UPDATED  TITLE
        [id]      idle   [time] ago  one
        [id]      idle   [time] ago  two
        session [id]
        ");
    }

    #[test]
    fn a_request_keeps_its_structure() {
        let body = serde_json::json!({
            "system": "- Working folder: /tmp/stpAb12\n- Platform: linux (Debian 12)\n",
            "messages": [{"role": "user", "content": "Today's date: 2026-12-06\nRecent commits:\n  f26fd23 start\n"}],
        });
        let shown = serde_json::to_string_pretty(&normalizer().request(&body)).unwrap();
        insta::assert_snapshot!(shown, @r#"
        {
          "messages": [
            {
              "content": "Today's date: [date]\nRecent commits:\n  [commit] start\n",
              "role": "user"
            }
          ],
          "system": "- Working folder: $HOME\n- Platform: [platform]\n"
        }
        "#);
    }
}
