//! What `stepper --version` says besides the version: the commit it was built from and the
//! build date. The commit comes from `git` when building in a checkout (`STEPPER_COMMIT`
//! overrides it, for a build from a source archive); the date from `SOURCE_DATE_EPOCH` when
//! set (reproducible builds: `packaging/dist.sh` sets it to the commit's time), else today.
//!
//! Cheap on incremental builds: the script reruns only when HEAD moves (`.git/HEAD` and the
//! ref it points at) or one of those variables changes.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=STEPPER_COMMIT");
    println!("cargo:rerun-if-env-changed=SOURCE_DATE_EPOCH");
    let commit = std::env::var("STEPPER_COMMIT")
        .ok()
        .filter(|c| !c.is_empty())
        .or_else(git_commit)
        .unwrap_or_else(|| "unknown commit".to_string());
    let epoch = std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|s| s.trim().parse::<i64>().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs() as i64)
        });
    println!("cargo:rustc-env=STEPPER_COMMIT={commit}");
    println!("cargo:rustc-env=STEPPER_BUILD_DATE={}", civil_date(epoch));
}

/// HEAD's short hash, and the files that say where HEAD is, watched for a rebuild. None
/// outside a git checkout or without git.
fn git_commit() -> Option<String> {
    let git = |args: &[&str]| -> Option<String> {
        let out = Command::new("git").args(args).output().ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
            .filter(|s| !s.is_empty())
    };
    let hash = git(&["rev-parse", "--short=12", "HEAD"])?;
    // HEAD lives in the worktree's git folder; the branch it names, loose or packed, in the
    // common one. Only existing files are watched: a missing one would rerun every build.
    let dirs = git(&["rev-parse", "--git-dir", "--git-common-dir"])?;
    let mut dirs = dirs.lines().map(PathBuf::from);
    let (git_dir, common) = (dirs.next()?, dirs.next()?);
    let mut watch = vec![git_dir.join("HEAD"), common.join("packed-refs")];
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watch.push(common.join(branch));
    }
    for path in watch.iter().filter(|p| p.exists()) {
        println!("cargo:rerun-if-changed={}", absolute(path).display());
    }
    Some(hash)
}

/// Paths git prints relative to the current folder (the crate's, where cargo runs this).
fn absolute(path: &Path) -> PathBuf {
    std::env::current_dir().map_or_else(|_| path.to_path_buf(), |cwd| cwd.join(path))
}

/// YYYY-MM-DD (UTC) of a Unix time: Howard Hinnant's days-to-civil algorithm.
fn civil_date(epoch: i64) -> String {
    let z = epoch.div_euclid(86_400) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}
