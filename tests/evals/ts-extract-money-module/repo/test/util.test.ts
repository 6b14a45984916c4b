import { test } from "node:test";
import assert from "node:assert/strict";
import { chunk, clamp, fmtPrice } from "../src/util.ts";

test("clamp", () => {
  assert.equal(clamp(5, 0, 3), 3);
  assert.equal(clamp(-1, 0, 3), 0);
});

test("chunk", () => {
  assert.deepEqual(chunk([1, 2, 3, 4, 5], 2), [[1, 2], [3, 4], [5]]);
});

test("fmtPrice", () => {
  assert.equal(fmtPrice(123456, "EUR"), "€1,234.56");
  assert.equal(fmtPrice(-5), "-$0.05");
  assert.equal(fmtPrice(1000, "CHF"), "CHF 10.00");
});
