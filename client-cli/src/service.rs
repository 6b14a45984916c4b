//! Installing the daemon as a login service: a systemd user unit with socket activation on
//! Linux, a launchd agent on macOS, a scheduled task at logon on Windows.
//!
//! The templates live in `packaging/` and are compiled in; installing renders them with the
//! path of the `stepperd` next to this `stepper`, writes them for the current user, and asks
//! the service manager to enable them (set `STEPPER_NO_SERVICE_MANAGER=1` to only write).
//! Where the stepper package (.deb, .rpm) installed its own user units for this `stepperd`,
//! an install only enables those: it writes nothing the package's removal would leave behind.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, bail};

const SYSTEMD_SOCKET: &str = include_str!("../../packaging/systemd/stepperd.socket");
const SYSTEMD_SERVICE: &str = include_str!("../../packaging/systemd/stepperd.service");
const LAUNCHD_PLIST: &str = include_str!("../../packaging/launchd/dev.stepper.stepperd.plist");
const WINDOWS_TASK: &str = include_str!("../../packaging/windows/stepperd-task.xml");
pub const LAUNCHD_LABEL: &str = "dev.stepper.stepperd";
pub const WINDOWS_TASK_NAME: &str = "stepperd";
/// Where packages put systemd user units (`packaging/dist.sh` builds the stepper package's).
const PACKAGED_UNIT_DIRS: [&str; 2] = ["/usr/lib/systemd/user", "/lib/systemd/user"];
/// Where `systemctl --global enable` links a user unit, for every user.
const GLOBAL_WANTS: &str = "/etc/systemd/user/sockets.target.wants/stepperd.socket";

/// The service manager of this platform, and where its files for this user go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Manager {
    Systemd { unit_dir: PathBuf },
    Launchd { agent_dir: PathBuf },
    Windows { task_file: PathBuf },
}

/// A file to write: where and what.
pub struct UnitFile {
    pub path: PathBuf,
    pub contents: String,
}

impl Manager {
    /// This platform's manager, with paths from the environment (`XDG_CONFIG_HOME`, `HOME`).
    pub fn detect(data_dir: &Path) -> anyhow::Result<Manager> {
        let home = std::env::var_os("HOME").map(PathBuf::from);
        if cfg!(target_os = "macos") {
            let home = home.context("HOME is not set")?;
            return Ok(Manager::Launchd {
                agent_dir: home.join("Library/LaunchAgents"),
            });
        }
        if cfg!(windows) {
            return Ok(Manager::Windows {
                task_file: data_dir.join("stepperd-task.xml"),
            });
        }
        let config = std::env::var_os("XDG_CONFIG_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .or_else(|| home.map(|h| h.join(".config")))
            .context("neither XDG_CONFIG_HOME nor HOME is set")?;
        Ok(Manager::Systemd {
            unit_dir: config.join("systemd/user"),
        })
    }

    /// The files an install writes, rendered for `stepperd`.
    pub fn files(&self, stepperd: &Path, log_dir: &Path) -> Vec<UnitFile> {
        let render = |template: &str| {
            template
                .replace("{{STEPPERD}}", &stepperd.display().to_string())
                .replace("{{LOG_DIR}}", &log_dir.display().to_string())
        };
        match self {
            Manager::Systemd { unit_dir } => vec![
                UnitFile {
                    path: unit_dir.join("stepperd.socket"),
                    contents: render(SYSTEMD_SOCKET),
                },
                UnitFile {
                    path: unit_dir.join("stepperd.service"),
                    contents: render(SYSTEMD_SERVICE),
                },
            ],
            Manager::Launchd { agent_dir } => vec![UnitFile {
                path: agent_dir.join(format!("{LAUNCHD_LABEL}.plist")),
                contents: render(LAUNCHD_PLIST),
            }],
            Manager::Windows { task_file } => vec![UnitFile {
                path: task_file.clone(),
                contents: render(WINDOWS_TASK),
            }],
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            Manager::Systemd { .. } => "systemd (user)",
            Manager::Launchd { .. } => "launchd",
            Manager::Windows { .. } => "Task Scheduler",
        }
    }

    /// Whether the files of an install are present, or the packaged units enabled (for this
    /// user, or for every user).
    pub fn installed(&self, stepperd: &Path, log_dir: &Path) -> bool {
        if let (Manager::Systemd { unit_dir }, Some(_)) = (self, self.packaged(stepperd)) {
            let wants = unit_dir.join("sockets.target.wants/stepperd.socket");
            if wants.exists() || Path::new(GLOBAL_WANTS).exists() {
                return true;
            }
        }
        self.files(stepperd, log_dir)
            .iter()
            .all(|f| f.path.exists())
    }

    /// Whether an administrator enabled the packaged units for every user
    /// (`systemctl --global enable stepperd.socket`), which no user's disable undoes.
    pub fn enabled_globally(&self) -> bool {
        matches!(self, Manager::Systemd { .. }) && Path::new(GLOBAL_WANTS).exists()
    }

    /// The folder of the packaged user units, when a package installed units that start this
    /// `stepperd`.
    pub fn packaged(&self, stepperd: &Path) -> Option<PathBuf> {
        match self {
            Manager::Systemd { .. } => {
                packaged_in(PACKAGED_UNIT_DIRS.iter().map(Path::new), stepperd)
            }
            _ => None,
        }
    }

    /// The commands that enable (or disable) the installed files.
    fn commands(&self, enable: bool) -> Vec<Vec<String>> {
        let v = |args: &[&str]| args.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        match (self, enable) {
            (Manager::Systemd { .. }, true) => vec![
                v(&["systemctl", "--user", "daemon-reload"]),
                v(&["systemctl", "--user", "enable", "--now", "stepperd.socket"]),
            ],
            (Manager::Systemd { .. }, false) => vec![
                v(&[
                    "systemctl",
                    "--user",
                    "disable",
                    "--now",
                    "stepperd.socket",
                    "stepperd.service",
                ]),
                v(&["systemctl", "--user", "daemon-reload"]),
            ],
            (Manager::Launchd { agent_dir }, true) => {
                let plist = agent_dir
                    .join(format!("{LAUNCHD_LABEL}.plist"))
                    .display()
                    .to_string();
                vec![v(&["launchctl", "load", "-w", &plist])]
            }
            (Manager::Launchd { agent_dir }, false) => {
                let plist = agent_dir
                    .join(format!("{LAUNCHD_LABEL}.plist"))
                    .display()
                    .to_string();
                vec![v(&["launchctl", "unload", "-w", &plist])]
            }
            (Manager::Windows { task_file }, true) => vec![
                v(&[
                    "schtasks",
                    "/Create",
                    "/F",
                    "/TN",
                    WINDOWS_TASK_NAME,
                    "/XML",
                    &task_file.display().to_string(),
                ]),
                v(&["schtasks", "/Run", "/TN", WINDOWS_TASK_NAME]),
            ],
            (Manager::Windows { .. }, false) => {
                vec![v(&["schtasks", "/Delete", "/F", "/TN", WINDOWS_TASK_NAME])]
            }
        }
    }

    /// Write the files and enable them. Returns what was written and what the manager said.
    pub fn install(
        &self,
        stepperd: &Path,
        log_dir: &Path,
    ) -> anyhow::Result<(Vec<PathBuf>, Vec<String>)> {
        if !stepperd.is_absolute() || !stepperd.exists() {
            bail!(
                "{} is not an installed stepperd — install both binaries first",
                stepperd.display()
            );
        }
        let mut written = Vec::new();
        if self.packaged(stepperd).is_some() {
            return Ok((written, self.run(true)));
        }
        for file in self.files(stepperd, log_dir) {
            if let Some(dir) = file.path.parent() {
                std::fs::create_dir_all(dir)
                    .with_context(|| format!("creating {}", dir.display()))?;
            }
            std::fs::write(&file.path, &file.contents)
                .with_context(|| format!("writing {}", file.path.display()))?;
            written.push(file.path);
        }
        Ok((written, self.run(true)))
    }

    /// Disable and remove the files. Returns what was removed and what the manager said.
    pub fn uninstall(
        &self,
        stepperd: &Path,
        log_dir: &Path,
    ) -> anyhow::Result<(Vec<PathBuf>, Vec<String>)> {
        let said = self.run(false);
        let mut removed = Vec::new();
        for file in self.files(stepperd, log_dir) {
            match std::fs::remove_file(&file.path) {
                Ok(()) => removed.push(file.path),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => {
                    return Err(e).with_context(|| format!("removing {}", file.path.display()));
                }
            }
        }
        Ok((removed, said))
    }

    /// Run the enable/disable commands; what failed is reported, not fatal (the files are
    /// written either way, and the user can run the commands).
    fn run(&self, enable: bool) -> Vec<String> {
        if std::env::var_os("STEPPER_NO_SERVICE_MANAGER").is_some() {
            return vec![format!(
                "skipped the service manager (STEPPER_NO_SERVICE_MANAGER); run: {}",
                self.describe(enable)
            )];
        }
        let mut said = Vec::new();
        for command in self.commands(enable) {
            let shown = command.join(" ");
            match Command::new(&command[0]).args(&command[1..]).output() {
                Ok(out) if out.status.success() => said.push(format!("ran: {shown}")),
                Ok(out) => {
                    let stderr = String::from_utf8_lossy(&out.stderr);
                    let reason = stderr
                        .lines()
                        .rev()
                        .find(|l| !l.trim().is_empty())
                        .unwrap_or("no reason given");
                    said.push(format!(
                        "{shown} failed ({}) — run it yourself once the service manager is available",
                        reason.trim()
                    ));
                }
                Err(e) => said.push(format!("{shown} could not run ({e})")),
            }
        }
        said
    }

    fn describe(&self, enable: bool) -> String {
        self.commands(enable)
            .iter()
            .map(|c| c.join(" "))
            .collect::<Vec<_>>()
            .join(" && ")
    }
}

/// The first of `dirs` holding a socket unit and a service unit whose `ExecStart` is this
/// `stepperd` (the same file, through any symlinks).
fn packaged_in<'a>(dirs: impl Iterator<Item = &'a Path>, stepperd: &Path) -> Option<PathBuf> {
    let ours = stepperd.canonicalize().ok()?;
    dirs.into_iter()
        .find(|dir| {
            let Ok(service) = std::fs::read_to_string(dir.join("stepperd.service")) else {
                return false;
            };
            dir.join("stepperd.socket").exists()
                && service.lines().any(|line| {
                    line.strip_prefix("ExecStart=").is_some_and(|program| {
                        Path::new(program.trim()).canonicalize().ok().as_ref() == Some(&ours)
                    })
                })
        })
        .map(Path::to_path_buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packaged_units_count_only_when_they_start_this_stepperd() {
        let dir = tempfile::tempdir().unwrap();
        let (units, bin) = (dir.path().join("units"), dir.path().join("bin"));
        std::fs::create_dir_all(&units).unwrap();
        std::fs::create_dir_all(&bin).unwrap();
        let (ours, other) = (bin.join("stepperd"), bin.join("other-stepperd"));
        std::fs::write(&ours, "").unwrap();
        std::fs::write(&other, "").unwrap();
        let manager = Manager::Systemd {
            unit_dir: "/u".into(),
        };
        for f in manager.files(&other, Path::new("/logs")) {
            std::fs::write(units.join(f.path.file_name().unwrap()), f.contents).unwrap();
        }
        let dirs = || [units.as_path()].into_iter();
        assert_eq!(packaged_in(dirs(), &ours), None, "another stepperd's units");
        for f in manager.files(&ours, Path::new("/logs")) {
            std::fs::write(units.join(f.path.file_name().unwrap()), f.contents).unwrap();
        }
        assert_eq!(packaged_in(dirs(), &ours), Some(units.clone()));
        std::fs::remove_file(units.join("stepperd.socket")).unwrap();
        assert_eq!(packaged_in(dirs(), &ours), None, "no socket unit");
    }

    #[test]
    fn templates_render_every_placeholder() {
        let managers = [
            Manager::Systemd {
                unit_dir: "/u".into(),
            },
            Manager::Launchd {
                agent_dir: "/a".into(),
            },
            Manager::Windows {
                task_file: "/t.xml".into(),
            },
        ];
        for m in managers {
            for f in m.files(Path::new("/opt/bin/stepperd"), Path::new("/logs")) {
                assert!(
                    !f.contents.contains("{{"),
                    "{}: {}",
                    f.path.display(),
                    f.contents
                );
                // The socket unit names no program: systemd starts the service that goes with it.
                if f.path.extension().is_none_or(|e| e != "socket") {
                    assert!(
                        f.contents.contains("/opt/bin/stepperd"),
                        "{}",
                        f.path.display()
                    );
                }
            }
        }
    }
}
