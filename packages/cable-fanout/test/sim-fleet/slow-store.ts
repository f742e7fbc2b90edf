// A store as far away as S3: every call waits a fixed real latency before it reaches the store it
// wraps, and is counted by operation. A proxy rather than a class, so that it wraps whatever the
// Store interface holds today (another method tomorrow is slowed and counted too).
import type { Store } from "cable-worker/contract";

export interface StoreCalls {
  /** Calls so far, by operation (list, getText, putText…). */
  readonly calls: Map<string, number>;
  total(): number;
}

export function slowStore<T extends Store>(inner: T, latencyMs: number): T & StoreCalls {
  const calls = new Map<string, number>();
  const counting: StoreCalls = { calls, total: () => [...calls.values()].reduce((a, b) => a + b, 0) };
  return new Proxy(inner, {
    get(target, name, receiver) {
      if (name === "calls" || name === "total") return counting[name];
      const value = Reflect.get(target, name, receiver);
      if (typeof value !== "function") return value;
      return async (...args: unknown[]) => {
        calls.set(String(name), (calls.get(String(name)) ?? 0) + 1);
        await new Promise((resolve) => setTimeout(resolve, latencyMs));
        return value.apply(target, args);
      };
    },
  }) as T & StoreCalls;
}
