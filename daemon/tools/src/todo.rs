//! `todo_write`: the model keeps a visible plan for the session, which every attached
//! client shows (a `TodosUpdated` event carries the whole list each time).

use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::json;
use stepper_engine::tool::{
    Tool, ToolCx, ToolDetails, ToolError, ToolOutput, ToolResult, ToolSpec, parse_args,
};
use stepper_protocol::{TodoItem, TodoStatus};

pub struct TodoWrite;

#[derive(Deserialize)]
struct Args {
    todos: Vec<TodoItem>,
}

impl Tool for TodoWrite {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "todo_write".into(),
            description: "Replace the session's todo list, which the user sees. Use it for \
                work of three steps or more: write the steps, keep exactly one in_progress while \
                you work on it, and mark each completed as soon as it is done."
                .into(),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "todos": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {
                                "content": { "type": "string", "description": "The step, imperative (\"Run the tests\")." },
                                "status": { "type": "string", "enum": ["pending", "in_progress", "completed"] },
                                "activeForm": { "type": "string", "description": "The step while it runs (\"Running the tests\")." }
                            },
                            "required": ["content", "status"]
                        }
                    }
                },
                "required": ["todos"],
                "additionalProperties": false
            }),
        }
    }

    fn read_only(&self) -> bool {
        // It changes nothing but the list the user sees.
        true
    }

    fn call<'a>(&'a self, args: serde_json::Value, _cx: &'a ToolCx) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let args: Args = parse_args(args)?;
            if args.todos.iter().any(|t| t.content.trim().is_empty()) {
                return Err(ToolError::InvalidArguments("a todo has no content".into()));
            }
            let in_progress = args
                .todos
                .iter()
                .filter(|t| t.status == TodoStatus::InProgress)
                .count();
            let done = args
                .todos
                .iter()
                .filter(|t| t.status == TodoStatus::Completed)
                .count();
            let mut content = format!(
                "The todo list has {} item(s): {done} completed.",
                args.todos.len()
            );
            if in_progress > 1 {
                content.push_str(" Note: keep one item in_progress at a time.");
            }
            Ok(ToolOutput {
                media: Vec::new(),
                content,
                details: ToolDetails {
                    todos: Some(args.todos),
                    ..Default::default()
                },
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_list_comes_back_whole_for_clients() {
        let cx = ToolCx::permissive(std::path::Path::new("/"));
        let out = TodoWrite
            .call(json!({"todos": [
                {"content": "Read the code", "status": "completed"},
                {"content": "Fix the bug", "status": "in_progress", "activeForm": "Fixing the bug"},
            ]}), &cx)
            .await
            .unwrap();
        assert!(out.content.contains("2 item(s): 1 completed"));
        let todos = out.details.todos.unwrap();
        assert_eq!(todos[1].active_form.as_deref(), Some("Fixing the bug"));
        assert!(
            TodoWrite
                .call(
                    json!({"todos": [{"content": " ", "status": "pending"}]}),
                    &cx
                )
                .await
                .is_err()
        );
        assert!(
            TodoWrite
                .call(json!({"todos": [{"content": "x", "status": "maybe"}]}), &cx)
                .await
                .is_err()
        );
    }
}
