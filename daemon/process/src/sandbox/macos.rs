//! macOS: the Seatbelt profile `sandbox-exec` applies to a command. A pure function, so it is
//! built and tested on every OS. Paths go in as parameters (`-DWRITABLE_ROOT_0=…`), never
//! into the profile's text, so no path can change what the profile says.

use std::ffi::OsString;
use std::path::Path;

use super::Policy;

/// `sandbox-exec` at its fixed place: one found on `PATH` could be anyone's.
pub const SANDBOX_EXEC: &str = "/usr/bin/sandbox-exec";

/// What every command needs, whatever the policy: to run programs and children of its own,
/// read system facts, and the services the C library and the Security framework call.
const BASE: &str = r#"(version 1)
(deny default)
(allow process-exec)
(allow process-fork)
(allow signal (target same-sandbox))
(allow process-info* (target same-sandbox))
(allow sysctl-read)
(allow file-read-metadata)
(allow ipc-posix-sem)
(allow ipc-posix-shm-read-data)
(allow ipc-posix-shm-write-data)
(allow pseudo-tty)
(allow file-read* file-write* file-ioctl (literal "/dev/ptmx") (regex #"^/dev/ttys[0-9]+$"))
(allow file-write-data file-ioctl
  (literal "/dev/null") (literal "/dev/zero") (literal "/dev/dtracehelper"))
(allow mach-lookup
  (global-name "com.apple.system.opendirectoryd.libinfo")
  (global-name "com.apple.system.notification_center")
  (global-name "com.apple.logd")
  (global-name "com.apple.trustd.agent")
  (global-name "com.apple.SecurityServer")
  (global-name "com.apple.coreservices.launchservicesd")
  (global-name "com.apple.lsd.mapdb"))
"#;

/// The profile for `policy` and the parameters it reads, in order.
///
/// Seatbelt matches paths, not files: a read-only path stays so whatever is renamed, and
/// the folders between it and its writable root are pinned (`literal`: they cannot be
/// renamed, removed or replaced by a link, though what is in them can change), so `.git`
/// cannot be swapped for a link to a repository of the command's making. Hidden paths are
/// left out of every read rule (their metadata stays readable, as everywhere).
pub fn profile(policy: &Policy) -> (String, Vec<(String, OsString)>) {
    let mut text = String::from(BASE);
    let mut params = Vec::new();
    let mut param = |prefix: &str, i: usize, path: &Path| {
        let key = format!("{prefix}_{i}");
        params.push((key.clone(), path.as_os_str().to_os_string()));
        key
    };
    let hidden: Vec<(String, &Path)> = policy
        .hidden
        .iter()
        .enumerate()
        .map(|(i, p)| (param("HIDDEN", i, p), p.as_path()))
        .collect();
    // `(require-not (subpath H))` for each hidden path `within` allows.
    let not_hidden = |within: &dyn Fn(&Path) -> bool| -> String {
        hidden
            .iter()
            .filter(|(_, p)| within(p))
            .map(|(key, _)| format!(" (require-not (subpath (param \"{key}\")))"))
            .collect()
    };
    let everywhere = not_hidden(&|_| true);
    match &policy.readable {
        None if everywhere.is_empty() => text.push_str("(allow file-read*)\n"),
        None => text.push_str(&format!("(allow file-read* (require-all{everywhere}))\n")),
        Some(roots) => {
            text.push_str("(allow file-read* (require-all (require-any");
            for (i, root) in roots.iter().enumerate() {
                let key = param("READABLE_ROOT", i, root);
                text.push_str(&format!(" (subpath (param \"{key}\"))"));
            }
            text.push_str(&format!("){everywhere}))\n"));
        }
    }
    let read_only: Vec<(String, &Path)> = policy
        .read_only
        .iter()
        .enumerate()
        .map(|(i, p)| (param("READ_ONLY", i, p), p.as_path()))
        .collect();
    let mut pins = 0;
    for (i, root) in policy.writable.iter().enumerate() {
        let key = param("WRITABLE_ROOT", i, root);
        let mut rule = format!("(require-all (subpath (param \"{key}\"))");
        for (ro_key, path) in read_only.iter().filter(|(_, p)| p.starts_with(root)) {
            rule.push_str(&format!(" (require-not (subpath (param \"{ro_key}\")))"));
            for folder in path
                .ancestors()
                .skip(1)
                .take_while(|a| *a != root.as_path() && a.starts_with(root))
            {
                let pin = param("PINNED", pins, folder);
                pins += 1;
                rule.push_str(&format!(" (require-not (literal (param \"{pin}\")))"));
            }
        }
        rule.push(')');
        text.push_str(&format!("(allow file-write* {rule})\n"));
        // Readable, as on Linux, even inside a hidden path: it was asked for by name.
        let inside = not_hidden(&|p| p.starts_with(root));
        text.push_str(&format!(
            "(allow file-read* (require-all (subpath (param \"{key}\")){inside}))\n"
        ));
    }
    if policy.network {
        // Internet sockets only: a Unix socket reaches processes outside the sandbox.
        text.push_str(
            "(allow network-outbound (remote ip))\n(allow network-inbound (local ip))\n\
             (allow network-bind (local ip))\n(allow system-socket)\n\
             (allow mach-lookup (global-name \"com.apple.dnssd.service\"))\n",
        );
    }
    (text, params)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workspace_write_without_network() {
        let (text, params) = profile(&Policy {
            writable: vec!["/Users/me/p".into(), "/private/tmp".into()],
            ..Policy::default()
        });
        assert!(text.starts_with("(version 1)\n(deny default)\n"));
        assert!(text.contains("\n(allow file-read*)\n"), "reads everywhere");
        assert!(
            text.contains(
                "(allow file-write* (require-all (subpath (param \"WRITABLE_ROOT_0\"))))\n"
            )
        );
        assert!(
            text.contains(
                "(allow file-write* (require-all (subpath (param \"WRITABLE_ROOT_1\"))))\n"
            )
        );
        assert!(!text.contains("network-outbound"), "no network");
        assert!(
            !text.contains("/Users/me"),
            "paths are parameters, not text"
        );
        assert_eq!(
            params,
            vec![
                ("WRITABLE_ROOT_0".to_string(), OsString::from("/Users/me/p")),
                (
                    "WRITABLE_ROOT_1".to_string(),
                    OsString::from("/private/tmp")
                ),
            ]
        );
    }

    #[test]
    fn read_only_with_restricted_reads_and_network() {
        let (text, params) = profile(&Policy {
            readable: Some(vec!["/usr".into(), "/Users/me/p".into()]),
            network: true,
            ..Policy::default()
        });
        assert!(!text.contains("(allow file-write*"), "nothing writable");
        assert!(!text.contains("\n(allow file-read*)\n"));
        assert!(text.contains(
            "(allow file-read* (require-all (require-any (subpath (param \"READABLE_ROOT_0\")) (subpath (param \"READABLE_ROOT_1\")))))"
        ));
        assert!(text.contains("(allow network-outbound (remote ip))"));
        assert!(
            !text.contains("unix-socket"),
            "no Unix sockets even with network"
        );
        assert_eq!(params.len(), 2);
        assert!(balanced(&text), "{text}");
    }

    /// Balanced parentheses: sandbox-exec refuses a profile that is not.
    fn balanced(text: &str) -> bool {
        let depth = text.chars().try_fold(0i32, |d, c| match c {
            '(' => Some(d + 1),
            ')' if d > 0 => Some(d - 1),
            ')' => None,
            _ => Some(d),
        });
        depth == Some(0)
    }

    #[test]
    fn protected_paths_stay_read_only_and_hidden_paths_unread() {
        let (text, params) = profile(&Policy {
            writable: vec!["/Users/me/p".into(), "/Users/me".into()],
            read_only: vec!["/Users/me/p/.git/hooks".into()],
            hidden: vec!["/Users/me/.ssh".into()],
            ..Policy::default()
        });
        let key = |name: &str| -> String {
            params
                .iter()
                .find(|(_, v)| v == name)
                .map(|(k, _)| k.clone())
                .unwrap_or_else(|| panic!("{name} in {params:?}"))
        };
        let (p, ro, git, home, ssh) = (
            key("/Users/me/p"),
            key("/Users/me/p/.git/hooks"),
            key("/Users/me/p/.git"),
            key("/Users/me"),
            key("/Users/me/.ssh"),
        );
        assert!(text.contains(&format!(
            "(allow file-write* (require-all (subpath (param \"{p}\")) (require-not (subpath (param \"{ro}\"))) (require-not (literal (param \"{git}\")))))"
        )), "{text}");
        // Reads everywhere but the hidden path, and in the writable root that holds it.
        assert!(
            text.contains(&format!(
                "(allow file-read* (require-all (require-not (subpath (param \"{ssh}\")))))"
            )),
            "{text}"
        );
        assert!(text.contains(&format!(
            "(allow file-read* (require-all (subpath (param \"{home}\")) (require-not (subpath (param \"{ssh}\")))))"
        )), "{text}");
        assert!(!text.contains("\n(allow file-read*)\n"));
        assert!(balanced(&text), "{text}");
    }

    #[test]
    fn the_command_runs_through_the_fixed_sandbox_exec() {
        let policy = Policy {
            writable: vec!["/p".into()],
            ..Policy::default()
        };
        let wrapped = policy.wrap(std::path::Path::new("/x/stepperd"));
        if cfg!(target_os = "macos") {
            let w = wrapped.unwrap();
            assert_eq!(w.program, std::path::PathBuf::from(SANDBOX_EXEC));
            assert_eq!(w.args[0], "-p");
            assert!(w.args.contains(&OsString::from("-DWRITABLE_ROOT_0=/p")));
            assert_eq!(w.args.last().unwrap(), "--");
        } else if cfg!(target_os = "linux") {
            let w = wrapped.unwrap();
            assert_eq!(w.program, std::path::PathBuf::from("/x/stepperd"));
            assert_eq!(&w.args[..], &["sandbox", "--write", "/p", "--"]);
        }
    }
}
