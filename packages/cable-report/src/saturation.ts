// Is the load generator the bottleneck, or was it kept from the CPU? Pure. When a task's event
// loop runs late, the latencies it records include that delay and describe the generator (or its
// machine), not the server. Why it was late decides the advice: a generator that used the CPU it
// had is **saturated** (add workers or machines, lower the load per process); one that waited for
// a CPU other work held is **starved** (the machine was busy with other work; more workers would
// only compete for the same cores). The engine's console warning says the same in the same words
// (artillery-engine-cable's generator-verdict.ts). Shared with the capacity search (issue 19),
// which must stop ramping when the generator saturates, and say starved when it was starved.
import { GENERATOR_LIMITS, machineText, percentText, type LateCause, type MachineLoad } from "artillery-engine-cable/generator-verdict";
import { METRICS } from "artillery-engine-cable/metrics";

/**
 * - Event-loop lag p99 over 100 ms: the engine samples the worst delay of each
 *   second (`cable.event_loop_lag`); a p99 that high means at least one second
 *   in a hundred held every message back by a tenth of a second, an error
 *   larger than most latencies under test.
 * - CPU over 90% of the worker threads' capacity in a period or over the run:
 *   the threads have no headroom left, so timers and socket reads queue up.
 *   Saturated, whatever the lag reads.
 * - Lag without that: saturated when the generator's own CPU reached half its
 *   capacity in some period (`busyCpuPercent`), or when most of its late
 *   seconds were spent running (the engine counts each late second by the CPU
 *   its thread used while late: `cable.event_loop_late_saturated` and
 *   `_starved`); starved otherwise. A thread late while using under half a
 *   core was waiting for the CPU, not using it.
 */
export const SATURATION_THRESHOLDS = Object.freeze({ lagP99Ms: GENERATOR_LIMITS.lagMs, cpuPercent: GENERATOR_LIMITS.cpuPercent, busyCpuPercent: GENERATOR_LIMITS.busyCpuPercent });

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

/** The engine's seconds late by more than 100 ms, by cause; null from an engine that did not count them, or none late. */
export interface LateSeconds {
  saturated: number;
  starved: number;
}

export function lateSecondsOf(counters: Record<string, number> | undefined): LateSeconds | null {
  const saturated = counters?.[METRICS.eventLoopLateSaturated] ?? 0;
  const starved = counters?.[METRICS.eventLoopLateStarved] ?? 0;
  return saturated + starved > 0 ? { saturated, starved } : null;
}

export interface GeneratorHealth {
  /** `cable.event_loop_lag` as lagFigure gives it; null when not recorded. */
  lag: LagFigure | null;
  /** CPU over the whole run, % of the worker threads' capacity; null when not recorded. */
  cpuMean: number | null;
  /** CPU in the busiest period, same unit. */
  cpuPeak: number | null;
  /** The engine's late seconds by cause (lateSecondsOf); absent before the engine counted them. */
  late?: LateSeconds | null;
  /** The machine's steal and load, for the words of a starved verdict; absent where not read. */
  machine?: Partial<MachineLoad> | null;
}

export interface SaturationVerdict {
  /** The generator itself was the limit: "add workers or machines" is said for this only. */
  saturated: boolean;
  /** Late while it used little CPU of its own: the machine was busy with other work. Never both. */
  starved: boolean;
  /**
   * Each threshold crossed, with the measured value, e.g. "event-loop lag p99 424 ms over 1,200
   * samples > 100 ms"; for starved, the figures that say so (its CPU, its late seconds, the machine).
   */
  reasons: string[];
}

/** Why a task's late seconds were late: its own CPU first (half its capacity in a period is saturated), then the engine's count, then the CPU alone. */
export function lateCauseOf(health: GeneratorHealth, thresholds = SATURATION_THRESHOLDS): LateCause {
  const cpu = health.cpuPeak ?? health.cpuMean;
  if (cpu !== null && cpu >= thresholds.busyCpuPercent) return "saturated";
  const late = health.late;
  if (late && late.saturated + late.starved > 0) return late.starved > late.saturated ? "starved" : "saturated";
  // No count from the engine (one before it, or no second past 100 ms): the CPU alone; unknown reads saturated, as before.
  return cpu === null ? "saturated" : "starved";
}

/** "the generator used 0.5% CPU (2% in its busiest period); 11 of 11 late seconds waiting for a CPU; steal 0.2%, load 3.1 on 2 cores" */
export function starvedFigures(health: GeneratorHealth): string {
  const parts: string[] = [];
  if (health.cpuMean !== null || health.cpuPeak !== null) {
    const mean = health.cpuMean ?? health.cpuPeak!;
    const peak = health.cpuPeak !== null && health.cpuMean !== null && health.cpuPeak !== health.cpuMean ? ` (${percentText(health.cpuPeak)} in its busiest period)` : "";
    parts.push(`the generator used ${percentText(mean)} CPU${peak}`);
  }
  const late = health.late;
  if (late && late.saturated + late.starved > 0) {
    const total = late.saturated + late.starved;
    parts.push(`${late.starved.toLocaleString("en-US")} of ${total.toLocaleString("en-US")} late second${total === 1 ? "" : "s"} waiting for a CPU`);
  }
  const machine = machineText(health.machine);
  if (machine) parts.push(machine);
  return parts.join("; ");
}

export function detectSaturation(health: GeneratorHealth, thresholds = SATURATION_THRESHOLDS): SaturationVerdict {
  const reasons: string[] = [];
  const lagOver = health.lag !== null && health.lag.ms > thresholds.lagP99Ms;
  if (health.lag && lagOver) reasons.push(`${describeLag(health.lag)} > ${thresholds.lagP99Ms} ms`);
  const cpu = Math.max(health.cpuMean ?? -Infinity, health.cpuPeak ?? -Infinity);
  const cpuOver = cpu > thresholds.cpuPercent;
  if (cpuOver) reasons.push(`CPU ${Math.round(cpu)}% > ${thresholds.cpuPercent}%`);
  if (!lagOver && !cpuOver) return { saturated: false, starved: false, reasons };
  if (cpuOver || lateCauseOf(health, thresholds) === "saturated") return { saturated: true, starved: false, reasons };
  const figures = starvedFigures(health);
  if (figures) reasons.push(figures);
  return { saturated: false, starved: true, reasons };
}
