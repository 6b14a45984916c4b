import { test } from "node:test";
import assert from "node:assert/strict";
import { Emitter } from "../src/emitter.ts";
import { Store } from "../src/store.ts";

test("on and emit, in registration order", () => {
  const e = new Emitter<{ ping: [n: number] }>();
  const seen: string[] = [];
  e.on("ping", (n) => seen.push(`a${n}`));
  e.on("ping", (n) => seen.push(`b${n}`));
  e.emit("ping", 1);
  assert.deepEqual(seen, ["a1", "b1"]);
});

test("unsubscribe", () => {
  const e = new Emitter<{ ping: [] }>();
  let calls = 0;
  const off = e.on("ping", () => calls++);
  e.emit("ping");
  off();
  e.emit("ping");
  assert.equal(calls, 1);
});

test("store announces saves and deletes", () => {
  const store = new Store();
  const log: string[] = [];
  store.on("saved", (k, v) => log.push(`saved ${k}=${v}`));
  store.on("deleted", (k) => log.push(`deleted ${k}`));
  store.set("a", "1");
  store.delete("a");
  store.delete("a");
  assert.deepEqual(log, ["saved a=1", "deleted a"]);
});
