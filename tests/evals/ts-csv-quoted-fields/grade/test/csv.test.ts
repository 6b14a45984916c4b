import { test } from "node:test";
import assert from "node:assert/strict";
import { parseCsv, stringifyCsv } from "../src/csv.ts";

test("plain fields", () => {
  assert.deepEqual(parseCsv("a,b,c\n1,2,3\n"), [["a", "b", "c"], ["1", "2", "3"]]);
  assert.deepEqual(parseCsv("a;b\r\n1;\r\n", { delimiter: ";" }), [["a", "b"], ["1", ""]]);
  assert.deepEqual(parseCsv(""), []);
});

test("quoted field containing the delimiter", () => {
  assert.deepEqual(parseCsv('id,name\n7,"Smith, Jane"\n'), [["id", "name"], ["7", "Smith, Jane"]]);
});

test("doubled quotes inside a quoted field", () => {
  assert.deepEqual(parseCsv('"say ""hi""",x\n'), [['say "hi"', "x"]]);
  assert.deepEqual(parseCsv('""""\n'), [['"']]);
  assert.deepEqual(parseCsv('"",""\n'), [["", ""]]);
});

test("line breaks inside a quoted field", () => {
  const text = 'id,address\r\n1,"12 High St\r\nLeeds"\r\n2,"Flat 3\nYork"\r\n';
  assert.deepEqual(parseCsv(text), [
    ["id", "address"],
    ["1", "12 High St\r\nLeeds"],
    ["2", "Flat 3\nYork"],
  ]);
});

test("last line without a line break", () => {
  assert.deepEqual(parseCsv('a,"b"'), [["a", "b"]]);
});

test("round trip", () => {
  const rows = [["name", "note"], ["O'Brien, Pat", 'said "no"\nthen left'], ["", "x"]];
  assert.deepEqual(parseCsv(stringifyCsv(rows)), rows);
});
