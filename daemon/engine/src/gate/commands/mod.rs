//! Which commands only read, and what they read: an allow-list of programs, and for each an
//! allow-list of its options and what its operands are (files it reads, or text). A command
//! is judged by the words bash hands it, options parsed the way the program parses them
//! ([`options`]). Anything a table does not know — an option, an operand in a place that
//! writes, a program — is not read-only, and the line asks.
//!
//! The judgement is pure: what it reads is handed back as words, and the gate checks those
//! paths, the program's place on `PATH` and git's configuration against the session.
//!
//! *Allow-lists of options, not deny-lists of flags*: each read-only program lists the options it
//! may take (and, to resolve abbreviations as the program does, the ones it may not); an option the
//! table does not know is refused. A tables test checks every long option the installed GNU
//! programs print in `--help`. git's tables need exact names (git's own abbreviations are unknown
//! to them, so they ask).
//!
//! Why a command is not read-only is a `String` here and in the tables (`git`, `files`,
//! `search`, `text`, `system`, `options`), not an error type: it is only ever the reason the
//! user reads when the gate asks (`Judgement::Refused`), nothing branches on it, and each
//! table words its own.

pub mod options;

mod builtins;
mod files;
mod git;
mod search;
mod system;
mod text;

use crate::gate::shell::{Value, Word};
pub use options::{Parsed, Spec};

/// What a simple command does, as far as its words tell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Judgement {
    /// Only reads: what.
    Reads(Reads),
    /// A program the tables do not list: it may do anything. An allow rule may cover it.
    Unlisted,
    /// A listed program doing something that is not reading as a whole (`git push`, `git
    /// branch new`): why. An allow rule may cover it, as for an unlisted program.
    Changes(String),
    /// A listed program used in a way that writes, runs another program or cannot be judged:
    /// why. Only an exact allow rule covers it (a prefix rule such as `Bash(git diff:*)`
    /// never meant `git diff --output=~/.bashrc`).
    Refused(String),
    /// Changes the shell itself (variables, options, functions, what runs next): always
    /// asked, whatever the rules.
    Shell(String),
}

/// What a read-only command reads.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reads {
    /// Files and folders, relative to the folder the command runs in.
    pub paths: Vec<Word>,
    /// It reads the folder it runs in (`ls`, `grep -r x`, `find` without a path).
    pub cwd: bool,
    /// A folder operand is read entry by entry, following links (`diff dir1 dir2`): every
    /// path must be a file.
    pub files_only: bool,
    /// A shell builtin: no program is looked up on `PATH`.
    pub builtin: bool,
    /// git: the folder its `-C` options lead to (the command's folder when empty), whose
    /// repository must not configure programs to run; `paths` are read from there.
    pub git: Option<Vec<Word>>,
    /// Files of `paths` the program may also read from the top of the work tree (git's
    /// `blame --contents`, `-S`, `--ignore-revs-file`, pathspecs from the top: `:/x`).
    pub top_files: Vec<Word>,
    /// git reads its operands as pathspecs: a name a pattern matches that starts with `:`
    /// would be pathspec magic.
    pub pathspecs: bool,
    /// `cd`: the folder later commands run in.
    pub cd: Option<Word>,
    /// Environment variables that change what the program does beyond its words; when the
    /// session sets one, the command is not judged read-only.
    pub env: &'static [&'static str],
    /// ripgrep: it reads the ignore files of every folder it walks and of their parents.
    pub ignore_files: Option<IgnoreWalk>,
    /// The folders it lists — its folder operands, where it runs when it names none, the
    /// folders its patterns match — show what their links lead to (`ls -L`, `ls -F`, `find
    /// -xtype`, tree): the metadata of each link's target is read, among the folders' own
    /// entries or among every entry below them.
    pub link_targets: Option<Walk>,
    /// It reads every file below the folders it names, or the one it runs in (`grep -r`).
    pub searches: bool,
    /// git: it reads tracked files from the work tree (`git diff`, `git grep`).
    pub work_tree: Option<WorkTree>,
}

/// Which files of its work tree git reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkTree {
    /// All that are tracked, not just those below git's folder.
    pub whole: bool,
    /// Untracked files too (`git grep --untracked`).
    pub untracked: bool,
}

/// How much of a folder a program goes through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Walk {
    /// Its own entries.
    Entries,
    /// Every entry below it, never entering a link.
    Tree,
}

/// Which folders ripgrep walks, for the ignore files it reads there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IgnoreWalk {
    /// Those its ignore rules leave in.
    Unignored,
    /// Every one: an option widens the walk (`--no-ignore-vcs`, `-u`, `-g`).
    Every,
}

/// What the operands of a command are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Operands {
    /// Files it reads; none means standard input.
    Files,
    /// Files or folders it reads; none means the folder it runs in.
    FilesOrCwd,
    /// Text (names, numbers, strings): nothing is read.
    Text,
    /// None at all.
    None,
}

/// Judge a command with a table: options from `spec`, operands as `operands` says.
fn with_spec<'w>(
    spec: &Spec<'_>,
    args: &'w [Word],
    operands: Operands,
) -> Result<(Parsed<'w>, Reads), String> {
    let parsed = options::parse(spec, args)?;
    let mut reads = Reads {
        paths: parsed.files.clone(),
        ..Reads::default()
    };
    match operands {
        Operands::Files | Operands::FilesOrCwd => {
            for w in &parsed.operands {
                reads.paths.push(path(w)?);
            }
            reads.cwd = operands == Operands::FilesOrCwd && parsed.operands.is_empty();
        }
        Operands::Text => {}
        Operands::None => {
            if let Some(w) = parsed.operands.first() {
                return Err(format!(
                    "takes no operand, and {} would change something",
                    w.raw
                ));
            }
        }
    }
    Ok((parsed, reads))
}

/// A word that names a file: a literal or a pattern (expanded and checked by the gate).
fn path(word: &Word) -> Result<Word, String> {
    match &word.value {
        Value::Literal(_) | Value::Pattern(_) => Ok(word.clone()),
        Value::Inert(why) | Value::Splits(why) => Err(format!(
            "reads {}, a path known only at run time ({why})",
            word.raw
        )),
        Value::Unsafe(why) => Err(why.clone()),
    }
}

fn refused_or(result: Result<Reads, String>) -> Judgement {
    match result {
        Ok(reads) => Judgement::Reads(reads),
        Err(why) => Judgement::Refused(why),
    }
}

/// Judge one simple command (`words[0]` is its name).
pub fn judge(words: &[Word]) -> Judgement {
    let Some(first) = words.first() else {
        return Judgement::Shell("an empty command".into());
    };
    let Some(name) = first.text() else {
        return Judgement::Shell(format!(
            "a command name known only at run time: {}",
            first.raw
        ));
    };
    let args = &words[1..];
    if let Some(j) = builtins::judge(name, args) {
        return j;
    }
    let result = match name {
        "git" => return git::judge(args),
        "ls" | "tree" | "find" | "du" | "df" | "stat" | "file" | "realpath" | "readlink"
        | "basename" | "dirname" => files::judge(name, args),
        "cat" | "head" | "tail" | "wc" | "sort" | "uniq" | "cut" | "tr" | "nl" | "tac" | "rev"
        | "paste" | "comm" | "column" | "od" | "hexdump" | "diff" | "cmp" | "md5sum"
        | "sha1sum" | "sha224sum" | "sha256sum" | "sha384sum" | "sha512sum" | "b2sum" | "cksum"
        | "sum" => text::judge(name, args),
        "grep" | "egrep" | "fgrep" | "rg" => search::judge(name, args),
        "uname" | "id" | "whoami" | "hostname" | "nproc" | "free" | "uptime" | "date" | "seq"
        | "sleep" | "which" | "arch" => system::judge(name, args),
        _ => return Judgement::Unlisted,
    };
    refused_or(result)
}

/// Whether `name` is a program whose options the tables know (listed, read-only when used
/// as the tables allow).
pub fn is_listed(name: &str) -> bool {
    !matches!(judge(&[Word::literal(name)]), Judgement::Unlisted)
}

#[cfg(test)]
mod tests;
