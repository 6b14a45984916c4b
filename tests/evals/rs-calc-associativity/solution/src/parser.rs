//! Recursive descent over the grammar
//!
//! ```text
//! expr   = term (("+" | "-") term)*
//! term   = unary (("*" | "/") unary)*
//! unary  = "-" unary | power
//! power  = atom ("^" unary)?
//! atom   = number | "(" expr ")"
//! ```

use crate::lexer::Token;
use crate::Error;

pub struct Parser {
    tokens: Vec<Token>,
    pos: usize,
}

impl Parser {
    pub fn new(tokens: Vec<Token>) -> Self {
        Parser { tokens, pos: 0 }
    }

    pub fn parse(mut self) -> Result<f64, Error> {
        let value = self.expr()?;
        match self.peek() {
            None => Ok(value),
            Some(t) => Err(Error::UnexpectedToken(format!("{t:?}"))),
        }
    }

    fn peek(&self) -> Option<Token> {
        self.tokens.get(self.pos).copied()
    }

    fn next(&mut self) -> Option<Token> {
        let t = self.peek();
        self.pos += 1;
        t
    }

    fn expr(&mut self) -> Result<f64, Error> {
        let mut value = self.term()?;
        loop {
            match self.peek() {
                Some(Token::Plus) => {
                    self.next();
                    value += self.term()?;
                }
                Some(Token::Minus) => {
                    self.next();
                    value -= self.term()?;
                }
                _ => return Ok(value),
            }
        }
    }

    fn term(&mut self) -> Result<f64, Error> {
        let mut value = self.unary()?;
        loop {
            match self.peek() {
                Some(Token::Star) => {
                    self.next();
                    value *= self.unary()?;
                }
                Some(Token::Slash) => {
                    self.next();
                    let right = self.unary()?;
                    if right == 0.0 {
                        return Err(Error::DivisionByZero);
                    }
                    value /= right;
                }
                _ => return Ok(value),
            }
        }
    }

    fn unary(&mut self) -> Result<f64, Error> {
        if self.peek() == Some(Token::Minus) {
            self.next();
            return Ok(-self.unary()?);
        }
        self.power()
    }

    fn power(&mut self) -> Result<f64, Error> {
        let base = self.atom()?;
        if self.peek() == Some(Token::Caret) {
            self.next();
            let exp = self.unary()?;
            return Ok(base.powf(exp));
        }
        Ok(base)
    }

    fn atom(&mut self) -> Result<f64, Error> {
        match self.next() {
            Some(Token::Num(n)) => Ok(n),
            Some(Token::LParen) => {
                let value = self.expr()?;
                match self.next() {
                    Some(Token::RParen) => Ok(value),
                    Some(t) => Err(Error::UnexpectedToken(format!("{t:?}"))),
                    None => Err(Error::UnexpectedEnd),
                }
            }
            Some(t) => Err(Error::UnexpectedToken(format!("{t:?}"))),
            None => Err(Error::UnexpectedEnd),
        }
    }
}
