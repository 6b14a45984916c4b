//! macOS: the Seatbelt profile `sandbox-exec` applies to a command. A pure function, so it is
//! built and tested on every OS. Paths go in as parameters (`-DWRITABLE_ROOT_0=…`), never
//! into the profile's text, so no path can change what the profile says.

use std::ffi::OsString;

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
pub fn profile(policy: &Policy) -> (String, Vec<(String, OsString)>) {
    let mut text = String::from(BASE);
    let mut params = Vec::new();
    match &policy.readable {
        None => text.push_str("(allow file-read*)\n"),
        Some(roots) => {
            text.push_str("(allow file-read*");
            for (i, root) in roots.iter().enumerate() {
                let key = format!("READABLE_ROOT_{i}");
                text.push_str(&format!(" (subpath (param \"{key}\"))"));
                params.push((key, root.clone().into_os_string()));
            }
            text.push_str(")\n");
        }
    }
    if !policy.writable.is_empty() {
        text.push_str("(allow file-write*");
        for (i, root) in policy.writable.iter().enumerate() {
            let key = format!("WRITABLE_ROOT_{i}");
            text.push_str(&format!(" (subpath (param \"{key}\"))"));
            params.push((key, root.clone().into_os_string()));
        }
        text.push_str(")\n");
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
        assert!(text.contains(
            "(allow file-write* (subpath (param \"WRITABLE_ROOT_0\")) (subpath (param \"WRITABLE_ROOT_1\")))"
        ));
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
        assert!(
            !text.contains("(allow file-write* (subpath"),
            "nothing writable"
        );
        assert!(!text.contains("\n(allow file-read*)\n"));
        assert!(text.contains(
            "(allow file-read* (subpath (param \"READABLE_ROOT_0\")) (subpath (param \"READABLE_ROOT_1\")))"
        ));
        assert!(text.contains("(allow network-outbound (remote ip))"));
        assert!(
            !text.contains("unix-socket"),
            "no Unix sockets even with network"
        );
        assert_eq!(params.len(), 2);
        // Balanced parentheses: sandbox-exec refuses a profile that is not.
        let depth = text.chars().try_fold(0i32, |d, c| match c {
            '(' => Some(d + 1),
            ')' if d > 0 => Some(d - 1),
            ')' => None,
            _ => Some(d),
        });
        assert_eq!(depth, Some(0));
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
