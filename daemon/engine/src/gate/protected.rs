//! Paths whose change changes what runs next: stepper's and Claude Code's project folders
//! (settings with hooks, permissions and MCP servers; commands; agents), `.mcp.json`, and the
//! files git runs programs from (its configuration, hooks and `info/`, in every repository of
//! the project, submodules and linked work trees included, and a `core.hooksPath` folder).
//!
//! A tool asks before changing one in every mode but `auto`, whatever the allow rules say
//! ([`why`]), and a sandboxed command finds them read-only ([`read_only_in_sandbox`]). Without
//! this, `accept-edits` would let the model plant a hook that the next turn, or the user's own
//! `git status`, runs unasked.
//!
//! *`auto` is the explicit bypass for protected paths.* Every other mode asks before a tool changes
//! `.stepper/`, `.claude/`, `.mcp.json` or what git runs from, before the allow rules (an
//! `Edit(**)` rule written for source files must not cover hooks); `auto` is the user saying "no
//! questions", and the sandbox still keeps those paths read-only for commands.

use std::ffi::OsStr;
use std::path::{Component, Path, PathBuf};

/// Top-level entries of a project that configure stepper or Claude Code.
const PROJECT_ENTRIES: &[&str] = &[".stepper", ".claude", ".mcp.json"];

/// Folders stepper creates (empty) when missing, so a sandbox can keep them read-only: an
/// empty folder is invisible to git, and nothing can be put in it from inside.
const CREATED_FOR_THE_SANDBOX: &[&str] = &[".stepper", ".claude"];

/// Why changing `path` (resolved: symlinks followed) needs a question, or `None`. `root` is
/// the project's folder (resolved too); paths outside it are asked about anyway.
pub fn why(path: &Path, root: &Path) -> Option<String> {
    let relative = path.strip_prefix(root).ok()?;
    let parts: Vec<&OsStr> = relative
        .components()
        .filter_map(|c| match c {
            Component::Normal(p) => Some(p),
            _ => None,
        })
        .collect();
    let first = parts.first()?;
    if PROJECT_ENTRIES.iter().any(|e| same(first, e)) {
        return Some(format!(
            "{} configures what stepper and Claude Code run in this project (hooks, permissions, \
             MCP servers)",
            first.to_string_lossy()
        ));
    }
    // A `.git` anywhere: the project's repository, or one nested in it.
    for (i, part) in parts.iter().enumerate() {
        if same(part, ".git") && git_runs_from(&parts[i + 1..]) {
            return Some(
                "git runs programs named there (its configuration and hooks) on your next git \
                 command"
                    .into(),
            );
        }
    }
    if let Some(hooks) = hooks_path(root)
        && path.starts_with(&hooks)
    {
        return Some(format!(
            "{} holds the hooks git runs (core.hooksPath)",
            hooks.display()
        ));
    }
    None
}

/// Whether a path inside a git directory (`rest`, below `.git`) is one git reads programs
/// from: the configuration, hooks, `info/` (attributes, exclude), and the same inside the
/// repositories of submodules (`modules/…`) and linked work trees (`worktrees/…`).
fn git_runs_from(rest: &[&OsStr]) -> bool {
    let Some(first) = rest.first() else {
        // `.git` itself: replacing it replaces all of the above.
        return true;
    };
    if same(first, "modules") || same(first, "worktrees") {
        // Any of their repositories: a config, a hooks folder or info/ at any depth.
        return rest.iter().enumerate().skip(1).any(|(i, p)| {
            same(p, "hooks")
                || same(p, "info")
                || ((same(p, "config") || same(p, "config.worktree")) && i + 1 == rest.len())
        });
    }
    same(first, "hooks")
        || same(first, "info")
        || ((same(first, "config") || same(first, "config.worktree")) && rest.len() == 1)
}

/// The protected paths below `root` that a sandboxed command must find read-only: those that
/// exist, after the protected folders that did not were created empty (see
/// [`CREATED_FOR_THE_SANDBOX`]; a file such as `.mcp.json` cannot be held that way, and a
/// project's MCP servers need your approval anyway).
pub fn read_only_in_sandbox(root: &Path) -> Vec<PathBuf> {
    for name in CREATED_FOR_THE_SANDBOX {
        let dir = root.join(name);
        if std::fs::symlink_metadata(&dir).is_err() {
            let _ = std::fs::create_dir(&dir);
        }
    }
    let mut out: Vec<PathBuf> = PROJECT_ENTRIES.iter().map(|e| root.join(e)).collect();
    let git = root.join(".git");
    if git.is_dir() {
        for name in ["hooks", "info"] {
            let dir = git.join(name);
            if std::fs::symlink_metadata(&dir).is_err() {
                let _ = std::fs::create_dir(&dir);
            }
        }
        out.extend(
            ["config", "config.worktree", "hooks", "info"]
                .iter()
                .map(|n| git.join(n)),
        );
        for sub in ["modules", "worktrees"] {
            collect_git_dirs(&git.join(sub), 0, &mut out);
        }
    } else if git.is_file() {
        // A linked work tree's or a submodule's `gitdir:` file: rewritten, it would send git
        // to a repository (configuration, hooks) of the command's making.
        out.push(git);
    }
    out.extend(hooks_path(root));
    out.retain(|p| std::fs::symlink_metadata(p).is_ok());
    out.sort();
    out.dedup();
    out
}

/// Under `modules/` or `worktrees/`: each repository's config, hooks and info/, at most a
/// few levels deep (submodules nest their own `modules/`).
fn collect_git_dirs(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) {
    if depth > 6 {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten().take(1_000) {
        let path = entry.path();
        if !entry.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        if path.join("HEAD").exists() {
            out.extend(
                ["config", "config.worktree", "hooks", "info"]
                    .iter()
                    .map(|n| path.join(n)),
            );
            collect_git_dirs(&path.join("modules"), depth + 1, out);
        } else {
            collect_git_dirs(&path, depth + 1, out);
        }
    }
}

/// The folder `core.hooksPath` names in the project's repository configuration, when it lies
/// inside the project (husky's `.husky`, say): git runs its files as hooks.
fn hooks_path(root: &Path) -> Option<PathBuf> {
    let config = std::fs::read_to_string(root.join(".git").join("config")).ok()?;
    let value = super::repo::config_value(&config, "core", "hookspath")?;
    let value = PathBuf::from(value);
    let path = if value.is_absolute() {
        value
    } else {
        root.join(value)
    };
    let path = super::resolve(&path);
    path.starts_with(super::resolve(root)).then_some(path)
}

/// Names compared as a case-insensitive file system would (macOS, Windows): `.GIT/hooks` is
/// `.git/hooks` there.
fn same(part: &OsStr, name: &str) -> bool {
    part.to_str().is_some_and(|p| p.eq_ignore_ascii_case(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_git_configuration_and_hooks_are_protected() {
        let root = Path::new("/p");
        for protected in [
            "/p/.stepper/setting.json",
            "/p/.stepper",
            "/p/.claude/settings.json",
            "/p/.claude/commands/x.md",
            "/p/.mcp.json",
            "/p/.git/config",
            "/p/.GIT/Config",
            "/p/.git/config.worktree",
            "/p/.git/hooks/pre-commit",
            "/p/.git/info/attributes",
            "/p/.git",
            "/p/.git/modules/sub/config",
            "/p/.git/modules/sub/hooks/post-checkout",
            "/p/.git/modules/a/modules/b/config",
            "/p/.git/worktrees/w/config.worktree",
            "/p/vendor/lib/.git/hooks/pre-commit",
            "/p/vendor/lib/.git/config",
        ] {
            assert!(why(Path::new(protected), root).is_some(), "{protected}");
        }
        for free in [
            "/p/src/main.rs",
            "/p/.git/objects/ab/cdef",
            "/p/.git/refs/heads/main",
            "/p/.git/index",
            "/p/.git/COMMIT_EDITMSG",
            "/p/.git/modules/sub/objects/x",
            "/p/.gitignore",
            "/p/config",
            "/p/docs/.stepper-notes.md",
            "/elsewhere/.stepper/setting.json",
        ] {
            assert_eq!(why(Path::new(free), root), None, "{free}");
        }
    }

    #[test]
    fn the_sandbox_list_holds_what_exists_and_the_folders_it_made() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join(".git/modules/sub/hooks")).unwrap();
        std::fs::write(root.join(".git/modules/sub/HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::write(root.join(".git/modules/sub/config"), "").unwrap();
        std::fs::write(root.join(".git/config"), "[core]\n\thooksPath = .husky\n").unwrap();
        std::fs::create_dir(root.join(".husky")).unwrap();
        let list = read_only_in_sandbox(root);
        for expected in [
            ".stepper",
            ".claude",
            ".git/config",
            ".git/hooks",
            ".git/info",
            ".git/modules/sub/config",
            ".git/modules/sub/hooks",
            ".husky",
        ] {
            assert!(list.contains(&root.join(expected)), "{expected}: {list:?}");
        }
        assert!(!list.contains(&root.join(".mcp.json")), "{list:?}");
        assert!(root.join(".stepper").is_dir() && root.join(".git/hooks").is_dir());
        let resolved = crate::gate::resolve(root);
        assert!(why(&resolved.join(".husky/pre-commit"), &resolved).is_some());

        // A work tree whose `.git` is a `gitdir:` file keeps that file.
        let worktree = tempfile::tempdir().unwrap();
        std::fs::write(
            worktree.path().join(".git"),
            "gitdir: /elsewhere/.git/worktrees/w\n",
        )
        .unwrap();
        let list = read_only_in_sandbox(worktree.path());
        assert!(list.contains(&worktree.path().join(".git")), "{list:?}");
    }
}
