// A server's own memory and CPU while it is loaded, read from /proc for a process on this machine and
// its children (puma's workers, php's, Node's): what the seed benchmarks report beside the latencies.
import { readdirSync, readFileSync } from "node:fs";
import type { ServerProcessFigures } from "artillery-plugin-cable-report";

/** Linux's USER_HZ: /proc's CPU times are in these ticks. */
const TICKS_PER_SECOND = 100;

export interface ProcessSample {
  at: number;
  /** Resident memory of the process and its descendants, bytes; null when the process is gone. */
  rssBytes: number | null;
  /** CPU time of the process and its descendants, seconds (user + system). */
  cpuSeconds: number | null;
}

interface Stat {
  pid: number;
  ppid: number;
  cpuSeconds: number;
}

function readStat(pid: number): Stat | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name is in parentheses and may hold spaces: the fields start after the last ")".
    const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
    return { pid, ppid: Number(fields[1]), cpuSeconds: (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND };
  } catch {
    return undefined;
  }
}

function rssBytes(pid: number): number {
  try {
    const match = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return match ? Number(match[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

/** The process and every descendant alive now. */
export function processTree(roots: number | number[]): Stat[] {
  const all: Stat[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    const stat = readStat(Number(name));
    if (stat) all.push(stat);
  }
  const rootPids = [roots].flat();
  const tree = all.filter((s) => rootPids.includes(s.pid));
  if (tree.length === 0) return [];
  // Bounded: each pass adds the children of the last; a tree is at most as deep as it is large.
  for (let frontier = tree.map((s) => s.pid), guard = 0; frontier.length > 0 && guard < all.length; guard++) {
    const children = all.filter((s) => frontier.includes(s.ppid) && !tree.some((t) => t.pid === s.pid));
    tree.push(...children);
    frontier = children.map((c) => c.pid);
  }
  return tree;
}

/** Several roots are one server made of processes that are not parent and child (anycable-go and its RPC app). */
export function sampleProcess(pids: number | number[], now: number = Date.now()): ProcessSample {
  const tree = processTree(pids);
  if (tree.length === 0) return { at: now, rssBytes: null, cpuSeconds: null };
  return { at: now, rssBytes: tree.reduce((sum, s) => sum + rssBytes(s.pid), 0), cpuSeconds: tree.reduce((sum, s) => sum + s.cpuSeconds, 0) };
}

/**
 * Pure: the samples of a run in, the figures out. `idle` is the sample before the load, `after`
 * one taken a few seconds after the run; peak memory and CPU from the samples in between (CPU per
 * interval, in % of one core).
 */
export function processFigures(idle: ProcessSample, during: ProcessSample[], after: ProcessSample, source: string): ServerProcessFigures {
  const mb = (b: number | null) => (b === null ? null : Math.round((b / 1024 / 1024) * 10) / 10);
  const rss = during.map((s) => s.rssBytes).filter((b): b is number => b !== null);
  const points = [idle, ...during, after].filter((s) => s.cpuSeconds !== null);
  const rates: number[] = [];
  for (let i = 1; i < points.length; i++) {
    const seconds = (points[i].at - points[i - 1].at) / 1000;
    if (seconds > 0) rates.push(Math.max(0, ((points[i].cpuSeconds! - points[i - 1].cpuSeconds!) / seconds) * 100));
  }
  const first = during.find((s) => s.cpuSeconds !== null);
  const last = [...during].reverse().find((s) => s.cpuSeconds !== null);
  const span = first && last ? (last.at - first.at) / 1000 : 0;
  return {
    memoryIdleMb: mb(idle.rssBytes),
    memoryPeakMb: rss.length > 0 ? mb(Math.max(...rss)) : null,
    memoryAfterMb: mb(after.rssBytes),
    cpuPeakPct: rates.length > 0 ? Math.round(Math.max(...rates) * 10) / 10 : null,
    cpuMeanPct: first && last && span > 0 ? Math.round(((last.cpuSeconds! - first.cpuSeconds!) / span) * 1000) / 10 : null,
    source,
  };
}

/** Samples `pids` every `intervalMs` until stopped; bounded by `maxSamples`. */
export function watchProcess(pids: number | number[], intervalMs = 1_000, maxSamples = 24 * 3_600): { samples: ProcessSample[]; stop(): void } {
  const samples: ProcessSample[] = [];
  const timer = setInterval(() => {
    if (samples.length >= maxSamples) return clearInterval(timer);
    samples.push(sampleProcess(pids));
  }, intervalMs);
  timer.unref();
  return { samples, stop: () => clearInterval(timer) };
}
