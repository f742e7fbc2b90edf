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

export interface GeneratorHealth {
  /** p99 of `cable.event_loop_lag` in ms; null when not recorded. */
  lagP99: number | null;
  /** CPU over the whole run, % of the worker threads' capacity; null when not recorded. */
  cpuMean: number | null;
  /** CPU in the busiest period, same unit. */
  cpuPeak: number | null;
}

export interface SaturationVerdict {
  saturated: boolean;
  /** Each threshold crossed, with the measured value, e.g. "event-loop lag p99 424 ms > 100 ms". */
  reasons: string[];
}

export function detectSaturation(health: GeneratorHealth, thresholds = SATURATION_THRESHOLDS): SaturationVerdict {
  const reasons: string[] = [];
  if (health.lagP99 !== null && health.lagP99 > thresholds.lagP99Ms) {
    reasons.push(`event-loop lag p99 ${Math.round(health.lagP99)} ms > ${thresholds.lagP99Ms} ms`);
  }
  const cpu = Math.max(health.cpuMean ?? -Infinity, health.cpuPeak ?? -Infinity);
  if (cpu > thresholds.cpuPercent) {
    reasons.push(`CPU ${Math.round(cpu)}% > ${thresholds.cpuPercent}%`);
  }
  return { saturated: reasons.length > 0, reasons };
}
