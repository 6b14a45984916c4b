//! The JSON Schema of the protocol, generated from the method table.
//!
//! The committed copy lives in `protocol/schema/stepper.schema.json`; a test regenerates it
//! and fails when the two differ (run with `UPDATE_SCHEMA=1` to rewrite it).

use serde_json::{Map, Value, json};

use crate::methods::{AskResult, table};
use crate::version::PROTOCOL_VERSION;

/// The whole protocol as one JSON Schema document.
pub fn protocol_schema() -> Value {
    let mut generator = schemars::generate::SchemaSettings::draft2020_12().into_generator();
    let mut methods = Map::new();
    for entry in table() {
        let mut m = Map::new();
        m.insert("params".into(), (entry.params)(&mut generator).to_value());
        m.insert("result".into(), (entry.result)(&mut generator).to_value());
        if let Some(n) = entry.notification {
            m.insert("notification".into(), json!(n));
        }
        if let Some(u) = entry.unsubscribe {
            m.insert("unsubscribe".into(), json!(u));
        }
        methods.insert(entry.name.into(), Value::Object(m));
    }
    let ask = generator.subschema_for::<AskResult>().to_value();
    let defs: Map<String, Value> = generator.take_definitions(true).into_iter().collect();
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "stepper protocol",
        "protocolVersion": PROTOCOL_VERSION.to_string(),
        "methods": methods,
        "cli": { "askJson": ask },
        "$defs": defs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The committed schema must match the types: a change to the protocol shows up in review.
    #[test]
    fn committed_schema_is_current() {
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("schema/stepper.schema.json");
        let generated = serde_json::to_string_pretty(&protocol_schema()).unwrap() + "\n";
        if std::env::var_os("UPDATE_SCHEMA").is_some() {
            std::fs::write(&path, &generated).unwrap();
        }
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            committed == generated,
            "protocol/schema/stepper.schema.json is stale: run \
             `UPDATE_SCHEMA=1 cargo test -p stepper-protocol` and commit the result"
        );
    }

    #[test]
    fn every_method_is_in_the_schema_once() {
        let names: Vec<_> = table().iter().map(|e| e.name).collect();
        let mut dedup = names.clone();
        dedup.sort();
        dedup.dedup();
        assert_eq!(
            names.len(),
            dedup.len(),
            "duplicate method names in the table"
        );
        let schema = protocol_schema();
        for name in names {
            assert!(
                schema["methods"][name].is_object(),
                "{name} missing from schema"
            );
        }
    }
}
