import { monitorEventLoopDelay, type IntervalHistogram } from "node:perf_hooks";
import { nowMs } from "./clock.js";
import { GENERATOR_LIMITS, lagWarningText, lateCause, type MachineLoad } from "./generator-verdict.js";
import { readCpuTimes, readLoad, stealPercent, type CpuTimes } from "./machine.js";
import { METRICS, type Events } from "./metrics.js";

/** How often the CPU probe looks at the thread's CPU time: a late stretch is measured to this. */
const PROBE_MS = 50;

/** What the monitor reads besides its clock; the system's by default, a test's own otherwise. */
export interface GeneratorProbes {
  /** CPU time of this thread (of the whole process where Node cannot tell a thread's own), µs. */
  cpuMicros(): number;
  /** The machine's CPU time so far (`/proc/stat`), for its steal; null where it cannot be read. */
  cpuTimes(): CpuTimes | null;
  /** One-minute load average and the cores this process may use; null where there is none (Windows). */
  load(): { load: number; cores: number } | null;
}

const threadCpuUsage = (process as { threadCpuUsage?: () => NodeJS.CpuUsage }).threadCpuUsage;

export const systemProbes: GeneratorProbes = {
  cpuMicros() {
    const usage = typeof threadCpuUsage === "function" ? threadCpuUsage.call(process) : process.cpuUsage();
    return usage.user + usage.system;
  },
  cpuTimes: readCpuTimes,
  load: readLoad,
};

/**
 * The generator's own lateness, so that it is not mistaken for the server's latency: every second,
 * the worst event-loop delay of that second becomes a `cable.event_loop_lag` sample (ms). A second
 * late by more than 100 ms is counted by its cause (generator-verdict.ts), from the CPU the thread
 * used while it was late: `cable.event_loop_late_saturated` (it was running: a blocking callback,
 * more work than a core does) or `cable.event_loop_late_starved` (it was waiting for a CPU other
 * work held). A delay past the warning threshold prints the warning of its cause, at most once per
 * 10 s, with the machine's steal and load where they can be read.
 *
 * Two measures of the delay, because neither sees every block alone. Node's delay histogram records
 * a block only at its own timer's next tick, measured from its previous tick; it has none after
 * `enable()` or `reset()`, so a block that starts right after either is not recorded at all (a VU
 * that blocks as soon as it connects, or back-to-back blocks between samples). The sample's own
 * lateness is a lower bound of the worst delay that needs no tick.
 *
 * The CPU while late: a probe every 50 ms notes the thread's CPU time; the longest gap between two
 * probes in a second is its late stretch, and the CPU the thread used across that gap, over the
 * stretch, is how much of it the thread spent running. (Over the whole second it would not do: a
 * 400 ms block in an otherwise idle second uses 30 % of the second, and 100 % of the block.)
 */
export class LagMonitor {
  private readonly histogram: IntervalHistogram = monitorEventLoopDelay({ resolution: 10 });
  private lastWarnedAt = -Infinity;
  private running = false;
  /** When the last sample ran (or the monitor started), to measure how late the next one is. */
  private lastSampleAt = 0;
  private windowCpu = 0;
  private probeTimer: NodeJS.Timeout | undefined;
  private probeAt = 0;
  private probeCpu = 0;
  /** The longest gap between two probes since the last sample, and the thread's CPU across it (µs). */
  private worstGap = 0;
  private worstGapCpu = 0;
  private lastCpuTimes: CpuTimes | null = null;

  constructor(
    private readonly warnAtMs: number,
    private readonly intervalMs: number,
    private readonly probes: GeneratorProbes = systemProbes,
    private readonly probeMs = PROBE_MS,
    /** The clock the probe's timer reads; the sample is handed its `now`. */
    private readonly clock: () => number = nowMs,
  ) {}

  /** `now` as `sample()` takes it: the first sample is due `intervalMs` after it. */
  start(now: number): void {
    if (this.running) return;
    this.running = true;
    this.lastSampleAt = now;
    this.histogram.reset();
    this.histogram.enable();
    this.probeAt = now;
    this.probeCpu = this.windowCpu = this.probes.cpuMicros();
    this.worstGap = this.worstGapCpu = 0;
    this.lastCpuTimes = this.probes.cpuTimes();
    this.probeTimer = setInterval(() => this.probe(this.clock()), this.probeMs);
    this.probeTimer.unref();
  }

  stop(): void {
    if (!this.running) return;
    this.running = false;
    this.histogram.disable();
    clearInterval(this.probeTimer);
    this.probeTimer = undefined;
  }

  /** Notes the thread's CPU time; a gap longer than any since the last sample is kept. */
  probe(now: number): void {
    if (!this.running) return;
    const cpu = this.probes.cpuMicros();
    const gap = now - this.probeAt;
    if (gap > this.worstGap) {
      this.worstGap = gap;
      this.worstGapCpu = cpu - this.probeCpu;
    }
    this.probeAt = now;
    this.probeCpu = cpu;
  }

  /** Called every `intervalMs` while connections are open; `now` in ms on a monotonic clock. */
  sample(events: Events, now: number): void {
    if (!this.running) return;
    // The gap that ends now is part of this second.
    this.probe(now);
    // The histogram is in ns, and its resolution (10 ms) is part of every sample: take it off.
    const recorded = this.histogram.max / 1e6 - 10;
    const late = now - this.lastSampleAt - this.intervalMs;
    const windowMs = now - this.lastSampleAt;
    this.histogram.reset();
    const worstMs = Math.max(0, recorded, late);
    const cpu = this.cpuWhileLate(worstMs, windowMs);
    const cpuTimes = this.probes.cpuTimes();
    const steal = stealPercent(this.lastCpuTimes, cpuTimes);
    this.lastCpuTimes = cpuTimes ?? this.lastCpuTimes;
    this.lastSampleAt = now;
    this.worstGap = this.worstGapCpu = 0;
    events.emit("histogram", METRICS.eventLoopLag, worstMs);
    if (worstMs <= GENERATOR_LIMITS.lagMs && worstMs <= this.warnAtMs) return;
    const cause = lateCause(cpu);
    if (worstMs > GENERATOR_LIMITS.lagMs) events.emit("counter", cause === "starved" ? METRICS.eventLoopLateStarved : METRICS.eventLoopLateSaturated, 1);
    if (worstMs > this.warnAtMs && now - this.lastWarnedAt > 10_000) {
      this.lastWarnedAt = now;
      const load = this.probes.load();
      const machine: MachineLoad = { stealPercent: steal, load: load?.load ?? null, cores: load?.cores ?? null };
      console.warn(lagWarningText(worstMs, cause, cpu, machine));
    }
  }

  /**
   * The thread's CPU while it was late, % of one core (at most 100): across the probe's longest
   * gap, over the part of it past the probe's interval. Should that gap not account for the delay
   * (it always should: both timers wait on the same loop), over the whole second.
   */
  private cpuWhileLate(worstMs: number, windowMs: number): number | null {
    const cpuNow = this.probeCpu;
    const windowCpu = cpuNow - this.windowCpu;
    this.windowCpu = cpuNow;
    const stretch = this.worstGap - this.probeMs;
    const [used, over] = stretch > 0 && stretch >= worstMs / 2 ? [this.worstGapCpu, stretch] : [windowCpu, windowMs];
    if (!(over > 0)) return null;
    return Math.min(100, Math.max(0, (used / 1000 / over) * 100));
  }
}
