import { test } from "node:test";
import assert from "node:assert/strict";
import { mapLimit } from "../src/async.ts";
import { makeThumbnails, type Image } from "../src/thumbnails.ts";

interface Deferred<T> {
  promise: Promise<T>;
  resolve: (value: T) => void;
  reject: (err: unknown) => void;
}

function deferred<T>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (err: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** Lets every pending promise callback run. */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

test("never more than `limit` in flight, and refills as soon as one finishes", async () => {
  const gates = [0, 1, 2, 3, 4].map(() => deferred<string>());
  const started: number[] = [];
  const done = mapLimit(["a", "b", "c", "d", "e"], 2, (item, i) => {
    started.push(i);
    return gates[i].promise.then((v) => `${item}${v}`);
  });
  await settle();
  assert.deepEqual(started, [0, 1]);
  gates[1].resolve("!");
  await settle();
  assert.deepEqual(started, [0, 1, 2], "item 2 starts when item 1 finishes, without waiting for item 0");
  gates[2].resolve("?");
  await settle();
  assert.deepEqual(started, [0, 1, 2, 3]);
  gates[0].resolve(".");
  gates[3].resolve(":");
  await settle();
  assert.deepEqual(started, [0, 1, 2, 3, 4]);
  gates[4].resolve(";");
  assert.deepEqual(await done, ["a.", "b!", "c?", "d:", "e;"]);
});

test("results in input order", async () => {
  const delays = [30, 5, 20, 1, 10];
  const out = await mapLimit(delays, 3, (ms, i) => new Promise<number>((r) => setTimeout(() => r(i * 10), ms)));
  assert.deepEqual(out, [0, 10, 20, 30, 40]);
});

test("limit larger than the input, and empty input", async () => {
  let inFlight = 0;
  let peak = 0;
  const out = await mapLimit([1, 2, 3], 10, async (n) => {
    inFlight++;
    peak = Math.max(peak, inFlight);
    await settle();
    inFlight--;
    return n * 2;
  });
  assert.deepEqual(out, [2, 4, 6]);
  assert.equal(peak, 3);
  assert.deepEqual(await mapLimit([], 2, async () => 1), []);
});

test("a rejection rejects the whole and starts nothing further", async () => {
  const started: number[] = [];
  const gates = [0, 1, 2, 3].map(() => deferred<number>());
  const done = mapLimit([0, 1, 2, 3], 2, (n) => {
    started.push(n);
    return gates[n].promise;
  });
  await settle();
  gates[0].reject(new Error("boom"));
  await assert.rejects(done, /boom/);
  await settle();
  gates[1].resolve(1);
  await settle();
  assert.deepEqual(started, [0, 1]);
});

test("bad limits", async () => {
  for (const limit of [0, -1, 1.5, Number.NaN]) {
    await assert.rejects(async () => mapLimit([1], limit, async (n) => n), RangeError);
  }
});

test("thumbnails respect the job's concurrency", async () => {
  let inFlight = 0;
  let peak = 0;
  const urls = Array.from({ length: 7 }, (_, i) => `https://cdn.example/${i}.jpg`);
  const thumbs = await makeThumbnails(
    {
      urls,
      concurrency: 3,
      fetchImage: async (url): Promise<Image> => {
        inFlight++;
        peak = Math.max(peak, inFlight);
        await new Promise((r) => setTimeout(r, 2));
        inFlight--;
        return { url, bytes: new TextEncoder().encode(url) };
      },
      resize: (image, width) => image.bytes.slice(0, width / 20),
    },
    100,
  );
  assert.equal(peak, 3);
  assert.deepEqual(
    thumbs.map((t) => new TextDecoder().decode(t)),
    urls.map((u) => u.slice(0, 5)),
  );
});
