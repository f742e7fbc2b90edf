// How far this task's clock may be from true time, for status.json's `clock`: a broadcast stamped by
// one task and received by another measures the receiver's clock minus the sender's, so its error is
// up to the sum of the two clocks' bounds.
//
// - On Fargate: the task metadata endpoint v4 (`${ECS_CONTAINER_METADATA_URI_V4}/task`), whose
//   `ClockDrift` gives `ClockErrorBound` (ms), `ReferenceTimestamp` and `ClockSynchronizationStatus`
//   (SYNCHRONIZED or NOT_SYNCHRONIZED), from Amazon Time Sync.
// - Elsewhere, chrony if it runs: `chronyc -c tracking`, whose bound is chrony's own,
//   |system time offset| + root dispersion + root delay / 2.
// - Else the kernel's own NTP state, which whatever disciplines the clock (ntpd, systemd-timesyncd)
//   keeps: `adjtimex --print` (Debian's adjtimex), its `maxerror` the bound, unless `status` has
//   STA_UNSYNC (the clock is not synchronized: no bound).
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
  /** Runs `adjtimex --print`; its stdout, or undefined when adjtimex is missing or fails. */
  adjtimex?: (timeoutMs: number) => Promise<string | undefined>;
  timeoutMs?: number;
}

export const UNKNOWN_CLOCK: TaskClock = { errorBoundMs: null, source: "unknown" };

/** This task's clock error bound: Fargate's metadata, else chrony, else the kernel's, else unknown. Never throws. */
export async function readClockBound(env: NodeJS.ProcessEnv, deps: ClockBoundDeps = {}): Promise<TaskClock> {
  const timeoutMs = deps.timeoutMs ?? CLOCK_SOURCE_TIMEOUT_MS;
  try {
    const metadataUri = env.ECS_CONTAINER_METADATA_URI_V4;
    if (metadataUri) {
      const fargate = await fromTaskMetadata(metadataUri, deps.fetchFn ?? fetch, timeoutMs);
      if (fargate) return fargate;
    }
    const tracking = await (deps.chronyc ?? ((ms) => run("chronyc", ["-c", "tracking"], ms)))(timeoutMs);
    const chrony = tracking !== undefined ? parseChronyTracking(tracking) : undefined;
    if (chrony) return chrony;
    const timex = await (deps.adjtimex ?? ((ms) => run("adjtimex", ["--print"], ms)))(timeoutMs);
    return (timex !== undefined && parseAdjtimex(timex)) || UNKNOWN_CLOCK;
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

/** STA_UNSYNC in the kernel's timex status (linux/timex.h): the clock is not synchronized. */
const STA_UNSYNC = 0x40;

/**
 * `adjtimex --print`'s `status` and `maxerror` (µs: the kernel's bound on its clock's error, grown by
 * 500 ppm a second since the last NTP update), as status.json's clock; undefined when it is not that output.
 */
export function parseAdjtimex(output: string): TaskClock | undefined {
  const field = (name: string) => {
    const m = new RegExp(`^\\s*${name}:\\s*(-?\\d+)\\s*$`, "m").exec(output);
    return m ? Number(m[1]) : undefined;
  };
  const status = field("status");
  const maxerrorUs = field("maxerror");
  if (status === undefined || maxerrorUs === undefined || maxerrorUs < 0) return undefined;
  if (status & STA_UNSYNC) return { errorBoundMs: null, source: "kernel", synchronized: false };
  return { errorBoundMs: maxerrorUs / 1000, source: "kernel", synchronized: true };
}

/** A clock tool's output; undefined when it is missing, fails or takes too long. */
function run(command: string, args: string[], timeoutMs: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    try {
      execFile(command, args, { timeout: timeoutMs, windowsHide: true }, (err, stdout) => resolve(err ? undefined : String(stdout)));
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
