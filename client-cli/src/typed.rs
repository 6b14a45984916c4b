//! What the user types at the terminal, for the commands that ask a question.

/// A line typed at the terminal; `None` at its end (Ctrl-D) or when it cannot be read.
pub(crate) async fn read_line() -> Option<String> {
    tokio::task::spawn_blocking(|| {
        let mut line = String::new();
        match std::io::stdin().read_line(&mut line) {
            Ok(0) | Err(_) => None,
            Ok(_) => Some(line),
        }
    })
    .await
    .ok()
    .flatten()
}
