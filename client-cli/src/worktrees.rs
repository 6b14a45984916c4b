//! `stepper worktrees`: the worktrees stepper kept for workers whose changes were not merged
//! (a conflict, a worker that failed or was interrupted), with their branches; `--remove`
//! takes them away. What merged cleanly was removed already.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};

use anyhow::{Context, bail};
use clap::Args;

/// The prefix of the branches stepper makes for its workers.
const BRANCH_PREFIX: &str = "refs/heads/stepper/";

#[derive(Args)]
pub struct WorktreesArgs {
    /// The folder (default: this one).
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
    /// Remove the worktrees and their branches: those named (by branch), else all.
    #[arg(long, num_args = 0.., value_name = "BRANCH")]
    remove: Option<Vec<String>>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// One kept worktree.
#[derive(Debug, Clone, serde::Serialize)]
struct Kept {
    path: PathBuf,
    branch: String,
}

pub fn run(args: WorktreesArgs) -> anyhow::Result<ExitCode> {
    let dir = match args.dir {
        Some(dir) => dir,
        None => std::env::current_dir().context("cannot tell the current folder")?,
    };
    let dir =
        std::fs::canonicalize(&dir).with_context(|| format!("no folder {}", dir.display()))?;
    let git_dir = repository(&dir);
    let kept = list(&dir, git_dir.as_deref())?;
    let Some(names) = args.remove else {
        if args.json {
            println!("{}", serde_json::to_string_pretty(&kept)?);
        } else if kept.is_empty() {
            println!("no worktrees kept for {}", dir.display());
        } else {
            for k in &kept {
                println!("{}\t{}", k.branch, k.path.display());
            }
        }
        return Ok(ExitCode::SUCCESS);
    };
    let chosen: Vec<&Kept> = kept
        .iter()
        .filter(|k| names.is_empty() || names.contains(&k.branch))
        .collect();
    for name in &names {
        if !kept.iter().any(|k| k.branch == *name) {
            bail!("no kept worktree has the branch {name} — `stepper worktrees` lists them");
        }
    }
    for k in &chosen {
        git(
            &dir,
            git_dir.as_deref(),
            &["worktree", "remove", "--force", "--force"],
            Some(&k.path),
        )
        .with_context(|| format!("cannot remove the worktree {}", k.path.display()))?;
        git(
            &dir,
            git_dir.as_deref(),
            &["branch", "--delete", "--force", "--quiet", &k.branch],
            None,
        )
        .with_context(|| format!("cannot delete the branch {}", k.branch))?;
        println!("removed {} ({})", k.branch, k.path.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// `None` when `dir` is in a git repository; else the private repository that copies it,
/// when there is one.
fn repository(dir: &Path) -> Option<PathBuf> {
    let inside = Command::new("git")
        .args(["rev-parse", "--git-dir"])
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if inside {
        return None;
    }
    #[cfg(unix)]
    let user = nix::unistd::getuid().as_raw();
    #[cfg(not(unix))]
    let user = 0;
    let git_dir = stepper_protocol::places::worktree_copies(dir, user).join("git");
    Some(git_dir)
}

/// The worktrees on stepper's branches.
fn list(dir: &Path, git_dir: Option<&Path>) -> anyhow::Result<Vec<Kept>> {
    if git_dir.is_some_and(|g| !g.exists()) {
        return Ok(Vec::new());
    }
    let out = git(dir, git_dir, &["worktree", "list", "--porcelain"], None)?;
    let mut kept = Vec::new();
    let mut path: Option<PathBuf> = None;
    for line in out.lines() {
        if let Some(p) = line.strip_prefix("worktree ") {
            path = Some(PathBuf::from(p));
        } else if let Some(branch) = line.strip_prefix("branch ")
            && let Some(name) = branch.strip_prefix(BRANCH_PREFIX)
            && let Some(path) = path.take()
        {
            kept.push(Kept {
                path,
                branch: format!("stepper/{name}"),
            });
        }
    }
    Ok(kept)
}

/// Run git in `dir` (on the private repository `git_dir` when given), its hooks off.
fn git(
    dir: &Path,
    git_dir: Option<&Path>,
    args: &[&str],
    path: Option<&Path>,
) -> anyhow::Result<String> {
    let mut command = Command::new("git");
    command
        .args([
            "-c",
            "core.hooksPath=/dev/null",
            "-c",
            "core.fsmonitor=false",
        ])
        .current_dir(dir);
    if let Some(git_dir) = git_dir {
        command.arg("--git-dir").arg(git_dir);
    }
    command.args(args);
    if let Some(path) = path {
        command.arg(path);
    }
    let out = command.output().context("cannot run git")?;
    if !out.status.success() {
        bail!(
            "git {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}
