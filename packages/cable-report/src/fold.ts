// A column's figures folded one task at a time: each task's totals, periods and sketches go into
// per-metric and per-period accumulators as it is read, and the task itself can then be dropped. The
// merge's memory grows with columns × periods × metrics, never with tasks: a run of 1,500 tasks
// reports in the memory of 10. Folding is exact: counters add, DDSketches merge (the merged sketch
// is the sketch of the union of samples), and a column of folded regions equals the column of all
// their tasks.
import { DDSketch } from "@artilleryio/sketches-js";
import { METRICS } from "artillery-engine-cable/metrics";
import { approximateDistribution, clampPercentiles, EVENT_LOOP_LAG, generatorHealth, OPEN_PEAK_COUNTER, summarizeSketch } from "./merge.js";
import type { CheckTally, Column, Distribution, GeneratorTask, Series } from "./model.js";
import { PERIOD_MS, periodSketches } from "./period.js";
import { encodeSketch, RELATIVE_ACCURACY } from "./sidecar.js";
import type { HistogramSummary, TaskResult } from "./task.js";
import { byName } from "./task-file.js";
import { gridPeriod, isLatencyMetric } from "./series.js";
import { lagFigure } from "./saturation.js";
import { TargetFold } from "./target.js";

/** A metric over a set of samples: the sketches merged, and the summaries for when some task brought none. */
class SampleFold {
  private sketch: DDSketch | null = null;
  /** Every sketch seen so far was merged into `sketch`. */
  sketches = 0;
  readonly summaries: HistogramSummary[] = [];

  addSketch(sketch: DDSketch): void {
    (this.sketch ??= new DDSketch({ relativeAccuracy: RELATIVE_ACCURACY })).merge(sketch);
    this.sketches++;
  }

  absorb(other: SampleFold): void {
    if (other.sketch) (this.sketch ??= new DDSketch({ relativeAccuracy: RELATIVE_ACCURACY })).merge(other.sketch);
    this.sketches += other.sketches;
    for (const s of other.summaries) this.summaries.push(s);
  }

  merged(): DDSketch | null {
    return this.sketch;
  }
}

/** A whole-run histogram: exact when every task that recorded it brought its sketch. */
class HistogramFold extends SampleFold {
  /** Tasks that recorded the metric (in their report's summaries). */
  tasks = 0;

  distribution(): Distribution {
    const sketch = this.merged();
    if (this.sketches === this.tasks && sketch) return { ...summarizeSketch(sketch), approximate: false, sketch: encodeSketch(sketch) };
    if (this.summaries.length === 1) {
      const { median: _median, ...rest } = this.summaries[0];
      return { ...clampPercentiles(rest), approximate: false };
    }
    return approximateDistribution(this.summaries);
  }
}

/** One 10 s period of a column (periods align by timestamp across tasks). */
interface PeriodSlot {
  /** Task periods that fell in it. */
  periods: number;
  counters: Record<string, number>;
  latency: Map<string, SampleFold>;
}

/** Artillery's own periods, by their exact timestamp: the whole-run rates and open-connection peak. */
interface AlignedPeriod {
  counters: Record<string, number>;
  rates: Record<string, number>;
}

/** A task's generator over time, laid on the column's axis when the series is built. */
interface GeneratorTrack {
  file: string;
  /** grid period → [event-loop lag p99, CPU %] */
  byPeriod: Map<number, [number | null, number | null]>;
}

export class ColumnFold {
  tasks = 0;
  readonly files: string[] = [];
  private readonly counters = byName<number>();
  private readonly histograms = new Map<string, HistogramFold>();
  private readonly aligned = new Map<number, AlignedPeriod>();
  private readonly slots = new Map<number, PeriodSlot>();
  private readonly latencyNames = new Set<string>();
  private readonly checks = new Map<string, CheckTally>();
  private tasksWithChecks = 0;
  private partialTasks = 0;
  private firstMetricAt: number | null = null;
  private lastMetricAt: number | null = null;
  private readonly generator: GeneratorTask[] = [];
  private readonly tracks: GeneratorTrack[] = [];

  add(task: TaskResult, file: string = task.reportFile): void {
    this.tasks++;
    this.files.push(file);
    addInto(this.counters, task.counters);
    for (const [metric, summary] of Object.entries(task.summaries)) {
      const fold = histogramFold(this.histograms, metric);
      fold.tasks++;
      fold.summaries.push(summary);
      const sketch = task.sketches?.[metric];
      if (sketch) fold.addSketch(sketch);
    }
    const track: GeneratorTrack = { file, byPeriod: new Map() };
    for (const period of task.periods) {
      const aligned = this.aligned.get(period.period) ?? { counters: byName<number>(), rates: byName<number>() };
      addInto(aligned.counters, period.counters);
      addInto(aligned.rates, period.rates);
      this.aligned.set(period.period, aligned);

      const key = gridPeriod(period.period);
      const slot = periodSlot(this.slots, key);
      slot.periods++;
      addInto(slot.counters, period.counters);
      const sketches = periodSketches(period);
      for (const name of Object.keys(period.histograms)) if (isLatencyMetric(name)) this.latencyNames.add(name);
      for (const [name, sketch] of Object.entries(sketches)) if (isLatencyMetric(name)) sampleFold(slot.latency, name).addSketch(sketch);
      for (const [name, summary] of Object.entries(period.summaries ?? {})) {
        if (!isLatencyMetric(name)) continue;
        this.latencyNames.add(name);
        if (!sketches[name]) sampleFold(slot.latency, name).summaries.push(summary);
      }
      const lag = sketches[EVENT_LOOP_LAG];
      // A period holds a task's ten-odd one-second samples: its lag is their max (lagFigure), as everywhere with that few.
      const lagPeriod = lagFigure(lag && lag.count > 0 ? summarizeSketch(lag) : period.summaries?.[EVENT_LOOP_LAG]);
      track.byPeriod.set(key, [lagPeriod?.ms ?? null, period.cpuPercent ?? null]);
    }
    this.tracks.push(track);
    if (task.checks !== null) this.tasksWithChecks++;
    for (const c of task.checks ?? []) {
      const tally = this.checks.get(c.check) ?? { check: c.check, strict: c.strict, passed: 0, failed: 0 };
      if (c.passed) tally.passed++;
      else tally.failed++;
      this.checks.set(c.check, tally);
    }
    if (task.firstMetricAt !== undefined) this.firstMetricAt = Math.min(this.firstMetricAt ?? Infinity, task.firstMetricAt);
    if (task.lastMetricAt !== undefined) this.lastMetricAt = Math.max(this.lastMetricAt ?? -Infinity, task.lastMetricAt);
    this.generator.push(generatorHealth(task, file));
    if (task.partial) this.partialTasks++;
  }

  /** Folds another column in (the regions into all regions); `other` is left as it was. */
  absorb(other: ColumnFold): void {
    this.tasks += other.tasks;
    this.files.push(...other.files);
    addInto(this.counters, other.counters);
    for (const [metric, fold] of other.histograms) {
      const into = histogramFold(this.histograms, metric);
      into.tasks += fold.tasks;
      into.absorb(fold);
    }
    for (const [period, aligned] of other.aligned) {
      const into = this.aligned.get(period) ?? { counters: byName<number>(), rates: byName<number>() };
      addInto(into.counters, aligned.counters);
      addInto(into.rates, aligned.rates);
      this.aligned.set(period, into);
    }
    for (const [key, slot] of other.slots) {
      const into = periodSlot(this.slots, key);
      into.periods += slot.periods;
      addInto(into.counters, slot.counters);
      for (const [name, fold] of slot.latency) sampleFold(into.latency, name).absorb(fold);
    }
    for (const name of other.latencyNames) this.latencyNames.add(name);
    for (const tally of other.checks.values()) {
      const into = this.checks.get(tally.check) ?? { check: tally.check, strict: tally.strict, passed: 0, failed: 0 };
      into.passed += tally.passed;
      into.failed += tally.failed;
      this.checks.set(tally.check, into);
    }
    this.tasksWithChecks += other.tasksWithChecks;
    this.partialTasks += other.partialTasks;
    if (other.firstMetricAt !== null) this.firstMetricAt = Math.min(this.firstMetricAt ?? Infinity, other.firstMetricAt);
    if (other.lastMetricAt !== null) this.lastMetricAt = Math.max(this.lastMetricAt ?? -Infinity, other.lastMetricAt);
    this.generator.push(...other.generator);
    this.tracks.push(...other.tracks);
  }

  column(name: string): Column {
    const histograms = byName<Distribution>();
    for (const metric of [...this.histograms.keys()].sort()) histograms[metric] = this.histograms.get(metric)!.distribution();
    const counters = { ...this.counters };
    delete counters[OPEN_PEAK_COUNTER];
    const aligned = [...this.aligned.values()];
    return {
      name,
      tasks: this.tasks,
      files: [...this.files],
      counters,
      histograms,
      rates: rateStats(aligned),
      peakOpenConnections: peakOfCounter(aligned, OPEN_PEAK_COUNTER),
      checks: [...this.checks.values()].map((c) => ({ ...c })),
      tasksWithChecks: this.tasksWithChecks,
      firstMetricAt: this.firstMetricAt,
      lastMetricAt: this.lastMetricAt,
      generator: [...this.generator],
      rejected: [],
      partialTasks: this.partialTasks,
    };
  }

  /** What happened when: one entry per 10 s period from the column's first to its last, gaps included. */
  series(): Series {
    const keys = [...this.slots.keys()].sort((a, b) => a - b);
    const periods: number[] = [];
    if (keys.length > 0) for (let t = keys[0]; t <= keys[keys.length - 1]; t += PERIOD_MS) periods.push(t);
    const at = periods.map((t) => this.slots.get(t));

    const sum = (name: string) => at.map((slot) => (slot ? (slot.counters[name] ?? 0) : null));
    const sumOrNull = (name: string) => at.map((slot) => (slot && name in slot.counters ? slot.counters[name] : null));
    const perSecond = (values: Array<number | null>) => values.map((v) => (v === null ? null : round1(v / (PERIOD_MS / 1000))));

    const latency: Series["latency"] = byName();
    for (const metric of [...this.latencyNames].sort()) latency[metric] = latencySeries(at, metric);

    const created = sum("vusers.created");
    const completed = sum("vusers.completed");
    const failed = sum("vusers.failed");
    let running: number | null = null;
    const active = periods.map((_, i) => {
      if (created[i] === null) return running;
      running = Math.max(0, (running ?? 0) + created[i]! - (completed[i] ?? 0) - (failed[i] ?? 0));
      return running;
    });

    const errorNames = new Set<string>();
    for (const slot of at) for (const name of Object.keys(slot?.counters ?? {})) if (name.startsWith("errors.")) errorNames.add(name);
    const errors: Series["errors"] = byName();
    if (errorNames.size > 0) {
      for (const name of [...errorNames].sort()) errors[name] = sum(name);
      errors.total = at.map((slot, i) => (slot ? [...errorNames].reduce((n, name) => n + (errors[name][i] ?? 0), 0) : null));
    }

    return {
      periods,
      latency,
      connections: sumOrNull(METRICS.connectionsOpenPeriodPeak),
      users: { created, completed, failed, active, connected: sum(METRICS.connections) },
      messages: { sent: perSecond(sum(METRICS.messagesSent)), received: perSecond(sum(METRICS.messagesReceived)) },
      errors,
      generator: this.tracks.map((track) => ({
        file: track.file,
        lagP99: periods.map((t) => track.byPeriod.get(t)?.[0] ?? null),
        cpu: periods.map((t) => track.byPeriod.get(t)?.[1] ?? null),
      })),
    };
  }
}

/** The columns of tasks held in memory (tests, the servers comparison, the live view): the same fold, all at once. */
export function foldTasks(tasks: TaskResult[], files: string[]): ColumnFold {
  const fold = new ColumnFold();
  tasks.forEach((task, i) => fold.add(task, files[i] ?? task.reportFile));
  return fold;
}

/**
 * Exact where every task's period brought its sketch; else interpolated from Artillery's per-period
 * summaries. Where some tasks brought sketches and others only summaries, the sketches' part enters
 * the interpolation as one merged distribution.
 */
function latencySeries(at: Array<PeriodSlot | undefined>, metric: string): Series["latency"][string] {
  const out = { count: [] as Array<number | null>, p50: [] as Array<number | null>, p95: [] as Array<number | null>, p99: [] as Array<number | null>, approximate: false };
  for (const slot of at) {
    const fold = slot?.latency.get(metric);
    const sketch = fold?.merged() ?? null;
    const summaries = fold?.summaries ?? [];
    let figures: { count: number; p50: number; p95: number; p99: number } | null = null;
    if (summaries.length === 0 && sketch) {
      if (sketch.count > 0) figures = summarizeSketch(sketch);
    } else if (summaries.length > 0 && !sketch) {
      const nonEmpty = summaries.filter((s) => s.count > 0);
      if (nonEmpty.length > 0) {
        figures = nonEmpty.length === 1 ? nonEmpty[0] : approximateDistribution(nonEmpty);
        out.approximate ||= nonEmpty.length > 1;
      }
    } else if (summaries.length > 0 && sketch) {
      const sketched = sketch.count > 0 ? [{ ...summarizeSketch(sketch), median: 0 }] : [];
      const all = [...sketched, ...summaries].filter((s) => s.count > 0);
      if (all.length > 0) figures = approximateDistribution(all.map((s) => ({ ...s, median: s.p50 })));
      out.approximate = true;
    }
    out.count.push(figures ? figures.count : slot ? 0 : null);
    out.p50.push(figures ? figures.p50 : null);
    out.p95.push(figures ? figures.p95 : null);
    out.p99.push(figures ? figures.p99 : null);
  }
  return out;
}

/**
 * Mean over every aligned period of the column (periods where a rate is absent count as 0, as in
 * Artillery's own aggregate rate) and peak of the summed rate.
 */
function rateStats(aligned: AlignedPeriod[]): Column["rates"] {
  const names = new Set(aligned.flatMap((p) => Object.keys(p.rates)));
  const stats: Column["rates"] = byName();
  for (const name of [...names].sort()) {
    const values = aligned.map((p) => p.rates[name] ?? 0);
    stats[name] = {
      mean: round1(values.reduce((a, b) => a + b, 0) / values.length),
      peak: values.reduce((m, v) => Math.max(m, v), -Infinity),
    };
  }
  return stats;
}

function peakOfCounter(aligned: AlignedPeriod[], name: string): number | null {
  let peak: number | null = null;
  for (const p of aligned) if (p.counters[name] !== undefined) peak = Math.max(peak ?? -Infinity, p.counters[name]);
  return peak;
}

function addInto(sum: Record<string, number>, values: Record<string, number>): void {
  for (const [name, value] of Object.entries(values)) sum[name] = (sum[name] ?? 0) + value;
}

function histogramFold(folds: Map<string, HistogramFold>, metric: string): HistogramFold {
  let fold = folds.get(metric);
  if (!fold) folds.set(metric, (fold = new HistogramFold()));
  return fold;
}

function sampleFold(folds: Map<string, SampleFold>, metric: string): SampleFold {
  let fold = folds.get(metric);
  if (!fold) folds.set(metric, (fold = new SampleFold()));
  return fold;
}

function periodSlot(slots: Map<number, PeriodSlot>, key: number): PeriodSlot {
  let slot = slots.get(key);
  if (!slot) slots.set(key, (slot = { periods: 0, counters: byName<number>(), latency: new Map() }));
  return slot;
}

const round1 = (x: number) => Math.round(x * 10) / 10;

/** A server's words for a refusal, as a task sampled them. */
/** One histogram across tasks: exact from sketches (or one task's samples); else percentiles interpolated, count, min, max, mean exact. */
export function mergeDistribution(tasks: TaskResult[], metric: string): Distribution {
  const merged = foldTasks(tasks, []).column("").histograms[metric];
  if (!merged) throw new Error(`no task recorded histogram "${metric}"`);
  return merged;
}

export interface ServerWord {
  error: string;
  cause: string;
  text: string;
}

/** What the run's tasks say of the run itself, folded one task at a time beside the columns. */
export class RunFold {
  tasks = 0;
  /** The first task's description of its test (sidecars name it; bare reports do not). */
  test?: NonNullable<TaskResult["test"]>;
  readonly scenariosRun = new Set<string>();
  /** Each phase's earliest start over the tasks, by phase index. */
  readonly phaseStarts = new Map<number, { name: string; startTime: number }>();
  soakMinimumMs?: number;
  readonly verdictChecks = new Set<string>();
  readonly serverWords: ServerWord[] = [];
  /** The server loaded, as the tasks name it (sidecars) and count it (the engine's server-software counters). */
  readonly target = new TargetFold();
  withoutSidecar = 0;

  /** `redact`: applied to the server's words before they are kept. */
  constructor(private readonly redact?: (text: string) => string) {}

  add(task: TaskResult): void {
    this.tasks++;
    this.test ??= task.test;
    for (const name of task.scenariosRun) this.scenariosRun.add(name);
    for (const p of task.phaseStarts) {
      const known = this.phaseStarts.get(p.index);
      if (!known || p.startTime < known.startTime) this.phaseStarts.set(p.index, { name: p.name, startTime: p.startTime });
    }
    const soak = task.test?.soakMinimumMs;
    if (soak) this.soakMinimumMs = Math.max(this.soakMinimumMs ?? soak, soak);
    for (const check of task.test?.verdictChecks ?? []) this.verdictChecks.add(check);
    for (const w of task.serverWords ?? []) addServerWord(this.serverWords, { ...w, text: this.redact?.(w.text) ?? w.text });
    const url = task.target?.url;
    this.target.add(task.target && { ...task.target, url: url && (this.redact?.(url) ?? url) }, task.counters);
    if (!task.sketches) this.withoutSidecar++;
  }
}

/** Each distinct text once, three per error key and cause. */
export function addServerWord(words: ServerWord[], w: ServerWord): void {
  let same = 0;
  for (const x of words) {
    if (x.error !== w.error || x.cause !== w.cause) continue;
    if (x.text === w.text) return;
    same++;
  }
  if (same < 3) words.push(w);
}
