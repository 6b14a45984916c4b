import { test } from "node:test";
import assert from "node:assert/strict";
import { buildIndex, renderIndex } from "../src/index.ts";
import { readNote } from "../src/notes.ts";

const FILES = [
  { path: "bread.md", text: "---\ntags: cooking, #Bread\n---\n# Sourdough\n" },
  { path: "meeting.md", text: "---\ntitle: Standup 2024-05-02\n---\n- shipped the importer\n" },
  { path: "reading.md", text: "# Reading list\n" },
  { path: "draft.md", text: "---\ntitle: Draft\ntags:\n---\nsoon\n" },
  { path: "pasta.md", text: "---\ntitle: Pasta\ntags: cooking, , Italian food,\n---\n" },
];

test("notes without tags get none", () => {
  assert.deepEqual(readNote("meeting.md", FILES[1].text).tags, []);
  assert.deepEqual(readNote("reading.md", FILES[2].text).tags, []);
  assert.deepEqual(readNote("draft.md", FILES[3].text).tags, []);
});

test("blank entries in a tags line are skipped", () => {
  assert.deepEqual(readNote("pasta.md", FILES[4].text).tags, ["cooking", "italian-food"]);
});

test("index of a folder with untagged notes", () => {
  const index = buildIndex(FILES);
  assert.deepEqual([...index.keys()], ["bread", "cooking", "italian-food"]);
  assert.equal(
    renderIndex(index),
    "bread: Sourdough\ncooking: Pasta; Sourdough\nitalian-food: Pasta",
  );
});
