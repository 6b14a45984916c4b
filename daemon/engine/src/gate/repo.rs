//! Whether a git repository can make a read-only git command run a program or read outside
//! the project. git runs what its configuration names — an fsmonitor, an external diff, a
//! textconv or clean filter, a pager, a hook on index writes — and the repository's own
//! configuration is the project's: an edit (allowed without asking in `accept-edits`) or a
//! copied folder can put anything there. So:
//! - the repository's configuration files, and those of every repository git runs itself in
//!   (submodules: gitlinks in the index, `.git/modules`), hold only keys on an allow-list,
//!   with no includes;
//! - no hook that fires during read-only commands exists;
//! - a repository whose work tree lies inside the project keeps its git directory inside it
//!   (a `.git` file pointing elsewhere would read another repository);
//! - a git directory inside the project keeps everything it names inside it too (its common
//!   directory, alternates, links among its files): git prints what it reads there;
//! - every file is read only when it is a regular file of bounded size (a FIFO or
//!   `/dev/zero` behind a link must not hold the gate).
//!
//! The user's own configuration (global, system) is trusted, unless the environment moves it
//! into the project.
//!
//! *git's configuration is the project's*: in `accept-edits` an edit to `.git/config` needs no
//! approval, so a read-only git command is allowed only when the repository's configuration holds
//! allow-listed keys and no hook fires on index writes — and so do the repositories git runs itself
//! in (gitlinks read from the index, versions 2–4; `.git/modules`). A `.git` file leading out of
//! the project must be answered from the other side (a linked work tree's `gitdir`, a submodule's
//! `core.worktree`). Files are read only when regular and bounded (a FIFO behind a link once held
//! the gate). The user's global configuration is trusted unless `HOME` points into the project; the
//! repository the project folder belongs to is readable as a whole.
//!
//! *A git directory inside the project leads nowhere else*: no alternates, no common directory
//! outside, no link among its files leading out, and no tracked file under a linked folder (git
//! reads and prints through all of these); the index (versions 2–4) must parse exactly, trailer
//! included, so a wrong guess of the object name size cannot shift paths.
//!
//! *Repositories found as git finds them, or more*: git passes over a `.git` that is no repository
//! (`is_git_directory`: a valid `HEAD`, `objects` and `refs` it may enter), so the gate checks
//! every candidate on the way up until one git surely takes; a gitdir file (or a link to one) is
//! always taken. Being stricter than git there only costs a question.
//!
//! Why a repository is refused is a `String`, not an error type: any failure, whatever it
//! is, means the same thing — the command asks, with the reason as its text.

use std::collections::{BTreeSet, HashSet};
use std::path::{Path, PathBuf};
use std::time::Instant;

use stepper_protocol::session::Env;

use super::{is_process_view, resolve};

/// Environment variables of git's that the gate accepts: they name people and dates, or
/// only make git do less.
const HARMLESS_GIT_VARIABLES: &[&str] = &[
    "GIT_AUTHOR_NAME",
    "GIT_AUTHOR_EMAIL",
    "GIT_AUTHOR_DATE",
    "GIT_COMMITTER_NAME",
    "GIT_COMMITTER_EMAIL",
    "GIT_COMMITTER_DATE",
    "GIT_CEILING_DIRECTORIES",
    "GIT_TERMINAL_PROMPT",
    "GIT_OPTIONAL_LOCKS",
    "GIT_NO_LAZY_FETCH",
    "GIT_FLUSH",
    "GIT_PAGER",
];

/// The largest configuration-like file read (config, `commondir`, a `.git` file).
const MAX_SMALL_FILE: u64 = 1 << 20;
/// The largest index read.
const MAX_INDEX: u64 = 256 << 20;
/// Repositories looked at through submodules before the gate gives up and asks.
const MAX_REPOSITORIES: usize = 200;
/// Entries of `modules/` looked at before the gate gives up and asks.
const MAX_MODULE_ENTRIES: usize = 2_000;
/// Entries of a git directory (loose objects included) looked at for links before the gate
/// gives up and asks.
const MAX_GIT_DIR_ENTRIES: usize = 100_000;
/// Folders of tracked files looked at for links before the gate gives up and asks.
const MAX_TRACKED_FOLDERS: usize = 50_000;
/// Folders deep a tracked path may lie.
const MAX_PATH_DEPTH: usize = 256;
/// Tracked files (submodules' included) the gate looks at in the work tree before it asks.
const MAX_TRACKED_FILES: usize = 500_000;

/// Check the repository `dir` belongs to (if any). An error says why git might run a
/// program, or read what the gate cannot vouch for.
pub fn check(dir: &Path, env: &Env, project_root: &Path, deadline: Instant) -> Result<(), String> {
    for name in env.keys() {
        if name.starts_with("GIT_") && !HARMLESS_GIT_VARIABLES.contains(&name.as_str()) {
            return Err(format!(
                "the session's environment sets {name}, which changes what git reads or runs"
            ));
        }
    }
    let root = resolve(project_root);
    user_configuration_elsewhere(env, &root)?;
    let mut pending = discover(&located_at(dir)?)?;
    let mut seen: HashSet<PathBuf> = HashSet::new();
    while let Some(repo) = pending.pop() {
        if !seen.insert(repo.git_dir.clone()) {
            continue;
        }
        if seen.len() > MAX_REPOSITORIES {
            return Err("the repository has too many submodules to check".into());
        }
        if Instant::now() > deadline {
            return Err("the repository takes longer to check than the gate waits".into());
        }
        located(&repo, &root)?;
        check_git_dir(&repo.git_dir, &root, deadline)?;
        pending.extend(submodules(&repo, &root, deadline)?);
    }
    Ok(())
}

/// The user's git configuration (and global ignore file) is theirs, unless `HOME` or
/// `XDG_CONFIG_HOME` is relative or inside the project.
pub fn user_configuration_elsewhere(env: &Env, root: &Path) -> Result<(), String> {
    for var in ["HOME", "XDG_CONFIG_HOME"] {
        if let Some(value) = env.get(var)
            && !value.is_empty()
            && (!value.starts_with('/') || {
                let real = resolve(Path::new(value));
                real.starts_with(root) || is_process_view(&real)
            })
        {
            return Err(format!(
                "{var} is relative, inside the project or under /proc, so git could read its \
                 user configuration from there"
            ));
        }
    }
    Ok(())
}

/// The git directories whose `info/exclude` a `.git` in a folder leads to: the folder it is
/// (or that its gitdir file names) and its common directory.
pub fn exclude_dirs(dot_git: &Path) -> Result<Vec<PathBuf>, String> {
    let git_dir = if std::fs::metadata(dot_git).is_ok_and(|m| m.is_file()) {
        let text = read_text(dot_git)?.unwrap_or_default();
        let target = text
            .strip_prefix("gitdir: ")
            .ok_or_else(|| format!("{} is not a gitdir file", dot_git.display()))?;
        let folder = dot_git.parent().unwrap_or(Path::new("/"));
        located_at(&folder.join(pointer(target, dot_git)?))?
    } else {
        located_at(dot_git)?
    };
    let common = common_dir(&git_dir)?;
    Ok(if common == git_dir {
        vec![git_dir]
    } else {
        vec![git_dir, common]
    })
}

/// The regular files git tracks that a command run in `dir` reads from the work tree:
/// those below `dir`, or all of them (`whole`), and those of the submodules among them —
/// as paths in the work tree, for each repository git may take. An index the gate does not
/// read, or too many files, is an error.
pub fn tracked_files(dir: &Path, whole: bool, deadline: Instant) -> Result<Vec<PathBuf>, String> {
    let dir = located_at(dir)?;
    // Each repository with the folder below which its files count (none: all of them).
    let mut pending: Vec<(Repo, Option<PathBuf>)> = discover(&dir)?
        .into_iter()
        .map(|repo| (repo, (!whole).then(|| dir.clone())))
        .collect();
    let mut seen: HashSet<PathBuf> = HashSet::new();
    let mut out = Vec::new();
    while let Some((repo, below)) = pending.pop() {
        if !seen.insert(repo.git_dir.clone()) {
            continue;
        }
        if seen.len() > MAX_REPOSITORIES {
            return Err("the repository has too many submodules to check".into());
        }
        if Instant::now() > deadline {
            return Err("the repository takes longer to check than the gate waits".into());
        }
        let config = read_text(&repo.git_dir.join("config"))?.unwrap_or_default();
        let Some(tree) = worktrees(&config, &repo.git_dir)?
            .pop()
            .or_else(|| repo.work_tree.clone())
        else {
            continue;
        };
        let Some(index) = read_bounded(&repo.git_dir.join("index"), MAX_INDEX)? else {
            continue;
        };
        let tracked = tracked(&index, hash_size(&repo.git_dir)?, deadline, true)?;
        // A folder outside this work tree limits nothing.
        let prefix = below.and_then(|b| b.strip_prefix(&tree).ok().map(Path::to_path_buf));
        let in_scope = |path: &str| {
            prefix
                .as_ref()
                .is_none_or(|p| Path::new(path).starts_with(p))
        };
        out.extend(
            tracked
                .files
                .iter()
                .filter(|f| in_scope(f))
                .map(|f| tree.join(f)),
        );
        if out.len() > MAX_TRACKED_FILES {
            return Err("the repository tracks more files than the gate looks at".into());
        }
        for link in tracked.gitlinks.iter().filter(|g| in_scope(g)) {
            if let Some((sub, _)) = discover_here(&tree.join(link))? {
                pending.push((sub, None));
            }
        }
    }
    Ok(out)
}

/// The tops of the work trees `dir` may belong to, as git finds them (git resolves some
/// options' files from there): more than one where the gate cannot be sure which git takes.
/// A failure to look leaves none; [`check`] fails then too.
pub fn top_levels(dir: &Path) -> Vec<PathBuf> {
    discover(&resolve(dir))
        .unwrap_or_default()
        .into_iter()
        .filter_map(|repo| repo.work_tree)
        .collect()
}

/// A repository as git finds it.
#[derive(Debug, Clone)]
struct Repo {
    git_dir: PathBuf,
    /// The folder holding its `.git`; none for a bare repository or a git directory.
    work_tree: Option<PathBuf>,
    /// Found through a `.git` that is not a folder (a linked work tree, a submodule, or a
    /// planted pointer).
    via_file: bool,
}

/// A repository inside the project keeps its git directory there too; one that holds the
/// project is the user's own (the project is a folder of it). A `.git` that leads out of the
/// project must be answered from the other side — a linked work tree's `gitdir`, a
/// submodule's `core.worktree` — or anyone able to write a file could point git at another
/// repository.
fn located(repo: &Repo, root: &Path) -> Result<(), String> {
    let git_dir_inside = repo.git_dir.starts_with(root);
    match &repo.work_tree {
        Some(tree) if repo.via_file && !git_dir_inside && !points_back(repo, tree)? => {
            Err(format!(
                "{}/.git leads to {}, which does not lead back",
                tree.display(),
                repo.git_dir.display()
            ))
        }
        Some(tree) if root.starts_with(tree) => Ok(()),
        Some(tree) if tree.starts_with(root) && git_dir_inside => Ok(()),
        None if git_dir_inside => Ok(()),
        Some(tree) if tree.starts_with(root) => Err(format!(
            "the repository at {} keeps its git directory outside the project ({})",
            tree.display(),
            repo.git_dir.display()
        )),
        _ => Err(format!(
            "the repository {} is outside the project",
            repo.git_dir.display()
        )),
    }
}

/// Whether the git directory a `.git` names names `tree` in turn.
fn points_back(repo: &Repo, tree: &Path) -> Result<bool, String> {
    if let Some(text) = read_text(&repo.git_dir.join("gitdir"))?
        && resolve(&repo.git_dir.join(text.trim())) == resolve(&tree.join(".git"))
    {
        return Ok(true);
    }
    let config = read_text(&repo.git_dir.join("config"))?.unwrap_or_default();
    let worktrees = worktrees(&config, &repo.git_dir)?;
    // git takes the last value.
    Ok(worktrees.last().is_some_and(|w| *w == resolve(tree)))
}

/// Every `core.worktree` of a configuration, resolved from its git directory.
fn worktrees(config: &str, git_dir: &Path) -> Result<Vec<PathBuf>, String> {
    entries(config)?
        .into_iter()
        .filter(|e| e.section == "core" && e.name == "worktree")
        .map(|e| located_at(&git_dir.join(plain_value(&e)?)))
        .collect()
}

/// A value the gate interprets, written plainly: git's quoting, escapes and comments are
/// not read here, so a value using any of them is refused.
fn plain_value(e: &Entry) -> Result<&str, String> {
    if e.value.contains(['"', '\\', ';', '#']) {
        return Err(format!(
            "sets {}.{} (line {}) in a way the gate does not read",
            e.section, e.name, e.line
        ));
    }
    Ok(e.value.as_str())
}

/// The file at `path` when it is a regular file no larger than `max`; None when nothing is
/// there.
fn read_bounded(path: &Path, max: u64) -> Result<Option<Vec<u8>>, String> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{} cannot be read: {e}", path.display())),
    };
    if !meta.is_file() {
        return Err(format!("{} is not a regular file", path.display()));
    }
    if meta.len() > max {
        return Err(format!("{} is larger than the gate reads", path.display()));
    }
    std::fs::read(path)
        .map(Some)
        .map_err(|e| format!("{} cannot be read: {e}", path.display()))
}

fn read_text(path: &Path) -> Result<Option<String>, String> {
    match read_bounded(path, MAX_SMALL_FILE)? {
        None => Ok(None),
        Some(bytes) => String::from_utf8(bytes)
            .map(Some)
            .map_err(|_| format!("{} is not UTF-8 text", path.display())),
    }
}

/// Where a path git follows to a repository or work tree leads: git resolves a link under
/// `/proc` (`/proc/self/cwd`) as itself, which the daemon cannot, so such a path is refused.
fn located_at(path: &Path) -> Result<PathBuf, String> {
    let real = resolve(path);
    if is_process_view(&real) {
        return Err(format!(
            "{} leads through {}, which git would resolve as itself",
            path.display(),
            real.display()
        ));
    }
    Ok(real)
}

/// The folder holding a git directory's shared parts (a linked work tree's `commondir`).
fn common_dir(git_dir: &Path) -> Result<PathBuf, String> {
    let file = git_dir.join("commondir");
    Ok(match read_text(&file)? {
        Some(c) => located_at(&git_dir.join(pointer(&c, &file)?))?,
        None => git_dir.to_path_buf(),
    })
}

/// A path file's path (`commondir`, the part of a `.git` file after `gitdir: `): git strips
/// only the line end, so any other blank at either end is refused rather than guessed at.
fn pointer<'a>(text: &'a str, file: &Path) -> Result<&'a str, String> {
    let value = text.strip_suffix('\n').unwrap_or(text);
    let value = value.strip_suffix('\r').unwrap_or(value);
    if value.is_empty()
        || value.starts_with(char::is_whitespace)
        || value.ends_with(char::is_whitespace)
        || value.contains(['\n', '\r'])
    {
        return Err(format!(
            "{} names a path the gate does not read",
            file.display()
        ));
    }
    Ok(value)
}

/// One git directory: its configuration files, the hooks that fire on read-only commands,
/// and — when it lies in the project — that nothing it holds leads out of it.
fn check_git_dir(git_dir: &Path, root: &Path, deadline: Instant) -> Result<(), String> {
    let common = common_dir(git_dir)?;
    let inside = git_dir.starts_with(root);
    if inside && !common.starts_with(root) {
        return Err(format!(
            "{} shares its objects and refs with {}, outside the project",
            git_dir.display(),
            common.display()
        ));
    }
    let mut configs = vec![git_dir.join("config"), git_dir.join("config.worktree")];
    if common != git_dir {
        configs.push(common.join("config"));
        configs.push(common.join("config.worktree"));
    }
    for file in configs {
        let Some(text) = read_text(&file)? else {
            continue;
        };
        // A submodule's git directory names its work tree: inside the project, it is fine.
        let own = worktrees(&text, git_dir)?;
        let worktree_inside = !own.is_empty() && own.iter().all(|w| w.starts_with(root));
        if let Some(why) = refusal(&text, worktree_inside) {
            return Err(format!("{} {why}", file.display()));
        }
    }
    let hooks = common.join("hooks");
    for hook in ["post-index-change", "reference-transaction"] {
        if std::fs::symlink_metadata(hooks.join(hook)).is_ok() {
            return Err(format!(
                "{} has a {hook} hook, which git runs during read-only commands",
                common.display()
            ));
        }
    }
    if inside {
        for dir in [git_dir, common.as_path()] {
            stays_inside(dir, root, deadline)?;
        }
    }
    Ok(())
}

/// Nothing in a git directory inside the project leads out of it: no alternates (objects of
/// another repository), `objects` a real folder, and no link among its files to a place
/// outside (git prints lines of what it reads: `packed-refs`, `shallow`, `info/grafts`).
fn stays_inside(git_dir: &Path, root: &Path, deadline: Instant) -> Result<(), String> {
    for alternates in ["objects/info/alternates", "objects/info/http-alternates"] {
        if std::fs::symlink_metadata(git_dir.join(alternates)).is_ok() {
            return Err(format!(
                "{} borrows objects from another repository ({alternates})",
                git_dir.display()
            ));
        }
    }
    if std::fs::symlink_metadata(git_dir.join("objects")).is_ok_and(|m| !m.is_dir()) {
        return Err(format!("{}/objects is not a folder", git_dir.display()));
    }
    let mut seen = 0usize;
    let mut stack = vec![git_dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        if Instant::now() > deadline {
            return Err("the repository takes longer to check than the gate waits".into());
        }
        for entry in entries.flatten() {
            seen += 1;
            if seen > MAX_GIT_DIR_ENTRIES {
                return Err(format!(
                    "{} holds too many files to check",
                    git_dir.display()
                ));
            }
            let path = entry.path();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_symlink() {
                if !resolve(&path).starts_with(root) {
                    return Err(format!("{} leads out of the project", path.display()));
                }
            } else if kind.is_dir() && !is_elsewhere(git_dir, &path) {
                stack.push(path);
            }
        }
    }
    Ok(())
}

/// Folders checked on their own (submodules) or that git does not read (large-file stores).
fn is_elsewhere(git_dir: &Path, dir: &Path) -> bool {
    ["modules", "lfs", "annex"]
        .iter()
        .any(|d| dir.starts_with(git_dir.join(d)))
}

/// The repositories git runs itself in from `repo`: gitlinks in its index (populated
/// submodules, embedded repositories) and the git directories under `modules/`. The folders
/// of tracked files must not be links (git would read through them).
fn submodules(repo: &Repo, root: &Path, deadline: Instant) -> Result<Vec<Repo>, String> {
    let mut found = Vec::new();
    // The work tree git uses: the last core.worktree when the configuration names one.
    let config = read_text(&repo.git_dir.join("config"))?.unwrap_or_default();
    let tree = worktrees(&config, &repo.git_dir)?
        .pop()
        .or_else(|| repo.work_tree.clone());
    if let Some(tree) = &tree
        && let Some(index) = read_bounded(&repo.git_dir.join("index"), MAX_INDEX)?
    {
        let hash = hash_size(&repo.git_dir)?;
        let tracked = tracked(&index, hash, deadline, false)?;
        if tracked.folders.len() > MAX_TRACKED_FOLDERS {
            return Err("the repository tracks too many folders to check".into());
        }
        for (n, folder) in tracked.folders.iter().enumerate() {
            if n % 1024 == 0 && Instant::now() > deadline {
                return Err("the repository takes longer to check than the gate waits".into());
            }
            if std::fs::symlink_metadata(tree.join(folder)).is_ok_and(|m| m.is_symlink()) {
                return Err(format!(
                    "the repository tracks files under {folder}, which is a link"
                ));
            }
        }
        if Instant::now() > deadline {
            return Err("the repository takes longer to check than the gate waits".into());
        }
        for path in tracked.gitlinks {
            if let Some((sub, _)) = discover_here(&tree.join(&path))? {
                if sub.git_dir == repo.git_dir {
                    // git would run itself in itself, without end.
                    return Err(format!(
                        "the repository's index makes {path} a submodule of itself"
                    ));
                }
                found.push(sub);
            }
        }
    }
    // git falls back on `.git/modules/<name>` for a submodule without its own `.git`, and
    // follows a link or a gitdir file there: each must be a folder, and each repository
    // among them is checked. (dir, whether it lies inside a submodule's git directory)
    let mut seen = 0usize;
    let mut stack = vec![(common_dir(&repo.git_dir)?.join("modules"), false)];
    while let Some((dir, in_git_dir)) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        if Instant::now() > deadline {
            return Err(
                "the repository's submodules take longer to check than the gate waits".into(),
            );
        }
        for entry in entries.flatten() {
            seen += 1;
            if seen > MAX_MODULE_ENTRIES {
                return Err("the repository has too many submodules to check".into());
            }
            let path = entry.path();
            let Ok(kind) = entry.file_type() else {
                return Err(format!("{} cannot be examined", path.display()));
            };
            if kind.is_symlink() {
                return Err(format!(
                    "{} is a link, which git would follow to a submodule's repository elsewhere",
                    path.display()
                ));
            }
            if !kind.is_dir() {
                if in_git_dir {
                    continue;
                }
                return Err(format!(
                    "{} is not a folder: git would take it for a submodule's gitdir file",
                    path.display()
                ));
            }
            let is_repo = std::fs::symlink_metadata(path.join("HEAD")).is_ok();
            if is_repo {
                // Checked for its configuration and hooks; where it lies is the parent's.
                check_git_dir(&path, root, deadline)?;
            }
            stack.push((path, in_git_dir || is_repo));
        }
    }
    Ok(found)
}

/// The object name's length in the index: 32 bytes when `extensions.objectFormat` is
/// sha256, else 20.
fn hash_size(git_dir: &Path) -> Result<usize, String> {
    let config = read_text(&common_dir(git_dir)?.join("config"))?.unwrap_or_default();
    let mut sha256 = false;
    for e in entries(&config)? {
        if e.section == "extensions" && e.name == "objectformat" {
            sha256 = plain_value(&e)?.eq_ignore_ascii_case("sha256");
        }
    }
    Ok(if sha256 { 32 } else { 20 })
}

/// What an index tracks that matters here.
#[derive(Debug, Default)]
struct Tracked {
    /// Paths of gitlinks (mode 160000).
    gitlinks: Vec<String>,
    /// Every folder holding a tracked path.
    folders: BTreeSet<String>,
    /// Paths of regular files, when asked for.
    files: Vec<String>,
}

/// Read an index file, versions 2 to 4. It must parse exactly — entries, extensions, and the
/// trailing checksum of the right size — or it is refused (a wrong guess of the object name's
/// size would shift every path).
fn tracked(index: &[u8], hash: usize, deadline: Instant, files: bool) -> Result<Tracked, String> {
    let bad = || "the repository's index is not one the gate reads".to_string();
    let u32_at = |at: usize| -> Result<u32, String> {
        index
            .get(at..at + 4)
            .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
            .ok_or_else(bad)
    };
    if index.get(0..4) != Some(b"DIRC".as_slice()) {
        return Err(bad());
    }
    let version = u32_at(4)?;
    if !(2..=4).contains(&version) {
        return Err(bad());
    }
    let count = usize::try_from(u32_at(8)?).map_err(|_| bad())?;
    let mut pos = 12usize;
    let mut previous: Vec<u8> = Vec::new();
    let mut out = Tracked::default();
    let mut last_folder: Vec<u8> = Vec::new();
    let mut folders: BTreeSet<Vec<u8>> = BTreeSet::new();
    for n in 0..count {
        if n % 4096 == 0 && Instant::now() > deadline {
            return Err("the repository's index takes longer to read than the gate waits".into());
        }
        let start = pos;
        let mode = u32_at(start + 24)?;
        let flags_at = start + 40 + hash;
        let flags = index
            .get(flags_at..flags_at + 2)
            .map(|b| u16::from_be_bytes([b[0], b[1]]))
            .ok_or_else(bad)?;
        let mut name_at = flags_at + 2;
        if version >= 3 && flags & 0x4000 != 0 {
            name_at += 2;
        }
        let path = if version == 4 {
            let (strip, used) = varint(index.get(name_at..).ok_or_else(bad)?).ok_or_else(bad)?;
            let keep = previous.len().checked_sub(strip).ok_or_else(bad)?;
            let suffix_at = name_at + used;
            let end = index
                .get(suffix_at..)
                .and_then(|rest| rest.iter().position(|&b| b == 0))
                .ok_or_else(bad)?
                + suffix_at;
            let mut path = previous[..keep].to_vec();
            path.extend_from_slice(&index[suffix_at..end]);
            pos = end + 1;
            path
        } else {
            let end = index
                .get(name_at..)
                .and_then(|rest| rest.iter().position(|&b| b == 0))
                .ok_or_else(bad)?
                + name_at;
            // Entries are padded with NULs to a multiple of eight bytes.
            pos = start + ((name_at - start) + (end - name_at) + 8) / 8 * 8;
            index[name_at..end].to_vec()
        };
        // Entries are sorted: the files of a folder come one after another.
        if let Some(slash) = path.iter().rposition(|&b| b == b'/')
            && path[..slash] != last_folder[..]
        {
            last_folder = path[..slash].to_vec();
            folders.insert(last_folder.clone());
            if folders.len() > MAX_TRACKED_FOLDERS {
                return Err("the repository tracks too many folders to check".into());
            }
        }
        if mode & 0o170000 == 0o160000 {
            out.gitlinks
                .push(String::from_utf8(path.clone()).map_err(|_| bad())?);
        }
        if files && mode & 0o170000 == 0o100000 {
            if out.files.len() >= MAX_TRACKED_FILES {
                return Err("the repository tracks more files than the gate looks at".into());
            }
            out.files
                .push(String::from_utf8(path.clone()).map_err(|_| bad())?);
        }
        previous = path;
    }
    // Every folder on the way to a tracked file, not just the last: each may be a link.
    for folder in &folders {
        let folder = std::str::from_utf8(folder).map_err(|_| bad())?;
        if folder.matches('/').count() > MAX_PATH_DEPTH {
            return Err("the repository tracks files nested deeper than the gate checks".into());
        }
        let mut at = 0;
        while let Some(slash) = folder[at..].find('/') {
            out.folders.insert(folder[..at + slash].to_string());
            at += slash + 1;
        }
        out.folders.insert(folder.to_string());
        if out.folders.len() > MAX_TRACKED_FOLDERS {
            return Err("the repository tracks too many folders to check".into());
        }
    }
    // Extensions, each a four-letter signature and a size, then the checksum.
    let mut ext = pos;
    let end = index.len().checked_sub(hash).ok_or_else(bad)?;
    while ext < end {
        let sig = index.get(ext..ext + 4).ok_or_else(bad)?;
        if !sig.iter().all(u8::is_ascii_alphabetic) {
            return Err(bad());
        }
        if sig == b"link" {
            // A split index keeps entries in another file, which the gate does not read.
            return Err("the repository's index is split, which the gate does not read".into());
        }
        let size = usize::try_from(u32_at(ext + 4)?).map_err(|_| bad())?;
        ext = ext
            .checked_add(8)
            .and_then(|e| e.checked_add(size))
            .ok_or_else(bad)?;
    }
    if ext != end {
        return Err(bad());
    }
    Ok(out)
}

/// git's offset varint (index version 4): the value and the bytes it took.
fn varint(bytes: &[u8]) -> Option<(usize, usize)> {
    let mut value = usize::from(*bytes.first()? & 0x7f);
    let mut used = 1;
    while bytes[used - 1] & 0x80 != 0 {
        let b = *bytes.get(used)?;
        value = value.checked_add(1)?.checked_mul(128)? | usize::from(b & 0x7f);
        used += 1;
    }
    Some((value, used))
}

/// The repository git would find from `dir`, walking up as git does: `.git` (a folder, or a
/// file pointing to one), or the folder itself when it is a git directory.
fn discover(dir: &Path) -> Result<Vec<Repo>, String> {
    // git passes over a `.git` folder that is no repository and looks further up. Where the
    // gate cannot be sure git agrees, it checks every repository git might take: each
    // candidate on the way up, until one git is sure to take.
    let mut found = Vec::new();
    let mut cur = Some(dir);
    while let Some(d) = cur {
        if let Some((here, gitdir_file)) = discover_here(d)? {
            // git dies on a gitdir file that leads nowhere, so it takes every one.
            let certain = gitdir_file || is_git_directory(&here.git_dir)?;
            found.push(here);
            if certain {
                return Ok(found);
            }
        }
        if std::fs::symlink_metadata(d.join("HEAD")).is_ok() {
            found.push(Repo {
                git_dir: d.to_path_buf(),
                work_tree: None,
                via_file: false,
            });
            if is_git_directory(d)? {
                return Ok(found);
            }
        }
        cur = d.parent();
    }
    Ok(found)
}

/// Whether git surely takes `dir` for a git directory (git's `is_git_directory`): a `HEAD`
/// naming a ref or an object, and `objects` and `refs` it may enter (in the common
/// directory when there is one). Stricter than git where they differ: a `false` only makes
/// the gate check further.
fn is_git_directory(dir: &Path) -> Result<bool, String> {
    let head_path = dir.join("HEAD");
    let head = match std::fs::symlink_metadata(&head_path) {
        Ok(m) if m.is_symlink() => {
            return Ok(
                std::fs::read_link(&head_path).is_ok_and(|t| t.starts_with("refs/"))
                    && enterable_stores(dir)?,
            );
        }
        Ok(m) if m.is_file() => read_bounded(&head_path, MAX_SMALL_FILE)?.unwrap_or_default(),
        _ => return Ok(false),
    };
    let head = String::from_utf8_lossy(&head);
    let head = head.trim_end();
    let valid_head = head.starts_with("ref: refs/")
        || (matches!(head.len(), 40 | 64) && head.bytes().all(|b| b.is_ascii_hexdigit()));
    Ok(valid_head && enterable_stores(dir)?)
}

fn enterable_stores(dir: &Path) -> Result<bool, String> {
    let common = if std::fs::symlink_metadata(dir.join("commondir")).is_ok() {
        common_dir(dir)?
    } else {
        dir.to_path_buf()
    };
    Ok(enterable(&common.join("objects")) && enterable(&common.join("refs")))
}

/// A folder this process may enter, as git tests it (`access(X_OK)`).
fn enterable(dir: &Path) -> bool {
    if !dir.is_dir() {
        return false;
    }
    #[cfg(unix)]
    return nix::unistd::access(dir, nix::unistd::AccessFlags::X_OK).is_ok();
    #[cfg(not(unix))]
    true
}

/// `.git` in exactly this folder, and whether it is a gitdir file (or a link to one).
fn discover_here(d: &Path) -> Result<Option<(Repo, bool)>, String> {
    let dot_git = d.join(".git");
    let Ok(meta) = std::fs::symlink_metadata(&dot_git) else {
        return Ok(None);
    };
    // git reads a `.git` that is (or links to) a file as a pointer.
    let gitdir_file = std::fs::metadata(&dot_git).is_ok_and(|m| m.is_file());
    let git_dir = if gitdir_file {
        let text = read_text(&dot_git)?.unwrap_or_default();
        let target = text
            .strip_prefix("gitdir: ")
            .ok_or_else(|| format!("{} is not a gitdir file", dot_git.display()))?;
        located_at(&d.join(pointer(target, &dot_git)?))?
    } else {
        located_at(&dot_git)?
    };
    let repo = Repo {
        git_dir,
        work_tree: Some(d.to_path_buf()),
        // A link is a pointer as much as a file is.
        via_file: !meta.is_dir(),
    };
    Ok(Some((repo, gitdir_file)))
}

const SAFE_CORE_KEYS: &[&str] = &[
    "repositoryformatversion",
    "filemode",
    "bare",
    "logallrefupdates",
    "ignorecase",
    "precomposeunicode",
    "symlinks",
    "autocrlf",
    "eol",
    "safecrlf",
    "checkroundtripencoding",
    "sparsecheckout",
    "sparsecheckoutcone",
    "splitindex",
    "untrackedcache",
    "commentchar",
    "commentstring",
    "abbrev",
    "quotepath",
    "checkstat",
    "trustctime",
    "preloadindex",
    "fscache",
    "longpaths",
    "whitespace",
    "compression",
    "loosecompression",
    "packedgitwindowsize",
    "packedgitlimit",
    "deltabasecachelimit",
    "bigfilethreshold",
    "hidedotfiles",
    "protecthfs",
    "protectntfs",
    "ignorestat",
    "prefersymlinkrefs",
    "sharedrepository",
    "warnambiguousrefs",
    "filesreflocktimeout",
    "packedrefstimeout",
    "fsync",
    "fsyncmethod",
    "fsyncobjectfiles",
    "createobject",
    "notesref",
    "commitgraph",
    "usereplacerefs",
    "multipackindex",
    "maxtreedepth",
    "restrictinheritedhandles",
    "unsetenvvars",
];

/// Sections whose every key only shapes what git does (or only matters to commands the gate
/// never allows: fetch, push, commit, gc).
const SAFE_SECTIONS: &[&str] = &[
    "color",
    "advice",
    "column",
    "i18n",
    "versionsort",
    "feature",
    "init",
    "pull",
    "push",
    "fetch",
    "gc",
    "pack",
    "index",
    "rerere",
    "rebase",
    "am",
    "apply",
    "grep",
    "checkout",
    "clone",
    "stash",
    "splitindex",
    "fsck",
    "worktree",
    "alias",
    "notes",
    "maintenance",
    "http",
    "url",
    "transfer",
    "commit",
];

/// Whether a key (section, subsection, name; section and name in lower case) only shapes
/// what git does.
fn safe_key(section: &str, sub: Option<&str>, name: &str) -> bool {
    match section {
        "core" => SAFE_CORE_KEYS.contains(&name),
        "remote" => {
            sub.is_some()
                && matches!(
                    name,
                    "url"
                        | "pushurl"
                        | "fetch"
                        | "push"
                        | "tagopt"
                        | "prune"
                        | "prunetags"
                        | "mirror"
                        | "skipdefaultupdate"
                        | "skipfetchall"
                        | "followremotehead"
                )
        }
        "branch" => {
            sub.is_some()
                && matches!(
                    name,
                    "remote" | "merge" | "rebase" | "pushremote" | "description" | "mergeoptions"
                )
        }
        "user" | "author" | "committer" => {
            matches!(name, "name" | "email" | "signingkey" | "useconfigonly")
        }
        // `log.showSignature` runs gpg on every signed commit; so does a `signature` sort.
        "log" => name != "showsignature",
        "tag" => name != "sort",
        // What git does inside submodules is their configuration's to say.
        "diff" if name == "submodule" => false,
        "status" => name != "submodulesummary",
        // `blame.ignoreRevsFile` reads (and echoes) any file.
        "blame" => name != "ignorerevsfile",
        "mailmap" => name == "blob",
        // Drivers (`diff.<name>.textconv`, `merge.<name>.driver`) run programs.
        "diff" => sub.is_none() && !matches!(name, "external" | "tool" | "guitool" | "orderfile"),
        "merge" => sub.is_none() && !matches!(name, "tool" | "guitool"),
        "submodule" => name != "update",
        // `extensions.partialClone` makes a missing object a fetch: a remote, ssh, helpers.
        "extensions" => matches!(
            name,
            "objectformat"
                | "compatobjectformat"
                | "worktreeconfig"
                | "refstorage"
                | "preciousobjects"
        ),
        // git-lfs's extensions run programs; its format version and access modes do not.
        "lfs" => name == "repositoryformatversion" || (sub.is_some() && name == "access"),
        s => SAFE_SECTIONS.contains(&s),
    }
}

/// A key of a configuration file, section and name in lower case.
#[derive(Debug)]
struct Entry {
    section: String,
    sub: Option<String>,
    name: String,
    /// The value as written after `=` (trimmed), empty for a bare key.
    value: String,
    line: usize,
}

/// The keys of a configuration file, in order, as git reads them — or why the file cannot
/// be read with certainty (a continued value, an unclosed header, a line that is no key).
fn entries(text: &str) -> Result<Vec<Entry>, String> {
    // git reads keys as C strings: a NUL in a subsection would end it early for git alone.
    if text
        .chars()
        .any(|c| c.is_control() && !matches!(c, '\t' | '\n' | '\r'))
    {
        return Err("holds control characters, which git and the gate may read differently".into());
    }
    let mut out = Vec::new();
    let mut section = String::new();
    let mut sub: Option<String> = None;
    for (n, raw) in text.lines().enumerate() {
        let line = raw.trim_end_matches('\r').trim();
        let at = n + 1;
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        let trailing = line.bytes().rev().take_while(|&b| b == b'\\').count();
        if trailing % 2 == 1 {
            return Err(format!(
                "continues a value on line {at}, which the gate does not read"
            ));
        }
        let mut rest = line;
        if let Some(header) = line.strip_prefix('[') {
            let Some(end) = header.find(']') else {
                return Err(format!("has an unclosed section header on line {at}"));
            };
            let inner = &header[..end];
            rest = header[end + 1..].trim();
            match inner.split_once(|c: char| c.is_whitespace()) {
                Some((name, s)) => {
                    section = name.to_ascii_lowercase();
                    sub = Some(s.trim().trim_matches('"').to_string());
                }
                None => match inner.split_once('.') {
                    Some((name, s)) => {
                        section = name.to_ascii_lowercase();
                        sub = Some(s.to_string());
                    }
                    None => {
                        section = inner.to_ascii_lowercase();
                        sub = None;
                    }
                },
            }
            if rest.is_empty() || rest.starts_with('#') || rest.starts_with(';') {
                continue;
            }
        }
        let name: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
            .collect::<String>()
            .to_ascii_lowercase();
        let after = rest[name.len()..].trim_start();
        if name.is_empty()
            || !(after.is_empty() || after.starts_with('=') || after.starts_with(['#', ';']))
        {
            return Err(format!("has a line the gate cannot read (line {at})"));
        }
        if section.is_empty() {
            return Err(format!("has a key outside any section (line {at})"));
        }
        let value = after.strip_prefix('=').unwrap_or("").trim().to_string();
        out.push(Entry {
            section: section.clone(),
            sub: sub.clone(),
            name,
            value,
            line: at,
        });
    }
    Ok(out)
}

/// The last value of `section.name` (both in lower case) outside subsections, quotes taken
/// off; `None` when the file cannot be read with certainty or does not set it.
pub fn config_value(text: &str, section: &str, name: &str) -> Option<String> {
    entries(text)
        .ok()?
        .into_iter()
        .rfind(|e| e.section == section && e.sub.is_none() && e.name == name)
        .map(|e| e.value.trim_matches('"').to_string())
        .filter(|v| !v.is_empty())
}

/// Why the configuration `text` may make git run a program or read elsewhere, or None when
/// every key is on the allow-list. `worktree_inside`: every `core.worktree` it sets (a
/// submodule's) lies inside the project.
pub fn refusal(text: &str, worktree_inside: bool) -> Option<String> {
    let entries = match entries(text) {
        Ok(e) => e,
        Err(why) => return Some(why),
    };
    for e in entries {
        if matches!(e.section.as_str(), "include" | "includeif") {
            return Some(format!("includes other configuration (line {})", e.line));
        }
        let own_worktree = worktree_inside && e.section == "core" && e.name == "worktree";
        if !own_worktree && !safe_key(&e.section, e.sub.as_deref(), &e.name) {
            let shown = match &e.sub {
                Some(sub) => format!("{}.{sub}.{}", e.section, e.name),
                None => format!("{}.{}", e.section, e.name),
            };
            return Some(format!(
                "sets {shown} (line {}), which can make git run a program or read elsewhere",
                e.line
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests;
