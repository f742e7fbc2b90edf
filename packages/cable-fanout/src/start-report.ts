// How far apart the tasks really started: from each task's status.json — `firstMetricAt`, Artillery's
// first metric (its first virtual user: when load really began), else `loadStartedAt` (when the
// worker spawned Artillery) — against the go marker's common start. Rendered as a section that
// the run appends to report.md, and kept in fanout.json.
import type { TaskStatus } from "cable-worker/contract";
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
}

export interface StartSummary {
  startAt: number | null;
  /** Latest minus earliest start across every task of every region; null with fewer than one start. */
  skewMs: number | null;
  regions: RegionStart[];
  barrier?: BarrierRecord;
}

export function summarizeStart(input: { startAt: number | null; count: number; regions: string[]; statuses: Map<string, TaskStatus[]>; barrier?: BarrierRecord }): StartSummary {
  const all: number[] = [];
  const reference = input.startAt;
  const regions = input.regions.map((region): RegionStart => {
    const starts = (input.statuses.get(region) ?? []).map((s) => s.firstMetricAt ?? s.loadStartedAt).filter((t): t is number => typeof t === "number");
    all.push(...starts);
    const offsets = reference === null ? [] : starts.map((t) => t - reference);
    return {
      region,
      started: starts.length,
      expected: input.count,
      firstMs: offsets.length > 0 ? Math.min(...offsets) : null,
      lastMs: offsets.length > 0 ? Math.max(...offsets) : null,
      missed: input.barrier?.missed[region]?.length ?? 0,
    };
  });
  return {
    startAt: input.startAt,
    skewMs: all.length > 0 ? Math.max(...all) - Math.min(...all) : null,
    regions,
    ...(input.barrier ? { barrier: input.barrier } : {}),
  };
}

const ms = (v: number | null): string => (v === null ? "–" : `${v >= 0 ? "+" : "−"}${Math.abs(Math.round(v)).toLocaleString("en-US")} ms`);
const seconds = (v: number): string => `${Math.round(v / 1000)} s`;

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
  lines.push("", "| Region | Tasks started | First start | Last start | Skew | Missed the barrier |", "|---|---|---|---|---|---|");
  for (const r of summary.regions) {
    const skew = r.firstMs !== null && r.lastMs !== null ? `${Math.round(r.lastMs - r.firstMs).toLocaleString("en-US")} ms` : "–";
    const missed = r.missed > 0 ? `**${r.missed} task(s): no load**` : r.started < r.expected ? `${r.expected - r.started} task(s) did not start` : "–";
    lines.push(`| ${r.region} | ${r.started}/${r.expected} | ${ms(r.firstMs)} | ${ms(r.lastMs)} | ${skew} | ${missed} |`);
  }
  return `${lines.join("\n")}\n`;
}
