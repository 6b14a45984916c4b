//! The clipboard's image, for Ctrl-V in the TUI: `wl-paste` on Wayland, `xclip` on X11,
//! `osascript` on macOS. Where there is none of these (another system, a terminal over ssh
//! with no display, the program not installed, text on the clipboard), the error says so and
//! what to do instead. The terminal pastes text itself; only an image comes through here.

use std::time::Duration;

/// How long a clipboard program may take: one waiting on a clipboard owner that never
/// answers is given up on.
const WAIT: Duration = Duration::from_secs(5);

/// The image types asked for, in order of preference.
const IMAGE_TYPES: [&str; 4] = ["image/png", "image/jpeg", "image/webp", "image/gif"];

/// Where this system keeps its clipboard, as far as stepper can read an image from it.
#[derive(Debug, PartialEq, Eq)]
enum Clipboard {
    Wayland,
    X11,
    MacOs,
    /// None: why.
    Unavailable(&'static str),
}

/// The clipboard of this system, from its kind and the display variables.
fn clipboard(macos: bool, wayland: bool, x11: bool) -> Clipboard {
    if macos {
        Clipboard::MacOs
    } else if !cfg!(unix) {
        Clipboard::Unavailable(
            "pasting an image is not available on this system — paste the image's path, or \
             name it with @path",
        )
    } else if wayland {
        Clipboard::Wayland
    } else if x11 {
        Clipboard::X11
    } else {
        Clipboard::Unavailable(
            "no clipboard image here: no display (WAYLAND_DISPLAY and DISPLAY are unset, as \
             over ssh) — paste the image's path, or name it with @path",
        )
    }
}

/// The clipboard's image: its bytes, or why there are none.
pub(super) async fn image() -> Result<Vec<u8>, String> {
    let present = |name: &str| std::env::var_os(name).is_some_and(|v| !v.is_empty());
    match clipboard(
        cfg!(target_os = "macos"),
        present("WAYLAND_DISPLAY"),
        present("DISPLAY"),
    ) {
        Clipboard::Wayland => {
            let install = "install wl-clipboard (wl-paste) to paste images";
            let types = run("wl-paste", &["--list-types"], install).await?;
            let kind = image_type(&types)?;
            run("wl-paste", &["--no-newline", "--type", kind], install).await
        }
        Clipboard::X11 => {
            let install = "install xclip to paste images";
            let targets = ["-selection", "clipboard", "-t", "TARGETS", "-o"];
            let types = run("xclip", &targets, install).await?;
            let kind = image_type(&types)?;
            run(
                "xclip",
                &["-selection", "clipboard", "-t", kind, "-o"],
                install,
            )
            .await
        }
        Clipboard::MacOs => {
            let script = ["-e", "the clipboard as «class PNGf»"];
            let said = run("osascript", &script, "osascript was not found")
                .await
                .map_err(|_| NO_IMAGE.to_string())?;
            osascript_png(&String::from_utf8_lossy(&said)).ok_or_else(|| NO_IMAGE.to_string())
        }
        Clipboard::Unavailable(why) => Err(why.to_string()),
    }
}

const NO_IMAGE: &str = "no image on the clipboard — copy one (a screenshot), or paste an image \
                        file's path";

/// The first image type of a clipboard's list of types (one a line).
fn image_type(listed: &[u8]) -> Result<&'static str, String> {
    let listed = String::from_utf8_lossy(listed);
    IMAGE_TYPES
        .into_iter()
        .find(|t| listed.lines().any(|l| l.trim() == *t))
        .ok_or_else(|| NO_IMAGE.to_string())
}

/// The PNG in what `osascript` prints for `«class PNGf»`: `«data PNGf89504E47…»`.
fn osascript_png(said: &str) -> Option<Vec<u8>> {
    let hex = said.trim().strip_prefix("«data PNGf")?.strip_suffix('»')?;
    if hex.len() % 2 != 0 {
        return None;
    }
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect()
}

/// A clipboard program's stdout; `missing` when it is not installed.
async fn run(program: &str, args: &[&str], missing: &str) -> Result<Vec<u8>, String> {
    let child = tokio::process::Command::new(program)
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn();
    let child = match child {
        Ok(child) => child,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(format!("{missing} ({program} was not found)"));
        }
        Err(e) => return Err(format!("could not run {program}: {e}")),
    };
    let out = match tokio::time::timeout(WAIT, child.wait_with_output()).await {
        Ok(Ok(out)) => out,
        Ok(Err(e)) => return Err(format!("could not run {program}: {e}")),
        Err(_) => return Err(format!("{program} did not answer in {}s", WAIT.as_secs())),
    };
    if !out.status.success() {
        // Both programs fail this way when the clipboard is empty or holds no such type.
        return Err(NO_IMAGE.to_string());
    }
    Ok(out.stdout)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clipboard_is_found_by_the_system_and_its_display() {
        assert_eq!(clipboard(true, false, false), Clipboard::MacOs);
        if cfg!(unix) {
            assert_eq!(clipboard(false, true, true), Clipboard::Wayland);
            assert_eq!(clipboard(false, false, true), Clipboard::X11);
        }
        let Clipboard::Unavailable(why) = clipboard(false, false, false) else {
            panic!("a clipboard without a display");
        };
        assert!(
            why.starts_with("no clipboard image here") || !cfg!(unix),
            "{why}"
        );
    }

    #[test]
    fn an_image_type_is_chosen_from_the_clipboards_list() {
        assert_eq!(
            image_type(b"text/plain\nimage/jpeg\nimage/png\n"),
            Ok("image/png")
        );
        assert_eq!(image_type(b"TARGETS\nimage/webp\n"), Ok("image/webp"));
        assert_eq!(
            image_type(b"text/plain\nUTF8_STRING\n"),
            Err(NO_IMAGE.to_string())
        );
    }

    #[test]
    fn osascripts_png_is_read_from_its_hex() {
        assert_eq!(
            osascript_png("«data PNGf89504E470D0A1A0A»\n"),
            Some(b"\x89PNG\r\n\x1a\n".to_vec())
        );
        assert_eq!(osascript_png("«data TIFF4D4D»"), None);
        assert_eq!(osascript_png("«data PNGf8»"), None);
    }

    #[tokio::test]
    async fn a_missing_program_says_what_to_install() {
        let said = run("stepper-no-such-clipboard", &[], "install wl-clipboard")
            .await
            .unwrap_err();
        assert_eq!(
            said,
            "install wl-clipboard (stepper-no-such-clipboard was not found)"
        );
    }
}
