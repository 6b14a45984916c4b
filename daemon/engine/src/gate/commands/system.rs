//! Programs that print facts about the system: uname, id, whoami, hostname, nproc, free,
//! uptime, date, arch, and seq, sleep, which. What would change the system (`date -s`,
//! `hostname NAME`, `date MMDDhhmm`) is refused.

use super::options::Spec;
use super::{Operands, Reads, with_spec};
use crate::gate::shell::Word;

pub(super) const UNAME: Spec = Spec {
    short: "asnrvmpio",
    long: &[
        "all",
        "kernel-name",
        "nodename",
        "kernel-release",
        "kernel-version",
        "machine",
        "processor",
        "hardware-platform",
        "operating-system",
        "help",
        "version",
    ],
    refused: &[],
    numeric: false,
    abbrev: true,
    ..Spec::EMPTY
};

pub(super) const ID: Spec = Spec {
    short: "aZgGnruz",
    long: &[
        "context", "group", "groups", "name", "real", "user", "zero", "help", "version",
    ],
    refused: &[],
    numeric: false,
    abbrev: true,
    ..Spec::EMPTY
};

pub(super) const JUST_HELP: Spec = Spec {
    short: "",
    long: &["help", "version"],
    refused: &[],
    numeric: false,
    abbrev: true,
    ..Spec::EMPTY
};

pub(super) const HOSTNAME: Spec = Spec {
    short: "aAdfiIsyV",
    long: &[
        "alias",
        "all-fqdns",
        "domain",
        "fqdn",
        "long",
        "ip-address",
        "all-ip-addresses",
        "short",
        "yp",
        "nis",
        "help",
        "version",
    ],
    refused: &[
        ("b", "sets the host name"),
        ("boot", "sets the host name"),
        ("F", "sets the host name from a file"),
        ("file", "sets the host name from a file"),
    ],
    numeric: false,
    abbrev: true,
    ..Spec::EMPTY
};

pub(super) const NPROC: Spec = Spec {
    short: "",
    long: &["all", "ignore=", "help", "version"],
    refused: &[],
    numeric: false,
    abbrev: true,
    ..Spec::EMPTY
};

pub(super) const FREE: Spec = Spec {
    short: "bkmghltvwVs:c:",
    long: &[
        "bytes",
        "kilo",
        "mega",
        "giga",
        "tera",
        "peta",
        "kibi",
        "mebi",
        "gibi",
        "tebi",
        "pebi",
        "human",
        "si",
        "lohi",
        "total",
        "committed",
        "seconds=",
        "count=",
        "wide",
        "help",
        "version",
    ],
    refused: &[],
    numeric: false,
    abbrev: true,
    ..Spec::EMPTY
};

pub(super) const UPTIME: Spec = Spec {
    short: "phsV",
    long: &["pretty", "help", "since", "version"],
    refused: &[],
    numeric: false,
    abbrev: true,
    ..Spec::EMPTY
};

pub(super) const DATE: Spec = Spec {
    short: "d:f@I::Rr@u",
    long: &[
        "date=",
        "debug",
        "file=@",
        "iso-8601=?",
        "resolution",
        "rfc-email",
        "rfc-3339=",
        "reference=@",
        "utc",
        "universal",
        "help",
        "version",
    ],
    refused: &[("s", "sets the clock"), ("set", "sets the clock")],
    numeric: false,
    abbrev: true,
    ..Spec::EMPTY
};

pub(super) const SEQ: Spec = Spec {
    short: "f:s:w",
    long: &["format=", "separator=", "equal-width", "help", "version"],
    refused: &[],
    numeric: false,
    abbrev: true,
    ..Spec::EMPTY
};

pub(super) const WHICH: Spec = Spec {
    short: "as",
    long: &[],
    refused: &[],
    numeric: false,
    abbrev: false,
    ..Spec::EMPTY
};

pub fn judge(name: &str, args: &[Word]) -> Result<Reads, String> {
    let none = |spec: &Spec| with_spec(spec, args, Operands::None).map(|(_, r)| r);
    let text = |spec: &Spec| with_spec(spec, args, Operands::Text).map(|(_, r)| r);
    match name {
        "uname" => none(&UNAME),
        "whoami" | "arch" => none(&JUST_HELP),
        "hostname" => none(&HOSTNAME).map_err(|e| format!("hostname {e}")),
        "nproc" => none(&NPROC),
        "free" => none(&FREE),
        "uptime" => none(&UPTIME),
        "id" => text(&ID),
        "seq" => text(&SEQ),
        "sleep" => text(&JUST_HELP),
        "which" => text(&WHICH),
        "date" => {
            let (p, reads) = with_spec(&DATE, args, Operands::Text)?;
            // A date may name its own time zone file (`TZ="../x" now`), which the C library
            // opens from anywhere; a file of dates may hold such names too.
            if p.has(&["-f", "--file"]) {
                return Err("date -f reads dates that may name time zone files".into());
            }
            if p.dynamic {
                return Err("date has an option value known only at run time".into());
            }
            if let Some(why) = p
                .options
                .iter()
                .filter(|(o, _)| o == "-d" || o == "--date")
                .find_map(|(_, v)| v.as_deref().and_then(names_time_zone_file))
            {
                return Err(format!("date -d {why}"));
            }
            // date [+FORMAT]; any other operand sets the clock.
            if let Some(w) = p
                .operands
                .iter()
                .find(|w| !w.text().is_some_and(|t| t.starts_with('+')))
            {
                return Err(format!("date {} sets the clock", w.raw));
            }
            Ok(reads)
        }
        _ => Err(format!("{name} is not a program the gate knows")),
    }
}

/// Why a date string (GNU's `parse_datetime`, as `date -d` and `find -newermt` read it) may
/// open a file: `TZ="…"` names a time zone, which the C library reads from any path.
pub(super) fn names_time_zone_file(date: &str) -> Option<String> {
    date.to_ascii_uppercase()
        .contains("TZ=")
        .then(|| format!("{date:?} names a time zone, which may be read from any file"))
}
