//! Writing to stdout, for the `println!` and `print!` every command uses (see main.rs).

use std::io::Write;

/// Write `args` to stdout. When its reader has gone (`stepper sessions | head`) the program
/// ends at once and quietly, as a Unix tool killed by SIGPIPE would (ripgrep does the same);
/// any other failure to write is said on stderr and ends it with exit code 1.
pub fn print(args: std::fmt::Arguments<'_>) {
    let written = {
        let mut out = std::io::stdout().lock();
        out.write_fmt(args).and_then(|()| out.flush())
    };
    if let Err(e) = written {
        crate::remote::close();
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("stepper: cannot write to stdout: {e}");
        std::process::exit(i32::from(crate::exit::FAILED));
    }
}
