use serde_json::json;

use super::*;

fn spec(name: &str, props: serde_json::Value, required: &[&str]) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        description: format!("{name}; see `write` too"),
        input_schema: json!({"type": "object", "properties": props, "required": required}),
    }
}

fn internal() -> Vec<ToolSpec> {
    vec![
        spec(
            "read",
            json!({"path": {}, "offset": {}, "limit": {}}),
            &["path"],
        ),
        spec(
            "edit",
            json!({"path": {}, "old_string": {}, "new_string": {}}),
            &["path"],
        ),
        spec(
            "write",
            json!({"path": {}, "content": {}}),
            &["path", "content"],
        ),
        spec(
            "multi_edit",
            json!({"path": {}, "edits": {}}),
            &["path", "edits"],
        ),
        spec("bash", json!({"command": {}, "timeout": {}}), &["command"]),
        spec(
            "grep",
            json!({"pattern": {}, "case_insensitive": {}}),
            &["pattern"],
        ),
        spec("todo_write", json!({"todos": {}}), &["todos"]),
        spec("apply_patch", json!({"input": {}}), &["input"]),
        spec("mcp__fs__read", json!({"path": {}}), &["path"]),
    ]
}

fn names(specs: &[ToolSpec]) -> Vec<&str> {
    specs.iter().map(|s| s.name.as_str()).collect()
}

#[test]
fn plain_offers_stepper_tools_without_the_patch() {
    let offered = ToolDialect::Plain.offer(internal());
    assert_eq!(
        names(&offered),
        [
            "read",
            "edit",
            "write",
            "multi_edit",
            "bash",
            "grep",
            "todo_write",
            "mcp__fs__read"
        ]
    );
    let call = ToolDialect::Plain.translate("read", &json!({"path": "a"}));
    assert_eq!(
        (call.name.as_str(), call.arguments),
        ("read", json!({"path": "a"}))
    );
}

#[test]
fn anthropic_offers_claude_codes_names_and_arguments() {
    let offered = ToolDialect::Anthropic.offer(internal());
    assert_eq!(
        names(&offered),
        [
            "Read",
            "Edit",
            "Write",
            "MultiEdit",
            "Bash",
            "Grep",
            "TodoWrite",
            "mcp__fs__read"
        ]
    );
    assert_eq!(offered[0].input_schema["required"], json!(["file_path"]));
    assert!(
        offered[0].input_schema["properties"]
            .get("file_path")
            .is_some()
    );
    assert!(offered[5].input_schema["properties"].get("-i").is_some());
    assert!(
        offered[0].description.contains("`Write`"),
        "{}",
        offered[0].description
    );
    let described = ToolDialect::Anthropic.offer(vec![ToolSpec {
        name: "edit".into(),
        description: "`path` is the file. Read it first; copy from read's output; for several changes use multi_edit, to create one use write.".into(),
        input_schema: json!({}),
    }]);
    assert_eq!(
        described[0].description,
        "`file_path` is the file. Read it first; copy from Read's output; for several changes use MultiEdit, to create one use Write."
    );
    // MCP tools keep their own argument names.
    assert!(offered[7].input_schema["properties"].get("path").is_some());

    let call = ToolDialect::Anthropic.translate(
        "Edit",
        &json!({"file_path": "/p/a.rs", "old_string": "a", "new_string": "b", "replace_all": true}),
    );
    assert_eq!(call.name, "edit");
    assert_eq!(
        call.arguments,
        json!({"path": "/p/a.rs", "old_string": "a", "new_string": "b", "replace_all": true})
    );
    let call =
        ToolDialect::Anthropic.translate("Grep", &json!({"pattern": "x", "-i": true, "-C": 2}));
    assert_eq!(
        call.arguments,
        json!({"pattern": "x", "case_insensitive": true, "context": 2})
    );
    let call = ToolDialect::Anthropic.translate("mcp__fs__read", &json!({"path": "a"}));
    assert_eq!(call.name, "mcp__fs__read");
}

#[test]
fn openai_offers_codexs_patch_shell_and_plan() {
    let offered = ToolDialect::Openai.offer(internal());
    assert_eq!(
        names(&offered),
        [
            "read",
            "shell",
            "grep",
            "update_plan",
            "apply_patch",
            "mcp__fs__read"
        ]
    );
    // Without apply_patch (a layer that may not use it), the edit tools stay.
    let without: Vec<ToolSpec> = internal()
        .into_iter()
        .filter(|s| s.name != "apply_patch")
        .collect();
    assert!(names(&ToolDialect::Openai.offer(without)).contains(&"edit"));
}

#[test]
fn shell_argv_becomes_one_command_line() {
    let t = |args| ToolDialect::Openai.translate("shell", &args);
    let call = t(json!({"command": ["bash", "-lc", "cargo test 2>&1 | tail"]}));
    assert_eq!(call.name, "bash");
    assert_eq!(call.arguments, json!({"command": "cargo test 2>&1 | tail"}));
    let call = t(
        json!({"command": ["rg", "-n", "fn main", "src"], "workdir": "sub dir", "timeout_ms": 5000}),
    );
    assert_eq!(
        call.arguments,
        json!({"command": "cd 'sub dir' && rg -n 'fn main' src", "timeout": 5000})
    );
    let call = t(json!({"command": ["echo", "it's"]}));
    assert_eq!(call.arguments["command"], "echo 'it'\\''s'");
    // A command line where the argv belongs is taken as meant.
    let call = t(json!({"command": "ls -la"}));
    assert_eq!(call.arguments, json!({"command": "ls -la"}));
    // Not a command at all: passed on for bash to refuse in its words.
    let call = t(json!({"cmd": ["ls"]}));
    assert_eq!(
        (call.name.as_str(), call.arguments),
        ("bash", json!({"cmd": ["ls"]}))
    );
}

#[test]
fn update_plan_becomes_the_todo_list() {
    let call = ToolDialect::Openai.translate(
        "update_plan",
        &json!({"explanation": "x", "plan": [{"step": "Run tests", "status": "in_progress"}]}),
    );
    assert_eq!(call.name, "todo_write");
    assert_eq!(
        call.arguments,
        json!({"todos": [{"content": "Run tests", "status": "in_progress", "activeForm": "Run tests"}]})
    );
}

#[test]
fn names_for_the_instructions() {
    assert_eq!(ToolDialect::Anthropic.name_of("edit"), "Edit");
    assert_eq!(ToolDialect::Openai.name_of("edit"), "apply_patch");
    assert_eq!(ToolDialect::Openai.name_of("read"), "read");
    assert_eq!(ToolDialect::Plain.name_of("todo_write"), "todo_write");
}
