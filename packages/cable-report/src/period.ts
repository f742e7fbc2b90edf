// One Artillery metrics period as every part of the project keeps it: the sidecar's per-period
// series, the task's live files (written while the run goes on, read by `cable-fanout run`'s live
// lines, its --abort-on and the capacity search) and the report's time series. One type, one codec.
import type { DDSketch } from "@artilleryio/sketches-js";
import { readCpuTimes, readLoad, stealPercent, type CpuTimes } from "artillery-engine-cable/machine";
import { cpus } from "node:os";
import { z } from "zod";
import { decodeSketch, encodeSketch } from "./sketch-codec.js";
import { byName, countRecordSchema, countSchema, nameSchema, sketchRecordSchema, timeSchema } from "./task-file.js";

/** Artillery's reporting period; its buckets start on 10 s wall-clock boundaries (ssms.ts normalizeTs). */
export const PERIOD_MS = 10_000;

/** Written by tasks: every figure and name bounded (task-file.ts). */
export const periodRecordSchema = z.object({
  /** Start of Artillery's 10 s period, epoch ms (the task's own clock). */
  period: timeSchema,
  counters: countRecordSchema,
  rates: countRecordSchema.default({}),
  /** Metric name → base64 of `DDSketch.toProto()`; absent in sidecars of version 1. */
  histograms: sketchRecordSchema.default({}),
  /**
   * The Artillery process's CPU over the period (every worker thread included) as a percent of the
   * cores its workers may use (CpuMeter); absent for a window under 1 s.
   */
  cpuPercent: countSchema.optional(),
});
export type PeriodRecord = z.infer<typeof periodRecordSchema>;

export const phaseStartSchema = z.object({
  index: z.number().int().nonnegative().max(1_000_000),
  name: nameSchema,
  /** epoch ms, the task's clock. */
  startTime: timeSchema,
});
export type PhaseStart = z.infer<typeof phaseStartSchema>;

/** What Artillery hands a plugin on `stats` (ssms.ts PeriodMetrics), the parts kept. */
export interface ArtilleryPeriodStats {
  period: number | string;
  counters?: Record<string, number>;
  rates?: Record<string, number>;
  histograms?: Record<string, DDSketch | { toProto(): Uint8Array }>;
}

/**
 * Serializes a period as it arrives: Artillery later deletes the histograms from these same
 * objects when it writes the report.
 */
export function recordPeriod(stats: ArtilleryPeriodStats, cpuPercent: number | null): PeriodRecord {
  const record: PeriodRecord = {
    period: Number(stats.period),
    counters: { ...stats.counters },
    rates: { ...stats.rates },
    histograms: Object.fromEntries(Object.entries(stats.histograms ?? {}).map(([name, sketch]) => [name, encodeSketch(sketch)])),
  };
  if (cpuPercent !== null) record.cpuPercent = cpuPercent;
  return record;
}

const decoded = new WeakMap<PeriodRecord, Record<string, DDSketch>>();

/**
 * A period's sketches; a damaged one leaves its metric out of the period rather than failing the
 * reader. Decoded once per record: the live feed keeps each period's record and is read every poll.
 */
export function periodSketches(period: PeriodRecord): Record<string, DDSketch> {
  return decodePeriod(period, false);
}

/**
 * A period's sketches, throwing with the metric's name at the first damaged one: for a task file
 * read whole, which is left out (or merged without its sketches) rather than merged in part. The
 * decoded sketches are kept for periodSketches, so the series decode nothing again.
 */
export function periodSketchesStrict(period: PeriodRecord): Record<string, DDSketch> {
  return decodePeriod(period, true);
}

/**
 * A period record whose sketches are already in memory (the live feed's merged periods): its
 * histograms name the metrics only, and periodSketches hands back the sketches themselves, so a
 * live page rebuilt every period encodes and decodes nothing. Never written anywhere.
 */
export function periodOfSketches(period: number, counters: Record<string, number>, sketches: Record<string, DDSketch>, cpuPercent: number | null): PeriodRecord {
  const record: PeriodRecord = { period, counters, rates: {}, histograms: Object.fromEntries(Object.keys(sketches).map((name) => [name, ""])) };
  if (cpuPercent !== null) record.cpuPercent = cpuPercent;
  decoded.set(record, sketches);
  return record;
}

function decodePeriod(period: PeriodRecord, strict: boolean): Record<string, DDSketch> {
  const cached = decoded.get(period);
  if (cached) return cached;
  const out = byName<DDSketch>();
  for (const [name, base64] of Object.entries(period.histograms)) {
    try {
      out[name] = decodeSketch(name, base64);
    } catch (err) {
      if (strict) throw err;
    }
  }
  decoded.set(period, out);
  return out;
}

/** The cores Artillery's worker threads may use: all but the main thread's (launch-platform: one per core but one). */
export const generatorWorkers = (): number => Math.max(1, cpus().length - 1);

export interface CpuSample {
  usage: NodeJS.CpuUsage;
  /** performance.now() */
  at: number;
}

/**
 * The process's CPU between two samples as a percent of `workers` cores, to 0.1 (process.cpuUsage
 * in the main thread counts every worker thread). Null under 1 s of wall time, where one scheduler
 * tick would swing it. Several cores' worth on one worker core reads above 100: a saturated
 * generator, not a clamp.
 */
export function cpuPercent(from: CpuSample, to: CpuSample, workers: number): number | null {
  const wallMs = to.at - from.at;
  if (wallMs < 1_000) return null;
  const cpuMs = (to.usage.user - from.usage.user + to.usage.system - from.usage.system) / 1_000;
  return Math.round((cpuMs / wallMs / workers) * 1_000) / 10;
}

/**
 * CPU use of the whole process (every worker thread, the main thread, GC) over wall time, in % of
 * Artillery's worker threads, from the first phase's start: before it, loading the script and
 * starting the workers would count as load. Windows end at each period report.
 */
export class CpuMeter {
  readonly workers = generatorWorkers();
  private start?: CpuSample;
  private last?: CpuSample;
  private peak: number | null = null;
  /** The machine around it (saturation.ts tells starved from saturated with them): CPU times at the start, the busiest load seen. */
  private startTimes: CpuTimes | null = null;
  private lastTimes: CpuTimes | null = null;
  private loadPeak: number | null = null;
  private cores: number | null = null;

  constructor(private readonly machine: { cpuTimes(): CpuTimes | null; load(): { load: number; cores: number } | null } = { cpuTimes: readCpuTimes, load: readLoad }) {}

  begin(): void {
    if (this.start) return;
    this.start = this.last = { usage: process.cpuUsage(), at: performance.now() };
    this.startTimes = this.machine.cpuTimes();
  }

  /** Closes a window (at a period report, or at the end) and returns its CPU, null when too short or not begun. */
  mark(): number | null {
    if (!this.last) return null;
    const now = { usage: process.cpuUsage(), at: performance.now() };
    const percent = cpuPercent(this.last, now, this.workers);
    if (percent !== null) this.peak = Math.max(this.peak ?? 0, percent);
    this.last = now;
    this.lastTimes = this.machine.cpuTimes() ?? this.lastTimes;
    const load = this.machine.load();
    if (load) {
      this.loadPeak = Math.max(this.loadPeak ?? 0, Math.round(load.load * 100) / 100);
      this.cores = load.cores;
    }
    return percent;
  }

  /** CPU over the run and in its busiest window; the machine's steal over the run and its busiest load, where they could be read. */
  summary(): { workers: number; cpuMean: number | null; cpuPeak: number | null; stealPercent?: number; loadPeak?: number; cores?: number } {
    const mean = this.start && this.last ? cpuPercent(this.start, this.last, this.workers) : null;
    const steal = stealPercent(this.startTimes, this.lastTimes);
    return {
      workers: this.workers,
      cpuMean: mean,
      cpuPeak: this.peak,
      ...(steal !== null ? { stealPercent: Math.round(steal * 10) / 10 } : {}),
      ...(this.loadPeak !== null ? { loadPeak: this.loadPeak } : {}),
      ...(this.cores !== null ? { cores: this.cores } : {}),
    };
  }
}
