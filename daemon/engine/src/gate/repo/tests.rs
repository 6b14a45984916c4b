use std::process::Command;

use super::*;

fn no_worktree(text: &str) -> Option<String> {
    refusal(text, false)
}

#[test]
fn a_plain_repository_configuration_passes() {
    let text = "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\
                \tlogallrefupdates = true\n[remote \"origin\"]\n\turl = git@github.com:a/b.git\n\
                \tfetch = +refs/heads/*:refs/remotes/origin/*\n[branch \"main\"]\n\tremote = origin\n\
                \tmerge = refs/heads/main\n[user]\n\tname = A ; comment\n[lfs]\n\trepositoryformatversion = 0\n\
                [lfs \"https://x/info/lfs\"]\n\taccess = basic\n[submodule \"lib\"]\n\turl = ../lib.git\n\tactive = true\n";
    assert_eq!(no_worktree(text), None);
}

#[test]
fn programs_includes_and_files_elsewhere_are_refused() {
    for text in [
        "[core]\n\tfsmonitor = ./evil.sh\n",
        "[core]\nFSMonitor=x\n",
        "[core]\n\tpager = sh -c evil\n",
        "[core]\n\thooksPath = .githooks\n",
        "[core]\n\tattributesFile = ../outside/attrs\n",
        "[core]\n\texcludesFile = ~/x\n",
        "[core]\n\tworktree = /\n",
        "[diff]\n\texternal = ./x\n",
        "[diff \"pdf\"]\n\ttextconv = ./x\n",
        "[diff.pdf]\n\ttextconv = ./x\n",
        "[diff]\n\torderFile = /etc/passwd\n",
        "[filter \"lfs\"]\n\tclean = ./x %f\n",
        "[lfs \"extension.evil\"]\n\tclean = ./run.sh\n",
        "[pager]\n\tlog = ./x\n",
        "[include]\n\tpath = ../evil\n",
        "[includeIf \"gitdir:/\"]\n\tpath = x\n",
        "[gpg]\n\tprogram = ./x\n",
        "[log]\n\tshowSignature = true\n",
        "[blame]\n\tignoreRevsFile = ../home/.ssh/id_rsa\n",
        "[mailmap]\n\tfile = /etc/passwd\n",
        "[diff]\n\tsubmodule = diff\n",
        "[status]\n\tsubmoduleSummary = true\n",
        "[tag]\n\tsort = signature\n",
        "[extensions]\n\tpartialClone = origin\n",
        "[remote \"origin\"]\n\tpromisor = true\n",
        "[remote \"o\"]\n\tuploadpack = ./x\n",
        "[core] fsmonitor = ./x\n",
        "[core]\n\tpager = a \\\n",
        "[frobnicate]\n\tx = 1\n",
        "fsmonitor = x\n",
        "[core\n",
    ] {
        assert!(no_worktree(text).is_some(), "{text:?}");
    }
    assert_eq!(
        refusal("[core]\n\tworktree = ../../../lib\n", true),
        None,
        "a submodule's own"
    );
}

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t"])
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

fn far() -> Instant {
    Instant::now() + std::time::Duration::from_secs(30)
}

fn check_now(dir: &Path, env: &Env, root: &Path) -> Result<(), String> {
    check(
        dir,
        env,
        root,
        Instant::now() + std::time::Duration::from_secs(30),
    )
}

fn env() -> Env {
    [("HOME".to_string(), "/nonexistent-home".to_string())].into()
}

#[test]
fn a_repository_with_a_hostile_config_or_hook_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(root.join(".git/config"), "[core]\n\tbare = false\n").unwrap();
    assert_eq!(check_now(&root.join("src"), &env(), &root), Ok(()));
    std::fs::write(root.join(".git/hooks/post-index-change"), "#!/bin/sh\n").unwrap();
    assert!(
        check_now(&root, &env(), &root)
            .unwrap_err()
            .contains("post-index-change")
    );
    std::fs::remove_file(root.join(".git/hooks/post-index-change")).unwrap();
    std::fs::write(root.join(".git/config"), "[core]\n\tfsmonitor = ./x\n").unwrap();
    assert!(
        check_now(&root.join("src"), &env(), &root)
            .unwrap_err()
            .contains("fsmonitor")
    );
    std::fs::write(root.join(".git/config"), "").unwrap();
    // A submodule's own configuration counts too.
    std::fs::create_dir_all(root.join(".git/modules/lib/hooks")).unwrap();
    std::fs::write(root.join(".git/modules/lib/HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::write(
        root.join(".git/modules/lib/config"),
        "[core]\n\tpager = ./x\n",
    )
    .unwrap();
    assert!(
        check_now(&root, &env(), &root)
            .unwrap_err()
            .contains("modules/lib/config")
    );
    std::fs::remove_dir_all(root.join(".git/modules")).unwrap();
    let mut home_inside = env();
    home_inside.insert("HOME".into(), root.join("src").display().to_string());
    assert!(
        check_now(&root, &home_inside, &root)
            .unwrap_err()
            .contains("HOME")
    );
    let mut git_env = env();
    git_env.insert("GIT_CONFIG_PARAMETERS".into(), "'core.pager=x'".into());
    assert!(check_now(&root, &git_env, &root).is_err());
}

#[cfg(unix)]
#[test]
fn a_config_that_is_not_a_regular_file_is_never_read() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(root.join(".git")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", root.join(".git/config")).unwrap();
    assert!(
        check_now(&root, &env(), &root)
            .unwrap_err()
            .contains("not a regular file")
    );
    std::fs::remove_file(root.join(".git/config")).unwrap();
    let fifo = root.join(".git/config");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    assert!(
        check_now(&root, &env(), &root)
            .unwrap_err()
            .contains("not a regular file")
    );
}

#[test]
fn a_git_file_that_leads_out_of_the_project_must_lead_back() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let root = base.join("project");
    let other = base.join("other");
    std::fs::create_dir_all(root.join("sub")).unwrap();
    std::fs::create_dir_all(&other).unwrap();
    git(&other, &["init", "-q"]);
    std::fs::write(
        root.join("sub/.git"),
        format!("gitdir: {}\n", other.join(".git").display()),
    )
    .unwrap();
    assert!(
        check_now(&root.join("sub"), &env(), &root)
            .unwrap_err()
            .contains("does not lead back")
    );
    // A linked work tree of the user's is answered from its git directory.
    git(&other, &["commit", "-q", "--allow-empty", "-m", "x"]);
    git(
        &other,
        &["worktree", "add", "-q", root.join("wt").to_str().unwrap()],
    );
    assert_eq!(
        check_now(&root.join("wt"), &env(), &root.join("wt")),
        Ok(())
    );
}

#[test]
fn gitlinks_in_the_index_are_checked_as_repositories() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    git(&root, &["init", "-q"]);
    std::fs::create_dir_all(root.join("src/sub")).unwrap();
    git(&root.join("src/sub"), &["init", "-q"]);
    git(
        &root.join("src/sub"),
        &["commit", "-q", "--allow-empty", "-m", "x"],
    );
    git(&root, &["add", "src/sub"]);
    assert_eq!(check_now(&root, &env(), &root), Ok(()));
    let index = std::fs::read(root.join(".git/index")).unwrap();
    assert_eq!(
        tracked(&index, 20, far(), false).unwrap().gitlinks,
        ["src/sub"]
    );
    assert!(
        tracked(&index, 32, far(), false).is_err(),
        "a wrong object name size does not parse"
    );
    std::fs::write(
        root.join("src/sub/.git/config"),
        "[core]\n\tfsmonitor = ./x\n",
    )
    .unwrap();
    assert!(
        check_now(&root, &env(), &root)
            .unwrap_err()
            .contains("fsmonitor")
    );
    // Index version 4 compresses paths.
    std::fs::write(root.join("src/sub/.git/config"), "").unwrap();
    std::fs::write(root.join("a.txt"), "").unwrap();
    git(&root, &["add", "a.txt"]);
    git(&root, &["update-index", "--index-version", "4"]);
    let index = std::fs::read(root.join(".git/index")).unwrap();
    assert_eq!(
        tracked(&index, 20, far(), false).unwrap().gitlinks,
        ["src/sub"]
    );
    assert!(tracked(b"DIRC\0\0\0\x09\0\0\0\x01", 20, far(), false).is_err());
}

#[test]
fn a_git_directory_in_the_project_leads_nowhere_else() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let root = base.join("project");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::create_dir_all(base.join("outside")).unwrap();
    std::fs::write(base.join("outside/secret"), "x").unwrap();
    git(&root, &["init", "-q"]);
    assert_eq!(check_now(&root, &env(), &root), Ok(()));
    // Objects borrowed from elsewhere.
    std::fs::write(
        root.join(".git/objects/info/alternates"),
        "/elsewhere/objects\n",
    )
    .unwrap();
    assert!(
        check_now(&root, &env(), &root)
            .unwrap_err()
            .contains("borrows objects")
    );
    std::fs::remove_file(root.join(".git/objects/info/alternates")).unwrap();
    // A link among its files.
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(base.join("outside/secret"), root.join(".git/packed-refs"))
            .unwrap();
        assert!(
            check_now(&root, &env(), &root)
                .unwrap_err()
                .contains("leads out")
        );
        std::fs::remove_file(root.join(".git/packed-refs")).unwrap();
    }
    // A common directory elsewhere.
    std::fs::write(root.join(".git/commondir"), "../../outside\n").unwrap();
    assert!(
        check_now(&root, &env(), &root)
            .unwrap_err()
            .contains("shares its objects")
    );
    std::fs::remove_file(root.join(".git/commondir")).unwrap();
    // Two core.worktree lines: git takes the last, the gate checks every one.
    let config = std::fs::read_to_string(root.join(".git/config")).unwrap();
    std::fs::write(
        root.join(".git/config"),
        format!(
            "{config}[core]\n\tworktree = ..\n\tworktree = {}\n",
            base.display()
        ),
    )
    .unwrap();
    assert!(check_now(&root, &env(), &root).is_err());
    // A comment is not a key: it cannot change how the index is read.
    std::fs::write(
        root.join(".git/config"),
        format!("{config}# objectformat sha256\n"),
    )
    .unwrap();
    assert_eq!(hash_size(&root.join(".git")).unwrap(), 20);
}

#[cfg(unix)]
#[test]
fn tracked_files_under_a_link_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    git(&root, &["init", "-q"]);
    std::fs::create_dir_all(root.join("k")).unwrap();
    std::fs::write(root.join("k/id_rsa"), "x").unwrap();
    git(&root, &["add", "k/id_rsa"]);
    assert_eq!(check_now(&root, &env(), &root), Ok(()));
    std::fs::remove_dir_all(root.join("k")).unwrap();
    std::os::unix::fs::symlink("/etc", root.join("k")).unwrap();
    assert!(
        check_now(&root, &env(), &root)
            .unwrap_err()
            .contains("is a link")
    );
}

#[test]
fn git_reads_its_configuration_as_the_gate_does_or_the_gate_asks() {
    // A NUL ends a subsection early for git alone.
    assert!(no_worktree("[core \"fsmonitor\0\"]\n\tabbrev = ./x\n").is_some());
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    git(&root, &["init", "-q"]);
    let config = std::fs::read_to_string(root.join(".git/config")).unwrap();
    for worktree in ["../../home/.ssh #/../../x", "\"..\"/../outside", "a\\b"] {
        std::fs::write(
            root.join(".git/config"),
            format!("{config}[core]\n\tworktree = {worktree}\n"),
        )
        .unwrap();
        assert!(check_now(&root, &env(), &root).is_err(), "{worktree}");
    }
}

#[test]
fn discovery_passes_over_what_is_no_repository_as_git_does() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    git(&root, &["init", "-q"]);
    let config = std::fs::read_to_string(root.join(".git/config")).unwrap();
    std::fs::write(
        root.join(".git/config"),
        format!("{config}[core]\n\tfsmonitor = ./x\n"),
    )
    .unwrap();
    // An empty .git folder below is not a repository: git uses the one above.
    std::fs::create_dir_all(root.join("sub/.git")).unwrap();
    assert!(
        check_now(&root.join("sub"), &env(), &root)
            .unwrap_err()
            .contains("fsmonitor")
    );
    // A gitdir file with a blank git would keep is refused, not guessed at.
    std::fs::remove_dir_all(root.join("sub/.git")).unwrap();
    std::fs::write(root.join("sub/.git"), "gitdir: real \n").unwrap();
    assert!(check_now(&root.join("sub"), &env(), &root).is_err());
}

/// The git directory real git takes from `dir`, if any.
fn git_dir_of(dir: &Path) -> Option<PathBuf> {
    let out = Command::new("git")
        .args(["rev-parse", "--absolute-git-dir"])
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", "/nonexistent-home")
        .env("GIT_CEILING_DIRECTORIES", dir.parent()?.parent()?)
        .output()
        .ok()?;
    out.status.success().then(|| {
        PathBuf::from(String::from_utf8_lossy(&out.stdout).trim_end())
            .canonicalize()
            .unwrap()
    })
}

#[test]
fn the_gate_checks_every_repository_git_might_take() {
    type Plant = fn(&Path);
    let plants: &[(&str, Plant)] = &[
        ("an empty .git folder", |sub| {
            std::fs::create_dir_all(sub.join(".git")).unwrap()
        }),
        ("a .git folder with a bad HEAD", |sub| {
            for d in [".git/objects", ".git/refs"] {
                std::fs::create_dir_all(sub.join(d)).unwrap();
            }
            std::fs::write(sub.join(".git/HEAD"), "refs/heads/main\n").unwrap();
        }),
        ("a .git folder with HEAD without a space", |sub| {
            for d in [".git/objects", ".git/refs"] {
                std::fs::create_dir_all(sub.join(d)).unwrap();
            }
            std::fs::write(sub.join(".git/HEAD"), "ref:refs/heads/main\n").unwrap();
        }),
        ("the folder itself a git directory", |sub| {
            std::fs::create_dir_all(sub.join(".git")).unwrap();
            for d in ["objects", "refs"] {
                std::fs::create_dir_all(sub.join(d)).unwrap();
            }
            std::fs::write(sub.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        }),
        ("objects an executable file", |sub| {
            std::fs::create_dir_all(sub.join(".git/refs")).unwrap();
            std::fs::write(sub.join(".git/objects"), "").unwrap();
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(
                    sub.join(".git/objects"),
                    std::fs::Permissions::from_mode(0o755),
                )
                .unwrap();
            }
            std::fs::write(sub.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
        }),
        ("a .git link that leads nowhere", |sub| {
            #[cfg(unix)]
            std::os::unix::fs::symlink("nowhere", sub.join(".git")).unwrap();
        }),
        ("a .git link to an empty folder", |sub| {
            std::fs::create_dir_all(sub.join("empty")).unwrap();
            #[cfg(unix)]
            std::os::unix::fs::symlink("empty", sub.join(".git")).unwrap();
        }),
        ("HEAD a link into refs", |sub| {
            for d in [".git/objects", ".git/refs"] {
                std::fs::create_dir_all(sub.join(d)).unwrap();
            }
            #[cfg(unix)]
            std::os::unix::fs::symlink("refs/heads/main", sub.join(".git/HEAD")).unwrap();
        }),
    ];
    for (what, plant) in plants {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap().join("project");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        git(&root, &["init", "-q"]);
        plant(&root.join("sub"));
        let candidates: Vec<PathBuf> = discover(&root.join("sub"))
            .unwrap()
            .into_iter()
            .map(|r| r.git_dir)
            .collect();
        let taken = git_dir_of(&root.join("sub")).expect(what);
        assert!(
            candidates.contains(&taken),
            "{what}: git takes {taken:?}, the gate checks {candidates:?}"
        );
    }
}

#[cfg(unix)]
#[test]
fn a_dot_git_link_to_a_gitdir_file_is_followed_as_a_pointer() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let root = base.join("project");
    std::fs::create_dir_all(root.join("sub")).unwrap();
    std::fs::create_dir_all(base.join("outside")).unwrap();
    git(&base.join("outside"), &["init", "-q"]);
    git(&root, &["init", "-q"]);
    std::fs::write(
        root.join("pointer"),
        format!("gitdir: {}\n", base.join("outside/.git").display()),
    )
    .unwrap();
    std::os::unix::fs::symlink(root.join("pointer"), root.join("sub/.git")).unwrap();
    assert_eq!(
        git_dir_of(&root.join("sub")),
        Some(base.join("outside/.git"))
    );
    assert!(check_now(&root.join("sub"), &env(), &root).is_err());
}

#[cfg(unix)]
#[test]
fn a_submodule_git_directory_must_be_a_plain_folder() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let root = base.join("project");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::create_dir_all(base.join("outside")).unwrap();
    git(&base.join("outside"), &["init", "-q"]);
    git(&root, &["init", "-q"]);
    let modules = root.join(".git/modules");
    std::fs::create_dir_all(&modules).unwrap();
    assert_eq!(check_now(&root, &env(), &root), Ok(()));
    std::os::unix::fs::symlink(base.join("outside/.git"), modules.join("sub")).unwrap();
    assert!(
        check_now(&root, &env(), &root)
            .unwrap_err()
            .contains("is a link")
    );
    std::fs::remove_file(modules.join("sub")).unwrap();
    std::fs::write(modules.join("sub"), "gitdir: ../hide\n").unwrap();
    assert!(
        check_now(&root, &env(), &root)
            .unwrap_err()
            .contains("not a folder")
    );
    std::fs::remove_file(modules.join("sub")).unwrap();
    // A nested name: a/b.
    std::fs::create_dir_all(modules.join("a")).unwrap();
    std::fs::write(modules.join("a/b"), "gitdir: ../../hide\n").unwrap();
    assert!(
        check_now(&root, &env(), &root)
            .unwrap_err()
            .contains("not a folder")
    );
    std::fs::remove_dir_all(modules.join("a")).unwrap();
    // A repository whose HEAD is a link to nothing is still one git may use.
    std::fs::create_dir_all(modules.join("sub/objects")).unwrap();
    std::fs::create_dir_all(modules.join("sub/refs")).unwrap();
    std::os::unix::fs::symlink("refs/heads/main", modules.join("sub/HEAD")).unwrap();
    std::fs::write(
        modules.join("sub/config"),
        "[extensions]\n\tpartialClone = origin\n",
    )
    .unwrap();
    assert!(
        check_now(&root, &env(), &root)
            .unwrap_err()
            .contains("partialclone")
    );
}
