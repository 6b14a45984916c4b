//! Custom slash commands and skills from the folders users already have, in Claude Code's
//! formats:
//!
//! - commands: `*.md` in `.stepper/commands/`, `.claude/commands/` (the project's), then
//!   `<config>/commands/` and `~/.claude/commands/` (the user's); a subfolder namespaces
//!   (`frontend/component.md` is `/frontend:component`). Front matter: `description`,
//!   `argument-hint`, `allowed-tools`, `model`.
//! - skills: `<name>/SKILL.md` in `.stepper/skills/`, `.claude/skills/`, `<config>/skills/`,
//!   `~/.claude/skills/`. Front matter: `name`, `description`, `allowed-tools`, `model`,
//!   `disable-model-invocation`, `user-invocable`, `argument-hint`.
//!
//! The first definition of a name wins, in that order. A broken file is a [`Problem`] with
//! its line; the others load.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A file larger than this is not a command or a skill.
const MAX_FILE: u64 = 256 * 1024;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    Text(String),
    List(Vec<String>),
}

impl Value {
    fn text(&self) -> String {
        match self {
            Value::Text(t) => t.clone(),
            Value::List(l) => l.join(", "),
        }
    }

    fn list(&self) -> Vec<String> {
        match self {
            Value::Text(t) => t
                .split(',')
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect(),
            Value::List(l) => l.clone(),
        }
    }
}

/// A Markdown file's YAML front matter (the flat subset these files use) and its body.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FrontMatter {
    pub fields: BTreeMap<String, Value>,
    pub body: String,
}

/// A problem in a file, at its line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub path: PathBuf,
    pub line: usize,
    pub message: String,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}: {}", self.path.display(), self.line, self.message)
    }
}

/// Parse `---` front matter: `key: value`, `key: [a, b]`, or `key:` followed by `- item`
/// lines. Without front matter the whole text is the body. `Err((line, why))`.
pub fn front_matter(text: &str) -> Result<FrontMatter, (usize, String)> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    let first = lines.next().unwrap_or("");
    if first.trim_end() != "---" {
        return Ok(FrontMatter {
            fields: BTreeMap::new(),
            body: text.to_string(),
        });
    }
    let mut fields = BTreeMap::new();
    let mut open_list: Option<String> = None;
    let mut line_no = 1;
    let mut closed = false;
    let mut consumed = first.len();
    for line in lines.by_ref() {
        line_no += 1;
        consumed += line.len();
        let trimmed = line.trim_end();
        if trimmed == "---" {
            closed = true;
            break;
        }
        if trimmed.trim().is_empty() || trimmed.trim_start().starts_with('#') {
            continue;
        }
        if let Some(item) = trimmed.trim_start().strip_prefix("- ") {
            let Some(key) = &open_list else {
                return Err((line_no, "a list item without a key above it".into()));
            };
            if let Some(Value::List(items)) = fields.get_mut(key) {
                items.push(unquote(item.trim()));
            }
            continue;
        }
        let Some((key, value)) = trimmed.split_once(':') else {
            return Err((
                line_no,
                format!("expected `key: value` in the front matter, found {trimmed:?}"),
            ));
        };
        let key = key.trim().to_string();
        if key.is_empty() || key.contains(' ') {
            return Err((line_no, format!("{key:?} is not a front matter key")));
        }
        let value = value.trim();
        open_list = None;
        let value = if value.is_empty() {
            open_list = Some(key.clone());
            Value::List(Vec::new())
        } else if let Some(inner) = value.strip_prefix('[').and_then(|v| v.strip_suffix(']')) {
            Value::List(
                inner
                    .split(',')
                    .map(|s| unquote(s.trim()))
                    .filter(|s| !s.is_empty())
                    .collect(),
            )
        } else {
            Value::Text(unquote(value))
        };
        fields.insert(key, value);
    }
    if !closed {
        return Err((1, "the front matter opened with --- never closes".into()));
    }
    Ok(FrontMatter {
        fields,
        body: text[consumed..].to_string(),
    })
}

fn unquote(s: &str) -> String {
    let s = s.trim();
    for q in ['"', '\''] {
        if s.len() >= 2 && s.starts_with(q) && s.ends_with(q) {
            return s[1..s.len() - 1].to_string();
        }
    }
    s.to_string()
}

/// A custom slash command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    /// Without its `/`: `review`, `frontend:component`.
    pub name: String,
    pub description: String,
    pub argument_hint: Option<String>,
    pub allowed_tools: Vec<String>,
    pub model: Option<String>,
    pub body: String,
    pub path: PathBuf,
    /// `project` or `user`.
    pub scope: &'static str,
}

/// A skill: a folder with a `SKILL.md`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    pub name: String,
    pub description: String,
    pub argument_hint: Option<String>,
    pub allowed_tools: Vec<String>,
    pub model: Option<String>,
    /// The model is not told of it; only the user can run it (`/name`).
    pub disable_model_invocation: bool,
    /// The user can run it as `/name`.
    pub user_invocable: bool,
    pub body: String,
    /// The skill's folder, where its bundled files are.
    pub dir: PathBuf,
    pub scope: &'static str,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Extensions {
    pub commands: Vec<Command>,
    pub skills: Vec<Skill>,
    pub problems: Vec<Problem>,
}

impl Extensions {
    pub fn command(&self, name: &str) -> Option<&Command> {
        self.commands.iter().find(|c| c.name == name)
    }

    pub fn skill(&self, name: &str) -> Option<&Skill> {
        self.skills.iter().find(|s| s.name == name)
    }
}

/// The folders commands and skills come from, first wins: (folder, scope).
pub fn roots(
    cwd: &Path,
    config_dir: &Path,
    home: Option<&Path>,
    kind: &str,
) -> Vec<(PathBuf, &'static str)> {
    let mut roots = vec![
        (cwd.join(".stepper").join(kind), "project"),
        (cwd.join(".claude").join(kind), "project"),
        (config_dir.join(kind), "user"),
    ];
    if let Some(home) = home {
        roots.push((home.join(".claude").join(kind), "user"));
    }
    roots
}

/// Every command and skill for a session in `cwd`.
pub fn load(cwd: &Path, config_dir: &Path, home: Option<&Path>) -> Extensions {
    let mut ext = Extensions::default();
    for (root, scope) in roots(cwd, config_dir, home, "commands") {
        let mut files = Vec::new();
        markdown_files(&root, &root, 0, &mut files);
        files.sort();
        for (path, name) in files {
            if ext.command(&name).is_some() {
                continue;
            }
            let Some(text) = read(&path, &mut ext.problems) else {
                continue;
            };
            match front_matter(&text) {
                Ok(fm) => ext.commands.push(Command {
                    description: fm
                        .field("description")
                        .unwrap_or_else(|| first_line(&fm.body)),
                    argument_hint: fm.field("argument-hint"),
                    allowed_tools: fm.list("allowed-tools"),
                    model: fm.field("model"),
                    body: fm.body,
                    name,
                    path,
                    scope,
                }),
                Err((line, message)) => ext.problems.push(Problem {
                    path,
                    line,
                    message,
                }),
            }
        }
    }
    for (root, scope) in roots(cwd, config_dir, home, "skills") {
        let Ok(entries) = std::fs::read_dir(&root) else {
            continue;
        };
        let mut dirs: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.join("SKILL.md").is_file())
            .collect();
        dirs.sort();
        for dir in dirs {
            let path = dir.join("SKILL.md");
            let Some(text) = read(&path, &mut ext.problems) else {
                continue;
            };
            let fm = match front_matter(&text) {
                Ok(fm) => fm,
                Err((line, message)) => {
                    ext.problems.push(Problem {
                        path,
                        line,
                        message,
                    });
                    continue;
                }
            };
            let folder = dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let name = fm.field("name").unwrap_or(folder);
            let Some(description) = fm.field("description") else {
                ext.problems.push(Problem {
                    path,
                    line: 1,
                    message: "a skill needs a description (front matter `description:`): it is \
                              how the model knows when to use it"
                        .into(),
                });
                continue;
            };
            if ext.skill(&name).is_some() {
                continue;
            }
            let flag = |key: &str, default: bool| {
                fm.field(key)
                    .map_or(default, |v| v.eq_ignore_ascii_case("true"))
            };
            ext.skills.push(Skill {
                description,
                argument_hint: fm.field("argument-hint"),
                allowed_tools: fm.list("allowed-tools"),
                model: fm.field("model"),
                disable_model_invocation: flag("disable-model-invocation", false),
                user_invocable: flag("user-invocable", true),
                body: fm.body.clone(),
                name,
                dir,
                scope,
            });
        }
    }
    ext
}

impl FrontMatter {
    pub(crate) fn field(&self, key: &str) -> Option<String> {
        self.fields
            .get(key)
            .map(Value::text)
            .filter(|v| !v.is_empty())
    }

    pub(crate) fn list(&self, key: &str) -> Vec<String> {
        self.fields.get(key).map(Value::list).unwrap_or_default()
    }
}

/// `*.md` below `root`, with their command names (`sub/name.md` → `sub:name`).
pub(crate) fn markdown_files(
    root: &Path,
    dir: &Path,
    depth: usize,
    out: &mut Vec<(PathBuf, String)>,
) {
    if depth > 4 {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            markdown_files(root, &path, depth + 1, out);
        } else if path.extension().is_some_and(|e| e == "md")
            && let Ok(relative) = path.strip_prefix(root)
        {
            let name = relative
                .with_extension("")
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join(":");
            out.push((path, name));
        }
    }
}

pub(crate) fn read(path: &Path, problems: &mut Vec<Problem>) -> Option<String> {
    match std::fs::metadata(path) {
        Ok(m) if m.len() > MAX_FILE => {
            problems.push(Problem {
                path: path.to_path_buf(),
                line: 1,
                message: format!(
                    "{} bytes is over the {MAX_FILE} a command or skill may have",
                    m.len()
                ),
            });
            None
        }
        Ok(_) => match std::fs::read_to_string(path) {
            Ok(text) => Some(text),
            Err(e) => {
                problems.push(Problem {
                    path: path.to_path_buf(),
                    line: 1,
                    message: format!("cannot read it: {e}"),
                });
                None
            }
        },
        Err(_) => None,
    }
}

fn first_line(body: &str) -> String {
    body.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("")
        .trim_start_matches('#')
        .trim()
        .chars()
        .take(100)
        .collect()
}

/// What identifies the files [`load`] would read: each folder's and file's path, length and
/// modification time. Equal fingerprints mean an equal listing, so it is cached on them.
pub fn fingerprint(
    cwd: &Path,
    config_dir: &Path,
    home: Option<&Path>,
) -> Vec<(PathBuf, u64, u128)> {
    let mut seen = Vec::new();
    let mut stat = |path: &Path| {
        if let Ok(meta) = std::fs::metadata(path) {
            let modified = meta
                .modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_nanos());
            seen.push((path.to_path_buf(), meta.len(), modified));
            true
        } else {
            false
        }
    };
    for kind in ["commands", "skills"] {
        for (root, _) in roots(cwd, config_dir, home, kind) {
            if !stat(&root) {
                continue;
            }
            let mut stack = vec![(root, 0)];
            while let Some((dir, depth)) = stack.pop() {
                let Ok(entries) = std::fs::read_dir(&dir) else {
                    continue;
                };
                for entry in entries.flatten() {
                    let path = entry.path();
                    stat(&path);
                    if depth < 4 && entry.file_type().is_ok_and(|t| t.is_dir()) {
                        stack.push((path, depth + 1));
                    }
                }
            }
        }
    }
    seen.sort();
    seen
}

/// A command's or skill's body with its arguments in place, as Claude Code does it:
/// `$ARGUMENTS` is all of them, `$1`…`$9` one each, `$ARGUMENTS[N]` one by 0-based index.
/// A body that takes no arguments gets them appended.
pub fn substitute(body: &str, arguments: &str) -> String {
    let words = split_arguments(arguments);
    let mut out = String::with_capacity(body.len() + arguments.len());
    let mut used = false;
    let mut rest = body;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        if let Some(tail) = after.strip_prefix("ARGUMENTS") {
            if let Some(index) = tail
                .strip_prefix('[')
                .and_then(|t| t.split_once(']'))
                .and_then(|(n, r)| n.parse::<usize>().ok().map(|n| (n, r)))
            {
                out.push_str(words.get(index.0).map_or("", String::as_str));
                rest = index.1;
            } else {
                out.push_str(arguments);
                rest = tail;
            }
            used = true;
            continue;
        }
        match after.chars().next().and_then(|c| c.to_digit(10)) {
            Some(n) if n > 0 => {
                out.push_str(words.get(n as usize - 1).map_or("", String::as_str));
                rest = &after[1..];
                used = true;
            }
            _ => {
                out.push('$');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    if !used && !arguments.trim().is_empty() {
        out.push_str("\n\nARGUMENTS: ");
        out.push_str(arguments.trim());
    }
    out
}

/// Words as a shell would split them: quotes group, backslash escapes.
fn split_arguments(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quote: Option<char> = None;
    let mut any = false;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, '"' | '\'') => {
                quote = Some(c);
                any = true;
            }
            (None, '\\') => {
                if let Some(next) = chars.next() {
                    word.push(next);
                    any = true;
                }
            }
            (None, c) if c.is_whitespace() => {
                if any || !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                    any = false;
                }
            }
            (None, c) => word.push(c),
        }
    }
    if any || !word.is_empty() {
        words.push(word);
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn front_matter_flat_lists_and_problems() {
        let fm = front_matter(
            "---\ndescription: Review a file\nallowed-tools: [Bash(git diff:*), Read]\nmodel: \"anthropic/x\"\ntags:\n  - a\n  - b\n---\nBody $ARGUMENTS\n",
        )
        .unwrap();
        assert_eq!(fm.field("description").unwrap(), "Review a file");
        assert_eq!(fm.list("allowed-tools"), ["Bash(git diff:*)", "Read"]);
        assert_eq!(fm.field("model").unwrap(), "anthropic/x");
        assert_eq!(fm.list("tags"), ["a", "b"]);
        assert_eq!(fm.body, "Body $ARGUMENTS\n");
        assert_eq!(
            front_matter("no front matter").unwrap().body,
            "no front matter"
        );
        assert_eq!(front_matter("---\nname: x\n").unwrap_err().0, 1);
        assert_eq!(
            front_matter("---\nname: x\njust words\n---\n")
                .unwrap_err()
                .0,
            3
        );
    }

    #[test]
    fn arguments_in_place() {
        assert_eq!(substitute("Fix #$ARGUMENTS now", "123"), "Fix #123 now");
        assert_eq!(
            substitute(
                "PR $1 with priority $2, all: $ARGUMENTS",
                "456 \"very high\""
            ),
            "PR 456 with priority very high, all: 456 \"very high\""
        );
        assert_eq!(
            substitute("first $ARGUMENTS[0], cost $5", "a b"),
            "first a, cost "
        );
        assert_eq!(substitute("price in $ and $x", ""), "price in $ and $x");
        assert_eq!(
            substitute("Review this.", "src/lib.rs"),
            "Review this.\n\nARGUMENTS: src/lib.rs"
        );
    }

    #[test]
    fn commands_and_skills_from_every_folder_first_wins() {
        let tmp = tempfile::tempdir().unwrap();
        let (cwd, config, home) = (
            tmp.path().join("p"),
            tmp.path().join("c"),
            tmp.path().join("h"),
        );
        write(
            &cwd.join(".stepper/commands/review.md"),
            "---\ndescription: ours\n---\nReview $1\n",
        );
        write(&cwd.join(".claude/commands/review.md"), "theirs\n");
        write(
            &cwd.join(".claude/commands/frontend/component.md"),
            "Make a component\n",
        );
        write(
            &home.join(".claude/commands/broken.md"),
            "---\ndescription: x\n",
        );
        write(
            &config.join("skills/pdf/SKILL.md"),
            "---\nname: pdf\ndescription: Fill PDF forms\ndisable-model-invocation: true\n---\nUse forms.py\n",
        );
        write(
            &home.join(".claude/skills/nodesc/SKILL.md"),
            "---\nname: nodesc\n---\nx\n",
        );
        let ext = load(&cwd, &config, Some(&home));
        let names: Vec<&str> = ext.commands.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["review", "frontend:component"]);
        assert_eq!(ext.command("review").unwrap().description, "ours");
        assert_eq!(
            ext.command("frontend:component").unwrap().description,
            "Make a component"
        );
        let pdf = ext.skill("pdf").unwrap();
        assert!(pdf.disable_model_invocation && pdf.user_invocable);
        assert_eq!(pdf.scope, "user");
        assert_eq!(ext.problems.len(), 2, "{:?}", ext.problems);
        assert!(ext.problems.iter().any(|p| p.path.ends_with("broken.md")));
        assert!(
            ext.problems
                .iter()
                .any(|p| p.message.contains("needs a description"))
        );

        let before = fingerprint(&cwd, &config, Some(&home));
        assert_eq!(before, fingerprint(&cwd, &config, Some(&home)));
        write(&cwd.join(".stepper/commands/new.md"), "x");
        assert_ne!(before, fingerprint(&cwd, &config, Some(&home)));
    }
}
