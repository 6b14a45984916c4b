//! The apply_patch tool: Codex's patch format, which OpenAI's GPT-5 and codex models were
//! trained to edit with. One call adds, deletes, updates and moves several files; the whole
//! patch is planned in memory first, each changed file is shown to the gate as its own diff,
//! and the files are written only when every one is allowed, or not at all.

mod apply;
mod parse;

use std::collections::HashMap;
use std::fs::Permissions;
use std::path::{Path, PathBuf};

use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::json;
use stepper_engine::tool::{Tool, ToolCx, ToolError, ToolOutput, ToolResult, ToolSpec, parse_args};

use self::parse::FileOp;
use super::{blocking, diff, file, path};

const DESCRIPTION: &str = "\
Edits files with a patch: adds, deletes, updates and renames any number of files in one call. \
All or nothing: if any part of the patch is malformed or does not match its file, no file is \
changed and the error says what to fix.

The patch, in full:
*** Begin Patch
*** Add File: <path>
+<each line of the new file, prefixed with +>
*** Delete File: <path>
*** Update File: <path>
*** Move to: <new path>            (optional: also rename the file)
@@ <optional: a line above the change, such as `def run(self):` or `impl Parser {`>
 <an unchanged line, prefixed with one space>
-<a line to remove>
+<a line to add>
*** End of File                    (optional: this hunk ends at the end of the file)
*** End Patch

How to write hunks:
- Each change in an Update File is a hunk that starts with `@@`. Show about 3 unchanged lines \
above and below each change, so the hunk matches one place. When that is not unique, name the \
enclosing function or class after `@@`; several `@@` lines in a row narrow it step by step \
(`@@ class Shape` then `@@     def area(self):`).
- Hunks are found in order, each after the previous one: list them top to bottom.
- Copy unchanged and removed lines exactly from the file (without read's line-number prefix). \
Every hunk line starts with ` `, `-` or `+`, an empty line too.
- Add File fails if the file exists (use Update File); Update and Delete need it to exist.
- Paths are relative to the working directory, or absolute. Files keep their line endings.

Example:
*** Begin Patch
*** Add File: docs/hello.md
+# Hello
*** Update File: src/app.py
*** Move to: src/main.py
@@ def greet():
-    print(\"Hi\")
+    print(\"Hello, world!\")
*** Delete File: old.txt
*** End Patch";

#[derive(Deserialize)]
struct Args {
    input: String,
}

/// `apply_patch {input}`: applies a patch in Codex's format (its JSON function shape). Not in
/// [`super::tools`]: which model families are offered it is decided where tools are chosen.
pub struct ApplyPatch;

impl Tool for ApplyPatch {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "apply_patch".into(),
            description: DESCRIPTION.into(),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "input": {
                        "type": "string",
                        "description": "The whole patch, from `*** Begin Patch` to `*** End Patch`."
                    }
                },
                "required": ["input"],
                "additionalProperties": false
            }),
        }
    }

    fn call<'a>(&'a self, args: serde_json::Value, cx: &'a ToolCx) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let Args { input } = parse_args(args)?;
            let ops = parse::parse(&input).map_err(|e| {
                ToolError::InvalidArguments(format!(
                    "the patch is malformed at {e}. No file was changed; fix it and send the \
                     whole patch again."
                ))
            })?;
            let ops = ops
                .into_iter()
                .map(|op| Located::new(cx, op))
                .collect::<Result<Vec<_>, _>>()?;
            let root = cx.project_root.clone();
            let plan = blocking(move || plan(ops, &root)).await?;
            if plan.changes.is_empty() {
                return Ok(ToolOutput::text(
                    "The patch leaves every file as it was; nothing was written.",
                ));
            }

            for change in &plan.changes {
                match file::ask(cx, &change.path, &change.diff).await {
                    Ok(()) => {}
                    Err(ToolError::Denied(why)) => {
                        return Err(ToolError::Denied(format!(
                            "changing {} was refused ({why}), so no file was written",
                            change.label
                        )));
                    }
                    Err(e) => return Err(e),
                }
            }

            let Plan { changes, summary } = plan;
            let diff: String = changes.iter().map(|c| c.diff.as_str()).collect();
            let changed = changes.iter().map(|c| c.path.clone()).collect();
            blocking(move || write(&changes)).await?;
            Ok(file::changed(summary, diff, changed))
        })
    }
}

/// A file operation with its paths made absolute against the session's folder.
struct Located {
    op: FileOp,
    path: PathBuf,
    move_to: Option<PathBuf>,
}

impl Located {
    fn new(cx: &ToolCx, op: FileOp) -> Result<Located, ToolError> {
        let requested =
            |arg: &str| path::requested(cx, arg).map_err(|e| in_op(&op, &e.to_string()));
        let (path, move_to) = match &op {
            FileOp::Add { path, .. } | FileOp::Delete { path, .. } => (requested(path)?, None),
            FileOp::Update { path, move_to, .. } => (
                requested(path)?,
                move_to.as_deref().map(&requested).transpose()?,
            ),
        };
        Ok(Located { op, path, move_to })
    }
}

/// An error in one operation of the patch: which, what, and that nothing was written.
fn in_op(op: &FileOp, message: &str) -> ToolError {
    // After lines quoted from the file, the advice reads better on a line of its own.
    let gap = if message.contains('\n') { "\n" } else { " " };
    ToolError::Failed(format!(
        "{}: {message}{gap}No file was changed; fix the patch and send it again whole.",
        op.title()
    ))
}

/// What the patch will do, worked out before the gate is asked.
struct Plan {
    /// One per file whose content changes, in the order the patch first names them.
    changes: Vec<Change>,
    /// What the model reads on success.
    summary: String,
}

/// One file's change.
struct Change {
    /// Canonical (the file, or where it will be).
    path: PathBuf,
    label: String,
    /// Its bytes when the patch was planned (`None`: it did not exist).
    before: Option<Vec<u8>>,
    /// Its bytes after (`None`: removed).
    after: Option<Vec<u8>>,
    /// Permissions for the file if it has to be created: a moved file's own, or a removed
    /// file's when a failed write brings it back.
    permissions: Option<Permissions>,
    /// What the gate is shown.
    diff: String,
}

/// A file as the patch has left it so far, in memory: operations later in the patch see
/// what earlier ones did (two Update sections of one file, a Delete then an Add).
struct Staged {
    path: PathBuf,
    label: String,
    before: Option<Vec<u8>>,
    permissions: Option<Permissions>,
    now: Now,
    /// The file whose content this one now holds, when it was moved here.
    moved_from: Option<usize>,
}

enum Now {
    /// As on disk.
    Untouched,
    Text(String),
    Gone,
}

impl Staged {
    fn exists(&self) -> bool {
        match self.now {
            Now::Untouched => self.before.is_some(),
            Now::Text(_) => true,
            Now::Gone => false,
        }
    }

    /// Its text now, when it exists and is text.
    fn text(&self) -> Result<Option<String>, ToolError> {
        match (&self.now, &self.before) {
            (Now::Untouched, Some(bytes)) => file::text(bytes.clone(), &self.label).map(Some),
            (Now::Text(text), _) => Ok(Some(text.clone())),
            (Now::Untouched, None) | (Now::Gone, _) => Ok(None),
        }
    }

    fn after(&self) -> Option<Vec<u8>> {
        match &self.now {
            Now::Untouched => self.before.clone(),
            Now::Text(text) => Some(text.clone().into_bytes()),
            Now::Gone => None,
        }
    }
}

/// The files the patch touches, each loaded once.
struct Stage {
    root: PathBuf,
    files: Vec<Staged>,
    index: HashMap<PathBuf, usize>,
}

impl Stage {
    /// The file that writing to `requested` reaches, loaded on first use.
    fn file(&mut self, requested: &Path) -> Result<usize, ToolError> {
        let path = path::for_write(requested)?;
        if let Some(&at) = self.index.get(&path) {
            return Ok(at);
        }
        let label = path::label(&self.root, &path);
        let before = file::load(&path, &label)?;
        let permissions = match before {
            Some(_) => std::fs::metadata(&path).ok().map(|m| m.permissions()),
            None => None,
        };
        self.files.push(Staged {
            path: path.clone(),
            label,
            before,
            permissions,
            now: Now::Untouched,
            moved_from: None,
        });
        self.index.insert(path, self.files.len() - 1);
        Ok(self.files.len() - 1)
    }

    /// The file at `requested`, which must exist now; a missing one is an error that
    /// suggests close names, then `hint`.
    fn existing(&mut self, requested: &Path, hint: &str) -> Result<usize, String> {
        let at = self.file(requested).map_err(|e| e.to_string())?;
        let staged = &self.files[at];
        if staged.exists() {
            return Ok(at);
        }
        if staged.before.is_some() {
            return Err(format!(
                "{} is deleted or moved away earlier in this patch.",
                staged.label
            ));
        }
        Err(match path::existing(requested, &self.root, hint) {
            Err(e) => e.to_string(),
            Ok(_) => format!("{} does not exist.", staged.label),
        })
    }
}

fn plan(ops: Vec<Located>, root: &Path) -> Result<Plan, ToolError> {
    let mut stage = Stage {
        root: path::canonical_root(root),
        files: Vec::new(),
        index: HashMap::new(),
    };
    for located in &ops {
        stage_op(&mut stage, located).map_err(|message| in_op(&located.op, &message))?;
    }
    Ok(settle(stage))
}

/// Applies one operation to the stage, or says why it cannot be.
fn stage_op(stage: &mut Stage, located: &Located) -> Result<(), String> {
    let Located { op, path, move_to } = located;
    match op {
        FileOp::Add { content, .. } => {
            let at = stage.file(path).map_err(|e| e.to_string())?;
            let staged = &mut stage.files[at];
            if staged.exists() {
                return Err(format!(
                    "{} already exists. Use `*** Update File: {}` to change it (or delete it \
                     first in the same patch to replace it).",
                    staged.label, staged.label
                ));
            }
            staged.now = Now::Text(content.clone());
            staged.moved_from = None;
        }
        FileOp::Delete { .. } => {
            not_a_link(path, "delete")?;
            let at = stage.existing(path, "")?;
            stage.files[at].now = Now::Gone;
        }
        FileOp::Update { hunks, .. } => {
            let at = stage.existing(path, "To create a file, use `*** Add File:`.")?;
            let staged = &stage.files[at];
            let Some(old) = staged.text().map_err(|e| e.to_string())? else {
                return Err(format!("{} does not exist.", staged.label));
            };
            let new = apply::apply(&old, hunks)
                .map_err(|mismatch| mismatch.describe(&staged.label, &old, hunks))?;
            let Some(target) = move_to else {
                stage.files[at].now = Now::Text(new);
                return Ok(());
            };
            not_a_link(path, "move")?;
            let to = stage.file(target).map_err(|e| e.to_string())?;
            if to == at {
                stage.files[at].now = Now::Text(new);
                return Ok(());
            }
            if stage.files[to].exists() {
                let label = &stage.files[to].label;
                return Err(format!(
                    "cannot move to {label}: it already exists. Delete it first in the same \
                     patch to replace it, or choose another name."
                ));
            }
            // A file moved twice in one patch comes from where it first was.
            let origin = match stage.files[at].before {
                Some(_) => Some(at),
                None => stage.files[at].moved_from,
            };
            stage.files[at].now = Now::Gone;
            let moved = &mut stage.files[to];
            moved.now = Now::Text(new);
            moved.moved_from = origin;
        }
    }
    Ok(())
}

/// Refuses to delete or move a symbolic link: paths resolve through links, so the file
/// removed would be its target, which is not what naming the link asks for.
fn not_a_link(requested: &Path, doing: &str) -> Result<(), String> {
    match std::fs::symlink_metadata(requested) {
        Ok(meta) if meta.file_type().is_symlink() => Err(format!(
            "{} is a symbolic link; apply_patch would {doing} the file it points to, not the \
             link. Name the target file instead, or change the link itself with a command.",
            requested.display()
        )),
        _ => Ok(()),
    }
}

/// The changes the staged files amount to, with their diffs and the summary.
fn settle(stage: Stage) -> Plan {
    let files = &stage.files;
    let lossy = |bytes: &Option<Vec<u8>>| {
        bytes
            .as_deref()
            .map(|b| String::from_utf8_lossy(b).into_owned())
    };
    let moved_away: Vec<usize> = files.iter().filter_map(|f| f.moved_from).collect();
    let (mut added, mut modified, mut deleted) = (Vec::new(), Vec::new(), Vec::new());
    let mut changes = Vec::new();
    for (at, staged) in files.iter().enumerate() {
        let after = staged.after();
        if after == staged.before {
            continue;
        }
        let before_text = lossy(&staged.before);
        let after_text = lossy(&after);
        let origin = staged
            .moved_from
            .filter(|_| staged.before.is_none() && after.is_some())
            .map(|from| &files[from]);
        let diff = match origin {
            Some(from) => diff::between(
                lossy(&from.before)
                    .as_deref()
                    .map(|t| (from.label.as_str(), t)),
                after_text.as_deref().map(|t| (staged.label.as_str(), t)),
            ),
            None => diff::between(
                before_text.as_deref().map(|t| (staged.label.as_str(), t)),
                after_text.as_deref().map(|t| (staged.label.as_str(), t)),
            ),
        };
        match (&staged.before, &after, staged.moved_from) {
            (_, Some(_), Some(from)) => {
                modified.push(format!("M {} -> {}", files[from].label, staged.label));
            }
            (None, Some(_), None) => added.push(format!("A {}", staged.label)),
            (Some(_), Some(_), None) => modified.push(format!("M {}", staged.label)),
            (Some(_), None, _) if moved_away.contains(&at) => {}
            (Some(_), None, _) => deleted.push(format!("D {}", staged.label)),
            (None, None, _) => {}
        }
        let permissions = match origin {
            Some(from) => from.permissions.clone(),
            None => staged.permissions.clone(),
        };
        changes.push(Change {
            path: staged.path.clone(),
            label: staged.label.clone(),
            before: staged.before.clone(),
            after,
            permissions,
            diff,
        });
    }
    let summary = std::iter::once("Success. Updated the following files:".to_string())
        .chain(added)
        .chain(modified)
        .chain(deleted)
        .collect::<Vec<_>>()
        .join("\n");
    Plan { changes, summary }
}

/// Writes every change, files that get content before files that go (so a moved file is in
/// its new place before its old one is removed). If one fails, those already written are put
/// back as they were and the error says so.
fn write(changes: &[Change]) -> Result<(), ToolError> {
    let mut order: Vec<&Change> = changes.iter().filter(|c| c.after.is_some()).collect();
    order.extend(changes.iter().filter(|c| c.after.is_none()));
    let mut done: Vec<&Change> = Vec::new();
    for change in order {
        let written = match &change.after {
            Some(after) => file::commit_as(
                &change.path,
                &change.label,
                change.before.as_deref(),
                after,
                change.permissions.as_ref(),
            ),
            None => file::remove(
                &change.path,
                &change.label,
                change.before.as_deref().unwrap_or_default(),
            ),
        };
        if let Err(e) = written {
            let unrestored: Vec<String> = done
                .iter()
                .rev()
                .filter_map(|c| restore(c).err().map(|e| format!("{}: {e}", c.label)))
                .collect();
            let mut message = format!("applying the patch stopped at {}: {e}.", change.label);
            if unrestored.is_empty() {
                message.push_str(" The files already written were put back; no file was changed.");
            } else {
                message.push_str(&format!(
                    " Some files already written could not be put back and hold the patch's \
                     version: {}. Check them before retrying.",
                    unrestored.join("; ")
                ));
            }
            return Err(ToolError::Failed(message));
        }
        done.push(change);
    }
    Ok(())
}

/// Puts a written change back as it was before the patch.
fn restore(change: &Change) -> Result<(), ToolError> {
    match (&change.before, &change.after) {
        (Some(before), after) => file::commit_as(
            &change.path,
            &change.label,
            after.as_deref(),
            before,
            change.permissions.as_ref(),
        ),
        (None, Some(after)) => file::remove(&change.path, &change.label, after),
        (None, None) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use std::fs;

    use serde_json::json;
    use stepper_engine::tool::{Decision, GateRequest, Tool, ToolCx, ToolError, ToolOutput};

    use super::*;
    use crate::fs::testing;

    async fn patch(cx: &ToolCx, input: &str) -> Result<ToolOutput, ToolError> {
        ApplyPatch.call(json!({ "input": input }), cx).await
    }

    fn read(path: &Path) -> String {
        fs::read_to_string(path).unwrap()
    }

    #[test]
    fn spec_takes_the_whole_patch_as_input() {
        let spec = ApplyPatch.spec();
        assert_eq!(spec.name, "apply_patch");
        assert_eq!(spec.input_schema["required"], json!(["input"]));
        assert_eq!(spec.input_schema["additionalProperties"], json!(false));
        assert_eq!(spec.input_schema["properties"]["input"]["type"], "string");
        assert!(!ApplyPatch.read_only());
        for marker in [
            "*** Begin Patch",
            "*** Add File:",
            "*** Move to:",
            "*** End of File",
        ] {
            assert!(spec.description.contains(marker), "{marker}");
        }
    }

    #[tokio::test]
    async fn adds_updates_moves_and_deletes_files_in_one_call() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        fs::create_dir(root.join("src")).unwrap();
        fs::write(root.join("src/app.py"), "def greet():\n    print(\"Hi\")\n").unwrap();
        fs::write(root.join("lib.rs"), "fn a() {}\nfn b() {}\n").unwrap();
        fs::write(root.join("old.txt"), "bye\n").unwrap();
        let (cx, gate) = testing::allow(&root);
        let out = patch(
            &cx,
            "*** Begin Patch\n\
             *** Add File: docs/hello.md\n\
             +# Hello\n\
             *** Update File: src/app.py\n\
             *** Move to: src/main.py\n\
             @@ def greet():\n\
             -    print(\"Hi\")\n\
             +    print(\"Hello\")\n\
             *** Update File: lib.rs\n\
             @@\n\
             \x20fn a() {}\n\
             -fn b() {}\n\
             +fn c() {}\n\
             *** Delete File: old.txt\n\
             *** End Patch",
        )
        .await
        .unwrap();
        assert_eq!(
            out.content,
            "Success. Updated the following files:\nA docs/hello.md\n\
             M src/app.py -> src/main.py\nM lib.rs\nD old.txt"
        );
        assert_eq!(read(&root.join("docs/hello.md")), "# Hello\n");
        assert_eq!(
            read(&root.join("src/main.py")),
            "def greet():\n    print(\"Hello\")\n"
        );
        assert!(!root.join("src/app.py").exists());
        assert_eq!(read(&root.join("lib.rs")), "fn a() {}\nfn c() {}\n");
        assert!(!root.join("old.txt").exists());

        let requests = gate.requests();
        let asked: Vec<(PathBuf, String)> = requests
            .iter()
            .map(|r| match r {
                GateRequest::Edit { path, diff } => (path.clone(), diff.clone()),
                other => panic!("{other:?}"),
            })
            .collect();
        let diffs = [
            "--- /dev/null\n+++ b/docs/hello.md\n@@ -0,0 +1 @@\n+# Hello\n",
            "--- a/src/app.py\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-def greet():\n-    print(\"Hi\")\n",
            "--- a/src/app.py\n+++ b/src/main.py\n@@ -1,2 +1,2 @@\n def greet():\n-    print(\"Hi\")\n+    print(\"Hello\")\n",
            "--- a/lib.rs\n+++ b/lib.rs\n@@ -1,2 +1,2 @@\n fn a() {}\n-fn b() {}\n+fn c() {}\n",
            "--- a/old.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n",
        ];
        let paths = [
            "docs/hello.md",
            "src/app.py",
            "src/main.py",
            "lib.rs",
            "old.txt",
        ];
        assert_eq!(
            asked,
            paths
                .iter()
                .zip(diffs)
                .map(|(p, d)| (root.join(p), d.to_string()))
                .collect::<Vec<_>>()
        );
        assert_eq!(out.details.diff, Some(diffs.concat()));
        assert_eq!(
            out.details.changed,
            paths.iter().map(|p| root.join(p)).collect::<Vec<_>>()
        );
    }

    #[tokio::test]
    async fn update_keeps_crlf_line_endings() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("w.txt"), "one\r\ntwo\r\nthree\r\n").unwrap();
        let cx = ToolCx::permissive(dir.path());
        patch(
            &cx,
            "*** Begin Patch\n*** Update File: w.txt\n@@\n one\n-two\n+2\n+and a half\n three\n*** End Patch",
        )
        .await
        .unwrap();
        assert_eq!(
            read(&dir.path().join("w.txt")),
            "one\r\n2\r\nand a half\r\nthree\r\n"
        );
    }

    #[tokio::test]
    async fn a_hunk_that_does_not_match_writes_nothing_and_says_where() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("a.txt"), "a\n").unwrap();
        fs::write(dir.path().join("b.txt"), "one\ntwo\nthree\n").unwrap();
        let (cx, gate) = testing::allow(dir.path());
        let err = patch(
            &cx,
            "*** Begin Patch\n\
             *** Add File: new.txt\n+new\n\
             *** Update File: a.txt\n@@\n-a\n+A\n\
             *** Update File: b.txt\n@@\n one\n-2\n+TWO\n\
             *** End Patch",
        )
        .await
        .unwrap_err();
        let ToolError::Failed(message) = &err else {
            panic!("{err:?}")
        };
        assert!(
            message.starts_with(
                "Update File b.txt (patch line 8): hunk 1 of 1 (patch line 9) does not match \
                 b.txt: its unchanged and removed lines were not found"
            ),
            "{message}"
        );
        assert!(message.contains("     1 | one\n     2 | two"), "{message}");
        assert!(message.ends_with("No file was changed; fix the patch and send it again whole."));
        assert!(gate.requests().is_empty());
        assert!(!dir.path().join("new.txt").exists());
        assert_eq!(read(&dir.path().join("a.txt")), "a\n");
    }

    #[tokio::test]
    async fn a_refused_file_means_no_file_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        fs::write(root.join("a.txt"), "a\n").unwrap();
        fs::write(root.join("secret.txt"), "s\n").unwrap();
        let secret = root.join("secret.txt");
        let (cx, gate) = testing::answering(&root, move |request| match request {
            GateRequest::Edit { path, .. } if *path == secret => {
                Decision::Deny("the user said no".into())
            }
            _ => Decision::Allow,
        });
        let err = patch(
            &cx,
            "*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+A\n\
             *** Delete File: secret.txt\n*** Add File: c.txt\n+c\n*** End Patch",
        )
        .await
        .unwrap_err();
        assert_eq!(
            err,
            ToolError::Denied(
                "changing secret.txt was refused (the user said no), so no file was written".into()
            )
        );
        assert_eq!(gate.requests().len(), 2, "nothing is asked after a refusal");
        assert_eq!(read(&root.join("a.txt")), "a\n");
        assert_eq!(read(&root.join("secret.txt")), "s\n");
        assert!(!root.join("c.txt").exists());
    }

    #[tokio::test]
    async fn a_write_that_fails_midway_puts_back_what_was_written() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        fs::write(root.join("a.txt"), "a\n").unwrap();
        fs::write(root.join("b.txt"), "b\n").unwrap();
        fs::write(root.join("gone.txt"), "g\n").unwrap();
        // Someone edits b.txt while its approval waits: its write must fail.
        let b = root.join("b.txt");
        let (cx, _gate) = testing::answering(&root, move |request| {
            if matches!(request, GateRequest::Edit { path, .. } if *path == b) {
                fs::write(&b, "theirs\n").unwrap();
            }
            Decision::Allow
        });
        let err = patch(
            &cx,
            "*** Begin Patch\n*** Add File: new.txt\n+n\n*** Delete File: gone.txt\n\
             *** Update File: a.txt\n@@\n-a\n+A\n*** Update File: b.txt\n@@\n-b\n+B\n\
             *** End Patch",
        )
        .await
        .unwrap_err();
        let message = err.to_string();
        assert!(message.contains("stopped at b.txt"), "{message}");
        assert!(message.contains("changed on disk"), "{message}");
        assert!(
            message.contains("were put back; no file was changed"),
            "{message}"
        );
        assert!(!root.join("new.txt").exists());
        assert_eq!(read(&root.join("a.txt")), "a\n");
        assert_eq!(read(&root.join("gone.txt")), "g\n");
        assert_eq!(read(&root.join("b.txt")), "theirs\n");
    }

    #[tokio::test]
    async fn add_of_an_existing_file_and_update_or_delete_of_a_missing_one_fail() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("here.txt"), "x\n").unwrap();
        let (cx, gate) = testing::allow(dir.path());
        let err = patch(
            &cx,
            "*** Begin Patch\n*** Add File: here.txt\n+y\n*** End Patch",
        )
        .await
        .unwrap_err();
        assert!(
            err.to_string().starts_with(
                "Add File here.txt (patch line 2): here.txt already exists. Use `*** Update \
                 File: here.txt`"
            ),
            "{err}"
        );
        let err = patch(
            &cx,
            "*** Begin Patch\n*** Update File: her.txt\n@@\n-x\n*** End Patch",
        )
        .await
        .unwrap_err();
        let message = err.to_string();
        assert!(message.contains("her.txt does not exist."), "{message}");
        assert!(message.contains("Did you mean"), "{message}");
        assert!(
            message.contains("To create a file, use `*** Add File:`."),
            "{message}"
        );
        let err = patch(
            &cx,
            "*** Begin Patch\n*** Delete File: nope.txt\n*** End Patch",
        )
        .await
        .unwrap_err();
        assert!(
            err.to_string().contains("nope.txt does not exist."),
            "{err}"
        );
        let err = patch(
            &cx,
            "*** Begin Patch\n*** Delete File: here.txt\n*** Delete File: here.txt\n*** End Patch",
        )
        .await
        .unwrap_err();
        assert!(
            err.to_string()
                .contains("here.txt is deleted or moved away earlier in this patch"),
            "{err}"
        );
        assert!(gate.requests().is_empty());
        assert_eq!(read(&dir.path().join("here.txt")), "x\n");
    }

    #[tokio::test]
    async fn a_move_onto_an_existing_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("a"), "a\n").unwrap();
        fs::write(dir.path().join("b"), "b\n").unwrap();
        let cx = ToolCx::permissive(dir.path());
        let err = patch(
            &cx,
            "*** Begin Patch\n*** Update File: a\n*** Move to: b\n*** End Patch",
        )
        .await
        .unwrap_err();
        assert!(
            err.to_string()
                .contains("cannot move to b: it already exists"),
            "{err}"
        );
        // Deleting it first in the same patch is how to replace it.
        let out = patch(
            &cx,
            "*** Begin Patch\n*** Delete File: b\n*** Update File: a\n*** Move to: b\n*** End Patch",
        )
        .await
        .unwrap();
        assert_eq!(
            out.content,
            "Success. Updated the following files:\nM a -> b"
        );
        assert_eq!(read(&dir.path().join("b")), "a\n");
        assert!(!dir.path().join("a").exists());
    }

    #[tokio::test]
    async fn later_sections_see_what_earlier_ones_did() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("f"), "1\n2\n3\n").unwrap();
        let (cx, gate) = testing::allow(dir.path());
        let out = patch(
            &cx,
            "*** Begin Patch\n*** Update File: f\n@@\n-1\n+one\n\
             *** Update File: f\n@@\n one\n-2\n+two\n\
             *** Add File: g\n+g\n*** Delete File: g\n*** End Patch",
        )
        .await
        .unwrap();
        assert_eq!(out.content, "Success. Updated the following files:\nM f");
        assert_eq!(read(&dir.path().join("f")), "one\ntwo\n3\n");
        assert_eq!(gate.requests().len(), 1, "one question per changed file");
        assert!(!dir.path().join("g").exists());
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn a_moved_file_keeps_its_permissions() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let old = dir.path().join("run.sh");
        fs::write(&old, "echo hi\n").unwrap();
        fs::set_permissions(&old, fs::Permissions::from_mode(0o755)).unwrap();
        let cx = ToolCx::permissive(dir.path());
        patch(
            &cx,
            "*** Begin Patch\n*** Update File: run.sh\n*** Move to: bin/run.sh\n@@\n-echo hi\n+echo hello\n*** End Patch",
        )
        .await
        .unwrap();
        let new = dir.path().join("bin/run.sh");
        assert_eq!(read(&new), "echo hello\n");
        assert_eq!(
            fs::metadata(&new).unwrap().permissions().mode() & 0o777,
            0o755
        );
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn a_link_is_neither_deleted_nor_moved_through() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("real.txt"), "r\n").unwrap();
        std::os::unix::fs::symlink(dir.path().join("real.txt"), dir.path().join("link.txt"))
            .unwrap();
        let cx = ToolCx::permissive(dir.path());
        for input in [
            "*** Begin Patch\n*** Delete File: link.txt\n*** End Patch",
            "*** Begin Patch\n*** Update File: link.txt\n*** Move to: x.txt\n*** End Patch",
        ] {
            let err = patch(&cx, input).await.unwrap_err();
            assert!(err.to_string().contains("is a symbolic link"), "{err}");
        }
        assert_eq!(read(&dir.path().join("real.txt")), "r\n");
        // Updating through the link in place changes its target, as edit does.
        patch(
            &cx,
            "*** Begin Patch\n*** Update File: link.txt\n@@\n-r\n+R\n*** End Patch",
        )
        .await
        .unwrap();
        assert_eq!(read(&dir.path().join("real.txt")), "R\n");
    }

    #[tokio::test]
    async fn fuzzy_context_and_a_lenient_wrapper_still_apply() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(
            dir.path().join("m.py"),
            "class A:\n    def f(self):   \n        return 1\n",
        )
        .unwrap();
        let cx = ToolCx::permissive(dir.path());
        patch(
            &cx,
            "apply_patch <<'EOF'\n*** Update File: m.py\n@@ class A:\n def f(self):\n-    return 1\n+        return 2\nEOF\n",
        )
        .await
        .unwrap();
        assert_eq!(
            read(&dir.path().join("m.py")),
            "class A:\n    def f(self):   \n        return 2\n"
        );
    }

    #[tokio::test]
    async fn a_malformed_patch_is_an_argument_error_naming_the_line() {
        let dir = tempfile::tempdir().unwrap();
        let cx = ToolCx::permissive(dir.path());
        let err = patch(&cx, "*** Begin Patch\n*** Add File: a\noops\n*** End Patch")
            .await
            .unwrap_err();
        let ToolError::InvalidArguments(message) = &err else {
            panic!("{err:?}")
        };
        assert!(
            message.starts_with("the patch is malformed at line 3: every line"),
            "{message}"
        );
        assert!(!dir.path().join("a").exists());
        let err = ApplyPatch
            .call(json!({"patch": "*** Begin Patch"}), &cx)
            .await
            .unwrap_err();
        assert!(matches!(err, ToolError::InvalidArguments(_)), "{err:?}");
    }

    #[tokio::test]
    async fn a_patch_that_changes_nothing_asks_nothing() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("f"), "a\n").unwrap();
        let (cx, gate) = testing::allow(dir.path());
        let out = patch(
            &cx,
            "*** Begin Patch\n*** Update File: f\n@@\n a\n*** End Patch",
        )
        .await
        .unwrap();
        assert!(
            out.content.contains("nothing was written"),
            "{}",
            out.content
        );
        assert!(gate.requests().is_empty());
    }

    #[tokio::test]
    async fn absolute_paths_and_paths_outside_the_project_work() {
        let project = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let target = outside.path().canonicalize().unwrap().join("o.txt");
        let (cx, gate) = testing::allow(project.path());
        let out = patch(
            &cx,
            &format!(
                "*** Begin Patch\n*** Add File: {}\n+x\n*** End Patch",
                target.display()
            ),
        )
        .await
        .unwrap();
        assert_eq!(
            out.content,
            format!(
                "Success. Updated the following files:\nA {}",
                target.display()
            )
        );
        let GateRequest::Edit { path, diff } = &gate.requests()[0] else {
            panic!()
        };
        assert_eq!(path, &target);
        assert!(
            diff.starts_with(&format!("--- /dev/null\n+++ {}\n", target.display())),
            "{diff}"
        );
    }
}
