import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { formatMoney } from "../src/money.ts";
import * as util from "../src/util.ts";

test("formatMoney lives in money.ts", () => {
  assert.equal(formatMoney(123456, "EUR"), "€1,234.56");
  assert.equal(formatMoney(99), "$0.99");
  assert.equal(formatMoney(-250, "GBP"), "-£2.50");
});

test("util.ts keeps only the generic helpers", () => {
  assert.deepEqual(Object.keys(util).sort(), ["chunk", "clamp"]);
});

test("no fmtPrice left in the sources", () => {
  const dir = new URL("../src/", import.meta.url);
  const files = readdirSync(dir).filter((f) => f.endsWith(".ts"));
  assert.ok(files.length >= 6);
  for (const file of files) {
    const text = readFileSync(new URL(file, dir), "utf8");
    assert.ok(!/\bfmtPrice\b/.test(text), `fmtPrice still in src/${file}`);
  }
});
