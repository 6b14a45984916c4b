//! Unified diffs of a file's old and new text: what the permission gate shows before a change
//! is written, and what clients render after it (`ToolDetails::diff`).

use std::time::Duration;

use similar::TextDiff;

/// How long the diff may search for a minimal answer before it settles for a coarser (still
/// correct) one, so rewriting a huge file never stalls a call.
const DIFF_TIMEOUT: Duration = Duration::from_secs(2);

/// Lines of unchanged context around each change.
const CONTEXT: usize = 3;

/// The unified diff from `old` to `new` for the file named `label` (relative to the project,
/// or absolute outside it). `old` is `None` for a file that does not exist yet, which diffs
/// from `/dev/null` as git does. Empty when nothing changes, except for a new empty file,
/// which still gets its headers so the gate sees what is being created.
pub(crate) fn unified(label: &str, old: Option<&str>, new: &str) -> String {
    between(old.map(|old| (label, old)), Some((label, new)))
}

/// The unified diff between two `(label, text)` sides, either of which may be missing
/// (`/dev/null`: a file created or removed), and whose labels may differ (a file moved). A
/// change that leaves no lines to show still gets its headers when a file appears or goes,
/// so the gate sees that it does.
pub(crate) fn between(old: Option<(&str, &str)>, new: Option<(&str, &str)>) -> String {
    let old_header = old.map_or_else(|| "/dev/null".to_string(), |(label, _)| header("a/", label));
    let new_header = new.map_or_else(|| "/dev/null".to_string(), |(label, _)| header("b/", label));
    let old_text = old.map_or("", |(_, text)| text);
    let new_text = new.map_or("", |(_, text)| text);
    let diff = TextDiff::configure()
        .timeout(DIFF_TIMEOUT)
        .diff_lines(old_text, new_text);
    let text = diff
        .unified_diff()
        .context_radius(CONTEXT)
        .header(&old_header, &new_header)
        .to_string();
    let renamed = matches!((old, new), (Some((a, _)), Some((b, _))) if a != b);
    if text.is_empty() && (old.is_none() || new.is_none() || renamed) {
        return format!("--- {old_header}\n+++ {new_header}\n");
    }
    text
}

/// `a/src/lib.rs` for a project path; an absolute path stays as it is, since `a//etc/hosts`
/// would read as a path inside the project.
fn header(prefix: &str, label: &str) -> String {
    if label.starts_with('/') {
        label.to_string()
    } else {
        format!("{prefix}{label}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changed_line_with_three_lines_of_context_and_git_headers() {
        let old = "1\n2\n3\n4\n5\n6\n7\n8\n9\n";
        let new = "1\n2\n3\n4\nfive\n6\n7\n8\n9\n";
        assert_eq!(
            unified("src/n.txt", Some(old), new),
            "--- a/src/n.txt\n+++ b/src/n.txt\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n"
        );
    }

    #[test]
    fn new_file_diffs_from_dev_null() {
        assert_eq!(
            unified("a.txt", None, "hi\n"),
            "--- /dev/null\n+++ b/a.txt\n@@ -0,0 +1 @@\n+hi\n"
        );
        assert_eq!(unified("empty", None, ""), "--- /dev/null\n+++ b/empty\n");
    }

    #[test]
    fn removed_and_moved_files_diff_against_dev_null_and_the_old_name() {
        assert_eq!(
            between(Some(("gone.txt", "a\nb\n")), None),
            "--- a/gone.txt\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-a\n-b\n"
        );
        assert_eq!(
            between(Some(("empty", "")), None),
            "--- a/empty\n+++ /dev/null\n"
        );
        assert_eq!(
            between(Some(("old.rs", "x\n")), Some(("new.rs", "y\n"))),
            "--- a/old.rs\n+++ b/new.rs\n@@ -1 +1 @@\n-x\n+y\n"
        );
        assert_eq!(
            between(Some(("old.rs", "x\n")), Some(("new.rs", "x\n"))),
            "--- a/old.rs\n+++ b/new.rs\n"
        );
    }

    #[test]
    fn unchanged_text_has_an_empty_diff() {
        assert_eq!(unified("x", Some("same\n"), "same\n"), "");
    }

    #[test]
    fn absolute_labels_keep_their_path() {
        let diff = unified("/etc/hosts", Some("a\n"), "b\n");
        assert!(
            diff.starts_with("--- /etc/hosts\n+++ /etc/hosts\n"),
            "{diff}"
        );
    }

    #[test]
    fn missing_final_newline_is_marked() {
        let diff = unified("x", Some("a\n"), "a\nb");
        assert!(diff.contains("+b\n\\ No newline at end of file"), "{diff}");
    }
}
