// How far apart the tasks really started: from each task's status.json — `firstMetricAt`, Artillery's
// first metric (its first virtual user: when load really began), else `loadStartedAt` (when the
// worker spawned Artillery) — against the go marker's common start. Rendered as a section that
// the run appends to report.md, and kept in fanout.json. Beside it, how far apart the tasks' clocks
// may be (each status.json's `clock`, clock-bound.ts in cable-worker): a broadcast stamped by one
// task and received by another is measured across two clocks.
import type { TaskClock, TaskStatus } from "cable-worker/contract";
import type { BarrierRecord } from "./record.js";

export interface RegionStart {
  region: string;
  /** Tasks that started load. */
  started: number;
  expected: number;
  /** Earliest / latest start, ms after the common start. */
  firstMs: number | null;
  lastMs: number | null;
  /** Tasks that were not ready at the go, and ran no load. */
  missed: number;
  /** The largest clock error bound of its tasks that started load, ms; null when any of theirs is unknown (or none started). */
  clockBoundMs: number | null;
}

/** The tasks' clocks, over every task that started load. */
export interface ClockSummary {
  /** The most two tasks' clocks may disagree (the two largest bounds summed), ms; null when a bound is unknown. */
  crossTaskBoundMs: number | null;
  /** The largest bound of a task, ms; null when a bound is unknown. */
  largestBoundMs: number | null;
  /** Where the bounds came from (a task without one counts as "unknown"). */
  sources: TaskClock["source"][];
  tasks: number;
  /** Tasks whose bound is unknown: no Fargate metadata, no chrony, or a worker too old to say. */
  unknown: number;
  /** Tasks whose clock said it was not synchronized. */
  unsynchronized: number;
}

export interface StartSummary {
  startAt: number | null;
  /** Latest minus earliest start across every task of every region; null with fewer than one start. */
  skewMs: number | null;
  regions: RegionStart[];
  /** Absent in records written before the tasks reported their clocks. */
  clock?: ClockSummary;
  barrier?: BarrierRecord;
}

const startOf = (s: TaskStatus): number | null => {
  const t = s.firstMetricAt ?? s.loadStartedAt;
  return typeof t === "number" ? t : null;
};
const loaded = (statuses: Iterable<TaskStatus>): TaskStatus[] => [...statuses].filter((s) => startOf(s) !== null);
const boundOf = (s: TaskStatus): number | null => s.clock?.errorBoundMs ?? null;

/** The largest clock error bound of these tasks, ms; null when any is unknown or there are none. */
function largestBound(statuses: TaskStatus[]): number | null {
  const bounds = statuses.map(boundOf);
  if (bounds.length === 0 || bounds.some((b) => b === null)) return null;
  return Math.max(...(bounds as number[]));
}

/**
 * How far off a latency measured across two tasks (stamped by one, received by another) may be
 * because of their clocks, ms: the two largest clock error bounds of the tasks that started load,
 * summed (the most two of their clocks can disagree). A single task measures with one clock: 0.
 * Null when any of those tasks' bounds is unknown, or none started. `statuses`: every task's
 * status.json of the run (all regions).
 */
export function crossTaskClockBound(statuses: Iterable<TaskStatus>): number | null {
  const tasks = loaded(statuses);
  if (tasks.length === 0) return null;
  const bounds = tasks.map(boundOf);
  if (bounds.some((b) => b === null)) return null;
  if (bounds.length === 1) return 0;
  const [first, second] = (bounds as number[]).sort((a, b) => b - a);
  return first + second;
}

function summarizeClocks(statuses: TaskStatus[]): ClockSummary {
  const tasks = loaded(statuses);
  const sources = [...new Set(tasks.map((s) => s.clock?.source ?? "unknown"))].sort();
  return {
    crossTaskBoundMs: crossTaskClockBound(tasks),
    largestBoundMs: largestBound(tasks),
    sources,
    tasks: tasks.length,
    unknown: tasks.filter((s) => boundOf(s) === null).length,
    unsynchronized: tasks.filter((s) => s.clock?.synchronized === false).length,
  };
}

export function summarizeStart(input: { startAt: number | null; count: number; regions: string[]; statuses: Map<string, TaskStatus[]>; barrier?: BarrierRecord }): StartSummary {
  const all: number[] = [];
  const reference = input.startAt;
  const regions = input.regions.map((region): RegionStart => {
    const statuses = input.statuses.get(region) ?? [];
    const starts = statuses.map(startOf).filter((t): t is number => t !== null);
    all.push(...starts);
    const offsets = reference === null ? [] : starts.map((t) => t - reference);
    return {
      region,
      started: starts.length,
      expected: input.count,
      firstMs: offsets.length > 0 ? Math.min(...offsets) : null,
      lastMs: offsets.length > 0 ? Math.max(...offsets) : null,
      missed: input.barrier?.missed[region]?.length ?? 0,
      clockBoundMs: largestBound(loaded(statuses)),
    };
  });
  const every = input.regions.flatMap((region) => input.statuses.get(region) ?? []);
  return {
    startAt: input.startAt,
    skewMs: all.length > 0 ? Math.max(...all) - Math.min(...all) : null,
    regions,
    ...(every.some((s) => startOf(s) !== null) ? { clock: summarizeClocks(every) } : {}),
    ...(input.barrier ? { barrier: input.barrier } : {}),
  };
}

const ms = (v: number | null): string => (v === null ? "–" : `${v >= 0 ? "+" : "−"}${Math.abs(Math.round(v)).toLocaleString("en-US")} ms`);
const seconds = (v: number): string => `${Math.round(v / 1000)} s`;

/** "0.55 ms", "2.4 ms", "12 ms": a clock bound to about two significant digits. */
export function formatBound(ms: number): string {
  if (ms < 1) return `${Number(ms.toPrecision(2))} ms`;
  if (ms < 10) return `${Math.round(ms * 10) / 10} ms`;
  return `${Math.round(ms).toLocaleString("en-US")} ms`;
}

const SOURCE_NAMES: Record<TaskClock["source"], string> = { fargate: "Fargate, Amazon Time Sync", chrony: "chrony", kernel: "the kernel's NTP state", unknown: "unknown" };

/** The clock line of the Start section: the largest bound and what it means for cross-task latencies. */
export function renderClockLine(clock: ClockSummary): string {
  const unsynced = clock.unsynchronized > 0 ? ` ${clock.unsynchronized} task(s) reported their clock not synchronized.` : "";
  if (clock.largestBoundMs !== null && clock.crossTaskBoundMs !== null) {
    const sources = clock.sources.map((s) => SOURCE_NAMES[s]).join("; ");
    const cross = clock.tasks > 1 ? `cross-task latencies carry up to ±${formatBound(clock.crossTaskBoundMs)}` : "one task: its latencies are measured on one clock";
    return `Clock error bound: ≤ ${formatBound(clock.largestBoundMs)} (${sources}); ${cross}.${unsynced}`;
  }
  const known = clock.sources.some((s) => s !== "unknown") && clock.unknown < clock.tasks;
  const why = known ? `unknown for ${clock.unknown} of ${clock.tasks} task(s) (no Fargate metadata, no chrony, no synchronized kernel clock)` : "unknown here (no Fargate metadata, no chrony, no synchronized kernel clock)";
  return `Clock error bound: ${why}: cross-task latencies are only as good as the machines' clocks.${unsynced}`;
}

/** A "Start" section for report.md: the barrier's outcome, the skew, and per region the first and last start. */
export function renderStartSection(summary: StartSummary): string {
  const lines = ["", "### Start", ""];
  const b = summary.barrier;
  if (b) {
    const readyLine = `${b.ready} of ${b.expected} task(s) ready after ${seconds(b.waitedMs)} (--min-ready ${b.minReadyPct}%, --ready-timeout ${seconds(b.readyTimeoutMs)})`;
    if (b.outcome === "go") lines.push(`Ready barrier: ${readyLine}.`);
    else lines.push(`**The run did not start:** ${b.reason ?? b.outcome} (${readyLine}).`);
  }
  if (summary.startAt !== null) lines.push(`Common start: ${new Date(summary.startAt).toISOString()} (go marker, S3's clock).`);
  if (summary.skewMs !== null) lines.push(`Start skew across all tasks and regions: **${Math.round(summary.skewMs).toLocaleString("en-US")} ms** (latest minus earliest first virtual user, by Artillery's first metric).`);
  if (summary.clock) lines.push(renderClockLine(summary.clock));
  lines.push("", "| Region | Tasks started | First start | Last start | Skew | Missed the barrier | Clock error bound |", "|---|---|---|---|---|---|---|");
  for (const r of summary.regions) {
    const skew = r.firstMs !== null && r.lastMs !== null ? `${Math.round(r.lastMs - r.firstMs).toLocaleString("en-US")} ms` : "–";
    const missed = r.missed > 0 ? `**${r.missed} task(s): no load**` : r.started < r.expected ? `${r.expected - r.started} task(s) did not start` : "–";
    const clock = r.started === 0 ? "–" : r.clockBoundMs === null ? "unknown" : `≤ ${formatBound(r.clockBoundMs)}`;
    lines.push(`| ${r.region} | ${r.started}/${r.expected} | ${ms(r.firstMs)} | ${ms(r.lastMs)} | ${skew} | ${missed} | ${clock} |`);
  }
  return `${lines.join("\n")}\n`;
}
