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
//! - every file is read only when it is a regular file of bounded size (a FIFO or
//!   `/dev/zero` behind a link must not hold the gate).
//!
//! The user's own configuration (global, system) is trusted, unless the environment moves it
//! into the project.

use std::path::{Path, PathBuf};

use stepper_protocol::session::Env;

use super::resolve;

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

/// Check the repository `dir` belongs to (if any). An error says why git might run a
/// program, or read what the gate cannot vouch for.
pub fn check(dir: &Path, env: &Env, project_root: &Path) -> Result<(), String> {
    for name in env.keys() {
        if name.starts_with("GIT_") && !HARMLESS_GIT_VARIABLES.contains(&name.as_str()) {
            return Err(format!(
                "the session's environment sets {name}, which changes what git reads or runs"
            ));
        }
    }
    let root = resolve(project_root);
    for var in ["HOME", "XDG_CONFIG_HOME"] {
        if let Some(value) = env.get(var)
            && !value.is_empty()
            && resolve(Path::new(value)).starts_with(&root)
        {
            return Err(format!(
                "{var} is inside the project, so git would read its user configuration from there"
            ));
        }
    }
    let Some(repo) = discover(&resolve(dir))? else {
        return Ok(());
    };
    let mut pending = vec![repo];
    let mut seen = 0usize;
    while let Some(repo) = pending.pop() {
        seen += 1;
        if seen > MAX_REPOSITORIES {
            return Err("the repository has too many submodules to check".into());
        }
        located(&repo, &root)?;
        check_git_dir(&repo.git_dir, &root)?;
        pending.extend(submodules(&repo, &root)?);
    }
    Ok(())
}

/// A repository as git finds it.
#[derive(Debug, Clone)]
struct Repo {
    git_dir: PathBuf,
    /// The folder holding its `.git`; none for a bare repository or a git directory.
    work_tree: Option<PathBuf>,
    /// Found through a `.git` file (a linked work tree, a submodule, or a planted pointer).
    via_file: bool,
}

/// A repository inside the project keeps its git directory there too; one that holds the
/// project is the user's own (the project is a folder of it). A `.git` file that leads out
/// of the project must be answered from the other side — a linked work tree's `gitdir`, a
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

/// Whether the git directory a `.git` file names names `tree` in turn.
fn points_back(repo: &Repo, tree: &Path) -> Result<bool, String> {
    if let Some(text) = read_text(&repo.git_dir.join("gitdir"))?
        && resolve(&repo.git_dir.join(text.trim())) == resolve(&tree.join(".git"))
    {
        return Ok(true);
    }
    Ok(worktree_of(&repo.git_dir)?.is_some_and(|w| w == resolve(tree)))
}

/// `core.worktree` of a git directory's own configuration, resolved from it.
fn worktree_of(git_dir: &Path) -> Result<Option<PathBuf>, String> {
    let Some(text) = read_text(&git_dir.join("config"))? else {
        return Ok(None);
    };
    let mut in_core = false;
    for line in text.lines() {
        let line = line.trim();
        if let Some(header) = line.strip_prefix('[') {
            in_core = header
                .split(']')
                .next()
                .is_some_and(|h| h.trim().eq_ignore_ascii_case("core"));
            continue;
        }
        if let Some((key, value)) = line.split_once('=')
            && in_core
            && key.trim().eq_ignore_ascii_case("worktree")
        {
            let value = value.trim().trim_matches('"');
            return Ok(Some(resolve(&git_dir.join(value))));
        }
    }
    Ok(None)
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

/// The folder holding a git directory's shared parts (a linked work tree's `commondir`).
fn common_dir(git_dir: &Path) -> Result<PathBuf, String> {
    Ok(match read_text(&git_dir.join("commondir"))? {
        Some(c) => resolve(&git_dir.join(c.trim())),
        None => git_dir.to_path_buf(),
    })
}

/// One git directory: its configuration files and the hooks that fire on read-only commands.
fn check_git_dir(git_dir: &Path, root: &Path) -> Result<(), String> {
    let common = common_dir(git_dir)?;
    // A submodule's git directory names its work tree: inside the project, it is fine.
    let worktree_inside = worktree_of(git_dir)?.is_some_and(|w| w.starts_with(root));
    let mut configs = vec![git_dir.join("config"), git_dir.join("config.worktree")];
    if common != git_dir {
        configs.push(common.join("config"));
        configs.push(common.join("config.worktree"));
    }
    for file in configs {
        if let Some(text) = read_text(&file)?
            && let Some(why) = refusal(&text, worktree_inside)
        {
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
    Ok(())
}

/// The repositories git runs itself in from `repo`: gitlinks in its index (populated
/// submodules, embedded repositories) and the git directories under `modules/`.
fn submodules(repo: &Repo, root: &Path) -> Result<Vec<Repo>, String> {
    let mut found = Vec::new();
    if let Some(tree) = &repo.work_tree
        && let Some(index) = read_bounded(&repo.git_dir.join("index"), MAX_INDEX)?
    {
        let hash = hash_size(&repo.git_dir)?;
        for path in gitlinks(&index, hash)? {
            if let Some(sub) = discover_here(&tree.join(path))? {
                found.push(sub);
            }
        }
    }
    let mut seen = 0usize;
    let mut stack = vec![common_dir(&repo.git_dir)?.join("modules")];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            seen += 1;
            if seen > MAX_MODULE_ENTRIES {
                return Err("the repository has too many submodules to check".into());
            }
            let path = entry.path();
            if !entry.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            if path.join("HEAD").is_file() {
                // Checked for its configuration and hooks; where it lies is the parent's.
                check_git_dir(&path, root)?;
            }
            stack.push(path);
        }
    }
    Ok(found)
}

/// The object name's length in the index: 32 bytes in a SHA-256 repository, else 20.
fn hash_size(git_dir: &Path) -> Result<usize, String> {
    let config = read_text(&common_dir(git_dir)?.join("config"))?.unwrap_or_default();
    let sha256 = config.lines().any(|l| {
        let l = l.to_ascii_lowercase();
        l.contains("objectformat") && l.contains("sha256")
    });
    Ok(if sha256 { 32 } else { 20 })
}

/// The paths of the gitlinks (mode 160000) in an index file, versions 2 to 4.
fn gitlinks(index: &[u8], hash: usize) -> Result<Vec<String>, String> {
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
    let mut links = Vec::new();
    for _ in 0..count {
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
            let end = index[suffix_at..]
                .iter()
                .position(|&b| b == 0)
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
        if mode & 0o170000 == 0o160000 {
            links.push(String::from_utf8(path.clone()).map_err(|_| bad())?);
        }
        previous = path;
    }
    // A split index keeps entries in another file, which the gate does not read.
    let mut ext = pos;
    while ext + 8 <= index.len().saturating_sub(hash) {
        let size = usize::try_from(u32_at(ext + 4)?).map_err(|_| bad())?;
        if &index[ext..ext + 4] == b"link" {
            return Err("the repository's index is split, which the gate does not read".into());
        }
        ext = ext.saturating_add(8).saturating_add(size);
    }
    Ok(links)
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
fn discover(dir: &Path) -> Result<Option<Repo>, String> {
    let mut cur = Some(dir);
    while let Some(d) = cur {
        if let Some(found) = discover_here(d)? {
            return Ok(Some(found));
        }
        if d.file_name().is_some_and(|n| n == ".git")
            || (d.join("HEAD").is_file() && d.join("objects").is_dir() && d.join("refs").is_dir())
        {
            return Ok(Some(Repo {
                git_dir: d.to_path_buf(),
                work_tree: None,
                via_file: false,
            }));
        }
        cur = d.parent();
    }
    Ok(None)
}

/// `.git` in exactly this folder.
fn discover_here(d: &Path) -> Result<Option<Repo>, String> {
    let dot_git = d.join(".git");
    let Ok(meta) = std::fs::symlink_metadata(&dot_git) else {
        return Ok(None);
    };
    let via_file = meta.is_file();
    let git_dir = if via_file {
        let text = read_text(&dot_git)?.unwrap_or_default();
        let target = text
            .trim()
            .strip_prefix("gitdir:")
            .ok_or_else(|| format!("{} is not a gitdir file", dot_git.display()))?
            .trim();
        resolve(&d.join(target))
    } else {
        resolve(&dot_git)
    };
    Ok(Some(Repo {
        git_dir,
        work_tree: Some(d.to_path_buf()),
        via_file,
    }))
}

/// `core` keys that only shape what git does. Not among them: `fsmonitor`, `pager`,
/// `hooksPath`, `sshCommand`, `editor`, `askPass`, `gitProxy`, `alternateRefsCommand`
/// (programs), `worktree` (another work tree), `attributesFile`, `excludesFile` (files
/// elsewhere).
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
    "tag",
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
    "status",
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
        // `log.showSignature` runs gpg on every signed commit.
        "log" => name != "showsignature",
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

/// Why the configuration `text` may make git run a program or read elsewhere, or None when
/// every key is on the allow-list. `worktree_inside`: its `core.worktree` (a submodule's)
/// lies inside the project.
pub fn refusal(text: &str, worktree_inside: bool) -> Option<String> {
    let mut section = String::new();
    let mut subsection: Option<String> = None;
    for (n, raw) in text.lines().enumerate() {
        let line = raw.trim_end_matches('\r').trim();
        let at = n + 1;
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        let trailing = line.bytes().rev().take_while(|&b| b == b'\\').count();
        if trailing % 2 == 1 {
            return Some(format!(
                "continues a value on line {at}, which the gate does not read"
            ));
        }
        let mut rest = line;
        if let Some(header) = line.strip_prefix('[') {
            let Some(end) = header.find(']') else {
                return Some(format!("has an unclosed section header on line {at}"));
            };
            let inner = &header[..end];
            rest = header[end + 1..].trim();
            match inner.split_once(|c: char| c.is_whitespace()) {
                Some((name, sub)) => {
                    section = name.to_ascii_lowercase();
                    subsection = Some(sub.trim().trim_matches('"').to_string());
                }
                None => match inner.split_once('.') {
                    Some((name, sub)) => {
                        section = name.to_ascii_lowercase();
                        subsection = Some(sub.to_string());
                    }
                    None => {
                        section = inner.to_ascii_lowercase();
                        subsection = None;
                    }
                },
            }
            if matches!(section.as_str(), "include" | "includeif") {
                return Some(format!("includes other configuration (line {at})"));
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
            return Some(format!("has a line the gate cannot read (line {at})"));
        }
        if section.is_empty() {
            return Some(format!("has a key outside any section (line {at})"));
        }
        let own_worktree = worktree_inside && section == "core" && name == "worktree";
        if !own_worktree && !safe_key(&section, subsection.as_deref(), &name) {
            let shown = match &subsection {
                Some(sub) => format!("{section}.{sub}.{name}"),
                None => format!("{section}.{name}"),
            };
            return Some(format!(
                "sets {shown} (line {at}), which can make git run a program or read elsewhere"
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests;
