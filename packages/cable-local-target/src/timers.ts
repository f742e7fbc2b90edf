/**
 * Every server-side timer goes through a TimerSet so that `close()` (or a connection closing)
 * can cancel all of them at once: tests must never hang on a stray timeout or interval.
 */
export class TimerSet {
  private readonly timers = new Set<NodeJS.Timeout>();

  timeout(fn: () => void, ms: number): NodeJS.Timeout {
    const handle = setTimeout(() => {
      this.timers.delete(handle);
      fn();
    }, ms);
    this.timers.add(handle);
    return handle;
  }

  interval(fn: () => void, ms: number): NodeJS.Timeout {
    const handle = setInterval(fn, ms);
    this.timers.add(handle);
    return handle;
  }

  clear(handle: NodeJS.Timeout): void {
    clearTimeout(handle);
    this.timers.delete(handle);
  }

  clearAll(): void {
    for (const handle of this.timers) clearTimeout(handle);
    this.timers.clear();
  }

  get size(): number {
    return this.timers.size;
  }
}
