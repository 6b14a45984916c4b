//! git, judged by its real subcommand: the global options before it are parsed as git parses
//! them (`git --namespace status clean -f` runs `clean`), and every option that takes
//! configuration, another repository or work tree, or a pager from the command line is
//! refused. Only read-only subcommands are listed, each with the options it may take; the
//! listing forms of `branch`, `tag`, `remote`, `stash`, `reflog` and `worktree` only. Long
//! options must be written out: git accepts abbreviations, but these tables are not
//! complete enough to resolve them as git does, so an abbreviation asks.
//!
//! What the repository's own configuration can make git run is checked by the gate against
//! the session (see `gate::repo`): the judgement asks for that check.
//!
//! Operands are pathspecs, read as git reads them: magic from the top of the work tree
//! (`:/x`, `:(top)x`), which may lie above the project, is read from there; an exclusion
//! (`:!x`) reads nothing; magic the gate does not know asks.
//!
//! *Pathspecs as git reads them*: every git operand was checked as a path from git's folder, but
//! `:/x` and `:(top)x` name `x` from the top of the work tree, which lies above the project when
//! the project is a folder of a larger repository (`git grep --untracked KEY -- :/` read a home
//! folder's files). `commands/git.rs` parses magic as `pathspec.c` does (long and short forms,
//! git's own list of magic characters): from the top, the path joins the files checked from each
//! top git may take (`gate::repo::top_levels`); an exclusion reads nothing; a pattern matching a
//! name that starts with `:` asks. Commands that only read history (`git log -- :/`) are judged the
//! same way: the question costs little there, and the gate does not tell revisions from paths.

use super::options::{Spec, Style, parse};
use super::{Judgement, Reads, WorkTree, path};
use crate::gate::shell::{Value, Word};

/// Global options that need no value and change nothing.
const GLOBAL_FLAGS: &[&str] = &[
    "-P",
    "--no-pager",
    "--no-replace-objects",
    "--literal-pathspecs",
    "--glob-pathspecs",
    "--noglob-pathspecs",
    "--icase-pathspecs",
    "--no-optional-locks",
    "--no-lazy-fetch",
    "--no-advice",
];

/// Global options that print and exit.
const GLOBAL_PRINT: &[&str] = &[
    "--version",
    "-v",
    "--html-path",
    "--man-path",
    "--info-path",
    "--exec-path",
];

/// Global options that bring in configuration, a repository, a work tree, a pager or
/// programs: (option, why).
const GLOBAL_REFUSED: &[(&str, &str)] = &[
    ("-c", "sets configuration, which can name programs to run"),
    (
        "--config-env",
        "sets configuration, which can name programs to run",
    ),
    (
        "--git-dir",
        "uses another repository, whose configuration can run programs",
    ),
    ("--work-tree", "uses another work tree"),
    ("--bare", "treats the folder as a repository"),
    ("--namespace", "changes which refs are seen"),
    ("--exec-path", "runs git's commands from another folder"),
    ("-p", "starts a pager"),
    ("--paginate", "starts a pager"),
    ("--super-prefix", "is internal to git"),
    ("--list-cmds", "lists commands"),
    ("--attr-source", "reads attributes from a tree"),
];

/// Options shared by every command that shows diffs (diff, log, show, diff-tree, stash show).
const DIFF_LONG: &[&str] = &[
    "patch",
    "no-patch",
    "raw",
    "patch-with-raw",
    "patch-with-stat",
    "numstat",
    "shortstat",
    "summary",
    "name-only",
    "name-status",
    "stat=?",
    "stat-width=",
    "stat-name-width=",
    "stat-graph-width=",
    "stat-count=",
    "compact-summary",
    "dirstat=?",
    "cumulative",
    "dirstat-by-file=?",
    "full-index",
    "binary",
    "abbrev=?",
    "no-abbrev",
    "break-rewrites=?",
    "find-renames=?",
    "find-copies=?",
    "find-copies-harder",
    "irreversible-delete",
    "diff-filter=",
    "find-object=",
    "pickaxe-all",
    "pickaxe-regex",
    "skip-to=",
    "rotate-to=",
    "relative=?",
    "no-relative",
    "text",
    "ignore-cr-at-eol",
    "ignore-space-at-eol",
    "ignore-space-change",
    "ignore-all-space",
    "ignore-blank-lines",
    "ignore-matching-lines=",
    "inter-hunk-context=",
    "function-context",
    "exit-code",
    "quiet",
    "no-ext-diff",
    "textconv",
    "no-textconv",
    "ignore-submodules=?",
    "src-prefix=",
    "dst-prefix=",
    "no-prefix",
    "default-prefix",
    "line-prefix=",
    "ita-invisible-in-index",
    "ita-visible-in-index",
    "unified=?",
    "output-indicator-new=",
    "output-indicator-old=",
    "output-indicator-context=",
    "color=?",
    "no-color",
    "color-moved=?",
    "no-color-moved",
    "color-moved-ws=",
    "no-color-moved-ws",
    "word-diff=?",
    "word-diff-regex=",
    "color-words=?",
    "no-renames",
    "rename-empty",
    "no-rename-empty",
    "check",
    "ws-error-highlight=",
    "minimal",
    "patience",
    "histogram",
    "anchored=",
    "diff-algorithm=",
    "indent-heuristic",
    "no-indent-heuristic",
    "no-diff-merges",
    "combined-all-paths",
    "cc",
    "dd",
    "merge-base",
    "cached",
    "staged",
    "base",
    "ours",
    "theirs",
];

const DIFF_SHORT: &str = "pusz0123mcRabwWtrvqDB::M::C::U::X::l:S:G:O@I:";

const DIFF_REFUSED: &[(&str, &str)] = &[
    ("output", "writes the diff to a file"),
    ("ext-diff", "runs an external diff program"),
    ("no-index", "compares files outside the repository"),
    ("open-files-in-pager", "runs a pager"),
    ("show-signature", "runs gpg"),
];

/// Options of the commands that walk history (log, show, shortlog, rev-list, whatchanged).
const REV_LONG: &[&str] = &[
    "max-count=",
    "skip=",
    "since=",
    "after=",
    "since-as-filter=",
    "until=",
    "before=",
    "author=",
    "committer=",
    "grep-reflog=",
    "grep=",
    "all-match",
    "invert-grep",
    "regexp-ignore-case",
    "basic-regexp",
    "extended-regexp",
    "fixed-strings",
    "perl-regexp",
    "remove-empty",
    "merges",
    "no-merges",
    "min-parents=!",
    "max-parents=!",
    "no-min-parents",
    "no-max-parents",
    "first-parent",
    "exclude-first-parent-only",
    "not",
    "all",
    "branches=?",
    "tags=?",
    "remotes=?",
    "glob=",
    "exclude=",
    "exclude-hidden=",
    "reflog",
    "single-worktree",
    "ignore-missing",
    "bisect",
    "stdin",
    "cherry-mark",
    "cherry-pick",
    "left-only",
    "right-only",
    "cherry",
    "walk-reflogs",
    "merge",
    "boundary",
    "simplify-by-decoration",
    "show-pulls",
    "full-history",
    "dense",
    "sparse",
    "simplify-merges",
    "ancestry-path=?",
    "date-order",
    "author-date-order",
    "topo-order",
    "reverse",
    "no-walk=?",
    "do-walk",
    "format=!",
    "pretty=?",
    "abbrev-commit",
    "no-abbrev-commit",
    "oneline",
    "encoding=",
    "expand-tabs=?",
    "no-expand-tabs",
    "notes=?",
    "no-notes",
    "show-notes=?",
    "standard-notes",
    "no-standard-notes",
    "relative-date",
    "date=",
    "parents",
    "children",
    "left-right",
    "graph",
    "show-linear-break=?",
    "count",
    "follow",
    "no-follow",
    "full-diff",
    "objects",
    "objects-edge",
    "no-object-names",
    "object-names",
    "timestamp",
    "header",
    "unpacked",
    "in-commit-order",
    "no-kept-objects",
    "missing=!",
    "exclude-promisor-objects",
    "filter=!",
    "no-filter",
    "filter-print-omitted",
    "disk-usage=?",
    "max-age=",
    "min-age=",
    "show-linear-break",
    "no-graph",
    "default=",
];

/// Options only `log` and its kin (show, whatchanged, reflog, stash list) take, in their
/// pre-pass; rev-list, diff-tree and shortlog do not know them (and would take the next word
/// for something else).
const LOG_ONLY: &[&str] = &[
    "decorate=?",
    "no-decorate",
    "decorate-refs=",
    "decorate-refs-exclude=",
    "clear-decorations",
    "source",
    "mailmap",
    "no-mailmap",
    "use-mailmap",
    "no-use-mailmap",
    "log-size",
];

fn tables(tables: &[&[&'static str]]) -> Vec<&'static str> {
    tables.iter().flat_map(|t| t.iter().copied()).collect()
}

/// A subcommand's table.
struct Sub {
    short: &'static str,
    long: Vec<&'static str>,
    refused: &'static [(&'static str, &'static str)],
    numeric: bool,
}

fn sub(name: &str) -> Option<Sub> {
    // The diff letters, then the history walk's (n, i, g, E, F, P).
    const WALK_SHORT: &str = "pusz0123mcRabwWtrvqDB::M::C::U::X::l:S:G:O@I:n:igEFP";
    Some(match name {
        "diff" => Sub {
            short: DIFF_SHORT,
            long: DIFF_LONG.to_vec(),
            refused: DIFF_REFUSED,
            numeric: false,
        },
        // log's pre-pass adds -L and its own long options.
        "log" | "show" | "whatchanged" => Sub {
            short: "pusz0123mcRabwWtrvqDB::M::C::U::X::l:S:G:O@I:n:igEFPL:",
            long: tables(&[DIFF_LONG, REV_LONG, LOG_ONLY]),
            refused: DIFF_REFUSED,
            numeric: true,
        },
        "rev-list" => Sub {
            short: WALK_SHORT,
            long: tables(&[DIFF_LONG, REV_LONG]),
            refused: DIFF_REFUSED,
            numeric: true,
        },
        "diff-tree" => Sub {
            short: WALK_SHORT,
            long: tables(&[DIFF_LONG, REV_LONG, &["root", "no-commit-id", "always"]]),
            refused: DIFF_REFUSED,
            numeric: true,
        },
        // shortlog's own options come first: its --committer takes no value.
        "shortlog" => Sub {
            short: "nsecw::",
            long: tables(&[
                &["numbered", "summary", "email", "group=", "committer"],
                &REV_LONG
                    .iter()
                    .copied()
                    .filter(|o| *o != "committer=")
                    .collect::<Vec<_>>(),
            ]),
            refused: DIFF_REFUSED,
            numeric: true,
        },
        "status" => Sub {
            short: "sbvu::z",
            long: vec![
                "short",
                "branch",
                "show-stash",
                "porcelain=?",
                "long",
                "verbose",
                "untracked-files=?",
                "ignore-submodules=?",
                "ignored=?",
                "column=?",
                "no-column",
                "ahead-behind",
                "no-ahead-behind",
                "renames",
                "no-renames",
                "find-renames=?",
                "null",
            ],
            refused: &[],
            numeric: false,
        },
        "blame" => Sub {
            short: "blpcfnsetwhL:S@M::C::",
            long: vec![
                "root",
                "show-stats",
                "reverse",
                "first-parent",
                "porcelain",
                "line-porcelain",
                "incremental",
                "encoding=",
                "contents=@",
                "date=",
                "progress",
                "no-progress",
                "ignore-rev=",
                "ignore-revs-file=@",
                "color-lines",
                "color-by-age",
                "show-name",
                "show-number",
                "show-email",
                "abbrev=?",
                "score-debug",
                "minimal",
            ],
            refused: &[],
            numeric: false,
        },
        "rev-parse" => Sub {
            short: "q",
            long: vec![
                "git-dir",
                "git-common-dir",
                "absolute-git-dir",
                "show-toplevel",
                "show-cdup",
                "show-prefix",
                "show-object-format=?",
                "show-ref-format",
                "is-inside-work-tree",
                "is-inside-git-dir",
                "is-bare-repository",
                "is-shallow-repository",
                "shared-index-path",
                "local-env-vars",
                "abbrev-ref=?",
                "short=?",
                "verify",
                "quiet",
                "sq",
                "sq-quote",
                "symbolic",
                "symbolic-full-name",
                "all",
                "branches=?",
                "tags=?",
                "remotes=?",
                "glob=",
                "exclude=",
                "exclude-hidden=",
                "not",
                "revs-only",
                "no-revs",
                "flags",
                "no-flags",
                "default=",
                "prefix=",
                "keep-dashdash",
                "stop-at-non-option",
                "since=",
                "after=",
                "until=",
                "before=",
                "disambiguate=",
                "path-format=",
                "git-path=",
                "resolve-git-dir=@",
            ],
            refused: &[(
                "show-superproject-working-tree",
                "runs git in the repository above, whose configuration the gate has not checked",
            )],
            numeric: false,
        },
        "ls-files" => Sub {
            short: "cdmoisukztvfx:X@",
            long: vec![
                "cached",
                "deleted",
                "modified",
                "others",
                "ignored",
                "stage",
                "unmerged",
                "killed",
                "directory",
                "no-empty-directory",
                "eol",
                "deduplicate",
                "exclude=",
                "exclude-from=@",
                "exclude-per-directory=",
                "exclude-standard",
                "error-unmatch",
                "with-tree=",
                "full-name",
                "recurse-submodules",
                "abbrev=?",
                "debug",
                "sparse",
                "format=",
                "resolve-undo",
            ],
            refused: &[],
            numeric: false,
        },
        "ls-tree" => Sub {
            short: "drtlz",
            long: vec![
                "long",
                "name-only",
                "name-status",
                "object-only",
                "full-name",
                "full-tree",
                "abbrev=?",
                "format=",
            ],
            refused: &[],
            numeric: false,
        },
        "describe" => Sub {
            short: "",
            long: vec![
                "dirty=?",
                "broken=?",
                "all",
                "tags",
                "contains",
                "abbrev=",
                "candidates=",
                "exact-match",
                "debug",
                "long",
                "match=",
                "exclude=",
                "always",
                "first-parent",
            ],
            refused: &[],
            numeric: false,
        },
        "merge-base" => Sub {
            short: "a",
            long: vec!["octopus", "independent", "is-ancestor", "fork-point", "all"],
            refused: &[],
            numeric: false,
        },
        "show-ref" => Sub {
            short: "dsq",
            long: vec![
                "head",
                "branches",
                "tags",
                "heads",
                "dereference",
                "hash=?",
                "verify",
                "abbrev=?",
                "quiet",
                "exclude-existing=?",
                "exists",
            ],
            refused: &[],
            numeric: false,
        },
        "for-each-ref" => Sub {
            short: "s",
            long: vec![
                "count=",
                "shell",
                "perl",
                "python",
                "tcl",
                "sort=",
                "format=",
                "color=?",
                "points-at=",
                "merged=",
                "no-merged=",
                "contains=",
                "no-contains=",
                "ignore-case",
                "omit-empty",
                "exclude=",
                "stdin",
                "include-root-refs",
            ],
            refused: &[],
            numeric: false,
        },
        "name-rev" => Sub {
            short: "",
            long: vec![
                "tags",
                "refs=",
                "exclude=",
                "all",
                "annotate-stdin",
                "name-only",
                "no-undefined",
                "always",
            ],
            refused: &[],
            numeric: false,
        },
        "count-objects" => Sub {
            short: "vH",
            long: vec!["verbose", "human-readable"],
            refused: &[],
            numeric: false,
        },
        "check-ignore" => Sub {
            short: "qvzn",
            long: vec!["quiet", "verbose", "stdin", "non-matching", "no-index"],
            refused: &[],
            numeric: false,
        },
        "cat-file" => Sub {
            short: "tsepZz",
            long: vec![
                "batch=?",
                "batch-check=?",
                "batch-command=?",
                "batch-all-objects",
                "buffer",
                "follow-symlinks",
                "unordered",
                "allow-unknown-type",
                "use-mailmap",
                "mailmap",
                "no-mailmap",
                "no-use-mailmap",
                "path=",
            ],
            refused: &[
                ("textconv", "runs the textconv filters of the configuration"),
                (
                    "filters",
                    "runs the clean and smudge filters of the configuration",
                ),
            ],
            numeric: false,
        },
        "grep" => Sub {
            short: "aiIrwvhHEGFPnlLzocpWqA:B:C:f@e:m:",
            long: vec![
                "cached",
                "untracked",
                "no-exclude-standard",
                "exclude-standard",
                "recurse-submodules",
                "text",
                "textconv",
                "no-textconv",
                "ignore-case",
                "max-depth=",
                "recursive",
                "no-recursive",
                "word-regexp",
                "invert-match",
                "full-name",
                "extended-regexp",
                "basic-regexp",
                "fixed-strings",
                "perl-regexp",
                "line-number",
                "column",
                "files-with-matches",
                "name-only",
                "files-without-match",
                "null",
                "only-matching",
                "count",
                "color=?",
                "no-color",
                "break",
                "heading",
                "show-function",
                "context=",
                "after-context=",
                "before-context=",
                "function-context",
                "threads=",
                "file=@",
                "and",
                "or",
                "not",
                "quiet",
                "all-match",
                "max-count=",
            ],
            refused: &[
                ("O", "opens the matching files in a pager"),
                ("open-files-in-pager", "opens the matching files in a pager"),
                ("no-index", "searches files outside the repository"),
            ],
            numeric: true,
        },
        _ => return None,
    })
}

/// The listing forms of the commands that also change things.
const BRANCH_LIST: &[&str] = &[
    "all",
    "remotes",
    "verbose",
    "list",
    "contains=",
    "no-contains=",
    "with=",
    "without=",
    "merged=",
    "no-merged=",
    "points-at=",
    "sort=",
    "format=",
    "color=?",
    "no-color",
    "column=?",
    "no-column",
    "abbrev=?",
    "no-abbrev",
    "show-current",
    "ignore-case",
    "omit-empty",
    "quiet",
];
const TAG_LIST: &[&str] = &[
    "list",
    "contains=",
    "no-contains=",
    "with=",
    "without=",
    "merged=",
    "no-merged=",
    "points-at=",
    "sort=",
    "format=",
    "color=?",
    "column=?",
    "no-column",
    "ignore-case",
    "omit-empty",
];

/// Options that make `branch` and `tag` list (their operands are then patterns).
const LISTING: &[&str] = &[
    "-l",
    "--list",
    "--contains",
    "--no-contains",
    "--with",
    "--without",
    "--merged",
    "--no-merged",
    "--points-at",
    "-n",
];

pub fn judge(args: &[Word]) -> Judgement {
    match judge_inner(args) {
        Ok(reads) => Judgement::Reads(reads),
        Err(NotRead::Refused(why)) => Judgement::Refused(format!("git {why}")),
        Err(NotRead::Changes(why)) => Judgement::Changes(format!("git {why}")),
    }
}

/// Why a git command line is not read-only.
enum NotRead {
    /// A subcommand or form that changes things as a whole.
    Changes(String),
    /// An option that writes, runs something or is unknown.
    Refused(String),
}

fn changes(why: impl Into<String>) -> NotRead {
    NotRead::Changes(why.into())
}

fn refused(why: impl Into<String>) -> NotRead {
    NotRead::Refused(why.into())
}

fn judge_inner(args: &[Word]) -> Result<Reads, NotRead> {
    let mut chained = std::path::PathBuf::new();
    // `--literal-pathspecs`: no operand has magic.
    let mut literal = false;
    let mut i = 0;
    while let Some(word) = args.get(i) {
        let owned = match &word.value {
            Value::Literal(_) | Value::Pattern(_) => word.unexpanded().unwrap_or_default(),
            Value::Unsafe(why) => return Err(refused(why.clone())),
            Value::Inert(_) | Value::Splits(_) => {
                return Err(refused(format!("{} is known only at run time", word.raw)));
            }
        };
        let text = owned.as_str();
        if !text.starts_with('-') {
            break;
        }
        i += 1;
        if text == "-C" {
            // Each -C is taken from the folder the ones before it lead to.
            let dir = args
                .get(i)
                .and_then(Word::text)
                .ok_or_else(|| refused("-C needs a folder written out"))?;
            chained.push(dir);
            i += 1;
            continue;
        }
        if GLOBAL_FLAGS.contains(&text) {
            literal |= text == "--literal-pathspecs";
            continue;
        }
        if GLOBAL_PRINT.contains(&text) {
            return Ok(Reads::default());
        }
        let refused_global = GLOBAL_REFUSED.iter().find(|(o, _)| {
            text == *o
                || (o.starts_with("--")
                    && text.strip_prefix(*o).is_some_and(|r| r.starts_with('=')))
        });
        if let Some((_, why)) = refused_global {
            return Err(refused(format!("{text} {why}")));
        }
        return Err(refused(format!(
            "{text} is an option the gate does not know"
        )));
    }
    let Some(name) = args.get(i) else {
        return Ok(Reads::default());
    };
    let name = name
        .text()
        .ok_or_else(|| refused("the subcommand is a pattern or known only at run time"))?;
    let rest = &args[i + 1..];
    let log = || sub("log").ok_or_else(|| refused("the log table is missing"));
    let files = match name {
        "branch" => listing("branch", rest, "arvliq", BRANCH_LIST)?,
        "tag" => listing("tag", rest, "ln::i", TAG_LIST)?,
        "remote" => remote(rest)?,
        "stash" => match rest.first().and_then(Word::text) {
            Some("list" | "show") => files_of(&log()?, &rest[1..])?,
            _ => return Err(changes("stash without list or show changes the stash")),
        },
        "reflog" => match rest.first().and_then(Word::text) {
            None | Some("exists" | "list") => Found::default(),
            Some("show") => files_of(&log()?, &rest[1..])?,
            Some(t) if t.starts_with('-') => files_of(&log()?, rest)?,
            Some(other) => return Err(changes(format!("reflog {other} changes the reflog"))),
        },
        "worktree" => match rest.first().and_then(Word::text) {
            Some("list") => {
                let spec = Spec {
                    short: "vz",
                    long: &["porcelain", "verbose", "expire="],
                    abbrev: false,
                    ..Spec::EMPTY
                };
                parse(&spec, &rest[1..]).map_err(refused)?;
                Found::default()
            }
            _ => return Err(changes("worktree without list changes the work trees")),
        },
        other => match sub(other) {
            Some(s) => files_of(&s, rest)?,
            None => return Err(changes(format!("{other} is not a read-only subcommand"))),
        },
    };
    let dirs: Vec<Word> = (!chained.as_os_str().is_empty())
        .then(|| Word::literal(&chained.to_string_lossy()))
        .into_iter()
        .collect();
    let mut paths = Vec::new();
    let mut top_files = files.files.clone();
    let mut whole = false;
    for operand in files.operands {
        let text = operand.unexpanded().unwrap_or_default();
        let spec = if literal {
            Pathspec::AsWritten
        } else {
            pathspec(&text).map_err(refused)?
        };
        match spec {
            Pathspec::AsWritten => paths.push(operand),
            Pathspec::Path(path) => paths.push(Word::literal(&path)),
            // A pattern matching no file reaches git as written; what it matches is checked
            // with the line's other patterns (a name starting with `:` asks).
            Pathspec::FromTop(path) => {
                let word = Word::literal(&path);
                paths.push(word.clone());
                top_files.push(word);
                whole = true;
            }
            Pathspec::Excluded => {}
        }
    }
    paths.extend(files.files.iter().cloned());
    // What reads the work tree's files (a revision named or not: the gate does not tell
    // revisions from paths). `git diff` compares the whole work tree; `git grep` searches
    // below its folder, unless a pathspec starts from the top.
    let given = |names: &[&str]| files.options.iter().any(|o| names.contains(&o.as_str()));
    let work_tree = match name {
        "diff" if !given(&["--cached", "--staged"]) => Some(WorkTree {
            whole: true,
            untracked: false,
        }),
        "grep" if !given(&["--cached"]) => Some(WorkTree {
            whole,
            untracked: given(&["--untracked", "--no-exclude-standard"]),
        }),
        _ => None,
    };
    Ok(Reads {
        paths,
        top_files,
        git: Some(dirs),
        pathspecs: !literal,
        work_tree,
        ..Reads::default()
    })
}

/// What git reads for one operand taken as a pathspec.
#[derive(Debug, PartialEq, Eq)]
enum Pathspec {
    /// The operand as written, from git's folder.
    AsWritten,
    /// This path (the operand without its magic), from git's folder.
    Path(String),
    /// This path from the top of the work tree.
    FromTop(String),
    /// Nothing: it only leaves paths out.
    Excluded,
}

/// Characters git takes for short pathspec magic after a leading `:` (`ctype.c`'s
/// `GIT_PATHSPEC_MAGIC`); of these only `/` (top) and `!` (exclude, `^` too) mean anything,
/// and git dies on the others.
const SHORT_MAGIC: &str = "!\"#%&',-/;<=>@_`~";

/// An operand's pathspec magic, as git's `pathspec.c` parses it: `:(top,glob)x` or `:/!x`.
fn pathspec(text: &str) -> Result<Pathspec, String> {
    let Some(rest) = text.strip_prefix(':') else {
        return Ok(Pathspec::AsWritten);
    };
    let (mut top, mut exclude) = (false, false);
    let pattern = if let Some(long) = rest.strip_prefix('(') {
        let Some((magic, pattern)) = long.split_once(')') else {
            return Err(format!(
                "the pathspec {text} misses its closing parenthesis"
            ));
        };
        for word in magic.split(',') {
            match word {
                "top" => top = true,
                "exclude" => exclude = true,
                "literal" | "glob" | "icase" => {}
                // Attribute values may escape a `,` or `)`, which this split does not read.
                w if w.starts_with("attr:") && !w.contains('\\') => {}
                w => {
                    return Err(format!(
                        "the pathspec {text} has magic the gate does not know ({w})"
                    ));
                }
            }
        }
        pattern
    } else {
        let mut end = rest.len();
        for (at, c) in rest.char_indices() {
            match c {
                ':' => {
                    end = at + 1;
                    break;
                }
                '/' => top = true,
                '!' | '^' => exclude = true,
                c if SHORT_MAGIC.contains(c) => {
                    return Err(format!("the pathspec {text} has magic git does not know"));
                }
                _ => {
                    end = at;
                    break;
                }
            }
        }
        &rest[end..]
    };
    Ok(if exclude {
        Pathspec::Excluded
    } else if top {
        Pathspec::FromTop(pattern.to_string())
    } else {
        Pathspec::Path(pattern.to_string())
    })
}

/// A subcommand's options parsed; what it reads from the file system: the files its
/// options name, and its operands — revisions and pathspecs inside the repository for git,
/// but `git diff` reads any two files given as paths outside it, so every operand is
/// checked as a path.
fn files_of(s: &Sub, args: &[Word]) -> Result<Found, NotRead> {
    let spec = Spec {
        short: s.short,
        long: &s.long,
        refused: s.refused,
        numeric: s.numeric,
        abbrev: false,
        style: Style::Getopt,
    };
    let parsed = parse(&spec, args).map_err(refused)?;
    read_by(&parsed)
}

/// The files a parsed git command reads; a format that verifies signatures runs gpg.
fn read_by(parsed: &super::Parsed<'_>) -> Result<Found, NotRead> {
    if parsed.dynamic {
        // A format or pattern whose text the gate cannot see (`--format $'\x25G?'`).
        return Err(refused("an option's value is known only at run time"));
    }
    for (option, value) in &parsed.options {
        // `%G…` and `%(signature…)` formats and `signature` sort keys verify signatures.
        if let Some(v) = value
            && (v.contains("%G") || v.to_ascii_lowercase().contains("signature"))
        {
            return Err(refused(format!(
                "{option}={v} verifies signatures, which runs gpg"
            )));
        }
    }
    let mut operands = Vec::new();
    for w in &parsed.operands {
        operands.push(path(w).map_err(refused)?);
    }
    Ok(Found {
        files: parsed.files.clone(),
        operands,
        options: parsed.options.iter().map(|(o, _)| o.clone()).collect(),
    })
}

/// What a git command reads: files named by its options (git resolves some of them from the
/// top of the work tree) and its operands (from its folder).
#[derive(Default)]
struct Found {
    files: Vec<Word>,
    operands: Vec<Word>,
    /// The options given, by their full names.
    options: Vec<String>,
}

/// `branch` and `tag` list only with no operand, or with `-l`/`--list` (operands are then
/// patterns); any other option (delete, move, create) is refused, and an operand without
/// `--list` creates a ref.
fn listing(
    name: &str,
    args: &[Word],
    short: &'static str,
    long: &'static [&'static str],
) -> Result<Found, NotRead> {
    let spec = Spec {
        short,
        long,
        abbrev: false,
        ..Spec::EMPTY
    };
    let parsed = parse(&spec, args).map_err(|why| refused(format!("{name}: {why}")))?;
    if !parsed.operands.is_empty() && !parsed.has(LISTING) {
        return Err(changes(format!(
            "{name} with an operand and no --list creates a ref"
        )));
    }
    read_by(&parsed)
}

/// `git remote`, `git remote -v`, `git remote get-url [--push] [--all] NAME`.
fn remote(args: &[Word]) -> Result<Found, NotRead> {
    match args.first().and_then(Word::text) {
        None | Some("-v") | Some("--verbose") if args.len() <= 1 => Ok(Found::default()),
        Some("get-url") => {
            let spec = Spec {
                long: &["push", "all"],
                abbrev: false,
                ..Spec::EMPTY
            };
            parse(&spec, &args[1..]).map_err(refused)?;
            Ok(Found::default())
        }
        _ => Err(changes(
            "remote without -v or get-url changes remotes or reaches the network",
        )),
    }
}
