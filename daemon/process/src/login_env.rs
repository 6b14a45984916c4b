//! The login shell's environment, for a daemon started at login (systemd, launchd) that has
//! none of what the user's shell profile exports — PATH additions, API keys, tool settings.
//!
//! The shell runs once, as a login and interactive shell (so both profile and rc files are
//! read), prints its environment between markers (rc files may print banners), and is killed
//! if it does not finish in time.

use std::collections::BTreeMap;
use std::process::Stdio;
use std::time::Duration;

const BEGIN: &str = "__STEPPER_ENV_BEGIN__";
const END: &str = "__STEPPER_ENV_END__";

#[derive(Debug, thiserror::Error)]
pub enum LoginEnvError {
    #[error("cannot run the login shell {shell}: {source}")]
    Spawn {
        shell: String,
        source: std::io::Error,
    },
    #[error("the login shell {shell} did not print its environment within {timeout:?}")]
    Timeout { shell: String, timeout: Duration },
    #[error("the login shell {shell} printed no environment (exit {status})")]
    NoOutput { shell: String, status: String },
}

/// The user's login shell: `SHELL`, else the password database's, else `/bin/sh`.
pub fn login_shell() -> String {
    if let Some(shell) = std::env::var_os("SHELL").filter(|s| !s.is_empty()) {
        return shell.to_string_lossy().into_owned();
    }
    #[cfg(unix)]
    if let Ok(Some(user)) = nix::unistd::User::from_uid(nix::unistd::getuid()) {
        return user.shell.display().to_string();
    }
    "/bin/sh".into()
}

/// Run `shell` as a login shell and return its environment.
pub async fn resolve(
    shell: &str,
    timeout: Duration,
) -> Result<BTreeMap<String, String>, LoginEnvError> {
    let script = format!("printf '%s\\0' {BEGIN}; env -0; printf '%s\\0' {END}");
    let mut command = tokio::process::Command::new(shell);
    command
        .args(["-l", "-i", "-c", &script])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    // In a group of its own, like every child: what the rc files start dies with it, and a
    // daemon crash meanwhile leaves it to the child registry.
    let mut child = crate::group::spawn(command).map_err(|source| LoginEnvError::Spawn {
        shell: shell.into(),
        source,
    })?;
    let mut stdout = child.child_mut().stdout.take();
    let run = async {
        let mut out = Vec::new();
        if let Some(pipe) = stdout.as_mut() {
            tokio::io::AsyncReadExt::read_to_end(pipe, &mut out).await?;
        }
        let status = child.wait().await?;
        Ok::<_, std::io::Error>((out, status))
    };
    let (stdout, status) = match tokio::time::timeout(timeout, run).await {
        Ok(Ok(done)) => done,
        Ok(Err(source)) => {
            return Err(LoginEnvError::Spawn {
                shell: shell.into(),
                source,
            });
        }
        // The child is dropped on return, which kills its group.
        Err(_) => {
            return Err(LoginEnvError::Timeout {
                shell: shell.into(),
                timeout,
            });
        }
    };
    let mut env = parse(&stdout);
    // The token of the shell's own group, not part of the user's environment.
    env.remove(crate::registry::GROUP_VAR);
    if env.is_empty() {
        return Err(LoginEnvError::NoOutput {
            shell: shell.into(),
            status: status.to_string(),
        });
    }
    Ok(env)
}

/// The `NAME=value` entries between the markers of NUL-separated output.
fn parse(stdout: &[u8]) -> BTreeMap<String, String> {
    let text = String::from_utf8_lossy(stdout);
    let mut entries = text.split('\0');
    let mut env = BTreeMap::new();
    if !entries.any(|e| e.ends_with(BEGIN)) {
        return env;
    }
    for entry in entries {
        if entry == END {
            break;
        }
        if let Some((k, v)) = entry.split_once('=') {
            // The shell's own bookkeeping is not part of the user's environment.
            if !k.is_empty() && k != "_" && k != "SHLVL" && k != "PWD" && k != "OLDPWD" {
                env.insert(k.to_string(), v.to_string());
            }
        }
    }
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn banners_around_the_markers_are_ignored() {
        let out = b"Welcome!\nmotd\0__STEPPER_ENV_BEGIN__\0PATH=/a:/b\0MULTI=line1\nline2\0_=/usr/bin/env\0__STEPPER_ENV_END__\0bye";
        let env = parse(out);
        assert_eq!(env.get("PATH").map(String::as_str), Some("/a:/b"));
        assert_eq!(env.get("MULTI").map(String::as_str), Some("line1\nline2"));
        assert!(!env.contains_key("_"));
        assert!(parse(b"no markers").is_empty());
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn a_real_login_shell_and_one_that_hangs() {
        let env = resolve("/bin/sh", Duration::from_secs(10)).await.unwrap();
        assert!(env.contains_key("PATH"), "{env:?}");
        let dir = std::env::temp_dir().join(format!("stepper-hang-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let hang = dir.join("hang.sh");
        std::fs::write(&hang, "#!/bin/sh\nexec sleep 30\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&hang, std::fs::Permissions::from_mode(0o755)).unwrap();
        let started = std::time::Instant::now();
        let err = resolve(hang.to_str().unwrap(), Duration::from_millis(300))
            .await
            .unwrap_err();
        assert!(matches!(err, LoginEnvError::Timeout { .. }), "{err}");
        assert!(started.elapsed() < Duration::from_secs(5));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
