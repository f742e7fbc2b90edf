import { createRequire } from "node:module";
import path from "node:path";
import { trace } from "./trace.js";

// Per-frame metrics handed to Artillery a period at a time (issue 28).
//
// Every received frame is a `cable.receive_rate` event and, when stamped, a
// `cable.broadcast_latency` sample. Through Artillery's events each is an EventEmitter call, a
// `Date.now()`, a `name.slice()` and two or three array slots held until its 10 s period closes,
// then a DDSketch insert or a rate tally (lib/core/ssms.js): at 100k frames/s, most of the
// engine's own per-frame cost and hundreds of MB of arrays. Here the engine keeps, per period and
// name, the very aggregates Artillery would build from those events (a DDSketch of the same
// accuracy; a rate's count, first and last time), and merges them into the thread's SSMS when it
// aggregates the period. Every delivery is still counted and every latency still recorded; the
// period's sketch is the one Artillery would have built (DDSketch merge adds bins), and the rate
// is computed by Artillery's own formula from the same count, first and last times.
//
// Where: SSMS.prototype._aggregateHistograms and _aggregateRates, in the worker thread that runs
// the VUs (each thread has its own module registry), wrapped so that after Artillery's own
// aggregation of the periods before `upTo` the engine's aggregates of those periods join them.
// Guarded twice: only with the Artillery version whose internals this matches, and only once the
// wrapped method has run in this thread (proof that the class patched is the one the runner uses).
// Until then, and in every other case, the engine emits one event per frame as before.

/** The Artillery release whose SSMS internals (field names, period rounding, rate formula) this matches. */
export const PINNED_ARTILLERY = "2.0.34";
/** Artillery's period (ssms.js normalizeTs: 10 s windows from the minute). */
const PERIOD_MS = 10_000;
/** DDSketch accuracy of Artillery's histograms (ssms.js _aggregateHistograms). */
const RELATIVE_ACCURACY = 0.01;

export interface Sketch {
  accept(value: number): void;
  merge(other: Sketch): void;
}
export type SketchClass = new (options: { relativeAccuracy: number }) => Sketch;

/** The fields of Artillery's SSMS that a period's aggregates go into. */
export interface SsmsAggregates {
  _aggregatedHistograms: Record<string, Record<string, Sketch>>;
  _histogramEarliestMeasurementByPeriod: Record<string, number>;
  _histogramLastMeasurementByPeriod: Record<string, number>;
  _aggregatedRates: Record<string, Record<string, number>>;
}

interface Samples {
  sketch: Sketch;
  first: number;
  last: number;
}
interface Tally {
  count: number;
  first: number;
  last: number;
}
interface Period {
  start: number;
  histograms: Map<string, Samples>;
  rates: Map<string, Tally>;
}

/** ssms.js normalizeTs for whole-ms epoch times. */
export function periodOf(epochMs: number): number {
  return epochMs - (epochMs % PERIOD_MS);
}

/** Artillery's rate of a period: events per second between its first and last event, at least a second (ssms.js _aggregateRates). */
export function artilleryRate(t: Tally): number {
  return Math.round(t.count / (Math.max(t.last - t.first, 1000) / 1000));
}

/** One thread's per-frame aggregates, by period. */
export class PeriodAggregates {
  /** The patched SSMS has aggregated in this thread: the patch is the one the runner uses. */
  live = false;
  /**
   * Where batching starts: the period after the one in which the patch went live. Artillery's rate
   * of a period comes from its own events' first and last times, so a period must have all its
   * rate events one way or the other; a sum of two rates over different spans would be wrong.
   */
  private liveFrom = Infinity;

  /** Whether a frame at `now` (epoch ms) goes into these aggregates rather than Artillery's events. */
  takes(now: number): boolean {
    return now >= this.liveFrom;
  }

  /** Called by the patched SSMS each time it aggregates: the first time makes the aggregates live from the next period. */
  wentLive(now: number): boolean {
    if (this.live) return false;
    this.live = true;
    this.liveFrom = periodOf(now) + PERIOD_MS;
    return true;
  }
  private current: Period = { start: -1, histograms: new Map(), rates: new Map() };
  private readonly closed: Period[] = [];

  constructor(private readonly Sketch: SketchClass) {}

  histogram(name: string, value: number, now: number): void {
    const period = this.at(now);
    let samples = period.histograms.get(name);
    if (!samples) period.histograms.set(name, (samples = { sketch: new this.Sketch({ relativeAccuracy: RELATIVE_ACCURACY }), first: now, last: now }));
    samples.sketch.accept(value);
    samples.last = now;
  }

  rate(name: string, now: number): void {
    const period = this.at(now);
    let tally = period.rates.get(name);
    if (!tally) period.rates.set(name, (tally = { count: 0, first: now, last: now }));
    tally.count++;
    tally.last = now;
  }

  private at(now: number): Period {
    const start = periodOf(now);
    if (start !== this.current.start) {
      if (this.current.histograms.size > 0 || this.current.rates.size > 0) this.closed.push(this.current);
      this.current = { start, histograms: new Map(), rates: new Map() };
    }
    return this.current;
  }

  /** Takes out the `kind` aggregates of every period before `upTo` (Artillery's aggregation bound). */
  private take<K extends "histograms" | "rates">(upTo: number, kind: K): Array<{ start: number; entries: Period[K] }> {
    const taken: Array<{ start: number; entries: Period[K] }> = [];
    for (const period of [...this.closed, this.current]) {
      if (period.start < 0 || period.start >= upTo || period[kind].size === 0) continue;
      taken.push({ start: period.start, entries: period[kind] });
      period[kind] = new Map() as Period[K];
    }
    const emptied = (p: Period) => p.histograms.size === 0 && p.rates.size === 0;
    if (this.closed.some(emptied)) this.closed.splice(0, this.closed.length, ...this.closed.filter((p) => !emptied(p)));
    return taken;
  }

  /** Merges the histograms of the periods before `upTo` into the SSMS's aggregated ones. */
  drainHistograms(ssms: SsmsAggregates, upTo: number): void {
    for (const period of this.take(upTo, "histograms")) {
      const key = String(period.start);
      const target = (ssms._aggregatedHistograms[key] ??= {});
      for (const [name, samples] of period.entries) {
        if (target[name]) target[name].merge(samples.sketch);
        else target[name] = samples.sketch;
        const earliest = ssms._histogramEarliestMeasurementByPeriod[key];
        ssms._histogramEarliestMeasurementByPeriod[key] = earliest === undefined ? samples.first : Math.min(earliest, samples.first);
        ssms._histogramLastMeasurementByPeriod[key] = Math.max(ssms._histogramLastMeasurementByPeriod[key] ?? 0, samples.last);
      }
    }
  }

  /**
   * Sets the rates of the periods before `upTo`. Every event of a name the engine batches goes
   * through here, so Artillery has none of its own for it; were there some, the two rates are added.
   */
  drainRates(ssms: SsmsAggregates, upTo: number): void {
    for (const period of this.take(upTo, "rates")) {
      const target = (ssms._aggregatedRates[String(period.start)] ??= {});
      for (const [name, tally] of period.entries) target[name] = (target[name] ?? 0) + artilleryRate(tally);
    }
  }
}

type AggregateMethod = (this: SsmsAggregates, upTo: number) => void;
interface SsmsPrototype {
  _aggregateHistograms: AggregateMethod;
  _aggregateRates: AggregateMethod;
}

interface ArtilleryInternals {
  SSMS: { prototype: Partial<SsmsPrototype> };
  DDSketch: SketchClass;
  version: string;
}

let installed: PeriodAggregates | undefined;
let checked = false;

/**
 * This thread's aggregates, with Artillery's SSMS patched to take them; undefined where the
 * patch does not apply (another Artillery, SSMS not found): the engine then emits every event.
 */
export function periodAggregates(): PeriodAggregates | undefined {
  if (!checked) {
    checked = true;
    const found = loadArtillery();
    installed = found && patchSsms(found);
  }
  return installed;
}

/** Wraps SSMS's aggregation of histograms and rates to take the engine's aggregates too; undefined if these internals are not the pinned ones. */
export function patchSsms({ SSMS, DDSketch, version }: ArtilleryInternals): PeriodAggregates | undefined {
  const proto = SSMS.prototype;
  const histograms = proto._aggregateHistograms;
  const rates = proto._aggregateRates;
  if (version !== PINNED_ARTILLERY || typeof histograms !== "function" || typeof rates !== "function") return undefined;
  const aggregates = new PeriodAggregates(DDSketch);
  proto._aggregateHistograms = function (this: SsmsAggregates, upTo: number) {
    histograms.call(this, upTo);
    if (aggregates.wentLive(Date.now())) trace("per-frame metrics: handed to Artillery a period at a time from the next period");
    aggregates.drainHistograms(this, upTo);
  };
  proto._aggregateRates = function (this: SsmsAggregates, upTo: number) {
    rates.call(this, upTo);
    aggregates.drainRates(this, upTo);
  };
  return aggregates;
}

/** Artillery's SSMS class and DDSketch, resolved from Artillery itself so that they are the instances its runner uses. */
function loadArtillery(): ArtilleryInternals | undefined {
  try {
    const req = createRequire(__filename);
    const artilleryDir = path.dirname(req.resolve("artillery/package.json", { paths: [process.cwd(), __dirname] }));
    const fromArtillery = createRequire(path.join(artilleryDir, "package.json"));
    const version = (fromArtillery("./package.json") as { version: string }).version;
    // An absolute path: Artillery's `exports` does not list its internals. Node ≥ 22.12 loads this
    // ES module with require(), from the same module map as the runner's own import.
    const { SSMS } = fromArtillery(path.join(artilleryDir, "dist", "lib", "core", "ssms.js")) as { SSMS: { prototype: Partial<SsmsPrototype> } };
    const { DDSketch } = fromArtillery("@artilleryio/sketches-js") as { DDSketch: SketchClass };
    return { SSMS, DDSketch, version };
  } catch {
    return undefined;
  }
}
