import { test } from "node:test";
import assert from "node:assert/strict";
import { retry } from "../src/async.ts";

test("retry gives up after the attempts", async () => {
  let calls = 0;
  await assert.rejects(
    retry(async () => {
      calls++;
      throw new Error("nope");
    }, 3),
    /nope/,
  );
  assert.equal(calls, 3);
});

test("retry returns the first success", async () => {
  let calls = 0;
  const value = await retry(async () => {
    calls++;
    if (calls < 2) throw new Error("flaky");
    return "ok";
  }, 5);
  assert.equal(value, "ok");
  assert.equal(calls, 2);
});
