//! The write tool: creates a file or replaces all of its content, after the gate has seen the
//! diff from what is there now.

use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::json;
use stepper_engine::tool::{Tool, ToolCx, ToolError, ToolOutput, ToolResult, ToolSpec, parse_args};

use super::{blocking, diff, file, path};

const DESCRIPTION: &str = "\
Writes a file to the local file system, creating it (and any missing parent folders) or \
replacing all of its content.

Usage:
- `path` is absolute, or relative to the working directory.
- An existing file is overwritten entirely. To change part of a file, prefer `edit` or \
`multi_edit`, which only send the changed text.
- Read an existing file before overwriting it, so nothing in it is lost by accident.
- `content` is written exactly as given: include the final newline if the file should end with \
one.
- Do not create documentation or README files unless asked to.";

#[derive(Deserialize)]
struct Args {
    path: String,
    content: String,
}

/// `write {path, content}`: creates or overwrites a file.
pub struct WriteTool;

/// What a write will do, worked out before the gate is asked.
struct Plan {
    path: std::path::PathBuf,
    label: String,
    old: Option<Vec<u8>>,
    diff: String,
}

impl Tool for WriteTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "write".into(),
            description: DESCRIPTION.into(),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "path": {
                        "type": "string",
                        "description": "The file to write: absolute, or relative to the working directory."
                    },
                    "content": {
                        "type": "string",
                        "description": "The file's complete new content."
                    }
                },
                "required": ["path", "content"],
                "additionalProperties": false
            }),
        }
    }

    fn call<'a>(&'a self, args: serde_json::Value, cx: &'a ToolCx) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let Args { path, content } = parse_args(args)?;
            let requested = path::requested(cx, &path)?;
            let root = cx.project_root.clone();
            let (plan, content) = blocking(move || {
                let plan = prepare(&requested, &root, &content)?;
                Ok((plan, content))
            })
            .await?;

            if plan.old.as_deref() == Some(content.as_bytes()) {
                return Ok(ToolOutput::text(format!(
                    "{} already has exactly this content; nothing was written.",
                    plan.label
                )));
            }

            let Plan {
                path,
                label,
                old,
                diff,
            } = plan;
            let lines = content.lines().count();
            let verb = if old.is_none() {
                "Created"
            } else {
                "Overwrote"
            };
            let s = if lines == 1 { "" } else { "s" };
            let summary = format!("{verb} {label} ({lines} line{s}).");
            let change = file::Planned {
                path,
                label,
                old,
                new: content.into_bytes(),
                diff,
            };
            file::gate_then_write(cx, change, summary).await
        })
    }
}

/// Where `requested` lands, what is there now and the diff to the new content.
fn prepare(
    requested: &std::path::Path,
    root: &std::path::Path,
    content: &str,
) -> Result<Plan, ToolError> {
    let path = path::for_write(requested)?;
    let label = path::label(&path::canonical_root(root), &path);
    let old = file::load(&path, &label)?;
    // An old binary file still gets a diff (of its bytes read as text, lossily): the gate
    // must show something, and the user sees that it was not text.
    let old_text = old.as_deref().map(String::from_utf8_lossy);
    let diff = diff::unified(&label, old_text.as_deref(), content);
    Ok(Plan {
        path,
        label,
        old,
        diff,
    })
}

#[cfg(test)]
mod tests {
    use std::fs;

    use serde_json::json;
    use stepper_engine::tool::{GateRequest, Tool, ToolError};

    use super::*;
    use crate::fs::testing;

    #[tokio::test]
    async fn creates_a_file_and_its_folders_after_asking_with_the_diff() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let (cx, gate) = testing::allow(&root);
        let out = WriteTool
            .call(json!({"path": "src/new/mod.rs", "content": "a\nb\n"}), &cx)
            .await
            .unwrap();
        assert_eq!(out.content, "Created src/new/mod.rs (2 lines).");
        assert_eq!(
            fs::read_to_string(root.join("src/new/mod.rs")).unwrap(),
            "a\nb\n"
        );
        let diff = "--- /dev/null\n+++ b/src/new/mod.rs\n@@ -0,0 +1,2 @@\n+a\n+b\n";
        assert_eq!(
            gate.requests(),
            [GateRequest::Edit {
                path: root.join("src/new/mod.rs"),
                diff: diff.into()
            }]
        );
        assert_eq!(out.details.diff.as_deref(), Some(diff));
        assert_eq!(out.details.changed, [root.join("src/new/mod.rs")]);
    }

    #[tokio::test]
    async fn overwrites_with_a_diff_from_the_old_content() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        fs::write(root.join("f.txt"), "keep\nold\n").unwrap();
        let (cx, gate) = testing::allow(&root);
        let out = WriteTool
            .call(json!({"path": "f.txt", "content": "keep\nnew\n"}), &cx)
            .await
            .unwrap();
        assert_eq!(out.content, "Overwrote f.txt (2 lines).");
        assert_eq!(
            fs::read_to_string(root.join("f.txt")).unwrap(),
            "keep\nnew\n"
        );
        let diff = "--- a/f.txt\n+++ b/f.txt\n@@ -1,2 +1,2 @@\n keep\n-old\n+new\n";
        assert_eq!(
            gate.requests(),
            [GateRequest::Edit {
                path: root.join("f.txt"),
                diff: diff.into()
            }]
        );
    }

    #[tokio::test]
    async fn denied_write_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("f.txt"), "old\n").unwrap();
        let (cx, gate) = testing::deny(dir.path());
        let err = WriteTool
            .call(json!({"path": "f.txt", "content": "new\n"}), &cx)
            .await
            .unwrap_err();
        assert_eq!(err, ToolError::Denied("the user said no".into()));
        assert_eq!(gate.requests().len(), 1);
        assert_eq!(
            fs::read_to_string(dir.path().join("f.txt")).unwrap(),
            "old\n"
        );
        let err = WriteTool
            .call(json!({"path": "sub/g.txt", "content": "new\n"}), &cx)
            .await
            .unwrap_err();
        assert!(matches!(err, ToolError::Denied(_)));
        assert!(
            !dir.path().join("sub").exists(),
            "no folder is created before approval"
        );
    }

    #[tokio::test]
    async fn identical_content_is_not_written_or_asked_about() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("f"), "same\n").unwrap();
        let (cx, gate) = testing::allow(dir.path());
        let out = WriteTool
            .call(json!({"path": "f", "content": "same\n"}), &cx)
            .await
            .unwrap();
        assert!(
            out.content.contains("already has exactly this content"),
            "{}",
            out.content
        );
        assert!(gate.requests().is_empty());
    }

    #[tokio::test]
    async fn a_directory_cannot_be_written() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir(dir.path().join("d")).unwrap();
        let (cx, gate) = testing::allow(dir.path());
        let err = WriteTool
            .call(json!({"path": "d", "content": "x"}), &cx)
            .await
            .unwrap_err();
        assert!(err.to_string().contains("d is a directory"), "{err}");
        assert!(gate.requests().is_empty());
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn writing_through_a_symlink_changes_its_target_and_keeps_the_link() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        fs::write(root.join("real.txt"), "old\n").unwrap();
        std::os::unix::fs::symlink(root.join("real.txt"), root.join("link.txt")).unwrap();
        let (cx, gate) = testing::allow(&root);
        WriteTool
            .call(json!({"path": "link.txt", "content": "new\n"}), &cx)
            .await
            .unwrap();
        assert_eq!(fs::read_to_string(root.join("real.txt")).unwrap(), "new\n");
        assert!(
            fs::symlink_metadata(root.join("link.txt"))
                .unwrap()
                .file_type()
                .is_symlink()
        );
        let GateRequest::Edit { path, .. } = &gate.requests()[0] else {
            panic!()
        };
        assert_eq!(path, &root.join("real.txt"));
    }

    #[tokio::test]
    async fn a_path_outside_the_project_is_absolute_in_the_diff() {
        let project = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let target = outside.path().canonicalize().unwrap().join("o.txt");
        let (cx, gate) = testing::allow(project.path());
        let out = WriteTool
            .call(
                json!({"path": target.to_str().unwrap(), "content": "x\n"}),
                &cx,
            )
            .await
            .unwrap();
        assert_eq!(
            out.content,
            format!("Created {} (1 line).", target.display())
        );
        let GateRequest::Edit { diff, .. } = &gate.requests()[0] else {
            panic!()
        };
        assert!(
            diff.starts_with(&format!("--- /dev/null\n+++ {}\n", target.display())),
            "{diff}"
        );
    }
}
