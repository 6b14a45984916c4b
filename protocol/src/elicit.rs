//! The form an `ElicitationRequested` asks for, read from its schema, as every client shows
//! it: one field per property (strings, numbers, integers, booleans, choices), what the user
//! typed checked and turned into the value `session/elicit` sends.

pub use serde_json::Value;

/// What `session/elicit` sends with `accept`: the fields entered, by name.
pub type Content = serde_json::Map<String, Value>;

/// One field of the form.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    pub name: String,
    /// What to call it: the property's `title`, else its name.
    pub title: String,
    pub description: Option<String>,
    pub kind: FieldKind,
    pub required: bool,
    pub default: Option<Value>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum FieldKind {
    Text,
    Number,
    Integer,
    Boolean,
    /// One of these values (with what to show for each).
    Choice(Vec<(String, String)>),
    /// Any of these values (an array), typed as a comma-separated list.
    Choices(Vec<(String, String)>),
}

/// The fields of `schema`, in its order.
pub fn fields(schema: &Value) -> Vec<Field> {
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(properties) = schema["properties"].as_object() else {
        return Vec::new();
    };
    properties
        .iter()
        .map(|(name, p)| {
            let choices = choices(p);
            let many = if p["type"] == "array" {
                let items = &p["items"];
                let mut options = choices_of(items);
                if options.is_empty() {
                    options = p["items"]["anyOf"]
                        .as_array()
                        .map(|o| consts(o))
                        .unwrap_or_default();
                }
                options
            } else {
                Vec::new()
            };
            let kind = if !many.is_empty() {
                FieldKind::Choices(many)
            } else if !choices.is_empty() {
                FieldKind::Choice(choices)
            } else {
                match p["type"].as_str() {
                    Some("number") => FieldKind::Number,
                    Some("integer") => FieldKind::Integer,
                    Some("boolean") => FieldKind::Boolean,
                    _ => FieldKind::Text,
                }
            };
            Field {
                name: name.clone(),
                title: p["title"].as_str().unwrap_or(name).to_string(),
                description: p["description"].as_str().map(str::to_string),
                kind,
                required: required.contains(&name.as_str()),
                default: p.get("default").cloned(),
            }
        })
        .collect()
}

fn choices(p: &Value) -> Vec<(String, String)> {
    choices_of(p)
}

/// `{const, title}` options.
fn consts(options: &[Value]) -> Vec<(String, String)> {
    options
        .iter()
        .filter_map(|o| {
            let v = o["const"].as_str()?.to_string();
            let shown = o["title"]
                .as_str()
                .map_or_else(|| v.clone(), str::to_string);
            Some((v, shown))
        })
        .collect()
}

/// `enum` (with `enumNames`), or `oneOf` of `{const, title}`.
fn choices_of(p: &Value) -> Vec<(String, String)> {
    if let Some(values) = p["enum"].as_array() {
        let names = p["enumNames"].as_array();
        return values
            .iter()
            .enumerate()
            .filter_map(|(i, v)| {
                let v = v.as_str()?.to_string();
                let shown = names
                    .and_then(|n| n.get(i))
                    .and_then(Value::as_str)
                    .map_or_else(|| v.clone(), str::to_string);
                Some((v, shown))
            })
            .collect();
    }
    p["oneOf"]
        .as_array()
        .map(|options| consts(options))
        .unwrap_or_default()
}

/// The option `text` names: its number (from 1), value or shown name.
fn pick<'a>(options: &'a [(String, String)], text: &str) -> Option<&'a (String, String)> {
    let by_number = text
        .parse::<usize>()
        .ok()
        .and_then(|n| n.checked_sub(1))
        .and_then(|i| options.get(i));
    by_number.or_else(|| {
        options
            .iter()
            .find(|(v, shown)| v == text || shown.eq_ignore_ascii_case(text))
    })
}

fn listed(options: &[(String, String)]) -> String {
    options
        .iter()
        .map(|(_, s)| s.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

impl Field {
    /// What to type, for a prompt: the numbered choices, `y/n`, `a number`… (empty for text).
    pub fn hint(&self) -> String {
        let numbered = |options: &[(String, String)]| {
            options
                .iter()
                .enumerate()
                .map(|(i, (_, shown))| format!("{}) {shown}", i + 1))
                .collect::<Vec<_>>()
                .join("  ")
        };
        match &self.kind {
            FieldKind::Choice(options) => numbered(options),
            FieldKind::Choices(options) => format!("some of, by commas: {}", numbered(options)),
            FieldKind::Boolean => "y/n".into(),
            FieldKind::Number => "a number".into(),
            FieldKind::Integer => "a whole number".into(),
            FieldKind::Text => String::new(),
        }
    }

    /// What `text` (as typed) gives this field: `Ok(None)` for nothing typed (the default
    /// applies), or why it is not a value of this field.
    pub fn parse(&self, text: &str) -> Result<Option<Value>, String> {
        let text = text.trim();
        if text.is_empty() {
            if self.required && self.default.is_none() {
                return Err(format!("{} is required", self.title));
            }
            return Ok(None);
        }
        match &self.kind {
            FieldKind::Text => Ok(Some(Value::String(text.to_string()))),
            FieldKind::Number => text
                .parse::<f64>()
                .ok()
                .and_then(serde_json::Number::from_f64)
                .map(|n| Some(Value::Number(n)))
                .ok_or_else(|| format!("{} takes a number", self.title)),
            FieldKind::Integer => text
                .parse::<i64>()
                .map(|n| Some(Value::from(n)))
                .map_err(|_| format!("{} takes a whole number", self.title)),
            FieldKind::Boolean => match text.to_lowercase().as_str() {
                "y" | "yes" | "true" | "1" => Ok(Some(Value::Bool(true))),
                "n" | "no" | "false" | "0" => Ok(Some(Value::Bool(false))),
                _ => Err(format!("{} takes yes or no", self.title)),
            },
            FieldKind::Choice(options) => pick(options, text)
                .map(|(v, _)| Some(Value::String(v.clone())))
                .ok_or_else(|| format!("{} takes one of: {}", self.title, listed(options))),
            FieldKind::Choices(options) => {
                let mut values = Vec::new();
                for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
                    let (v, _) = pick(options, part).ok_or_else(|| {
                        format!("{} takes some of: {}", self.title, listed(options))
                    })?;
                    values.push(Value::String(v.clone()));
                }
                Ok(Some(Value::Array(values)))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_form_from_its_schema() {
        let schema = json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "title": "Your name"},
                "age": {"type": "integer", "default": 30},
                "score": {"type": "number"},
                "ok": {"type": "boolean"},
                "status": {"type": "string", "enum": ["a", "b"], "enumNames": ["Active", "Bored"]},
                "size": {"type": "string", "oneOf": [{"const": "s", "title": "Small"}]}
            },
            "required": ["name"]
        });
        let fields = fields(&schema);
        assert_eq!(fields.len(), 6);
        let f = |n: &str| fields.iter().find(|f| f.name == n).unwrap();
        assert_eq!(f("name").title, "Your name");
        assert!(f("name").parse("").is_err(), "required");
        assert_eq!(f("age").parse("").unwrap(), None, "the default applies");
        assert_eq!(f("age").parse("41").unwrap(), Some(json!(41)));
        assert!(f("age").parse("4.5").is_err());
        assert_eq!(f("score").parse("4.5").unwrap(), Some(json!(4.5)));
        assert_eq!(f("ok").parse("Yes").unwrap(), Some(json!(true)));
        assert_eq!(f("status").parse("2").unwrap(), Some(json!("b")));
        assert_eq!(f("status").parse("active").unwrap(), Some(json!("a")));
        assert!(
            f("status")
                .parse("c")
                .unwrap_err()
                .contains("Active, Bored")
        );
        assert_eq!(f("size").parse("small").unwrap(), Some(json!("s")));
        let many = super::fields(&json!({"properties": {"fish": {
            "type": "array", "items": {"anyOf": [{"const": "t", "title": "Tuna"}, {"const": "s", "title": "Salmon"}]}
        }}}));
        assert_eq!(many[0].parse("2, tuna").unwrap(), Some(json!(["s", "t"])));
        assert!(many[0].parse("cod").is_err());
    }
}
