//! Shell lines, understood with a real grammar (tree-sitter-bash): the simple commands a line
//! runs, and the constructs that make its effect impossible to judge from them — which then
//! escalate to asking.
//!
//! Every simple command is found wherever it hides: after `&&`, `||`, `;`, `|`, `&`, inside
//! subshells and braces. Redirections to files, `$(...)`, backticks, process substitution,
//! here-documents, control flow, function definitions, variable assignments and anything the
//! parser does not understand are reported as risky.

use tree_sitter::{Node, Parser};

/// What a command line does, as far as can be told.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Analysis {
    /// Each simple command: its words, quotes removed where they are plain.
    pub commands: Vec<Vec<String>>,
    /// Why the line cannot be judged by its commands alone (empty when it can).
    pub risky: Vec<String>,
}

/// Parse `line` and collect its commands and risks.
pub fn analyse(line: &str) -> Analysis {
    let mut analysis = Analysis::default();
    let mut parser = Parser::new();
    if parser
        .set_language(&tree_sitter_bash::LANGUAGE.into())
        .is_err()
    {
        analysis
            .risky
            .push("the shell grammar could not be loaded".into());
        return analysis;
    }
    let Some(tree) = parser.parse(line, None) else {
        analysis.risky.push("the line could not be parsed".into());
        return analysis;
    };
    let root = tree.root_node();
    if root.has_error() {
        analysis
            .risky
            .push("the line is not valid shell syntax".into());
    }
    walk(root, line.as_bytes(), &mut analysis);
    if analysis.commands.is_empty() && analysis.risky.is_empty() {
        analysis.risky.push("no command found".into());
    }
    analysis
}

fn text<'a>(node: Node<'_>, src: &'a [u8]) -> &'a str {
    node.utf8_text(src).unwrap_or("")
}

fn walk(node: Node<'_>, src: &[u8], out: &mut Analysis) {
    let risk = |out: &mut Analysis, what: &str| {
        out.risky
            .push(format!("{what}: {}", text(node, src).trim()))
    };
    match node.kind() {
        "command" => {
            command(node, src, out);
            return;
        }
        "command_substitution" => risk(out, "command substitution"),
        "process_substitution" => risk(out, "process substitution"),
        "heredoc_redirect" | "herestring_redirect" => risk(out, "here-document"),
        "file_redirect" if !harmless_redirect(node, src) => risk(out, "redirection"),
        "function_definition" => risk(out, "function definition"),
        "if_statement"
        | "for_statement"
        | "c_style_for_statement"
        | "while_statement"
        | "case_statement" => risk(out, "control flow"),
        "variable_assignment" | "declaration_command" | "unset_command" => {
            risk(out, "variable assignment")
        }
        "arithmetic_expansion" => risk(out, "arithmetic expansion"),
        "ERROR" => risk(out, "unparsable"),
        _ => {}
    }
    if node.is_missing() {
        out.risky.push("incomplete line".into());
    }
    let mut cursor = node.walk();
    for child in node.children(&mut cursor) {
        walk(child, src, out);
    }
}

/// `2>&1`, `>&2`, `>/dev/null`, `2>/dev/null`: no file written.
fn harmless_redirect(node: Node<'_>, src: &[u8]) -> bool {
    let t = text(node, src).replace(' ', "");
    let target = t.trim_start_matches(|c: char| c.is_ascii_digit() || c == '&');
    matches!(target, ">&1" | ">&2" | ">/dev/null" | ">>/dev/null" | "<&0")
        || t.ends_with(">/dev/null") && !t.contains(">>")
        || t == ">&2"
        || t == "2>&1"
        || t == "1>&2"
}

fn command(node: Node<'_>, src: &[u8], out: &mut Analysis) {
    let mut words = Vec::new();
    let mut cursor = node.walk();
    for child in node.children(&mut cursor) {
        match child.kind() {
            "variable_assignment" => out
                .risky
                .push(format!("environment assignment: {}", text(child, src))),
            "command_name" => {
                let name = text(child, src);
                if name.contains('$') || name.contains('`') {
                    out.risky
                        .push(format!("a command name that is computed: {name}"));
                }
                walk_inner(child, src, out);
                words.push(unquote(name));
            }
            "file_redirect" | "heredoc_redirect" | "herestring_redirect" => walk(child, src, out),
            _ => {
                walk_inner(child, src, out);
                words.push(unquote(text(child, src)));
            }
        }
    }
    if !words.is_empty() {
        out.commands.push(words);
    }
}

/// Risks inside a word (`echo $(rm x)`), without counting the word as a command.
fn walk_inner(node: Node<'_>, src: &[u8], out: &mut Analysis) {
    let mut cursor = node.walk();
    for child in node.children(&mut cursor) {
        walk(child, src, out);
    }
    if matches!(node.kind(), "command_substitution" | "process_substitution") {
        walk(node, src, out);
    }
}

/// Plain quoting removed: `'a b'` → `a b`, `"x"` → `x`, `\ ` → ` `.
fn unquote(word: &str) -> String {
    let w = word.trim();
    if w.len() >= 2
        && ((w.starts_with('\'') && w.ends_with('\'')) || (w.starts_with('"') && w.ends_with('"')))
    {
        return w[1..w.len() - 1].to_string();
    }
    w.replace("\\ ", " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmds(line: &str) -> Vec<String> {
        analyse(line).commands.iter().map(|c| c.join(" ")).collect()
    }

    #[test]
    fn every_simple_command_is_found() {
        assert_eq!(cmds("ls -la"), ["ls -la"]);
        assert_eq!(cmds("npm test && rm -rf dist"), ["npm test", "rm -rf dist"]);
        assert_eq!(cmds("cat a | grep b | wc -l"), ["cat a", "grep b", "wc -l"]);
        assert_eq!(
            cmds("(cd x; make) || echo 'no make'"),
            ["cd x", "make", "echo no make"]
        );
        assert_eq!(cmds("git status; git diff"), ["git status", "git diff"]);
        assert!(analyse("ls -la").risky.is_empty());
        assert!(
            analyse("cargo test 2>&1").risky.is_empty(),
            "{:?}",
            analyse("cargo test 2>&1")
        );
        assert!(
            analyse("ls > /dev/null").risky.is_empty(),
            "{:?}",
            analyse("ls > /dev/null")
        );
    }

    #[test]
    fn risky_constructs_are_reported() {
        for line in [
            "echo $(whoami)",
            "echo `id`",
            "diff <(ls a) <(ls b)",
            "ls > out.txt",
            "cat <<EOF\nx\nEOF",
            "FOO=1 ls",
            "if true; then ls; fi",
            "f() { ls; }",
            "ls &&",
            "$CMD -x",
            "echo \"$(rm -rf /)\"",
        ] {
            assert!(!analyse(line).risky.is_empty(), "{line:?} should be risky");
        }
    }
}
