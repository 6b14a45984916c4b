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
//!
//! Front matter is read as YAML (serde_yaml_ng), with errors at the file's line. `substitute` fills
//! in arguments, and `fingerprint` (a stat of every folder and file involved) is what the daemon's
//! cache is keyed on.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A file larger than this is not a command or a skill.
const MAX_FILE: u64 = 256 * 1024;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    Text(String),
    List(Vec<String>),
    /// A nested map (`hooks:` in Claude Code's agents and skills), kept as JSON: it is
    /// neither text nor a list, and a file that has one still loads.
    Map(serde_json::Value),
}

impl Value {
    fn text(&self) -> String {
        match self {
            Value::Text(t) => t.clone(),
            Value::List(l) => l.join(", "),
            Value::Map(_) => String::new(),
        }
    }

    /// A list, or a text of comma-separated items as Claude Code takes them
    /// (`tools: Read, Grep`).
    fn list(&self) -> Vec<String> {
        match self {
            Value::Text(t) => t
                .split(',')
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect(),
            Value::List(l) => l.clone(),
            Value::Map(_) => Vec::new(),
        }
    }
}

/// A Markdown file's YAML front matter and its body.
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

/// Parse `---` front matter as YAML, the way Claude Code reads these files: block scalars
/// (`>`, `|`), lists in either style, quoted strings, nested maps (kept as [`Value::Map`]).
/// Without front matter the whole text is the body. `Err((line, why))`, the line counted
/// in `text`.
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
    let mut yaml_end = first.len();
    let mut closed = None;
    for line in lines {
        if line.trim_end() == "---" {
            closed = Some(yaml_end + line.len());
            break;
        }
        yaml_end += line.len();
    }
    let Some(body_start) = closed else {
        return Err((1, "the front matter opened with --- never closes".into()));
    };
    Ok(FrontMatter {
        fields: yaml_fields(&text[first.len()..yaml_end])?,
        body: text[body_start..].to_string(),
    })
}

/// The fields of the YAML between the `---` lines (which starts on the file's line 2).
fn yaml_fields(yaml: &str) -> Result<BTreeMap<String, Value>, (usize, String)> {
    let parsed = serde_yaml_ng::from_str::<serde_yaml_ng::Value>(yaml).or_else(|error| {
        // As Claude Code does, a value that only fails for a `: ` or a leading `@` in it
        // (`description: Use when: the user asks`) is read as the text it plainly is.
        serde_yaml_ng::from_str(&quote_plain_values(yaml)).map_err(|_| yaml_error(yaml, &error))
    })?;
    let map = match parsed {
        serde_yaml_ng::Value::Null => return Ok(BTreeMap::new()),
        serde_yaml_ng::Value::Mapping(map) => map,
        _ => {
            return Err((
                2,
                "the front matter is not `key: value` lines — write each field as `name: value`"
                    .into(),
            ));
        }
    };
    Ok(map
        .into_iter()
        .filter_map(|(key, value)| Some((scalar(&key)?, field_value(value))))
        .collect())
}

/// A YAML error at the file's line: where the construct it was reading began (`while
/// scanning a quoted scalar at line 3`), else where it stopped; a repeated key at its
/// second occurrence.
fn yaml_error(yaml: &str, error: &serde_yaml_ng::Error) -> (usize, String) {
    let text = error.to_string();
    let why = text.split(" at line ").next().unwrap_or(&text);
    let context = text
        .split_once(", while ")
        .and_then(|(_, context)| context.split_once(" at line "))
        .and_then(|(_, at)| at.split(' ').next()?.parse::<usize>().ok());
    let repeated = why
        .strip_prefix("duplicate entry with key ")
        .map(|key| key.trim_matches('"'))
        .and_then(|key| {
            yaml.lines()
                .enumerate()
                .filter(|(_, l)| {
                    l.strip_prefix(key)
                        .is_some_and(|r| r.trim_start().starts_with(':'))
                })
                .nth(1)
                .map(|(i, _)| i + 1)
        });
    let line = repeated
        .or(context)
        .or(error.location().map(|l| l.line()))
        .unwrap_or(1);
    let hint = if repeated.is_some() {
        "keep one of them"
    } else {
        "put a value with special characters in quotes"
    };
    (
        line + 1,
        format!("the front matter is not valid YAML: {why} — {hint}"),
    )
}

fn field_value(value: serde_yaml_ng::Value) -> Value {
    use serde_yaml_ng::Value as Yaml;
    match value {
        // `key:` alone: an empty list (`skills:` offers none).
        Yaml::Null => Value::List(Vec::new()),
        Yaml::Sequence(items) => Value::List(items.iter().filter_map(scalar).collect()),
        Yaml::Mapping(_) => Value::Map(serde_json::to_value(&value).unwrap_or_default()),
        Yaml::Tagged(tagged) => field_value(tagged.value),
        scalar_value => Value::Text(scalar(&scalar_value).unwrap_or_default()),
    }
}

/// A scalar's text, trimmed (a block scalar ends with a newline); none for a collection.
fn scalar(value: &serde_yaml_ng::Value) -> Option<String> {
    use serde_yaml_ng::Value as Yaml;
    match value {
        Yaml::String(s) => Some(s.trim().to_string()),
        Yaml::Bool(b) => Some(b.to_string()),
        Yaml::Number(n) => Some(n.to_string()),
        Yaml::Null => Some(String::new()),
        Yaml::Tagged(tagged) => scalar(&tagged.value),
        Yaml::Sequence(_) | Yaml::Mapping(_) => None,
    }
}

/// `yaml` with each top-level plain value that YAML would refuse — one holding `: `, or
/// starting with `@` or a backquote — put in double quotes.
fn quote_plain_values(yaml: &str) -> String {
    yaml.split_inclusive('\n')
        .map(|line| {
            let Some((key, value)) = line.split_once(':') else {
                return line.to_string();
            };
            let plain_key = !key.is_empty()
                && key
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
            let value = value.trim();
            let needs = value.contains(": ") || value.starts_with(['@', '`']);
            let quoted = value.starts_with(['"', '\'', '[', '{', '|', '>']);
            if plain_key && needs && !quoted {
                let json = serde_json::Value::String(value.to_string()).to_string();
                let end = if line.ends_with('\n') { "\n" } else { "" };
                format!("{key}: {json}{end}")
            } else {
                line.to_string()
            }
        })
        .collect()
}

/// A custom slash command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    /// Without its `/`: `review`, `frontend:component`.
    pub name: String,
    pub description: String,
    pub argument_hint: Option<String>,
    /// Names for its positional arguments (`arguments:`), each then `$name` in its body.
    pub arguments: Vec<String>,
    pub allowed_tools: Vec<String>,
    pub model: Option<String>,
    /// The model is not offered it as a skill; only the user can run it (`/name`).
    pub disable_model_invocation: bool,
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
    /// Names for its positional arguments (`arguments:`), each then `$name` in its body.
    pub arguments: Vec<String>,
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

    /// What the model may be offered as skills, as Claude Code offers them: the skills and
    /// the commands (a command is a skill without a folder of its own), but those marked
    /// `disable-model-invocation`. A skill wins over a command of the same name.
    pub fn model_invocable(&self) -> Vec<Skill> {
        let skills = self.skills.iter().filter(|s| !s.disable_model_invocation);
        let commands = self
            .commands
            .iter()
            .filter(|c| !c.disable_model_invocation && self.skill(&c.name).is_none())
            .map(|c| Skill {
                name: c.name.clone(),
                description: c.description.clone(),
                argument_hint: c.argument_hint.clone(),
                arguments: c.arguments.clone(),
                allowed_tools: c.allowed_tools.clone(),
                model: c.model.clone(),
                disable_model_invocation: false,
                user_invocable: true,
                body: c.body.clone(),
                dir: c.path.parent().map(Path::to_path_buf).unwrap_or_default(),
                scope: c.scope,
            });
        skills.cloned().chain(commands).collect()
    }

    pub fn skill(&self, name: &str) -> Option<&Skill> {
        self.skills.iter().find(|s| s.name == name)
    }

    /// Whether the file at `path` loaded as a command or a skill (its problems, if any, are
    /// warnings: it runs without what they name).
    pub fn loaded(&self, path: &Path) -> bool {
        self.commands.iter().any(|c| c.path == path)
            || self.skills.iter().any(|s| s.dir.join("SKILL.md") == path)
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
                Ok(fm) => {
                    ext.problems
                        .extend(fm.unused_hooks(&text, &path, "command"));
                    ext.commands.push(Command {
                        description: fm
                            .field("description")
                            .unwrap_or_else(|| first_line(&fm.body)),
                        argument_hint: fm.field("argument-hint"),
                        arguments: fm.list("arguments"),
                        allowed_tools: fm.list("allowed-tools"),
                        model: fm.field("model"),
                        disable_model_invocation: fm
                            .field("disable-model-invocation")
                            .is_some_and(|v| v.eq_ignore_ascii_case("true")),
                        body: fm.body,
                        name,
                        path,
                        scope,
                    })
                }
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
            ext.problems.extend(fm.unused_hooks(&text, &path, "skill"));
            let flag = |key: &str, default: bool| {
                fm.field(key)
                    .map_or(default, |v| v.eq_ignore_ascii_case("true"))
            };
            ext.skills.push(Skill {
                description,
                argument_hint: fm.field("argument-hint"),
                arguments: fm.list("arguments"),
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

    /// Claude Code runs `hooks:` of a skill, command or agent while it is active; stepper
    /// does not, so the file loads without them and says so (`what`: "command", …) — a
    /// guard hook silently ignored would be worse than a warning.
    pub(crate) fn unused_hooks(&self, text: &str, path: &Path, what: &str) -> Option<Problem> {
        let article = if what.starts_with('a') { "an" } else { "a" };
        self.fields.contains_key("hooks").then(|| Problem {
            path: path.to_path_buf(),
            line: field_line(text, 1, "hooks"),
            message: format!(
                "`hooks` in {article} {what}'s front matter are not run by stepper: the {what} \
                 loads without them — put them under `hooks` in setting.json to run them"
            ),
        })
    }
}

/// The line of `key:` in the front matter of `segment`, whose first line is `first` (the
/// block's own line when the key is not found).
pub(crate) fn field_line(segment: &str, first: usize, key: &str) -> usize {
    segment
        .lines()
        .position(|l| {
            l.trim_start()
                .strip_prefix(key)
                .is_some_and(|r| r.trim_start().starts_with(':'))
        })
        .map_or(first, |p| first + p)
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
/// `$ARGUMENTS` is all of them as typed; `$ARGUMENTS[N]` and `$N` one each, split as a shell
/// would and counted from 0 (`$0` is the first); `$name` the one `names` (its `arguments:`)
/// gives that place; `${VAR}` of `vars` (`CLAUDE_SKILL_DIR`). A `$N` past the last argument
/// stays as written, so a price (`$5`) survives. A body that takes no arguments gets them
/// appended.
pub fn substitute(body: &str, arguments: &str, names: &[String], vars: &[(&str, &str)]) -> String {
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
        if let Some((value, tail)) = after
            .strip_prefix('{')
            .and_then(|t| t.split_once('}'))
            .and_then(|(name, tail)| Some((vars.iter().find(|(v, _)| *v == name)?.1, tail)))
        {
            out.push_str(value);
            rest = tail;
            continue;
        }
        let ident_len = after
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(after.len());
        let ident = &after[..ident_len];
        let place = if !ident.is_empty() && ident.bytes().all(|b| b.is_ascii_digit()) {
            ident.parse::<usize>().ok()
        } else {
            names.iter().position(|n| n == ident)
        };
        match place.and_then(|k| words.get(k)) {
            Some(word) => {
                out.push_str(word);
                used = true;
            }
            None => {
                out.push('$');
                out.push_str(ident);
            }
        }
        rest = &after[ident_len..];
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
    fn front_matter_is_yaml_as_claude_code_writes_it() {
        // A skill with a folded description and a literal block, as in Claude Code's docs.
        let skill = front_matter(
            "---\nname: release-notes\ndescription: >\n  Writes release notes from the git log.\n  Use when the user asks for a changelog.\nallowed-tools:\n  - Bash(git log:*)\n  - Read\nnotes: |\n  first\n  second\n---\nBody\n",
        )
        .unwrap();
        assert_eq!(
            skill.field("description").unwrap(),
            "Writes release notes from the git log. Use when the user asks for a changelog."
        );
        assert_eq!(skill.field("notes").unwrap(), "first\nsecond");
        assert_eq!(skill.list("allowed-tools"), ["Bash(git log:*)", "Read"]);
        assert_eq!(skill.body, "Body\n");

        // An agent with a nested hooks map and a quoted description: the map is kept, the
        // rest reads as before.
        let agent = front_matter(
            "---\nname: guard\ndescription: 'Checks edits: never on main'\ntools: Read, Grep, Bash\nhooks:\n  PreToolUse:\n    - matcher: Bash\n      hooks:\n        - type: command\n          command: ./check.sh\n---\nGuard.\n",
        )
        .unwrap();
        assert_eq!(
            agent.field("description").unwrap(),
            "Checks edits: never on main"
        );
        assert_eq!(agent.list("tools"), ["Read", "Grep", "Bash"]);
        let Some(Value::Map(hooks)) = agent.fields.get("hooks") else {
            panic!("{agent:?}")
        };
        assert_eq!(hooks["PreToolUse"][0]["matcher"], "Bash");
        assert_eq!(agent.field("hooks"), None);
        assert!(agent.list("hooks").is_empty());

        // Flow lists, numbers and booleans are text where a field wants text.
        let flow =
            front_matter("---\ntools: [Read, \"Grep\"]\nmax-steps: 5\nx: true\n---\n").unwrap();
        assert_eq!(flow.list("tools"), ["Read", "Grep"]);
        assert_eq!(flow.field("max-steps").unwrap(), "5");
        assert_eq!(flow.field("x").unwrap(), "true");

        // A plain value with `: ` in it is the text it plainly is, as Claude Code reads it.
        let colon = front_matter("---\ndescription: Use when: the user asks\n---\n").unwrap();
        assert_eq!(
            colon.field("description").unwrap(),
            "Use when: the user asks"
        );

        // Errors are at the file's line (the front matter starts on line 2).
        let (line, why) =
            front_matter("---\nname: x\ndescription: >\n  ok\ntools: [Read\n---\n").unwrap_err();
        assert_eq!(line, 5, "{why}");
        assert!(
            why.starts_with("the front matter is not valid YAML"),
            "{why}"
        );
        assert!(!why.contains(" at line "), "{why}");
        let (line, _) = front_matter("---\nname: x\n  bad: indent\n---\n").unwrap_err();
        assert_eq!(line, 3);
        assert_eq!(front_matter("---\n- a\n---\n").unwrap_err().0, 2);
        let (line, why) = front_matter("---\nname: a\ntools: x\nname: b\n---\n").unwrap_err();
        assert_eq!(line, 4);
        assert!(why.ends_with("key \"name\" — keep one of them"), "{why}");
        assert!(front_matter("---\n---\nBody").unwrap().fields.is_empty());
    }

    #[test]
    fn arguments_in_place() {
        let none: &[String] = &[];
        assert_eq!(
            substitute("Fix #$ARGUMENTS now", "123", none, &[]),
            "Fix #123 now"
        );
        // Counted from 0, as Claude Code counts them now.
        assert_eq!(
            substitute(
                "PR $0 with priority $1, all: $ARGUMENTS",
                "456 \"very high\"",
                none,
                &[]
            ),
            "PR 456 with priority very high, all: 456 \"very high\""
        );
        assert_eq!(
            substitute("first $ARGUMENTS[0], cost $5", "a b", none, &[]),
            "first a, cost $5"
        );
        assert_eq!(
            substitute("price in $ and $x", "", none, &[]),
            "price in $ and $x"
        );
        assert_eq!(
            substitute("Review this.", "src/lib.rs", none, &[]),
            "Review this.\n\nARGUMENTS: src/lib.rs"
        );
        let names = ["component".to_string(), "from".to_string()];
        assert_eq!(
            substitute(
                "Move $component off $from ($2 stays; $HOME too) with ${CLAUDE_SKILL_DIR}/t.md",
                "SearchBar React",
                &names,
                &[("CLAUDE_SKILL_DIR", "/s")]
            ),
            "Move SearchBar off React ($2 stays; $HOME too) with /s/t.md"
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

        // A command with a nested hooks map loads, its hooks said to be unused.
        write(
            &cwd.join(".claude/commands/guarded.md"),
            "---\ndescription: >\n  Guarded\n  work\nhooks:\n  PreToolUse:\n    - matcher: Bash\n      hooks:\n        - type: command\n          command: ./guard.sh\n---\nDo it.\n",
        );
        let ext = load(&cwd, &config, Some(&home));
        let guarded = ext.command("guarded").unwrap();
        assert_eq!(guarded.description, "Guarded work");
        let hooks: Vec<&Problem> = ext
            .problems
            .iter()
            .filter(|p| p.path.ends_with("guarded.md"))
            .collect();
        let [hooks] = &hooks[..] else {
            panic!("{:?}", ext.problems)
        };
        assert_eq!(hooks.line, 5);
        assert!(ext.loaded(&hooks.path));
        assert!(!ext.loaded(&home.join(".claude/commands/broken.md")));

        let before = fingerprint(&cwd, &config, Some(&home));
        assert_eq!(before, fingerprint(&cwd, &config, Some(&home)));
        write(&cwd.join(".stepper/commands/new.md"), "x");
        assert_ne!(before, fingerprint(&cwd, &config, Some(&home)));
    }

    /// What the model is offered, as Claude Code offers it: skills and commands alike, a
    /// command without a description by its first line, none marked
    /// `disable-model-invocation`, and a skill before a command of its name.
    #[test]
    fn the_model_is_offered_skills_and_commands() {
        let tmp = tempfile::tempdir().unwrap();
        let cwd = tmp.path().join("p");
        let config = tmp.path().join("config");
        write(
            &cwd.join(".claude/commands/plain.md"),
            "Just do it.\nMore.\n",
        );
        write(
            &cwd.join(".claude/commands/hidden.md"),
            "---\ndescription: Hidden\ndisable-model-invocation: true\n---\nx\n",
        );
        write(
            &cwd.join(".claude/commands/both.md"),
            "---\ndescription: the command\n---\nx\n",
        );
        write(
            &cwd.join(".claude/skills/both/SKILL.md"),
            "---\nname: both\ndescription: the skill\n---\ny\n",
        );
        let ext = load(&cwd, &config, None);
        assert!(ext.command("hidden").unwrap().disable_model_invocation);
        let offered: Vec<(String, String)> = ext
            .model_invocable()
            .into_iter()
            .map(|s| (s.name, s.description))
            .collect();
        let offered: Vec<(&str, &str)> = offered
            .iter()
            .map(|(n, d)| (n.as_str(), d.as_str()))
            .collect();
        assert_eq!(offered, [("both", "the skill"), ("plain", "Just do it.")]);
    }
}
