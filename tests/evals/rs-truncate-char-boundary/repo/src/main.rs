use std::io::{self, BufRead, Write};

use feedline::format_headline;
use feedline::headline::parse_line;

fn main() -> io::Result<()> {
    let width = std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(48);
    let stdout = io::stdout();
    let mut out = stdout.lock();
    for line in io::stdin().lock().lines() {
        if let Some(entry) = parse_line(&line?) {
            writeln!(out, "{}", format_headline(&entry, 10, width))?;
        }
    }
    Ok(())
}
