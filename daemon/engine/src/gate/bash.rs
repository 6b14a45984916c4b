//! The decision for a shell line: its commands as bash will run them ([`shell`]), each
//! judged by the read-only tables ([`commands`]) or the session's rules, and what the
//! read-only ones read checked against the session: every path like the read tool's, every
//! name a pattern expands to, the program bash finds on `PATH`, and git's configuration.
//! Doubt anywhere asks.
//!
//! *`cd` is followed as a superset*: every folder a `cd` in the line can lead to is a folder where
//! later relative paths are checked, whatever the control flow.
//!
//! *One decision, bounded*: the patterns of a line may list at most 50,000 folder entries, spend at
//! most 50 M matching steps, its walks (the links a listing describes, the files a search reads) go
//! through at most 200,000 entries and git's tracked files at most 500,000, and its checks
//! (repositories included) take at most 1 s; beyond, it asks (or is refused when a read deny rule
//! may have gone unchecked). Red-team runs found 1,500 patterns taking 4.6 s and a crafted index
//! 14.6 s before this.
//!
//! *ripgrep's ignore files are reads*: rg follows a link in place of an ignore file and prints any
//! line that is not a glob, so the gate walks what rg walks — with ripgrep's own `ignore` crate,
//! pruning what rg's ignore rules skip unless an option widens the walk — and checks each folder's
//! ignore files before the walker reads them (a FIFO there would hold it), within the line's
//! budget.
//!
//! *`cd` both ways*: bash's `cd` is logical (`x/..` undoes `x` as written, even through a link),
//! `cd -P` physical; the gate follows both, from the session folder and from its `PWD` when that
//! names the same folder.
//!
//! *A script may run anything by name*: a program the gate allows is checked where bash finds it,
//! but `egrep` and `fgrep` are scripts that run `grep` through `PATH`. The gate reads the first
//! bytes of the program found: one that is no ELF binary makes every `PATH` folder outside the
//! project a condition (not just those before it: what a script runs is unknown), and its `#!`
//! interpreter must be absolute and outside the project, followed through up to five interpreters
//! as Linux does.
//!
//! *A listing that describes links reads their targets*: `ls -lL`, `ls -F`, `ls --color`, `find
//! -xtype`, `-readable`, `-printf %Y` and tree stat (or `access`) what each link they list leads
//! to, so a link out of the project told its target's size, kind or existence. The tables mark
//! these (`Reads::link_targets`); the gate lists the same folders (every folder below, for a
//! recursive listing, never entering a link) and reads each link among them like a path, within the
//! line's budget. Plain `ls -l` only reads the link itself.
//!
//! *Deny rules reach every file a search reads*: `grep -r KEY .` read a `.env` that `Read(./.env)`
//! denies, since only the folder named was checked. The files the gate walks for a search (all
//! below the folder for `grep -r` and `git grep --untracked`, what ripgrep's ignore rules leave for
//! `rg`, hidden files included: ripgrep skips one only when no rule names it, and a `!.env` in a
//! global ignore file, or `-t`, would) are each held to the `Read` deny rules, and the line is
//! refused when one matches (`--exclude` and the like are not read: a search that would skip the
//! file is refused all the same). Tracked files git shows are the repository's, readable as a whole
//! like its history.
//!
//! The reasons along the way (a program not found on `PATH`, a repository's configuration)
//! are `String`s, not an error type: each ends as the text of the question the gate asks,
//! and no caller tells one from another.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use stepper_protocol::session::Env;

use super::commands::{self, IgnoreWalk, Judgement, Reads, Walk, WorkTree};
use super::shell::{self, SimpleCommand, Value, Word, pattern};
use super::{Policy, SandboxState, Verdict, is_process_view, repo, resolve, several_names};
use stepper_protocol::session::PermissionMode;

/// Folders a line may run its commands in (one per `cd` combination) before the gate stops
/// following them.
const MAX_FOLDERS: usize = 16;
/// Folder entries the patterns of one line may make the gate list.
const MAX_LISTED: usize = 50_000;
/// Matching steps the patterns of one line may take.
const MAX_MATCHING: u64 = 50_000_000;
/// Time the checks of one line may take before the gate gives up on it.
const MAX_CHECKING: Duration = Duration::from_secs(1);
/// Entries the gate's own walks of one line (the links a listing describes, the files a
/// search reads) may go through.
const MAX_WALKED: usize = 200_000;

/// Variables that make bash run or parse something beyond the line itself.
const SHELL_VARIABLES: &[(&str, &str)] = &[
    ("BASH_ENV", "bash runs that file before the line"),
    ("ENV", "a shell may run that file before the line"),
    ("BASHOPTS", "it changes how bash expands words"),
    ("SHELLOPTS", "it changes how bash runs the line"),
    (
        "POSIXLY_CORRECT",
        "it changes how programs read their options",
    ),
];

/// What one check found.
#[derive(Clone)]
enum Finding {
    Fine,
    Ask(String),
    Deny(String),
}

impl From<Finding> for Verdict {
    fn from(found: Finding) -> Self {
        match found {
            Finding::Fine => Verdict::Allow,
            Finding::Ask(why) => Verdict::Ask(why),
            Finding::Deny(why) => Verdict::Deny(why),
        }
    }
}

impl Policy {
    pub(super) fn bash(&self, line: &str, cwd: &Path, env: &Env) -> Verdict {
        let analysis = shell::analyse(line);
        if let Some(denied) = self.denied(&analysis) {
            return denied;
        }
        // A sandbox that should be there and is not: `auto` and `accept-edits` ask about
        // commands as `default` does (plan mode refuses as ever).
        let fallback = self.sandbox == SandboxState::Unavailable;
        if self.mode == PermissionMode::Auto && !fallback {
            return self.auto(&analysis);
        }
        // The sandbox keeps what the line changes inside the project, where this mode lets
        // changes through: only what it may read outside is still a question. (`auto` with
        // a sandbox asks nothing at all, above.)
        let confined =
            self.sandbox == SandboxState::Active && self.mode == PermissionMode::AcceptEdits;
        let plan = self.mode == PermissionMode::Plan;
        let refuse = |why: String| {
            if plan {
                Verdict::Deny(format!("plan mode only reads: {why}"))
            } else {
                Verdict::Ask(why)
            }
        };
        if let Some(risk) = analysis.risky.first()
            && !confined
        {
            return refuse(format!("the command line has {risk}"));
        }
        if !confined && let Some(why) = shell_environment(env, &self.project_root, line) {
            return Verdict::Ask(why);
        }
        for cmd in &analysis.commands {
            let words = literal_words(cmd);
            if let Some(rule) = self.ask.iter().find(|r| r.matches_command(&words)) {
                return Verdict::Ask(format!(
                    "{} matches the ask rule {}",
                    cmd.shown(),
                    rule.text
                ));
            }
        }
        if confined && self.sandbox_confines_reads {
            return Verdict::Allow;
        }
        let judged: Vec<(&SimpleCommand, Judgement)> = analysis
            .commands
            .iter()
            .map(|c| (c, commands::judge(&c.words)))
            .collect();
        let folders = match folders(cwd, env, &judged) {
            Ok(f) => f,
            Err(why) => return Verdict::Ask(why),
        };
        let mut memo = Memo::default();
        // The line itself runs in the bash found on the session's PATH.
        if !confined && let Err(why) = self.program("bash", env, &mut memo) {
            return Verdict::Ask(format!("the shell: {why}"));
        }
        let mut unapproved = Vec::new();
        let mut asks = Vec::new();
        for (cmd, judgement) in &judged {
            if Instant::now() > memo.budget.deadline {
                return self.too_long().into();
            }
            let words = literal_words(cmd);
            let by_prefix = self.allow.iter().any(|r| r.matches_command(&words));
            let exactly = self.allow.iter().any(|r| r.matches_exactly(&words));
            memo.names.touched.clear();
            match judgement {
                Judgement::Shell(_) if confined => {}
                Judgement::Shell(why) => return refuse(format!("{}: {why}", cmd.shown())),
                Judgement::Unlisted => {
                    if !by_prefix || writes_by_flag(&words) {
                        unapproved.push(cmd.shown());
                    }
                }
                Judgement::Changes(why) => {
                    if !by_prefix || writes_by_flag(&words) {
                        unapproved.push(format!("{} ({why})", cmd.shown()));
                    }
                }
                Judgement::Refused(why) => {
                    if !exactly {
                        unapproved.push(format!("{} ({why})", cmd.shown()));
                    }
                }
                Judgement::Reads(reads) => {
                    match self.check_reads(cmd, reads, &folders, env, &mut memo) {
                        Finding::Fine => {}
                        Finding::Deny(why) => return Verdict::Deny(why),
                        Finding::Ask(why) if !by_prefix => asks.push(why),
                        Finding::Ask(_) => {}
                    }
                }
            }
            let matched = match judgement {
                Judgement::Reads(r) => Matched {
                    files_only: r.files_only,
                    link_targets: r.link_targets,
                    pathspecs: r.pathspecs,
                    searches: r.searches,
                },
                _ => Matched::default(),
            };
            for word in &cmd.words {
                match self.check_pattern(word, &folders, &mut memo, matched) {
                    Finding::Fine => {}
                    Finding::Deny(why) => return Verdict::Deny(why),
                    Finding::Ask(why) => asks.push(why),
                }
            }
            // The files it reads with several names: each name must have been met.
            if let Some(why) = memo.names.unmet()
                && !by_prefix
            {
                asks.push(why);
            }
        }
        for word in &analysis.reads {
            match self.check_path_word(word, &folders, &mut memo) {
                Finding::Fine => {}
                Finding::Deny(why) => return Verdict::Deny(why),
                Finding::Ask(why) => asks.push(why),
            }
        }
        if !unapproved.is_empty() && !confined {
            return refuse(format!("run {}", unapproved.join(", ")));
        }
        match asks.into_iter().next() {
            Some(why) => Verdict::Ask(why),
            None => Verdict::Allow,
        }
    }

    /// The first of the line's commands a deny rule refuses, in every mode.
    fn denied(&self, analysis: &shell::Analysis) -> Option<Verdict> {
        analysis.commands.iter().find_map(|cmd| {
            let words = literal_words(cmd);
            self.deny
                .iter()
                .find(|r| r.matches_command(&words))
                .map(|rule| {
                    Verdict::Deny(format!(
                        "{} is denied by the rule {}",
                        cmd.shown(),
                        rule.text
                    ))
                })
        })
    }

    /// Running a line again outside the sandbox: refused by deny rules and in plan mode,
    /// otherwise always asked, whatever the mode and the allow rules.
    pub(super) fn unsandboxed(&self, line: &str, failure: &str) -> Verdict {
        let analysis = shell::analyse(line);
        if let Some(denied) = self.denied(&analysis) {
            return denied;
        }
        if self.mode == PermissionMode::Plan {
            return Verdict::Deny("plan mode only reads".into());
        }
        let first = failure
            .lines()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("")
            .trim();
        let first: String = first.chars().take(200).collect();
        Verdict::Ask(format!(
            "run it again outside the sandbox, with all your rights and the network: it failed \
             inside it ({first})"
        ))
    }

    /// `auto` asks nothing, but deny rules still hold: a line whose commands cannot all be
    /// named (too complex, or a command name computed at run time) cannot be checked against
    /// them, so it is refused when there are any.
    fn auto(&self, analysis: &shell::Analysis) -> Verdict {
        if !self.deny.iter().any(|r| r.is_bash()) {
            return Verdict::Allow;
        }
        if analysis.incomplete {
            return Verdict::Deny(
                "the command line is too complex to check against the deny rules".into(),
            );
        }
        if let Some(cmd) = analysis
            .commands
            .iter()
            .find(|c| c.words.first().and_then(Word::text).is_none())
        {
            return Verdict::Deny(format!(
                "{} has a command name known only at run time, so the deny rules cannot be checked",
                cmd.shown()
            ));
        }
        Verdict::Allow
    }

    /// What a read-only command reads, against the session.
    fn check_reads(
        &self,
        cmd: &SimpleCommand,
        reads: &Reads,
        folders: &[PathBuf],
        env: &Env,
        memo: &mut Memo,
    ) -> Finding {
        let name = cmd.words.first().map(Word::shown).unwrap_or_default();
        if let Some(var) = reads.env.iter().find(|v| env.contains_key(**v)) {
            return Finding::Ask(format!(
                "{name} reads {var} from the environment, which changes what it does"
            ));
        }
        if !reads.builtin {
            let found = match memo.programs.get(name) {
                Some(found) => found.clone(),
                None => {
                    let found = self.program(name, env, memo);
                    memo.programs.insert(name.to_string(), found.clone());
                    found
                }
            };
            if let Err(why) = found {
                return Finding::Ask(why);
            }
        }
        // Where the command reads its paths from: its folder, or for git the folder its `-C`
        // options lead to — and for some of git's option files, the top of the work tree.
        let mut bases: Vec<PathBuf> = Vec::new();
        let mut tops: Vec<PathBuf> = Vec::new();
        for folder in folders {
            match &reads.git {
                Some(chain) => {
                    let base = match chain.first().and_then(Word::text) {
                        Some(c) => {
                            let base = folder.join(c);
                            match self.read(&base, memo) {
                                Finding::Fine => {}
                                other => return other,
                            }
                            base
                        }
                        None => folder.clone(),
                    };
                    if !reads.top_files.is_empty() {
                        tops.extend(repo::top_levels(&base));
                    }
                    bases.push(base);
                }
                None => bases.push(folder.clone()),
            }
        }
        for word in &reads.paths {
            let Value::Literal(text) = &word.value else {
                // Patterns are checked with every other pattern of the command.
                continue;
            };
            if is_stream(text) {
                continue;
            }
            let from_top = reads.top_files.contains(word);
            for folder in bases.iter().chain(tops.iter().filter(|_| from_top)) {
                let path = folder.join(text);
                if reads.files_only && path.is_dir() {
                    return Finding::Ask(format!(
                        "{name} compares the files in the folder {}, following links",
                        path.display()
                    ));
                }
                match self.read(&path, memo) {
                    Finding::Fine => {}
                    other => return other,
                }
            }
        }
        if reads.cwd {
            for folder in folders {
                match self.read(folder, memo) {
                    Finding::Fine => {}
                    other => return other,
                }
            }
        }
        if let Some(walk) = reads.link_targets {
            // The folders it lists: those named, or where it runs (a pattern's, with it).
            let named = bases.iter().flat_map(|base| {
                reads.paths.iter().filter_map(move |w| match &w.value {
                    Value::Literal(text) if !is_stream(text) => Some(base.join(text)),
                    _ => None,
                })
            });
            let here = folders.iter().filter(|_| reads.cwd).cloned();
            for root in named.chain(here).collect::<Vec<_>>() {
                match self.check_link_targets(&root, walk, memo) {
                    Finding::Fine => {}
                    other => return other,
                }
            }
        }
        if reads.searches {
            // Every file below the folders it searches (a pattern's, with it).
            let named = bases.iter().flat_map(|base| {
                reads.paths.iter().filter_map(move |w| match &w.value {
                    Value::Literal(text) if !is_stream(text) => Some(base.join(text)),
                    _ => None,
                })
            });
            let here = folders.iter().filter(|_| reads.cwd).cloned();
            for root in named.chain(here).collect::<Vec<_>>() {
                match self.check_files_below(&root, memo) {
                    Finding::Fine => {}
                    other => return other,
                }
            }
        }
        if let Some(walk) = reads.ignore_files {
            // The folders it searches: the named ones, or where it runs; a pattern's matches
            // lie in the folder it is expanded from, walked whole.
            let mut roots: Vec<(PathBuf, IgnoreWalk)> = Vec::new();
            for folder in folders {
                for word in &reads.paths {
                    match &word.value {
                        Value::Literal(text) => roots.push((folder.join(text), walk)),
                        _ => roots.push((folder.clone(), IgnoreWalk::Every)),
                    }
                }
                if reads.paths.is_empty() {
                    roots.push((folder.clone(), walk));
                }
            }
            if let Err(why) = repo::user_configuration_elsewhere(env, &self.project_root) {
                return Finding::Ask(format!("{name}: {why}"));
            }
            for key in roots {
                let found = match memo.ignore_walks.get(&key) {
                    Some((found, files)) => {
                        let found = found.clone();
                        memo.names.touch(&files.clone());
                        found
                    }
                    None => {
                        let mut files = Vec::new();
                        let found = self.check_ignore_files(&key.0, key.1, memo, &mut files);
                        memo.ignore_walks.insert(key, (found.clone(), files));
                        found
                    }
                };
                match found {
                    Finding::Fine => {}
                    other => return other,
                }
            }
        }
        if let Some(chain) = &reads.git {
            let repos: Vec<PathBuf> = folders
                .iter()
                .map(|f| match chain.first().and_then(Word::text) {
                    Some(c) => f.join(c),
                    None => f.clone(),
                })
                .collect();
            for dir in repos {
                let checked = memo.repos.entry(dir.clone()).or_insert_with(|| {
                    repo::check(&dir, env, &self.project_root, memo.budget.deadline)
                });
                if let Err(why) = checked {
                    return Finding::Ask(format!("git: {why}"));
                }
                if let Some(work_tree) = reads.work_tree {
                    match self.check_work_tree(&dir, work_tree, memo) {
                        Finding::Fine => {}
                        other => return other,
                    }
                }
            }
        }
        Finding::Fine
    }

    /// The files of its work tree git reads: each tracked one (below its folder, or all),
    /// and for untracked ones every file below — their names met for [`Names`].
    fn check_work_tree(&self, dir: &Path, work_tree: WorkTree, memo: &mut Memo) -> Finding {
        let deadline = memo.budget.deadline;
        let tracked = match repo::tracked_files(dir, work_tree.whole, deadline) {
            Ok(files) => files,
            Err(why) => return Finding::Ask(format!("git: {why}")),
        };
        for (n, file) in tracked.iter().enumerate() {
            if n % 1024 == 0 && Instant::now() > deadline {
                return self.too_long();
            }
            // git reads what a link says, not what it leads to.
            if let Ok(meta) = std::fs::symlink_metadata(file) {
                memo.names.note(file, &meta);
            }
        }
        if work_tree.untracked {
            let roots = if work_tree.whole {
                repo::top_levels(dir)
            } else {
                vec![dir.to_path_buf()]
            };
            for root in roots {
                match self.check_files_below(&root, memo) {
                    Finding::Fine => {}
                    other => return other,
                }
            }
        }
        Finding::Fine
    }

    /// A search reads every file below `root` (following `root`, no link below it): each is
    /// held to the `Read` deny rules, and their names are met for [`Names`].
    fn check_files_below(&self, root: &Path, memo: &mut Memo) -> Finding {
        let real = resolve(root);
        if let Some((found, files)) = memo.file_walks.get(&real) {
            let found = found.clone();
            memo.names.touch(&files.clone());
            return found;
        }
        let mut files = Vec::new();
        let found = self.walk(&real, Walk::Tree, memo, |gate, entry, kind, memo| {
            if !kind.is_file() {
                return Finding::Fine;
            }
            let path = entry.path();
            if let Some(denied) = gate.read_denied(&path) {
                return denied;
            }
            if let Ok(meta) = entry.metadata()
                && let Some(file) = memo.names.note(&path, &meta)
            {
                files.push(file);
            }
            Finding::Fine
        });
        memo.file_walks.insert(real, (found.clone(), files));
        found
    }

    /// A path read: as the read tool's read would be decided.
    fn read(&self, path: &Path, memo: &mut Memo) -> Finding {
        if let Some(found) = memo.reads.get(path) {
            return found.clone();
        }
        // Each read resolves links on disk: a line naming many paths stops at the deadline.
        if Instant::now() > memo.budget.deadline {
            return self.too_long();
        }
        let found = match self.path(path, false) {
            // `/proc/self`, `/dev/fd/…` name the reading process's own view: the daemon would
            // resolve them as itself, not as the command that reads them.
            _ if is_process_view(path) => Finding::Ask(format!(
                "read {}, which depends on the process reading it",
                path.display()
            )),
            Verdict::Allow => Finding::Fine,
            Verdict::Ask(why) => Finding::Ask(why),
            Verdict::Deny(why) => Finding::Deny(why),
        };
        memo.reads.insert(path.to_path_buf(), found.clone());
        found
    }

    /// ripgrep reads the ignore files of each folder it walks and of the folders above (and
    /// prints a line it cannot parse): each is read like any other file, and must be a
    /// regular one. Folders above the project are the user's own.
    ///
    /// ripgrep reads the files of that walk too, each held to the `Read` deny rules; those
    /// with several names are met for [`Names`] (and handed back in `files`). Hidden files
    /// are among them: ripgrep skips one only when no rule names it (`!.env` in any ignore
    /// file, a `-g` or `-t` whitelist would bring it in), which the gate cannot be sure of.
    fn check_ignore_files(
        &self,
        root: &Path,
        walk: IgnoreWalk,
        memo: &mut Memo,
        files: &mut Vec<FileKey>,
    ) -> Finding {
        let project = resolve(&self.project_root);
        let resolved = resolve(root);
        for dir in resolved.ancestors().chain(root.ancestors()) {
            if !resolve(dir).starts_with(&project) {
                continue;
            }
            match self.check_folder_ignores(dir, memo) {
                Finding::Fine => {}
                other => return other,
            }
        }
        if !resolved.is_dir() {
            return Finding::Fine;
        }
        // Every folder below, as ripgrep walks it (links not followed). The walker reads each
        // folder's ignore files to know what to skip: the filter vets them first (a FIFO
        // would hold it) and hands on what each folder holds, which is then read in full.
        let shared: Arc<Mutex<Walked>> = Arc::default();
        let mut builder = ignore::WalkBuilder::new(root);
        builder
            .hidden(false)
            .parents(false)
            .git_global(false)
            .git_exclude(false)
            .follow_links(false)
            .add_custom_ignore_filename(".rgignore");
        if walk == IgnoreWalk::Every {
            builder.standard_filters(false);
        }
        // As paths in the real folder, for the deny rules (and so that the same file met
        // twice is one name).
        let real = {
            let (root, resolved) = (root.to_path_buf(), resolved.clone());
            move |path: &Path| {
                path.strip_prefix(&root)
                    .map(|rest| resolved.join(rest))
                    .unwrap_or_else(|_| path.to_path_buf())
            }
        };

        let deny: Vec<_> = self.deny.iter().filter(|r| !r.is_bash()).cloned().collect();
        builder.filter_entry({
            let shared = Arc::clone(&shared);
            move |entry| {
                // Only folders hold ignore files; files are not worth yielding, but ripgrep
                // reads them: one a deny rule refuses, or with several names, is handed on.
                if !entry.file_type().is_some_and(|t| t.is_dir()) {
                    if !entry.file_type().is_some_and(|t| t.is_file()) {
                        return false;
                    }
                    let path = real(entry.path());
                    let denied = deny.iter().find(|r| r.matches_path(&path, false));
                    let several = entry
                        .metadata()
                        .ok()
                        .filter(|meta| several_names(&path, meta).is_some());
                    if (denied.is_some() || several.is_some())
                        && let Ok(mut walked) = shared.lock()
                    {
                        if let Some(rule) = denied {
                            walked
                                .denied
                                .get_or_insert_with(|| (path.clone(), rule.text.clone()));
                        }
                        walked.several.extend(several.map(|meta| (path, meta)));
                    }
                    return false;
                }
                let Ok(mut walked) = shared.lock() else {
                    return false;
                };
                walked.folders += 1;
                for name in IGNORE_FILES.iter().chain([&".git"]) {
                    let file = entry.path().join(name);
                    if std::fs::symlink_metadata(&file).is_err() {
                        continue;
                    }
                    if *name != ".git"
                        && let Some(why) = ignore_file_trouble(&file, &project)
                    {
                        walked.trouble.get_or_insert(why);
                        return false;
                    }
                    walked.found.push(file);
                }
                true
            }
        });
        let mut walker = builder.build();
        loop {
            let more = walker.next().is_some();
            let (found, several, denied, trouble, folders) = match shared.lock() {
                Ok(mut w) => (
                    std::mem::take(&mut w.found),
                    std::mem::take(&mut w.several),
                    w.denied.clone(),
                    w.trouble.clone(),
                    w.folders,
                ),
                Err(_) => return Finding::Ask("the check of rg's ignore files failed".into()),
            };
            if let Some((path, rule)) = denied {
                return Finding::Deny(format!("{} is denied by the rule {rule}", path.display()));
            }
            if let Some(why) = trouble {
                return Finding::Ask(why);
            }
            for (file, meta) in several {
                files.extend(memo.names.note(&file, &meta));
            }
            for file in found {
                let checked = if file.ends_with(".git") {
                    self.check_exclude_files(&file, memo)
                } else {
                    self.read(&file, memo)
                };
                match checked {
                    Finding::Fine => {}
                    other => return other,
                }
            }
            if !more {
                return Finding::Fine;
            }
            if folders >= memo.budget.entries || Instant::now() > memo.budget.deadline {
                return Finding::Ask(
                    "rg would walk more folders than the gate checks in time".into(),
                );
            }
        }
    }

    /// The `info/exclude` files ripgrep reads for a `.git`.
    fn check_exclude_files(&self, dot_git: &Path, memo: &mut Memo) -> Finding {
        let dirs = match repo::exclude_dirs(dot_git) {
            Ok(dirs) => dirs,
            Err(why) => return Finding::Ask(format!("rg reads git's exclude file: {why}")),
        };
        for file in dirs.iter().map(|d| d.join("info/exclude")) {
            if std::fs::symlink_metadata(&file).is_err() {
                continue;
            }
            match self.read(&file, memo) {
                Finding::Fine => {}
                other => return other,
            }
            if let Some(why) = ignore_file_trouble(&file, &resolve(&self.project_root)) {
                return Finding::Ask(why);
            }
        }
        Finding::Fine
    }

    /// The ignore files ripgrep reads in `dir`.
    fn check_folder_ignores(&self, dir: &Path, memo: &mut Memo) -> Finding {
        let project = resolve(&self.project_root);
        for file in IGNORE_FILES.iter().map(|n| dir.join(n)) {
            if std::fs::symlink_metadata(&file).is_err() {
                continue;
            }
            match self.read(&file, memo) {
                Finding::Fine => {}
                other => return other,
            }
            if let Some(why) = ignore_file_trouble(&file, &project) {
                return Finding::Ask(why);
            }
        }
        let dot_git = dir.join(".git");
        if std::fs::symlink_metadata(&dot_git).is_ok() {
            return self.check_exclude_files(&dot_git, memo);
        }
        Finding::Fine
    }

    /// A file named by a redirection (`< file`).
    fn check_path_word(&self, word: &Word, folders: &[PathBuf], memo: &mut Memo) -> Finding {
        match &word.value {
            Value::Literal(text) if is_stream(text) => Finding::Fine,
            Value::Literal(text) => {
                for folder in folders {
                    match self.read(&folder.join(text), memo) {
                        Finding::Fine => {}
                        other => return other,
                    }
                }
                Finding::Fine
            }
            _ => self.check_pattern(word, folders, memo, Matched::default()),
        }
    }

    /// A pattern anywhere in a command: bash lists folders and hands the program every name
    /// it matches. Each folder listed and each name is read; a name that starts with `-`
    /// would reach the program as an option.
    fn check_pattern(
        &self,
        word: &Word,
        folders: &[PathBuf],
        memo: &mut Memo,
        matched: Matched,
    ) -> Finding {
        let Value::Pattern(p) = &word.value else {
            return Finding::Fine;
        };
        // An absolute pattern names the same files from every folder.
        let root = [PathBuf::from("/")];
        let folders = if p.text().starts_with('/') {
            &root[..]
        } else {
            folders
        };
        let key = (word.raw.clone(), folders.to_vec(), matched);
        if let Some(found) = memo.patterns.get(&key) {
            return found.clone();
        }
        let found = self.expand_and_read(word, p, folders, memo, matched);
        memo.patterns.insert(key, found.clone());
        found
    }

    fn expand_and_read(
        &self,
        word: &Word,
        p: &shell::Pattern,
        folders: &[PathBuf],
        memo: &mut Memo,
        matched: Matched,
    ) -> Finding {
        for folder in folders {
            let expansion = match pattern::expand(p, folder, &mut memo.budget) {
                Ok(e) => e,
                Err(why) => return Finding::Ask(why),
            };
            for listed in &expansion.listed {
                match self.read(listed, memo) {
                    Finding::Fine => {}
                    other => return other,
                }
            }
            if expansion.words.is_empty() {
                // No match: bash passes the pattern itself.
                match self.read(&folder.join(p.text()), memo) {
                    Finding::Fine => {}
                    other => return other,
                }
            }
            for name in &expansion.words {
                if name.starts_with('-') {
                    return Finding::Ask(format!(
                        "{} matches the file {name}, which the program would take as an option",
                        word.raw
                    ));
                }
                if matched.pathspecs && name.starts_with(':') {
                    return Finding::Ask(format!(
                        "{} matches the file {name}, which git would take for pathspec magic",
                        word.raw
                    ));
                }
                let path = folder.join(name);
                if matched.files_only && path.is_dir() {
                    return Finding::Ask(format!(
                        "{} matches the folder {name}, whose files would be compared following links",
                        word.raw
                    ));
                }
                match self.read(&path, memo) {
                    Finding::Fine => {}
                    other => return other,
                }
                if let Some(walk) = matched.link_targets {
                    match self.check_link_targets(&path, walk, memo) {
                        Finding::Fine => {}
                        other => return other,
                    }
                }
                if matched.searches && path.is_dir() {
                    match self.check_files_below(&path, memo) {
                        Finding::Fine => {}
                        other => return other,
                    }
                }
            }
        }
        Finding::Fine
    }

    /// The `Read` deny rule that refuses reading `path` (a real path), if any.
    fn read_denied(&self, path: &Path) -> Option<Finding> {
        self.deny
            .iter()
            .find(|r| r.matches_path(path, false))
            .map(|rule| {
                Finding::Deny(format!(
                    "{} is denied by the rule {}",
                    path.display(),
                    rule.text
                ))
            })
    }

    /// A listing that describes what its links lead to reads each link's target: every link
    /// among the entries of `root` (or below it) is read like a path.
    fn check_link_targets(&self, root: &Path, walk: Walk, memo: &mut Memo) -> Finding {
        let key = (root.to_path_buf(), walk);
        if let Some(found) = memo.link_walks.get(&key) {
            return found.clone();
        }
        let found = self.walk(root, walk, memo, |gate, entry, kind, memo| {
            if kind.is_symlink() {
                gate.read(&entry.path(), memo)
            } else {
                Finding::Fine
            }
        });
        memo.link_walks.insert(key, found.clone());
        found
    }

    /// Go through the entries of the folder `root` (following `root` itself, as programs
    /// follow the folders they are named), and for `Walk::Tree` through every folder below,
    /// never entering a link: `visit` judges each entry. A walk longer than the line's budget
    /// asks.
    fn walk(
        &self,
        root: &Path,
        walk: Walk,
        memo: &mut Memo,
        mut visit: impl FnMut(&Self, &std::fs::DirEntry, std::fs::FileType, &mut Memo) -> Finding,
    ) -> Finding {
        if !root.is_dir() {
            return Finding::Fine;
        }
        let mut pending = vec![root.to_path_buf()];
        while let Some(dir) = pending.pop() {
            // A folder the gate cannot list, the program cannot either.
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries {
                memo.walked += 1;
                if memo.walked > MAX_WALKED || Instant::now() > memo.budget.deadline {
                    return Finding::Ask(format!(
                        "the line goes through more of {} than the gate checks in time",
                        root.display()
                    ));
                }
                let Ok(entry) = entry else {
                    continue;
                };
                let Ok(kind) = entry.file_type() else {
                    return Finding::Ask(format!("{} cannot be examined", entry.path().display()));
                };
                match visit(self, &entry, kind, memo) {
                    Finding::Fine => {}
                    other => return other,
                }
                if walk == Walk::Tree && kind.is_dir() {
                    pending.push(entry.path());
                }
            }
        }
        Finding::Fine
    }

    /// The checks took too long: a line this large is asked about — or refused when a read
    /// deny rule might have been among what was not checked.
    fn too_long(&self) -> Finding {
        let why = "the command line names more files than the gate checks in time";
        if self.deny.iter().any(|r| !r.is_bash()) {
            Finding::Deny(format!("{why}, and deny rules could not be checked"))
        } else {
            Finding::Ask(why.into())
        }
    }

    /// The program bash runs for `name`: found on the session's `PATH` the way bash finds
    /// it, and not inside the project (a project's `ls` is the project's code). A program
    /// that is no binary (a script: `egrep` runs `grep`) may run any other by name, so then
    /// no folder on `PATH` may be the project's, and its interpreter may not be either.
    fn program(&self, name: &str, env: &Env, memo: &mut Memo) -> Result<(), String> {
        let Some(path) = env.get("PATH") else {
            return Err(format!(
                "PATH is not set, so bash would look for {name} in the current folder too"
            ));
        };
        let root = resolve(&self.project_root);
        for dir in path.split(':') {
            path_folder(dir, None, memo).map_err(|why| format!("{why}, so {name} {WHOSE}"))?;
            let candidate = Path::new(dir).join(name);
            if !is_executable(&candidate) {
                continue;
            }
            let real = resolve(&candidate);
            if real.starts_with(&root) {
                return Err(format!(
                    "{name} would run {}, a program inside the project",
                    real.display()
                ));
            }
            if is_process_view(&real) {
                return Err(format!(
                    "{name} would be found through {}, which only the command can resolve",
                    real.display()
                ));
            }
            return runs_by_name(name, &real, path, &root, memo);
        }
        Err(format!("{name} is not on PATH"))
    }
}

/// What a doubtful `PATH` folder means for the program found there.
const WHOSE: &str = "could be a program in the project";

/// A folder of `PATH`, as bash (or a script's interpreter) looks in it: it must be absolute
/// (the current folder is the project) and not under `/proc` (where `/proc/self/cwd` is the
/// command's own folder) — nor, for a script, inside the project (`root`).
fn path_folder(dir: &str, root: Option<&Path>, memo: &mut Memo) -> Result<(), String> {
    if dir.is_empty() || !dir.starts_with('/') {
        return Err(format!("PATH holds the relative folder {dir:?}"));
    }
    let real = memo
        .path_dirs
        .entry(dir.to_string())
        .or_insert_with(|| resolve(Path::new(dir)));
    if root.is_some_and(|r| real.starts_with(r)) {
        return Err(format!("PATH holds {dir}, a folder of the project"));
    }
    if is_process_view(real) {
        return Err(format!(
            "PATH holds {dir}, which leads through {}",
            real.display()
        ));
    }
    Ok(())
}

/// Interpreters a script may chain through before the gate stops following (Linux's own
/// limit is 5).
const MAX_INTERPRETERS: usize = 5;

/// A program that is no binary runs by name what it likes: every folder on `PATH` must be
/// outside the project, and the interpreter its `#!` line names (in turn) too. bash runs a
/// file without one as a script of its own.
fn runs_by_name(
    name: &str,
    program: &Path,
    path: &str,
    root: &Path,
    memo: &mut Memo,
) -> Result<(), String> {
    let mut current = program.to_path_buf();
    for _ in 0..MAX_INTERPRETERS {
        let interpreter = match executable_format(&current) {
            Format::Binary => return Ok(()),
            Format::Script(interpreter) => interpreter,
        };
        for dir in path.split(':') {
            path_folder(dir, Some(root), memo).map_err(|why| {
                format!("{name} is a script, which may run other programs by name, and {why}")
            })?;
        }
        let Some(interpreter) = interpreter else {
            // bash runs it itself: the shell already checked.
            return Ok(());
        };
        let real = resolve(&interpreter);
        if !interpreter.is_absolute() || real.starts_with(root) || is_process_view(&real) {
            return Err(format!(
                "{name} is a script run by {}, which could be a program in the project",
                interpreter.display()
            ));
        }
        current = real;
    }
    Err(format!(
        "{name} is a script whose interpreters run through more scripts than the gate follows"
    ))
}

/// What kind of executable a file is, by its first bytes.
enum Format {
    /// Machine code the kernel loads itself (an ELF file), or a file the gate cannot read
    /// (nor could an interpreter).
    Binary,
    /// A script, with the interpreter its `#!` line names (none: bash runs it).
    Script(Option<PathBuf>),
}

#[cfg(unix)]
fn executable_format(path: &Path) -> Format {
    use std::io::Read;
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::OpenOptionsExt;
    // The kernel reads at most this much of a `#!` line.
    let mut head = [0u8; 256];
    let read = std::fs::File::options()
        .read(true)
        .custom_flags(nix::fcntl::OFlag::O_NONBLOCK.bits())
        .open(path)
        .and_then(|mut f| f.read(&mut head));
    let Ok(n) = read else {
        return Format::Binary;
    };
    let head = &head[..n];
    if head.starts_with(b"\x7fELF") {
        return Format::Binary;
    }
    let Some(line) = head.strip_prefix(b"#!") else {
        return Format::Script(None);
    };
    let line = line.split(|&b| b == b'\n').next().unwrap_or_default();
    let interpreter = line
        .split(|&b| b == b' ' || b == b'\t')
        .find(|w| !w.is_empty())
        .map(|w| PathBuf::from(std::ffi::OsStr::from_bytes(w)));
    Format::Script(interpreter.or_else(|| Some(PathBuf::new())))
}

#[cfg(not(unix))]
fn executable_format(_: &Path) -> Format {
    Format::Binary
}

/// What one decision has already looked up: a long line repeats its commands, paths and
/// patterns.
struct Memo {
    programs: HashMap<String, Result<(), String>>,
    /// `PATH` folders, resolved.
    path_dirs: HashMap<String, PathBuf>,
    reads: HashMap<PathBuf, Finding>,
    patterns: HashMap<(String, Vec<PathBuf>, Matched), Finding>,
    link_walks: HashMap<(PathBuf, Walk), Finding>,
    /// Searches below a folder: what they found, and the files with several names met.
    file_walks: HashMap<PathBuf, Searched>,
    /// Entries the gate's own walks went through.
    walked: usize,
    names: Names,
    repos: HashMap<PathBuf, Result<(), String>>,
    ignore_walks: HashMap<(PathBuf, IgnoreWalk), Searched>,
    /// What patterns and repository checks may still spend.
    budget: pattern::Budget,
}

impl Default for Memo {
    fn default() -> Memo {
        Memo {
            programs: HashMap::new(),
            path_dirs: HashMap::new(),
            reads: HashMap::new(),
            patterns: HashMap::new(),
            link_walks: HashMap::new(),
            file_walks: HashMap::new(),
            walked: 0,
            names: Names::default(),
            repos: HashMap::new(),
            ignore_walks: HashMap::new(),
            budget: pattern::Budget {
                entries: MAX_LISTED,
                steps: MAX_MATCHING,
                deadline: Instant::now() + MAX_CHECKING,
            },
        }
    }
}

/// A file, as (device, inode).
type FileKey = (u64, u64);

/// What a walk found, and the files with several names it met.
type Searched = (Finding, Vec<FileKey>);

/// Files with several names (hard links) met among what the commands of a line read. Under
/// another name a file may be one outside the project; it is the project's own when every
/// one of its names was met inside it.
#[derive(Default)]
struct Names {
    /// (device, inode): how many names the file has, and those met.
    files: BTreeMap<FileKey, (u64, BTreeSet<PathBuf>)>,
    /// The files the command being judged reads.
    touched: BTreeSet<FileKey>,
}

impl Names {
    /// The file at `path` (a real path), whose metadata is `meta`, is read: its key when it
    /// has several names.
    fn note(&mut self, path: &Path, meta: &std::fs::Metadata) -> Option<FileKey> {
        let names = several_names(path, meta)?;
        let key = file_key(meta);
        let entry = self.files.entry(key).or_default();
        entry.0 = names;
        entry.1.insert(path.to_path_buf());
        self.touched.insert(key);
        Some(key)
    }

    /// Files read again, as an earlier walk met them.
    fn touch(&mut self, keys: &[FileKey]) {
        self.touched.extend(keys.iter().copied());
    }

    /// Why the command being judged may read a file outside: one it reads has a name that
    /// was not met.
    fn unmet(&self) -> Option<String> {
        self.touched.iter().find_map(|key| {
            let (names, met) = self.files.get(key)?;
            let first = met.iter().next()?;
            (met.len() < usize::try_from(*names).unwrap_or(usize::MAX)).then(|| {
                format!(
                    "read {}: the file has {names} names, and another may be outside the project",
                    first.display()
                )
            })
        })
    }
}

#[cfg(unix)]
fn file_key(meta: &std::fs::Metadata) -> FileKey {
    use std::os::unix::fs::MetadataExt;
    (meta.dev(), meta.ino())
}

#[cfg(not(unix))]
fn file_key(_: &std::fs::Metadata) -> FileKey {
    (0, 0)
}

/// How a command reads the names its patterns match.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
struct Matched {
    /// A folder among them would be compared file by file, following links.
    files_only: bool,
    /// A folder among them is listed with what its links lead to.
    link_targets: Option<Walk>,
    /// git takes them for pathspecs: a name starting with `:` would have magic.
    pathspecs: bool,
    /// Every file below a folder among them is read.
    searches: bool,
}

/// Each word's literal text, or None when bash computes it.
fn literal_words(cmd: &SimpleCommand) -> Vec<Option<&str>> {
    cmd.words.iter().map(Word::text).collect()
}

/// What the filter of ripgrep's walk found so far.
#[derive(Default)]
struct Walked {
    folders: usize,
    /// Ignore files and `.git`s found, not yet checked as reads.
    found: Vec<PathBuf>,
    /// Files with several names, not yet met.
    several: Vec<(PathBuf, std::fs::Metadata)>,
    /// A file a deny rule refuses to read, and the rule.
    denied: Option<(PathBuf, String)>,
    trouble: Option<String>,
}

/// The ignore files ripgrep reads in every folder it walks.
const IGNORE_FILES: [&str; 3] = [".gitignore", ".ignore", ".rgignore"];

/// The longest ignore file the gate lets ripgrep read.
const MAX_IGNORE_FILE: u64 = 4 << 20;

/// Why ripgrep must not read `file` as an ignore file (when it exists): it leads out of
/// the project, or is not a regular file of bounded size.
fn ignore_file_trouble(file: &Path, project: &Path) -> Option<String> {
    std::fs::symlink_metadata(file).ok()?;
    let shown = file.display();
    match std::fs::metadata(file) {
        Ok(m) if !m.is_file() => Some(format!(
            "rg would read the ignore file {shown}, which is not a regular file"
        )),
        Ok(m) if m.len() > MAX_IGNORE_FILE => Some(format!(
            "rg would read the ignore file {shown}, which is very large"
        )),
        Ok(_) if !resolve(file).starts_with(project) => Some(format!(
            "rg would read the ignore file {shown}, which leads out of the project"
        )),
        Ok(_) => None,
        Err(e) => Some(format!("rg would read the ignore file {shown}: {e}")),
    }
}

/// The null device and standard input: nothing is read from a file (`-` may name one).
fn is_stream(path: &str) -> bool {
    matches!(path, "/dev/null" | "/dev/stdin")
}

/// The folders the line's commands may run in: the session's, and every folder a `cd` in it
/// leads to from any of those (wherever it stands, a superset of where each command runs).
/// `cd` is logical in bash — `..` undoes the last step as written, links and all — and
/// physical with `-P`: both are followed. The session's `PWD`, when it names the same folder,
/// is where bash's logical steps start from.
fn folders(
    cwd: &Path,
    env: &Env,
    judged: &[(&SimpleCommand, Judgement)],
) -> Result<Vec<PathBuf>, String> {
    let mut folders = vec![cwd.to_path_buf()];
    if let Some(pwd) = env.get("PWD").map(PathBuf::from)
        && pwd != cwd
        && pwd.is_absolute()
        && resolve(&pwd) == resolve(cwd)
    {
        folders.push(pwd);
    }
    for (_, judgement) in judged {
        let Judgement::Reads(Reads { cd: Some(dir), .. }) = judgement else {
            continue;
        };
        let Some(dir) = dir.text() else {
            return Err(format!("cd to {}, known only at run time", dir.raw));
        };
        let next: Vec<PathBuf> = folders
            .iter()
            .flat_map(|f| [f.join(dir), super::normalize(&f.join(dir))])
            .collect();
        for f in next {
            if !folders.contains(&f) {
                folders.push(f);
            }
        }
        if folders.len() > MAX_FOLDERS {
            return Err("the line changes folders too often to follow".into());
        }
    }
    Ok(folders)
}

/// Whether bash reads characters as UTF-8 (or bytes, in C/POSIX) in this environment: the
/// first of LC_ALL, LC_CTYPE, LANG that is set decides, and custom locale definitions
/// (LOCPATH) are not trusted.
fn utf8_locale(env: &Env) -> bool {
    if env.contains_key("LOCPATH") {
        return false;
    }
    let locale = ["LC_ALL", "LC_CTYPE", "LANG"]
        .iter()
        .filter_map(|v| env.get(*v))
        .find(|v| !v.is_empty())
        .map(String::as_str)
        .unwrap_or("C");
    if matches!(locale, "C" | "POSIX") {
        return true;
    }
    let codeset = locale
        .split_once('.')
        .map(|(_, c)| c.split('@').next().unwrap_or(c))
        .unwrap_or("");
    let codeset: String = codeset
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .collect::<String>()
        .to_ascii_lowercase();
    codeset == "utf8"
}

/// Lists of folders or files every program loads code from.
const LOADER_VARIABLES: &[&str] = &["LD_LIBRARY_PATH", "LD_PRELOAD", "LD_AUDIT", "GCONV_PATH"];

/// Something in the session's environment that makes bash run or read beyond the line.
fn shell_environment(env: &Env, root: &Path, line: &str) -> Option<String> {
    if let Some((var, why)) = SHELL_VARIABLES.iter().find(|(v, _)| env.contains_key(*v)) {
        return Some(format!("the session's environment sets {var}: {why}"));
    }
    // bash started by sshd (Debian's, among others, takes `SSH_CLIENT` for proof) runs
    // `~/.bashrc` first when it is a top-level shell: what the line's commands mean is then
    // the rc file's to say.
    if let Some(var) = ["SSH_CLIENT", "SSH2_CLIENT"]
        .into_iter()
        .find(|v| env.contains_key(*v))
        && !nested_shell_level(env)
    {
        return Some(format!(
            "the session's environment sets {var} without SHLVL, so bash would run ~/.bashrc \
             before the line"
        ));
    }
    // In a multibyte character set other than UTF-8 (GBK, Shift_JIS) a byte past ASCII can
    // swallow the `\` or `'` after it: bash then reads another line than the gate did.
    if !line.is_ascii() && !utf8_locale(env) {
        return Some(
            "the session's locale is not UTF-8, in which bash may read this line's characters \
             otherwise"
                .into(),
        );
    }
    // An empty or relative entry is the current folder: the project's code would be loaded
    // into every program.
    let root = resolve(root);
    for var in LOADER_VARIABLES {
        let Some(value) = env.get(*var) else {
            continue;
        };
        let doubtful = value.split([':', ' ']).any(|entry| {
            entry.is_empty() || !entry.starts_with('/') || {
                let real = resolve(Path::new(entry));
                real.starts_with(&root) || is_process_view(&real)
            }
        });
        if doubtful {
            return Some(format!(
                "the session's {var} names the current folder or the project, whose code every \
                 program would load"
            ));
        }
    }
    env.keys().find(|k| k.starts_with("BASH_FUNC_")).map(|k| {
        format!(
            "the session's environment defines the shell function {}",
            k.trim_start_matches("BASH_FUNC_").trim_end_matches('%')
        )
    })
}

/// Whether bash will count itself nested (its level at least 2, from `SHLVL` + 1), so it
/// runs no start-up file for sshd.
fn nested_shell_level(env: &Env) -> bool {
    env.get("SHLVL")
        .filter(|l| !l.is_empty() && l.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|l| l.parse::<u32>().ok())
        .is_some_and(|l| (1..999).contains(&l))
}

#[cfg(unix)]
fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(not(unix))]
fn is_executable(path: &Path) -> bool {
    path.is_file()
}

/// Whether a command's flags make it write a file or run another program, which a prefix
/// rule such as `Bash(npm run build:*)` never meant to allow. Used for programs the tables do
/// not know; for those they know, any such option is refused by name.
fn writes_by_flag(words: &[Option<&str>]) -> bool {
    words.iter().skip(1).any(|w| {
        let Some(a) = w else {
            return false;
        };
        *a == "-o"
            || a.starts_with("--output")
            || a.starts_with("--out=")
            || a.starts_with("--exec")
            || *a == "-exec"
            || *a == "-execdir"
            || a.starts_with("--upload-pack")
            || a.starts_with("--receive-pack")
            || *a == "--ext-diff"
    })
}
