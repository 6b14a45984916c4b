//! A task's working copy: its `repo/` copied into a fresh temp folder and committed to a new
//! git repository (the agent works in a real one, and `git diff` shows what it did), then,
//! after the agent, the hidden tests laid in and the grading command run with its time limit.
//!
//! Everything here is local and blocking-free for the runtime: copies go through
//! `spawn_blocking`, programs through tokio's process API.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

/// The folder a task runs in: removed when dropped, unless kept.
pub struct Workspace {
    /// Holds `copy/` (the repository the agent sees) and `grade.log`.
    root: tempfile::TempDir,
}

/// How grading went.
#[derive(Debug, Clone)]
pub struct Graded {
    pub passed: bool,
    /// The command's exit code (none when it was killed by a signal or the time limit).
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    pub elapsed: Duration,
    /// The last lines of what it printed (stdout and stderr together).
    pub tail: String,
}

/// How many lines of the grading output a result keeps.
const TAIL_LINES: usize = 40;
/// And at most this many bytes of them.
const TAIL_BYTES: usize = 6000;

/// Who commits the starting files: set in the environment, so no git config is needed.
const GIT_IDENTITY: [(&str, &str); 4] = [
    ("GIT_AUTHOR_NAME", "stepper eval"),
    ("GIT_AUTHOR_EMAIL", "eval@stepper.invalid"),
    ("GIT_COMMITTER_NAME", "stepper eval"),
    ("GIT_COMMITTER_EMAIL", "eval@stepper.invalid"),
];

impl Workspace {
    /// A fresh copy of `repo` named after `task`, committed as the starting point.
    pub async fn create(task: &str, repo: &Path) -> anyhow::Result<Workspace> {
        let root = tempfile::Builder::new()
            .prefix(&format!("stepper-eval-{task}-"))
            .tempdir()
            .context("creating a temp folder for the task (is TMPDIR writable?)")?;
        let copy = root.path().join("copy");
        let from = repo.to_path_buf();
        let to = copy.clone();
        tokio::task::spawn_blocking(move || copy_tree(&from, &to))
            .await
            .context("copying the task's repo/")?
            .with_context(|| format!("copying {} to {}", repo.display(), copy.display()))?;
        let workspace = Workspace { root };
        workspace.git(&["init", "--quiet"]).await?;
        workspace.git(&["add", "--all"]).await?;
        workspace
            .git(&[
                "-c",
                "commit.gpgsign=false",
                "commit",
                "--quiet",
                "--allow-empty",
                "--no-verify",
                "-m",
                "The task's starting files",
            ])
            .await?;
        Ok(workspace)
    }

    /// The repository the agent works in.
    pub fn copy(&self) -> PathBuf {
        self.root.path().join("copy")
    }

    /// Keep the folder after the run; returns where it is.
    pub fn keep(self) -> PathBuf {
        self.root.keep()
    }

    async fn git(&self, args: &[&str]) -> anyhow::Result<()> {
        let out = tokio::process::Command::new("git")
            .args(args)
            .current_dir(self.copy())
            .envs(GIT_IDENTITY)
            // The copy's repository only: no hooks or templates of the user's apply.
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_TEMPLATE_DIR", "")
            .stdin(Stdio::null())
            .output()
            .await
            .map_err(|e| {
                anyhow::anyhow!(
                    "cannot run git: {e} — install git: each task runs in a fresh repository"
                )
            })?;
        if !out.status.success() {
            bail!(
                "git {} failed in {}: {}",
                args.join(" "),
                self.copy().display(),
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        Ok(())
    }

    /// Lay `grade` (the hidden tests) over the copy, then run `argv` there for at most
    /// `limit`. A command that cannot start is an error: nothing was graded.
    pub async fn grade(
        &self,
        grade: Option<&Path>,
        argv: &[String],
        limit: Duration,
    ) -> anyhow::Result<Graded> {
        if let Some(dir) = grade {
            let (from, to) = (dir.to_path_buf(), self.copy());
            tokio::task::spawn_blocking(move || copy_tree(&from, &to))
                .await
                .context("laying in the task's grade/")?
                .with_context(|| format!("copying {} over the copy", dir.display()))?;
        }
        let log_path = self.root.path().join("grade.log");
        let log = std::fs::File::create(&log_path)
            .with_context(|| format!("creating {}", log_path.display()))?;
        let err = log
            .try_clone()
            .with_context(|| format!("opening {} twice", log_path.display()))?;
        let (program, args) = argv
            .split_first()
            .context("the task's grade command is empty")?;
        let mut command = tokio::process::Command::new(program);
        command
            .args(args)
            .current_dir(self.copy())
            // Output for a person reading the tail: no colours, no bytecode left behind.
            .env("NO_COLOR", "1")
            .env("CARGO_TERM_COLOR", "never")
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .stdin(Stdio::null())
            // One file for both: the tail reads in the order it was written.
            .stdout(Stdio::from(log))
            .stderr(Stdio::from(err))
            .kill_on_drop(true);
        #[cfg(unix)]
        command.process_group(0);
        let started = Instant::now();
        let mut child = command.spawn().map_err(|e| {
            anyhow::anyhow!(
                "cannot run the grade command '{}': {e} — is {program} installed and on PATH?",
                argv.join(" ")
            )
        })?;
        // Taken now: a child that has been waited for no longer says its pid.
        let pid = child.id();
        let (exit_code, timed_out) = match tokio::time::timeout(limit, child.wait()).await {
            Ok(status) => {
                let status = status.context("waiting for the grade command")?;
                (status.code(), false)
            }
            Err(_) => {
                #[cfg(unix)]
                signal_group(pid);
                let _ = child.kill().await;
                (None, true)
            }
        };
        let elapsed = started.elapsed();
        // Whatever the command left running (a test server) goes with it.
        #[cfg(unix)]
        signal_group(pid);
        let output = tokio::fs::read(&log_path).await.unwrap_or_default();
        let mut tail = tail(&String::from_utf8_lossy(&output));
        if timed_out {
            tail.push_str(&format!(
                "\n[stepper eval: the grade command ran past its {}s and was stopped]",
                limit.as_secs()
            ));
        }
        Ok(Graded {
            passed: exit_code == Some(0),
            exit_code,
            timed_out,
            elapsed,
            tail,
        })
    }
}

/// Kill everything in the grade command's process group (it leads it: `process_group(0)`).
#[cfg(unix)]
fn signal_group(pid: Option<u32>) {
    use nix::sys::signal::{Signal, killpg};
    use nix::unistd::Pid;
    if let Some(pid) = pid.and_then(|p| i32::try_from(p).ok()) {
        // Gone already is fine: nothing is left to stop.
        let _ = killpg(Pid::from_raw(pid), Signal::SIGKILL);
    }
}

/// The last lines of `text`, at most [`TAIL_LINES`] and [`TAIL_BYTES`].
pub fn tail(text: &str) -> String {
    let lines: Vec<&str> = text.trim_end().lines().collect();
    let mut kept = lines[lines.len().saturating_sub(TAIL_LINES)..].join("\n");
    if kept.len() > TAIL_BYTES {
        let mut cut = kept.len() - TAIL_BYTES;
        while !kept.is_char_boundary(cut) {
            cut += 1;
        }
        kept = format!("…{}", &kept[cut..]);
    }
    kept
}

/// Copy the tree at `from` into `to` (created as needed), over what is there. Symbolic
/// links are copied as links; permissions (an executable script) go with the files.
fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let (source, target) = (entry.path(), to.join(entry.file_name()));
        let kind = entry.file_type()?;
        if kind.is_dir() {
            copy_tree(&source, &target)?;
        } else if kind.is_symlink() {
            let link = std::fs::read_link(&source)?;
            let _ = std::fs::remove_file(&target);
            #[cfg(unix)]
            std::os::unix::fs::symlink(&link, &target)?;
            #[cfg(not(unix))]
            std::fs::copy(&source, &target).map(|_| ())?;
        } else {
            std::fs::copy(&source, &target)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tail_keeps_the_last_lines() {
        let text: String = (1..=100).map(|i| format!("line {i}\n")).collect();
        let kept = tail(&text);
        assert!(kept.starts_with("line 61\n"), "{kept}");
        assert!(kept.ends_with("line 100"));
        let long = "é".repeat(10_000);
        let kept = tail(&long);
        assert!(kept.starts_with('…') && kept.len() <= TAIL_BYTES + 4);
    }

    #[tokio::test]
    async fn a_copy_is_a_committed_repository_and_grading_reads_the_exit_code() {
        let repo = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(repo.path().join("src")).unwrap();
        std::fs::write(repo.path().join("src/a.txt"), "a\n").unwrap();
        let hidden = tempfile::tempdir().unwrap();
        std::fs::write(
            hidden.path().join("check.sh"),
            "test -f src/a.txt && echo checked\n",
        )
        .unwrap();

        let ws = Workspace::create("t", repo.path()).await.unwrap();
        let log = std::process::Command::new("git")
            .args(["log", "--format=%an %s"])
            .current_dir(ws.copy())
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&log.stdout),
            "stepper eval The task's starting files\n"
        );
        let sh = |s: &str| vec!["sh".to_string(), "-c".to_string(), s.to_string()];
        let graded = ws
            .grade(
                Some(hidden.path()),
                &sh("sh check.sh"),
                Duration::from_secs(30),
            )
            .await
            .unwrap();
        assert!(graded.passed && graded.exit_code == Some(0) && !graded.timed_out);
        assert_eq!(graded.tail, "checked");
        let failed = ws
            .grade(
                None,
                &sh("echo out; echo err >&2; exit 3"),
                Duration::from_secs(30),
            )
            .await
            .unwrap();
        assert_eq!((failed.passed, failed.exit_code), (false, Some(3)));
        assert_eq!(failed.tail, "out\nerr");
        let slow = ws
            .grade(
                None,
                &sh("echo started; sleep 30"),
                Duration::from_millis(300),
            )
            .await
            .unwrap();
        assert!(slow.timed_out && !slow.passed && slow.exit_code.is_none());
        assert!(
            slow.tail.starts_with("started\n[stepper eval: "),
            "{}",
            slow.tail
        );
        let missing = ws
            .grade(
                None,
                &["no-such-grader".to_string()],
                Duration::from_secs(5),
            )
            .await
            .unwrap_err();
        assert!(format!("{missing:#}").contains("is no-such-grader installed"));

        let copy = ws.copy();
        drop(ws);
        assert!(!copy.exists(), "the copy goes with the workspace");
        let kept = Workspace::create("t", repo.path()).await.unwrap().keep();
        assert!(kept.join("copy/src/a.txt").exists());
        std::fs::remove_dir_all(kept).unwrap();
    }
}
