//! Worktrees for isolated workers and subagents (`isolation: worktree`): each works in a git
//! worktree of its own, on its own branch, made from the session's folder as it is when they
//! start; when all are done their changes come back into the folder in task order.
//!
//! The folder is taken as it is, uncommitted changes and new files included: its state is
//! written as a commit (through a private copy of the index, so the user's index, branch and
//! stash are untouched) and every worktree starts from that commit. A folder that is not a
//! repository is copied the same way through a private repository in the temporary folder.
//!
//! The changes come back as a working-tree merge, never as commits on the user's branch:
//! stepper leaves committing to the user (as for every other edit), and rewind restores
//! files, not history. Each worker's changes are committed on its branch, merged three ways
//! onto those merged before it (`git merge-tree`, which touches no working tree), and the
//! result is written into the folder over what it holds then — merged again with the folder
//! if the user changed it meanwhile. A conflict stops the merge at that worker; its
//! worktree and branch, and those of the workers after it, are kept (`stepper worktrees`
//! lists them). The others are removed.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures::StreamExt;
use futures::future::BoxFuture;
use stepper_engine::orchestrator::{Isolated, Merge};
use stepper_protocol::session::Env;
use stepper_protocol::{KeptReason, KeptWorktree, Worktree, WorktreeConflict};

use super::git::{self, GitError};

/// Why worktrees could not be made, or their work not brought back: said to the user as the
/// turn's (or the merge's) error.
#[derive(Debug, thiserror::Error)]
pub(crate) enum WorktreeError {
    #[error(transparent)]
    Git(#[from] GitError),
    /// git ran and failed: why, in its words.
    #[error("{0}")]
    GitSaid(String),
    /// A step of git's failed: which (`add`, `worktree add`, …) and why.
    #[error("git {step} failed: {why}")]
    Step {
        step: String,
        why: Box<WorktreeError>,
    },
    #[error("cannot {doing}: {source}")]
    Io {
        doing: String,
        source: std::io::Error,
    },
    #[error("git rev-parse said too little: {0:?}")]
    TooLittle(String),
    #[error("git made the worktree {} but not where it keeps its records", .0.display())]
    NoRecords(PathBuf),
    #[error(
        "the folder changed while the workers ran, in the files they changed too ({}); \
         nothing was merged",
        .0.join(", ")
    )]
    FolderChanged(Vec<String>),
}

impl WorktreeError {
    /// This, as the failure of git's `step`.
    fn during(self, step: impl Into<String>) -> WorktreeError {
        WorktreeError::Step {
            step: step.into(),
            why: Box::new(self),
        }
    }

    fn io(doing: String) -> impl FnOnce(std::io::Error) -> WorktreeError {
        move |source| WorktreeError::Io { doing, source }
    }
}

/// The prefix of every branch stepper makes for a worker.
pub(crate) const BRANCH_PREFIX: &str = "stepper/";
/// The folder, in a repository's git folder, that holds its workers' worktrees.
pub(crate) const TREES: &str = "stepper-worktrees";
/// How long one git command on the whole tree may take (adding every file of a large
/// repository, checking one out).
const SLOW: Duration = Duration::from_secs(300);
/// The most output read from one git command.
const OUTPUT_MAX: u64 = 64 * 1024 * 1024;
/// How many git commands on separate worktrees run at once.
const AT_ONCE: usize = 4;
/// Who the commits stepper writes on its branches are by.
const AUTHOR: &str = "stepper";
const AUTHOR_EMAIL: &str = "stepper@localhost";

/// The worktrees of one turn's isolated agents.
pub(crate) struct Worktrees {
    /// The session's folder.
    cwd: PathBuf,
    env: Env,
    /// Names this turn's branches and folders apart from every other's (`<session>-t<turn>`).
    label: String,
    batches: Mutex<HashMap<u64, Batch>>,
    next: AtomicU64,
}

/// Where a worktree's git data lives and where its files are.
#[derive(Debug, Clone)]
struct Repo {
    /// The repository's (common) git folder.
    git_dir: PathBuf,
    /// The top of the working tree the session's folder is in.
    top: PathBuf,
    /// The session's folder below `top`.
    prefix: PathBuf,
    /// The index of that working tree, copied to start a snapshot from what git knows.
    index: Option<PathBuf>,
    /// Where the worktrees go.
    trees: PathBuf,
    /// A private repository copying a folder that is not one.
    private: bool,
}

/// One batch of isolated agents (a parallel layer, or one `dispatch` call).
struct Batch {
    repo: Repo,
    /// The folder as the agents started from it.
    base: String,
    base_tree: String,
    places: Vec<Place>,
}

/// One agent's worktree.
#[derive(Debug, Clone)]
pub(crate) struct Place {
    pub agent: String,
    /// The worktree's top.
    pub top: PathBuf,
    /// Its record in the repository's git folder (`worktrees/<name>`), read when it was
    /// made: its git commands name it, never what the worktree's `.git` file says later
    /// (the agent could point that anywhere).
    admin: PathBuf,
    /// The agent's working folder: the session's folder's place in the worktree.
    pub cwd: PathBuf,
    pub branch: String,
}

impl Worktrees {
    pub fn new(cwd: PathBuf, env: Env, label: String) -> Worktrees {
        Worktrees {
            cwd,
            env,
            label,
            batches: Mutex::default(),
            next: AtomicU64::new(1),
        }
    }

    /// The worktree made for `agent`, when it has one.
    pub fn place(&self, agent: &str) -> Option<Place> {
        let batches = self.batches.lock().unwrap_or_else(|p| p.into_inner());
        batches
            .values()
            .flat_map(|b| &b.places)
            .find(|p| p.agent == agent)
            .cloned()
    }

    /// A worktree for each of `agents`, from the folder as it is now.
    pub async fn isolate(&self, agents: Vec<String>) -> Result<Isolated, WorktreeError> {
        let repo = self.repo().await?;
        tokio::fs::create_dir_all(&repo.trees)
            .await
            .map_err(WorktreeError::io(format!("make {}", repo.trees.display())))?;
        let batch = self.next.fetch_add(1, Ordering::SeqCst);
        let base = self
            .snapshot(&repo, &format!("{}-{batch}", self.label))
            .await?;
        let base_tree = self.tree_of(&repo, &base).await?;
        // The worktrees are registered one at a time (`git worktree add` reads the others'
        // records, which a concurrent one may be half-way through writing), then their files
        // are checked out a few at once: that is most of the time.
        let mut places: Vec<Place> = Vec::new();
        let mut failed = None;
        for agent in &agents {
            match self.register(&repo, &base, agent).await {
                Ok(place) => places.push(place),
                Err(why) => {
                    failed = Some(why);
                    break;
                }
            }
        }
        if failed.is_none() {
            let checkouts: Vec<BoxFuture<'_, Result<(), WorktreeError>>> = places
                .iter()
                .map(|place| Box::pin(self.check_out(place)) as BoxFuture<'_, _>)
                .collect();
            let done: Vec<Result<(), WorktreeError>> = futures::stream::iter(checkouts)
                .buffered(AT_ONCE)
                .collect()
                .await;
            failed = done.into_iter().find_map(Result::err);
        }
        if let Some(why) = failed {
            // What was made is taken down again: the agents share the folder.
            self.remove(&repo, places.iter().collect()).await;
            return Err(why);
        }
        let worktrees = places
            .iter()
            .map(|p| Worktree {
                path: p.cwd.display().to_string(),
                branch: p.branch.clone(),
            })
            .collect();
        let note = repo.private.then(|| {
            format!(
                "{} is not a git repository: each worker works in a copy of it made through a \
                 private repository in {} (what .gitignore lists is not copied)",
                self.cwd.display(),
                repo.git_dir.display()
            )
        });
        self.batches
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(
                batch,
                Batch {
                    repo,
                    base,
                    base_tree,
                    places,
                },
            );
        Ok(Isolated {
            batch,
            agents,
            worktrees,
            note,
        })
    }

    /// Bring back what the agents of `batch` changed, in order (`finished[i]`: the i-th
    /// completed); remove the worktrees done with.
    pub async fn merge(&self, batch: u64, finished: &[bool]) -> Merge {
        let Some(batch) = self
            .batches
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&batch)
        else {
            return Merge {
                error: Some("no such batch of worktrees".into()),
                ..Merge::default()
            };
        };
        let mut merge = Merge::default();
        let mut done_with: Vec<&Place> = Vec::new();
        let mut merged_places: Vec<&Place> = Vec::new();
        // What is merged so far: a commit.
        let mut merged = batch.base.clone();
        let mut stopped = false;
        let keep = |place: &Place, reason: KeptReason| KeptWorktree {
            agent_id: place.agent.clone(),
            path: place.cwd.display().to_string(),
            branch: place.branch.clone(),
            reason,
        };
        // What each left, committed on its branch (a few at once), then merged in order.
        let committing: Vec<BoxFuture<'_, Result<Option<String>, WorktreeError>>> = batch
            .places
            .iter()
            .enumerate()
            .map(|(k, place)| {
                Box::pin(self.commit_worktree(&batch, place, k + 1)) as BoxFuture<'_, _>
            })
            .collect();
        let commits: Vec<Result<Option<String>, WorktreeError>> = futures::stream::iter(committing)
            .buffered(AT_ONCE)
            .collect()
            .await;
        for ((k, place), commit) in batch.places.iter().enumerate().zip(commits) {
            let commit = match commit {
                Ok(commit) => commit,
                Err(why) => {
                    merge.error = Some(format!("{}: {why}", place.agent));
                    merge.kept.push(keep(place, KeptReason::Unfinished));
                    continue;
                }
            };
            if !finished.get(k).copied().unwrap_or(false) {
                merge.kept.push(keep(place, KeptReason::Unfinished));
                continue;
            }
            let Some(commit) = commit else {
                // It changed nothing.
                done_with.push(place);
                continue;
            };
            if stopped {
                merge.kept.push(keep(place, KeptReason::NotMerged));
                continue;
            }
            if merged == batch.base {
                merged = commit;
            } else {
                match self
                    .merge_trees(&batch.repo, &batch.base, &merged, &commit)
                    .await
                {
                    Ok(Ok(tree)) => {
                        let message = format!("stepper: merge {}", place.agent);
                        merged = self
                            .commit_tree(&batch.repo, &tree, &[&merged, &commit], &message)
                            .await
                            .unwrap_or(merged);
                    }
                    Ok(Err(files)) => {
                        merge.conflict = Some(WorktreeConflict {
                            agent_id: place.agent.clone(),
                            files,
                        });
                        merge.kept.push(keep(place, KeptReason::Conflict));
                        stopped = true;
                        continue;
                    }
                    Err(why) => {
                        merge.error = Some(why.to_string());
                        merge.kept.push(keep(place, KeptReason::Unfinished));
                        stopped = true;
                        continue;
                    }
                }
            }
            merge.merged.push(place.agent.clone());
            merged_places.push(place);
        }
        if merged != batch.base {
            match self.apply(&batch, &merged).await {
                Ok(files) => {
                    merge.files = files;
                    done_with.extend(merged_places);
                }
                Err(why) => {
                    // Nothing was written: every merged worker's work stays on its branch.
                    merge.error = Some(why.to_string());
                    for place in merged_places {
                        merge.kept.push(keep(place, KeptReason::NotMerged));
                    }
                    merge.merged.clear();
                }
            }
        }
        self.remove(&batch.repo, done_with).await;
        merge
            .kept
            .sort_by_key(|k| batch.places.iter().position(|p| p.agent == k.agent_id));
        merge
    }

    /// The repository the session's folder is in, or a private one copying it.
    async fn repo(&self) -> Result<Repo, WorktreeError> {
        let mut found = git::command(&self.cwd, &self.env);
        found.args([
            "rev-parse",
            "--path-format=absolute",
            "--show-toplevel",
            "--git-common-dir",
            "--git-path",
            "index",
            "--show-prefix",
        ]);
        let out = git::run(found, None, OUTPUT_MAX, SLOW).await?;
        if out.success() {
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            let mut lines = text.lines();
            let (Some(top), Some(common), Some(index)) = (lines.next(), lines.next(), lines.next())
            else {
                return Err(WorktreeError::TooLittle(text));
            };
            let prefix = lines.next().unwrap_or("").trim_end_matches('/');
            let git_dir = PathBuf::from(common);
            return Ok(Repo {
                trees: git_dir.join(TREES),
                git_dir,
                top: PathBuf::from(top),
                prefix: PathBuf::from(prefix),
                index: Some(PathBuf::from(index)),
                private: false,
            });
        }
        // Not a repository: one of stepper's own copies it, kept per folder so its index
        // makes the next copy quick.
        let root = private_root(&self.cwd);
        let git_dir = root.join("git");
        if !git_dir.join("HEAD").exists() {
            tokio::fs::create_dir_all(&root)
                .await
                .map_err(WorktreeError::io(format!("make {}", root.display())))?;
            let mut init = git::command(&root, &self.env);
            init.args(["init", "--quiet", "--bare"]).arg(&git_dir);
            let out = git::run(init, None, OUTPUT_MAX, SLOW).await?;
            if !out.success() {
                return Err(WorktreeError::GitSaid(out.why()).during("init"));
            }
        }
        Ok(Repo {
            index: Some(git_dir.join("index")),
            trees: root.join("trees"),
            git_dir,
            top: self.cwd.clone(),
            prefix: PathBuf::new(),
            private: true,
        })
    }

    /// A git command on `repo`'s objects and refs (with `index` as its index, if given).
    fn git(&self, repo: &Repo, index: Option<&Path>) -> GitCall {
        let mut command = git::command(&repo.top, &self.env);
        command.arg("--git-dir").arg(&repo.git_dir);
        if let Some(index) = index {
            command.env("GIT_INDEX_FILE", index);
        }
        GitCall {
            command,
            input: None,
        }
    }

    /// A git command on `repo` whose work tree is the session's.
    fn in_folder(&self, repo: &Repo, index: &Path) -> GitCall {
        let mut call = self.git(repo, Some(index));
        call.command.arg("--work-tree").arg(&repo.top);
        call
    }

    /// The folder as it is now, as a commit (on HEAD when there is one): its tracked files
    /// and those git would add, through a copy of its index (`name` names the copy).
    async fn snapshot(&self, repo: &Repo, name: &str) -> Result<String, WorktreeError> {
        let index = if repo.private {
            // The private repository's own index, kept from the last copy.
            repo.git_dir.join("index")
        } else {
            let copy = repo.trees.join(format!("{name}.index"));
            match &repo.index {
                Some(real) if real.exists() => {
                    tokio::fs::copy(real, &copy)
                        .await
                        .map_err(WorktreeError::io("copy git's index".into()))?;
                }
                _ => {
                    let _ = tokio::fs::remove_file(&copy).await;
                }
            }
            copy
        };
        let snapshot = async {
            self.in_folder(repo, &index)
                .args(["add", "--all", "--", "."])
                .output()
                .await
                .map_err(|why| why.during("add"))?;
            let tree = self
                .git(repo, Some(&index))
                .args(["write-tree"])
                .output()
                .await
                .map_err(|why| why.during("write-tree"))?
                .line();
            let head = self
                .git(repo, None)
                .args(["rev-parse", "--quiet", "--verify", "HEAD^{commit}"])
                .output()
                .await
                .ok()
                .map(|o| o.line())
                .filter(|h| !h.is_empty());
            let parents: Vec<&str> = head.iter().map(String::as_str).collect();
            self.commit_tree(
                repo,
                &tree,
                &parents,
                "stepper: the folder as the workers started from it",
            )
            .await
        };
        let made = snapshot.await;
        if !repo.private {
            let _ = tokio::fs::remove_file(&index).await;
        }
        made
    }

    async fn commit_tree(
        &self,
        repo: &Repo,
        tree: &str,
        parents: &[&str],
        message: &str,
    ) -> Result<String, WorktreeError> {
        let mut call = self.git(repo, None);
        call = call.args(["commit-tree", tree, "-m", message]);
        for parent in parents {
            call = call.args(["-p", parent]);
        }
        for (var, value) in [
            ("GIT_AUTHOR_NAME", AUTHOR),
            ("GIT_AUTHOR_EMAIL", AUTHOR_EMAIL),
            ("GIT_COMMITTER_NAME", AUTHOR),
            ("GIT_COMMITTER_EMAIL", AUTHOR_EMAIL),
        ] {
            call.command.env(var, value);
        }
        let out = call
            .output()
            .await
            .map_err(|why| why.during("commit-tree"))?;
        Ok(out.line())
    }

    async fn tree_of(&self, repo: &Repo, commit: &str) -> Result<String, WorktreeError> {
        Ok(self
            .git(repo, None)
            .args(["rev-parse", &format!("{commit}^{{tree}}")])
            .output()
            .await?
            .line())
    }

    /// What `place`'s agent left, committed on its branch (`task` numbers the commit):
    /// `None` when it changed nothing.
    async fn commit_worktree(
        &self,
        batch: &Batch,
        place: &Place,
        task: usize,
    ) -> Result<Option<String>, WorktreeError> {
        self.in_worktree(place)
            .args(["add", "--all", "--", "."])
            .output()
            .await
            .map_err(|why| why.during("add"))?;
        let tree = self
            .in_worktree(place)
            .args(["write-tree"])
            .output()
            .await
            .map_err(|why| why.during("write-tree"))?
            .line();
        if tree == batch.base_tree {
            return Ok(None);
        }
        let message = format!("stepper: task {task} ({})", place.agent);
        let commit = self
            .commit_tree(&batch.repo, &tree, &[&batch.base], &message)
            .await?;
        self.git(&batch.repo, None)
            .args([
                "update-ref",
                &format!("refs/heads/{}", place.branch),
                &commit,
            ])
            .output()
            .await
            .map_err(|why| why.during("update-ref"))?;
        Ok(Some(commit))
    }

    /// `ours` and `theirs` merged three ways from `base`: the merged tree, or the files that
    /// conflict.
    async fn merge_trees(
        &self,
        repo: &Repo,
        base: &str,
        ours: &str,
        theirs: &str,
    ) -> Result<Result<String, Vec<String>>, WorktreeError> {
        let mut command = git::command(&repo.top, &self.env);
        command.arg("--git-dir").arg(&repo.git_dir).args([
            "merge-tree",
            "--write-tree",
            "--name-only",
            "--no-messages",
            &format!("--merge-base={base}"),
            ours,
            theirs,
        ]);
        let out = git::run(command, None, OUTPUT_MAX, SLOW).await?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let mut lines = text.lines();
        let tree = lines.next().unwrap_or("").trim().to_string();
        match out.code {
            Some(0) => Ok(Ok(tree)),
            Some(1) => {
                let mut files: Vec<String> = lines
                    .take_while(|l| !l.is_empty())
                    .map(str::to_string)
                    .collect();
                files.dedup();
                Ok(Err(files))
            }
            _ => Err(WorktreeError::GitSaid(out.why()).during("merge-tree")),
        }
    }

    /// Write `merged` into the session's folder over what it holds now (merged with it
    /// again when the user changed it since the agents started): the files written or
    /// removed.
    async fn apply(&self, batch: &Batch, merged: &str) -> Result<u32, WorktreeError> {
        let repo = &batch.repo;
        let now = self.snapshot(repo, &format!("{}-now", self.label)).await?;
        let now_tree = self.tree_of(repo, &now).await?;
        let target = if now_tree == batch.base_tree {
            self.tree_of(repo, merged).await?
        } else {
            match self.merge_trees(repo, &batch.base, &now, merged).await? {
                Ok(tree) => tree,
                Err(files) => return Err(WorktreeError::FolderChanged(files)),
            }
        };
        let listed = self
            .git(repo, None)
            .args([
                "diff-tree",
                "-r",
                "-z",
                "--no-renames",
                "--name-status",
                &now_tree,
                &target,
            ])
            .output()
            .await
            .map_err(|why| why.during("diff-tree"))?;
        let fields: Vec<&[u8]> = listed
            .stdout
            .split(|b| *b == 0)
            .filter(|f| !f.is_empty())
            .collect();
        let mut write: Vec<u8> = Vec::new();
        let mut remove: Vec<PathBuf> = Vec::new();
        let mut files = 0u32;
        for pair in fields.chunks(2) {
            let [status, path] = pair else { continue };
            let path = String::from_utf8_lossy(path).into_owned();
            files += 1;
            if status.starts_with(b"D") {
                remove.push(repo.top.join(&path));
            } else {
                write.extend_from_slice(path.as_bytes());
                write.push(0);
            }
        }
        if !write.is_empty() {
            let index = repo.trees.join(format!("{}-apply.index", self.label));
            let checked_out = async {
                self.git(repo, Some(&index))
                    .args(["read-tree", &target])
                    .output()
                    .await
                    .map_err(|why| why.during("read-tree"))?;
                let mut call = self.in_folder(repo, &index);
                call = call.args(["checkout-index", "--force", "-z", "--stdin"]);
                call.input = Some(write);
                call.output()
                    .await
                    .map_err(|why| why.during("checkout-index"))
            };
            let done = checked_out.await;
            let _ = tokio::fs::remove_file(&index).await;
            done?;
        }
        for path in remove {
            match tokio::fs::remove_file(&path).await {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => {
                    return Err(WorktreeError::Io {
                        doing: format!("remove {}", path.display()),
                        source: e,
                    });
                }
            }
        }
        Ok(files)
    }

    /// Register a worktree for `agent` on a new branch at `base`, its files not yet
    /// checked out.
    async fn register(&self, repo: &Repo, base: &str, agent: &str) -> Result<Place, WorktreeError> {
        let name = format!("{}-{agent}", self.label);
        let branch = format!("{BRANCH_PREFIX}{}/{agent}", self.label);
        let top = repo.trees.join(&name);
        self.git(repo, None)
            .args(["worktree", "add", "--no-checkout", "--quiet", "-b", &branch])
            .arg(&top)
            .arg(base)
            .output()
            .await
            .map_err(|why| why.during("worktree add"))?;
        let admin = admin_of(repo, &top).await;
        let place = Place {
            agent: agent.to_string(),
            cwd: top.join(&repo.prefix),
            top,
            admin: admin.clone().unwrap_or_default(),
            branch,
        };
        if admin.is_none() {
            self.remove(repo, vec![&place]).await;
            return Err(WorktreeError::NoRecords(place.top.clone()));
        }
        Ok(place)
    }

    /// Check `place`'s files out.
    async fn check_out(&self, place: &Place) -> Result<(), WorktreeError> {
        self.in_worktree(place)
            .args(["reset", "--hard", "--quiet"])
            .output()
            .await
            .map(|_| ())
            .map_err(|why| why.during(format!("checkout of {}", place.top.display())))
    }

    /// A git command on `place`'s worktree, through the record read when it was made.
    fn in_worktree(&self, place: &Place) -> GitCall {
        let mut command = git::command(&place.top, &self.env);
        command
            .arg("--git-dir")
            .arg(&place.admin)
            .arg("--work-tree")
            .arg(&place.top);
        GitCall {
            command,
            input: None,
        }
    }

    /// Take `places`' worktrees and branches away: their folders and records removed as
    /// `git worktree remove` would (at once: git's own would read each other's records
    /// while they go), their branches in one command.
    async fn remove(&self, repo: &Repo, places: Vec<&Place>) {
        let removing: Vec<BoxFuture<'_, ()>> = places
            .iter()
            .map(|place| {
                Box::pin(async move {
                    for dir in [&place.top, &place.admin] {
                        if dir.as_os_str().is_empty() {
                            continue;
                        }
                        match tokio::fs::remove_dir_all(dir).await {
                            Ok(()) => {}
                            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                            Err(e) => {
                                tracing::warn!(dir = %dir.display(), error = %e, "cannot remove a worktree");
                            }
                        }
                    }
                }) as BoxFuture<'_, ()>
            })
            .collect();
        futures::stream::iter(removing)
            .buffer_unordered(AT_ONCE)
            .collect::<Vec<()>>()
            .await;
        if places.is_empty() {
            return;
        }
        let mut delete = self
            .git(repo, None)
            .args(["branch", "--delete", "--force", "--quiet"]);
        for place in &places {
            delete = delete.arg(&place.branch);
        }
        if let Err(why) = delete.output().await {
            tracing::warn!(%why, "cannot delete the branches of removed worktrees");
        }
    }
}

/// The record git keeps of the worktree at `top`: what its `.git` file names, when that is
/// in `repo`'s `worktrees` folder.
async fn admin_of(repo: &Repo, top: &Path) -> Option<PathBuf> {
    let text = tokio::fs::read_to_string(top.join(".git")).await.ok()?;
    let named = PathBuf::from(text.strip_prefix("gitdir:")?.trim());
    let records = tokio::fs::canonicalize(repo.git_dir.join("worktrees"))
        .await
        .ok()?;
    let named = tokio::fs::canonicalize(&named).await.ok()?;
    (named.parent() == Some(records.as_path())).then_some(named)
}

/// Where the private repository copying `folder` (not a repository) lives: the temporary
/// folder, so a reboot clears it.
fn private_root(folder: &Path) -> PathBuf {
    #[cfg(unix)]
    let user = nix::unistd::getuid().as_raw();
    #[cfg(not(unix))]
    let user = 0;
    stepper_protocol::places::worktree_copies(folder, user)
}

/// A git command being built; `output` runs it and fails unless git succeeded.
struct GitCall {
    command: tokio::process::Command,
    input: Option<Vec<u8>>,
}

impl GitCall {
    fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        self.command.args(args);
        self
    }

    fn arg(mut self, arg: impl AsRef<std::ffi::OsStr>) -> Self {
        self.command.arg(arg);
        self
    }

    async fn output(self) -> Result<git::Output, WorktreeError> {
        let out = git::run(self.command, self.input, OUTPUT_MAX, SLOW).await?;
        if out.success() {
            Ok(out)
        } else {
            Err(WorktreeError::GitSaid(out.why()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env() -> Env {
        std::env::vars()
            .filter(|(k, _)| k == "PATH" || k == "HOME")
            .collect()
    }

    fn sh(dir: &Path, line: &str) -> String {
        let out = std::process::Command::new("bash")
            .args(["-c", line])
            .current_dir(dir)
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@t")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@t")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{line}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    const LINES: &str = "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\n";

    /// A repository with `f.txt` committed, and an uncommitted change and a new file.
    fn repo() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f.txt"), LINES).unwrap();
        sh(
            dir.path(),
            "git init -q -b main && git add -A && git commit -qm first",
        );
        std::fs::write(dir.path().join("wip.txt"), "uncommitted\n").unwrap();
        dir
    }

    fn replace(path: &Path, from: &str, to: &str) {
        let text = std::fs::read_to_string(path).unwrap();
        assert!(text.contains(from), "{from:?} in {text:?}");
        std::fs::write(path, text.replacen(from, to, 1)).unwrap();
    }

    fn agents(n: usize) -> Vec<String> {
        (1..=n).map(|k| format!("layer-2.{k}")).collect()
    }

    #[tokio::test]
    async fn without_git_on_the_path_isolating_says_git_cannot_run() {
        let dir = repo();
        let path = tempfile::tempdir().unwrap();
        let no_git: Env = [("PATH".to_string(), path.path().display().to_string())].into();
        let trees = Worktrees::new(dir.path().to_path_buf(), no_git, "abcd1234-t0".into());
        let Err(e) = trees.isolate(agents(1)).await else {
            panic!("isolated without git");
        };
        assert!(matches!(e, WorktreeError::Git(GitError::Spawn(_))), "{e:?}");
        assert!(e.to_string().starts_with("cannot run git: "), "{e}");
    }

    #[tokio::test]
    async fn three_workers_editing_one_file_in_different_places_merge_cleanly() {
        let dir = repo();
        let trees = Worktrees::new(dir.path().to_path_buf(), env(), "abcd1234-t1".into());
        let isolated = trees.isolate(agents(3)).await.unwrap();
        assert_eq!(isolated.worktrees.len(), 3);
        assert!(isolated.note.is_none());
        for (k, (from, to)) in [("two", "TWO"), ("five", "FIVE"), ("eight", "EIGHT")]
            .iter()
            .enumerate()
        {
            let place = trees.place(&format!("layer-2.{}", k + 1)).unwrap();
            // Each starts from the folder as it was, uncommitted work included.
            assert_eq!(
                std::fs::read_to_string(place.cwd.join("wip.txt")).unwrap(),
                "uncommitted\n"
            );
            replace(&place.cwd.join("f.txt"), from, to);
        }
        // The folder is untouched while they work.
        assert_eq!(
            std::fs::read_to_string(dir.path().join("f.txt")).unwrap(),
            LINES
        );
        let merge = trees.merge(isolated.batch, &[true, true, true]).await;
        assert_eq!(merge.error, None);
        assert_eq!(merge.conflict, None);
        assert_eq!(merge.merged, agents(3));
        assert_eq!(merge.files, 1);
        assert!(merge.kept.is_empty());
        assert_eq!(
            std::fs::read_to_string(dir.path().join("f.txt")).unwrap(),
            LINES
                .replace("two", "TWO")
                .replace("five", "FIVE")
                .replace("eight", "EIGHT")
        );
        // Nothing is left: no worktree, no branch; the user's index and branch as they were.
        assert_eq!(sh(dir.path(), "git worktree list | wc -l").trim(), "1");
        assert_eq!(sh(dir.path(), "git branch --list 'stepper/*'"), "");
        assert_eq!(sh(dir.path(), "git branch --show-current").trim(), "main");
        assert_eq!(
            sh(dir.path(), "git status --porcelain"),
            " M f.txt\n?? wip.txt\n"
        );
    }

    #[tokio::test]
    async fn two_workers_on_the_same_lines_conflict_and_the_second_is_kept() {
        let dir = repo();
        let trees = Worktrees::new(dir.path().to_path_buf(), env(), "abcd1234-t2".into());
        let isolated = trees.isolate(agents(3)).await.unwrap();
        let cwd = |k: usize| trees.place(&format!("layer-2.{k}")).unwrap().cwd;
        replace(&cwd(1).join("f.txt"), "three", "THREE-1");
        replace(&cwd(2).join("f.txt"), "three", "THREE-2");
        std::fs::write(cwd(3).join("new.txt"), "from three\n").unwrap();
        let merge = trees.merge(isolated.batch, &[true, true, true]).await;
        assert_eq!(merge.merged, vec!["layer-2.1".to_string()]);
        assert_eq!(
            merge.conflict,
            Some(WorktreeConflict {
                agent_id: "layer-2.2".into(),
                files: vec!["f.txt".into()],
            })
        );
        let kept: Vec<(&str, KeptReason)> = merge
            .kept
            .iter()
            .map(|k| (k.agent_id.as_str(), k.reason))
            .collect();
        assert_eq!(
            kept,
            vec![
                ("layer-2.2", KeptReason::Conflict),
                ("layer-2.3", KeptReason::NotMerged)
            ]
        );
        // The first worker's change is in; the conflicting one waits on its branch.
        let text = std::fs::read_to_string(dir.path().join("f.txt")).unwrap();
        assert!(
            text.contains("THREE-1") && !text.contains("THREE-2"),
            "{text}"
        );
        assert!(!dir.path().join("new.txt").exists());
        let branch = &merge.kept[0].branch;
        assert!(
            sh(dir.path(), &format!("git show {branch}:f.txt")).contains("THREE-2"),
            "the kept branch holds the worker's change"
        );
        assert!(Path::new(&merge.kept[0].path).join("f.txt").exists());
        assert_eq!(sh(dir.path(), "git worktree list | wc -l").trim(), "3");
    }

    #[tokio::test]
    async fn an_unfinished_worker_is_kept_and_the_folders_own_changes_are_merged_with() {
        let dir = repo();
        let trees = Worktrees::new(dir.path().to_path_buf(), env(), "abcd1234-t3".into());
        let isolated = trees.isolate(agents(2)).await.unwrap();
        let cwd = |k: usize| trees.place(&format!("layer-2.{k}")).unwrap().cwd;
        replace(&cwd(1).join("f.txt"), "nine", "NINE");
        std::fs::remove_file(cwd(1).join("wip.txt")).unwrap();
        replace(&cwd(2).join("f.txt"), "one", "ONE");
        // The user edits the folder while the workers run.
        replace(&dir.path().join("f.txt"), "four", "FOUR-USER");
        let merge = trees.merge(isolated.batch, &[true, false]).await;
        assert_eq!(merge.error, None);
        assert_eq!(merge.merged, vec!["layer-2.1".to_string()]);
        assert_eq!(merge.files, 2);
        assert_eq!(merge.kept.len(), 1);
        assert_eq!(merge.kept[0].reason, KeptReason::Unfinished);
        let text = std::fs::read_to_string(dir.path().join("f.txt")).unwrap();
        assert!(text.contains("NINE") && text.contains("FOUR-USER") && !text.contains("ONE"));
        assert!(!dir.path().join("wip.txt").exists());
    }

    #[tokio::test]
    async fn a_worker_that_points_its_git_file_at_the_repository_stages_nothing_there() {
        let dir = repo();
        let trees = Worktrees::new(dir.path().to_path_buf(), env(), "abcd1234-t6".into());
        let isolated = trees.isolate(agents(1)).await.unwrap();
        let place = trees.place("layer-2.1").unwrap();
        let main_git = dir.path().join(".git");
        std::fs::write(
            place.top.join(".git"),
            format!("gitdir: {}\n", main_git.display()),
        )
        .unwrap();
        replace(&place.cwd.join("f.txt"), "six", "SIX");
        let merge = trees.merge(isolated.batch, &[true]).await;
        assert_eq!((merge.error.clone(), merge.files), (None, 1), "{merge:?}");
        assert!(
            std::fs::read_to_string(dir.path().join("f.txt"))
                .unwrap()
                .contains("SIX")
        );
        // The user's index holds what it held: nothing staged behind their back.
        assert_eq!(sh(dir.path(), "git diff --cached --name-only"), "");
        assert!(!place.top.exists());
    }

    #[tokio::test]
    async fn a_folder_that_is_not_a_repository_is_copied_and_merged_back() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("src/a.txt"), LINES).unwrap();
        let trees = Worktrees::new(dir.path().to_path_buf(), env(), "abcd1234-t4".into());
        let isolated = trees.isolate(agents(2)).await.unwrap();
        assert!(
            isolated
                .note
                .as_deref()
                .unwrap()
                .contains("not a git repository")
        );
        let cwd = |k: usize| trees.place(&format!("layer-2.{k}")).unwrap().cwd;
        replace(&cwd(1).join("src/a.txt"), "two", "TWO");
        std::fs::write(cwd(2).join("src/b.txt"), "new\n").unwrap();
        let merge = trees.merge(isolated.batch, &[true, true]).await;
        assert_eq!((merge.error.clone(), merge.files), (None, 2), "{merge:?}");
        assert!(
            !dir.path().join(".git").exists(),
            "the folder is not made a repository"
        );
        assert!(
            std::fs::read_to_string(dir.path().join("src/a.txt"))
                .unwrap()
                .contains("TWO")
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join("src/b.txt")).unwrap(),
            "new\n"
        );
        assert!(!Path::new(&isolated.worktrees[0].path).exists());
        std::fs::remove_dir_all(private_root(dir.path())).unwrap();
    }

    #[tokio::test]
    async fn a_session_in_a_subfolder_works_in_the_same_subfolder_of_its_worktree() {
        let dir = repo();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("sub/s.txt"), "s\n").unwrap();
        sh(dir.path(), "git add -A && git commit -qm sub");
        let sub = dir.path().join("sub");
        let trees = Worktrees::new(sub.clone(), env(), "abcd1234-t5".into());
        let isolated = trees.isolate(agents(1)).await.unwrap();
        let place = trees.place("layer-2.1").unwrap();
        assert!(place.cwd.ends_with("sub") && place.cwd.join("s.txt").exists());
        std::fs::write(place.cwd.join("s.txt"), "S\n").unwrap();
        let merge = trees.merge(isolated.batch, &[true]).await;
        assert_eq!(merge.files, 1, "{merge:?}");
        assert_eq!(std::fs::read_to_string(sub.join("s.txt")).unwrap(), "S\n");
    }
}
