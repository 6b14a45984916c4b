//! Whether a git repository can make a read-only git command run a program. git runs what
//! its configuration names — an fsmonitor, an external diff, a textconv or clean filter, a
//! pager, a hook on index writes — and the repository's own configuration is the project's:
//! an edit (allowed without asking in `accept-edits`) or a copied folder can put anything
//! there. So the repository's configuration files must hold only settings on an allow-list,
//! with no includes, and no hook that fires on index writes may exist. The user's own
//! configuration (global, system) is trusted, unless the environment moves it into the
//! project.

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

/// Check the repository `dir` belongs to (if any). An error says why git might run a
/// program, or read configuration the gate cannot vouch for.
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
    let Some((git_dir, work_tree)) = discover(&resolve(dir)) else {
        return Ok(());
    };
    check_git_dir(&git_dir)?;
    // git runs itself inside submodules (to see whether they changed), with their own
    // configuration and hooks.
    let mut seen = 0usize;
    let common = common_dir(&git_dir);
    let mut stack = vec![common.join("modules")];
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
            if !path.is_dir() {
                continue;
            }
            if path.join("HEAD").is_file() {
                check_git_dir(&path)?;
            }
            stack.push(path);
        }
    }
    if let Some(work_tree) = work_tree
        && let Ok(text) = std::fs::read_to_string(work_tree.join(".gitmodules"))
    {
        for line in text.lines() {
            let Some((key, value)) = line.split_once('=') else {
                continue;
            };
            if key.trim() != "path" {
                continue;
            }
            if let Some((sub, _)) = discover_here(&work_tree.join(value.trim())) {
                check_git_dir(&sub)?;
            }
        }
    }
    Ok(())
}

/// Entries of `modules/` looked at before the gate gives up and asks.
const MAX_MODULE_ENTRIES: usize = 2_000;

/// The folder holding a git directory's shared parts (a linked work tree's `commondir`).
fn common_dir(git_dir: &Path) -> PathBuf {
    std::fs::read_to_string(git_dir.join("commondir"))
        .ok()
        .map(|c| resolve(&git_dir.join(c.trim())))
        .unwrap_or_else(|| git_dir.to_path_buf())
}

/// One git directory: its configuration files and the hooks that fire on read-only commands.
fn check_git_dir(git_dir: &Path) -> Result<(), String> {
    let common = common_dir(git_dir);
    let mut configs = vec![git_dir.join("config"), git_dir.join("config.worktree")];
    if common != git_dir {
        configs.push(common.join("config"));
        configs.push(common.join("config.worktree"));
    }
    for file in configs {
        let text = match std::fs::read(&file) {
            Ok(bytes) => String::from_utf8(bytes)
                .map_err(|_| format!("{} is not UTF-8 text", file.display()))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(format!("{} cannot be read: {e}", file.display())),
        };
        if let Some(why) = refusal(&text) {
            return Err(format!("{} {why}", file.display()));
        }
    }
    let hooks = common.join("hooks");
    for hook in ["post-index-change", "reference-transaction"] {
        if hooks.join(hook).exists() {
            return Err(format!(
                "{} has a {hook} hook, which git runs during read-only commands",
                common.display()
            ));
        }
    }
    Ok(())
}

/// The git directory git would find from `dir`, walking up as git does — `.git` (a folder,
/// or a file pointing to one), or the folder itself when it is a git directory — with the work
/// tree it belongs to.
fn discover(dir: &Path) -> Option<(PathBuf, Option<PathBuf>)> {
    let mut cur = Some(dir);
    while let Some(d) = cur {
        if let Some(found) = discover_here(d) {
            return Some(found);
        }
        if d.file_name().is_some_and(|n| n == ".git")
            || (d.join("HEAD").is_file() && d.join("objects").is_dir() && d.join("refs").is_dir())
        {
            return Some((d.to_path_buf(), None));
        }
        cur = d.parent();
    }
    None
}

/// `.git` in exactly this folder.
fn discover_here(d: &Path) -> Option<(PathBuf, Option<PathBuf>)> {
    let dot_git = d.join(".git");
    if dot_git.is_dir() {
        return Some((dot_git, Some(d.to_path_buf())));
    }
    if dot_git.is_file() {
        let text = std::fs::read_to_string(&dot_git).ok()?;
        let target = text.trim().strip_prefix("gitdir:")?.trim();
        return Some((resolve(&d.join(target)), Some(d.to_path_buf())));
    }
    None
}

/// Sections whose every key only shapes what git does (no key names a program).
const SAFE_SECTIONS: &[&str] = &[
    "branch",
    "user",
    "author",
    "committer",
    "color",
    "advice",
    "status",
    "log",
    "pull",
    "push",
    "fetch",
    "gc",
    "pack",
    "index",
    "init",
    "extensions",
    "rerere",
    "rebase",
    "commit",
    "tag",
    "am",
    "apply",
    "blame",
    "grep",
    "feature",
    "maintenance",
    "lfs",
    "http",
    "url",
    "alias",
    "worktree",
    "checkout",
    "clone",
    "column",
    "i18n",
    "notes",
    "mailmap",
    "versionsort",
    "stash",
    "splitindex",
    "fsck",
    "transfer",
    "merge",
    "diff",
    "submodule",
    "remote",
];

/// `core` keys that only shape what git does (core.fsmonitor, core.pager, core.hooksPath,
/// core.sshCommand, core.editor, core.askPass, core.gitProxy, core.alternateRefsCommand and
/// core.worktree are not among them).
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
    "excludesfile",
    "attributesfile",
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
    "alternaterefsprefixes",
];

/// Keys of otherwise safe sections that name programs or hooks, or move the work tree.
const UNSAFE_KEYS: &[&str] = &[
    "diff.external",
    "diff.tool",
    "diff.guitool",
    "merge.tool",
    "merge.guitool",
    "submodule.update",
    "remote.uploadpack",
    "remote.receivepack",
    "remote.vcs",
    "remote.proxy",
];

/// Why the configuration `text` may make git run a program, or None when every key is on
/// the allow-list.
pub fn refusal(text: &str) -> Option<String> {
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
        let key = format!("{section}.{name}");
        let driver = subsection.is_some() && matches!(section.as_str(), "diff" | "merge");
        let safe = if section == "core" {
            SAFE_CORE_KEYS.contains(&name.as_str())
        } else {
            SAFE_SECTIONS.contains(&section.as_str())
                && !driver
                && !UNSAFE_KEYS.contains(&key.as_str())
        };
        if !safe {
            let shown = match &subsection {
                Some(sub) => format!("{section}.{sub}.{name}"),
                None => key,
            };
            return Some(format!(
                "sets {shown} (line {at}), which can make git run a program"
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_repository_configuration_passes() {
        let text = "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\
                    \tlogallrefupdates = true\n[remote \"origin\"]\n\turl = git@github.com:a/b.git\n\
                    \tfetch = +refs/heads/*:refs/remotes/origin/*\n[branch \"main\"]\n\tremote = origin\n\
                    \tmerge = refs/heads/main\n[user]\n\tname = A ; comment\n[lfs]\n\trepositoryformatversion = 0\n";
        assert_eq!(refusal(text), None);
    }

    #[test]
    fn programs_and_includes_are_refused() {
        for text in [
            "[core]\n\tfsmonitor = ./evil.sh\n",
            "[core]\nFSMonitor=x\n",
            "[core]\n\tpager = sh -c evil\n",
            "[core]\n\thooksPath = .githooks\n",
            "[diff]\n\texternal = ./x\n",
            "[diff \"pdf\"]\n\ttextconv = ./x\n",
            "[diff.pdf]\n\ttextconv = ./x\n",
            "[filter \"lfs\"]\n\tclean = ./x %f\n",
            "[pager]\n\tlog = ./x\n",
            "[include]\n\tpath = ../evil\n",
            "[includeIf \"gitdir:/\"]\n\tpath = x\n",
            "[gpg]\n\tprogram = ./x\n",
            "[core] fsmonitor = ./x\n",
            "[core]\n\tpager = a \\\n",
            "[frobnicate]\n\tx = 1\n",
            "[remote \"o\"]\n\tuploadpack = ./x\n",
            "[core]\n\tworktree = /\n",
            "fsmonitor = x\n",
            "[core\n",
        ] {
            assert!(refusal(text).is_some(), "{text:?}");
        }
    }

    #[test]
    fn a_repository_with_a_hostile_config_or_hook_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let env: Env = [("HOME".to_string(), "/nonexistent-home".to_string())].into();
        std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::write(root.join(".git/config"), "[core]\n\tbare = false\n").unwrap();
        assert_eq!(check(&root.join("src"), &env, &root), Ok(()));
        std::fs::write(root.join(".git/hooks/post-index-change"), "#!/bin/sh\n").unwrap();
        assert!(
            check(&root, &env, &root)
                .unwrap_err()
                .contains("post-index-change")
        );
        std::fs::remove_file(root.join(".git/hooks/post-index-change")).unwrap();
        std::fs::write(root.join(".git/config"), "[core]\n\tfsmonitor = ./x\n").unwrap();
        assert!(
            check(&root.join("src"), &env, &root)
                .unwrap_err()
                .contains("fsmonitor")
        );
        // A worktree's .git file leads to the real git directory.
        let other = tempfile::tempdir().unwrap();
        std::fs::write(
            other.path().join(".git"),
            format!("gitdir: {}\n", root.join(".git").display()),
        )
        .unwrap();
        assert!(check(other.path(), &env, other.path()).is_err());
        let mut home_inside = env.clone();
        home_inside.insert("HOME".into(), root.join("src").display().to_string());
        std::fs::write(root.join(".git/config"), "").unwrap();
        assert!(
            check(&root, &home_inside, &root)
                .unwrap_err()
                .contains("HOME")
        );
        // A submodule's own configuration counts too.
        std::fs::create_dir_all(root.join(".git/modules/lib/hooks")).unwrap();
        std::fs::write(root.join(".git/modules/lib/HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::write(
            root.join(".git/modules/lib/config"),
            "[core]\n\tpager = ./x\n",
        )
        .unwrap();
        assert!(
            check(&root, &env, &root)
                .unwrap_err()
                .contains("modules/lib/config")
        );
        std::fs::remove_dir_all(root.join(".git/modules")).unwrap();
        let mut git_env = env.clone();
        git_env.insert("GIT_CONFIG_PARAMETERS".into(), "'core.pager=x'".into());
        assert!(check(&root, &git_env, &root).is_err());
    }
}
