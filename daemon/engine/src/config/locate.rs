//! Where each value of a JSON document starts, by path — so a problem found in the parsed
//! value can be reported at its line and column in the file.

use std::collections::HashMap;

/// A path step: an object key or an array index.
pub type Path = Vec<String>;

/// Line and column (1-based) of every key and value, by path (`["providers", "local",
/// "kind"]`). Keys are stored under their path with a trailing `"<key>"` marker removed: the
/// value's position is under the path, the key's under `path + ["#key"]`.
#[derive(Debug, Default)]
pub struct Positions {
    map: HashMap<Path, (usize, usize)>,
}

impl Positions {
    /// Scan valid JSON (as `jsonc::strip` leaves it). Malformed input yields what was found
    /// before the fault.
    pub fn of(json: &str) -> Positions {
        let mut scanner = Scanner {
            bytes: json.as_bytes(),
            i: 0,
            line: 1,
            col: 1,
            positions: Positions::default(),
        };
        scanner.value(&mut Vec::new());
        scanner.positions
    }

    /// The position of the value at `path`, or of its nearest ancestor that has one.
    pub fn value(&self, path: &[String]) -> (usize, usize) {
        let mut p = path.to_vec();
        loop {
            if let Some(pos) = self.map.get(&p) {
                return *pos;
            }
            if p.pop().is_none() {
                return (1, 1);
            }
        }
    }

    /// The position of the key naming the value at `path`.
    pub fn key(&self, path: &[String]) -> (usize, usize) {
        let mut p = path.to_vec();
        p.push("#key".into());
        self.map
            .get(&p)
            .copied()
            .unwrap_or_else(|| self.value(path))
    }
}

struct Scanner<'a> {
    bytes: &'a [u8],
    i: usize,
    line: usize,
    col: usize,
    positions: Positions,
}

impl Scanner<'_> {
    fn bump(&mut self) {
        if let Some(&b) = self.bytes.get(self.i) {
            if b == b'\n' {
                self.line += 1;
                self.col = 1;
            } else if b & 0xC0 != 0x80 {
                // Count characters, not bytes: continuation bytes do not advance the column.
                self.col += 1;
            }
            self.i += 1;
        }
    }

    fn skip_ws(&mut self) {
        while matches!(self.bytes.get(self.i), Some(b' ' | b'\t' | b'\r' | b'\n')) {
            self.bump();
        }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.i).copied()
    }

    fn value(&mut self, path: &mut Path) {
        self.skip_ws();
        self.positions
            .map
            .insert(path.clone(), (self.line, self.col));
        match self.peek() {
            Some(b'{') => {
                self.bump();
                loop {
                    self.skip_ws();
                    match self.peek() {
                        Some(b'}') => {
                            self.bump();
                            return;
                        }
                        Some(b',') => self.bump(),
                        Some(b'"') => {
                            let at = (self.line, self.col);
                            let key = self.string();
                            path.push(key);
                            let mut key_path = path.clone();
                            key_path.push("#key".into());
                            self.positions.map.insert(key_path, at);
                            self.skip_ws();
                            if self.peek() == Some(b':') {
                                self.bump();
                            }
                            self.value(path);
                            path.pop();
                        }
                        _ => return,
                    }
                }
            }
            Some(b'[') => {
                self.bump();
                let mut index = 0;
                loop {
                    self.skip_ws();
                    match self.peek() {
                        Some(b']') => {
                            self.bump();
                            return;
                        }
                        Some(b',') => self.bump(),
                        None => return,
                        Some(_) => {
                            path.push(index.to_string());
                            self.value(path);
                            path.pop();
                            index += 1;
                        }
                    }
                }
            }
            Some(b'"') => {
                self.string();
            }
            Some(_) => {
                while let Some(b) = self.peek() {
                    if matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\r' | b'\n') {
                        break;
                    }
                    self.bump();
                }
            }
            None => {}
        }
    }

    /// A string starting at the quote; returns its (unescaped enough for keys) content.
    fn string(&mut self) -> String {
        self.bump();
        let start = self.i;
        while let Some(b) = self.peek() {
            match b {
                b'\\' => {
                    self.bump();
                    self.bump();
                }
                b'"' => break,
                _ => self.bump(),
            }
        }
        let raw = String::from_utf8_lossy(&self.bytes[start..self.i]).into_owned();
        self.bump();
        serde_json::from_str::<String>(&format!("\"{raw}\"")).unwrap_or(raw)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_of_keys_and_values() {
        let json = "{\n  \"a\": 1,\n  \"b\": {\"c\": [true, \"é\", {\"d\": null}]}\n}";
        let p = Positions::of(json);
        let path = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(p.value(&path(&["a"])), (2, 8));
        assert_eq!(p.key(&path(&["a"])), (2, 3));
        assert_eq!(p.value(&path(&["b", "c", "2", "d"])), (3, 32));
        assert_eq!(
            p.value(&path(&["b", "nope"])),
            (3, 8),
            "falls back to the parent"
        );
    }
}
