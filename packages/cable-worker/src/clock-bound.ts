// How far this task's clock may be from true time, for status.json's `clock`: a broadcast stamped by
// one task and received by another measures the receiver's clock minus the sender's, so its error is
// up to the sum of the two clocks' bounds.
//
// - On Fargate: the task metadata endpoint v4 (`${ECS_CONTAINER_METADATA_URI_V4}/task`), whose
//   `ClockDrift` gives `ClockErrorBound` (ms), `ReferenceTimestamp` and `ClockSynchronizationStatus`
//   (SYNCHRONIZED or NOT_SYNCHRONIZED), from Amazon Time Sync.
// - Elsewhere, chrony if it runs: `chronyc -c tracking`, whose bound is chrony's own,
//   |system time offset| + root dispersion + root delay / 2.
// - Else unknown.
// Each source has about a second; nothing here throws.
import { execFile } from "node:child_process";
import type { TaskClock } from "./status.js";

/** The longest wait for each source. */
export const CLOCK_SOURCE_TIMEOUT_MS = 1_000;

export interface ClockBoundDeps {
  fetchFn?: typeof fetch;
  /** Runs `chronyc -c tracking`; its stdout, or undefined when chronyc is missing or fails. */
  chronyc?: (timeoutMs: number) => Promise<string | undefined>;
  timeoutMs?: number;
}

export const UNKNOWN_CLOCK: TaskClock = { errorBoundMs: null, source: "unknown" };

/** This task's clock error bound: Fargate's metadata, else chrony, else unknown. Never throws. */
export async function readClockBound(env: NodeJS.ProcessEnv, deps: ClockBoundDeps = {}): Promise<TaskClock> {
  const timeoutMs = deps.timeoutMs ?? CLOCK_SOURCE_TIMEOUT_MS;
  try {
    const metadataUri = env.ECS_CONTAINER_METADATA_URI_V4;
    if (metadataUri) {
      const fargate = await fromTaskMetadata(metadataUri, deps.fetchFn ?? fetch, timeoutMs);
      if (fargate) return fargate;
    }
    const tracking = await (deps.chronyc ?? runChronyc)(timeoutMs);
    return (tracking !== undefined && parseChronyTracking(tracking)) || UNKNOWN_CLOCK;
  } catch {
    return UNKNOWN_CLOCK;
  }
}

/** The metadata's ClockDrift; undefined when the endpoint does not answer in time or has none. */
async function fromTaskMetadata(metadataUri: string, fetchFn: typeof fetch, timeoutMs: number): Promise<TaskClock | undefined> {
  try {
    const response = await fetchFn(`${metadataUri}/task`, { signal: AbortSignal.timeout(timeoutMs) });
    if (!response.ok) return undefined;
    return parseClockDrift(await response.json());
  } catch {
    return undefined;
  }
}

/** Task metadata v4's `ClockDrift`, as status.json's clock; undefined without one. */
export function parseClockDrift(taskMetadata: unknown): TaskClock | undefined {
  const drift = (taskMetadata as { ClockDrift?: unknown } | null)?.ClockDrift;
  if (drift === null || typeof drift !== "object") return undefined;
  const { ClockErrorBound: bound, ClockSynchronizationStatus: status } = drift as { ClockErrorBound?: unknown; ClockSynchronizationStatus?: unknown };
  const errorBoundMs = typeof bound === "number" && Number.isFinite(bound) && bound >= 0 ? bound : null;
  if (errorBoundMs === null && typeof status !== "string") return undefined;
  return {
    errorBoundMs,
    source: "fargate",
    ...(status === "SYNCHRONIZED" ? { synchronized: true } : status === "NOT_SYNCHRONIZED" ? { synchronized: false } : {}),
  };
}

/**
 * One line of `chronyc -c tracking`: reference id, [reference name,] stratum, reference time,
 * system time offset, last offset, RMS offset, frequency, residual frequency, skew, root delay,
 * root dispersion, update interval, leap status; seconds. Read from its end, so that chrony
 * versions with and without the reference name column both parse. Undefined when it is not one.
 */
export function parseChronyTracking(output: string): TaskClock | undefined {
  const fields = output.trim().split("\n")[0]?.split(",") ?? [];
  if (fields.length < 13) return undefined;
  const at = (fromEnd: number) => Number(fields[fields.length - fromEnd]);
  const leap = fields[fields.length - 1].trim();
  const systemOffset = at(10);
  const rootDelay = at(4);
  const rootDispersion = at(3);
  if (![systemOffset, rootDelay, rootDispersion].every(Number.isFinite)) return undefined;
  // Unsynchronised, chronyd reports zeros: no bound at all, not a bound of 0.
  if (/^not sync/i.test(leap) || /^0+$/.test(fields[0].trim())) return { errorBoundMs: null, source: "chrony", synchronized: false };
  const bound = Math.abs(systemOffset) + rootDispersion + rootDelay / 2;
  return { errorBoundMs: Math.round(bound * 1e6) / 1e3, source: "chrony", synchronized: true };
}

/** `chronyc -c tracking`'s output; undefined when chronyc is missing, fails or takes too long. */
function runChronyc(timeoutMs: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    try {
      execFile("chronyc", ["-c", "tracking"], { timeout: timeoutMs, windowsHide: true }, (err, stdout) => resolve(err ? undefined : String(stdout)));
    } catch {
      resolve(undefined);
    }
  });
}

/** Two readings of the same task as one: the larger bound (unknown if either is), synchronized only if both were. */
export function worseClock(a: TaskClock, b: TaskClock): TaskClock {
  if (a.source !== b.source) return a.source === "unknown" ? b : b.source === "unknown" ? a : { errorBoundMs: null, source: "unknown" };
  const errorBoundMs = a.errorBoundMs === null || b.errorBoundMs === null ? null : Math.max(a.errorBoundMs, b.errorBoundMs);
  const synchronized = a.synchronized === undefined ? b.synchronized : b.synchronized === undefined ? a.synchronized : a.synchronized && b.synchronized;
  return { errorBoundMs, source: a.source, ...(synchronized === undefined ? {} : { synchronized }) };
}
