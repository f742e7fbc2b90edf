// A bound on the store requests one region has in flight: the live feed and collect read hundreds
// of small objects per region, and one at a time their round trips add up (500 tasks at 50 ms is
// 25 s), while all at once they meet S3's per-prefix limits and the machine's sockets.

/** Store requests in flight per region, for the live feed and collect alike. */
export const REGION_CONCURRENCY = 32;

export type Limit = <T>(task: () => Promise<T>) => Promise<T>;

/** Runs the tasks it is given with at most `concurrency` of them in flight, in the order given. */
export function limit(concurrency: number): Limit {
  let active = 0;
  const queue: Array<() => void> = [];
  const next = () => {
    if (active >= concurrency) return;
    const start = queue.shift();
    if (start) start();
  };
  return <T>(task: () => Promise<T>) =>
    new Promise<T>((resolve, reject) => {
      queue.push(() => {
        active++;
        Promise.resolve()
          .then(task)
          .then(resolve, reject)
          .finally(() => {
            active--;
            next();
          });
      });
      next();
    });
}
