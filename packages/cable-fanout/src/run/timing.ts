// Every deadline and interval of a run, from one place: the backend's defaults, the run's flags over
// them, and what follows from those (the default --max-duration, how often the runner beats, how
// long a ready task waits for the go marker, how often it looks at the heartbeat). The runner, the
// task manifest and `plan` all read them here.
import type { Timing } from "../backend.js";
import type { RunOptions } from "./run-options.js";

export interface RunTiming extends Timing {
  /** --max-duration, or its default: the ready wait, the lead, the phases (an hour when unknown) and a margin. */
  maxDurationMs: number;
  /** How often the runner writes its heartbeat: several beats per stale time, so one slow write never looks like a dead runner. */
  beatEveryMs: number;
  /** How often the runner lists the ready markers: half as often as a ready task looks for the go marker (a list per region per look, at 500 tasks a region). */
  readyPollMs: number;
  /** What every task is told (the bundle's run.json). */
  task: {
    /** A ready task waits for the go marker as long as the runner may take to decide, plus the lead and a minute. */
    barrier: { waitMs: number; pollMs: number };
    /** A task looks at the heartbeat a few times per stale time, at most every 15 s. */
    heartbeat: { staleMs: number; pollMs: number };
    maxDurationMs: number;
  };
}

/** Phases of unknown length (a `loop` without a count, say) are given an hour. */
const UNKNOWN_PHASES_MS = 3_600_000;
/** How long a ready task waits for the go marker beyond the runner's own deadline. */
const GO_WAIT_SLACK_MS = 60_000;

export type TimingFlags = Pick<RunOptions, "startDelayMs" | "startTimeoutMs" | "readyTimeoutMs" | "heartbeatTimeoutMs" | "maxDurationMs">;

export function planTiming(defaults: Timing, flags: TimingFlags, phasesMs: number | undefined): RunTiming {
  const timing: Timing = {
    ...defaults,
    ...(flags.startDelayMs !== undefined ? { startDelayMs: flags.startDelayMs } : {}),
    ...(flags.startTimeoutMs !== undefined ? { startTimeoutMs: flags.startTimeoutMs } : {}),
    ...(flags.readyTimeoutMs !== undefined ? { readyTimeoutMs: flags.readyTimeoutMs } : {}),
    ...(flags.heartbeatTimeoutMs !== undefined ? { heartbeatStaleMs: flags.heartbeatTimeoutMs } : {}),
  };
  const maxDurationMs = flags.maxDurationMs ?? timing.readyTimeoutMs + timing.startDelayMs + (phasesMs ?? UNKNOWN_PHASES_MS) + timing.marginMs;
  return {
    ...timing,
    maxDurationMs,
    beatEveryMs: Math.max(100, Math.min(timing.heartbeatMs, Math.floor(timing.heartbeatStaleMs / 4))),
    readyPollMs: 2 * timing.goPollMs,
    task: {
      barrier: { waitMs: timing.readyTimeoutMs + timing.startDelayMs + GO_WAIT_SLACK_MS, pollMs: timing.goPollMs },
      heartbeat: { staleMs: timing.heartbeatStaleMs, pollMs: Math.max(250, Math.min(15_000, Math.floor(timing.heartbeatStaleMs / 6))) },
      maxDurationMs,
    },
  };
}
