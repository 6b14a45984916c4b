//! The edit and multi_edit tools: string replacements in one file (exact, or the one place that
//! misses only by whitespace, said so in the result), applied in memory, shown to the gate as
//! one diff, and written all together or not at all.

use std::path::{Path, PathBuf};

use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::json;
use stepper_engine::tool::{Tool, ToolCx, ToolError, ToolOutput, ToolResult, ToolSpec, parse_args};

use super::replace::{self, Failure};
use super::{blocking, diff, file, path};

const EDIT_DESCRIPTION: &str = "\
Replaces exact text in a file.

Usage:
- Read the file first, so `old_string` matches what is in it now.
- When you copy text from read's output, keep the indentation exactly as it appears after the \
line-number prefix (spaces, number, tab), and never include the prefix itself.
- The edit fails if `old_string` is not in the file, or if it occurs more than once: then include \
more surrounding lines so it matches exactly one place, or set `replace_all` to change every \
occurrence (handy for renaming something throughout the file).
- If `old_string` differs from the file only in trailing whitespace or indentation (tabs for \
spaces, or the whole block indented more or less), the edit still applies where that fits exactly \
one place, `new_string` re-indented the same way, and the result says so. `replace_all` matches \
exactly only.
- The file keeps its own line endings: write `\\n` and a CRLF file stays CRLF.
- To create a file or replace all of it, use write. For several changes to one file, use \
multi_edit.";

const MULTI_EDIT_DESCRIPTION: &str = "\
Makes several exact text replacements in one file in a single call. Prefer it to several edit \
calls on the same file.

Usage:
- Each edit is {old_string, new_string, replace_all?} and follows the rules of edit: \
`old_string` must match the file exactly and, unless `replace_all` is true, exactly once (a \
miss only by trailing whitespace or indentation is forgiven where it fits one place).
- Edits apply in order, each to the text left by the ones before it, so an earlier edit must not \
change text that a later one looks for.
- All or nothing: if any edit fails, none is applied and the file is left unchanged; the error \
says which edit failed (counting from 1) and why.
- Read the file first, and copy text from read's output without the line-number prefix \
(spaces, number, tab).
- The file keeps its own line endings. To create a file, use write.";

#[derive(Deserialize)]
struct EditArgs {
    path: String,
    old_string: String,
    new_string: String,
    #[serde(default)]
    replace_all: bool,
}

#[derive(Deserialize)]
struct MultiEditArgs {
    path: String,
    edits: Vec<Change>,
}

/// One replacement, as edit and each entry of multi_edit's `edits` describe it.
#[derive(Deserialize)]
struct Change {
    old_string: String,
    new_string: String,
    #[serde(default)]
    replace_all: bool,
}

/// `edit {path, old_string, new_string, replace_all?}`: one exact replacement.
pub struct EditTool;

/// `multi_edit {path, edits: [{old_string, new_string, replace_all?}]}`: several replacements in
/// one file, all or none.
pub struct MultiEditTool;

impl Tool for EditTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "edit".into(),
            description: EDIT_DESCRIPTION.into(),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "path": {
                        "type": "string",
                        "description": "The file to change: absolute, or relative to the working directory."
                    },
                    "old_string": {
                        "type": "string",
                        "description": "The exact text to replace, including whitespace and indentation."
                    },
                    "new_string": {
                        "type": "string",
                        "description": "The text to put in its place (must differ from old_string)."
                    },
                    "replace_all": {
                        "type": "boolean",
                        "default": false,
                        "description": "Replace every occurrence of old_string instead of requiring exactly one."
                    }
                },
                "required": ["path", "old_string", "new_string"],
                "additionalProperties": false
            }),
        }
    }

    fn call<'a>(&'a self, args: serde_json::Value, cx: &'a ToolCx) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let EditArgs {
                path,
                old_string,
                new_string,
                replace_all,
            } = parse_args(args)?;
            let change = Change {
                old_string,
                new_string,
                replace_all,
            };
            edit_file(cx, &path, vec![change], Mode::Single).await
        })
    }
}

impl Tool for MultiEditTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "multi_edit".into(),
            description: MULTI_EDIT_DESCRIPTION.into(),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "path": {
                        "type": "string",
                        "description": "The file to change: absolute, or relative to the working directory."
                    },
                    "edits": {
                        "type": "array",
                        "minItems": 1,
                        "description": "The replacements, applied in order, each to the result of the ones before it.",
                        "items": {
                            "type": "object",
                            "properties": {
                                "old_string": {
                                    "type": "string",
                                    "description": "The exact text to replace, including whitespace and indentation."
                                },
                                "new_string": {
                                    "type": "string",
                                    "description": "The text to put in its place (must differ from old_string)."
                                },
                                "replace_all": {
                                    "type": "boolean",
                                    "default": false,
                                    "description": "Replace every occurrence of old_string instead of requiring exactly one."
                                }
                            },
                            "required": ["old_string", "new_string"],
                            "additionalProperties": false
                        }
                    }
                },
                "required": ["path", "edits"],
                "additionalProperties": false
            }),
        }
    }

    fn call<'a>(&'a self, args: serde_json::Value, cx: &'a ToolCx) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let MultiEditArgs { path, edits } = parse_args(args)?;
            if edits.is_empty() {
                return Err(ToolError::InvalidArguments(
                    "edits is empty: give at least one {old_string, new_string}".into(),
                ));
            }
            edit_file(cx, &path, edits, Mode::Multi).await
        })
    }
}

/// Which tool is editing, for how failures and results are worded.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Single,
    Multi,
}

/// An edit worked out in memory before the gate is asked.
struct Plan {
    path: PathBuf,
    label: String,
    old: String,
    new: String,
    diff: String,
    replacements: usize,
    /// Sentences about edits that matched only loosely, for the result.
    notes: Vec<String>,
}

async fn edit_file(cx: &ToolCx, path_arg: &str, changes: Vec<Change>, mode: Mode) -> ToolResult {
    let requested = path::requested(cx, path_arg)?;
    let root = cx.project_root.clone();
    let edits = changes.len();
    let plan = blocking(move || prepare(&requested, &root, &changes, mode)).await?;
    if plan.new == plan.old {
        return Ok(ToolOutput::text(format!(
            "The edits leave {} as it was; nothing was written.",
            plan.label
        )));
    }

    let Plan {
        path,
        label,
        old,
        new,
        diff,
        replacements,
        notes,
    } = plan;
    let mut summary = match mode {
        Mode::Single => format!("Edited {label}: replaced {}.", occurrences(replacements)),
        Mode::Multi => format!(
            "Edited {label}: applied {edits} edit{} ({}).",
            if edits == 1 { "" } else { "s" },
            occurrences(replacements)
        ),
    };
    for note in notes {
        summary.push(' ');
        summary.push_str(&note);
    }
    let change = file::Planned {
        path,
        label,
        old: Some(old.into_bytes()),
        new: new.into_bytes(),
        diff,
    };
    file::gate_then_write(cx, change, summary).await
}

fn occurrences(n: usize) -> String {
    if n == 1 {
        "1 occurrence".into()
    } else {
        format!("{n} occurrences")
    }
}

/// Loads the file and applies `changes` in order to a copy of it.
fn prepare(
    requested: &Path,
    root: &Path,
    changes: &[Change],
    mode: Mode,
) -> Result<Plan, ToolError> {
    // Mistakes in the arguments are reported before the file is even looked at.
    for (index, change) in changes.iter().enumerate() {
        let failure = if change.old_string.is_empty() {
            Failure::EmptyOld
        } else if change.old_string == change.new_string {
            Failure::Unchanged
        } else {
            continue;
        };
        return Err(failed(&failure, index, changes.len(), mode, ""));
    }

    let path = path::existing(requested, root, "To create a file, use write.")?;
    let label = path::label(&path::canonical_root(root), &path);
    let Some(bytes) = file::load(&path, &label)? else {
        return Err(ToolError::Failed(format!("{label} no longer exists")));
    };
    let old = file::text(bytes, &label)?;

    let mut new: Option<String> = None;
    let mut replacements = 0;
    let mut notes = Vec::new();
    for (index, change) in changes.iter().enumerate() {
        let current = new.as_deref().unwrap_or(&old);
        match replace::apply(
            current,
            &change.old_string,
            &change.new_string,
            change.replace_all,
        ) {
            Ok(replaced) => {
                if let Some(near_miss) = &replaced.near_miss {
                    notes.push(match mode {
                        Mode::Single => near_miss.describe(),
                        Mode::Multi => format!("Edit {}: {}", index + 1, near_miss.describe()),
                    });
                }
                new = Some(replaced.content);
                replacements += replaced.count;
            }
            Err(failure) => return Err(failed(&failure, index, changes.len(), mode, &label)),
        }
    }
    let new = new.unwrap_or_else(|| old.clone());
    let diff = diff::unified(&label, Some(&old), &new);
    Ok(Plan {
        path,
        label,
        old,
        new,
        diff,
        replacements,
        notes,
    })
}

/// The error for `failure` of edit number `index` (0-based) out of `count`.
fn failed(failure: &Failure, index: usize, count: usize, mode: Mode, label: &str) -> ToolError {
    let mut message = failure.message(label);
    if mode == Mode::Multi {
        let mut prefix = format!(
            "edit {} of {count} failed, so no edit was applied",
            index + 1
        );
        if !label.is_empty() {
            prefix.push_str(&format!(" and {label} is unchanged"));
        }
        message = format!("{prefix}: {message}");
        if index > 0 && matches!(failure, Failure::NotFound { .. }) {
            message.push_str(
                " Remember that edits apply in order: an earlier edit may have changed this text.",
            );
        }
    }
    match failure {
        Failure::EmptyOld | Failure::Unchanged => ToolError::InvalidArguments(message),
        Failure::NotFound { .. }
        | Failure::Ambiguous { .. }
        | Failure::NearMissAmbiguous { .. } => ToolError::Failed(message),
    }
}

#[cfg(test)]
mod tests {
    use std::fs;

    use serde_json::json;
    use stepper_engine::tool::{GateRequest, Tool, ToolCx, ToolError, ToolOutput};

    use super::*;
    use crate::fs::testing;

    async fn edit(cx: &ToolCx, args: serde_json::Value) -> Result<ToolOutput, ToolError> {
        EditTool.call(args, cx).await
    }

    async fn multi(cx: &ToolCx, args: serde_json::Value) -> Result<ToolOutput, ToolError> {
        MultiEditTool.call(args, cx).await
    }

    #[tokio::test]
    async fn edit_replaces_a_unique_match_after_asking_with_the_diff() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        fs::write(root.join("lib.rs"), "fn a() {}\nfn b() {}\n").unwrap();
        let (cx, gate) = testing::allow(&root);
        let out = edit(
            &cx,
            json!({"path": "lib.rs", "old_string": "fn b() {}", "new_string": "fn c() {}"}),
        )
        .await
        .unwrap();
        assert_eq!(out.content, "Edited lib.rs: replaced 1 occurrence.");
        assert_eq!(
            fs::read_to_string(root.join("lib.rs")).unwrap(),
            "fn a() {}\nfn c() {}\n"
        );
        let diff =
            "--- a/lib.rs\n+++ b/lib.rs\n@@ -1,2 +1,2 @@\n fn a() {}\n-fn b() {}\n+fn c() {}\n";
        assert_eq!(
            gate.requests(),
            [GateRequest::Edit {
                path: root.join("lib.rs"),
                diff: diff.into()
            }]
        );
        assert_eq!(out.details.diff.as_deref(), Some(diff));
        assert_eq!(out.details.changed, [root.join("lib.rs")]);
    }

    #[tokio::test]
    async fn denied_edit_leaves_the_file_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("f"), "old\n").unwrap();
        let (cx, gate) = testing::deny(dir.path());
        let err = edit(
            &cx,
            json!({"path": "f", "old_string": "old", "new_string": "new"}),
        )
        .await
        .unwrap_err();
        assert!(matches!(err, ToolError::Denied(_)), "{err:?}");
        assert_eq!(gate.requests().len(), 1);
        assert_eq!(fs::read_to_string(dir.path().join("f")).unwrap(), "old\n");
    }

    #[tokio::test]
    async fn edit_not_found_names_the_file_and_the_closest_lines() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("m.py"), "def f():\n    return x\n").unwrap();
        let (cx, gate) = testing::allow(dir.path());
        let err = edit(
            &cx,
            json!({"path": "m.py", "old_string": "def f():\n  return  x", "new_string": "x"}),
        )
        .await
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "old_string not found in m.py. The closest text is at lines 1-2, where line 2 \
             differs: file has \"    return x\", old_string has \"  return  x\". Read those \
             lines again and copy them exactly. All of old_string's text is in the file once \
             whitespace is ignored, so only spacing or line breaks differ."
        );
        let err = edit(
            &cx,
            json!({"path": "m.py", "old_string": "nowhere", "new_string": "x"}),
        )
        .await
        .unwrap_err();
        assert_eq!(
            err,
            ToolError::Failed("old_string not found in m.py.".into())
        );
        assert!(gate.requests().is_empty());
    }

    #[tokio::test]
    async fn edit_fits_a_near_miss_re_indents_new_string_and_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        fs::write(
            root.join("m.go"),
            "func f() int {\n\tif ok {\n\t\treturn 1\n\t}\n}\n",
        )
        .unwrap();
        let (cx, gate) = testing::allow(&root);
        let out = edit(
            &cx,
            json!({
                "path": "m.go",
                "old_string": "    if ok {\n        return 1\n    }",
                "new_string": "    if ok {\n        log()\n        return 2\n    }"
            }),
        )
        .await
        .unwrap();
        assert_eq!(
            out.content,
            "Edited m.go: replaced 1 occurrence. old_string matched lines 2-4 only once its \
             indentation was adjusted: it had spaces where the file has tabs (a tab taken as 4 \
             columns). new_string was re-indented the same way."
        );
        assert_eq!(
            fs::read_to_string(root.join("m.go")).unwrap(),
            "func f() int {\n\tif ok {\n\t\tlog()\n\t\treturn 2\n\t}\n}\n"
        );
        assert_eq!(gate.requests().len(), 1);
    }

    #[tokio::test]
    async fn near_misses_are_refused_when_ambiguous_or_replacing_all() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(
            dir.path().join("f.py"),
            "if a:\n    x = 1\nif b:\n    x = 1\n",
        )
        .unwrap();
        let (cx, gate) = testing::allow(dir.path());
        let err = edit(
            &cx,
            json!({"path": "f.py", "old_string": "\tx = 1\n", "new_string": "\tx = 2\n"}),
        )
        .await
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "old_string is not in f.py exactly, and once indentation and trailing whitespace \
             are ignored it matches 2 places (lines 2, 4), so nothing was changed; include more \
             surrounding lines so it matches one place, copied exactly as the file has them"
        );
        let err = edit(
            &cx,
            json!({
                "path": "f.py",
                "old_string": "if b:  \n    x = 1",
                "new_string": "if b:\n    x = 2",
                "replace_all": true
            }),
        )
        .await
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "old_string not found in f.py. replace_all replaces exact matches only, and \
             old_string would match lines 3-4 only once trailing whitespace is ignored. Copy \
             the text exactly as the file has it, or leave out replace_all to edit that one \
             place."
        );
        assert!(gate.requests().is_empty());
    }

    #[tokio::test]
    async fn edit_of_an_ambiguous_match_lists_its_lines() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("f"), "x = 1\ny = 2\nx = 1\n").unwrap();
        let (cx, gate) = testing::allow(dir.path());
        let err = edit(
            &cx,
            json!({"path": "f", "old_string": "x = 1", "new_string": "x = 3"}),
        )
        .await
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "old_string occurs 2 times in f (at lines 1, 3); include more surrounding lines in \
             old_string so it matches exactly one place, or set replace_all to true to replace \
             every occurrence"
        );
        assert!(gate.requests().is_empty());
        let out = edit(
            &cx,
            json!({"path": "f", "old_string": "x = 1", "new_string": "x = 3", "replace_all": true}),
        )
        .await
        .unwrap();
        assert_eq!(out.content, "Edited f: replaced 2 occurrences.");
        assert_eq!(
            fs::read_to_string(dir.path().join("f")).unwrap(),
            "x = 3\ny = 2\nx = 3\n"
        );
    }

    #[tokio::test]
    async fn edit_refuses_empty_or_identical_strings() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("f"), "a\n").unwrap();
        let cx = ToolCx::permissive(dir.path());
        let err = edit(
            &cx,
            json!({"path": "f", "old_string": "", "new_string": "b"}),
        )
        .await
        .unwrap_err();
        assert!(
            matches!(&err, ToolError::InvalidArguments(m) if m.contains("use write")),
            "{err}"
        );
        let err = edit(
            &cx,
            json!({"path": "f", "old_string": "a", "new_string": "a"}),
        )
        .await
        .unwrap_err();
        assert!(
            matches!(&err, ToolError::InvalidArguments(m) if m.contains("the same")),
            "{err}"
        );
    }

    #[tokio::test]
    async fn edit_of_a_missing_or_binary_file_fails_clearly() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("b.bin"), b"ab\0cd").unwrap();
        let cx = ToolCx::permissive(dir.path());
        let err = edit(
            &cx,
            json!({"path": "nope.rs", "old_string": "a", "new_string": "b"}),
        )
        .await
        .unwrap_err();
        assert!(err.to_string().contains("does not exist."), "{err}");
        assert!(
            err.to_string().ends_with("To create a file, use write."),
            "{err}"
        );
        let err = edit(
            &cx,
            json!({"path": "b.bin", "old_string": "a", "new_string": "b"}),
        )
        .await
        .unwrap_err();
        assert!(
            err.to_string().contains("b.bin is a binary file (5 bytes)"),
            "{err}"
        );
    }

    #[tokio::test]
    async fn edit_keeps_crlf_line_endings() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("w.txt"), "one\r\ntwo\r\nthree\r\n").unwrap();
        let cx = ToolCx::permissive(dir.path());
        edit(
            &cx,
            json!({"path": "w.txt", "old_string": "one\ntwo\n", "new_string": "one\n2\nand a half\n"}),
        )
        .await
        .unwrap();
        assert_eq!(
            fs::read_to_string(dir.path().join("w.txt")).unwrap(),
            "one\r\n2\r\nand a half\r\nthree\r\n"
        );
    }

    #[tokio::test]
    async fn multi_edit_applies_edits_in_order_with_one_gate_request() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        fs::write(root.join("f.rs"), "let a = 1;\nlet b = a;\nlet c = a;\n").unwrap();
        let (cx, gate) = testing::allow(&root);
        let out = multi(
            &cx,
            json!({"path": "f.rs", "edits": [
                {"old_string": "let a = 1;", "new_string": "let alpha = 1;"},
                {"old_string": "= a;", "new_string": "= alpha;", "replace_all": true},
                {"old_string": "let alpha = 1;", "new_string": "let alpha = 2;"}
            ]}),
        )
        .await
        .unwrap();
        assert_eq!(out.content, "Edited f.rs: applied 3 edits (4 occurrences).");
        let new = "let alpha = 2;\nlet b = alpha;\nlet c = alpha;\n";
        assert_eq!(fs::read_to_string(root.join("f.rs")).unwrap(), new);
        let requests = gate.requests();
        assert_eq!(requests.len(), 1);
        let GateRequest::Edit { path, diff } = &requests[0] else {
            panic!("{requests:?}")
        };
        assert_eq!(path, &root.join("f.rs"));
        assert_eq!(
            diff,
            "--- a/f.rs\n+++ b/f.rs\n@@ -1,3 +1,3 @@\n-let a = 1;\n-let b = a;\n-let c = a;\n\
             +let alpha = 2;\n+let b = alpha;\n+let c = alpha;\n"
        );
        assert_eq!(out.details.diff.as_ref(), Some(diff));
    }

    #[tokio::test]
    async fn multi_edit_is_all_or_nothing_and_names_the_failed_edit() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("f"), "one\ntwo\nthree\n").unwrap();
        let (cx, gate) = testing::allow(dir.path());
        let err = multi(
            &cx,
            json!({"path": "f", "edits": [
                {"old_string": "one", "new_string": "1"},
                {"old_string": "one", "new_string": "uno"},
                {"old_string": "three", "new_string": "3"}
            ]}),
        )
        .await
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "edit 2 of 3 failed, so no edit was applied and f is unchanged: old_string not found \
             in f. Remember that edits apply in order: an earlier edit may have changed this text."
        );
        assert_eq!(
            fs::read_to_string(dir.path().join("f")).unwrap(),
            "one\ntwo\nthree\n"
        );
        assert!(gate.requests().is_empty());

        let err = multi(
            &cx,
            json!({"path": "f", "edits": [
                {"old_string": "one", "new_string": "1"},
                {"old_string": "", "new_string": "x"}
            ]}),
        )
        .await
        .unwrap_err();
        assert!(
            matches!(&err, ToolError::InvalidArguments(m) if m.starts_with("edit 2 of 2 failed")),
            "{err}"
        );
        let err = multi(&cx, json!({"path": "f", "edits": []}))
            .await
            .unwrap_err();
        assert!(matches!(err, ToolError::InvalidArguments(_)), "{err:?}");
        assert_eq!(
            fs::read_to_string(dir.path().join("f")).unwrap(),
            "one\ntwo\nthree\n"
        );
    }

    #[tokio::test]
    async fn multi_edit_reports_ambiguity_with_the_edit_number() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("f"), "a\nb\na\n").unwrap();
        let cx = ToolCx::permissive(dir.path());
        let err = multi(
            &cx,
            json!({"path": "f", "edits": [{"old_string": "a", "new_string": "c"}]}),
        )
        .await
        .unwrap_err();
        assert!(err.to_string().starts_with("edit 1 of 1 failed"), "{err}");
        assert!(
            err.to_string()
                .contains("occurs 2 times in f (at lines 1, 3)"),
            "{err}"
        );
    }

    #[tokio::test]
    async fn multi_edit_names_the_edits_that_matched_loosely() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("f"), "a = 1\nb = 2   \nc = 3\n").unwrap();
        let cx = ToolCx::permissive(dir.path());
        let out = multi(
            &cx,
            json!({"path": "f", "edits": [
                {"old_string": "a = 1", "new_string": "a = 10"},
                {"old_string": "b = 2\nc = 3", "new_string": "b = 20\nc = 30"}
            ]}),
        )
        .await
        .unwrap();
        assert_eq!(
            out.content,
            "Edited f: applied 2 edits (2 occurrences). Edit 2: old_string matched lines 2-3 \
             only once trailing whitespace was ignored; new_string went in as written."
        );
        assert_eq!(
            fs::read_to_string(dir.path().join("f")).unwrap(),
            "a = 10\nb = 20\nc = 30\n"
        );
    }

    #[tokio::test]
    async fn denied_multi_edit_leaves_the_file_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("f"), "a\nb\n").unwrap();
        let (cx, gate) = testing::deny(dir.path());
        let err = multi(
            &cx,
            json!({"path": "f", "edits": [
                {"old_string": "a", "new_string": "A"},
                {"old_string": "b", "new_string": "B"}
            ]}),
        )
        .await
        .unwrap_err();
        assert!(matches!(err, ToolError::Denied(_)), "{err:?}");
        assert_eq!(gate.requests().len(), 1);
        assert_eq!(fs::read_to_string(dir.path().join("f")).unwrap(), "a\nb\n");
    }

    #[tokio::test]
    async fn multi_edit_keeps_crlf_and_skips_a_net_no_op() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("w"), "a\r\nb\r\n").unwrap();
        let (cx, gate) = testing::allow(dir.path());
        multi(
            &cx,
            json!({"path": "w", "edits": [
                {"old_string": "a\nb", "new_string": "a\nx\nb"},
                {"old_string": "b\n", "new_string": "c\n"}
            ]}),
        )
        .await
        .unwrap();
        assert_eq!(
            fs::read_to_string(dir.path().join("w")).unwrap(),
            "a\r\nx\r\nc\r\n"
        );
        let out = multi(
            &cx,
            json!({"path": "w", "edits": [
                {"old_string": "x", "new_string": "y"},
                {"old_string": "y", "new_string": "x"}
            ]}),
        )
        .await
        .unwrap();
        assert!(
            out.content.contains("nothing was written"),
            "{}",
            out.content
        );
        assert_eq!(gate.requests().len(), 1);
    }
}
