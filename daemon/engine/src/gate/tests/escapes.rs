//! Ways out of the project the path checks once missed (issue 34, item 7): links whose
//! meaning depends on the process that follows them, git's pathspec magic, programs that run
//! others by name, options that follow links for metadata, and files with more than one name.

#![cfg(unix)]

use std::os::fd::AsRawFd;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::process::Command;

use super::*;

fn script(path: &Path, body: &str) {
    std::fs::write(path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Fake `rg` and `tree` outside the project (the real ones need not be installed), first on
/// a PATH that holds no folder of the project.
fn fake_programs(outside: &Path) -> String {
    let bin = outside.join("fakebin");
    std::fs::create_dir_all(&bin).unwrap();
    for name in ["rg", "tree"] {
        script(&bin.join(name), "exit 0");
    }
    format!("{}:/usr/bin:/bin", bin.display())
}

#[test]
fn links_through_proc_and_dev_mean_what_they_mean_to_the_command() {
    let (dir, root) = project();
    let outside = dir.path().canonicalize().unwrap();
    // Descriptors of this process (the daemon's, in a session) on files of the project:
    // through /proc/self/fd the daemon finds them inside, a command finds its own.
    let file = std::fs::File::open(root.join("src/a.rs")).unwrap();
    let folder = std::fs::File::open(root.join("src")).unwrap();
    let (f, d) = (file.as_raw_fd(), folder.as_raw_fd());
    for (name, target) in [
        ("fdlink", format!("/proc/self/fd/{f}")),
        ("devfd", format!("/dev/fd/{f}")),
        ("thread", format!("/proc/thread-self/fd/{f}")),
        ("fddir", format!("/proc/self/fd/{d}")),
        ("updir", format!("/dev/fd/../fd/{d}")),
    ] {
        symlink(target, root.join(name)).unwrap();
    }
    std::fs::create_dir_all(root.join("src/nested")).unwrap();
    symlink(format!("/proc/self/fd/{d}"), root.join("src/nested/back")).unwrap();
    let p = policy(Default, &root, &[], &[], &[]);
    let decide = |line: &str| p.decide(&sh_in(line, &root));
    for line in [
        "cat fdlink",
        "head devfd",
        "wc -l thread",
        "ls fddir",
        "ls updir",
        "cat fddir/a.rs",
        "cat fddir/*",
        "cat fdd?r/a.rs",
        "cd fddir && cat a.rs",
        "cd fddir && ls",
        "grep -r x fddir",
        "find fddir -name a.rs",
        "du -a fddir",
        "git -C fddir status",
        "cat src/nested/back/a.rs",
        "cd src/nested && cat back/a.rs",
        "cat < fdlink",
    ] {
        let v = decide(line);
        assert_eq!(kind(&v), "ask", "{line}: {v:?}");
    }
    // The read tool too: what the path means is the reading process's to say.
    let v = p.decide(&GateRequest::Read {
        path: root.join("fdlink"),
    });
    assert_eq!(kind(&v), "ask", "{v:?}");
    // A PATH folder or loader path through /proc/self/cwd is the command's own folder.
    std::fs::create_dir_all(root.join("bin")).unwrap();
    script(&root.join("bin/ls"), ": > RAN");
    for (var, value) in [
        ("PATH", "/proc/self/cwd/bin:/usr/bin:/bin".to_string()),
        ("PATH", format!("/dev/fd/{d}/../../bin:/usr/bin:/bin")),
        ("LD_LIBRARY_PATH", "/proc/self/cwd/lib".to_string()),
    ] {
        let v = p.decide(&sh_env("ls", &root, &[(var, &value)]));
        assert_eq!(kind(&v), "ask", "{var}={value}: {v:?}");
    }
    // A git directory named through /proc is git's to resolve, not the daemon's.
    std::fs::create_dir_all(root.join("real/objects")).unwrap();
    std::fs::create_dir_all(root.join("real/refs")).unwrap();
    std::fs::write(root.join("real/HEAD"), "ref: refs/heads/main\n").unwrap();
    let real = std::fs::File::open(root.join("real")).unwrap();
    std::fs::create_dir_all(root.join("wt")).unwrap();
    std::fs::write(
        root.join("wt/.git"),
        format!("gitdir: /proc/self/fd/{}\n", real.as_raw_fd()),
    )
    .unwrap();
    let v = decide("git -C wt status");
    assert_eq!(kind(&v), "ask", "{v:?}");
    // Plain paths and links inside are as before; /dev/null is nothing to read.
    symlink(root.join("src"), root.join("srclink")).unwrap();
    for line in [
        "cat srclink/a.rs",
        "cd srclink && ls",
        "cat src/a.rs",
        "ls src",
    ] {
        assert_eq!(decide(line), Verdict::Allow, "{line}");
    }
    drop((file, folder, real, outside));
}

/// The project is a folder of a repository: git's pathspecs from the top (`:/`, `:(top)`)
/// name what lies above it.
#[test]
fn pathspec_magic_is_read_where_git_reads_it() {
    let dir = tempfile::tempdir().unwrap();
    let top = dir.path().canonicalize().unwrap();
    let root = top.join("project");
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(root.join("src/a.rs"), "x\n").unwrap();
    std::fs::write(top.join("outer.txt"), "secret\n").unwrap();
    git(&top, &["init", "-q"]);
    git(&top, &["add", "."]);
    git(&top, &["commit", "-qm", "one"]);
    let p = policy(Default, &root, &[], &[], &[]);
    let decide = |line: &str| p.decide(&sh_in(line, &root));
    for line in [
        "git grep secret -- :/",
        "git grep secret :/",
        "git grep secret ':(top)'",
        "git grep secret -- ':/outer.txt'",
        "git grep secret -- ':/*.txt'",
        "git grep secret -- ':(top,glob)**'",
        "git grep secret -- ':(glob,top)*.txt'",
        "git grep secret -- ':(icase,top)OUTER.TXT'",
        "git grep secret -- ':(top,literal)outer.txt'",
        "git grep secret -- ':(top,attr:text)'",
        "git grep secret -- src ':/'",
        "git grep -e secret --untracked -- ':(top)'",
        "git ls-files -o -- :/",
        "git ls-files ':(top)'",
        "git --glob-pathspecs grep secret -- ':(top)*'",
        "git --icase-pathspecs grep secret -- :/",
        "git log -p -- :/",
        "git diff HEAD -- ':/outer.txt'",
        "git grep secret -- ':(icase)../OUTER.TXT'",
        "git grep secret -- ':(glob)../*'",
        "git grep secret -- ':(frobnicate)x'",
        "git grep secret -- ':(prefix:0)outer.txt'",
        "git grep secret -- ':(top'",
        "git grep secret -- ':@x'",
        "git -C src grep secret -- :/",
    ] {
        let v = decide(line);
        assert_eq!(kind(&v), "ask", "{line}: {v:?}");
    }
    for line in [
        "git grep secret -- ':!vendor'",
        "git grep secret -- ':^vendor' src",
        "git grep secret -- ':(exclude)vendor'",
        "git grep secret -- ':(exclude,top)vendor'",
        "git grep secret -- ':(glob)src/**'",
        "git grep secret -- ':src'",
        "git --literal-pathspecs grep secret -- :/",
        "git grep secret -- src",
        "git log --oneline -- src",
    ] {
        assert_eq!(decide(line), Verdict::Allow, "{line}");
    }
    // A name a pattern matches reaches git as a pathspec, magic and all.
    std::fs::write(root.join(":(top)outer.txt"), "").unwrap();
    for line in ["git grep secret -- :*", "git grep secret -- *"] {
        let v = decide(line);
        assert_eq!(kind(&v), "ask", "{line}: {v:?}");
    }
    assert_eq!(decide("ls :*"), Verdict::Allow, "ls takes it for a name");
    // Where the project is the top, the top is inside.
    let p = policy(Default, &top, &[], &[], &[]);
    assert_eq!(
        p.decide(&sh_in("git grep secret -- :/", &top.join("project"))),
        Verdict::Allow
    );
}

#[test]
fn a_program_that_runs_others_by_name_needs_a_path_outside_the_project() {
    let (dir, root) = project();
    let outside = dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(root.join("bin")).unwrap();
    script(&root.join("bin/grep"), ": > RAN");
    let p = policy(Default, &root, &[], &[], &[]);
    let bin = root.join("bin").display().to_string();
    for path in [
        format!("{bin}:/usr/bin:/bin"),
        format!("/usr/bin:/bin:{bin}"),
    ] {
        for line in ["egrep x src/a.rs", "fgrep -r x src", "which ls"] {
            let v = p.decide(&sh_env(line, &root, &[("PATH", &path)]));
            assert_eq!(kind(&v), "ask", "{path}: {line}: {v:?}");
        }
        // A program that is no script runs nothing by name.
        let v = p.decide(&sh_env("ls src", &root, &[("PATH", &path)]));
        assert_eq!(v, Verdict::Allow, "{path}");
    }
    // A script whose interpreter is the project's, or found on PATH by env.
    let bin = outside.join("wrappers");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::write(bin.join("tree"), format!("#!{}/bin/grep\n", root.display())).unwrap();
    std::fs::write(bin.join("rg"), "#!/usr/bin/env sh\nexit 0\n").unwrap();
    for name in ["tree", "rg"] {
        std::fs::set_permissions(bin.join(name), std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let v = p.decide(&sh_env(
        "tree src",
        &root,
        &[("PATH", &format!("{}:/usr/bin:/bin", bin.display()))],
    ));
    assert_eq!(kind(&v), "ask", "{v:?}");
    let v = p.decide(&sh_env(
        "rg x src",
        &root,
        &[(
            "PATH",
            &format!("{}:/usr/bin:/bin:{}/bin", bin.display(), root.display()),
        )],
    ));
    assert_eq!(kind(&v), "ask", "{v:?}");
    let v = p.decide(&sh_env(
        "rg x src",
        &root,
        &[("PATH", &format!("{}:/usr/bin:/bin", bin.display()))],
    ));
    assert_eq!(v, Verdict::Allow);
}

#[test]
fn options_that_follow_links_for_metadata_read_what_the_links_lead_to() {
    let (dir, root) = project();
    let outside = dir.path().canonicalize().unwrap();
    std::fs::write(outside.join("big"), "s").unwrap();
    std::fs::create_dir_all(root.join("meta")).unwrap();
    symlink(outside.join("big"), root.join("meta/big")).unwrap();
    symlink(&outside, root.join("meta/up")).unwrap();
    std::fs::create_dir_all(root.join("tidy")).unwrap();
    symlink("../src/a.rs", root.join("tidy/in")).unwrap();
    std::fs::write(root.join("tidy/file"), "").unwrap();
    let path = fake_programs(&outside);
    let p = policy(Default, &root, &[], &[], &[]);
    let decide = |line: &str| p.decide(&sh_env(line, &root, &[("PATH", &path)]));
    for line in [
        "ls -lL meta",
        "ls -L -s meta",
        "ls --dereference -l meta",
        "ls -lF meta",
        "ls --classify meta",
        "ls --classify=always meta",
        "ls -l --file-type meta",
        "ls -l --indicator-style=classify meta",
        "ls --color=always meta",
        "ls --colo meta",
        "ls --hyperlink meta",
        "ls -lL m*",
        "cd meta && ls -lL",
        "ls -lL",
        "ls -RF",
        "find meta -xtype f",
        "find meta -readable",
        "find meta -writable",
        "find meta -executable",
        "find meta -printf '%Y %p\\n'",
        "find . -xtype l",
        "find m* -xtype d",
        "tree meta",
        "tree",
        "tree -d src meta",
    ] {
        let v = decide(line);
        assert_eq!(kind(&v), "ask", "{line}: {v:?}");
    }
    for line in [
        "ls -l meta",
        "ls meta",
        "ls -la meta",
        "ls --color=never meta",
        "ls --classify=never -l meta",
        "ls -lL tidy",
        "ls -lF tidy src",
        "ls -lLd meta",
        "find meta -printf '%s %p\\n'",
        "find meta -type l",
        "find tidy -xtype f",
        "tree tidy",
    ] {
        assert_eq!(decide(line), Verdict::Allow, "{line}");
    }
}

#[test]
fn a_file_with_other_names_may_be_a_file_outside() {
    let (dir, root) = project();
    let outside = dir.path().canonicalize().unwrap();
    std::fs::write(outside.join("secret"), "token\n").unwrap();
    std::fs::create_dir_all(root.join("deep/er")).unwrap();
    std::fs::hard_link(outside.join("secret"), root.join("deep/er/hl")).unwrap();
    let path = fake_programs(&outside);
    let p = policy(Default, &root, &[], &[], &[]);
    let decide = |line: &str| p.decide(&sh_env(line, &root, &[("PATH", &path)]));
    for line in [
        "cat deep/er/hl",
        "head -c 10 deep/er/hl",
        "cat deep/*/h?",
        "cat < deep/er/hl",
        "grep -r token .",
        "grep -r token deep",
        "grep -rl token",
        "cd deep && grep -r token",
        "rg token",
        "rg token deep",
        "diff deep/er/hl src/a.rs",
        "wc -c deep/er/hl",
    ] {
        let v = decide(line);
        assert_eq!(kind(&v), "ask", "{line}: {v:?}");
    }
    let v = p.decide(&GateRequest::Read {
        path: root.join("deep/er/hl"),
    });
    assert!(
        matches!(&v, Verdict::Ask(why) if why.contains("name")),
        "the read tool's read: {v:?}"
    );
    // Listings show metadata only; a search that meets every name of a file is fine.
    std::fs::remove_file(root.join("deep/er/hl")).unwrap();
    std::fs::write(root.join("src/a.rs"), "fn a() {}\n").unwrap();
    std::fs::hard_link(root.join("src/a.rs"), root.join("deep/er/twin.rs")).unwrap();
    for line in ["ls -l deep/er", "grep -r token .", "rg token", "find . -ls"] {
        assert_eq!(decide(line), Verdict::Allow, "{line}");
    }
    assert_eq!(
        kind(&decide("grep -r token deep")),
        "ask",
        "the other name is not among what it searches"
    );
    assert_eq!(
        kind(&decide("cat deep/er/twin.rs")),
        "ask",
        "one name alone could be anyone's"
    );
    // Objects `git clone` linked from another repository are git's object files.
    let objects = root.join(".git/objects/ab");
    std::fs::create_dir_all(&objects).unwrap();
    std::fs::write(outside.join("object"), [0x78, 0x01, 0x01, 0x00]).unwrap();
    std::fs::hard_link(
        outside.join("object"),
        objects.join("cdef0123456789abcdef0123456789abcdef01"),
    )
    .unwrap();
    std::fs::remove_file(root.join("deep/er/twin.rs")).unwrap();
    assert_eq!(decide("grep -r token ."), Verdict::Allow);
    std::fs::hard_link(
        outside.join("secret"),
        objects.join("00ef0123456789abcdef0123456789abcdef01"),
    )
    .unwrap();
    assert_eq!(
        kind(&decide("grep -r token .")),
        "ask",
        "a file there that is no git object"
    );
}

#[test]
fn git_reads_files_with_other_names_from_the_work_tree() {
    let dir = tempfile::tempdir().unwrap();
    let top = dir.path().canonicalize().unwrap();
    let root = top.join("project");
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(root.join("src/tracked.txt"), "one\n").unwrap();
    std::fs::write(top.join("secret"), "token\n").unwrap();
    git(&root, &["init", "-q"]);
    git(&root, &["add", "."]);
    git(&root, &["commit", "-qm", "one"]);
    std::fs::remove_file(root.join("src/tracked.txt")).unwrap();
    std::fs::hard_link(top.join("secret"), root.join("src/tracked.txt")).unwrap();
    let p = policy(Default, &root, &[], &[], &[]);
    let decide = |line: &str| p.decide(&sh_in(line, &root));
    for line in [
        "git diff",
        "git diff HEAD",
        "git diff --stat -- src",
        "git grep token",
        "git -C src grep -n token",
        "git blame src/tracked.txt",
    ] {
        let v = decide(line);
        assert_eq!(kind(&v), "ask", "{line}: {v:?}");
    }
    for line in [
        "git status",
        "git diff --cached",
        "git log -p",
        "git grep --cached token",
    ] {
        assert_eq!(decide(line), Verdict::Allow, "{line}");
    }
    // A submodule's tracked files are read as well (`--recurse-submodules`).
    std::fs::remove_file(root.join("src/tracked.txt")).unwrap();
    std::fs::write(root.join("src/tracked.txt"), "one\n").unwrap();
    let sub = root.join("sub");
    std::fs::create_dir_all(&sub).unwrap();
    std::fs::write(sub.join("inner.txt"), "two\n").unwrap();
    git(&sub, &["init", "-q"]);
    git(&sub, &["add", "."]);
    git(&sub, &["commit", "-qm", "two"]);
    git(&root, &["add", "sub"]);
    assert_eq!(
        decide("git grep --recurse-submodules token"),
        Verdict::Allow
    );
    std::fs::remove_file(sub.join("inner.txt")).unwrap();
    std::fs::hard_link(top.join("secret"), sub.join("inner.txt")).unwrap();
    let v = decide("git grep --recurse-submodules token");
    assert_eq!(kind(&v), "ask", "{v:?}");
    let v = decide("git grep --untracked token");
    assert_eq!(kind(&v), "ask", "untracked files are searched too: {v:?}");
}

/// A search reads every file below a folder: a `Read` deny rule holds for each.
#[test]
fn read_deny_rules_hold_for_every_file_a_search_reads() {
    let (dir, root) = project();
    let outside = dir.path().canonicalize().unwrap();
    let path = fake_programs(&outside);
    std::fs::create_dir_all(root.join("conf")).unwrap();
    std::fs::write(root.join("conf/.env"), "KEY=1").unwrap();
    std::fs::write(root.join("conf/secret.txt"), "KEY=1").unwrap();
    let p = policy(
        Default,
        &root,
        &[],
        &["Read(./.env)", "Read(**/.env)", "Read(**/secret.txt)"],
        &[],
    );
    let decide = |line: &str| p.decide(&sh_env(line, &root, &[("PATH", &path)]));
    for line in [
        "grep -r KEY .",
        "grep -rl KEY",
        "grep -r KEY conf",
        "grep -r KEY c*",
        "cd conf && grep -r KEY",
        "rg KEY",
        "rg KEY conf",
        "rg KEY c*",
    ] {
        let v = decide(line);
        assert_eq!(kind(&v), "deny", "{line}: {v:?}");
    }
    assert_eq!(decide("grep -r KEY src"), Verdict::Allow);
    // What a repository's ignore files leave out, ripgrep does not read. (Hidden files it
    // may: a rule that names one brings it in.)
    std::fs::write(root.join(".gitignore"), "secret.txt\n.env\n").unwrap();
    assert_eq!(
        kind(&decide("rg KEY")),
        "deny",
        "no repository: no .gitignore"
    );
    git(&root, &["init", "-q"]);
    assert_eq!(decide("rg KEY"), Verdict::Allow);
    for line in ["rg -u KEY", "rg --no-ignore-vcs KEY", "grep -r KEY ."] {
        assert_eq!(kind(&decide(line)), "deny", "{line}");
    }
    assert_eq!(
        decide("git grep KEY"),
        Verdict::Allow,
        "untracked: not read"
    );
    assert_eq!(
        kind(&decide("git grep --untracked --no-exclude-standard KEY")),
        "deny"
    );
}
