//! The ls tool: one directory's entries, sorted, folders marked with `/`, leaving out what
//! the project's ignore files exclude and the `.git` folder.

use std::path::Path;

use futures::future::BoxFuture;
use globset::{Glob, GlobSet, GlobSetBuilder};
use ignore::WalkBuilder;
use serde::Deserialize;
use serde_json::json;
use stepper_engine::tool::{
    GateRequest, Tool, ToolCx, ToolError, ToolOutput, ToolResult, ToolSpec, parse_args,
};
use tokio_util::sync::CancellationToken;

use super::{blocking, path};

/// Entries shown at most; a larger folder gets a notice with the total.
const MAX_ENTRIES: usize = 1000;

/// Entries between two looks at the cancellation token.
const CANCEL_CHECK_EVERY: usize = 1024;

const DESCRIPTION: &str = "\
Lists the files and folders directly inside a directory, sorted by name; folders end with `/`.

Usage:
- `path` is absolute, or relative to the working directory; it defaults to the working directory.
- Entries excluded by .gitignore or .ignore files are left out. Hidden files are shown, except \
the .git folder.
- `ignore` takes glob patterns of names to leave out as well, e.g. [\"*.log\", \"node_modules\"].
- At most 1000 entries are listed. To find files by name across many folders, prefer the glob \
tool; to search file contents, use grep.";

#[derive(Deserialize)]
struct Args {
    path: Option<String>,
    #[serde(default)]
    ignore: Vec<String>,
}

/// `ls {path?, ignore?}`: the entries of one directory.
pub struct LsTool;

impl Tool for LsTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "ls".into(),
            description: DESCRIPTION.into(),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "path": {
                        "type": "string",
                        "description": "The directory to list: absolute, or relative to the working directory (default: the working directory)."
                    },
                    "ignore": {
                        "type": "array",
                        "items": { "type": "string" },
                        "description": "Glob patterns of entry names to leave out, e.g. [\"*.log\", \"dist\"]."
                    }
                },
                "required": [],
                "additionalProperties": false
            }),
        }
    }

    fn read_only(&self) -> bool {
        true
    }

    fn call<'a>(&'a self, args: serde_json::Value, cx: &'a ToolCx) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let args: Args = parse_args(args)?;
            let ignore = ignore_set(&args.ignore)?;
            let requested = match args.path.as_deref().map(str::trim) {
                None | Some("") => cx.cwd.clone(),
                Some(arg) => path::requested(cx, arg)?,
            };
            let root = cx.project_root.clone();
            let path = blocking(move || path::existing(&requested, &root, "")).await?;

            cx.gate(GateRequest::Read { path: path.clone() }).await?;

            let cancel = cx.cancel.clone();
            let listing = blocking(move || list(&path, &ignore, &cancel)).await?;
            Ok(ToolOutput::text(listing))
        })
    }
}

/// The `ignore` patterns, matched against entry names. A trailing `/` (as in .gitignore) is
/// dropped, since names carry none.
fn ignore_set(patterns: &[String]) -> Result<GlobSet, ToolError> {
    let mut set = GlobSetBuilder::new();
    for pattern in patterns {
        let trimmed = pattern.trim().trim_end_matches('/');
        if trimmed.is_empty() {
            continue;
        }
        let glob = Glob::new(trimmed).map_err(|e| {
            ToolError::InvalidArguments(format!("ignore pattern {pattern:?} is not a glob: {e}"))
        })?;
        set.add(glob);
    }
    set.build()
        .map_err(|e| ToolError::InvalidArguments(format!("ignore patterns: {e}")))
}

/// The listing of the directory at `dir` (canonical).
fn list(dir: &Path, ignore: &GlobSet, cancel: &CancellationToken) -> Result<String, ToolError> {
    let meta = std::fs::metadata(dir).map_err(|e| path::failed("open", dir, &e))?;
    if !meta.is_dir() {
        return Err(ToolError::Failed(format!(
            "{} is a file, not a directory; use read to see its content",
            dir.display()
        )));
    }
    let mut walk = WalkBuilder::new(dir);
    walk.max_depth(Some(1))
        .hidden(false)
        .parents(true)
        .ignore(true)
        .git_ignore(true)
        .git_global(true)
        .git_exclude(true)
        // A .gitignore means "not part of the project" to people even outside a repository.
        .require_git(false)
        .follow_links(false)
        .filter_entry(|entry| entry.file_name() != ".git");

    let mut entries = Vec::new();
    let mut unreadable = 0;
    for (index, result) in walk.build().enumerate() {
        if index % CANCEL_CHECK_EVERY == 0 && cancel.is_cancelled() {
            return Err(ToolError::Cancelled);
        }
        let entry = match result {
            Ok(entry) => entry,
            Err(e) => {
                tracing::debug!(dir = %dir.display(), error = %e, "ls skipped an entry");
                unreadable += 1;
                continue;
            }
        };
        if entry.depth() == 0 {
            continue;
        }
        let name = entry.file_name().to_string_lossy().into_owned();
        if ignore.is_match(&name) {
            continue;
        }
        let is_dir = match entry.file_type() {
            Some(kind) if kind.is_symlink() => entry.path().is_dir(),
            Some(kind) => kind.is_dir(),
            None => false,
        };
        entries.push(if is_dir { format!("{name}/") } else { name });
    }
    entries.sort_unstable();

    let mut out = format!("{}/\n", dir.display().to_string().trim_end_matches('/'));
    if entries.is_empty() {
        out.push_str("  (no entries, or all of them are ignored)\n");
    }
    for entry in entries.iter().take(MAX_ENTRIES) {
        out.push_str("  ");
        out.push_str(entry);
        out.push('\n');
    }
    if entries.len() > MAX_ENTRIES {
        out.push_str(&format!(
            "\n[Showing the first {MAX_ENTRIES} of {} entries. List a subfolder, or pass ignore \
             patterns, to see the rest.]\n",
            entries.len()
        ));
    }
    if unreadable > 0 {
        out.push_str(&format!("\n[{unreadable} entries could not be read.]\n"));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use std::fs;

    use serde_json::json;
    use stepper_engine::tool::{GateRequest, Tool, ToolCx, ToolError};

    use super::*;
    use crate::fs::testing;

    fn tree(root: &Path) {
        fs::create_dir_all(root.join("src/inner")).unwrap();
        fs::create_dir_all(root.join(".git/objects")).unwrap();
        fs::create_dir_all(root.join("target/debug")).unwrap();
        fs::write(root.join("src/lib.rs"), "").unwrap();
        fs::write(root.join("Cargo.toml"), "").unwrap();
        fs::write(root.join(".gitignore"), "target/\n*.tmp\n").unwrap();
        fs::write(root.join(".hidden"), "").unwrap();
        fs::write(root.join("scratch.tmp"), "").unwrap();
        fs::write(root.join("notes.md"), "").unwrap();
    }

    #[tokio::test]
    async fn lists_sorted_with_folders_marked_hidden_files_shown_and_ignored_ones_left_out() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        tree(&root);
        let (cx, gate) = testing::allow(&root);
        let out = LsTool.call(json!({}), &cx).await.unwrap().content;
        assert_eq!(
            out,
            format!(
                "{}/\n  .gitignore\n  .hidden\n  Cargo.toml\n  notes.md\n  src/\n",
                root.display()
            )
        );
        assert_eq!(gate.requests(), [GateRequest::Read { path: root.clone() }]);

        let out = LsTool
            .call(json!({"path": "src"}), &cx)
            .await
            .unwrap()
            .content;
        assert_eq!(
            out,
            format!("{}/\n  inner/\n  lib.rs\n", root.join("src").display())
        );
    }

    #[tokio::test]
    async fn ignore_patterns_leave_out_matching_names() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        tree(&root);
        let cx = ToolCx::permissive(&root);
        let out = LsTool
            .call(json!({"path": ".", "ignore": ["*.md", "src/", ".*"]}), &cx)
            .await
            .unwrap()
            .content;
        assert_eq!(out, format!("{}/\n  Cargo.toml\n", root.display()));
        let err = LsTool
            .call(json!({"ignore": ["a{"]}), &cx)
            .await
            .unwrap_err();
        assert!(matches!(err, ToolError::InvalidArguments(_)), "{err:?}");
    }

    #[tokio::test]
    async fn large_folders_are_capped_with_a_notice() {
        let dir = tempfile::tempdir().unwrap();
        for n in 0..1005 {
            fs::write(dir.path().join(format!("f{n:04}")), "").unwrap();
        }
        let cx = ToolCx::permissive(dir.path());
        let out = LsTool.call(json!({}), &cx).await.unwrap().content;
        assert_eq!(out.lines().filter(|l| l.starts_with("  f")).count(), 1000);
        assert!(out.contains("  f0999\n"), "{out}");
        assert!(!out.contains("f1000"), "{out}");
        assert!(
            out.contains("Showing the first 1000 of 1005 entries"),
            "{out}"
        );
    }

    #[tokio::test]
    async fn a_file_or_missing_path_is_an_error_and_denial_is_respected() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("f.txt"), "").unwrap();
        let cx = ToolCx::permissive(dir.path());
        let err = LsTool
            .call(json!({"path": "f.txt"}), &cx)
            .await
            .unwrap_err();
        assert!(
            err.to_string()
                .ends_with("is a file, not a directory; use read to see its content"),
            "{err}"
        );
        let err = LsTool.call(json!({"path": "nope"}), &cx).await.unwrap_err();
        assert!(err.to_string().contains("does not exist"), "{err}");

        let (cx, gate) = testing::deny(dir.path());
        let err = LsTool.call(json!({}), &cx).await.unwrap_err();
        assert!(matches!(err, ToolError::Denied(_)), "{err:?}");
        assert_eq!(gate.requests().len(), 1);
    }

    #[tokio::test]
    async fn empty_folder_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let cx = ToolCx::permissive(dir.path());
        let out = LsTool.call(json!({}), &cx).await.unwrap().content;
        assert!(
            out.ends_with("  (no entries, or all of them are ignored)\n"),
            "{out}"
        );
    }
}
