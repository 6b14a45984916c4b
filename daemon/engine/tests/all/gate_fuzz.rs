//! The gate under generated input: no line, however malformed or deep, makes a decision
//! fail or overflow a small stack; and every line the gate allows in `default` mode, run for
//! real by bash in a sandbox, changes no file and prints no secret.
//!
//! Case counts come from `PROPTEST_CASES` when set (CI keeps the defaults: a bounded run).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use proptest::prelude::*;
use stepper_engine::config::{PermissionMode, Permissions};
use stepper_engine::gate::{Policy, Verdict};
use stepper_engine::tool::{CommandEnv, GateRequest};

const API_KEY: &str = "sk-fuzz-API-KEY-7d41";
const HOME_KEY: &str = "SECRET-FUZZ-HOME-KEY-52c9";

/// Words a model might write: programs, options that read, write or run, paths in and out
/// of the project, expansions.
const WORDS: &[&str] = &[
    "ls",
    "cat",
    "echo",
    "printf",
    "find",
    "sort",
    "uniq",
    "grep",
    "head",
    "tail",
    "wc",
    "cut",
    "rm",
    "touch",
    "tee",
    "git",
    "cd",
    "test",
    "[",
    "]",
    "true",
    "xargs",
    "env",
    "sh",
    "diff",
    "du",
    "stat",
    "file",
    "nl",
    "tr",
    "od",
    "comm",
    "paste",
    "realpath",
    "readlink",
    "ln",
    "mv",
    "cp",
    "mkdir",
    "set",
    "export",
    "read",
    "eval",
    "command",
    "-o",
    "-delete",
    "-exec",
    "-R",
    "-L",
    "-r",
    "-n",
    "-c",
    "-f",
    "-v",
    "-la",
    "-uo",
    "--output=out.txt",
    "--out=out.txt",
    "--outp=out.txt",
    "-name",
    "-type",
    "-print",
    "--",
    "-",
    "-s",
    "-e",
    "-i",
    "-p",
    "-x",
    "-fprint",
    "--files0-from=keep.txt",
    "-C",
    "-m",
    "-T",
    "-d",
    "-newer",
    "-follow",
    "-u",
    "--compress-program=./run.sh",
    ".",
    "{}",
    ";",
    "+",
    "keep.txt",
    "out.txt",
    "src",
    "src/main.rs",
    "sshlink",
    "keylink",
    "sshlink/id_rsa",
    "~/.ssh/id_rsa",
    "/etc/passwd",
    "../x",
    "./run.sh",
    "run.sh",
    "*.txt",
    "k*",
    "s*",
    "?eep.txt",
    "/dev/null",
    "$HOME",
    "$ANTHROPIC_API_KEY",
    "~",
    "x",
    "hello world",
    "%s",
    "a[$(touch RAN)]",
    "1",
    "-eq",
    "status",
    "log",
    "diff",
    "--no-pager",
    "--namespace",
    "clean",
    "-C",
    "show",
    "HEAD",
    "[[",
    "]]",
    "&&",
    "||",
    "=~",
    "==",
    "<",
    ">",
    "-gt",
    "-v",
];

const SEPARATORS: &[&str] = &[" ; ", " && ", " || ", " | ", " & ", "\n", " \\\n "];

const REDIRECTIONS: &[&str] = &[
    ">/dev/null",
    "2>&1",
    "> out.txt",
    "< keep.txt",
    "< ~/.ssh/id_rsa",
    ">> keep.txt",
    "2>/dev/null -delete",
    "<<< x",
    ">&2",
];

/// A word, written one of the ways bash reads as the same (or nearly the same) text.
fn written(word: &'static str) -> impl Strategy<Value = String> {
    let w = word.to_string();
    (0..9usize, 0..8usize).prop_map(move |(how, at)| {
        let at = w
            .char_indices()
            .nth(at % w.chars().count().max(1))
            .map_or(0, |(i, _)| i);
        match how {
            0 => format!("'{w}'"),
            1 => format!("\"{w}\""),
            2 => format!("{}''{}", &w[..at], &w[at..]),
            3 => format!("{}\\{}", &w[..at], &w[at..]),
            4 => format!("{}\\\n{}", &w[..at], &w[at..]),
            5 => format!("{{{w},}}"),
            6 => format!("$'{w}'"),
            _ => w.clone(),
        }
    })
}

/// Programs the gate may let through, and arguments they take, so that generated lines are
/// often allowed and the property has something to check.
const READ_ONLY_NAMES: &[&str] = &[
    "ls",
    "cat",
    "echo",
    "printf",
    "find",
    "sort",
    "uniq",
    "grep",
    "head",
    "tail",
    "wc",
    "cut",
    "diff",
    "du",
    "stat",
    "file",
    "nl",
    "tr",
    "od",
    "comm",
    "paste",
    "realpath",
    "readlink",
    "test",
    "true",
    "pwd",
    "basename",
    "dirname",
    "tac",
    "cmp",
    "md5sum",
    "sha256sum",
    "uname",
];
const PLAIN_ARGS: &[&str] = &[
    "-n",
    "-c",
    "-l",
    "-r",
    "-v",
    "-la",
    "-a",
    "-s",
    "-u",
    "-1",
    "-h",
    "-name",
    "-type",
    "f",
    "-print",
    ".",
    "keep.txt",
    "src",
    "src/main.rs",
    "*.txt",
    "k*",
    "src/*",
    "x",
    "'a b'",
    "\"$HOME\"",
    "-e",
    "-i",
    "--",
    "-",
    "1",
    "-maxdepth",
];

fn name() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::sample::select(READ_ONLY_NAMES).prop_map(String::from),
        1 => prop::sample::select(WORDS).prop_flat_map(written),
    ]
}

fn argument() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => prop::sample::select(PLAIN_ARGS).prop_map(String::from),
        1 => prop::sample::select(WORDS).prop_flat_map(written),
    ]
}

fn command() -> impl Strategy<Value = String> {
    (name(), prop::collection::vec(argument(), 0..5)).prop_map(|(name, args)| {
        std::iter::once(name)
            .chain(args)
            .collect::<Vec<_>>()
            .join(" ")
    })
}

fn line() -> impl Strategy<Value = String> {
    (
        prop::collection::vec(
            (
                command(),
                prop::sample::select(SEPARATORS),
                prop::option::weighted(0.2, prop::sample::select(REDIRECTIONS)),
            ),
            1..4,
        ),
        any::<bool>(),
    )
        .prop_map(|(parts, nest)| {
            let mut line = String::new();
            for (i, (cmd, sep, redirect)) in parts.iter().enumerate() {
                if i > 0 {
                    line.push_str(sep);
                }
                line.push_str(cmd);
                if let Some(r) = redirect {
                    line.push(' ');
                    line.push_str(r);
                }
            }
            if nest { format!("( {line} )") } else { line }
        })
}

struct Sandbox {
    _dir: tempfile::TempDir,
    project: PathBuf,
    home: PathBuf,
    root: PathBuf,
}

impl Sandbox {
    fn new() -> Sandbox {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let project = root.join("project");
        let home = root.join("home");
        std::fs::create_dir_all(project.join("src")).unwrap();
        std::fs::create_dir_all(home.join(".ssh")).unwrap();
        std::fs::write(home.join(".ssh/id_rsa"), format!("{HOME_KEY}\n")).unwrap();
        std::fs::write(project.join("keep.txt"), "keep\n").unwrap();
        std::fs::write(project.join("src/main.rs"), "fn main() {}\n").unwrap();
        std::fs::write(project.join("run.sh"), "#!/bin/sh\n: > RAN\n").unwrap();
        std::fs::set_permissions(
            project.join("run.sh"),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
        std::os::unix::fs::symlink(home.join(".ssh"), project.join("sshlink")).unwrap();
        std::os::unix::fs::symlink(home.join(".ssh/id_rsa"), project.join("keylink")).unwrap();
        Sandbox {
            _dir: dir,
            project,
            home,
            root,
        }
    }

    fn env(&self) -> BTreeMap<String, String> {
        [
            (
                "PATH".to_string(),
                std::env::var("PATH").unwrap_or_default(),
            ),
            ("HOME".to_string(), self.home.display().to_string()),
            ("ANTHROPIC_API_KEY".to_string(), API_KEY.to_string()),
        ]
        .into()
    }

    /// Every file and link under the sandbox, with its content.
    fn snapshot(&self) -> BTreeMap<PathBuf, Vec<u8>> {
        let mut out = BTreeMap::new();
        let mut stack = vec![self.root.clone()];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).unwrap().flatten() {
                let path = entry.path();
                let meta = std::fs::symlink_metadata(&path).unwrap();
                let value = if meta.is_symlink() {
                    std::fs::read_link(&path)
                        .unwrap()
                        .as_os_str()
                        .as_encoded_bytes()
                        .to_vec()
                } else if meta.is_dir() {
                    stack.push(path.clone());
                    b"<dir>".to_vec()
                } else {
                    std::fs::read(&path).unwrap_or_default()
                };
                out.insert(path, value);
            }
        }
        out
    }

    /// Run `line` as the bash tool would; its output.
    fn run(&self, line: &str) -> String {
        let child = Command::new("bash")
            .arg("-c")
            .arg(line)
            .current_dir(&self.project)
            .env_clear()
            .envs(self.env())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .unwrap();
        let pid = nix_pid(child.id());
        let (tx, rx) = std::sync::mpsc::channel();
        let waiter = std::thread::spawn(move || {
            let out = child.wait_with_output().unwrap();
            let _ = tx.send(());
            String::from_utf8_lossy(&out.stdout).into_owned()
                + &String::from_utf8_lossy(&out.stderr)
        });
        if rx.recv_timeout(Duration::from_secs(10)).is_err() {
            kill_group(pid);
        }
        kill_group(pid);
        waiter.join().unwrap()
    }
}

fn nix_pid(pid: u32) -> i32 {
    i32::try_from(pid).unwrap()
}

/// Kill what the line left running (the engine has no signal crate: kill(1) does it).
fn kill_group(pid: i32) {
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{pid}")])
        .stderr(Stdio::null())
        .status();
}

fn policy(root: &Path) -> Policy {
    let p = Permissions {
        mode: Some(PermissionMode::Default),
        ..Permissions::default()
    };
    Policy::from_settings(Some(&p), root, None).0
}

fn request(sandbox: &Sandbox, line: &str) -> GateRequest {
    GateRequest::Bash {
        command: line.to_string(),
        cwd: sandbox.project.clone(),
        env: CommandEnv(Arc::new(sandbox.env())),
    }
}

fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(default)
}

/// Decide `line` on a thread with a small stack: nothing in a decision may recurse with the
/// input's depth.
fn decide_small_stack(policy: &Policy, request: GateRequest) -> Verdict {
    let policy = policy.clone();
    std::thread::Builder::new()
        .stack_size(512 * 1024)
        .spawn(move || policy.decide(&request))
        .unwrap()
        .join()
        .unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(4000), failure_persistence: None, .. ProptestConfig::default() })]

    /// Any text at all, and shell-like text: a decision, never a panic or an overflow.
    #[test]
    fn any_input_gets_a_decision(text in "(?s).{0,400}", shellish in line(), depth in 0usize..400) {
        let sandbox = Sandbox::new();
        let p = policy(&sandbox.project);
        for line in [text.clone(), shellish.clone(), format!("{}{shellish}{}", "$(".repeat(depth), ")".repeat(depth))] {
            let _ = decide_small_stack(&p, request(&sandbox, &line));
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(1500), failure_persistence: None, .. ProptestConfig::default() })]

    /// What the gate allows without asking, bash runs without changing anything or printing
    /// a secret.
    #[test]
    fn what_is_allowed_changes_nothing(line in line()) {
        let sandbox = Sandbox::new();
        let p = policy(&sandbox.project);
        if p.decide(&request(&sandbox, &line)) == Verdict::Allow {
            let before = sandbox.snapshot();
            let output = sandbox.run(&line);
            let after = sandbox.snapshot();
            prop_assert_eq!(&before, &after, "{:?} was allowed and changed files", line);
            for secret in [API_KEY, HOME_KEY, "root:x:0:0"] {
                prop_assert!(!output.contains(secret), "{:?} was allowed and printed {}", line, secret);
            }
        }
    }
}
