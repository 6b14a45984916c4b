//! Programs that list and describe files: ls, tree, find, du, df, stat, file, realpath,
//! readlink, basename, dirname. Options that follow links while walking (out of the project
//! through a link inside it), write files, or read lists of further names are refused; those
//! that follow the links they list to describe what they lead to (`ls -L`, `ls -F`, `find
//! -xtype`, and tree always) make the gate read each such link's target.

use super::options::{Parsed, Spec, Style};
use super::{Operands, Reads, Walk, path, with_spec};
use crate::gate::shell::{Value, Word};

const FOLLOWS: &str =
    "follows links while walking folders, out of the project through a link in it";

pub(super) const LS: Spec = Spec {
    short: "aAbBcCdDfFgGhHiklLmnNopqQrRsStuUvxXZ1I:T:w:",
    long: &[
        "all",
        "almost-all",
        "author",
        "escape",
        "block-size=",
        "ignore-backups",
        "color=?",
        "colour=?",
        "directory",
        "dired",
        "classify=?",
        "file-type",
        "format=",
        "full-time",
        "group-directories-first",
        "no-group",
        "human-readable",
        "si",
        "dereference-command-line",
        "dereference-command-line-symlink-to-dir",
        "hide=",
        "hyperlink=?",
        "indicator-style=",
        "inode",
        "ignore=",
        "kibibytes",
        "dereference",
        "numeric-uid-gid",
        "literal",
        "hide-control-chars",
        "show-control-chars",
        "quote-name",
        "quoting-style=",
        "reverse",
        "recursive",
        "size",
        "sort=",
        "time=",
        "time-style=",
        "tabsize=",
        "width=",
        "context",
        "zero",
        "help",
        "version",
    ],
    refused: &[],
    numeric: false,
    abbrev: true,
    ..Spec::EMPTY
};

/// tree is not getopt: each value-taking letter of a cluster takes the next word, long options
/// are never abbreviated (research on tree 1.8, 2.1 and 2.3).
pub(super) const TREE: Spec = Spec {
    short: "adfxqNQpugshDFvtcUriASnCXJL:P:I:H:T:",
    long: &[
        "help",
        "version",
        "inodes",
        "device",
        "noreport",
        "nolinks",
        "dirsfirst",
        "filesfirst",
        "filelimit=",
        "charset=",
        "si",
        "du",
        "prune",
        "timefmt=",
        "ignore-case",
        "matchdirs",
        "sort=",
        "fflinks",
        "metafirst",
        "gitignore",
        "gitfile=@",
        "hintro=@",
        "houtro=@",
        "hyperlink",
        "authority=",
        "condense",
        "compress=",
        "acl",
        "selinux",
    ],
    refused: &[
        ("l", FOLLOWS),
        ("R", "writes an index file into every folder"),
        ("o", "writes its output to a file"),
        ("fromfile", "reads files the gate does not see as listings"),
        (
            "fromtabfile",
            "reads files the gate does not see as listings",
        ),
        (
            "info",
            "reads .info files with a parser that overflows on hostile input",
        ),
        (
            "infofile",
            "reads .info files with a parser that overflows on hostile input",
        ),
        ("scheme", "overflows a buffer on long values"),
        ("opt-toggle", "makes later options mean their opposite"),
    ],
    numeric: false,
    abbrev: false,
    style: Style::NextWords,
};

pub(super) const DU: Spec = Spec {
    short: "0abcDHhklmPSsxd:t:X@B:",
    long: &[
        "null",
        "all",
        "apparent-size",
        "block-size=",
        "bytes",
        "total",
        "dereference-args",
        "max-depth=",
        "summarize",
        "inodes",
        "count-links",
        "no-dereference",
        "separate-dirs",
        "si",
        "threshold=",
        "time=?",
        "time-style=",
        "exclude-from=@",
        "exclude=",
        "one-file-system",
        "human-readable",
        "help",
        "version",
    ],
    refused: &[
        ("L", FOLLOWS),
        ("dereference", FOLLOWS),
        (
            "files0-from",
            "reads the names of the files to read from a file",
        ),
    ],
    numeric: false,
    abbrev: true,
    ..Spec::EMPTY
};

pub(super) const DF: Spec = Spec {
    short: "aB:hHiklPt:Tx:v",
    long: &[
        "all",
        "block-size=",
        "human-readable",
        "si",
        "inodes",
        "local",
        "no-sync",
        "output=?",
        "portability",
        "total",
        "type=",
        "print-type",
        "exclude-type=",
        "help",
        "version",
    ],
    refused: &[("sync", "flushes every file system first")],
    numeric: false,
    abbrev: true,
    ..Spec::EMPTY
};

pub(super) const STAT: Spec = Spec {
    short: "Lfc:t",
    long: &[
        "dereference",
        "file-system",
        "cached=",
        "format=",
        "printf=",
        "terse",
        "help",
        "version",
    ],
    refused: &[],
    numeric: false,
    abbrev: true,
    ..Spec::EMPTY
};

pub(super) const FILE: Spec = Spec {
    short: "bcdEhikLlnNrs0e:F:P:v",
    long: &[
        "brief",
        "checking-printout",
        "debug",
        "exclude=",
        "exclude-quiet=",
        "separator=",
        "mime",
        "apple",
        "extension",
        "mime-type",
        "mime-encoding",
        "keep-going",
        "list",
        "dereference",
        "no-dereference",
        "no-buffer",
        "no-pad",
        "print0",
        "raw",
        "special-files",
        "parameter=",
        "help",
        "version",
    ],
    refused: &[
        ("C", "compiles a magic file, writing it"),
        ("compile", "compiles a magic file, writing it"),
        ("m", "reads magic files the gate does not check"),
        ("magic-file", "reads magic files the gate does not check"),
        ("f", "reads the names of the files to examine from a file"),
        (
            "files-from",
            "reads the names of the files to examine from a file",
        ),
        ("p", "changes the files' access times"),
        ("preserve-date", "changes the files' access times"),
        ("z", "runs decompressors on the files"),
        ("Z", "runs decompressors on the files"),
        ("uncompress", "runs decompressors on the files"),
        ("uncompress-noreport", "runs decompressors on the files"),
        ("S", "turns off file's own sandbox"),
        ("no-sandbox", "turns off file's own sandbox"),
    ],
    numeric: false,
    abbrev: true,
    ..Spec::EMPTY
};

pub(super) const REALPATH: Spec = Spec {
    short: "emLPqsz",
    long: &[
        "canonicalize-existing",
        "canonicalize-missing",
        "logical",
        "physical",
        "quiet",
        "relative-to=@",
        "relative-base=@",
        "strip",
        "no-symlinks",
        "zero",
        "help",
        "version",
    ],
    refused: &[],
    numeric: false,
    abbrev: true,
    ..Spec::EMPTY
};

pub(super) const READLINK: Spec = Spec {
    short: "femnqsvz",
    long: &[
        "canonicalize",
        "canonicalize-existing",
        "canonicalize-missing",
        "no-newline",
        "quiet",
        "silent",
        "verbose",
        "zero",
        "help",
        "version",
    ],
    refused: &[],
    numeric: false,
    abbrev: true,
    ..Spec::EMPTY
};

pub(super) const BASENAME: Spec = Spec {
    short: "as:z",
    long: &["multiple", "suffix=", "zero", "help", "version"],
    refused: &[],
    numeric: false,
    abbrev: true,
    ..Spec::EMPTY
};

pub(super) const DIRNAME: Spec = Spec {
    short: "z",
    long: &["zero", "help", "version"],
    refused: &[],
    numeric: false,
    abbrev: true,
    ..Spec::EMPTY
};

pub fn judge(name: &str, args: &[Word]) -> Result<Reads, String> {
    match name {
        "ls" => {
            let (p, mut reads) = with_spec(&LS, args, Operands::FilesOrCwd)?;
            let recursive = p.has(&["-R", "--recursive"]);
            if recursive && p.has(&["-L", "--dereference"]) {
                return Err(format!("ls -R -L {FOLLOWS}"));
            }
            if ls_describes_targets(&p) && !p.has(&["-d", "--directory"]) {
                reads.link_targets = Some(if recursive { Walk::Tree } else { Walk::Entries });
            }
            Ok(reads)
        }
        "tree" => {
            let (_, mut reads) = with_spec(&TREE, args, Operands::FilesOrCwd)?;
            // tree writes JSON to the descriptor this names.
            reads.env = &["STDDATA_FD"];
            // It looks at every link's target, to show what it is.
            reads.link_targets = Some(Walk::Tree);
            Ok(reads)
        }
        "find" => find(args),
        "du" => Ok(with_spec(&DU, args, Operands::FilesOrCwd)?.1),
        "df" => Ok(with_spec(&DF, args, Operands::Files)?.1),
        "stat" => Ok(with_spec(&STAT, args, Operands::Files)?.1),
        "file" => {
            let (_, mut reads) = with_spec(&FILE, args, Operands::Files)?;
            // MAGIC names the magic files it reads (and quotes).
            reads.env = &["MAGIC"];
            Ok(reads)
        }
        "realpath" => Ok(with_spec(&REALPATH, args, Operands::Files)?.1),
        "readlink" => Ok(with_spec(&READLINK, args, Operands::Files)?.1),
        "basename" => Ok(with_spec(&BASENAME, args, Operands::Text)?.1),
        "dirname" => Ok(with_spec(&DIRNAME, args, Operands::Text)?.1),
        _ => Err(format!("{name} is not a program the gate knows")),
    }
}

/// Whether ls, listing a folder, looks at what its links lead to: their metadata (`-L`),
/// their kind for an indicator (`-F`, `--file-type`) or a colour, or their real path for a
/// hyperlink. A value that turns the option off (`--color=never`) does not count; any other
/// (`auto` included) does.
fn ls_describes_targets(p: &Parsed<'_>) -> bool {
    let off = |v: &str| !v.is_empty() && ("never".starts_with(v) || "none".starts_with(v));
    p.options.iter().any(|(o, v)| match o.as_str() {
        "-L" | "--dereference" | "-F" | "--file-type" => true,
        "--classify" | "--color" | "--colour" | "--hyperlink" => !v.as_deref().is_some_and(off),
        "--indicator-style" => !v
            .as_deref()
            .is_some_and(|v| off(v) || (!v.is_empty() && "slash".starts_with(v))),
        _ => false,
    })
}

/// find's primaries that look at what a link leads to when find itself does not follow
/// links: its kind, or whether it may be read, written or run.
const FIND_TARGETS: &[&str] = &["-xtype", "-readable", "-writable", "-executable"];

/// Whether a `-printf` format prints what a link leads to (`%Y`, its target's kind).
fn prints_targets(format: &str) -> bool {
    let mut chars = format.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            continue;
        }
        // Flags, width and precision, as printf takes them.
        let conversion = chars
            .by_ref()
            .find(|c| !matches!(c, '-' | '+' | ' ' | '#' | '0'..='9' | '.'));
        if conversion == Some('Y') {
            return true;
        }
    }
    false
}

/// find's primaries that take no argument.
const FIND_FLAGS: &[&str] = &[
    "-daystart",
    "-depth",
    "-d",
    "-empty",
    "-false",
    "-true",
    "-ignore_readdir_race",
    "-noignore_readdir_race",
    "-mount",
    "-xdev",
    "-noleaf",
    "-nouser",
    "-nogroup",
    "-print",
    "-print0",
    "-prune",
    "-quit",
    "-ls",
    "-readable",
    "-writable",
    "-executable",
    "-nowarn",
    "-warn",
    "-not",
    "-a",
    "-and",
    "-o",
    "-or",
    "!",
    "(",
    ")",
    ",",
];

/// find's primaries that take one argument of text (a pattern, a number, a format).
const FIND_TEXT: &[&str] = &[
    "-amin",
    "-atime",
    "-cmin",
    "-ctime",
    "-mmin",
    "-mtime",
    "-used",
    "-fstype",
    "-gid",
    "-uid",
    "-group",
    "-user",
    "-ilname",
    "-iname",
    "-inum",
    "-ipath",
    "-iregex",
    "-iwholename",
    "-links",
    "-lname",
    "-name",
    "-path",
    "-perm",
    "-regex",
    "-size",
    "-type",
    "-xtype",
    "-wholename",
    "-maxdepth",
    "-mindepth",
    "-regextype",
    "-context",
    "-printf",
];

/// find's primaries that take a file (compared by its times or identity).
const FIND_FILES: &[&str] = &["-anewer", "-cnewer", "-newer", "-samefile"];

const FIND_REFUSED: &[(&str, &str)] = &[
    ("-exec", "runs a program"),
    ("-execdir", "runs a program"),
    ("-ok", "runs a program"),
    ("-okdir", "runs a program"),
    ("-delete", "deletes files"),
    ("-fprint", "writes a file"),
    ("-fprint0", "writes a file"),
    ("-fprintf", "writes a file"),
    ("-fls", "writes a file"),
    (
        "-files0-from",
        "reads the names of the paths to search from a file",
    ),
    ("-follow", FOLLOWS),
];

/// `find [-H] [-P] [-D x] [-Ox] [path…] [expression]`: every primary known, each argument
/// taken as the primary takes it.
fn find(args: &[Word]) -> Result<Reads, String> {
    // Leading options, as findutils reads them: `-D` takes the next word whatever it is.
    let mut lead = 0;
    while let Some(text) = args.get(lead).and_then(Word::unexpanded) {
        match text.as_str() {
            "-H" | "-P" | "--help" | "--version" => lead += 1,
            "-L" => return Err(format!("find -L {FOLLOWS}")),
            "-D" => lead += 2,
            t if t.starts_with("-O") => lead += 1,
            _ => break,
        }
    }
    let rest = args.get(lead..).unwrap_or_default();
    // As findutils reads the first words: `-x`, `(` and `!` start the expression; `,`, `)`
    // and `-` are starting points.
    let starts_expression = |w: &Word| {
        w.unexpanded()
            .is_some_and(|t| (t.starts_with('-') && t.len() > 1) || matches!(t.as_str(), "(" | "!"))
    };
    let paths_end = rest
        .iter()
        .position(starts_expression)
        .unwrap_or(rest.len());
    let mut reads = Reads::default();
    for w in &rest[..paths_end] {
        reads.paths.push(path(w)?);
    }
    reads.cwd = paths_end == 0;
    let mut expr = rest[paths_end..].iter();
    while let Some(w) = expr.next() {
        let owned;
        let primary = match &w.value {
            Value::Literal(t) => t.as_str(),
            // A pattern that matches nothing reaches find as written; its matches are checked
            // when expanded (none may start with `-`).
            Value::Pattern(p) => {
                owned = p.text();
                if !owned.starts_with('-') {
                    continue;
                }
                owned.as_str()
            }
            Value::Inert(why) | Value::Splits(why) => {
                return Err(format!(
                    "find's {} is known only at run time ({why})",
                    w.raw
                ));
            }
            Value::Unsafe(why) => return Err(why.clone()),
        };
        if let Some((_, why)) = FIND_REFUSED.iter().find(|(n, _)| *n == primary) {
            return Err(format!("find {primary} {why}"));
        }
        if FIND_TARGETS.contains(&primary) {
            reads.link_targets = Some(Walk::Tree);
        }
        if FIND_FLAGS.contains(&primary) {
            continue;
        }
        let newer = primary.strip_prefix("-newer").filter(|xy| {
            xy.len() == 2 && xy.bytes().all(|b| b"aBcmt".contains(&b)) && !xy.starts_with('t')
        });
        let takes_file =
            FIND_FILES.contains(&primary) || newer.is_some_and(|xy| !xy.ends_with('t'));
        let takes_text = FIND_TEXT.contains(&primary) || newer.is_some_and(|xy| xy.ends_with('t'));
        if !takes_file && !takes_text {
            return Err(format!(
                "find {primary} is a primary the gate does not know"
            ));
        }
        let arg = expr
            .next()
            .ok_or_else(|| format!("find {primary} is missing its argument"))?;
        if takes_file {
            reads.paths.push(path(arg)?);
        } else if let Value::Unsafe(why) | Value::Splits(why) = &arg.value {
            return Err(format!("find {primary}'s argument: {why}"));
        } else if primary == "-printf" {
            // A format known only at run time may print anything.
            if arg.text().is_none_or(prints_targets) {
                reads.link_targets = Some(Walk::Tree);
            }
        } else if newer.is_some() {
            let Some(date) = arg.text() else {
                return Err(format!("find {primary}'s date is known only at run time"));
            };
            if let Some(why) = super::system::names_time_zone_file(date) {
                return Err(format!("find {primary} {why}"));
            }
        }
    }
    Ok(reads)
}
