import { test } from "node:test";
import assert from "node:assert/strict";
import { parseFrontmatter } from "../src/frontmatter.ts";
import { buildIndex, renderIndex } from "../src/index.ts";
import { normalizeTag } from "../src/tags.ts";

test("front matter", () => {
  const { meta, body } = parseFrontmatter("---\nTitle: Hello\ntags: a, b\n---\n# Body\n");
  assert.deepEqual(meta, { title: "Hello", tags: "a, b" });
  assert.equal(body, "# Body\n");
});

test("normalize tags", () => {
  assert.equal(normalizeTag(" #Machine Learning "), "machine-learning");
});

test("index by tag", () => {
  const index = buildIndex([
    { path: "rust.md", text: "---\ntags: Rust, #programming\n---\n# Rust notes\n" },
    { path: "go.md", text: "---\ntitle: Go notes\ntags: programming, go\n---\n" },
  ]);
  assert.equal(
    renderIndex(index),
    "go: Go notes\nprogramming: Go notes; Rust notes\nrust: Rust notes",
  );
});
