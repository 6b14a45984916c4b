export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Retries `fn` up to `attempts` times, waiting `delayMs` between tries. */
export async function retry<T>(fn: () => Promise<T>, attempts: number, delayMs = 0): Promise<T> {
  let lastError: unknown;
  for (let i = 0; i < attempts; i++) {
    try {
      return await fn();
    } catch (err) {
      lastError = err;
      if (i + 1 < attempts && delayMs > 0) {
        await sleep(delayMs);
      }
    }
  }
  throw lastError;
}

/**
 * Maps `items` through `fn` with at most `limit` calls in flight; results keep the input order.
 * The first rejection rejects the whole, and no further items are started after it.
 */
export function mapLimit<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  if (!Number.isInteger(limit) || limit < 1) {
    return Promise.reject(new RangeError(`limit must be a positive integer, got ${limit}`));
  }
  return new Promise<R[]>((resolve, reject) => {
    const results: R[] = new Array(items.length);
    let next = 0;
    let running = 0;
    let failed = false;
    const startNext = (): void => {
      if (failed) {
        return;
      }
      if (next >= items.length) {
        if (running === 0) {
          resolve(results);
        }
        return;
      }
      const index = next++;
      running++;
      Promise.resolve()
        .then(() => fn(items[index], index))
        .then(
          (value) => {
            results[index] = value;
            running--;
            startNext();
          },
          (err: unknown) => {
            failed = true;
            reject(err);
          },
        );
    };
    if (items.length === 0) {
      resolve([]);
      return;
    }
    for (let i = 0; i < Math.min(limit, items.length); i++) {
      startNext();
    }
  });
}
