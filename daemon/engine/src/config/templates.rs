//! What `stepper init` writes into a project: files that teach by their comments.

/// `.stepper/setting.json` — JSON with comments, as stepper reads it.
pub const SETTING_JSON: &str = r#"{
  // stepper's settings for this project. Your own, for every project, live in
  // ~/.config/stepper/setting.json; .stepper/setting.local.json (not committed) overrides
  // both. Check them with `stepper config --validate`; the schema: `stepper config --schema`.

  // The model new sessions use: provider/model-id. Conventions need no set-up beyond the
  // usual key variable: anthropic/… (ANTHROPIC_API_KEY), openai/… (OPENAI_API_KEY),
  // codex/… (`stepper auth login --codex`), ollama/…, openrouter/…
  // "model": "anthropic/claude-sonnet-4-5",

  // Other OpenAI-compatible or self-hosted providers, by the name used in model references.
  "providers": {
    // "local": {
    //   "kind": "openai-chat",            // anthropic | openai | openai-chat | codex | replay
    //   "baseUrl": "http://localhost:11434/v1",
    //   "apiKeyEnv": "LOCAL_API_KEY",     // optional: where the key is
    //   "headers": { "x-team": "core" },  // optional: sent with every request
    //   "models": { "qwen3:8b": { "contextWindow": 32768, "maxOutput": 4096 } }
    // }
  },

  // What tools may do without asking, in Claude Code's rule syntax. deny beats ask beats allow.
  "permissions": {
    // "mode": "default",                  // default | accept-edits | plan | auto
    "allow": [
      // "Bash(npm test:*)",
      // "Read(./src/**)"
    ],
    "deny": [
      // "Read(./.env)"
    ]
  },

  // Environment variables for the session's tools.
  "env": {}
}
"#;

/// `.stepper/stepper.md` — the instructions (and, with front matter, the layers) of a turn.
pub const STEPPER_MD: &str = r#"<!--
  stepper.md: what stepper should know about this project, sent with every turn.

  Without front matter, this whole file is the prompt of a single agent. To run a turn as a
  sequence of layers — say, a planner then a coder — start each layer with a YAML block:

  ---
  name: plan
  model: anthropic/claude-opus-4-1
  tools: [read, grep, glob]
  ---
  Read the code and write a short plan.

  ---
  name: code
  model: anthropic/claude-sonnet-4-5
  ---
  Carry out the plan you are given.

  Each layer has its own context; it receives the previous layer's final text.
  The model is sent this whole file, this comment too: delete it once you have read it.
-->

# This project

Describe the project: what it is, how to build and test it, conventions worth knowing.
"#;

/// `.stepper/.gitignore` — the local settings stay out of version control.
pub const GITIGNORE: &str = "setting.local.json\n";
