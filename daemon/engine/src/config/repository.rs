//! Where a project's files are looked for from a folder: its repository's root, the top
//! of the folders whose memory files and `stepper.md` apply.

use std::path::{Path, PathBuf};

/// The folder holding `.git` at or above `cwd`, else the filesystem root.
pub fn repository_root(cwd: &Path) -> PathBuf {
    cwd.ancestors()
        .find(|dir| dir.join(".git").exists())
        .or_else(|| cwd.ancestors().last())
        .unwrap_or(cwd)
        .to_path_buf()
}
