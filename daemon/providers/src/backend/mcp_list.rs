//! `claude mcp list`, read: the MCP servers Claude Code has, as it prints them.
//!
//! Versions print one server a line, `name: target`, later ones with the transport in
//! parentheses and a health check after ` - ` (`✓ Connected`, `✗ Failed to connect`,
//! `⚠ Needs authentication`); lines that are not servers (the "Checking…" header, "No MCP
//! servers configured…") are skipped. Tests hold output recorded from real versions (1.0.128,
//! 2.0.0, 2.1.332: the same three servers, one connected, two unreachable).

pub use stepper_protocol::methods::BackendMcpServer as McpEntry;
use stepper_protocol::methods::McpTransport;

/// The servers in `claude mcp list`'s output.
pub fn parse(output: &str) -> Vec<McpEntry> {
    output.lines().filter_map(parse_line).collect()
}

fn parse_line(line: &str) -> Option<McpEntry> {
    let line = line.trim_end();
    if line.is_empty() || line.starts_with(char::is_whitespace) {
        return None;
    }
    let (name, rest) = line.split_once(": ")?;
    // A server's name is a single word (`claude mcp add` refuses others).
    if name.is_empty() || name.contains(char::is_whitespace) {
        return None;
    }
    // The health check follows the first ` - ` that a status follows (a command line may
    // hold ` - ` too, and the check's message may).
    let (target, status) = match rest
        .match_indices(" - ")
        .map(|(at, _)| at)
        .find(|&at| is_status(&rest[at + 3..]))
    {
        Some(at) => (&rest[..at], Some(status_text(&rest[at + 3..]))),
        None => (rest, None),
    };
    let (target, transport) = match target.rsplit_once(" (") {
        Some((url, kind)) if kind == "HTTP)" || kind == "SSE)" => {
            (url, kind.trim_end_matches(')').to_lowercase())
        }
        _ if target.starts_with("http://") || target.starts_with("https://") => {
            (target, "http".to_string())
        }
        _ => (target, "stdio".to_string()),
    };
    Some(McpEntry {
        name: name.to_string(),
        target: target.trim().to_string(),
        transport: McpTransport::parse(&transport),
        status,
    })
}

fn is_status(text: &str) -> bool {
    let marks = ['✓', '✗', '⚠', '✔', '✘', '!'];
    text.starts_with(marks)
        || ["Connected", "Failed", "Needs", "Pending", "Disabled"]
            .iter()
            .any(|w| text.starts_with(w))
}

fn status_text(text: &str) -> String {
    text.trim_start_matches(['✓', '✗', '⚠', '✔', '✘', '!'])
        .trim()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> String {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/claude-mcp-list")
            .join(name);
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    #[test]
    fn output_of_2_1_with_health_checks() {
        let servers = parse(&fixture("2.1.332.txt"));
        let names: Vec<_> = servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["remote", "legacy", "everything"], "{servers:?}");
        assert_eq!(servers[0].transport.as_str(), "http");
        assert_eq!(servers[0].target, "http://127.0.0.1:9/mcp");
        assert_eq!(servers[1].transport.as_str(), "sse");
        assert_eq!(servers[2].transport.as_str(), "stdio");
        assert_eq!(servers[2].target, "python3 /tmp/cc/mini_mcp.py");
        assert_eq!(servers[2].status.as_deref(), Some("Connected"));
        assert!(
            servers[0]
                .status
                .as_deref()
                .unwrap()
                .starts_with("Failed to connect"),
            "{servers:?}"
        );
    }

    #[test]
    fn output_of_1_0_and_2_0() {
        for version in ["1.0.128.txt", "2.0.0.txt"] {
            let servers = parse(&fixture(version));
            let names: Vec<_> = servers.iter().map(|s| s.name.as_str()).collect();
            assert_eq!(
                names,
                ["everything", "remote", "legacy"],
                "{version}: {servers:?}"
            );
            assert_eq!(servers[0].target, "python3 /tmp/cc/mini_mcp.py");
            assert_eq!(servers[0].transport.as_str(), "stdio");
            assert_eq!(servers[0].status.as_deref(), Some("Connected"));
            assert_eq!(servers[1].target, "http://127.0.0.1:9/mcp");
            assert_eq!(servers[1].transport.as_str(), "http");
            assert_eq!(servers[1].status.as_deref(), Some("Failed to connect"));
            assert_eq!(servers[2].transport.as_str(), "sse");
        }
    }

    #[test]
    fn nothing_configured_is_no_servers() {
        assert!(
            parse("No MCP servers configured. Use `claude mcp add` to add a server.\n").is_empty()
        );
        assert!(parse("Checking MCP server health...\n\n").is_empty());
    }

    #[test]
    fn an_older_line_without_health_check() {
        let servers = parse("fs: npx -y @modelcontextprotocol/server-filesystem /tmp\n");
        assert_eq!(servers.len(), 1);
        assert_eq!(servers[0].status, None);
        assert_eq!(servers[0].transport.as_str(), "stdio");
        assert_eq!(
            servers[0].target,
            "npx -y @modelcontextprotocol/server-filesystem /tmp"
        );
    }
}
