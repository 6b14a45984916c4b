//! `stepper`'s exit codes, by kind: scripts branch on them (the README's "Exit codes" and
//! `stepper ask --help` list them).
//!
//! A command gives an error its code where it knows better ([`ExitWith`]); any other error
//! from the daemon is coded by what it is ([`code_of`]): the daemon not running, lost or
//! not answering the handshake is [`DAEMON`]; the daemon's error kinds about the model's
//! provider or a sign-in (`providerUnavailable`, `auth`) are [`PROVIDER`]; a daemon that
//! answers with another version or is stopping (`versionMismatch`, `shuttingDown`) is
//! [`DAEMON`]; everything else, `invalidParams` included (a command passes the user's flags
//! on, and marks as [`USAGE`] those it checks itself, and the `invalidParams` of a call
//! made of nothing but flags: [`flags_checked`]), is [`FAILED`].

use stepper_protocol::client::ClientError;
use stepper_protocol::error::ErrorKind;

/// Something else failed: the turn failed, a file could not be read, the daemon refused.
pub const FAILED: u8 = 1;
/// The command line was wrong: a flag, a missing or empty prompt, stdin that is not text,
/// a file to attach that is not an image or PDF or is too large.
pub const USAGE: u8 = 2;
/// The model's provider: it is not set up (no key, sign-in or address), or it refused or
/// failed the turn (a bad key, a rate limit, an overload, a broken answer); or a sign-in
/// failed.
pub const PROVIDER: u8 = 3;
/// The turn completed, but tool calls it asked for were denied (nobody could answer, or
/// someone said no): `permissionDenials` lists them.
pub const DENIED: u8 = 4;
/// The daemon could not be started or reached, or was lost during the turn.
pub const DAEMON: u8 = 5;
/// The turn was interrupted (Ctrl-C, another client, the daemon stopping).
pub const INTERRUPTED: u8 = 130;

/// The codes as `--help` lists them.
pub const HELP: &str = "Exit codes:
  0    the turn completed
  1    it failed otherwise (the reason is printed)
  2    usage: a bad flag, no prompt, stdin that is not text, an attachment
       that is not an image or PDF or is too large
  3    the model's provider is not set up, or it refused or failed the turn;
       or a sign-in failed
  4    the turn completed, but tool calls were denied (listed on stderr)
  5    the daemon could not be started or reached, or was lost
  130  the turn was interrupted";

/// An error that ends the program with `code` (see [`crate::exit`]); what it says is the
/// error's.
#[derive(Debug)]
pub struct Coded {
    pub code: u8,
    pub error: anyhow::Error,
}

impl std::fmt::Display for Coded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:#}", self.error)
    }
}

impl std::error::Error for Coded {}

/// `Result::exit_with(code)`: its error ends the program with `code`.
pub trait ExitWith<T> {
    fn exit_with(self, code: u8) -> anyhow::Result<T>;
}

impl<T, E: Into<anyhow::Error>> ExitWith<T> for Result<T, E> {
    fn exit_with(self, code: u8) -> anyhow::Result<T> {
        self.map_err(|e| {
            anyhow::Error::new(Coded {
                code,
                error: e.into(),
            })
        })
    }
}

/// The code an error ends the program with: its own when it has one, else that of the
/// daemon's error in it (see the module's doc), else [`FAILED`].
pub fn code_of(error: &anyhow::Error) -> u8 {
    if let Some(coded) = error.chain().find_map(|e| e.downcast_ref::<Coded>()) {
        return coded.code;
    }
    find::<ClientError>(error).map_or(FAILED, code_of_client)
}

/// A call whose params are all the user's command line: the daemon's `invalidParams` is a
/// [`USAGE`] error (a flag's value it refused), coded here; other errors keep theirs.
pub fn flags_checked<T>(result: Result<T, ClientError>) -> anyhow::Result<T> {
    match result {
        Err(e) if e.kind() == Some(ErrorKind::InvalidParams) => Err(e).exit_with(USAGE),
        other => Ok(other?),
    }
}

/// The code of an error the daemon (or the way to it) gave.
fn code_of_client(error: &ClientError) -> u8 {
    match error {
        ClientError::NotRunning { .. }
        | ClientError::Connect { .. }
        | ClientError::Handshake { .. }
        | ClientError::Disconnected
        | ClientError::Timeout(_) => DAEMON,
        ClientError::Rpc { kind, .. } => match kind {
            Some(ErrorKind::ProviderUnavailable | ErrorKind::Auth) => PROVIDER,
            Some(ErrorKind::VersionMismatch | ErrorKind::ShuttingDown) => DAEMON,
            _ => FAILED,
        },
        ClientError::TooLarge { .. } | ClientError::Decode(_) => FAILED,
    }
}

/// The first error of type `T` in `error`'s chain, looking inside [`Coded`] errors too.
pub fn find<T: std::error::Error + Send + Sync + 'static>(error: &anyhow::Error) -> Option<&T> {
    error.chain().find_map(|e| {
        e.downcast_ref::<T>()
            .or_else(|| e.downcast_ref::<Coded>().and_then(|c| find(&c.error)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rpc(kind: Option<ErrorKind>) -> anyhow::Error {
        ClientError::Rpc {
            code: kind.map_or(-32000, ErrorKind::code),
            message: "said".into(),
            kind,
            hint: None,
        }
        .into()
    }

    #[test]
    fn an_uncoded_daemon_error_exits_by_its_kind() {
        let socket = std::path::PathBuf::from("/run/stepperd.sock");
        let daemon = [
            ClientError::NotRunning {
                socket: socket.clone(),
            },
            ClientError::Handshake {
                socket,
                message: "closed".into(),
            },
            ClientError::Disconnected,
        ];
        for e in daemon {
            assert_eq!(code_of(&e.into()), DAEMON);
        }
        for (kind, code) in [
            (Some(ErrorKind::ProviderUnavailable), PROVIDER),
            (Some(ErrorKind::Auth), PROVIDER),
            (Some(ErrorKind::VersionMismatch), DAEMON),
            (Some(ErrorKind::ShuttingDown), DAEMON),
            (Some(ErrorKind::InvalidParams), FAILED),
            (Some(ErrorKind::SessionNotFound), FAILED),
            (Some(ErrorKind::Unreachable), FAILED),
            (None, FAILED),
        ] {
            assert_eq!(code_of(&rpc(kind)), code, "{kind:?}");
        }
        // Wrapped in context, it is still found.
        let wrapped = rpc(Some(ErrorKind::ProviderUnavailable)).context("creating the session");
        assert_eq!(code_of(&wrapped), PROVIDER);
    }

    #[test]
    fn a_commands_own_code_wins_and_flags_make_invalid_params_usage() {
        let coded: anyhow::Result<()> = Err(ClientError::Disconnected).exit_with(FAILED);
        assert_eq!(code_of(&coded.unwrap_err()), FAILED);
        let refused: Result<(), ClientError> = Err(ClientError::Rpc {
            code: ErrorKind::InvalidParams.code(),
            message: "a bad name".into(),
            kind: Some(ErrorKind::InvalidParams),
            hint: None,
        });
        assert_eq!(code_of(&flags_checked(refused).unwrap_err()), USAGE);
        let lost: Result<(), ClientError> = Err(ClientError::Disconnected);
        assert_eq!(code_of(&flags_checked(lost).unwrap_err()), DAEMON);
        assert_eq!(code_of(&anyhow::anyhow!("a file")), FAILED);
    }
}
