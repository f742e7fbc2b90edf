// Conditions on a run's metrics, shared by the capacity search's SLOs and `run --abort-on`: a metric, a statistic and a bound, written as on
// the command line (`cable.broadcast_latency.p95<250`, `errors<1%`, `vusers.failed=0`), and their
// verdict on one step's measurement.
import type { DDSketch } from "@artilleryio/sketches-js";
import { FanoutInputError } from "./errors.js";

export type Comparator = "<" | "<=" | "=" | ">=" | ">";

/** Percentiles and the other figures Artillery reports for a histogram. */
const STATS = { min: null, max: null, mean: null, median: 0.5, p50: 0.5, p75: 0.75, p90: 0.9, p95: 0.95, p99: 0.99, p999: 0.999 } as const;
export type Stat = keyof typeof STATS;

export type Slo =
  | { kind: "histogram"; text: string; metric: string; stat: Stat; op: Comparator; bound: number }
  /** `errors` is every `errors.*` counter; `perUser` compares the count divided by the step's users (`errors<1%`). */
  | { kind: "counter"; text: string; metric: string; op: Comparator; bound: number; perUser: boolean };

const EXPRESSION = /^\s*([A-Za-z_][\w.-]*)\s*(<=|>=|==|=|<|>)\s*(-?\d+(?:\.\d+)?)\s*(%?)\s*$/;

export function parseSlo(text: string): Slo {
  const match = EXPRESSION.exec(text);
  if (!match) {
    throw new FanoutInputError(`--slo "${text}": write <metric><op><bound>, e.g. cable.broadcast_latency.p95<250, cable.handshake_latency.p99<1000, errors<1%, vusers.failed=0`);
  }
  const [, name, rawOp, number, percent] = match;
  const op = (rawOp === "==" ? "=" : rawOp) as Comparator;
  const bound = Number(number);
  const dot = name.lastIndexOf(".");
  const suffix = dot === -1 ? "" : name.slice(dot + 1);
  if (suffix in STATS) {
    if (percent) throw new FanoutInputError(`--slo "${text}": a percentage applies to counters (errors<1% is errors per user), not to ${suffix} of a histogram`);
    return { kind: "histogram", text: text.trim(), metric: name.slice(0, dot), stat: suffix as Stat, op, bound };
  }
  if (/^p\d+$/.test(suffix)) throw new FanoutInputError(`--slo "${text}": ${suffix} is not a percentile Artillery reports (p50, p75, p90, p95, p99, p999)`);
  if (name.startsWith("cable.") && /latency|rtt|lag/.test(name)) {
    throw new FanoutInputError(`--slo "${text}": ${name} is a histogram; say which figure, e.g. ${name}.p95${rawOp}${number}`);
  }
  return { kind: "counter", text: text.trim(), metric: name, op, bound, perUser: percent === "%" };
}

/** What a step measured, in the windows each kind of SLO is judged on. */
export interface StepFigures {
  /** Concurrent users at the level (the share of the region being judged). */
  users: number;
  /** Histograms of the hold. */
  hold: Record<string, DDSketch>;
  /** Histograms of the climb into the level: handshakes happen only there. */
  climb: Record<string, DDSketch>;
  /** Counters over the whole step (climb and hold): a failed connect is the level's failure whenever it happens. */
  counters: Record<string, number>;
}

export interface SloResult {
  slo: string;
  /** null: the metric had no sample in the step, so the SLO says nothing about it. */
  value: number | null;
  passed: boolean | null;
  /** Which window the value comes from. */
  window: "hold" | "climb" | "step";
  /** How far past the bound, in the SLO's unit (value − bound), when it failed. */
  excess?: number;
}

export function statOf(sketch: DDSketch, stat: Stat): number {
  if (stat === "min") return sketch.min;
  if (stat === "max") return sketch.max;
  if (stat === "mean") return sketch.sum / sketch.count;
  // A sketch's bucket value can sit up to 1% past what it saw: keep it within [min, max].
  return Math.min(sketch.max, Math.max(sketch.min, sketch.getValueAtQuantile(STATS[stat] as number)));
}

export function compare(value: number, op: Comparator, bound: number): boolean {
  switch (op) {
    case "<":
      return value < bound;
    case "<=":
      return value <= bound;
    case "=":
      return value === bound;
    case ">=":
      return value >= bound;
    case ">":
      return value > bound;
  }
}

export function counterValue(counters: Record<string, number>, metric: string): number {
  if (metric === "errors") return Object.entries(counters).reduce((sum, [name, n]) => (name.startsWith("errors.") ? sum + n : sum), 0);
  return counters[metric] ?? 0;
}

const round2 = (n: number) => Math.round(n * 100) / 100;

export function evaluateSlo(slo: Slo, figures: StepFigures): SloResult {
  if (slo.kind === "histogram") {
    // Latencies are judged on the hold only: during the climb the load was still rising. A metric
    // the hold has no sample of (handshakes: users connect only while they arrive) is judged on the
    // climb into the level, the only place it is measured.
    const fromHold = figures.hold[slo.metric];
    const window = fromHold && fromHold.count > 0 ? "hold" : "climb";
    const sketch = window === "hold" ? fromHold : figures.climb[slo.metric];
    if (!sketch || sketch.count === 0) return { slo: slo.text, value: null, passed: null, window: "hold" };
    const value = round2(statOf(sketch, slo.stat));
    const passed = compare(value, slo.op, slo.bound);
    return { slo: slo.text, value, passed, window, ...(passed ? {} : { excess: round2(value - slo.bound) }) };
  }
  const count = counterValue(figures.counters, slo.metric);
  const value = slo.perUser ? round2((100 * count) / Math.max(1, figures.users)) : count;
  const passed = compare(value, slo.op, slo.bound);
  return { slo: slo.text, value, passed, window: "step", ...(passed ? {} : { excess: round2(value - slo.bound) }) };
}
