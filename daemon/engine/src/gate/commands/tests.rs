//! Each table: what it lets through as read-only, what it refuses, and what it reads.

use super::*;
use crate::gate::shell::analyse;

fn judged(line: &str) -> Judgement {
    let a = analyse(line);
    assert!(a.risky.is_empty(), "{line:?}: {:?}", a.risky);
    judge(&a.commands[0].words)
}

/// The paths a read-only line reads (`.` for its folder), or panics.
fn reads(line: &str) -> Vec<String> {
    match judged(line) {
        Judgement::Reads(r) => {
            let mut out: Vec<String> = r.paths.iter().map(|w| w.shown().to_string()).collect();
            if r.cwd {
                out.push(".".into());
            }
            out
        }
        other => panic!("{line:?} should only read: {other:?}"),
    }
}

fn refused(line: &str) -> String {
    match judged(line) {
        Judgement::Refused(why) | Judgement::Shell(why) | Judgement::Changes(why) => why,
        other => panic!("{line:?} should be refused: {other:?}"),
    }
}

#[test]
fn listing_and_walking() {
    assert_eq!(reads("ls"), ["."]);
    assert_eq!(reads("ls -la src"), ["src"]);
    assert_eq!(reads("ls -l --color=auto -- -x"), ["-x"]);
    assert_eq!(reads("ls --sort time -R"), ["."]);
    refused("ls -RL");
    refused("ls --frobnicate");
    assert_eq!(reads("tree -aL 2 src"), ["src"]);
    assert_eq!(
        reads("tree -PI '*.rs' target"),
        ["."],
        "-P and -I take the next words"
    );
    assert!(
        refused("tree -Lo 2 out").contains("-o"),
        "tree's cluster values come from later words"
    );
    refused("tree -sort out.txt");
    refused("tree --fromfile list");
    refused("tree -l");
    assert_eq!(reads("tree --gitfile=ignore src"), ["ignore", "src"]);
    assert_eq!(reads("du -sh"), ["."]);
    assert_eq!(reads("du -d 1 src lib"), ["src", "lib"]);
    refused("du -L");
    refused("du --files0-from=list");
    assert_eq!(reads("df -h"), Vec::<String>::new());
    refused("df --sync");
    assert_eq!(reads("stat -c %s a b"), ["a", "b"]);
    assert_eq!(reads("file -b --mime-type x"), ["x"]);
    for line in ["file -C -m m", "file -f names", "file -z x", "file -p x"] {
        refused(line);
    }
    assert_eq!(reads("realpath --relative-to=/tmp x"), ["/tmp", "x"]);
    assert_eq!(reads("readlink -f x"), ["x"]);
    assert_eq!(reads("basename /etc/passwd .d"), Vec::<String>::new());
    assert_eq!(reads("dirname -z a/b"), Vec::<String>::new());
}

#[test]
fn find_primaries() {
    assert_eq!(reads("find"), ["."]);
    assert_eq!(reads("find src -name '*.rs' -type f"), ["src"]);
    assert_eq!(
        reads("find . -name -delete"),
        ["."],
        "-delete here is the name pattern"
    );
    assert_eq!(reads("find -H a b -newer c -print0"), ["a", "b", "c"]);
    assert_eq!(reads("find -D -P /etc"), ["/etc"], "-D takes the next word");
    assert_eq!(
        reads("find -H , -type f"),
        [","],
        "a leading , is a starting point"
    );
    assert_eq!(reads("find \\) -name x"), [")"]);
    assert_eq!(reads("find -D exec -H sshlink/ -type f"), ["sshlink/"]);
    assert_eq!(reads("find . \\( -name a -o -name b \\) -prune"), ["."]);
    assert_eq!(reads("find . -newermt 2024-01-01"), ["."]);
    assert_eq!(reads("find . -neweram ref"), [".", "ref"]);
    for line in [
        "find . -delete",
        "find . -de''lete",
        "find . -exec rm {} ;",
        "find . -execdir x ;",
        "find . -ok x ;",
        "find . -fprint out",
        "find . -fprintf out %p",
        "find . -fls out",
        "find -L .",
        "find . -follow",
        "find . -files0-from x",
        "find . -frobnicate",
        "find . -name",
        "find . -delet?",
        "find . -exe[c] rm ;",
        "find . -name $HOME",
    ] {
        refused(line);
    }
}

#[test]
fn reading_and_printing() {
    assert_eq!(reads("cat -n a b"), ["a", "b"]);
    assert_eq!(reads("head -20 a"), ["a"]);
    assert_eq!(reads("head -n 5 -- a"), ["a"]);
    assert_eq!(reads("tail -f -n +3 log"), ["log"]);
    assert_eq!(reads("wc -l"), Vec::<String>::new());
    refused("wc --files0-from=names");
    assert_eq!(reads("sort -u -k2,2 -t, a"), ["a"]);
    assert_eq!(reads("sort --random-source=r a"), ["r", "a"]);
    for line in [
        "sort -o out in",
        "sort -uo out in",
        "sort --output=out in",
        "sort --out=out in",
        "sort --outp''ut=f in",
        "sort --compress-program=sh in",
        "sort --compress=sh in",
        "sort -T /tmp in",
        "sort --files0-from=list",
        "sort --output=x? in",
        "sort --outp*=x in",
    ] {
        refused(line);
    }
    assert_eq!(reads("uniq -c a"), ["a"]);
    assert!(refused("uniq in out").contains("second operand"));
    refused("uniq *.txt");
    assert_eq!(reads("cut -d: -f1 /etc/passwd"), ["/etc/passwd"]);
    assert_eq!(reads("cut --output-delimiter=, -f1 a"), ["a"]);
    assert_eq!(reads("tr a-z A-Z"), Vec::<String>::new());
    assert_eq!(reads("nl -ba a"), ["a"]);
    assert_eq!(reads("comm -12 a b"), ["a", "b"]);
    assert_eq!(reads("column -t -s, a"), ["a"]);
    assert_eq!(reads("od -c -N 16 a"), ["a"]);
    assert_eq!(reads("od -o a"), ["a"], "od -o is octal, not an output");
    assert_eq!(reads("hexdump -C a"), ["a"]);
    assert_eq!(reads("diff -u a b"), ["a", "b"]);
    refused("diff -r a b");
    refused("diff -l a b");
    assert_eq!(reads("cmp -l a b 10 20"), ["a", "b"]);
    assert_eq!(reads("sha256sum a"), ["a"]);
    refused("sha256sum -c sums");
    refused("md5sum --check sums");
    assert_eq!(reads("cksum -a sha256 a"), ["a"]);
}

#[test]
fn searching() {
    assert_eq!(reads("grep -rn foo src"), ["src"]);
    assert_eq!(reads("grep -rn foo"), ["."]);
    assert_eq!(reads("grep foo"), Vec::<String>::new(), "standard input");
    assert_eq!(reads("grep -e foo -e bar a"), ["a"]);
    assert_eq!(reads("grep -f pats a"), ["pats", "a"]);
    assert_eq!(reads("grep -3 foo a"), ["a"]);
    assert_eq!(reads("grep -drecurse foo"), ["."]);
    assert_eq!(reads("grep -d rec foo"), ["."], "an abbreviated recurse");
    assert_eq!(reads("egrep 'a|b' x"), ["x"]);
    refused("grep -R foo .");
    refused("grep --dereference-recursive foo");
    refused("grep --frob foo");
    assert_eq!(reads("rg foo"), ["."]);
    assert_eq!(reads("rg -n -g '*.rs' foo src"), ["src"]);
    assert_eq!(reads("rg --files src"), ["src"]);
    assert_eq!(
        reads("rg -f=pats x"),
        ["pats", "x"],
        "rg drops the = of -f=pats"
    );
    refused("rg -e -- --pre=./x f");
    refused("rg --engine --pre=./run.sh x keep.txt");
    for line in [
        "rg --pre ./x foo",
        "rg --pre=cat foo",
        "rg -z foo",
        "rg -iz foo",
        "rg --search-zip foo",
        "rg --hostname-bin ./x foo",
        "rg -L foo",
        "rg --follow foo",
        "rg --fol foo",
    ] {
        refused(line);
    }
    assert_eq!(
        reads("rg -follow foo"),
        ["ollow", "foo"],
        "-f ollow: a pattern file"
    );
    match judged("rg foo") {
        Judgement::Reads(r) => assert_eq!(r.env, ["RIPGREP_CONFIG_PATH"]),
        other => panic!("{other:?}"),
    }
}

#[test]
fn system_facts_and_what_would_change_the_system() {
    for line in [
        "uname -a",
        "id -un",
        "whoami",
        "hostname",
        "hostname -f",
        "nproc --all",
        "free -h",
        "uptime -p",
        "date",
        "date +%s",
        "date -u -d @0 +%F",
        "seq 1 10",
        "sleep 1",
        "which -a git",
    ] {
        assert!(matches!(judged(line), Judgement::Reads(_)), "{line}");
    }
    assert_eq!(reads("date -r file"), ["file"]);
    for line in [
        "date -s 2020-01-01",
        "date --set=x",
        "date 010100002020",
        "hostname evil",
        "hostname -F file",
        "hostname -b x",
        "uname -x",
    ] {
        refused(line);
    }
}

#[test]
fn builtins() {
    for line in [
        "echo -n a $HOME",
        "printf '%s\\n' a b",
        "printf -- -v",
        "printf '%-5.2s|%05d|%(%F)T|%%n|%q\\n' a 1 -1 x",
        "printf -- '%s' -v",
        "pwd -P",
        "true anything",
        "type -a ls",
        "command -v git",
        "[ -n x ]",
        "test 1 -eq 2",
        "[ \"$HOME\" -eq 1 ]",
        "test -v NAME",
        "[[ -f x && -d y ]]",
        "[[ ! ( -f x || -e y ) ]]",
        "[[ -n \"$HOME\" ]]",
        "[[ $HOME == /home* ]]",
        "[[ x =~ ^a(b)$ ]]",
        "[[ a < b ]]",
        "[[ 1 -lt 2 ]]",
    ] {
        assert!(matches!(judged(line), Judgement::Reads(_)), "{line}");
    }
    assert_eq!(reads("test -f /etc/shadow"), ["/etc/shadow"]);
    assert_eq!(reads("[ a -nt b ]"), ["b", "a"]);
    assert!(refused("printf -v PATH %s x").contains("assign"));
    refused("printf -vx %s y");
    refused("printf $HOME x");
    refused("printf -v? x y");
    for line in [
        "printf %n PATH",
        "printf -- 'ab%n' PATH",
        "printf '%5n' HOME",
        "printf '%s%ln' a CDPATH",
        "printf '%k' x",
        "printf 'a%'",
        "printf \"$HOME\" x",
        "printf *",
    ] {
        assert!(
            !matches!(judged(line), Judgement::Reads(_)),
            "{line}: {:?}",
            judged(line)
        );
    }
    refused("test -v 'a[$(id)]'");
    refused("test -v a[0]");
    refused("test x -eq 1");
    refused("[[ x -eq 1 ]]");
    refused("[[ \"$HOME\" -eq 1 ]]");
    refused("[[ -v a[1] ]]");
    assert_eq!(
        reads("[[ -f /etc/shadow || -d src ]]"),
        ["/etc/shadow", "src"]
    );
    refused("[ 'a[1]' -lt 2 ]");
    assert!(matches!(
        judge(&["[", "-f", "x"].map(Word::literal)),
        Judgement::Refused(_)
    ));
    refused("command rm x");
    refused("jobs -x rm -f x");
    refused("git shortlog --committer --output=keep.txt HEAD");
    refused("git rev-list -L --output=keep.txt HEAD");
    refused("git diff-tree --decorate-refs --output=x HEAD");
    refused("git for-each-ref --sort=signature");
    refused("git branch --sort=-signature:grade");
    assert!(matches!(
        judged("git shortlog -sn --committer HEAD"),
        Judgement::Reads(_)
    ));
    refused("wait -n -p VAR");
    refused("test $HOME -eq 1");
    refused("[ \"$HOME\" = 'a[1]' ]");
    assert!(matches!(judged("[ \"$HOME\" = x ]"), Judgement::Reads(_)));
    assert!(matches!(judged("jobs -l"), Judgement::Reads(_)));
    for name in [
        "eval x",
        "source x",
        ". x",
        "exec ls",
        "read x",
        "mapfile x",
        "let x=1",
        "set -x",
        "shopt -s dotglob",
        "alias ls=rm",
        "trap x EXIT",
        "builtin echo",
        "enable -n echo",
        "hash -p /tmp/x ls",
        "cd",
        "cd -",
        "cd $HOME",
        "pushd x",
    ] {
        assert!(
            matches!(judged(name), Judgement::Shell(_) | Judgement::Refused(_)),
            "{name}"
        );
    }
    match judged("cd src") {
        Judgement::Reads(r) => {
            assert_eq!(r.cd.as_ref().and_then(Word::text), Some("src"));
            assert_eq!(r.env, ["CDPATH"]);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn git_by_its_real_subcommand() {
    for line in [
        "git status",
        "git status -sb",
        "git log --oneline -5",
        "git log -p --stat -n 3 -- src",
        "git show HEAD:README.md",
        "git diff --cached",
        "git diff HEAD~1 --name-only",
        "git blame -L 1,5 a.rs",
        "git rev-parse --show-toplevel",
        "git ls-files -z",
        "git branch",
        "git branch -a -v",
        "git branch --list 'feat*'",
        "git tag",
        "git tag -l 'v1*'",
        "git remote -v",
        "git remote get-url origin",
        "git stash list",
        "git reflog",
        "git worktree list",
        "git --no-pager log",
        "git -P diff",
        "git grep -n foo",
        "git cat-file -p HEAD",
        "git describe --tags",
        "git --version",
    ] {
        assert!(
            matches!(judged(line), Judgement::Reads(_)),
            "{line}: {:?}",
            judged(line)
        );
    }
    let chain = |line: &str| match judged(line) {
        Judgement::Reads(r) => r.git.unwrap()[0].shown().to_string(),
        other => panic!("{other:?}"),
    };
    assert_eq!(chain("git -C sub status"), "sub");
    assert_eq!(
        chain("git -C src -C sub status"),
        "src/sub",
        "-C folders chain"
    );
    assert_eq!(chain("git -C src -C /tmp status"), "/tmp");
    refused("git -C s[r]c status");
    assert_eq!(
        reads("git diff a.rs b.rs"),
        ["a.rs", "b.rs"],
        "operands are checked as paths"
    );
    assert_eq!(reads("git log -U3 -- src"), ["src"]);
    assert_eq!(
        reads("git branch --contains abc"),
        Vec::<String>::new(),
        "abc is the commit"
    );
    assert_eq!(reads("git blame --contents=x a.rs"), ["a.rs", "x"]);
    assert_eq!(reads("git rev-parse --resolve-git-dir ../x"), ["../x"]);
    refused("git rev-parse --show-superproject-working-tree");
    for line in [
        "git clean -f",
        "git push",
        "git commit -m x",
        "git branch new",
        "git stash",
        "git fetch",
    ] {
        assert!(matches!(judged(line), Judgement::Changes(_)), "{line}");
    }
    for line in [
        "git --namespace status clean -f",
        "git --namespace=x log",
        "git -c core.pager=x log",
        "git --config-env=core.pager=X log",
        "git --git-dir=/tmp/x status",
        "git --work-tree=/ status",
        "git --exec-path=/tmp log",
        "git -p log",
        "git clean -f",
        "git push",
        "git commit -m x",
        "git checkout -- .",
        "git reset --hard",
        "git branch -D main",
        "git branch new",
        "git branch -M x",
        "git tag v1",
        "git tag -d v1",
        "git remote add x y",
        "git remote show origin",
        "git stash",
        "git stash drop",
        "git reflog expire --all",
        "git worktree add x",
        "git log --output=f",
        "git log --outp''ut=f",
        "git diff --outp=f",
        "git diff --ext-diff",
        "git diff --no-index a b",
        "git log --show-signature",
        "git grep -O foo",
        "git grep --open-files-in-pager=vim foo",
        "git cat-file --textconv HEAD:x",
        "git cat-file --filters HEAD:x",
        "git log --help",
        "git help log",
        "git config core.pager",
        "git submodule update",
        "git fetch",
        "git log --format=%G?",
        "git log --pretty=format:%GS",
        "git for-each-ref '--format=%(signature)'",
        "git log --format --output=x",
        "git diff -U --output=x",
        "git log --alternate-refs",
        "git show --remerge-diff",
        "git diff --submodule=diff",
        "git log --unknown-option",
    ] {
        refused(line);
    }
}

#[test]
fn unlisted_and_computed_names() {
    assert_eq!(judged("npm test"), Judgement::Unlisted);
    assert_eq!(judged("./script.sh"), Judgement::Unlisted);
    assert_eq!(judged("/usr/bin/ls"), Judgement::Unlisted);
    assert!(matches!(judged("$'ls' x"), Judgement::Shell(_)));
}

/// Every long option the installed GNU programs know is in their table, allowed or refused,
/// so an abbreviation resolves here as it does in the program.
#[test]
fn tables_know_every_long_option_of_the_installed_programs() {
    use super::options::Spec;
    let tables: &[(&str, Spec<'_>)] = &[
        ("ls", files::LS),
        ("du", files::DU),
        ("df", files::DF),
        ("stat", files::STAT),
        ("realpath", files::REALPATH),
        ("readlink", files::READLINK),
        ("basename", files::BASENAME),
        ("cat", text::CAT),
        ("head", text::HEAD),
        ("tail", text::TAIL),
        ("wc", text::WC),
        ("sort", text::SORT),
        ("uniq", text::UNIQ),
        ("cut", text::CUT),
        ("tr", text::TR),
        ("nl", text::NL),
        ("tac", text::TAC),
        ("paste", text::PASTE),
        ("comm", text::COMM),
        ("od", text::OD),
        ("diff", text::DIFF),
        ("cmp", text::CMP),
        ("sha256sum", text::SUMS),
        ("cksum", text::CKSUM),
        ("grep", search::GREP),
        ("uname", system::UNAME),
        ("id", system::ID),
        ("date", system::DATE),
        ("seq", system::SEQ),
        ("nproc", system::NPROC),
        ("free", system::FREE),
    ];
    let mut checked = 0;
    for (program, spec) in tables {
        let Ok(out) = std::process::Command::new(program).arg("--help").output() else {
            // CI (`STEPPER_TEST_STRICT`) never passes by skipping.
            assert!(
                std::env::var_os("STEPPER_TEST_STRICT").is_none(),
                "{program} is not installed: its table cannot be cross-checked"
            );
            eprintln!("skipped: {program} is not installed: its table is not cross-checked");
            continue;
        };
        let help = String::from_utf8_lossy(&out.stdout);
        let known = |name: &str| {
            spec.long.iter().any(|l| {
                l.trim_end_matches("=?")
                    .trim_end_matches("=@")
                    .trim_end_matches("=!")
                    .trim_end_matches('=')
                    == name
            }) || spec.refused.iter().any(|(r, _)| *r == name)
        };
        for token in help.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_')) {
            let Some(name) = token.strip_prefix("--") else {
                continue;
            };
            // Placeholders in the text (`--GTYPE-group-format`) are not options.
            if name.is_empty()
                || name.starts_with('-')
                || name.chars().any(|c| c.is_ascii_uppercase())
            {
                continue;
            }
            assert!(known(name), "{program} --{name} is missing from its table");
        }
        checked += 1;
    }
    assert!(checked > 0, "no program could be cross-checked");
}

#[test]
fn listings_that_describe_what_links_lead_to() {
    let targets = |line: &str| match judged(line) {
        Judgement::Reads(r) => r.link_targets,
        other => panic!("{line:?} should only read: {other:?}"),
    };
    for (line, want) in [
        ("ls -l", None),
        ("ls -L", Some(Walk::Entries)),
        ("ls -lF src", Some(Walk::Entries)),
        ("ls --file-type", Some(Walk::Entries)),
        ("ls --color", Some(Walk::Entries)),
        ("ls --colour=auto", Some(Walk::Entries)),
        ("ls --color=nev", None),
        ("ls --classify=no", None),
        ("ls --hyperlink=always", Some(Walk::Entries)),
        ("ls --indicator-style=slash", None),
        ("ls --indicator-style=c", Some(Walk::Entries)),
        ("ls -dL src", None),
        ("ls -RF", Some(Walk::Tree)),
        ("tree -a", Some(Walk::Tree)),
        ("find . -type l", None),
        ("find . -xtype f", Some(Walk::Tree)),
        ("find . ! -readable", Some(Walk::Tree)),
        ("find . -printf '%p %s\\n'", None),
        ("find . -printf '%%Y'", None),
        ("find . -printf '%-3Y'", Some(Walk::Tree)),
    ] {
        assert_eq!(targets(line), want, "{line}");
    }
}

#[test]
fn git_operands_are_pathspecs_magic_and_all() {
    let from_top = |line: &str| match judged(line) {
        Judgement::Reads(r) => r
            .top_files
            .iter()
            .map(|w| w.shown().to_string())
            .collect::<Vec<_>>(),
        other => panic!("{line:?} should only read: {other:?}"),
    };
    assert_eq!(
        reads("git grep x -- ':(top)a' ':/b' ':/'"),
        ["x", "a", "b", ""],
        "(git grep's pattern is checked as a path too: it may be a revision or a path)"
    );
    assert_eq!(
        from_top("git grep x -- ':(top)a' ':/b' ':/'"),
        ["a", "b", ""]
    );
    assert_eq!(
        from_top("git log -- ':/!a' :^b ':(exclude,top)c'"),
        Vec::<String>::new()
    );
    assert_eq!(
        reads("git log -- ':/!a' :^b ':(exclude)c'"),
        Vec::<String>::new()
    );
    assert_eq!(
        reads("git grep x -- ':(icase,glob)../A*' :src ::b"),
        ["x", "../A*", "src", "b"]
    );
    assert_eq!(reads("git --literal-pathspecs grep x :/"), ["x", ":/"]);
    assert_eq!(
        from_top("git --literal-pathspecs grep x :/"),
        Vec::<String>::new()
    );
    for line in [
        "git grep x -- ':(top'",
        "git grep x -- ':(prefix:0)a'",
        "git grep x -- ':(top,,glob)a'",
        "git grep x -- ':(attr:a\\,b)'",
        "git grep x -- :@a",
        "git grep x -- ':#a'",
    ] {
        assert!(refused(line).contains("pathspec"), "{line}");
    }
}
