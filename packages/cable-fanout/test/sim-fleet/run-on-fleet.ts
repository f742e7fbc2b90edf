// `cable-fanout run` end to end on a simulated fleet, as the CLI drives it (runFanout with the
// fleet as its backend and the fleet's clock as its own): what it printed and when, by the
// simulated clock, so a caller can tell how late each live line came and how fast --abort-on acted.
import path from "node:path";
import { PERIOD_MS } from "artillery-plugin-cable-report";
import { parseAbortOn } from "../../src/live/abort";
import type { Progress } from "../../src/progress";
import type { RunResult } from "../../src/run/run-options";
import { runFanout } from "../../src/run/runner";
import type { SimClock } from "./sim-clock";
import type { SimFleet } from "./sim-backend";

const CHAT = path.resolve(__dirname, "../../../../scenarios/chat.yml");
const DAY_MS = 86_400_000;

export interface FleetRunOptions {
  regions: string[];
  /** Tasks per region. */
  count: number;
  outDir: string;
  /** The scenario's one phase, simulated ms: as long as the fleet's load. */
  loadMs: number;
  abortOn?: string[];
  /** --live: the live page's address (bench/sim-fleet.mjs --live). */
  live?: { port: number; host: string };
  /** Every line the runner prints, as it prints it. */
  echo?: (line: string) => void;
}

export interface LiveLine {
  region: string;
  /** The period's start, epoch ms (simulated). */
  period: number;
  /** When the runner printed it (simulated). */
  at: number;
}

export interface FleetRun {
  result: RunResult;
  /** Every line the runner printed, with the simulated time it printed it at. */
  lines: Array<{ at: number; line: string }>;
  live: LiveLine[];
  /** When the runner set out to stop every task on --abort-on (simulated), if it did. */
  abortedAt?: number;
  /** Real ms from "collecting results" to the run's end. */
  collectMs: number;
}

/** `eu-west-2 10:00:20 · …` or `eu-west-2 10:00:20 (19 of 20 tasks) · …`: a region's line for the period starting then. */
const LIVE_LINE = /^(\S+) (\d\d):(\d\d):(\d\d)(?: \(\d+ of \d+ tasks\))? · /;

/** The period a live line names (it shows the time of day only): the latest such time not after `at`. */
export function liveLine(line: string, at: number): LiveLine | undefined {
  const m = LIVE_LINE.exec(line);
  if (!m) return undefined;
  const ofDay = ((Number(m[2]) * 60 + Number(m[3])) * 60 + Number(m[4])) * 1000;
  const period = Math.floor(at / DAY_MS) * DAY_MS + ofDay;
  return { region: m[1], period: period > at ? period - DAY_MS : period, at };
}

export async function runOnFleet(fleet: SimFleet, clock: SimClock, options: FleetRunOptions): Promise<FleetRun> {
  const lines: FleetRun["lines"] = [];
  let collectStart: number | undefined;
  const print = (line: string) => {
    lines.push({ at: clock.now(), line });
    options.echo?.(line);
  };
  const progress: Progress = { update: () => undefined, event: print, stop: () => undefined };
  const result = await runFanout(
    {
      scenarioFile: CHAT,
      regions: options.regions,
      count: options.count,
      outDir: options.outDir,
      // Never dialled: the tasks are simulated.
      target: "ws://127.0.0.1:9/cable",
      overrides: { config: { phases: [{ name: "sim", duration: options.loadMs / 1000, arrivalRate: 1 }] } },
      spot: false,
      secretRefs: {},
      secretValues: {},
      abortOn: (options.abortOn ?? []).map(parseAbortOn),
      ...(options.live ? { live: options.live } : {}),
    },
    {
      backend: fleet,
      now: clock.now,
      sleep: clock.sleep,
      progress: () => progress,
      log: (line) => {
        if (line.startsWith("collecting results")) collectStart = performance.now();
        print(line);
      },
      abort: new AbortController(),
    },
  );
  const collectMs = collectStart === undefined ? NaN : performance.now() - collectStart;
  return {
    result,
    lines,
    live: lines.flatMap(({ at, line }) => liveLine(line, at) ?? []),
    abortedAt: lines.find((l) => l.line.startsWith("⛔ --abort-on"))?.at,
    collectMs,
  };
}

/** How late a live line came: from its period's end to its printing, ms of simulated time. */
export const lateness = (l: LiveLine): number => l.at - (l.period + PERIOD_MS);
