//! Where a path argument really points: made absolute against the session's folder with
//! symlinks followed, so the gate is asked about the file that is actually read or changed,
//! and labelled relative to the project for messages and diffs.

use std::io;
use std::path::{Component, Path, PathBuf};

use stepper_engine::tool::{ToolCx, ToolError};

/// How many close names a "not found" error suggests.
const SUGGESTIONS: usize = 3;

/// A folder with more entries than this is not scanned for suggestions.
const SUGGESTION_SCAN_LIMIT: usize = 5_000;

/// The argument made absolute against the session's folder. An empty argument is refused
/// rather than taken to mean the folder itself.
pub(crate) fn requested(cx: &ToolCx, arg: &str) -> Result<PathBuf, ToolError> {
    if arg.trim().is_empty() {
        return Err(ToolError::InvalidArguments(format!(
            "path is empty: pass a path, absolute or relative to {}",
            cx.cwd.display()
        )));
    }
    Ok(cx.resolve(arg))
}

/// The project root as the file system names it, to label the (canonical) paths under it.
pub(crate) fn canonical_root(root: &Path) -> PathBuf {
    std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf())
}

/// `requested`, which must exist, with symlinks followed. A missing path is an error that
/// suggests close names from the same folder when that folder is inside the project (looking
/// elsewhere would read outside it without asking), then `hint`.
pub(crate) fn existing(requested: &Path, root: &Path, hint: &str) -> Result<PathBuf, ToolError> {
    match std::fs::canonicalize(requested) {
        Ok(path) => Ok(path),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            let mut message = format!("{} does not exist.", requested.display());
            let close = close_names(requested, root);
            if !close.is_empty() {
                message.push_str(&format!(" Did you mean {}?", close.join(" or ")));
            }
            if !hint.is_empty() {
                message.push(' ');
                message.push_str(hint);
            }
            Err(ToolError::Failed(message))
        }
        Err(e) => Err(failed("open", requested, &e)),
    }
}

/// Where writing `requested` lands: the canonical path when it exists, otherwise its deepest
/// existing ancestor (canonical) followed by the rest with `.` and `..` applied, so a path
/// such as `new/../../outside` cannot hide from the gate where it goes.
pub(crate) fn for_write(requested: &Path) -> Result<PathBuf, ToolError> {
    let components: Vec<Component<'_>> = requested.components().collect();
    for split in (1..=components.len()).rev() {
        let prefix: PathBuf = components[..split].iter().collect();
        let mut resolved = match std::fs::canonicalize(&prefix) {
            Ok(base) => base,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(failed("open", &prefix, &e)),
        };
        for component in &components[split..] {
            match component {
                Component::Normal(name) => resolved.push(name),
                Component::ParentDir => {
                    resolved.pop();
                }
                Component::CurDir | Component::RootDir | Component::Prefix(_) => {}
            }
        }
        return Ok(resolved);
    }
    Err(ToolError::Failed(format!(
        "cannot place {}: none of its folders exist",
        requested.display()
    )))
}

/// `path` relative to the (canonical) project root, or absolute when outside it.
pub(crate) fn label(root: &Path, path: &Path) -> String {
    match path.strip_prefix(root) {
        Ok(rel) if rel.as_os_str().is_empty() => ".".to_string(),
        Ok(rel) => rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/"),
        Err(_) => path.display().to_string(),
    }
}

/// An I/O failure, saying what was being done to which path.
pub(crate) fn failed(doing: &str, path: &Path, e: &io::Error) -> ToolError {
    ToolError::Failed(format!("could not {doing} {}: {e}", path.display()))
}

/// Names in `requested`'s folder close to its file name, as full paths.
fn close_names(requested: &Path, root: &Path) -> Vec<String> {
    let (Some(parent), Some(name)) = (requested.parent(), requested.file_name()) else {
        return Vec::new();
    };
    let Ok(parent) = std::fs::canonicalize(parent) else {
        return Vec::new();
    };
    if !parent.starts_with(canonical_root(root)) {
        return Vec::new();
    }
    let Ok(entries) = std::fs::read_dir(&parent) else {
        return Vec::new();
    };
    let names: Vec<String> = entries
        .take(SUGGESTION_SCAN_LIMIT)
        .filter_map(|entry| entry.ok())
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    let wanted = name.to_string_lossy();
    let candidates: Vec<&str> = names.iter().map(String::as_str).collect();
    let mut close = similar::get_close_matches(wanted.as_ref(), &candidates, SUGGESTIONS, 0.6);
    // A name that differs only in case is the likeliest meaning; get_close_matches may rank
    // it below others, so put it first.
    if let Some(same) = candidates.iter().find(|c| c.eq_ignore_ascii_case(&wanted)) {
        close.retain(|c| c != same);
        close.insert(0, same);
        close.truncate(SUGGESTIONS);
    }
    close
        .into_iter()
        .map(|c| requested.with_file_name(c).display().to_string())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn for_write_follows_existing_symlinks_and_applies_dot_dot_to_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir(root.join("real")).unwrap();
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(root.join("real"), root.join("link")).unwrap();
            assert_eq!(
                for_write(&root.join("link/new/f.txt")).unwrap(),
                root.join("real/new/f.txt")
            );
        }
        assert_eq!(
            for_write(&root.join("new/../../x")).unwrap(),
            root.parent().unwrap().join("x")
        );
        assert_eq!(for_write(&root.join("./a/./b")).unwrap(), root.join("a/b"));
    }

    #[test]
    fn labels_are_relative_inside_the_project_and_absolute_outside() {
        let root = Path::new("/p/root");
        assert_eq!(label(root, Path::new("/p/root/src/lib.rs")), "src/lib.rs");
        assert_eq!(label(root, Path::new("/p/root")), ".");
        assert_eq!(label(root, Path::new("/etc/hosts")), "/etc/hosts");
    }

    #[test]
    fn missing_file_suggests_close_names_inside_the_project() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("README.md"), "").unwrap();
        std::fs::write(dir.path().join("main.rs"), "").unwrap();
        let err = existing(&dir.path().join("readme.md"), dir.path(), "").unwrap_err();
        let ToolError::Failed(message) = err else {
            panic!("{err:?}")
        };
        assert!(message.contains("readme.md does not exist"), "{message}");
        assert!(message.contains("Did you mean"), "{message}");
        assert!(message.contains("README.md"), "{message}");
        let err = existing(&dir.path().join("main.r"), dir.path(), "Use write.").unwrap_err();
        assert!(err.to_string().contains("main.rs?"), "{err}");
        assert!(err.to_string().ends_with("Use write."), "{err}");
    }

    #[test]
    fn no_suggestions_from_folders_outside_the_project() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret.txt"), "").unwrap();
        let project = tempfile::tempdir().unwrap();
        let err = existing(&outside.path().join("secret.tx"), project.path(), "").unwrap_err();
        assert!(!err.to_string().contains("Did you mean"), "{err}");
    }
}
