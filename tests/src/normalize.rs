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
        // `sessions`' right-aligned age, padding and all: its width follows the digits.
        (r" *\b\d+[smhd] ago\b", "  [time] ago"),
        (r"\b\d+(?:\.\d+)? ?(?:ms|µs|s)\b", "[time]"),
    ])
});

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
        let text = apply(self.places(text), &OUTPUT);
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
