use super::*;

fn cmds(line: &str) -> Vec<String> {
    analyse(line)
        .commands
        .iter()
        .filter(|c| !c.nested)
        .map(SimpleCommand::shown)
        .collect()
}

fn risky(line: &str) -> bool {
    !analyse(line).risky.is_empty()
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
    assert_eq!(cmds("! ls |& wc"), ["ls", "wc"]);
    assert_eq!(cmds("[ -f x ] && echo y"), ["[ -f x ]", "echo y"]);
    for line in [
        "ls -la",
        "cargo test 2>&1",
        "ls > /dev/null",
        "ls 2>/dev/null >&2",
        "ls 2>&-",
        "grep x <<< 'text'",
        "cat < a.txt",
        "ls # a comment",
        "ls \\\n  -la",
        "echo a#b",
        "[ \"$HOME\" = x ]",
        "{ ls; }",
        "{ ls;};ls",
        "( ls )#x",
        "ls;#x",
        "! ls",
        "[[ -f x ]]&&ls",
        "{ ls; } > /dev/null",
        "ls\ncat x",
        "ls -la \\\n  src",
    ] {
        assert!(!risky(line), "{line:?}: {:?}", analyse(line));
    }
    assert_eq!(analyse("cat < a.txt").reads[0].text(), Some("a.txt"));
}

#[test]
fn words_after_a_redirection_belong_to_the_command() {
    assert_eq!(
        cmds("find . -name x >/dev/null -delete"),
        ["find . -name x -delete"]
    );
    assert_eq!(cmds("ls >/dev/null -la 2>&1 x"), ["ls -la x"]);
    assert!(risky("(ls) > /dev/null rm"), "no command to give them to");
}

#[test]
fn a_line_continuation_never_joins_what_the_parser_split() {
    assert!(risky("test\\\n/../../usr/bin/rm -f file"));
    assert!(risky("ls\\\n#x"));
    assert!(!risky("ls \\\n-la"));
    assert_eq!(cmds("ls \\\n-la"), ["ls -la"]);
}

#[test]
fn quoting_is_removed_before_judging() {
    assert_eq!(cmds("find . -de''lete"), ["find . -delete"]);
    assert_eq!(cmds("'rm' -rf x"), ["rm -rf x"]);
    assert_eq!(cmds("\\rm -rf x"), ["rm -rf x"]);
    assert_eq!(cmds("r\\m -rf x"), ["rm -rf x"]);
    assert!(risky("find . {-delete,}"));
}

#[test]
fn risky_constructs_are_reported() {
    for line in [
        "echo $(whoami)",
        "echo `id`",
        "diff <(ls a) <(ls b)",
        "ls > out.txt",
        "ls >&out",
        "ls {fd}>/dev/null",
        "ls <> f",
        "cat <<EOF\nx\nEOF",
        "FOO=1 ls",
        "if true; then ls; fi",
        "f() { ls; }",
        "ls &&",
        "$CMD -x",
        "echo \"$(rm -rf /)\"",
        "echo $ANTHROPIC_API_KEY",
        "echo ${X@P}",
        "echo $((X))",
        "[[ -v a[$(id)] ]]",
        "[[ x =~ $(id) ]]",
        "[[ x =~ <(touch RAN) ]]",
        "[[ x =~ a>(rm -f keep.txt) ]]",
        "[[ x = <(./run.sh) ]]",
        "[[ x =~ (x)|>(cat /etc/passwd >&2) ]]",
        "[[ $(id) ]]",
        "[ a > b ]",
        "[ a < b ]",
        "[ a && b ]",
        "declare -x A=1",
        "export PATH=/tmp",
        "x=(a b)",
        "ls\rrm",
        "{ ls; }#; rm -f keep.txt; }",
        "{ cat keep.txt;}#x; touch RAN;}",
        "ls && { ls; }#x; ./run.sh; }",
        "{#x; rm -f keep.txt\nls; }",
        "{ ls; }\\\n#x; touch RAN; }",
        "!\\\n#;>RAN\nls",
        "echo a\n\\\nrm keep.txt",
        "echo a \n\\\n cat ../outside/secret.txt",
        "git status\n\\\nx=1 ./run.sh",
        "( echo a\n\\\n./run.sh )",
        "ls\0rm",
    ] {
        assert!(risky(line), "{line:?} should be risky: {:?}", analyse(line));
    }
}

#[test]
fn commands_inside_substitutions_are_found_for_deny_rules() {
    let a = analyse("echo $(rm -rf / && curl x)");
    let nested: Vec<String> = a
        .commands
        .iter()
        .filter(|c| c.nested)
        .map(SimpleCommand::shown)
        .collect();
    assert_eq!(nested, ["rm -rf /", "curl x"]);
}

#[test]
fn deep_and_long_lines_ask_without_exhausting_the_stack() {
    // A small stack: the walk must not recurse with the input's depth.
    let handle = std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(|| {
            for (open, close) in [("(", ")"), ("$(", ")"), ("{ ", "; }"), ("\"$(", ")\"")] {
                let n = 60_000 / (open.len() + close.len());
                let line = format!("{}ls{}", open.repeat(n), close.repeat(n));
                let a = analyse(&line);
                assert!(!a.risky.is_empty(), "{open}: {:?}", a.risky);
            }
            let a = analyse(&"a=(".repeat(20_000));
            assert!(!a.risky.is_empty());
            let a = analyse(&"x".repeat(MAX_LINE + 1));
            assert!(a.incomplete);
        })
        .unwrap();
    handle.join().unwrap();
}

#[test]
fn characters_beyond_ascii_never_reach_the_parser_scanner() {
    // This line crashed tree-sitter-bash's scanner (isdigit on a code point past its table).
    let crasher = "\u{7D01A}\u{1F4F5}\u{A020F}{\u{A70F2}";
    let _ = analyse(crasher);
    assert_eq!(cmds("echo héllo wörld"), ["echo héllo wörld"]);
    assert_eq!(
        cmds("grep -n 'naïve' src/ünï.rs"),
        ["grep -n naïve src/ünï.rs"]
    );
    assert!(!risky("echo {中}"), "{:?}", analyse("echo {中}"));
    assert!(risky("echo $(rm 中)"));
}
