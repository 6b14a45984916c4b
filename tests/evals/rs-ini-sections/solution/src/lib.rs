//! A small INI reader.

use std::collections::HashMap;
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// 1-based line number.
    pub line: usize,
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

impl std::error::Error for ParseError {}

#[derive(Debug, Default, Clone)]
pub struct Ini {
    values: HashMap<String, String>,
    /// Named sections, in the order they first appear.
    sections: Vec<(String, HashMap<String, String>)>,
}

impl Ini {
    pub fn parse(text: &str) -> Result<Ini, ParseError> {
        let mut ini = Ini::default();
        // None: the top section; Some(i): ini.sections[i].
        let mut current: Option<usize> = None;
        for (index, raw) in text.lines().enumerate() {
            let line = raw.trim();
            if line.is_empty() || line.starts_with(';') || line.starts_with('#') {
                continue;
            }
            let error = |message: String| ParseError {
                line: index + 1,
                message,
            };
            if let Some(rest) = line.strip_prefix('[') {
                let name = rest
                    .strip_suffix(']')
                    .ok_or_else(|| error(format!("unclosed section header {line:?}")))?
                    .trim();
                if name.is_empty() {
                    return Err(error("empty section name".to_string()));
                }
                current = Some(match ini.sections.iter().position(|(n, _)| n == name) {
                    Some(i) => i,
                    None => {
                        ini.sections.push((name.to_string(), HashMap::new()));
                        ini.sections.len() - 1
                    }
                });
                continue;
            }
            let (key, value) = split_pair(line)
                .ok_or_else(|| error(format!("expected `key = value`, found {line:?}")))?;
            let map = match current {
                None => &mut ini.values,
                Some(i) => &mut ini.sections[i].1,
            };
            map.insert(key.to_string(), value.to_string());
        }
        Ok(ini)
    }

    /// The value of `key` in the top (unnamed) section.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.values.get(key).map(String::as_str)
    }

    /// The value of `key` in the named `section`.
    pub fn get_in(&self, section: &str, key: &str) -> Option<&str> {
        self.sections
            .iter()
            .find(|(name, _)| name == section)
            .and_then(|(_, values)| values.get(key))
            .map(String::as_str)
    }

    /// The named sections, in the order they first appear.
    pub fn sections(&self) -> Vec<&str> {
        self.sections
            .iter()
            .map(|(name, _)| name.as_str())
            .collect()
    }

    pub fn len(&self) -> usize {
        self.values.len()
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }
}

fn split_pair(line: &str) -> Option<(&str, &str)> {
    let (key, value) = line.split_once('=')?;
    let key = key.trim();
    if key.is_empty() {
        return None;
    }
    Some((key, unquote(value.trim())))
}

fn unquote(value: &str) -> &str {
    if value.len() >= 2 && value.starts_with('"') && value.ends_with('"') {
        &value[1..value.len() - 1]
    } else {
        value
    }
}
