// Servers side by side: the same scenario run against each server in turn (cable-fanout compare),
// one column per server where a run has one per region. Pure: each server's tasks in, the
// comparison model and its server table out.
import { findRegressions, type Regression } from "./compare.js";
import type { MergedResults } from "./model.js";
import { PERIOD_MS } from "./period.js";
import { mergeRegions, type RegionTasks } from "./results.js";
import type { TaskResult } from "./task.js";
import { cell, inline, truncate } from "./text.js";

/** What the server process itself did during its run (cable-fanout reads /proc, or its Prometheus endpoint). */
export interface ServerProcessFigures {
  /** Resident memory, MB: before the load, its peak during the run, and a few seconds after the last user. */
  memoryIdleMb: number | null;
  memoryPeakMb: number | null;
  memoryAfterMb: number | null;
  /** CPU, % of one core: the busiest second, and the mean over the run. */
  cpuPeakPct: number | null;
  cpuMeanPct: number | null;
  /** Where the figures come from: "process 1234 and its children" or the metrics URL's host. */
  source: string;
}

export interface ServerRun {
  name: string;
  /** The run's tasks by region; absent when the run left nothing (the column is marked missing). */
  regions?: RegionTasks[];
  process?: ServerProcessFigures;
}

/**
 * One column per server: every region's tasks of a server's run merged into its column. The runs
 * happened one after the other; each is moved in time to start where the first did (whole 10 s
 * periods), so that their series line up from each run's own start.
 */
export function compareServers(runs: ServerRun[], notes: string[] = []): MergedResults {
  const starts = runs.map((r) => runStart(r.regions ?? [])).filter((t): t is number => t !== undefined);
  const origin = starts.length > 0 ? Math.min(...starts) : 0;
  const columns: RegionTasks[] = runs
    .filter((r) => r.regions && r.regions.some((g) => g.tasks.length > 0))
    .map((r) => {
      const start = runStart(r.regions!) ?? origin;
      const offset = Math.round((start - origin) / PERIOD_MS) * PERIOD_MS;
      const regions = r.regions!;
      return {
        name: r.name,
        tasks: regions.flatMap((g) => g.tasks.map((t) => shiftTask(t, -offset))),
        files: regions.flatMap((g) => g.files.map((f) => `${r.name}/${f}`)),
        rejected: regions.flatMap((g) => (g.rejected ?? []).map((x) => ({ ...x, file: `${r.name}/${x.file}` }))),
      };
    });
  const missing = runs.filter((r) => !columns.some((c) => c.name === r.name)).map((r) => r.name);
  const merged = mergeRegions(columns, { regions: runs.map((r) => r.name) }, [
    ...notes,
    ...(missing.length > 0 ? [`No results from ${missing.join(", ")}: the column is empty.`] : []),
  ]);
  // Columns in the order the servers were given, not by name.
  const order = new Map(runs.map((r, i) => [r.name, i]));
  merged.regions.sort((a, b) => (order.get(a.name) ?? 0) - (order.get(b.name) ?? 0));
  return merged;
}

function runStart(regions: RegionTasks[]): number | undefined {
  const starts = regions.flatMap((g) => g.tasks.flatMap((t) => [t.periods[0]?.period, t.phaseStarts[0]?.startTime, t.firstMetricAt].filter((x): x is number => typeof x === "number")));
  return starts.length > 0 ? Math.min(...starts) : undefined;
}

/** The task as if it had run `deltaMs` later. */
export function shiftTask(task: TaskResult, deltaMs: number): TaskResult {
  if (deltaMs === 0) return task;
  const at = (t: number | undefined) => (t === undefined ? undefined : t + deltaMs);
  return {
    ...task,
    periods: task.periods.map((p) => ({ ...p, period: p.period + deltaMs })),
    phaseStarts: task.phaseStarts.map((p) => ({ ...p, startTime: p.startTime + deltaMs })),
    firstMetricAt: at(task.firstMetricAt),
    lastMetricAt: at(task.lastMetricAt),
  };
}

/** "### The servers themselves": memory idle → peak → after and CPU, one row per server, as the seed benchmarks report them. */
export function serverFiguresSection(runs: ServerRun[]): string[] {
  const measured = runs.filter((r) => r.process);
  if (measured.length === 0) return [];
  const mb = (v: number | null) => (v === null ? "—" : `${Math.round(v).toLocaleString("en-US")} MB`);
  const pct = (v: number | null) => (v === null ? "—" : `${Math.round(v)} %`);
  const rows = measured.map((r) => {
    const p = r.process!;
    return `| ${cell(r.name)} | ${mb(p.memoryIdleMb)} → ${mb(p.memoryPeakMb)} → ${mb(p.memoryAfterMb)} | ${pct(p.cpuPeakPct)} | ${pct(p.cpuMeanPct)} | ${cell(p.source)} |`;
  });
  return [
    "",
    "### The servers themselves",
    "",
    "| Server | Memory: idle → peak → after | CPU, busiest second (% of a core) | CPU, mean over the run | Measured from |",
    "|:--|:--|--:|--:|:--|",
    ...rows,
  ];
}

/**
 * Each server against the first one given, through the gate a baseline comparison uses (compare.ts:
 * significantly at least `thresholdPercent` worse, above the floor, no saturated or starved generator):
 * "is Reverb slower than AnyCable beyond noise?".
 */
export function serverRegressions(merged: MergedResults, thresholdPercent: number): Regression[] {
  const [reference, ...others] = merged.regions;
  if (!reference || reference.tasks === 0) return [];
  // The all-regions column of a comparison is no server: left out on both sides (no tasks).
  const none = { ...merged.all, tasks: 0 };
  const current: MergedResults = { ...merged, regions: others, all: none };
  const baseline: MergedResults = { ...merged, regions: others.map((c) => ({ ...reference, name: c.name })), all: none, verdicts: undefined };
  return findRegressions(current, baseline, thresholdPercent);
}

/** "### Against soketi": each gated cell where a server is worse than the first, or that none is. */
export function serverGateSection(merged: MergedResults, thresholdPercent: number, regressions: Regression[]): string[] {
  const reference = merged.regions[0];
  if (!reference || merged.regions.length < 2) return [];
  const heading = ["", `### Against ${inline(reference.name)}, the first server`, ""];
  // A saturated generator's latencies are the generator's, a starved one's hold its machine's wait: the gate leaves them out, and says which.
  const saturated = merged.regions.filter((c) => c.generator.some((t) => t.saturated)).map((c) => inline(c.name));
  const starved = merged.regions.filter((c) => !c.generator.some((t) => t.saturated) && c.generator.some((t) => t.starved)).map((c) => inline(c.name));
  const runs = (n: number) => (n === 1 ? "that run" : "those runs");
  const unjudged = [
    ...(saturated.length > 0
      ? ["", `The latencies of ${saturated.join(", ")} were not judged: the load generator was saturated in ${runs(saturated.length)} (see above), so they describe the generator, not the server.`]
      : []),
    ...(starved.length > 0
      ? ["", `The latencies of ${starved.join(", ")} were not judged: the load generator was starved in ${runs(starved.length)} (see above): its machine was busy with other work, and the latencies include that delay.`]
      : []),
  ];
  if (regressions.length === 0) {
    return [...heading, `No server is worse than ${inline(reference.name)} by ${thresholdPercent}% or more beyond noise in any gated cell (latency percentiles, failed users, errors; the gate of \`--fail-on-regression\`).`, ...unjudged];
  }
  const shown = regressions.slice(0, 30).map((r) => `- ❌ **${inline(truncate(r.row, 120))}**, ${inline(r.column)}: ${inline(r.reason)}`);
  if (regressions.length > 30) shown.push(`- … ${regressions.length - 30} more in merged.json`);
  return [...heading, `Worse than ${inline(reference.name)} by ${thresholdPercent}% or more, significantly and above the floor:`, "", ...shown, ...unjudged];
}
