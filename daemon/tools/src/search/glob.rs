//! The `glob` tool: files whose path matches a glob pattern, newest first, the way an agent
//! looks for files by name before it reads them.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::SystemTime;

use futures::future::BoxFuture;
use globset::{GlobBuilder, GlobMatcher};
use ignore::WalkState;
use serde::Deserialize;
use stepper_engine::tool::{Tool, ToolCx, ToolError, ToolOutput, ToolResult, ToolSpec, parse_args};
use tokio_util::sync::CancellationToken;

use super::{Capped, DEFAULT_MAX_ENTRIES, SearchError, Shown, gated_root, plural, walker};

/// Most matching files collected before the walk stops: bounds memory on a huge tree, where the
/// output would be cut long before anyway.
const MAX_COLLECTED: usize = 100_000;

/// The `glob` tool.
pub struct GlobTool;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct GlobArgs {
    pattern: String,
    #[serde(default)]
    path: Option<String>,
}

/// Files a glob matched.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GlobReport {
    /// Paths relative to the search root (absolute for an absolute pattern), newest first.
    pub files: Vec<PathBuf>,
    /// The walk stopped at its collection bound, so `files` is only part of the matches.
    pub partial: bool,
}

/// Files under `root` whose path relative to `root` matches `pattern`, newest first, skipping
/// what git ignores and VCS folders. A literal leading part of the pattern (`src/` in
/// `src/**/*.rs`) is walked directly instead of being matched against the whole tree.
pub fn glob_files(
    root: &Path,
    pattern: &str,
    cancel: &CancellationToken,
) -> Result<GlobReport, SearchError> {
    let (prefix, rest) = split_pattern(pattern);
    let matcher = glob_matcher(&rest)?;
    let base = root.join(&prefix);
    if !base.is_dir() {
        return Ok(GlobReport::default());
    }

    let found: Mutex<Vec<(PathBuf, SystemTime)>> = Mutex::new(Vec::new());
    let partial = AtomicBool::new(false);
    walker(&base).build_parallel().run(|| {
        let (found, partial, matcher, base, prefix) = (&found, &partial, &matcher, &base, &prefix);
        Box::new(move |entry| {
            if cancel.is_cancelled() || partial.load(Ordering::Relaxed) {
                return WalkState::Quit;
            }
            let Ok(entry) = entry else {
                return WalkState::Continue;
            };
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                return WalkState::Continue;
            }
            let Ok(relative) = entry.path().strip_prefix(base) else {
                return WalkState::Continue;
            };
            if !matcher.is_match(relative) {
                return WalkState::Continue;
            }
            let modified = entry
                .metadata()
                .ok()
                .and_then(|m| m.modified().ok())
                .unwrap_or(SystemTime::UNIX_EPOCH);
            let mut found = found
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            found.push((prefix.join(relative), modified));
            if found.len() >= MAX_COLLECTED {
                partial.store(true, Ordering::Relaxed);
                return WalkState::Quit;
            }
            WalkState::Continue
        })
    });
    if cancel.is_cancelled() {
        return Err(SearchError::Cancelled);
    }

    let mut found = found
        .into_inner()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    found.sort_by(|(a, a_time), (b, b_time)| b_time.cmp(a_time).then_with(|| a.cmp(b)));
    Ok(GlobReport {
        files: found.into_iter().map(|(path, _)| path).collect(),
        partial: partial.into_inner(),
    })
}

/// The pattern split into its literal leading folders and the rest: `src/**/*.rs` gives
/// (`src`, `**/*.rs`). The last component always stays in the rest, so it is matched as a file
/// name.
fn split_pattern(pattern: &str) -> (PathBuf, String) {
    let pattern = pattern.trim_start_matches("./");
    let parts: Vec<&str> = pattern.split('/').collect();
    let folders = &parts[..parts.len().saturating_sub(1)];
    let literal = folders
        .iter()
        .take_while(|part| !part.contains(['*', '?', '[', ']', '{', '}', '\\']))
        .count();
    let mut prefix = parts[..literal].join("/");
    if prefix.is_empty() && literal > 0 {
        // Only the empty part before an absolute pattern's leading `/`.
        prefix.push('/');
    }
    (PathBuf::from(prefix), parts[literal..].join("/"))
}

fn glob_matcher(pattern: &str) -> Result<GlobMatcher, SearchError> {
    let glob = GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .map_err(|e| SearchError::InvalidGlob {
            glob: pattern.to_string(),
            reason: e.kind().to_string(),
        })?;
    Ok(glob.compile_matcher())
}

impl Tool for GlobTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "glob".into(),
            description: "Fast file pattern matching that works with any codebase size.\n\
                - Supports glob patterns like \"**/*.js\" or \"src/**/*.ts\"; `*` stays within \
                one folder, `**` crosses folders, `{a,b}` and `[abc]` work too\n\
                - Returns matching file paths sorted by modification time, newest first\n\
                - Respects .gitignore, .ignore and git excludes, and skips .git; hidden files \
                are included\n\
                - Use this tool when you need to find files by name patterns\n\
                - To find files by their content, use grep instead"
                .into(),
            input_schema: serde_json::json!({
                "type": "object",
                "properties": {
                    "pattern": {
                        "type": "string",
                        "description": "The glob pattern to match files against, e.g. \"**/*.rs\""
                    },
                    "path": {
                        "type": "string",
                        "description": "The directory to search in. Omit it to search the \
                            current working directory; do not pass \"undefined\" or \"null\"."
                    }
                },
                "required": ["pattern"],
                "additionalProperties": false
            }),
        }
    }

    fn read_only(&self) -> bool {
        true
    }

    fn call<'a>(&'a self, args: serde_json::Value, cx: &'a ToolCx) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let args: GlobArgs = parse_args(args)?;
            if args.pattern.trim().is_empty() {
                return Err(ToolError::InvalidArguments("`pattern` is empty".into()));
            }
            let path = args.path.as_deref().unwrap_or(".");
            let (prefix, rest) = split_pattern(&args.pattern);
            glob_matcher(&rest)?;
            let root = gated_root(cx, cx.resolve(path).join(&prefix)).await?;
            if !root.is_dir() {
                return Err(ToolError::InvalidArguments(format!(
                    "not a directory: {} (glob searches a folder; use read for a file)",
                    root.display()
                )));
            }

            let cancel = cx.cancel.clone();
            let report = tokio::task::spawn_blocking(move || glob_files(&root, &rest, &cancel))
                .await
                .map_err(|e| ToolError::Failed(format!("the glob search failed: {e}")))??;
            Ok(ToolOutput::text(render(
                &report,
                &Shown::new(&Path::new(path).join(prefix)),
            )))
        })
    }
}

fn render(report: &GlobReport, shown: &Shown) -> String {
    if report.files.is_empty() {
        return "No files found".into();
    }
    let mut out = Capped::new(Some(DEFAULT_MAX_ENTRIES));
    for file in &report.files {
        if !out.push(&shown.path(file)) {
            break;
        }
    }
    let (cut, entries) = (out.cut, out.entries);
    let mut text = out.finish();
    if cut {
        text.push_str(&format!(
            "\n\n(Showing the {entries} most recently modified of {}. Use a more specific \
             pattern or path to see the rest.)",
            plural(report.files.len(), "file", "files")
        ));
    }
    if report.partial {
        text.push_str(&format!(
            "\n\n(The search stopped after {MAX_COLLECTED} files, so these are only some of \
             the matches.)"
        ));
    }
    text
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use stepper_engine::tool::GateRequest;

    use super::super::tests::{DenyingGate, touch, write_tree};
    use super::*;

    fn names(report: &GlobReport) -> Vec<String> {
        report
            .files
            .iter()
            .map(|p| p.to_string_lossy().into_owned())
            .collect()
    }

    fn sorted(report: &GlobReport) -> Vec<String> {
        let mut names = names(report);
        names.sort();
        names
    }

    fn glob(root: &Path, pattern: &str) -> GlobReport {
        glob_files(root, pattern, &CancellationToken::new()).unwrap()
    }

    #[test]
    fn glob_respects_gitignore_and_skips_git() {
        let dir = tempfile::tempdir().unwrap();
        write_tree(
            dir.path(),
            &[
                (".gitignore", "target/\n*.log\n"),
                (".ignore", "vendor/\n"),
                ("src/main.rs", "fn main() {}"),
                ("target/debug/out.rs", ""),
                ("vendor/dep.rs", ""),
                ("build.log", ""),
                (".git/config", ""),
                (".git/hooks/pre-commit.rs", ""),
                (".github/ci.yml", ""),
            ],
        );
        assert_eq!(
            sorted(&glob(dir.path(), "**/*")),
            [".github/ci.yml", ".gitignore", ".ignore", "src/main.rs"]
        );
        assert_eq!(sorted(&glob(dir.path(), "**/*.rs")), ["src/main.rs"]);
    }

    #[test]
    fn glob_patterns_follow_glob_syntax() {
        let dir = tempfile::tempdir().unwrap();
        write_tree(
            dir.path(),
            &[
                ("top.rs", ""),
                ("a.txt", ""),
                ("b.txt", ""),
                ("c.txt", ""),
                ("src/lib.rs", ""),
                ("src/deep/mod.rs", ""),
                ("tests/it.rs", ""),
            ],
        );
        assert_eq!(sorted(&glob(dir.path(), "*.rs")), ["top.rs"]);
        assert_eq!(
            sorted(&glob(dir.path(), "**/*.rs")),
            ["src/deep/mod.rs", "src/lib.rs", "tests/it.rs", "top.rs"]
        );
        assert_eq!(
            sorted(&glob(dir.path(), "src/**/*.rs")),
            ["src/deep/mod.rs", "src/lib.rs"]
        );
        assert_eq!(sorted(&glob(dir.path(), "./src/*.rs")), ["src/lib.rs"]);
        assert_eq!(sorted(&glob(dir.path(), "{a,b}.txt")), ["a.txt", "b.txt"]);
        assert_eq!(sorted(&glob(dir.path(), "[bc].txt")), ["b.txt", "c.txt"]);
        assert_eq!(sorted(&glob(dir.path(), "src/lib.rs")), ["src/lib.rs"]);
        assert!(glob(dir.path(), "missing/**/*.rs").files.is_empty());
    }

    #[test]
    fn glob_sorts_newest_first() {
        let dir = tempfile::tempdir().unwrap();
        write_tree(
            dir.path(),
            &[("old.rs", ""), ("new.rs", ""), ("mid/mid.rs", "")],
        );
        touch(&dir.path().join("old.rs"), 1_000);
        touch(&dir.path().join("mid/mid.rs"), 2_000);
        touch(&dir.path().join("new.rs"), 3_000);
        assert_eq!(
            names(&glob(dir.path(), "**/*.rs")),
            ["new.rs", "mid/mid.rs", "old.rs"]
        );
    }

    #[test]
    fn split_pattern_walks_literal_folders_directly() {
        let split = |p| {
            let (prefix, rest) = split_pattern(p);
            (prefix.to_string_lossy().into_owned(), rest)
        };
        assert_eq!(split("**/*.rs"), (String::new(), "**/*.rs".into()));
        assert_eq!(split("src/**/*.rs"), ("src".into(), "**/*.rs".into()));
        assert_eq!(split("src/lib.rs"), ("src".into(), "lib.rs".into()));
        assert_eq!(split("/abs/dir/*.rs"), ("/abs/dir".into(), "*.rs".into()));
        assert_eq!(split("/*.rs"), ("/".into(), "*.rs".into()));
        assert_eq!(split("a/{b,c}/d.rs"), ("a".into(), "{b,c}/d.rs".into()));
    }

    #[tokio::test]
    async fn glob_tool_lists_paths_under_the_given_path() {
        let dir = tempfile::tempdir().unwrap();
        write_tree(
            dir.path(),
            &[
                ("src/lib.rs", ""),
                ("src/bin/main.rs", ""),
                ("README.md", ""),
            ],
        );
        touch(&dir.path().join("src/lib.rs"), 1_000);
        touch(&dir.path().join("src/bin/main.rs"), 2_000);
        let cx = ToolCx::permissive(dir.path());

        let out = GlobTool
            .call(
                serde_json::json!({"pattern": "**/*.rs", "path": "src"}),
                &cx,
            )
            .await
            .unwrap();
        assert_eq!(out.content, "src/bin/main.rs\nsrc/lib.rs");

        let out = GlobTool
            .call(serde_json::json!({"pattern": "src/*.rs"}), &cx)
            .await
            .unwrap();
        assert_eq!(out.content, "src/lib.rs");

        let absolute = format!("{}/**/*.md", dir.path().display());
        let out = GlobTool
            .call(serde_json::json!({"pattern": absolute}), &cx)
            .await
            .unwrap();
        assert_eq!(out.content, dir.path().join("README.md").to_string_lossy());

        let out = GlobTool
            .call(serde_json::json!({"pattern": "**/*.py"}), &cx)
            .await
            .unwrap();
        assert_eq!(out.content, "No files found");
    }

    #[tokio::test]
    async fn glob_tool_cuts_long_output_with_a_notice() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..DEFAULT_MAX_ENTRIES + 5 {
            std::fs::write(dir.path().join(format!("f{i}.txt")), "").unwrap();
        }
        let cx = ToolCx::permissive(dir.path());
        let out = GlobTool
            .call(serde_json::json!({"pattern": "*.txt"}), &cx)
            .await
            .unwrap();
        let (list, notice) = out.content.split_once("\n\n").unwrap();
        assert_eq!(list.lines().count(), DEFAULT_MAX_ENTRIES);
        assert_eq!(
            notice,
            "(Showing the 1000 most recently modified of 1005 files. Use a more specific \
             pattern or path to see the rest.)"
        );
    }

    #[tokio::test]
    async fn glob_tool_rejects_bad_arguments() {
        let dir = tempfile::tempdir().unwrap();
        let cx = ToolCx::permissive(dir.path());
        let err = GlobTool
            .call(serde_json::json!({"pattern": "a/[b.rs"}), &cx)
            .await
            .unwrap_err();
        assert!(
            matches!(&err, ToolError::InvalidArguments(m) if m.contains("invalid glob `[b.rs`")),
            "{err}"
        );
        let err = GlobTool
            .call(serde_json::json!({"pattern": "*", "path": "nowhere"}), &cx)
            .await
            .unwrap_err();
        assert!(
            matches!(&err, ToolError::InvalidArguments(m) if m.contains("path does not exist"))
        );
        let err = GlobTool
            .call(serde_json::json!({"patern": "*"}), &cx)
            .await
            .unwrap_err();
        assert!(matches!(&err, ToolError::InvalidArguments(m) if m.contains("unknown field")));
    }

    #[tokio::test]
    async fn glob_tool_asks_the_gate_and_stops_when_denied() {
        let dir = tempfile::tempdir().unwrap();
        write_tree(dir.path(), &[("sub/a.rs", "")]);
        let gate = Arc::new(DenyingGate::default());
        let cx = ToolCx {
            gate: gate.clone(),
            ..ToolCx::permissive(dir.path())
        };

        let err = GlobTool
            .call(serde_json::json!({"pattern": "sub/**/*.rs"}), &cx)
            .await
            .unwrap_err();
        assert_eq!(err, ToolError::Denied("reading is not allowed here".into()));
        let root = dir.path().join("sub").canonicalize().unwrap();
        assert_eq!(
            *gate.asked.lock().unwrap(),
            [GateRequest::Read { path: root }]
        );
    }

    #[tokio::test]
    async fn glob_tool_stops_when_cancelled() {
        let dir = tempfile::tempdir().unwrap();
        write_tree(dir.path(), &[("a.rs", "")]);
        let cx = ToolCx::permissive(dir.path());
        cx.cancel.cancel();
        let err = GlobTool
            .call(serde_json::json!({"pattern": "*.rs"}), &cx)
            .await
            .unwrap_err();
        assert_eq!(err, ToolError::Cancelled);
    }
}
