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
    let old_header = match old {
        Some(_) => header("a/", label),
        None => "/dev/null".to_string(),
    };
    let new_header = header("b/", label);
    let diff = TextDiff::configure()
        .timeout(DIFF_TIMEOUT)
        .diff_lines(old.unwrap_or(""), new);
    let text = diff
        .unified_diff()
        .context_radius(CONTEXT)
        .header(&old_header, &new_header)
        .to_string();
    if text.is_empty() && old.is_none() {
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
