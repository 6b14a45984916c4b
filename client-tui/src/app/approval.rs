//! What answering an approval does: the scope of its "always", in the daemon's terms.

use super::Approval;
use crate::wrap::truncate;

/// Commands of a line named in the scope; the rest are counted.
const SCOPE_COMMANDS: usize = 3;

impl Approval {
    /// What "always" lets through without asking, as the daemon words the rules it adds for
    /// the answer (`Policy::rules_for`): each command of a line exactly, an edited or read
    /// file, a fetched domain and its subdomains, an MCP server's tool, a tool by name. Those
    /// rules live in the turn's policy, so they hold until the turn ends. None when no rule
    /// can stand for the request (leaving the sandbox is asked every time).
    pub(crate) fn always_scope(&self) -> Option<String> {
        always_scope(self)
    }
}

fn always_scope(a: &Approval) -> Option<String> {
    let target = a.command.as_deref().unwrap_or("").trim();
    let file = |path: &str| match path {
        "" => "this file".to_string(),
        path => truncate(path, 80),
    };
    let quoted = |s: &str| format!("`{}`", truncate(s.trim(), 60));
    Some(match a.tool.as_str() {
        // The daemon's words for a command that failed in the sandbox (`Policy::unsandboxed`).
        "bash" if a.summary.starts_with("run it again outside the sandbox") => return None,
        "bash" => {
            let commands = shell_commands(target);
            match commands.as_slice() {
                [] => return None,
                [one] => quoted(one),
                many => {
                    let mut named: Vec<String> = many
                        .iter()
                        .take(SCOPE_COMMANDS)
                        .map(|c| quoted(c))
                        .collect();
                    if many.len() > SCOPE_COMMANDS {
                        named.push(format!("{} more", many.len() - SCOPE_COMMANDS));
                    }
                    format!("{} (each as written)", named.join(", "))
                }
            }
        }
        "edit" | "write" | "multi_edit" => format!("edits to {}", file(target)),
        "read" => format!("reads of {}", file(target)),
        "web_fetch" => format!("fetches from {} (and its subdomains)", host_of(target)),
        tool => match tool.strip_prefix("mcp__").and_then(|t| t.split_once("__")) {
            Some((server, tool)) => format!("{tool} of the MCP server {server}"),
            None => tool.to_string(),
        },
    })
}

/// The simple commands of a shell line, split at its operators outside quotes. The daemon
/// parses the line properly; this is only for saying what an answer covers.
fn shell_commands(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut quote: Option<char> = None;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => {
                quote = None;
                current.push(c);
            }
            (Some(_), c) => current.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                current.push(c);
            }
            (None, '\\') => {
                current.push(c);
                if let Some(next) = chars.next() {
                    current.push(next);
                }
            }
            // `2>&1`, `&>`: a redirection, not an operator.
            (None, '&') if current.ends_with('>') || chars.peek() == Some(&'>') => {
                current.push(c);
            }
            (None, ';' | '|' | '&' | '\n') => {
                while chars.peek().is_some_and(|n| matches!(n, '|' | '&')) {
                    chars.next();
                }
                out.push(std::mem::take(&mut current));
            }
            (None, c) => current.push(c),
        }
    }
    out.push(current);
    out.into_iter()
        .map(|c| c.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|c| !c.is_empty())
        .collect()
}

/// The host of a URL, lowercased, as the daemon matches fetch rules.
fn host_of(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = authority.rsplit('@').next().unwrap_or("");
    let host = match host.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(v6),
        None => host.split(':').next().unwrap_or(host),
    };
    host.to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_splits_at_its_operators_outside_quotes() {
        assert_eq!(
            shell_commands("cargo build && cargo test 2>&1 | tail -n 5; echo 'a;b' \\| x"),
            [
                "cargo build",
                "cargo test 2>&1",
                "tail -n 5",
                "echo 'a;b' \\| x"
            ]
        );
        assert_eq!(shell_commands("  "), Vec::<String>::new());
    }

    #[test]
    fn hosts_are_found_as_the_daemon_finds_them() {
        assert_eq!(host_of("https://user@Docs.RS:443/jwt?q#f"), "docs.rs");
        assert_eq!(host_of("http://[::1]:8080/"), "::1");
    }
}
