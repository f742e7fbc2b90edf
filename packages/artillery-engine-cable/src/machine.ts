// The machine around the load generator, where it can be read: its CPU steal (Linux `/proc/stat`)
// and its load average against the cores this process may use. Read by the engine's lag monitor
// (lag.ts) and the report plugin's CPU meter (cable-report's period.ts); a missing or unreadable
// /proc costs these figures, never the run.
import { readFileSync } from "node:fs";
import os from "node:os";

/** The machine's CPU time so far, in clock ticks: its steal, and all of it. */
export interface CpuTimes {
  steal: number;
  total: number;
}

/**
 * The first line of `/proc/stat` ("cpu  user nice system idle iowait irq softirq steal guest
 * guest_nice", in clock ticks): steal and the total of the first eight (guest time is inside user
 * and nice already). Null for anything else.
 */
export function parseProcStat(text: string): CpuTimes | null {
  const end = text.indexOf("\n");
  const line = end === -1 ? text : text.slice(0, end);
  if (!/^cpu\s/.test(line)) return null;
  const fields = line.trim().split(/\s+/).slice(1, 9).map(Number);
  if (fields.length < 8 || fields.some((f) => !Number.isFinite(f) || f < 0)) return null;
  return { steal: fields[7], total: fields.reduce((a, b) => a + b, 0) };
}

/** Steal between two readings, % of all CPU time in between; null without both or without time passing. */
export function stealPercent(from: CpuTimes | null | undefined, to: CpuTimes | null | undefined): number | null {
  if (!from || !to) return null;
  const total = to.total - from.total;
  if (total <= 0) return null;
  return Math.min(100, Math.max(0, ((to.steal - from.steal) / total) * 100));
}

let procStatReadable = process.platform === "linux";

/** The machine's CPU times now; null where /proc/stat cannot be read (then never tried again). */
export function readCpuTimes(): CpuTimes | null {
  if (!procStatReadable) return null;
  try {
    const times = parseProcStat(readFileSync("/proc/stat", "utf8"));
    if (!times) procStatReadable = false;
    return times;
  } catch {
    procStatReadable = false;
    return null;
  }
}

/** One-minute load average and the cores this process may use; null where there is none (Windows reads 0). */
export function readLoad(): { load: number; cores: number } | null {
  if (process.platform === "win32") return null;
  const load = os.loadavg()[0];
  const cores = typeof os.availableParallelism === "function" ? os.availableParallelism() : os.cpus().length;
  return Number.isFinite(load) ? { load, cores } : null;
}
