//! A file as the changing tools see it: loaded whole (under a size cap) to plan a change, shown
//! to the gate as a diff, then replaced atomically, and only if it still holds what was loaded
//! once the gate has said yes, so an approval never lands on content the user has changed
//! meanwhile.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use stepper_engine::tool::{GateRequest, ToolCx, ToolDetails, ToolError, ToolOutput, ToolResult};

use super::blocking;
use super::path::failed;

/// The largest file write, edit and multi_edit will load: they hold it, its new version and a
/// diff in memory at once.
pub(crate) const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// How much of a file's start is searched for a NUL byte to call it binary (as git does).
pub(crate) const BINARY_PROBE_BYTES: usize = 8 * 1024;

/// Whether the start of a file looks binary.
pub(crate) fn looks_binary(head: &[u8]) -> bool {
    head[..head.len().min(BINARY_PROBE_BYTES)].contains(&0)
}

/// The error for a file the text tools cannot handle.
pub(crate) fn binary_error(label: &str, size: u64) -> ToolError {
    ToolError::Failed(format!(
        "{label} is a binary file ({}), not UTF-8 text; the file tools only handle text",
        bytes(size)
    ))
}

/// A byte count for people.
pub(crate) fn bytes(n: u64) -> String {
    const KIB: u64 = 1024;
    const MIB: u64 = 1024 * KIB;
    match n {
        n if n >= MIB => format!("{:.1} MiB", n as f64 / MIB as f64),
        n if n >= KIB => format!("{:.1} KiB", n as f64 / KIB as f64),
        n => format!("{n} bytes"),
    }
}

/// Refuses anything but a regular file: a folder, or something a read could hang on (a FIFO,
/// a device).
pub(crate) fn check_regular(meta: &fs::Metadata, label: &str) -> Result<(), ToolError> {
    if meta.is_dir() {
        return Err(ToolError::Failed(format!(
            "{label} is a directory, not a file; use ls to list it"
        )));
    }
    if !meta.is_file() {
        return Err(ToolError::Failed(format!(
            "{label} is not a regular file (a device, socket or pipe); the file tools cannot use it"
        )));
    }
    Ok(())
}

/// The content of the file at `path` (canonical) before a change, or `None` if it does not
/// exist. Refuses what cannot be changed safely: folders, special files, files over
/// [`MAX_FILE_BYTES`] and read-only files.
pub(crate) fn load(path: &Path, label: &str) -> Result<Option<Vec<u8>>, ToolError> {
    let meta = match fs::metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(failed("open", path, &e)),
    };
    check_regular(&meta, label)?;
    if meta.len() > MAX_FILE_BYTES {
        return Err(ToolError::Failed(format!(
            "{label} is {}, over the {} the file tools change in one go; edit it with a command \
             (sed, a script) instead",
            bytes(meta.len()),
            bytes(MAX_FILE_BYTES)
        )));
    }
    if meta.permissions().readonly() {
        return Err(ToolError::Failed(format!(
            "{label} is read-only; it was left alone. Make it writable first if it really \
             should change"
        )));
    }
    fs::read(path)
        .map(Some)
        .map_err(|e| failed("read", path, &e))
}

/// `bytes` as text, or the binary-file error.
pub(crate) fn text(bytes: Vec<u8>, label: &str) -> Result<String, ToolError> {
    let size = bytes.len() as u64;
    if looks_binary(&bytes) {
        return Err(binary_error(label, size));
    }
    String::from_utf8(bytes).map_err(|_| binary_error(label, size))
}

/// One file's change, planned before the gate is asked.
pub(crate) struct Planned {
    pub(crate) path: PathBuf,
    pub(crate) label: String,
    /// What the file holds now (`None`: it does not exist).
    pub(crate) old: Option<Vec<u8>>,
    pub(crate) new: Vec<u8>,
    /// What the gate is shown.
    pub(crate) diff: String,
}

/// Gate, then write: shows the gate `change`, writes it once allowed (only if the file still
/// holds what the change was planned on), and reports `summary` with its diff.
pub(crate) async fn gate_then_write(cx: &ToolCx, change: Planned, summary: String) -> ToolResult {
    ask(cx, &change.path, &change.diff).await?;
    let Planned {
        path,
        label,
        old,
        new,
        diff,
    } = change;
    let written = path.clone();
    blocking(move || commit(&written, &label, old.as_deref(), &new)).await?;
    Ok(changed(summary, diff, vec![path]))
}

/// Shows the gate the change `diff` to the file at `path`: fine once it says yes and the call
/// was not cancelled meanwhile.
pub(crate) async fn ask(cx: &ToolCx, path: &Path, diff: &str) -> Result<(), ToolError> {
    cx.gate(GateRequest::Edit {
        path: path.to_path_buf(),
        diff: diff.to_string(),
    })
    .await?;
    if cx.cancel.is_cancelled() {
        return Err(ToolError::Cancelled);
    }
    Ok(())
}

/// What a changing tool reports: `summary`, its diff and the files it changed.
pub(crate) fn changed(summary: String, diff: String, changed: Vec<PathBuf>) -> ToolOutput {
    ToolOutput {
        media: Vec::new(),
        content: summary,
        details: ToolDetails {
            exit_code: None,
            diff: Some(diff),
            changed,
            ..Default::default()
        },
    }
}

/// Replaces the file at `path` (canonical) with `new`, provided it still holds `expected`
/// (`None`: it still does not exist). Creates missing parent folders. The new content goes to
/// a temporary file in the same folder, is flushed to disk and renamed over the old one, so a
/// crash leaves either the old file or the new one, never half of one; the old file's
/// permissions are kept.
pub(crate) fn commit(
    path: &Path,
    label: &str,
    expected: Option<&[u8]>,
    new: &[u8],
) -> Result<(), ToolError> {
    commit_as(path, label, expected, new, None)
}

/// [`commit`], giving a file that does not exist yet `permissions` (a moved file keeps its
/// mode, a removed one comes back with its own); an existing file always keeps its own.
pub(crate) fn commit_as(
    path: &Path,
    label: &str,
    expected: Option<&[u8]>,
    new: &[u8],
    permissions: Option<&fs::Permissions>,
) -> Result<(), ToolError> {
    let current = match fs::read(path) {
        Ok(current) => Some(current),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(failed("read", path, &e)),
    };
    if current.as_deref() != expected {
        return Err(changed_on_disk(label));
    }
    let Some(parent) = path.parent() else {
        return Err(ToolError::Failed(format!("{label} is not a file path")));
    };
    fs::create_dir_all(parent).map_err(|e| failed("create the folder", parent, &e))?;
    let old_meta = fs::metadata(path).ok();

    // Renaming over a file with other hard links would split it from them; write through it.
    #[cfg(unix)]
    if let Some(meta) = &old_meta {
        use std::os::unix::fs::MetadataExt as _;
        if meta.nlink() > 1 {
            return write_in_place(path, new).map_err(|e| failed("write", path, &e));
        }
    }

    let (temp, mut file) = temp_file(parent).map_err(|e| failed("create a file in", parent, &e))?;
    let written = (|| {
        file.write_all(new)?;
        match (&old_meta, permissions) {
            (Some(meta), _) => file.set_permissions(meta.permissions())?,
            (None, Some(permissions)) => file.set_permissions(permissions.clone())?,
            (None, None) => {}
        }
        file.sync_all()?;
        drop(file);
        fs::rename(&temp, path)
    })();
    if let Err(e) = written {
        // Best effort: the temporary file is hidden and harmless if this fails too.
        let _ = fs::remove_file(&temp);
        return Err(failed("write", path, &e));
    }
    // Make the rename itself durable; a failure here loses nothing already written.
    #[cfg(unix)]
    if let Ok(dir) = File::open(parent) {
        let _ = dir.sync_all();
    }
    Ok(())
}

/// Removes the file at `path` (canonical), provided it still holds `expected`.
pub(crate) fn remove(path: &Path, label: &str, expected: &[u8]) -> Result<(), ToolError> {
    match fs::read(path) {
        Ok(current) if current == expected => {}
        Ok(_) => return Err(changed_on_disk(label)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(changed_on_disk(label)),
        Err(e) => return Err(failed("read", path, &e)),
    }
    fs::remove_file(path).map_err(|e| failed("remove", path, &e))
}

fn changed_on_disk(label: &str) -> ToolError {
    ToolError::Failed(format!(
        "{label} changed on disk after this change was prepared (perhaps while it waited \
         for approval), so nothing was written; read it again and redo the change"
    ))
}

#[cfg(unix)]
fn write_in_place(path: &Path, new: &[u8]) -> io::Result<()> {
    let mut file = OpenOptions::new().write(true).truncate(true).open(path)?;
    file.write_all(new)?;
    file.sync_all()
}

/// A new, hidden file in `dir` with a name no other writer uses.
fn temp_file(dir: &Path) -> io::Result<(PathBuf, File)> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let mut last = None;
    for _ in 0..16 {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = dir.join(format!(".stepper-write-{}-{n}.tmp", std::process::id()));
        match OpenOptions::new().write(true).create_new(true).open(&path) {
            Ok(file) => return Ok((path, file)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::other("no free temporary file name")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commit_creates_parents_and_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a/b/c.txt");
        commit(&path, "a/b/c.txt", None, b"hello\n").unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "hello\n");
        let names: Vec<_> = fs::read_dir(dir.path().join("a/b")).unwrap().collect();
        assert_eq!(names.len(), 1);
    }

    #[test]
    fn commit_refuses_when_the_file_changed_since_it_was_loaded() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.txt");
        fs::write(&path, "theirs\n").unwrap();
        let err = commit(&path, "f.txt", Some(b"ours\n"), b"new\n").unwrap_err();
        assert!(err.to_string().contains("changed on disk"), "{err}");
        assert_eq!(fs::read_to_string(&path).unwrap(), "theirs\n");
        // A file that appeared where a new one was planned is not clobbered either.
        let err = commit(&path, "f.txt", None, b"new\n").unwrap_err();
        assert!(err.to_string().contains("changed on disk"), "{err}");
    }

    #[cfg(unix)]
    #[test]
    fn commit_keeps_permissions_and_hard_links() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.sh");
        fs::write(&path, "old\n").unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o750)).unwrap();
        commit(&path, "run.sh", Some(b"old\n"), b"new\n").unwrap();
        assert_eq!(
            fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o750
        );

        let other = dir.path().join("other-name");
        fs::hard_link(&path, &other).unwrap();
        commit(&path, "run.sh", Some(b"new\n"), b"newer\n").unwrap();
        assert_eq!(fs::read_to_string(&other).unwrap(), "newer\n");
    }

    #[cfg(unix)]
    #[test]
    fn commit_as_gives_a_new_file_the_permissions_asked_for() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("moved.sh");
        let mode = fs::Permissions::from_mode(0o700);
        commit_as(&path, "moved.sh", None, b"x\n", Some(&mode)).unwrap();
        assert_eq!(
            fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o700
        );
    }

    #[test]
    fn remove_deletes_only_what_was_loaded() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        fs::write(&path, "theirs\n").unwrap();
        let err = remove(&path, "f", b"ours\n").unwrap_err();
        assert!(err.to_string().contains("changed on disk"), "{err}");
        assert!(path.exists());
        remove(&path, "f", b"theirs\n").unwrap();
        assert!(!path.exists());
        let err = remove(&path, "f", b"theirs\n").unwrap_err();
        assert!(err.to_string().contains("changed on disk"), "{err}");
    }

    #[test]
    fn load_refuses_folders_and_read_only_files() {
        let dir = tempfile::tempdir().unwrap();
        let err = load(dir.path(), "d").unwrap_err();
        assert!(err.to_string().contains("is a directory"), "{err}");
        let path = dir.path().join("ro.txt");
        fs::write(&path, "x").unwrap();
        let mut perms = fs::metadata(&path).unwrap().permissions();
        perms.set_readonly(true);
        fs::set_permissions(&path, perms).unwrap();
        let err = load(&path, "ro.txt").unwrap_err();
        assert!(err.to_string().contains("read-only"), "{err}");
        assert_eq!(load(&dir.path().join("missing"), "missing").unwrap(), None);
    }

    #[test]
    fn text_refuses_nul_bytes_and_invalid_utf8() {
        assert_eq!(text(b"ok\n".to_vec(), "f").unwrap(), "ok\n");
        assert!(
            text(b"a\0b".to_vec(), "f")
                .unwrap_err()
                .to_string()
                .contains("binary")
        );
        assert!(
            text(vec![0xff, 0xfe, b'a'], "f")
                .unwrap_err()
                .to_string()
                .contains("3 bytes")
        );
    }
}
