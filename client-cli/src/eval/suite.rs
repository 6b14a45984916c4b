//! A suite of eval tasks: one folder per task holding `task.json`, `prompt.md`, the starting
//! `repo/`, maybe hidden tests in `grade/` (and, for the suite's own checks, `solution/` and
//! `wrong/`). Read and checked whole before anything runs, so a broken suite fails at once
//! with what to fix rather than half-way through a long run.

use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use serde::{Deserialize, Serialize};

/// The language a task's code is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Language {
    Python,
    Rust,
    Typescript,
    Go,
}

/// What kind of work a task asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    FixTests,
    Feature,
    Refactor,
    StackTrace,
    Search,
}

impl Language {
    pub fn as_str(self) -> &'static str {
        match self {
            Language::Python => "python",
            Language::Rust => "rust",
            Language::Typescript => "typescript",
            Language::Go => "go",
        }
    }
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::FixTests => "fix-tests",
            Kind::Feature => "feature",
            Kind::Refactor => "refactor",
            Kind::StackTrace => "stack-trace",
            Kind::Search => "search",
        }
    }
}

impl fmt::Display for Language {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

/// `task.json`, as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TaskSpec {
    pub description: String,
    pub language: Language,
    pub kind: Kind,
    /// The grading command, run in the task's copy: exit 0 is a pass.
    pub grade: Vec<String>,
    /// How long the grading command may run.
    pub timeout_secs: u64,
}

/// A task of the suite, checked: its folder has everything a run needs.
#[derive(Debug, Clone)]
pub struct Task {
    /// The folder's name.
    pub name: String,
    pub dir: PathBuf,
    pub spec: TaskSpec,
    pub prompt: String,
}

impl Task {
    pub fn repo(&self) -> PathBuf {
        self.dir.join("repo")
    }

    /// The hidden tests laid over the copy before grading, when the task has them.
    pub fn grade_dir(&self) -> Option<PathBuf> {
        Some(self.dir.join("grade")).filter(|d| d.is_dir())
    }
}

const FORMAT: &str = "a task is a folder holding task.json ({\"description\", \"language\", \
                      \"kind\", \"grade\": [argv…], \"timeoutSecs\"}), prompt.md and repo/";

/// Every task of the suite in `dir` whose name matches `pattern` (all when absent), by
/// name. Hidden folders (`.git`) and plain files (a README, a checker) are not tasks.
pub fn load(dir: &Path, pattern: Option<&str>) -> anyhow::Result<Vec<Task>> {
    if !dir.is_dir() {
        bail!(
            "no eval suite at {} — run from the project root (the suite is tests/evals), or \
             name its folder with --suite DIR",
            dir.display()
        );
    }
    let matcher = pattern.map(glob).transpose()?;
    let mut folders = Vec::new();
    for entry in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let entry = entry.with_context(|| format!("reading {}", dir.display()))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') || !entry.path().is_dir() {
            continue;
        }
        folders.push((name, entry.path()));
    }
    folders.sort();
    if folders.is_empty() {
        bail!("{} holds no tasks — {FORMAT}", dir.display());
    }
    let mut tasks = Vec::new();
    for (name, path) in folders {
        if matcher.as_ref().is_some_and(|m| !m.is_match(&name)) {
            continue;
        }
        tasks.push(read_task(name, path)?);
    }
    if tasks.is_empty() {
        let pattern = pattern.unwrap_or_default();
        bail!(
            "no task of {} matches '{pattern}' — 'stepper eval --list' names them; a glob \
             takes * ? [..] and {{a,b}}",
            dir.display()
        );
    }
    Ok(tasks)
}

fn glob(pattern: &str) -> anyhow::Result<globset::GlobMatcher> {
    Ok(globset::Glob::new(pattern)
        .with_context(|| format!("--tasks '{pattern}' is not a glob (e.g. 'py-*' or '{{a,b}}')"))?
        .compile_matcher())
}

/// One task's folder, read and checked.
pub fn read_task(name: String, dir: PathBuf) -> anyhow::Result<Task> {
    let spec_path = dir.join("task.json");
    if !spec_path.is_file() {
        bail!(
            "{} has no task.json — {FORMAT}; is --suite the folder that holds the tasks?",
            dir.display()
        );
    }
    let text = std::fs::read_to_string(&spec_path)
        .with_context(|| format!("reading {}", spec_path.display()))?;
    let spec: TaskSpec = serde_json::from_str(&text).map_err(|e| {
        anyhow::anyhow!(
            "{}:{}:{}: {} — fix the file: {FORMAT}; language is python, rust, typescript or \
             go; kind is fix-tests, feature, refactor, stack-trace or search",
            spec_path.display(),
            e.line(),
            e.column(),
            without_position(&e)
        )
    })?;
    if spec.grade.is_empty() || spec.grade[0].trim().is_empty() {
        bail!(
            "{}: \"grade\" is empty — give the command that grades the task, e.g. \
             [\"python3\", \"-m\", \"unittest\"]",
            spec_path.display()
        );
    }
    if spec.timeout_secs == 0 {
        bail!(
            "{}: \"timeoutSecs\" is 0 — give the seconds grading may take",
            spec_path.display()
        );
    }
    let prompt_path = dir.join("prompt.md");
    let prompt = std::fs::read_to_string(&prompt_path).map_err(|e| {
        anyhow::anyhow!(
            "{}: {e} — every task needs prompt.md, the user's request",
            prompt_path.display()
        )
    })?;
    if prompt.trim().is_empty() {
        bail!(
            "{} is empty — write the user's request in it",
            prompt_path.display()
        );
    }
    if !dir.join("repo").is_dir() {
        bail!(
            "{} has no repo/ folder — every task needs its starting files there",
            dir.display()
        );
    }
    Ok(Task {
        name,
        dir,
        spec,
        prompt,
    })
}

/// serde_json's message without its " at line L column C" (said once, in front).
fn without_position(e: &serde_json::Error) -> String {
    let message = e.to_string();
    match message.rfind(" at line ") {
        Some(i) => message[..i].to_string(),
        None => message,
    }
}

/// The listing of `stepper eval --list`.
pub fn list_table(tasks: &[Task]) -> String {
    use std::fmt::Write;
    let width = tasks.iter().map(|t| t.name.len()).max().unwrap_or(4).max(4);
    let mut out = format!(
        "{:<width$}  {:<10}  {:<11}  DESCRIPTION\n",
        "TASK", "LANGUAGE", "KIND"
    );
    for t in tasks {
        let _ = writeln!(
            out,
            "{:<width$}  {:<10}  {:<11}  {}",
            t.name, t.spec.language, t.spec.kind, t.spec.description
        );
    }
    let _ = writeln!(out, "{} task(s)", tasks.len());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(root: &Path, name: &str, json: &str) -> PathBuf {
        let dir = root.join(name);
        std::fs::create_dir_all(dir.join("repo")).unwrap();
        std::fs::write(dir.join("task.json"), json).unwrap();
        std::fs::write(dir.join("prompt.md"), "Fix it.\n").unwrap();
        dir
    }

    const GOOD: &str = r#"{"description": "Add two numbers", "language": "python",
        "kind": "fix-tests", "grade": ["python3", "-m", "unittest"], "timeoutSecs": 60}"#;

    fn error(result: anyhow::Result<Vec<Task>>, root: &Path) -> String {
        format!("{:#}", result.unwrap_err()).replace(&root.display().to_string(), "SUITE")
    }

    #[test]
    fn a_suite_is_its_task_folders_by_name_and_a_glob_picks_among_them() {
        let root = tempfile::tempdir().unwrap();
        task(root.path(), "py-b", GOOD);
        task(root.path(), "py-a", GOOD);
        task(
            root.path(),
            "go-c",
            &GOOD
                .replace("python", "go")
                .replace("fix-tests", "stack-trace"),
        );
        std::fs::write(root.path().join("README.md"), "not a task").unwrap();
        std::fs::create_dir(root.path().join(".hidden")).unwrap();

        let all = load(root.path(), None).unwrap();
        insta::assert_snapshot!(list_table(&all), @r"
        TASK  LANGUAGE    KIND         DESCRIPTION
        go-c  go          stack-trace  Add two numbers
        py-a  python      fix-tests    Add two numbers
        py-b  python      fix-tests    Add two numbers
        3 task(s)
        ");
        let some = load(root.path(), Some("py-*")).unwrap();
        assert_eq!(
            some.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(),
            ["py-a", "py-b"]
        );
        let picked = load(root.path(), Some("{go-c,py-b}")).unwrap();
        assert_eq!(picked.len(), 2);
        assert_eq!(all[1].prompt, "Fix it.\n");
        assert_eq!(all[1].spec.grade, ["python3", "-m", "unittest"]);
        assert_eq!(all[1].spec.timeout_secs, 60);
    }

    #[test]
    fn bad_suites_say_what_is_wrong_and_what_to_do() {
        let root = tempfile::tempdir().unwrap();
        let missing = root.path().join("nowhere");
        insta::assert_snapshot!(error(load(&missing, None), root.path()), @"no eval suite at SUITE/nowhere — run from the project root (the suite is tests/evals), or name its folder with --suite DIR");
        insta::assert_snapshot!(error(load(root.path(), None), root.path()), @r#"SUITE holds no tasks — a task is a folder holding task.json ({"description", "language", "kind", "grade": [argv…], "timeoutSecs"}), prompt.md and repo/"#);

        task(root.path(), "py-a", GOOD);
        insta::assert_snapshot!(error(load(root.path(), Some("rs-*")), root.path()), @"no task of SUITE matches 'rs-*' — 'stepper eval --list' names them; a glob takes * ? [..] and {a,b}");

        let bad = task(root.path(), "py-b", &GOOD.replace("python", "java"));
        insta::assert_snapshot!(error(load(root.path(), None), root.path()), @r#"SUITE/py-b/task.json:1:53: unknown variant `java`, expected one of `python`, `rust`, `typescript`, `go` — fix the file: a task is a folder holding task.json ({"description", "language", "kind", "grade": [argv…], "timeoutSecs"}), prompt.md and repo/; language is python, rust, typescript or go; kind is fix-tests, feature, refactor, stack-trace or search"#);
        std::fs::write(bad.join("task.json"), "{\"description\": ").unwrap();
        insta::assert_snapshot!(error(load(root.path(), None), root.path()), @r#"SUITE/py-b/task.json:1:16: EOF while parsing a value — fix the file: a task is a folder holding task.json ({"description", "language", "kind", "grade": [argv…], "timeoutSecs"}), prompt.md and repo/; language is python, rust, typescript or go; kind is fix-tests, feature, refactor, stack-trace or search"#);
        std::fs::write(
            bad.join("task.json"),
            GOOD.replace("\"timeoutSecs\"", "\"timeout\""),
        )
        .unwrap();
        let unknown = error(load(root.path(), None), root.path());
        assert!(unknown.contains("unknown field `timeout`"), "{unknown}");
        std::fs::write(
            bad.join("task.json"),
            GOOD.replace("[\"python3\", \"-m\", \"unittest\"]", "[]"),
        )
        .unwrap();
        insta::assert_snapshot!(error(load(root.path(), None), root.path()), @r#"SUITE/py-b/task.json: "grade" is empty — give the command that grades the task, e.g. ["python3", "-m", "unittest"]"#);
        std::fs::write(bad.join("task.json"), GOOD).unwrap();
        std::fs::remove_file(bad.join("prompt.md")).unwrap();
        let no_prompt = error(load(root.path(), None), root.path());
        assert!(
            no_prompt.starts_with("SUITE/py-b/prompt.md: "),
            "{no_prompt}"
        );
        assert!(no_prompt.ends_with("every task needs prompt.md, the user's request"));
        std::fs::write(bad.join("prompt.md"), "Fix.").unwrap();
        std::fs::remove_dir(bad.join("repo")).unwrap();
        insta::assert_snapshot!(error(load(root.path(), None), root.path()), @"SUITE/py-b has no repo/ folder — every task needs its starting files there");
        std::fs::remove_file(bad.join("task.json")).unwrap();
        insta::assert_snapshot!(error(load(root.path(), None), root.path()), @r#"SUITE/py-b has no task.json — a task is a folder holding task.json ({"description", "language", "kind", "grade": [argv…], "timeoutSecs"}), prompt.md and repo/; is --suite the folder that holds the tasks?"#);
    }
}
