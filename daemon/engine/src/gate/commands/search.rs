//! grep (and egrep, fgrep) and ripgrep. Their first operand is a pattern unless one is given
//! by option; the rest are files or folders to search, the current folder when a recursive
//! search names none. Following every link while recursing (`grep -R`, `rg -L`) and running
//! programs on the files (`rg --pre`, `rg -z`, `rg --hostname-bin`) are refused.

use super::options::{Spec, Style};
use super::{IgnoreWalk, Operands, Reads, path, with_spec};
use crate::gate::shell::Word;

const FOLLOWS: &str = "follows every link while searching, out of the project through a link in it";

pub(super) const GREP: Spec = Spec {
    short: "EFGPe:f@iywxzsvVm:bnHhoqaId:D:rLlcTZUA:B:C:",
    long: &[
        "extended-regexp",
        "fixed-strings",
        "basic-regexp",
        "perl-regexp",
        "regexp=",
        "file=@",
        "ignore-case",
        "no-ignore-case",
        "word-regexp",
        "line-regexp",
        "null-data",
        "no-messages",
        "invert-match",
        "version",
        "help",
        "max-count=",
        "byte-offset",
        "line-number",
        "no-line-number",
        "line-buffered",
        "with-filename",
        "no-filename",
        "label=",
        "only-matching",
        "quiet",
        "silent",
        "binary-files=",
        "text",
        "directories=",
        "devices=",
        "recursive",
        "include=",
        "exclude=",
        "exclude-from=@",
        "exclude-dir=",
        "files-without-match",
        "files-with-matches",
        "count",
        "initial-tab",
        "null",
        "before-context=",
        "after-context=",
        "context=",
        "group-separator=",
        "no-group-separator",
        "color=?",
        "colour=?",
        "binary",
    ],
    refused: &[("R", FOLLOWS), ("dereference-recursive", FOLLOWS)],
    numeric: true,
    abbrev: true,
    style: Style::Getopt,
};

/// ripgrep 13–15's flags (no abbreviations; `-X=v` drops the `=`).
pub(super) const RG: Spec = Spec {
    short: "0.FHINPSUVabchilnopqsuvwxA:B:C:E:M:T:d:e:f@g:j:m:r:t:",
    long: &[
        "regexp=",
        "file=@",
        "no-pre",
        "pre-glob=",
        "no-search-zip",
        "case-sensitive",
        "crlf",
        "no-crlf",
        "dfa-size-limit=",
        "encoding=",
        "no-encoding",
        "engine=",
        "fixed-strings",
        "no-fixed-strings",
        "ignore-case",
        "invert-match",
        "no-invert-match",
        "line-regexp",
        "max-count=",
        "mmap",
        "no-mmap",
        "multiline",
        "no-multiline",
        "multiline-dotall",
        "no-multiline-dotall",
        "no-unicode",
        "unicode",
        "null-data",
        "pcre2",
        "no-pcre2",
        "regex-size-limit=",
        "smart-case",
        "stop-on-nonmatch",
        "text",
        "no-text",
        "threads=",
        "word-regexp",
        "auto-hybrid-regex",
        "no-auto-hybrid-regex",
        "no-pcre2-unicode",
        "pcre2-unicode",
        "binary",
        "no-binary",
        "no-follow",
        "glob=",
        "glob-case-insensitive",
        "no-glob-case-insensitive",
        "hidden",
        "no-hidden",
        "iglob=",
        "ignore-file=@",
        "ignore-file-case-insensitive",
        "no-ignore-file-case-insensitive",
        "max-depth=",
        "maxdepth=",
        "max-filesize=",
        "no-ignore",
        "ignore",
        "no-ignore-dot",
        "ignore-dot",
        "no-ignore-exclude",
        "ignore-exclude",
        "no-ignore-files",
        "ignore-files",
        "no-ignore-global",
        "ignore-global",
        "no-ignore-parent",
        "ignore-parent",
        "no-ignore-vcs",
        "ignore-vcs",
        "no-require-git",
        "require-git",
        "one-file-system",
        "no-one-file-system",
        "type=",
        "type-not=",
        "type-add=",
        "type-clear=",
        "unrestricted",
        "after-context=",
        "before-context=",
        "context=",
        "block-buffered",
        "no-block-buffered",
        "byte-offset",
        "no-byte-offset",
        "color=",
        "colors=",
        "column",
        "no-column",
        "context-separator=",
        "no-context-separator",
        "field-context-separator=",
        "field-match-separator=",
        "heading",
        "no-heading",
        "help",
        "hyperlink-format=",
        "include-zero",
        "no-include-zero",
        "line-buffered",
        "no-line-buffered",
        "line-number",
        "no-line-number",
        "max-columns=",
        "max-columns-preview",
        "no-max-columns-preview",
        "null",
        "only-matching",
        "path-separator=",
        "passthru",
        "passthrough",
        "pretty",
        "quiet",
        "replace=",
        "sort=",
        "sortr=",
        "sort-files",
        "no-sort-files",
        "trim",
        "no-trim",
        "vimgrep",
        "with-filename",
        "no-filename",
        "count",
        "count-matches",
        "files-with-matches",
        "files-without-match",
        "json",
        "no-json",
        "debug",
        "trace",
        "no-ignore-messages",
        "ignore-messages",
        "no-messages",
        "messages",
        "stats",
        "no-stats",
        "files",
        "generate=",
        "no-config",
        "pcre2-version",
        "type-list",
        "version",
    ],
    refused: &[
        ("pre", "runs a program on every file"),
        ("z", "runs decompressors on the files"),
        ("search-zip", "runs decompressors on the files"),
        ("hostname-bin", "runs a program"),
        ("L", FOLLOWS),
        ("follow", FOLLOWS),
    ],
    numeric: false,
    abbrev: false,
    style: Style::DropEquals,
};

pub fn judge(name: &str, args: &[Word]) -> Result<Reads, String> {
    let rg = name == "rg";
    let spec = if rg { &RG } else { &GREP };
    let (parsed, mut reads) = with_spec(spec, args, Operands::Text)?;
    let given = parsed.has(&["-e", "--regexp", "-f", "--file"])
        || (rg && parsed.has(&["--files", "--type-list", "--generate"]));
    let files = if given {
        &parsed.operands[..]
    } else {
        parsed.operands.get(1..).unwrap_or_default()
    };
    for w in files {
        reads.paths.push(path(w)?);
    }
    // grep takes `-d rec` for `recurse` (and `r`, `re` are ambiguous with `read`: taken as
    // recursive too, which only checks more).
    let recursive = rg
        || parsed.has(&["-r", "--recursive"])
        || parsed
            .value(&["-d", "--directories"])
            .is_some_and(|v| !v.is_empty() && "recurse".starts_with(v));
    reads.cwd = recursive && files.is_empty();
    // ripgrep's walk, which leaves out what its ignore files do, is the gate's own.
    reads.searches = recursive && !rg;
    if rg {
        // Its configuration file can add any flag, --pre included.
        reads.env = &["RIPGREP_CONFIG_PATH"];
        let widens = parsed.options.iter().any(|(o, _)| {
            (o.starts_with("--no-ignore")
                && o != "--no-ignore-case"
                && o != "--no-ignore-file-case-insensitive")
                || [
                    "-u",
                    "--unrestricted",
                    "-g",
                    "--glob",
                    "--iglob",
                    "--no-require-git",
                ]
                .contains(&o.as_str())
        });
        reads.ignore_files = Some(if widens {
            IgnoreWalk::Every
        } else {
            IgnoreWalk::Unignored
        });
    }
    Ok(reads)
}
