//! Programs that read files and print: cat, head, tail, wc, sort, uniq, cut, tr, nl, tac,
//! rev, paste, comm, column, od, hexdump, diff, cmp and the checksum programs. Options that
//! write (`sort -o`), run a program (`sort --compress-program`, `diff -l`), or read names of
//! further files from a file (`--files0-from`, `md5sum -c`) are refused, and so is a second
//! operand that is an output (`uniq in out`).

use super::options::Spec;
use super::{Operands, Reads, with_spec};
use crate::gate::shell::{Value, Word};

const NAMES_FROM_FILE: &str = "reads the names of the files to read from a file";

pub(super) const CAT: Spec = Spec {
    short: "AbeEnstTuv",
    long: &[
        "show-all",
        "number-nonblank",
        "show-ends",
        "number",
        "squeeze-blank",
        "show-tabs",
        "show-nonprinting",
        "help",
        "version",
    ],
    refused: &[],
    numeric: false,
    abbrev: true,
    ..Spec::EMPTY
};

pub(super) const HEAD: Spec = Spec {
    short: "c:n:qvz",
    long: &[
        "bytes=",
        "lines=",
        "quiet",
        "silent",
        "verbose",
        "zero-terminated",
        "help",
        "version",
    ],
    refused: &[],
    numeric: true,
    abbrev: true,
    ..Spec::EMPTY
};

pub(super) const TAIL: Spec = Spec {
    short: "c:fFn:qs:vz",
    long: &[
        "bytes=",
        "follow=?",
        "lines=",
        "max-unchanged-stats=",
        "pid=",
        "quiet",
        "silent",
        "retry",
        "sleep-interval=",
        "verbose",
        "zero-terminated",
        "help",
        "version",
    ],
    refused: &[],
    numeric: true,
    abbrev: true,
    ..Spec::EMPTY
};

pub(super) const WC: Spec = Spec {
    short: "cmlLw",
    long: &[
        "bytes",
        "chars",
        "lines",
        "max-line-length",
        "words",
        "total=",
        "help",
        "version",
    ],
    refused: &[("files0-from", NAMES_FROM_FILE)],
    numeric: false,
    abbrev: true,
    ..Spec::EMPTY
};

pub(super) const SORT: Spec = Spec {
    short: "bdfgiMhnRrVcCmsuzk:t:S:",
    long: &[
        "ignore-leading-blanks",
        "dictionary-order",
        "ignore-case",
        "general-numeric-sort",
        "ignore-nonprinting",
        "month-sort",
        "human-numeric-sort",
        "numeric-sort",
        "random-sort",
        "random-source=@",
        "reverse",
        "sort=",
        "version-sort",
        "batch-size=",
        "check=?",
        "debug",
        "key=",
        "merge",
        "stable",
        "buffer-size=",
        "field-separator=",
        "parallel=",
        "unique",
        "zero-terminated",
        "help",
        "version",
    ],
    refused: &[
        ("o", "writes its output to a file"),
        ("output", "writes its output to a file"),
        ("compress-program", "runs a program"),
        ("T", "writes temporary files into a folder"),
        (
            "temporary-directory",
            "writes temporary files into a folder",
        ),
        ("files0-from", NAMES_FROM_FILE),
    ],
    numeric: false,
    abbrev: true,
    ..Spec::EMPTY
};

pub(super) const UNIQ: Spec = Spec {
    short: "cdDf:is:uzw:",
    long: &[
        "count",
        "repeated",
        "all-repeated=?",
        "skip-fields=",
        "group=?",
        "ignore-case",
        "skip-chars=",
        "unique",
        "zero-terminated",
        "check-chars=",
        "help",
        "version",
    ],
    refused: &[],
    numeric: false,
    abbrev: true,
    ..Spec::EMPTY
};

pub(super) const CUT: Spec = Spec {
    short: "b:c:d:f:nsz",
    long: &[
        "bytes=",
        "characters=",
        "delimiter=",
        "fields=",
        "complement",
        "only-delimited",
        "output-delimiter=",
        "zero-terminated",
        "help",
        "version",
    ],
    refused: &[],
    numeric: false,
    abbrev: true,
    ..Spec::EMPTY
};

pub(super) const TR: Spec = Spec {
    short: "cCdst",
    long: &[
        "complement",
        "delete",
        "squeeze-repeats",
        "truncate-set1",
        "help",
        "version",
    ],
    refused: &[],
    numeric: false,
    abbrev: true,
    ..Spec::EMPTY
};

pub(super) const NL: Spec = Spec {
    short: "b:d:f:h:i:l:n:ps:v:w:",
    long: &[
        "body-numbering=",
        "section-delimiter=",
        "footer-numbering=",
        "header-numbering=",
        "line-increment=",
        "join-blank-lines=",
        "number-format=",
        "no-renumber",
        "number-separator=",
        "starting-line-number=",
        "number-width=",
        "help",
        "version",
    ],
    refused: &[],
    numeric: false,
    abbrev: true,
    ..Spec::EMPTY
};

pub(super) const TAC: Spec = Spec {
    short: "brs:",
    long: &["before", "regex", "separator=", "help", "version"],
    refused: &[],
    numeric: false,
    abbrev: true,
    ..Spec::EMPTY
};

pub(super) const REV: Spec = Spec {
    short: "hV0",
    long: &["help", "version", "zero"],
    refused: &[],
    numeric: false,
    abbrev: true,
    ..Spec::EMPTY
};

pub(super) const PASTE: Spec = Spec {
    short: "d:sz",
    long: &[
        "delimiters=",
        "serial",
        "zero-terminated",
        "help",
        "version",
    ],
    refused: &[],
    numeric: false,
    abbrev: true,
    ..Spec::EMPTY
};

pub(super) const COMM: Spec = Spec {
    short: "123z",
    long: &[
        "check-order",
        "nocheck-order",
        "output-delimiter=",
        "total",
        "zero-terminated",
        "help",
        "version",
    ],
    refused: &[],
    numeric: false,
    abbrev: true,
    ..Spec::EMPTY
};

pub(super) const COLUMN: Spec = Spec {
    short: "tdeLJxhVn:O:N:l:E:H:R:T:W:r:i:p:c:o:s:",
    long: &[
        "table",
        "table-name=",
        "table-order=",
        "table-columns=",
        "table-columns-limit=",
        "table-noextreme=",
        "table-noheadings",
        "table-header-repeat",
        "table-hide=",
        "table-right=",
        "table-truncate=",
        "table-wrap=",
        "keep-empty-lines",
        "json",
        "tree=",
        "tree-id=",
        "tree-parent=",
        "output-width=",
        "output-separator=",
        "separator=",
        "fillrows",
        "help",
        "version",
    ],
    refused: &[],
    numeric: false,
    abbrev: true,
    ..Spec::EMPTY
};

pub(super) const OD: Spec = Spec {
    short: "A:j:N:S:t:vw::abcdfilosx",
    long: &[
        "address-radix=",
        "endian=",
        "skip-bytes=",
        "read-bytes=",
        "strings=?",
        "format=",
        "output-duplicates",
        "width=?",
        "traditional",
        "help",
        "version",
    ],
    refused: &[],
    numeric: false,
    abbrev: true,
    ..Spec::EMPTY
};

pub(super) const HEXDUMP: Spec = Spec {
    short: "bcCdoxL::e:f@n:s:vhV",
    long: &[
        "one-byte-octal",
        "one-byte-char",
        "canonical",
        "two-bytes-decimal",
        "two-bytes-octal",
        "two-bytes-hex",
        "color=?",
        "format=",
        "format-file=@",
        "length=",
        "skip=",
        "no-squeezing",
        "help",
        "version",
    ],
    refused: &[],
    numeric: false,
    abbrev: true,
    ..Spec::EMPTY
};

pub(super) const DIFF: Spec = Spec {
    short: "qscC:uU:enyW:ptTNx:X@S:iEZbwBI:aD:dF:v",
    long: &[
        "normal",
        "brief",
        "report-identical-files",
        "context=?",
        "unified=?",
        "ed",
        "rcs",
        "side-by-side",
        "width=",
        "left-column",
        "suppress-common-lines",
        "show-c-function",
        "show-function-line=",
        "label=",
        "expand-tabs",
        "initial-tab",
        "tabsize=",
        "suppress-blank-empty",
        "no-dereference",
        "new-file",
        "unidirectional-new-file",
        "ignore-file-name-case",
        "no-ignore-file-name-case",
        "exclude=",
        "exclude-from=@",
        "starting-file=",
        "from-file=@",
        "to-file=@",
        "ignore-case",
        "ignore-tab-expansion",
        "ignore-trailing-space",
        "ignore-space-change",
        "ignore-all-space",
        "ignore-blank-lines",
        "ignore-matching-lines=",
        "text",
        "strip-trailing-cr",
        "ifdef=",
        "old-group-format=",
        "new-group-format=",
        "changed-group-format=",
        "unchanged-group-format=",
        "line-format=",
        "old-line-format=",
        "new-line-format=",
        "unchanged-line-format=",
        "minimal",
        "horizon-lines=",
        "speed-large-files",
        "color=?",
        "palette=",
        "help",
        "version",
    ],
    refused: &[
        ("l", "runs pr on its output"),
        ("paginate", "runs pr on its output"),
        ("r", "follows links while comparing folders"),
        ("recursive", "follows links while comparing folders"),
    ],
    numeric: false,
    abbrev: true,
    ..Spec::EMPTY
};

pub(super) const CMP: Spec = Spec {
    short: "bi:ln:sv",
    long: &[
        "print-bytes",
        "ignore-initial=",
        "verbose",
        "bytes=",
        "quiet",
        "silent",
        "help",
        "version",
    ],
    refused: &[],
    numeric: false,
    abbrev: true,
    ..Spec::EMPTY
};

pub(super) const SUMS: Spec = Spec {
    short: "btzwl:",
    long: &[
        "binary",
        "tag",
        "text",
        "zero",
        "ignore-missing",
        "quiet",
        "status",
        "strict",
        "warn",
        "length=",
        "help",
        "version",
    ],
    refused: &[
        (
            "c",
            "reads the names of the files to check from its operands",
        ),
        (
            "check",
            "reads the names of the files to check from its operands",
        ),
    ],
    numeric: false,
    abbrev: true,
    ..Spec::EMPTY
};

pub(super) const CKSUM: Spec = Spec {
    short: "a:l:zw",
    long: &[
        "algorithm=",
        "length=",
        "tag",
        "untagged",
        "zero",
        "ignore-missing",
        "quiet",
        "status",
        "strict",
        "warn",
        "debug",
        "base64",
        "raw",
        "help",
        "version",
    ],
    refused: &[
        (
            "c",
            "reads the names of the files to check from its operands",
        ),
        (
            "check",
            "reads the names of the files to check from its operands",
        ),
    ],
    numeric: false,
    abbrev: true,
    ..Spec::EMPTY
};

pub(super) const SUM: Spec = Spec {
    short: "rs",
    long: &["sysv", "help", "version"],
    refused: &[],
    numeric: false,
    abbrev: true,
    ..Spec::EMPTY
};

pub fn judge(name: &str, args: &[Word]) -> Result<Reads, String> {
    let files = |spec: &Spec| with_spec(spec, args, Operands::Files).map(|(_, r)| r);
    match name {
        "cat" => files(&CAT),
        "head" => files(&HEAD),
        "tail" => files(&TAIL),
        "wc" => files(&WC),
        "sort" => files(&SORT),
        "cut" => files(&CUT),
        "nl" => files(&NL),
        "tac" => files(&TAC),
        "rev" => files(&REV),
        "paste" => files(&PASTE),
        "column" => files(&COLUMN),
        "od" => files(&OD),
        "hexdump" => files(&HEXDUMP),
        "md5sum" | "sha1sum" | "sha224sum" | "sha256sum" | "sha384sum" | "sha512sum" | "b2sum" => {
            files(&SUMS)
        }
        "cksum" => files(&CKSUM),
        "sum" => files(&SUM),
        "tr" => Ok(with_spec(&TR, args, Operands::Text)?.1),
        "uniq" => {
            let (p, reads) = with_spec(&UNIQ, args, Operands::Files)?;
            // uniq [INPUT [OUTPUT]]: a second operand is written; a pattern may become one.
            if p.operands.len() > 1
                || p.operands
                    .iter()
                    .any(|w| matches!(w.value, Value::Pattern(_)))
            {
                return Err("uniq writes its second operand".into());
            }
            Ok(reads)
        }
        "comm" => files(&COMM),
        "diff" => {
            let (_, mut reads) = with_spec(&DIFF, args, Operands::Files)?;
            reads.files_only = true;
            Ok(reads)
        }
        "cmp" => {
            // cmp FILE1 [FILE2 [SKIP1 [SKIP2]]]: the skips are numbers.
            let (p, _) = with_spec(&CMP, args, Operands::Text)?;
            let mut reads = Reads {
                paths: p.files.clone(),
                ..Reads::default()
            };
            for w in p.operands.iter().take(2) {
                reads.paths.push(super::path(w)?);
            }
            Ok(reads)
        }
        _ => Err(format!("{name} is not a program the gate knows")),
    }
}
