//! The JSON Schema of the protocol, generated from the method table.
//!
//! The committed copy lives in `protocol/schema/stepper.schema.json`; a test regenerates it
//! and fails when the two differ (run with `UPDATE_SCHEMA=1` to rewrite it).

use serde_json::{Map, Value, json};

use crate::methods::{AskResult, UnsubscribeParams, table};
use crate::version::PROTOCOL_VERSION;

/// The whole protocol as one JSON Schema document.
pub fn protocol_schema() -> Value {
    let mut generator = schemars::generate::SchemaSettings::draft2020_12().into_generator();
    let mut methods = Map::new();
    let mut notifications = Map::new();
    for entry in table() {
        let mut m = Map::new();
        m.insert("params".into(), (entry.params)(&mut generator).to_value());
        m.insert("result".into(), (entry.result)(&mut generator).to_value());
        if let (Some(n), Some(params)) = (entry.notification, entry.notification_params) {
            m.insert("notification".into(), json!(n));
            notifications.insert(
                n.into(),
                json!({"params": params(&mut generator).to_value()}),
            );
        }
        if let Some(u) = entry.unsubscribe {
            m.insert("unsubscribe".into(), json!(u));
            let params = generator.subschema_for::<UnsubscribeParams>().to_value();
            methods.insert(
                u.into(),
                json!({"params": params, "result": {"type": "boolean"}}),
            );
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
        "notifications": notifications,
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

    /// A subscribe method returns the subscription's id; its items come in its
    /// notifications; its unsubscribe method has params and a result like any method.
    #[test]
    fn subscriptions_are_described_as_they_are_spoken() {
        let schema = protocol_schema();
        let subscribe = &schema["methods"]["session/subscribe"];
        assert_eq!(subscribe["result"]["$ref"], "#/$defs/SubscriptionId");
        let unsubscribe = &schema["methods"]["session/unsubscribe"];
        assert_eq!(unsubscribe["params"]["$ref"], "#/$defs/UnsubscribeParams");
        assert_eq!(unsubscribe["result"]["type"], "boolean");
        let event = schema["notifications"]["session/event"]["params"]["$ref"]
            .as_str()
            .unwrap()
            .trim_start_matches("#/$defs/")
            .to_string();
        let params = &schema["$defs"][&event];
        assert!(params["properties"]["subscription"].is_object(), "{params}");
        assert!(params["properties"]["result"].is_object(), "{params}");
        assert!(params["properties"]["error"].is_object(), "{params}");
    }

    /// Fields that are a closed set a newer daemon may add to list their values in the
    /// schema, and a value this build does not know is read, not refused.
    #[test]
    fn open_enumerations_list_their_values_and_take_new_ones() {
        let schema = protocol_schema();
        let values = |name: &str| -> Vec<String> {
            let def = &schema["$defs"][name];
            let list = def["enum"].as_array().cloned().unwrap_or_else(|| {
                def["oneOf"]
                    .as_array()
                    .unwrap_or_else(|| panic!("{name}: {def}"))
                    .iter()
                    .flat_map(|v| match v.get("const") {
                        Some(one) => vec![one.clone()],
                        None => v["enum"].as_array().cloned().unwrap_or_default(),
                    })
                    .collect()
            });
            list.iter()
                .map(|v| v.as_str().unwrap().to_string())
                .collect()
        };
        for (name, some) in [
            ("HookEvent", "PreToolUse"),
            ("HookOutcome", "blocked"),
            ("ProviderKind", "openai-chat"),
            ("CommandKind", "builtin"),
            ("McpTransport", "sse"),
            ("ClientKind", "tui"),
        ] {
            assert!(
                values(name).iter().any(|v| v == some),
                "{name}: {:?}",
                values(name)
            );
        }

        use crate::event::{AppEvent, HookEvent, HookOutcome};
        let ran: AppEvent = serde_json::from_value(json!({
            "type": "HookRan", "event": "SomeLaterEvent", "command": "true",
            "outcome": "deferred", "durationMs": 1
        }))
        .unwrap();
        assert!(matches!(
            ran,
            AppEvent::HookRan {
                event: HookEvent::Unknown,
                outcome: HookOutcome::Unknown,
                ..
            }
        ));
        let attached: AppEvent = serde_json::from_value(json!({
            "type": "ClientAttached", "client": "x", "kind": "ide", "pid": null
        }))
        .unwrap();
        assert!(matches!(
            attached,
            AppEvent::ClientAttached {
                kind: crate::methods::ClientKind::Other,
                ..
            }
        ));
        let command: crate::methods::CommandInfo = serde_json::from_value(json!({
            "name": "x", "description": "", "kind": "plugin"
        }))
        .unwrap();
        assert_eq!(command.kind, crate::methods::CommandKind::Unknown);
        // What is sent is the value's own text.
        let sent = serde_json::to_value(crate::methods::McpTransport::Invalid).unwrap();
        assert_eq!(sent, json!(""));
        assert_eq!(
            serde_json::to_value(crate::methods::ProviderKind::ClaudeCode).unwrap(),
            json!("claude-code")
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
