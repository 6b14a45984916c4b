//! A small arithmetic expression evaluator: `+ - * / ^`, unary minus and parentheses.

mod lexer;
mod parser;

pub use lexer::Token;

use std::fmt;

#[derive(Debug, Clone, PartialEq)]
pub enum Error {
    UnexpectedChar(char, usize),
    UnexpectedToken(String),
    UnexpectedEnd,
    DivisionByZero,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::UnexpectedChar(c, at) => write!(f, "unexpected character {c:?} at {at}"),
            Error::UnexpectedToken(t) => write!(f, "unexpected {t}"),
            Error::UnexpectedEnd => write!(f, "unexpected end of input"),
            Error::DivisionByZero => write!(f, "division by zero"),
        }
    }
}

impl std::error::Error for Error {}

/// Evaluates an expression such as `2 * (3 + 4) ^ 2`.
pub fn eval(input: &str) -> Result<f64, Error> {
    let tokens = lexer::tokenize(input)?;
    parser::Parser::new(tokens).parse()
}
