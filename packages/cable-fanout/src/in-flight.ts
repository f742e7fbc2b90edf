// Many calls to one API, a bounded number at a time: enough to finish a large fleet's calls in
// seconds, few enough to stay inside the API's request rate.

/**
 * Calls `call` on every item, at most `limit` calls in flight; resolves once every call has
 * returned. `call` must not throw: the other calls would go on unawaited.
 */
export async function forEachInFlight<T>(items: readonly T[], limit: number, call: (item: T) => Promise<void>): Promise<void> {
  if (!Number.isInteger(limit) || limit < 1) throw new RangeError(`calls in flight must be a whole number ≥ 1, not ${limit}`);
  let next = 0;
  const lane = async () => {
    while (next < items.length) await call(items[next++]);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
}
