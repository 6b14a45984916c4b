//! Search tools: glob and grep, on ripgrep's own crates. This module owns what both share: how
//! a tree is walked (gitignore-aware, `.git` skipped), how the search root is resolved and
//! gated, and how output is capped before it reaches the model.

mod glob;
mod grep;

use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use ignore::{DirEntry, WalkBuilder};
use stepper_engine::tool::{GateRequest, Tool, ToolCx, ToolError};

pub use glob::{GlobReport, GlobTool, glob_files};
pub use grep::{FileMatches, GrepOptions, GrepReport, GrepTool, Line, OutputMode, grep_files};

/// The search tools, ready to register.
pub fn tools() -> Vec<Arc<dyn Tool>> {
    vec![Arc::new(GlobTool), Arc::new(GrepTool)]
}

/// Why a search could not run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SearchError {
    #[error("invalid regex: {0}")]
    InvalidRegex(String),
    #[error("invalid glob `{glob}`: {reason}")]
    InvalidGlob { glob: String, reason: String },
    #[error("unknown file type `{0}` (try a `glob` such as \"*.rs\" instead)")]
    UnknownType(String),
    #[error("cancelled")]
    Cancelled,
}

impl From<SearchError> for ToolError {
    fn from(error: SearchError) -> ToolError {
        match error {
            SearchError::Cancelled => ToolError::Cancelled,
            other => ToolError::InvalidArguments(other.to_string()),
        }
    }
}

/// Most bytes of output a search tool hands the model; past it the output is cut with a notice.
const MAX_OUTPUT_BYTES: usize = 40_000;

/// Most entries (paths, or lines in content mode) shown when the call sets no limit.
const DEFAULT_MAX_ENTRIES: usize = 1000;

/// Directories of version-control systems: never listed or searched, even though hidden files
/// otherwise are.
const VCS_DIRS: [&str; 4] = [".git", ".hg", ".svn", ".jj"];

/// A walker over `root` as both tools see a tree: `.gitignore`, `.ignore` and git excludes
/// respected (even outside a git repository, since an agent's folder need not be one), hidden
/// files included (`.github/`, dotfiles and the like matter to an agent), VCS folders skipped.
fn walker(root: &Path) -> WalkBuilder {
    let mut builder = WalkBuilder::new(root);
    builder
        .hidden(false)
        .require_git(false)
        .current_dir(root)
        .filter_entry(|entry| entry.depth() == 0 || !is_vcs_dir(entry));
    builder
}

fn is_vcs_dir(entry: &DirEntry) -> bool {
    entry.file_type().is_some_and(|t| t.is_dir())
        && VCS_DIRS.iter().any(|name| entry.file_name() == *name)
}

/// The search root, `resolved` against the session's folder, canonicalized and allowed by the
/// gate.
async fn gated_root(cx: &ToolCx, resolved: PathBuf) -> Result<PathBuf, ToolError> {
    let root = tokio::fs::canonicalize(&resolved).await.map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            ToolError::InvalidArguments(format!("path does not exist: {}", resolved.display()))
        } else {
            ToolError::Failed(format!("cannot search {}: {e}", resolved.display()))
        }
    })?;
    cx.gate(GateRequest::Read { path: root.clone() }).await?;
    Ok(root)
}

/// How paths are shown to the model: relative to the search root, under the root as the model
/// named it, so a path it reads back resolves the same way (`src/lib.rs` for `path: "src"`).
struct Shown {
    base: PathBuf,
}

impl Shown {
    fn new(path: &Path) -> Shown {
        Shown {
            base: path
                .components()
                .filter(|c| *c != Component::CurDir)
                .collect(),
        }
    }

    fn path(&self, relative: &Path) -> String {
        let shown = if relative.as_os_str().is_empty() {
            &self.base
        } else if self.base.as_os_str().is_empty() {
            relative
        } else {
            &self.base.join(relative)
        };
        shown.to_string_lossy().into_owned()
    }
}

/// Output lines gathered up to an entry limit and a byte limit; whether anything was cut.
struct Capped {
    text: String,
    entries: usize,
    max_entries: Option<usize>,
    cut: bool,
}

impl Capped {
    fn new(max_entries: Option<usize>) -> Capped {
        Capped {
            text: String::new(),
            entries: 0,
            max_entries,
            cut: false,
        }
    }

    /// Adds a line unless a limit is reached; false once the output is cut.
    fn push(&mut self, line: &str) -> bool {
        let full = self.max_entries.is_some_and(|max| self.entries >= max)
            || self.text.len() + line.len() + 1 > MAX_OUTPUT_BYTES;
        if self.cut || full {
            self.cut = true;
            return false;
        }
        self.text.push_str(line);
        self.text.push('\n');
        self.entries += 1;
        true
    }

    fn finish(mut self) -> String {
        let trimmed = self.text.trim_end_matches('\n').len();
        self.text.truncate(trimmed);
        self.text
    }
}

/// The limit on shown entries: `head_limit` when given (0 means only the byte cap), else the
/// default.
fn entry_limit(head_limit: Option<usize>) -> Option<usize> {
    match head_limit {
        None => Some(DEFAULT_MAX_ENTRIES),
        Some(0) => None,
        Some(n) => Some(n),
    }
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use futures::future::BoxFuture;
    use stepper_engine::tool::{Decision, Gate};

    use super::*;

    /// Denies every request and remembers what was asked.
    #[derive(Default)]
    pub(super) struct DenyingGate {
        pub(super) asked: Mutex<Vec<GateRequest>>,
    }

    impl Gate for DenyingGate {
        fn check<'a>(&'a self, request: &'a GateRequest) -> BoxFuture<'a, Decision> {
            self.asked.lock().unwrap().push(request.clone());
            Box::pin(async { Decision::Deny("reading is not allowed here".into()) })
        }
    }

    /// Writes `files` (relative path, content) under `root`, creating folders.
    pub(super) fn write_tree(root: &Path, files: &[(&str, &str)]) {
        for (path, content) in files {
            let path = root.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, content).unwrap();
        }
    }

    /// Sets a file's modification time.
    pub(super) fn touch(path: &Path, seconds_after_epoch: u64) {
        let file = std::fs::File::options().write(true).open(path).unwrap();
        let time = std::time::UNIX_EPOCH + std::time::Duration::from_secs(seconds_after_epoch);
        file.set_modified(time).unwrap();
    }

    #[test]
    fn tools_lists_glob_and_grep_as_read_only() {
        let tools = tools();
        let names: Vec<String> = tools.iter().map(|t| t.spec().name).collect();
        assert_eq!(names, ["glob", "grep"]);
        assert!(tools.iter().all(|t| t.read_only()));
    }

    #[test]
    fn shown_paths_keep_the_root_as_given() {
        assert_eq!(
            Shown::new(Path::new(".")).path(Path::new("a/b.rs")),
            "a/b.rs"
        );
        assert_eq!(
            Shown::new(Path::new("./src")).path(Path::new("lib.rs")),
            "src/lib.rs"
        );
        assert_eq!(
            Shown::new(Path::new("src/lib.rs")).path(Path::new("")),
            "src/lib.rs"
        );
    }

    #[test]
    fn capped_stops_at_the_entry_limit() {
        let mut out = Capped::new(Some(2));
        assert!(out.push("a"));
        assert!(out.push("b"));
        assert!(!out.push("c"));
        assert!(out.cut);
        assert_eq!(out.finish(), "a\nb");
    }

    #[test]
    fn capped_stops_at_the_byte_limit() {
        let mut out = Capped::new(None);
        let line = "x".repeat(1000);
        while out.push(&line) {}
        assert!(out.cut);
        assert!(out.finish().len() <= MAX_OUTPUT_BYTES);
    }
}
