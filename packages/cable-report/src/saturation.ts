// Is the load generator itself the bottleneck? Pure. When a task's event loop
// runs late or its CPU is spent, the latencies it records include its own
// delay and describe the generator, not the server. Shared with the capacity
// search (issue 19), which must stop ramping when the generator saturates.

/**
 * - Event-loop lag p99 over 100 ms: the engine samples the worst delay of each
 *   second (`cable.event_loop_lag`); a p99 that high means at least one second
 *   in a hundred held every message back by a tenth of a second, an error
 *   larger than most latencies under test.
 * - CPU over 90% of the worker threads' capacity in a period or over the run:
 *   the threads have no headroom left, so timers and socket reads queue up.
 */
export const SATURATION_THRESHOLDS = Object.freeze({ lagP99Ms: 100, cpuPercent: 90 });

/**
 * Below this many samples a p99 is the largest or second-largest sample depending on the count: the
 * lag is then given as its max, with the count, in every place the report shows it (task, region,
 * all regions), so that no column contradicts its parts.
 */
export const LAG_MIN_SAMPLES_FOR_P99 = 100;

/** The generator's event-loop lag as the report shows it: p99 over enough samples, else the max. */
export interface LagFigure {
  stat: "p99" | "max";
  ms: number;
  samples: number;
}

export function lagFigure(d: { count: number; p99: number; max: number } | null | undefined): LagFigure | null {
  if (!d || d.count <= 0) return null;
  return d.count >= LAG_MIN_SAMPLES_FOR_P99 ? { stat: "p99", ms: d.p99, samples: d.count } : { stat: "max", ms: d.max, samples: d.count };
}

/** "event-loop lag p99 103 ms over 2,340 samples", "event-loop lag max 103 ms over 13 samples". */
export function describeLag(f: LagFigure): string {
  return `event-loop lag ${f.stat} ${Math.round(f.ms)} ms over ${f.samples.toLocaleString("en-US")} sample${f.samples === 1 ? "" : "s"}`;
}

export interface GeneratorHealth {
  /** `cable.event_loop_lag` as lagFigure gives it; null when not recorded. */
  lag: LagFigure | null;
  /** CPU over the whole run, % of the worker threads' capacity; null when not recorded. */
  cpuMean: number | null;
  /** CPU in the busiest period, same unit. */
  cpuPeak: number | null;
}

export interface SaturationVerdict {
  saturated: boolean;
  /** Each threshold crossed, with the measured value, e.g. "event-loop lag p99 424 ms over 1,200 samples > 100 ms". */
  reasons: string[];
}

export function detectSaturation(health: GeneratorHealth, thresholds = SATURATION_THRESHOLDS): SaturationVerdict {
  const reasons: string[] = [];
  if (health.lag && health.lag.ms > thresholds.lagP99Ms) {
    reasons.push(`${describeLag(health.lag)} > ${thresholds.lagP99Ms} ms`);
  }
  const cpu = Math.max(health.cpuMean ?? -Infinity, health.cpuPeak ?? -Infinity);
  if (cpu > thresholds.cpuPercent) {
    reasons.push(`CPU ${Math.round(cpu)}% > ${thresholds.cpuPercent}%`);
  }
  return { saturated: reasons.length > 0, reasons };
}
