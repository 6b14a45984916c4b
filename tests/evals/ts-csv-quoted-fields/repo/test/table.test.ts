import { test } from "node:test";
import assert from "node:assert/strict";
import { readTable, sumColumn, toRecords } from "../src/table.ts";

test("records from the header row", () => {
  assert.deepEqual(toRecords([["a", "b"], ["1"], ["2", "3"]]), [
    { a: "1", b: "" },
    { a: "2", b: "3" },
  ]);
  assert.deepEqual(toRecords([]), []);
});

test("sum a column", () => {
  const records = readTable("item,amount\nTea,3.5\nCake,\nJam,2\n");
  assert.equal(sumColumn(records, "amount"), 5.5);
});
