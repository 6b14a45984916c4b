import { test } from "node:test";
import assert from "node:assert/strict";
import { Emitter } from "../src/emitter.ts";
import { Store } from "../src/store.ts";

type Events = { tick: [n: number]; done: [] };

test("once runs a single time", () => {
  const e = new Emitter<Events>();
  const seen: number[] = [];
  e.once("tick", (n) => seen.push(n));
  e.emit("tick", 1);
  e.emit("tick", 2);
  assert.deepEqual(seen, [1]);
  assert.equal(e.listenerCount("tick"), 0);
});

test("a once listener removing itself does not make emit skip the next listener", () => {
  const e = new Emitter<Events>();
  const seen: string[] = [];
  e.once("tick", (n) => seen.push(`once${n}`));
  e.on("tick", (n) => seen.push(`on${n}`));
  e.once("tick", (n) => seen.push(`once-b${n}`));
  e.on("tick", (n) => seen.push(`on-b${n}`));
  e.emit("tick", 1);
  e.emit("tick", 2);
  assert.deepEqual(seen, ["once1", "on1", "once-b1", "on-b1", "on2", "on-b2"]);
});

test("off removes one registration and says whether it did", () => {
  const e = new Emitter<Events>();
  let calls = 0;
  const listener = () => calls++;
  e.on("done", listener);
  e.on("done", listener);
  assert.equal(e.listenerCount("done"), 2);
  assert.equal(e.off("done", listener), true);
  e.emit("done");
  assert.equal(calls, 1);
  assert.equal(e.off("done", listener), true);
  assert.equal(e.off("done", listener), false);
  assert.equal(e.listenerCount("done"), 0);
  assert.equal(e.off("tick", () => {}), false);
});

test("off works on a once listener by the original function", () => {
  const e = new Emitter<Events>();
  let calls = 0;
  const listener = () => calls++;
  e.once("done", listener);
  assert.equal(e.off("done", listener), true);
  e.emit("done");
  assert.equal(calls, 0);
});

test("once returns an unsubscribe function", () => {
  const e = new Emitter<Events>();
  let calls = 0;
  const unsubscribe = e.once("done", () => calls++);
  unsubscribe();
  e.emit("done");
  assert.equal(calls, 0);
  assert.equal(e.listenerCount("done"), 0);
});

test("removing a later listener during emit still lets the ones registered at the start run", () => {
  const e = new Emitter<Events>();
  const seen: string[] = [];
  const b = () => seen.push("b");
  e.on("done", () => {
    seen.push("a");
    e.off("done", b);
  });
  e.on("done", b);
  e.on("done", () => seen.push("c"));
  e.emit("done");
  assert.deepEqual(seen, ["a", "b", "c"]);
  seen.length = 0;
  e.emit("done");
  assert.deepEqual(seen, ["a", "c"]);
});

test("listeners added during emit run from the next emit on", () => {
  const e = new Emitter<Events>();
  const seen: string[] = [];
  e.once("done", () => {
    seen.push("first");
    e.on("done", () => seen.push("late"));
  });
  e.emit("done");
  assert.deepEqual(seen, ["first"]);
  e.emit("done");
  assert.deepEqual(seen, ["first", "late"]);
});

test("listenerCount and the store", () => {
  const store = new Store();
  assert.equal(store.listenerCount("saved"), 0);
  const keys: string[] = [];
  store.once("saved", (k) => keys.push(k));
  assert.equal(store.listenerCount("saved"), 1);
  store.set("a", "1");
  store.set("b", "2");
  assert.deepEqual(keys, ["a"]);
});
