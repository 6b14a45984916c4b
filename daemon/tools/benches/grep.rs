//! Our grep next to ripgrep's own binary on the same generated tree, in the same run: about
//! 20k source-like files (~200 MB) plus a git-ignored subtree both must skip. Prints best-of-N
//! wall times and the ratio ours/rg.
//!
//! Run with `cargo bench -p stepper-tools --bench grep`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use stepper_tools::search::{GrepOptions, OutputMode, grep_files};
use tokio_util::sync::CancellationToken;

const DIRS: usize = 20;
const SUBDIRS: usize = 10;
const FILES_PER_SUBDIR: usize = 100;
const IGNORED_FILES: usize = 2_000;
const MEAN_FILE_BYTES: usize = 10_000;
const RUNS: usize = 5;

fn main() {
    let tree = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let (files, bytes) = build_tree(tree.path());
    println!(
        "tree: {files} files, {:.1} MB (plus {IGNORED_FILES} git-ignored files), built in {:.1} s",
        bytes as f64 / 1e6,
        started.elapsed().as_secs_f64()
    );

    let rg = Command::new("rg")
        .arg("--version")
        .output()
        .ok()
        .filter(|o| o.status.success());
    match &rg {
        Some(out) => {
            let version = String::from_utf8_lossy(&out.stdout);
            println!("rg: {}", version.lines().next().unwrap_or("?"));
        }
        None => println!("rg: missing (install it with `apt-get install ripgrep`); ours only"),
    }
    println!("best of {RUNS} runs, first run discarded to warm the page cache\n");

    println!(
        "{:<34} {:>10} {:>10} {:>8} {:>10} {:>10}",
        "case", "ours ms", "rg ms", "ours/rg", "ours hits", "rg hits"
    );
    let cases = [
        ("literal", "ERR_CONNECTION_RESET"),
        ("regex", r"\b(get|set)_[a-z]+_(id|name)\b"),
    ];
    for (kind, pattern) in cases {
        for mode in [OutputMode::FilesWithMatches, OutputMode::Content] {
            let (mode_name, rg_flag) = match mode {
                OutputMode::FilesWithMatches => ("files", "-l"),
                _ => ("content", "-n"),
            };
            let options = GrepOptions {
                mode,
                ..GrepOptions::new(pattern)
            };
            let (ours, ours_hits) = best_of(|| ours_hits(tree.path(), &options));
            let label = format!("{mode_name} {kind}");
            match rg {
                Some(_) => {
                    let (theirs, rg_hits) = best_of(|| rg_hits(tree.path(), rg_flag, pattern));
                    println!(
                        "{label:<34} {:>10.1} {:>10.1} {:>7.2}x {ours_hits:>10} {rg_hits:>10}",
                        ms(ours),
                        ms(theirs),
                        ours.as_secs_f64() / theirs.as_secs_f64(),
                    );
                }
                None => println!(
                    "{label:<34} {:>10.1} {:>10} {:>8} {ours_hits:>10}",
                    ms(ours),
                    "-",
                    "-"
                ),
            }
        }
    }
}

/// Files (files mode) or matching lines (content mode) our search found.
fn ours_hits(root: &Path, options: &GrepOptions) -> usize {
    let report = grep_files(root, options, &CancellationToken::new()).unwrap();
    match options.mode {
        OutputMode::Content => report.files.iter().map(|f| f.lines.len()).sum(),
        _ => report.files.len(),
    }
}

/// Lines rg printed: files with `-l`, matching lines with `-n`. Its output is read through a
/// pipe, as ours is collected in memory (rg may stop early when it sees /dev/null).
fn rg_hits(root: &Path, flag: &str, pattern: &str) -> usize {
    let out = Command::new("rg")
        .arg(flag)
        .arg("--")
        .arg(pattern)
        .arg(root)
        .output()
        .unwrap();
    assert!(
        out.status.code() == Some(0),
        "rg failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout.iter().filter(|&&b| b == b'\n').count()
}

fn best_of(mut run: impl FnMut() -> usize) -> (Duration, usize) {
    let hits = run();
    let mut best = Duration::MAX;
    for _ in 0..RUNS {
        let started = Instant::now();
        let again = run();
        best = best.min(started.elapsed());
        assert_eq!(again, hits, "the same search found something else");
    }
    (best, hits)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Writes the tree; returns the files and bytes that are searched (not the ignored ones).
fn build_tree(root: &Path) -> (usize, usize) {
    std::fs::create_dir(root.join(".git")).unwrap();
    std::fs::write(root.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::write(root.join(".gitignore"), "/target/\n").unwrap();
    let mut text = Text::new(0x9E37_79B9_7F4A_7C15);
    let (mut files, mut bytes) = (0, 0);
    for d in 0..DIRS {
        for s in 0..SUBDIRS {
            let dir = root.join(format!("crate{d}/src/module{s}"));
            std::fs::create_dir_all(&dir).unwrap();
            for f in 0..FILES_PER_SUBDIR {
                let content = text.file();
                bytes += content.len();
                files += 1;
                std::fs::write(dir.join(format!("file{f}.rs")), content).unwrap();
            }
        }
    }
    let ignored = root.join("target/debug/build");
    std::fs::create_dir_all(&ignored).unwrap();
    for f in 0..IGNORED_FILES {
        std::fs::write(ignored.join(format!("gen{f}.rs")), text.file()).unwrap();
    }
    (files, bytes)
}

/// Source-like text from a small xorshift generator: reproducible without a dependency.
struct Text {
    state: u64,
}

const WORDS: [&str; 24] = [
    "user", "session", "buffer", "config", "request", "value", "index", "count", "name", "token",
    "stream", "handle", "path", "entry", "cache", "state", "result", "error", "node", "parser",
    "client", "server", "queue", "frame",
];
const TYPES: [&str; 8] = [
    "Session", "Buffer", "Config", "Request", "Token", "Node", "Frame", "Io",
];
const PREFIXES: [&str; 4] = ["get", "set", "load", "store"];
const SUFFIXES: [&str; 4] = ["id", "name", "len", "key"];

impl Text {
    fn new(seed: u64) -> Text {
        Text { state: seed }
    }

    fn next(&mut self) -> usize {
        self.state ^= self.state << 13;
        self.state ^= self.state >> 7;
        self.state ^= self.state << 17;
        self.state as usize
    }

    fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
        from[self.next() % from.len()]
    }

    fn file(&mut self) -> String {
        let target = MEAN_FILE_BYTES / 2 + self.next() % MEAN_FILE_BYTES;
        let mut out = String::with_capacity(target + 128);
        while out.len() < target {
            self.line(&mut out);
        }
        out
    }

    fn line(&mut self, out: &mut String) {
        let (a, b, c) = (self.pick(&WORDS), self.pick(&WORDS), self.pick(&WORDS));
        let t = self.pick(&TYPES);
        let n = self.next() % 1000;
        let line = match self.next() % 100 {
            0..=14 => format!("fn {a}_{b}({c}: &{t}) -> Result<{t}, {t}Error> {{"),
            15..=39 => format!("    let {a} = {b}.{c}({n});"),
            40..=54 => format!("    // The {a} of the {b} decides which {c} is kept ({n})."),
            55..=64 => format!("    if {a}.{b} > {n} {{ return Err({t}Error::{t}); }}"),
            65..=74 => {
                let (p, s) = (self.pick(&PREFIXES), self.pick(&SUFFIXES));
                format!("    let {a} = self.{p}_{b}_{s}();")
            }
            75..=84 => "}".to_string(),
            85..=89 => format!("use crate::{a}::{{{t}, {t}Error}};"),
            90..=98 => String::new(),
            _ if self.next().is_multiple_of(40) => {
                format!("    log::warn!(\"{a} dropped: ERR_CONNECTION_RESET after {n} ms\");")
            }
            _ => format!("    {a}.{b}.push({c});"),
        };
        out.push_str(&line);
        out.push('\n');
    }
}
