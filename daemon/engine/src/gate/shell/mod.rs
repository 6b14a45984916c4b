//! Shell lines as bash will run them: the simple commands a line runs, each as the words bash
//! hands the program, and every construct that makes the line's effect impossible to judge
//! from those commands — which then asks.
//!
//! tree-sitter-bash finds the structure; it is not trusted with the words. Each word's text
//! is lexed again the way bash lexes it ([`word`]), and the bytes between the parser's tokens
//! must be blanks bash would also skip, so a line where the two disagree (a backslash-newline
//! joining two tokens, a word that bash splits) asks. Only constructs on an allow-list are
//! judged: lists, pipelines, subshells, braces, `!`, simple commands, `[ … ]`, comments,
//! and redirections that read a file or write nowhere. Everything else — control flow,
//! functions, assignments, here-documents, `[[ … ]]`, substitutions, parse errors — asks.
//!
//! The walk is iterative and stops at a fixed depth, and parsing stops after a fixed time:
//! no line can exhaust the daemon's stack or hold a turn, it is asked about instead.
//!
//! *Shell lines are judged on bash's semantics, not the parser's*: tree-sitter-bash gives the
//! structure, but its words are re-lexed as bash lexes them, and the text between its tokens must
//! be what bash skips, so the two cannot disagree silently (a backslash-newline joining tokens, a
//! word after a redirection, `[ a > b ]` being a redirection for bash). tree-sitter-bash's scanner
//! calls C's `isdigit` on code points past its table (a 17-byte line crashed the process), so the
//! parser sees non-ASCII as `x`: same offsets, same structure.
//!
//! *Bytes as bash reads them*: bash lexes a line by characters of its locale, so non-ASCII text
//! under a locale that is not UTF-8 asks; a line continuation inside a word, or a bare newline
//! between the words of one command, asks (tree-sitter and bash disagree there).

pub mod pattern;
pub mod word;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use tree_sitter::{Node, ParseOptions, ParseState, Parser};

pub use pattern::Pattern;
pub use word::{Value, Word};

/// Lines longer than this are not parsed: asked about as they are.
const MAX_LINE: usize = 256 * 1024;
/// Parsing longer than this gives up (a pathological line), and the line asks. A 60 KB line of
/// ordinary commands parses in about 7 ms.
const MAX_PARSE: Duration = Duration::from_millis(50);
/// Syntax-tree depth beyond which the walk stops, and the line asks.
const MAX_DEPTH: usize = 256;

/// What a command line does, as far as can be told.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Analysis {
    /// Each simple command, in order, with the words bash gives it.
    pub commands: Vec<SimpleCommand>,
    /// Files the line reads through `<` redirections.
    pub reads: Vec<Word>,
    /// Why the line cannot be judged by its commands alone (empty when it can).
    pub risky: Vec<String>,
    /// The analysis stopped early (too long, too deep, too slow): commands may be missing.
    pub incomplete: bool,
}

/// One simple command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimpleCommand {
    /// The command name first, then its arguments, redirections taken out.
    pub words: Vec<Word>,
    /// Inside a substitution or a construct that asks (control flow, a function). Such a
    /// line asks anyway; these are found so that deny rules hold for them too.
    pub nested: bool,
}

impl SimpleCommand {
    /// The command as written, words joined with spaces (for messages and rules).
    pub fn shown(&self) -> String {
        self.words
            .iter()
            .map(Word::shown)
            .collect::<Vec<_>>()
            .join(" ")
    }
}

impl Analysis {
    fn risk(&mut self, why: impl Into<String>) {
        let why = why.into();
        if !self.risky.contains(&why) {
            self.risky.push(why);
        }
    }

    fn give_up(&mut self, why: impl Into<String>) -> Analysis {
        self.risk(why);
        self.incomplete = true;
        std::mem::take(self)
    }
}

/// Parse `line` and collect its commands and risks.
pub fn analyse(line: &str) -> Analysis {
    let mut analysis = Analysis::default();
    if line.len() > MAX_LINE {
        return analysis.give_up(format!(
            "a line longer than {} KiB, which the gate does not read",
            MAX_LINE / 1024
        ));
    }
    if let Some(depth) = too_deep(line.as_bytes()) {
        return analysis.give_up(format!(
            "brackets nested {depth} deep, deeper than the gate follows ({MAX_DEPTH})"
        ));
    }
    let mut parser = Parser::new();
    if parser
        .set_language(&tree_sitter_bash::LANGUAGE.into())
        .is_err()
    {
        return analysis.give_up("the shell grammar could not be loaded");
    }
    let started = Instant::now();
    let mut too_slow = |_: &ParseState| started.elapsed() > MAX_PARSE;
    let bytes = line.as_bytes();
    // tree-sitter-bash's scanner hands non-ASCII characters to C's `isdigit`, whose table
    // they overrun: a 17-byte line crashed the daemon. The parser sees them as `x` instead —
    // every character bash treats specially is ASCII, and a run of `x` is a word character
    // like any other letter, so the structure and every byte offset stay the same. Words
    // are read from the line itself.
    let masked: Vec<u8> = bytes
        .iter()
        .map(|&b| if b.is_ascii() { b } else { b'x' })
        .collect();
    let tree = parser.parse_with_options(
        &mut |i, _| masked.get(i..).unwrap_or_default(),
        None,
        Some(ParseOptions::new().progress_callback(&mut too_slow)),
    );
    let Some(tree) = tree else {
        return analysis.give_up("a line too complex to parse in time");
    };
    let root = tree.root_node();
    if root.has_error() {
        analysis.risk("the line is not valid shell syntax");
    }
    let mut walk = Walk {
        src: bytes,
        out: analysis,
        units: Vec::new(),
        pending: HashMap::new(),
        owner: None,
    };
    walk.run(root);
    let mut analysis = walk.out;
    if analysis.risky.is_empty() {
        check_gaps(bytes, &mut walk.units, &mut analysis);
    }
    if analysis.commands.is_empty() && analysis.risky.is_empty() {
        analysis.risk("no command found");
    }
    analysis
}

/// Where a node is met: in the line's own statements, inside a word, or in statements
/// nested in a substitution or in a construct that already asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Context {
    Statement,
    Word,
    Nested,
}

/// A token of the line as the parser cut it, for the check of what lies between tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Unit {
    start: usize,
    end: usize,
    kind: UnitKind,
    /// The command (or test) the parser put it in: a newline inside one ends it for bash.
    owner: Option<usize>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum UnitKind {
    Word,
    Operator,
    Comment,
}

struct Walk<'a> {
    src: &'a [u8],
    out: Analysis,
    units: Vec<Unit>,
    /// Words a redirection swallowed, by the command node they belong to.
    pending: HashMap<usize, Vec<Word>>,
    /// The command whose words are being read.
    owner: Option<usize>,
}

/// Tokens between statements the gate understands.
const OPERATORS: &[&str] = &[
    "&&", "||", ";", "|", "|&", "&", "(", ")", "{", "}", "!", "\n",
];

impl Walk<'_> {
    fn text(&self, node: Node<'_>) -> &str {
        std::str::from_utf8(&self.src[node.start_byte()..node.end_byte()]).unwrap_or("")
    }

    fn unit(&mut self, node: Node<'_>, kind: UnitKind, context: Context) {
        if context == Context::Statement {
            self.units.push(Unit {
                start: node.start_byte(),
                end: node.end_byte(),
                kind,
                owner: self.owner,
            });
        }
    }

    /// A risk met in the line's own statements. Inside a substitution the enclosing word
    /// has already made the line ask; what lies within only matters for deny rules.
    fn risk_in(&mut self, context: Context, why: impl Into<String>) {
        if context != Context::Nested {
            self.out.risk(why);
        }
    }

    fn word(&mut self, node: Node<'_>, context: Context) -> Word {
        self.unit(node, UnitKind::Word, context);
        let word = Word::parse(self.text(node));
        if let Value::Unsafe(why) = &word.value {
            self.out.risk(format!("{why}: {}", shorten(&word.raw)));
        }
        word
    }

    fn run(&mut self, root: Node<'_>) {
        let mut stack = vec![(root, 0usize, Context::Statement)];
        while let Some((node, depth, context)) = stack.pop() {
            if depth > MAX_DEPTH {
                self.out
                    .risk(format!("nesting deeper than {MAX_DEPTH} levels"));
                self.out.incomplete = true;
                continue;
            }
            if node.is_missing() {
                self.out.risk("an incomplete line");
            }
            let children = match context {
                Context::Word => {
                    let inner =
                        if matches!(node.kind(), "command_substitution" | "process_substitution") {
                            Context::Nested
                        } else {
                            Context::Word
                        };
                    children(node, inner)
                }
                Context::Statement | Context::Nested => self.statement(node, context),
            };
            for (child, child_context) in children.into_iter().rev() {
                // Chains (`a && b && c`, `a | b`) and redirections nest in the tree, one
                // level per link, but not in the line: they do not count as depth.
                let flat = matches!(
                    child.kind(),
                    "program" | "list" | "pipeline" | "redirected_statement" | "negated_command"
                );
                stack.push((child, depth + usize::from(!flat), child_context));
            }
        }
    }

    /// A node in statement position; returns the children still to visit.
    fn statement<'t>(&mut self, node: Node<'t>, context: Context) -> Vec<(Node<'t>, Context)> {
        if !node.is_named() {
            if OPERATORS.contains(&node.kind()) {
                self.unit(node, UnitKind::Operator, context);
            } else {
                self.risk_in(
                    context,
                    format!("{:?}, which the gate does not model", node.kind()),
                );
            }
            return Vec::new();
        }
        match node.kind() {
            "program" | "list" | "pipeline" | "subshell" | "compound_statement"
            | "negated_command" => children(node, context),
            "redirected_statement" => {
                let body = node.child_by_field_name("body");
                let mut visit = Vec::new();
                for (child, _) in children(node, context) {
                    match child.kind() {
                        "file_redirect" | "herestring_redirect" | "heredoc_redirect" => {
                            let (more, extra) = self.redirect(child, context);
                            visit.extend(more);
                            match body.filter(|b| b.kind() == "command") {
                                // The body is visited after this; it takes the words then.
                                Some(b) => self.pending.entry(b.id()).or_default().extend(extra),
                                None if !extra.is_empty() => self.risk_in(
                                    context,
                                    format!(
                                        "words after a redirection: {}",
                                        self.text(child).trim()
                                    ),
                                ),
                                None => {}
                            }
                        }
                        _ => visit.push((child, context)),
                    }
                }
                // The body first, in source order.
                visit.sort_by_key(|(n, _)| n.start_byte());
                visit
            }
            "command" => self.command(node, context),
            "test_command" => self.test(node, context),
            "comment" => {
                self.unit(node, UnitKind::Comment, context);
                Vec::new()
            }
            // Once a construct asks, what lies within only matters for deny rules.
            "ERROR" => {
                self.risk_in(context, "the line is not valid shell syntax");
                children(node, Context::Nested)
            }
            kind => {
                let why = describe(kind, self.text(node));
                self.risk_in(context, why);
                children(node, Context::Nested)
            }
        }
    }

    fn command<'t>(&mut self, node: Node<'t>, context: Context) -> Vec<(Node<'t>, Context)> {
        let mut words = Vec::new();
        let mut visit = Vec::new();
        self.owner = Some(node.id());
        for (child, _) in children(node, context) {
            match child.kind() {
                "variable_assignment" => {
                    self.unit(child, UnitKind::Word, context);
                    self.risk_in(
                        context,
                        format!("an environment assignment: {}", self.text(child).trim()),
                    );
                    visit.push((child, Context::Word));
                }
                "file_redirect" | "herestring_redirect" | "heredoc_redirect" => {
                    let (more, extra) = self.redirect(child, context);
                    visit.extend(more);
                    words.extend(extra);
                }
                kind if !child.is_named() || kind == "subshell" => {
                    self.unit(child, UnitKind::Operator, context);
                    self.risk_in(context, format!("{kind:?} where a word was expected"));
                    visit.push((child, context));
                }
                _ => {
                    words.push(self.word(child, context));
                    visit.push((child, Context::Word));
                }
            }
        }
        self.owner = None;
        words.extend(self.pending.remove(&node.id()).unwrap_or_default());
        self.out.commands.push(SimpleCommand {
            words,
            nested: context == Context::Nested,
        });
        visit
    }

    /// `[ … ]` and `[[ … ]]`: a command named `[` or `[[` with its words. tree-sitter reads
    /// both as expressions; bash runs `[` as a simple command, where `<`, `>` and `&&` are
    /// not comparisons, and reads `[[` itself, where they are (its words are neither split
    /// nor expanded as file names, and its arithmetic operators evaluate their operands:
    /// the test judge requires plain numbers there).
    fn test<'t>(&mut self, node: Node<'t>, context: Context) -> Vec<(Node<'t>, Context)> {
        let double = node.child(0).map(|c| c.kind()) == Some("[[");
        self.owner = Some(node.id());
        let index = self.out.commands.len();
        self.out.commands.push(SimpleCommand {
            words: Vec::new(),
            nested: context == Context::Nested,
        });
        let mut visit = Vec::new();
        let mut stack = vec![node];
        let mut leaves = Vec::new();
        // The expression's leaves, in order (its depth is bounded by the line's).
        while let Some(n) = stack.pop() {
            if n.id() == node.id()
                || matches!(
                    n.kind(),
                    "binary_expression" | "unary_expression" | "parenthesized_expression"
                )
            {
                let mut cursor = n.walk();
                let kids: Vec<Node<'t>> = n.children(&mut cursor).collect();
                stack.extend(kids.into_iter().rev());
            } else {
                leaves.push(n);
            }
        }
        for leaf in leaves {
            let kind = leaf.kind();
            if !leaf.is_named() {
                let word = matches!(kind, "[" | "]" | "=" | "==" | "!=" | "!" | "=~");
                let logic = double
                    && matches!(
                        kind,
                        "[[" | "]]"
                            | "&&"
                            | "||"
                            | "("
                            | ")"
                            | "<"
                            | ">"
                            | "="
                            | "=="
                            | "!="
                            | "!"
                            | "=~"
                    );
                if logic {
                    // An operator of `[[`: a word of the test for the judge. For bash `&&`,
                    // `||`, parentheses, `<` and `>` are tokens, the rest words.
                    let token = matches!(kind, "&&" | "||" | "(" | ")" | "<" | ">");
                    let unit = if token || matches!(kind, "[[" | "]]" | "!") {
                        UnitKind::Operator
                    } else {
                        UnitKind::Word
                    };
                    self.unit(leaf, unit, context);
                    self.out.commands[index].words.push(Word::literal(kind));
                    continue;
                }
                if !word {
                    self.unit(leaf, UnitKind::Operator, context);
                    let why = format!(
                        "{kind:?} inside [ … ], which bash reads as shell syntax, not a test"
                    );
                    self.risk_in(context, why);
                    continue;
                }
            }
            if double && kind == "regex" {
                // `=~`'s right side: a regular expression, not a file name pattern; only an
                // expansion in it would matter.
                self.unit(leaf, UnitKind::Word, context);
                let text = self.text(leaf).to_string();
                // Bash still expands in it: `$…`, backticks, and `<(…)`/`>(…)`, which run
                // commands.
                let b = text.as_bytes();
                let expands = b.iter().any(|&c| matches!(c, b'`' | b'<' | b'>' | b'\\'))
                    || b.iter().enumerate().any(|(i, &c)| {
                        c == b'$'
                            && b.get(i + 1).is_some_and(|&n| {
                                n.is_ascii_alphanumeric() || b"_{([?#$!@*-'\"".contains(&n)
                            })
                    });
                if expands {
                    let why = format!("an expansion in a [[ … ]] regular expression: {text}");
                    self.risk_in(context, why);
                }
                self.out.commands[index].words.push(Word::literal(&text));
                continue;
            }
            let mut word = self.word(leaf, context);
            if double && let Value::Pattern(p) = &word.value {
                // `[[` expands no file names: `*` is matched against a string, if at all.
                word.value = Value::Literal(p.text());
            }
            self.out.commands[index].words.push(word);
            visit.push((leaf, Context::Word));
        }
        self.owner = None;
        visit
    }

    /// A redirection; returns the nodes still to visit, and the words after its target that
    /// the parser attached to it but bash gives to the command.
    fn redirect<'t>(
        &mut self,
        node: Node<'t>,
        context: Context,
    ) -> (Vec<(Node<'t>, Context)>, Vec<Word>) {
        let mut visit = Vec::new();
        match node.kind() {
            "heredoc_redirect" => {
                self.risk_in(context, "a here-document");
                return (children(node, context), Vec::new());
            }
            "herestring_redirect" => {
                for (child, _) in children(node, context) {
                    if child.is_named() {
                        // Text on standard input: any word that runs nothing will do.
                        self.word(child, context);
                        visit.push((child, Context::Word));
                    } else {
                        self.unit(child, UnitKind::Operator, context);
                    }
                }
                return (visit, Vec::new());
            }
            _ => {}
        }
        let mut op = None;
        let mut targets = Vec::new();
        for (child, _) in children(node, context) {
            if child.kind() == "file_descriptor" {
                self.unit(child, UnitKind::Word, context);
            } else if !child.is_named() {
                self.unit(child, UnitKind::Operator, context);
                op = Some(child.kind());
            } else {
                targets.push(self.word(child, context));
                visit.push((child, Context::Word));
            }
        }
        let op = op.unwrap_or("");
        let mut targets = targets.into_iter();
        let target = match op {
            ">&-" | "<&-" => None,
            _ => targets.next(),
        };
        let shown = self.text(node).trim().to_string();
        match (op, target.as_ref().map(|t| &t.value)) {
            (">&-" | "<&-", _) => {}
            (">" | ">>" | ">|" | "&>" | "&>>", Some(Value::Literal(t))) if t == "/dev/null" => {}
            (">&" | "<&", Some(Value::Literal(t)))
                if t == "-" || (!t.is_empty() && t.bytes().all(|b| b.is_ascii_digit())) => {}
            ("<", Some(Value::Literal(_) | Value::Pattern(_))) => {
                if let Some(t) = target {
                    self.out.reads.push(t);
                }
            }
            ("<", _) => self.risk_in(
                context,
                format!("a redirection from a file known only at run time: {shown}"),
            ),
            _ => self.risk_in(
                context,
                format!("a redirection that writes a file: {shown}"),
            ),
        }
        (visit, targets.collect())
    }
}

fn children<'t>(node: Node<'t>, context: Context) -> Vec<(Node<'t>, Context)> {
    let mut cursor = node.walk();
    node.children(&mut cursor).map(|c| (c, context)).collect()
}

/// The nesting of the line's brackets, counted without regard to quoting, when it exceeds
/// what the walk follows: such a line is refused before it is parsed (tree-sitter's error
/// recovery on thousands of open brackets takes seconds). Counting quoted brackets too can
/// only refuse more.
fn too_deep(src: &[u8]) -> Option<usize> {
    let mut depth = 0usize;
    let mut deepest = 0usize;
    for &b in src {
        match b {
            b'(' | b'{' | b'[' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b')' | b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    (deepest > MAX_DEPTH).then_some(deepest)
}

/// Why a construct asks, in words a person reads.
fn describe(kind: &str, text: &str) -> String {
    let what = match kind {
        "if_statement"
        | "for_statement"
        | "c_style_for_statement"
        | "while_statement"
        | "case_statement" => "control flow",
        "function_definition" => "a function definition",
        "variable_assignment" | "variable_assignments" => "an assignment",
        "declaration_command" | "unset_command" => "a declaration",
        "arithmetic_expansion" => "arithmetic expansion",
        "command_substitution" => "command substitution",
        "process_substitution" => "process substitution",
        _ => {
            return format!(
                "a construct the gate does not model ({kind}): {}",
                shorten(text)
            );
        }
    };
    format!("{what}: {}", shorten(text))
}

fn shorten(text: &str) -> String {
    let text = text.trim();
    match text.char_indices().nth(80) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_string(),
    }
}

/// What lies between the parser's tokens must be what bash skips too: blanks, newlines and
/// line continuations that join nothing. Two words with nothing between them, or a comment
/// glued to a word, mean the parser and bash cut the line differently.
fn check_gaps(src: &[u8], units: &mut [Unit], out: &mut Analysis) {
    units.sort_by_key(|u| (u.start, u.end));
    let mut pos = 0usize;
    let mut prev: Option<Unit> = None;
    for unit in units.iter().copied() {
        if unit.start < pos {
            // Overlap: one token inside another (a word inside a redirection, say).
            if unit.end <= pos {
                continue;
            }
            out.risk("tokens the parser read twice");
            return;
        }
        let gap = &src[pos..unit.start];
        match gap_kind(gap) {
            Gap::Text => {
                out.risk(format!(
                    "text the parser skipped: {:?}",
                    String::from_utf8_lossy(gap)
                ));
                return;
            }
            Gap::Joins | Gap::Empty
                if prev.is_some_and(|p| p.kind == UnitKind::Word)
                    && matches!(unit.kind, UnitKind::Word | UnitKind::Comment) =>
            {
                out.risk(format!(
                    "words bash joins that the parser split: {:?}",
                    String::from_utf8_lossy(&src[prev.map_or(0, |p| p.start)..unit.end])
                ));
                return;
            }
            Gap::Joins | Gap::Empty
                if prev.is_some_and(|p| {
                    p.kind == UnitKind::Word && src[p.start] == b'{' && src[p.end - 1] == b'}'
                }) && unit.kind == UnitKind::Operator
                    && matches!(src[unit.start], b'<' | b'>' | b'&') =>
            {
                // `{name}>file` stores a new descriptor in the variable `name`.
                out.risk("a redirection that assigns a variable ({name}>…)");
                return;
            }
            // A newline ends a command for bash: two words the parser kept in one command
            // across it (after a line continuation, say) are two commands.
            Gap::Blank
                if has_bare_newline(gap)
                    && prev.is_some_and(|p| {
                        p.kind == UnitKind::Word
                            && unit.kind == UnitKind::Word
                            && p.owner.is_some()
                            && p.owner == unit.owner
                    }) =>
            {
                out.risk(format!(
                    "a newline inside what the parser reads as one command: {:?}",
                    String::from_utf8_lossy(&src[prev.map_or(0, |p| p.start)..unit.end])
                ));
                return;
            }
            // A reserved word (`{`, `}`, `!`, `[[`, `]]`) is only one when blanks or
            // metacharacters surround it, and a comment only starts after them: `}#x` is a
            // word for bash, not a brace and a comment.
            Gap::Joins | Gap::Empty
                if prev.is_some_and(|p| {
                    let reserved = is_reserved(src, &p);
                    let before_ok = is_metachar(src, &p) && !reserved;
                    (reserved && !is_metachar(src, &unit))
                        || (is_reserved(src, &unit) && !is_metachar(src, &p))
                        || (unit.kind == UnitKind::Comment && !before_ok)
                }) =>
            {
                out.risk(format!(
                    "a reserved word or comment bash reads as part of a word: {:?}",
                    String::from_utf8_lossy(&src[prev.map_or(0, |p| p.start)..unit.end])
                ));
                return;
            }
            _ => {}
        }
        pos = unit.end;
        prev = Some(unit);
    }
    if gap_kind(&src[pos.min(src.len())..]) == Gap::Text {
        out.risk("text after the last command the parser skipped");
    }
}

/// A newline that is not part of a line continuation.
fn has_bare_newline(gap: &[u8]) -> bool {
    let mut i = 0;
    while i < gap.len() {
        match gap[i] {
            b'\\' if gap.get(i + 1) == Some(&b'\n') => i += 2,
            b'\n' => return true,
            _ => i += 1,
        }
    }
    false
}

/// Bash's reserved words among the parser's operator tokens.
fn is_reserved(src: &[u8], unit: &Unit) -> bool {
    unit.kind == UnitKind::Operator
        && matches!(
            &src[unit.start..unit.end],
            b"{" | b"}" | b"!" | b"[[" | b"]]"
        )
}

/// Tokens that end a word for bash: control operators, parentheses, redirections.
fn is_metachar(src: &[u8], unit: &Unit) -> bool {
    unit.kind == UnitKind::Operator
        && !is_reserved(src, unit)
        && matches!(
            src.get(unit.start),
            Some(b';' | b'&' | b'|' | b'(' | b')' | b'<' | b'>' | b'\n')
        )
}

#[derive(Debug, PartialEq, Eq)]
enum Gap {
    Empty,
    /// Only line continuations: the tokens on both sides touch for bash.
    Joins,
    Blank,
    Text,
}

fn gap_kind(gap: &[u8]) -> Gap {
    if gap.is_empty() {
        return Gap::Empty;
    }
    let mut blank = false;
    let mut i = 0;
    while i < gap.len() {
        match gap[i] {
            b' ' | b'\t' | b'\n' => {
                blank = true;
                i += 1;
            }
            b'\\' if gap.get(i + 1) == Some(&b'\n') => i += 2,
            _ => return Gap::Text,
        }
    }
    if blank { Gap::Blank } else { Gap::Joins }
}

#[cfg(test)]
mod tests;
