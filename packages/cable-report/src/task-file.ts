// What a task file may hold. Task files come back from a bucket, written by tasks on machines we
// do not control, so nothing in them is trusted: every figure, name, time and sketch is checked
// here against a bound, before anything is merged. A file that fails is left out and marked with
// the reason (a sidecar that fails costs its task only the exact percentiles); the rest merges.
//
// The bounds are far above any real run and far below what would make the merge allocate without
// limit, recurse past the stack, or hand a renderer a number that is not one.
import type { DDSketch } from "@artilleryio/sketches-js";
import { z } from "zod";

const DAY_MS = 86_400_000;

export const TASK_FILE_LIMITS = {
  /** Characters in a metric, scenario, phase, test or check name (Artillery's own are under 100). */
  nameLength: 1_000,
  /** Distinct metric names in one task (the engine and Artillery use about 60; a processor adds a few). */
  namesPerTask: 5_000,
  /**
   * From a task's first metric to its last: a 7-day soak, with a day to spare. It bounds the
   * periods a task may hold (one per 10 s) and so every per-period series of the report.
   */
  taskSpanMs: 8 * DAY_MS,
  /**
   * The tasks of one run start together (the fan-out starts them behind one barrier); a task
   * starting more than this away from the others is not from the same run, and would stretch every
   * series of the report over the time between them.
   */
  runStartSpreadMs: DAY_MS,
  /** A time may be this far past the merge's own clock (a task's clock a little ahead). */
  clockAheadMs: DAY_MS,
  /**
   * DDSketch bin keys, either sign: at relative accuracy 0.01 a key is ln(value) / 0.02, so ±2,500
   * holds values from about 1e-21 to 1e21 (a latency in ns or a size in bytes stays far inside).
   * Bins far apart make the merge allocate every bin between them.
   */
  sketchKey: 2_500,
  /** base64 characters of one sketch: both stores full to the key bound (2 × 5,001 doubles), and the rest. */
  sketchBase64: 112_000,
  /** test.phases: phases, and the nesting and size of each (Artillery's phases are flat objects). */
  phases: 1_000,
  phaseDepth: 8,
  phaseNodes: 1_000,
  /** Entries of the other lists a sidecar holds (phase starts, checks, the server's words). */
  listLength: 1_000,
} as const;

/** A name from a task file, cut for a message (the renderers make it inert; this keeps it short). */
export function quoteName(name: string): string {
  return JSON.stringify(name.length > 80 ? `${name.slice(0, 79)}…` : name);
}

/**
 * A record keyed by names from outside. Without a prototype, a metric or region named
 * `constructor`, `toString` or `__proto__` is just a key: reading a name that is absent gives
 * undefined, never one of Object.prototype's members, and writing `__proto__` adds an entry.
 */
export function byName<T>(entries?: Iterable<readonly [string, T]>): Record<string, T> {
  const out = Object.create(null) as Record<string, T>;
  if (entries) for (const [name, value] of entries) out[name] = value;
  return out;
}

export const nameSchema = z.string().max(TASK_FILE_LIMITS.nameLength);

/** A counter, a rate, a CPU percent: a finite number, not below 0. */
export const countSchema = z.number().finite().nonnegative();

/** An epoch time in ms, as Artillery writes it: a whole number, not below 0. */
export const timeSchema = z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER);

type Check<T> = (value: unknown) => { ok: true; value: T } | { ok: false; message: string };

/**
 * A name-keyed record checked entry by entry and held without a prototype (byName). Hand-rolled
 * rather than z.record: z.record drops a `__proto__` key, and this runs over every counter of every
 * period of every task, so it stays a plain loop.
 */
function recordOf<T>(check: Check<T>, what: string) {
  return z.unknown().transform((raw, ctx): Record<string, T> => {
    if (raw === null || typeof raw !== "object" || Array.isArray(raw)) {
      ctx.addIssue({ code: z.ZodIssueCode.custom, message: `${what}: expected an object` });
      return z.NEVER;
    }
    const out = byName<T>();
    let names = 0;
    for (const name in raw) {
      if (!Object.hasOwn(raw, name)) continue;
      if (++names > TASK_FILE_LIMITS.namesPerTask) {
        ctx.addIssue({ code: z.ZodIssueCode.custom, message: `${what}: more than ${TASK_FILE_LIMITS.namesPerTask} names` });
        return z.NEVER;
      }
      if (name.length > TASK_FILE_LIMITS.nameLength) {
        ctx.addIssue({ code: z.ZodIssueCode.custom, message: `${what}: a name longer than ${TASK_FILE_LIMITS.nameLength} characters`, path: [quoteName(name)] });
        return z.NEVER;
      }
      const checked = check((raw as Record<string, unknown>)[name]);
      if (!checked.ok) {
        ctx.addIssue({ code: z.ZodIssueCode.custom, message: `${what}: ${checked.message}`, path: [name] });
        return z.NEVER;
      }
      out[name] = checked.value;
    }
    return out;
  });
}

const count: Check<number> = (v) =>
  typeof v === "number" && Number.isFinite(v) && v >= 0 ? { ok: true, value: v } : { ok: false, message: `${describe(v)} is not a finite number ≥ 0` };

const sketchText: Check<string> = (v) =>
  typeof v !== "string"
    ? { ok: false, message: `${describe(v)} is not base64 text` }
    : v.length > TASK_FILE_LIMITS.sketchBase64
      ? { ok: false, message: `a sketch of ${v.length} characters (at most ${TASK_FILE_LIMITS.sketchBase64})` }
      : { ok: true, value: v };

function describe(v: unknown): string {
  if (typeof v === "number") return String(v);
  if (typeof v === "string") return quoteName(v);
  return v === null ? "null" : Array.isArray(v) ? "an array" : typeof v;
}

/** The figures of Artillery's summary of a histogram (ssms.ts summarizeHistogram), rounded to 0.1. */
const SUMMARY_FIGURES = ["min", "max", "count", "mean", "p50", "median", "p75", "p90", "p95", "p99", "p999"] as const;
export type HistogramSummary = Record<(typeof SUMMARY_FIGURES)[number], number>;

/** Every figure finite, the count not below 0 (by hand: a report holds one per histogram per period). */
const summary: Check<HistogramSummary> = (v) => {
  if (v === null || typeof v !== "object") return { ok: false, message: `${describe(v)} is not a summary` };
  const out = {} as HistogramSummary;
  for (const figure of SUMMARY_FIGURES) {
    const n = (v as Record<string, unknown>)[figure];
    if (typeof n !== "number" || !Number.isFinite(n) || (figure === "count" && n < 0)) return { ok: false, message: `its ${figure} ${describe(n)} is not a finite number${figure === "count" ? " ≥ 0" : ""}` };
    out[figure] = n;
  }
  return { ok: true, value: out };
};

/** Counters and rates by name. */
export const countRecordSchema = recordOf(count, "counters");
/** Metric name → Artillery's summary of the histogram. */
export const summaryRecordSchema = recordOf(summary, "summaries");
/** Metric name → base64 of a DDSketch (decoded and bounded by sketch-codec's decodeSketch). */
export const sketchRecordSchema = recordOf(sketchText, "histograms");

/** Any name-keyed record of values a zod schema checks (slower than the two above: for short records). */
export function nameRecordSchema<T extends z.ZodTypeAny>(value: T, what: string) {
  return recordOf<z.output<T>>((v) => {
    const parsed = value.safeParse(v);
    return parsed.success ? { ok: true, value: parsed.data } : { ok: false, message: parsed.error.issues[0].message };
  }, what);
}

/**
 * JSON of bounded depth and size, checked without recursion (a phase nested 100,000 deep must not
 * overflow the stack here, nor later in JSON.stringify or a renderer).
 */
function boundedJson(maxDepth: number, maxNodes: number) {
  return z.unknown().superRefine((value, ctx) => {
    const stack: Array<{ v: unknown; depth: number }> = [{ v: value, depth: 0 }];
    let nodes = 0;
    while (stack.length > 0) {
      const { v, depth } = stack.pop()!;
      if (++nodes > maxNodes) {
        ctx.addIssue({ code: z.ZodIssueCode.custom, message: `more than ${maxNodes} values` });
        return;
      }
      if (typeof v === "string" && v.length > TASK_FILE_LIMITS.nameLength) {
        ctx.addIssue({ code: z.ZodIssueCode.custom, message: `a text longer than ${TASK_FILE_LIMITS.nameLength} characters` });
        return;
      }
      if (v === null || typeof v !== "object") continue;
      if (depth >= maxDepth) {
        ctx.addIssue({ code: z.ZodIssueCode.custom, message: `nested deeper than ${maxDepth}` });
        return;
      }
      for (const child of Array.isArray(v) ? v : Object.values(v)) stack.push({ v: child, depth: depth + 1 });
    }
  });
}

/** One phase as the script declared it: a flat object in Artillery, kept as data. */
export const phaseSchema = boundedJson(TASK_FILE_LIMITS.phaseDepth, TASK_FILE_LIMITS.phaseNodes).pipe(nameRecordSchema(z.unknown(), "phase"));

/** A list from a task file, bounded in length: refused by its length before any entry is parsed. */
export function listOf<T extends z.ZodTypeAny>(item: T, max: number = TASK_FILE_LIMITS.listLength) {
  return z
    .unknown()
    .superRefine((v, ctx) => {
      if (Array.isArray(v) && v.length > max) ctx.addIssue({ code: z.ZodIssueCode.custom, message: `${v.length} entries, more than ${max}` });
    })
    .pipe(z.array(item));
}

/** The most periods a task can hold within its span (one per 10 s, both ends). */
export const maxPeriods = (periodMs: number): number => Math.floor(TASK_FILE_LIMITS.taskSpanMs / periodMs) + 2;

/** When a task ran, as its file says, and the periods it holds (start times, epoch ms). */
export interface TaskTimes {
  firstMetricAt?: number;
  lastMetricAt?: number;
  periods: Iterable<number>;
  phaseStarts?: Iterable<number>;
}

/**
 * Why a task's times cannot be those of a run, or null: the span from its first metric to its last
 * within the bound, every period inside that span (a period starts on the 10 s grid at or before
 * its first metric, hence one period of slack), nothing in the future of the merge's clock.
 */
export function taskTimesProblem(times: TaskTimes, periodMs: number, now: number): string | null {
  const { firstMetricAt: first, lastMetricAt: last } = times;
  const days = (ms: number) => `${(ms / DAY_MS).toFixed(1)} days`;
  if ((first === undefined) !== (last === undefined)) return "has a first or a last metric time without the other";
  if (first !== undefined && last !== undefined) {
    if (last < first) return `its last metric time ${last} is before its first ${first}`;
    if (last - first > TASK_FILE_LIMITS.taskSpanMs) return `spans ${days(last - first)} (a task may span ${days(TASK_FILE_LIMITS.taskSpanMs)} at most)`;
    if (last > now + TASK_FILE_LIMITS.clockAheadMs) return `its last metric time ${last} is in the future`;
    for (const period of times.periods) {
      if (period < first - periodMs || period > last) return `holds a period at ${period}, outside its own metric times ${first}–${last}`;
    }
  } else {
    let low = Infinity;
    let high = -Infinity;
    for (const period of times.periods) {
      low = Math.min(low, period);
      high = Math.max(high, period);
    }
    if (high - low > TASK_FILE_LIMITS.taskSpanMs) return `holds periods ${days(high - low)} apart (a task may span ${days(TASK_FILE_LIMITS.taskSpanMs)} at most)`;
    if (high > now + TASK_FILE_LIMITS.clockAheadMs) return `holds a period at ${high}, in the future`;
  }
  const anchor = first ?? firstOf(times.periods);
  if (anchor !== undefined) {
    for (const start of times.phaseStarts ?? []) {
      if (Math.abs(start - anchor) > TASK_FILE_LIMITS.taskSpanMs) return `has a phase starting at ${start}, ${days(Math.abs(start - anchor))} from its metrics`;
    }
  }
  return null;
}

function firstOf(values: Iterable<number>): number | undefined {
  for (const v of values) return v;
  return undefined;
}

/** Why the distinct metric names of a task are too many, or null. */
export function namesProblem(records: Iterable<Record<string, unknown> | undefined>): string | null {
  const names = new Set<string>();
  for (const record of records) {
    if (!record) continue;
    for (const name in record) {
      names.add(name);
      if (names.size > TASK_FILE_LIMITS.namesPerTask) return `names more than ${TASK_FILE_LIMITS.namesPerTask} distinct metrics`;
    }
  }
  return null;
}

/**
 * The tasks that belong to the run: those starting within the spread of the latest stretch that
 * holds the most task starts. Returns, per task that does not, why. Tasks without a time are kept.
 */
export function outsideTheRun(starts: Array<number | undefined>): Map<number, string> {
  const known = starts.flatMap((t, i) => (t === undefined ? [] : [{ t, i }])).sort((a, b) => a.t - b.t);
  const spread = TASK_FILE_LIMITS.runStartSpreadMs;
  let best = { from: 0, to: 0 };
  for (let from = 0, to = 0; from < known.length; from++) {
    while (to < known.length && known[to].t - known[from].t <= spread) to++;
    // `>=`: of equally full stretches, the latest (an old stray task does not take the run's place).
    if (to - from >= best.to - best.from) best = { from, to };
  }
  const out = new Map<number, string>();
  if (known.length === 0) return out;
  const low = known[best.from].t;
  const high = known[best.to - 1].t;
  known.forEach(({ t, i }, k) => {
    if (k >= best.from && k < best.to) return;
    const away = t < low ? low - t : t - high;
    out.set(i, `starts ${(away / DAY_MS).toFixed(1)} days ${t < low ? "before" : "after"} the run's other tasks (the tasks of one run start within a day of each other)`);
  });
  return out;
}

/** Why a decoded sketch cannot be merged safely, or null (see TASK_FILE_LIMITS.sketchKey). */
export function sketchProblem(sketch: DDSketch): string | null {
  const numbers = [sketch.count, sketch.zeroCount];
  if (!numbers.every((n) => Number.isFinite(n) && n >= 0)) return "has an invalid sample count";
  if (sketch.count > 0 && ![sketch.min, sketch.max, sketch.sum].every(Number.isFinite)) return "has a min, max or sum that is not a finite number";
  for (const store of [sketch.store, sketch.negativeStore]) {
    if (store.bins.length === 0) continue;
    if (store.minKey < -TASK_FILE_LIMITS.sketchKey || store.maxKey > TASK_FILE_LIMITS.sketchKey) {
      return `has bins at keys ${store.minKey}…${store.maxKey}, outside ±${TASK_FILE_LIMITS.sketchKey}`;
    }
  }
  // A bin that is NaN or infinite shows in the count; one below 0 beside larger ones only skews a
  // percentile, which no bound can tell from a real one, so the bins are not read one by one.
  return null;
}
