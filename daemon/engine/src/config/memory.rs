//! Instructions a session's model gets with every turn, from the files users already keep:
//! the project's `.stepper/stepper.md`, the user's `<config>/AGENTS.md`, then what Claude
//! Code reads — the user's `~/.claude/CLAUDE.md` and `~/.claude/rules/*.md`, and in every
//! folder from the repository root (the filesystem root outside a repository) down to the
//! session's folder `CLAUDE.md`, `.claude/CLAUDE.md`, `.claude/rules/*.md` and
//! `CLAUDE.local.md` — with `AGENTS.md` first in each folder. Every file is read once: a
//! link to another, or one imported by another, is not read again. A rule whose front
//! matter names `paths:` applies only to those files: it is kept apart ([`Memory::rules`]),
//! for the agent to be given when it touches one. `@path` in a file imports another
//! (relative to the file, `~/` from home), at most [`MAX_HOPS`] deep; a cycle is refused.
//! As in Claude Code, the `@path` stays in its file and the imported file follows it as a
//! file of its own (inside a rule kept for its paths, it is spliced in its place). A project's files import only from the
//! project (its repository) and the user's own `~/.stepper`, `~/.claude` and config folder:
//! `@~/.ssh/id_rsa` in a cloned repository's `CLAUDE.md` would send the key to the provider.
//! The user's own `AGENTS.md` imports from anywhere. The whole is capped, and what the cap
//! cut is said.
//!
//! *A project's memory imports Markdown only from the user's folders*: `~/.claude` holds Claude
//! Code's `.credentials.json`, and the config folder stepper's `credentials.json`.

use super::repository::repository_root;
use std::path::{Path, PathBuf};

/// How deep `@path` imports go: a file, what it imports, … four hops down.
pub const MAX_HOPS: usize = 4;

/// The default cap on the joined instructions.
pub const DEFAULT_CAP: usize = 32 * 1024;

/// A file of memory larger than this is not read (it is not instructions).
const MAX_FILE: u64 = 1 << 20;

/// Where a piece of the instructions came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// `stepper.md`: the prose every layer shares (a layer's own part goes to that layer).
    Stepper,
    /// `<config>/AGENTS.md`: the user's own, for every project.
    User,
    /// `AGENTS.md` of a folder.
    Agents,
    /// `CLAUDE.md`, `.claude/CLAUDE.md` or `CLAUDE.local.md` of a folder, or the user's
    /// `~/.claude/CLAUDE.md`.
    Claude,
    /// `.claude/rules/*.md` of a folder or of the user's `~/.claude`.
    Rules,
    /// Brought in by `@path` from one of the others.
    Import,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Stepper => "stepper",
            Source::User => "user",
            Source::Agents => "agents",
            Source::Claude => "claude",
            Source::Rules => "rules",
            Source::Import => "import",
        }
    }
}

/// One file that was read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryFile {
    pub path: PathBuf,
    pub source: Source,
    /// Its bytes as read (imports expanded in its importer, not counted here).
    pub bytes: usize,
    /// Whether the cap cut it (in part or whole).
    pub cut: bool,
}

/// The instructions of a turn, and how they were made.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Memory {
    /// The joined text, root first; empty when there is nothing.
    pub text: String,
    pub files: Vec<MemoryFile>,
    /// Problems worth a notice: a cycle, an import too deep, an unreadable file, the cap.
    pub notices: Vec<String>,
    /// Rules for some files only (`paths:` in their front matter), not in `text`.
    pub rules: Vec<PathRule>,
}

/// A rule that applies to the files its `paths:` globs match (relative to the folder whose
/// `.claude/rules` holds it, or to the project for the user's own).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathRule {
    pub path: PathBuf,
    /// The folder its globs are relative to.
    pub base: PathBuf,
    pub globs: Vec<String>,
    /// Its body, imports expanded.
    pub text: String,
}

impl PathRule {
    /// Whether the rule applies to `file` (absolute).
    pub fn applies_to(&self, file: &Path) -> bool {
        let Ok(relative) = file.strip_prefix(&self.base) else {
            return false;
        };
        self.globs.iter().any(|glob| {
            globset::Glob::new(glob)
                .map(|g| g.compile_matcher().is_match(relative))
                .unwrap_or(false)
        })
    }
}

/// The instructions for a session in `cwd`, with the user's config folder `config_dir`,
/// `home` for `~/` imports, and `cap` bytes at most.
pub fn load(cwd: &Path, config_dir: &Path, home: Option<&Path>, cap: usize) -> Memory {
    let root = repository_root(cwd);
    // Where a project's files may import from: the repository (the folder itself outside
    // one), and Markdown in the user's own folders.
    let project = if root.parent().is_some() { &root } else { cwd };
    let users_folder = canonical(config_dir);
    let mut users_folders = vec![users_folder.clone()];
    if let Some(home) = home {
        users_folders.push(canonical(&home.join(".stepper")));
        users_folders.push(canonical(&home.join(".claude")));
    }
    let mut loader = Loader {
        home: home.map(Path::to_path_buf),
        memory: Memory::default(),
        parts: Vec::new(),
        project: canonical(project),
        users_folders,
        users_folder,
        seen: std::collections::HashSet::new(),
        inline: false,
    };
    if let Some(stepper) = super::layers::locate(cwd, config_dir) {
        loader.top(&stepper, Source::Stepper);
    }
    loader.top(&config_dir.join("AGENTS.md"), Source::User);
    if let Some(home) = home {
        let claude = home.join(".claude");
        loader.top(&claude.join("CLAUDE.md"), Source::Claude);
        loader.rules(&claude.join("rules"), project);
    }
    for folder in folders(&root, cwd) {
        loader.top(&folder.join("AGENTS.md"), Source::Agents);
        loader.top(&folder.join("CLAUDE.md"), Source::Claude);
        loader.top(&folder.join(".claude").join("CLAUDE.md"), Source::Claude);
        loader.rules(&folder.join(".claude").join("rules"), &folder);
        loader.top(&folder.join("CLAUDE.local.md"), Source::Claude);
    }
    loader.finish(cap)
}

/// The Markdown files below `dir`, sorted by path, at most [`RULES_DEPTH`] folders down.
fn markdown_below(dir: &Path, depth: usize, found: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            if depth < RULES_DEPTH {
                markdown_below(&path, depth + 1, found);
            }
        } else if path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("md"))
        {
            found.push(path);
        }
    }
}

/// How deep `.claude/rules` is searched for rules.
const RULES_DEPTH: usize = 4;

/// `root`, then each folder below it down to `cwd`.
fn folders(root: &Path, cwd: &Path) -> Vec<PathBuf> {
    let mut below: Vec<PathBuf> = cwd
        .ancestors()
        .take_while(|dir| dir.starts_with(root))
        .map(Path::to_path_buf)
        .collect();
    below.reverse();
    below
}

struct Loader {
    home: Option<PathBuf>,
    memory: Memory,
    /// (file index, its text with imports expanded).
    parts: Vec<(usize, String)>,
    /// The project (canonical): a project's files import anything inside it.
    project: PathBuf,
    /// The user's own folders (canonical): a project's files import only Markdown there
    /// (their credentials files hold sign-in tokens).
    users_folders: Vec<PathBuf>,
    /// The user's config folder: what is read from there is the user's own.
    users_folder: PathBuf,
    /// Every file read so far (canonical): none is read twice.
    seen: std::collections::HashSet<PathBuf>,
    /// Imports go in the text in their place (a rule kept for its paths is one text),
    /// rather than after their importer.
    inline: bool,
}

/// What is being expanded: the file, and whether it is the user's own (its imports go
/// anywhere) or a project's (they stay inside [`Loader::allowed`]).
#[derive(Clone, Copy)]
struct Importer<'a> {
    file: &'a Path,
    users: bool,
    line: usize,
}

impl Loader {
    /// Each rule in `dir` (a `.claude/rules` folder): in the instructions, or kept apart
    /// when its front matter names `paths:` (relative to `base`).
    fn rules(&mut self, dir: &Path, base: &Path) {
        let mut files = Vec::new();
        markdown_below(dir, 0, &mut files);
        for path in files {
            let key = canonical(&path);
            if self.seen.contains(&key) {
                continue;
            }
            let Some(text) = self.read(&path) else {
                continue;
            };
            let parsed = match super::extensions::front_matter(&text) {
                Ok(parsed) => parsed,
                Err((line, why)) => {
                    self.memory
                        .notices
                        .push(format!("{}:{line}: {why}", path.display()));
                    continue;
                }
            };
            let globs = parsed.list("paths");
            if globs.is_empty() {
                self.top_text(&path, parsed.body, Source::Rules);
                continue;
            }
            self.seen.insert(key.clone());
            let mut chain = vec![key];
            let importer = Importer {
                file: &path,
                users: self.is_users(&path, Source::Rules),
                line: 0,
            };
            self.inline = true;
            let body = self.expand(&parsed.body, importer, &mut chain);
            self.inline = false;
            self.memory.files.push(MemoryFile {
                path: path.clone(),
                source: Source::Rules,
                bytes: body.len(),
                cut: false,
            });
            self.memory.rules.push(PathRule {
                path,
                base: base.to_path_buf(),
                globs,
                text: body.trim().to_string(),
            });
        }
    }

    /// Whether `path` (of `source`) is the user's own: its imports go anywhere.
    fn is_users(&self, path: &Path, source: Source) -> bool {
        let real = canonical(path);
        source == Source::User
            || real.starts_with(&self.users_folder)
            || self
                .home
                .as_ref()
                .is_some_and(|home| real.starts_with(canonical(&home.join(".claude"))))
    }

    fn top(&mut self, path: &Path, source: Source) {
        if self.seen.contains(&canonical(path)) {
            // A link to a file already read (`CLAUDE.md` → `AGENTS.md`), or one imported.
            return;
        }
        let Some(text) = self.read(path) else { return };
        self.top_text(path, text, source);
    }

    fn top_text(&mut self, path: &Path, text: String, source: Source) {
        let text = if source == Source::Stepper {
            // What every layer shares; each layer's own part is given to that layer.
            super::layers::parse(path, &text, &[]).0.preamble
        } else {
            text
        };
        if text.trim().is_empty() {
            return;
        }
        let index = self.memory.files.len();
        self.memory.files.push(MemoryFile {
            path: path.to_path_buf(),
            source,
            bytes: text.len(),
            cut: false,
        });
        self.seen.insert(canonical(path));
        let mut chain = vec![canonical(path)];
        let importer = Importer {
            file: path,
            users: self.is_users(path, source),
            line: 0,
        };
        // What it imports follows it.
        let at = self.parts.len();
        let expanded = self.expand(&text, importer, &mut chain);
        self.parts.insert(at, (index, expanded));
    }

    fn read(&mut self, path: &Path) -> Option<String> {
        let meta = std::fs::metadata(path).ok()?;
        if !meta.is_file() {
            return None;
        }
        if meta.len() > MAX_FILE {
            self.memory.notices.push(format!(
                "{} is not read as instructions: {} bytes is over the {} bytes a memory file \
                 may have",
                path.display(),
                meta.len(),
                MAX_FILE
            ));
            return None;
        }
        match std::fs::read(path) {
            Ok(bytes) => Some(String::from_utf8_lossy(&bytes).into_owned()),
            Err(e) => {
                self.memory
                    .notices
                    .push(format!("cannot read {}: {e}", path.display()));
                None
            }
        }
    }

    /// `text` of `file` with each `@path` that names a file read as a file of its own
    /// (inline: replaced by that file's text, itself expanded), outside code.
    fn expand(&mut self, text: &str, file: Importer<'_>, chain: &mut Vec<PathBuf>) -> String {
        let mut out = String::with_capacity(text.len());
        let mut fenced = false;
        for (n, line) in text.split_inclusive('\n').enumerate() {
            let file = Importer {
                line: n + 1,
                ..file
            };
            if line.trim_start().starts_with("```") || line.trim_start().starts_with("~~~") {
                fenced = !fenced;
                out.push_str(line);
                continue;
            }
            if fenced || !line.contains('@') {
                out.push_str(line);
                continue;
            }
            self.expand_line(line, file, chain, &mut out);
        }
        out
    }

    fn expand_line(
        &mut self,
        line: &str,
        file: Importer<'_>,
        chain: &mut Vec<PathBuf>,
        out: &mut String,
    ) {
        let mut in_code = false;
        let mut rest = line;
        while let Some(i) = rest.find(['@', '`']) {
            let (before, at) = rest.split_at(i);
            out.push_str(before);
            if let Some(after) = at.strip_prefix('`') {
                in_code = !in_code;
                out.push('`');
                rest = after;
                continue;
            }
            // `@` starts an import only at a word's start, outside inline code.
            let word_start = before.is_empty() && out.is_empty()
                || out.ends_with(|c: char| c.is_whitespace() || c == '(');
            let token: &str = at[1..]
                .split(|c: char| c.is_whitespace() || c == ')' || c == ',')
                .next()
                .unwrap_or("");
            let token = token.trim_end_matches(['.', ';', ':']);
            let target = (!in_code && word_start && !token.is_empty())
                .then(|| self.resolve(token, file.file))
                .flatten()
                .filter(|target| self.may_import(target, file, token));
            match target {
                Some(target) => {
                    out.push_str(&self.import(&target, chain, token, file.users));
                    rest = &at[1 + token.len()..];
                }
                None => {
                    out.push('@');
                    rest = &at[1..];
                }
            }
        }
        out.push_str(rest);
    }

    /// The file `token` names from `file`, if there is one.
    fn resolve(&self, token: &str, file: &Path) -> Option<PathBuf> {
        let path = if let Some(rest) = token.strip_prefix("~/") {
            self.home.as_ref()?.join(rest)
        } else if Path::new(token).is_absolute() {
            PathBuf::from(token)
        } else {
            file.parent()?.join(token)
        };
        path.is_file().then_some(path)
    }

    /// Whether `importer` may import `target`: the user's own files anything, a project's
    /// only what lies inside the project or the user's folders (links followed). A refusal
    /// is said once, with the file and line.
    fn may_import(&mut self, target: &Path, importer: Importer<'_>, token: &str) -> bool {
        if importer.users {
            return true;
        }
        let real = canonical(target);
        let markdown = real
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("md"));
        if real.starts_with(&self.project)
            || (markdown && self.users_folders.iter().any(|root| real.starts_with(root)))
        {
            return true;
        }
        self.memory.notices.push(format!(
            "{}:{}: @{token} is not imported: {} is outside the project (a project's \
             instructions import only from the project, and Markdown from ~/.stepper and \
             ~/.claude)",
            importer.file.display(),
            importer.line,
            real.display()
        ));
        false
    }

    /// The text an import brings, or the token back when it may not be imported.
    fn import(
        &mut self,
        target: &Path,
        chain: &mut Vec<PathBuf>,
        token: &str,
        users: bool,
    ) -> String {
        let key = canonical(target);
        if chain.contains(&key) {
            self.memory.notices.push(format!(
                "{} imports itself through {}: the import is left out",
                target.display(),
                chain
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(" → ")
            ));
            return format!("@{token}");
        }
        if self.seen.contains(&key) {
            // Read already (a file of its own, or imported elsewhere): once is enough.
            return format!("@{token}");
        }
        if chain.len() > MAX_HOPS {
            self.memory.notices.push(format!(
                "@{token} is not imported: imports go at most {MAX_HOPS} deep"
            ));
            return format!("@{token}");
        }
        let Some(text) = self.read(target) else {
            return format!("@{token}");
        };
        let index = self.memory.files.len();
        self.memory.files.push(MemoryFile {
            path: target.to_path_buf(),
            source: Source::Import,
            bytes: text.len(),
            cut: false,
        });
        self.seen.insert(key.clone());
        chain.push(key);
        let importer = Importer {
            file: target,
            users,
            line: 0,
        };
        let at = self.parts.len();
        let expanded = self.expand(&text, importer, chain);
        chain.pop();
        if self.inline {
            return expanded;
        }
        if !expanded.trim().is_empty() {
            self.parts.insert(at, (index, expanded));
        }
        format!("@{token}")
    }

    fn finish(mut self, cap: usize) -> Memory {
        let mut text = String::new();
        let mut cut_files = Vec::new();
        for (index, part) in &self.parts {
            let file = &mut self.memory.files[*index];
            let header = format!("# From {}\n\n", file.path.display());
            let room = cap.saturating_sub(text.len());
            let whole = header.len() + part.len() + 2;
            if whole <= room {
                text.push_str(&header);
                text.push_str(part.trim_end());
                text.push_str("\n\n");
                continue;
            }
            file.cut = true;
            cut_files.push(file.path.display().to_string());
            if room > header.len() + 64 {
                let keep = floor_char_boundary(part, room - header.len() - 2);
                text.push_str(&header);
                text.push_str(&part[..keep]);
                text.push_str("\n\n");
            }
        }
        if !cut_files.is_empty() {
            self.memory.notices.push(format!(
                "the instructions are over {cap} bytes: cut {} — shorten them, or split what \
                 only some folders need into those folders' AGENTS.md",
                cut_files.join(", ")
            ));
        }
        self.memory.text = text.trim_end().to_string();
        self.memory
    }
}

fn canonical(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_path_buf())
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn root_first_claude_where_no_agents_and_imports_after_their_importer() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("repo");
        std::fs::create_dir_all(root.join(".git")).unwrap();
        let cwd = root.join("a").join("b");
        std::fs::create_dir_all(&cwd).unwrap();
        write(
            &root.join("AGENTS.md"),
            "root rules\nsee @docs/style.md for style\n",
        );
        // Both, as Claude Code reads CLAUDE.md whatever else the folder holds.
        write(&root.join("CLAUDE.md"), "root claude too\n");
        write(&root.join("docs/style.md"), "tabs, never spaces\n");
        write(&root.join("a/CLAUDE.md"), "a's claude\n");
        write(&root.join("a/CLAUDE.local.md"), "a's local\n");
        write(
            &cwd.join("AGENTS.md"),
            "b rules, mail me @ home, `@docs/style.md` stays\n",
        );
        let config = tmp.path().join("config");
        write(&config.join("AGENTS.md"), "user rules\n");
        write(
            &root.join(".stepper/stepper.md"),
            "project prose\n\n---\nname: plan\n---\nthe plan layer's own\n",
        );
        let memory = load(&cwd, &config, None, DEFAULT_CAP);
        let order: Vec<&str> = [
            "project prose",
            "user rules",
            "root rules",
            "tabs",
            "root claude too",
            "a's claude",
            "a's local",
            "b rules",
        ]
        .into_iter()
        .collect();
        let mut at = 0;
        for piece in order {
            let found = memory.text[at..]
                .find(piece)
                .unwrap_or_else(|| panic!("{piece:?} not in order in:\n{}", memory.text));
            at += found;
        }
        assert!(!memory.text.contains("name: plan"));
        assert!(!memory.text.contains("the plan layer's own"));
        assert!(memory.text.contains("`@docs/style.md` stays"));
        assert!(memory.text.contains("mail me @ home"));
        // As Claude Code gives it: the reference stays, the file follows its importer.
        let style = root.join("docs/style.md");
        assert!(
            memory.text.contains(&format!(
                "see @docs/style.md for style\n\n# From {}\n\ntabs, never spaces",
                style.display()
            )),
            "{}",
            memory.text
        );
        let sources: Vec<Source> = memory.files.iter().map(|f| f.source).collect();
        assert_eq!(
            sources,
            [
                Source::Stepper,
                Source::User,
                Source::Agents,
                Source::Import,
                Source::Claude,
                Source::Claude,
                Source::Claude,
                Source::Agents
            ]
        );
        assert!(memory.notices.is_empty(), "{:?}", memory.notices);
    }

    #[test]
    fn claude_codes_files_all_and_each_once_with_rules_kept_for_their_paths() {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        let root = tmp.path().join("repo");
        std::fs::create_dir_all(root.join(".git")).unwrap();
        write(&home.join(".claude/CLAUDE.md"), "users claude\n");
        write(&home.join(".claude/rules/style.md"), "users rule\n");
        write(&root.join("AGENTS.md"), "agents says @CLAUDE.md\n");
        write(&root.join("CLAUDE.md"), "claude body\n");
        write(&root.join(".claude/CLAUDE.md"), "dot claude\n");
        write(
            &root.join(".claude/rules/always.md"),
            "---\ndescription: for all\n---\nalways rule\n",
        );
        write(
            &root.join(".claude/rules/ts/types.md"),
            "---\npaths:\n  - \"src/**/*.ts\"\n---\nts rule\n",
        );
        write(&root.join("CLAUDE.local.md"), "local notes\n");
        let memory = load(&root, &tmp.path().join("config"), Some(&home), DEFAULT_CAP);
        let mut at = 0;
        for piece in [
            "users claude",
            "users rule",
            "agents says",
            "claude body",
            "dot claude",
            "always rule",
            "local notes",
        ] {
            let found = memory.text[at..]
                .find(piece)
                .unwrap_or_else(|| panic!("{piece:?} not in order in:\n{}", memory.text));
            at += found;
        }
        // CLAUDE.md came in through AGENTS.md's import: once.
        assert_eq!(
            memory.text.matches("claude body").count(),
            1,
            "{}",
            memory.text
        );
        assert!(!memory.text.contains("description: for all"));
        // The rule for some paths is kept apart, for when one of them is touched.
        assert!(!memory.text.contains("ts rule"));
        let [rule] = &memory.rules[..] else {
            panic!("{:?}", memory.rules)
        };
        assert_eq!(rule.text, "ts rule");
        assert!(rule.applies_to(&root.join("src/app/main.ts")));
        assert!(!rule.applies_to(&root.join("src/app/main.rs")));
        let rules = memory
            .files
            .iter()
            .filter(|f| f.source == Source::Rules)
            .count();
        assert_eq!(rules, 3, "{:?}", memory.files);
        assert!(memory.notices.is_empty(), "{:?}", memory.notices);
    }

    #[test]
    fn cycles_and_deep_imports_are_refused_and_the_cap_says_what_it_cut() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        write(&root.join("AGENTS.md"), "top @one.md\n");
        write(&root.join("one.md"), "one @two.md\n");
        write(&root.join("two.md"), "two @one.md @three.md\n");
        write(&root.join("three.md"), "three @four.md\n");
        write(&root.join("four.md"), "four @five.md\n");
        write(&root.join("five.md"), "five\n");
        let memory = load(root, &root.join("none"), None, DEFAULT_CAP);
        assert!(memory.text.contains("four @five.md"), "{}", memory.text);
        assert!(!memory.text.contains("five\n"));
        assert!(
            memory.notices.iter().any(|n| n.contains("imports itself")),
            "{:?}",
            memory.notices
        );
        assert!(
            memory.notices.iter().any(|n| n.contains("at most 4 deep")),
            "{:?}",
            memory.notices
        );

        let sub = root.join("sub");
        write(&sub.join("AGENTS.md"), &"x".repeat(600));
        let memory = load(&sub, &root.join("none"), None, 400);
        assert!(memory.text.len() <= 400, "{}", memory.text.len());
        let cut: Vec<&MemoryFile> = memory.files.iter().filter(|f| f.cut).collect();
        assert_eq!(cut.len(), 1);
        assert!(cut[0].path.ends_with("sub/AGENTS.md"));
        assert!(
            memory
                .notices
                .iter()
                .any(|n| n.contains("over 400 bytes") && n.contains("sub"))
        );
    }

    #[test]
    #[cfg(unix)]
    fn a_projects_imports_stay_inside_it_and_the_users_folders() {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        let root = home.join("src/repo");
        std::fs::create_dir_all(root.join(".git")).unwrap();
        write(&home.join(".ssh/id_rsa"), "PRIVATE KEY\n");
        write(&home.join("src/secret.txt"), "NEXT DOOR\n");
        write(&home.join(".claude/style.md"), "the user's style\n");
        write(&home.join(".claude/.credentials.json"), "CLAUDE TOKEN\n");
        write(&home.join("notes/mine.md"), "the user's notes\n");
        std::os::unix::fs::symlink(home.join(".ssh/id_rsa"), root.join("key.md")).unwrap();
        write(&root.join("docs/ok.md"), "inside\n");
        write(
            &root.join("CLAUDE.md"),
            "a\n@~/.ssh/id_rsa\n@../secret.txt\n@/etc/hostname\n@key.md\n@docs/ok.md\n@~/.claude/style.md\n@~/.claude/.credentials.json\n",
        );
        let config = home.join(".config/stepper");
        write(&config.join("AGENTS.md"), "user: @~/notes/mine.md\n");
        let memory = load(&root, &config, Some(&home), DEFAULT_CAP);
        for leaked in ["PRIVATE KEY", "NEXT DOOR", "CLAUDE TOKEN"] {
            assert!(!memory.text.contains(leaked), "{}", memory.text);
        }
        for kept in ["inside", "the user's style", "the user's notes"] {
            assert!(memory.text.contains(kept), "{kept}: {}", memory.text);
        }
        let claude = root.join("CLAUDE.md").display().to_string();
        for (line, token) in [(2, "~/.ssh/id_rsa"), (3, "../secret.txt"), (5, "key.md")] {
            assert!(
                memory
                    .notices
                    .iter()
                    .any(|n| n.starts_with(&format!("{claude}:{line}: @{token} is not imported"))),
                "{token}: {:?}",
                memory.notices
            );
        }
        if Path::new("/etc/hostname").is_file() {
            assert!(
                memory.notices.iter().any(|n| n.contains("@/etc/hostname")),
                "{:?}",
                memory.notices
            );
        }
    }

    #[test]
    fn outside_a_repository_the_walk_starts_at_the_filesystem_root() {
        assert_eq!(
            repository_root(Path::new("/nonexistent/x")),
            PathBuf::from("/")
        );
        let memory = load(
            Path::new("/nonexistent/x"),
            Path::new("/nonexistent/c"),
            None,
            100,
        );
        assert_eq!(memory, Memory::default());
    }
}
