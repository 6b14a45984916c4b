use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    Config { line: usize, message: String },
    Full { max: usize },
    UnknownConn(u64),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Config { line, message } => write!(f, "relay.conf line {line}: {message}"),
            Error::Full { max } => write!(f, "server full ({max} clients)"),
            Error::UnknownConn(id) => write!(f, "no connection {id}"),
        }
    }
}

impl std::error::Error for Error {}
