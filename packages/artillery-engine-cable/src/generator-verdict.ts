// Why was the load generator late? Pure, and shared: the engine's console warning (lag.ts), the
// report's verdict on each task (cable-report's saturation.ts), the fan-out's live lines and the
// capacity search all read a late event loop through these rules and say it in these words.
//
// A late event loop has two causes that call for opposite advice. **Saturated**: the generator
// itself had too much to do (its thread was running the whole time it was late); more workers or
// machines, or less load per process, fix it. **Starved**: the generator had little to do but was
// not given the CPU to do it (other processes, a noisy neighbour's steal, a lower priority); more
// workers would make it worse, and the latencies include that wait either way.

export const GENERATOR_LIMITS = Object.freeze({
  /** A second whose worst event-loop delay passes this (ms) counts as late. */
  lagMs: 100,
  /**
   * The cut between the two causes, in % of one core: an event-loop thread that was late while it
   * ran for at least half of that time was computing (a blocking callback, more work than one core
   * does: saturated); one that ran for less than half of it spent most of its lateness waiting for
   * a CPU it was ready to use (starved). One thread can use at most one core, so half a core is
   * the midpoint between "it had the core" and "it had none of it"; the two cases measured on this
   * machine sit far on either side of it (docs/benchmarks.md, "Saturated or starved").
   */
  busyCpuPercent: 50,
  /** CPU over this, % of the generator's worker cores, is saturation whatever the lag reads: no headroom left. */
  cpuPercent: 90,
});

export type LateCause = "saturated" | "starved";
export type GeneratorReading = "ok" | LateCause;

/** The machine around the generator, where it could be read (Linux `/proc/stat`, `os.loadavg()`); each part null when not. */
export interface MachineLoad {
  /** Time the hypervisor gave this machine's vCPUs to others, % of all CPU time over the window. */
  stealPercent: number | null;
  /** One-minute load average (runnable and uninterruptible tasks, the whole machine). */
  load: number | null;
  /** Cores this process may run on (`os.availableParallelism()`). */
  cores: number | null;
}

export const NO_MACHINE: MachineLoad = Object.freeze({ stealPercent: null, load: null, cores: null });

/**
 * One late stretch's cause, from the CPU the generator used while it lasted (% of one core): at
 * least `busyCpuPercent` is saturated, less is starved. Unknown CPU reads as saturated, as every
 * late stretch did before the CPU was measured.
 */
export function lateCause(cpuWhileLatePercent: number | null | undefined, limits = GENERATOR_LIMITS): LateCause {
  if (cpuWhileLatePercent === null || cpuWhileLatePercent === undefined || !Number.isFinite(cpuWhileLatePercent)) return "saturated";
  return cpuWhileLatePercent >= limits.busyCpuPercent ? "saturated" : "starved";
}

/** "4.6%", "12%", "100%": one decimal under 10. */
export function percentText(value: number): string {
  const rounded = value < 10 ? Math.round(value * 10) / 10 : Math.round(value);
  return `${rounded}%`;
}

/** "steal 0%, load 3.1 on 2 cores", the parts that are known; "" when none is. */
export function machineText(m: Partial<MachineLoad> | null | undefined): string {
  if (!m) return "";
  const parts: string[] = [];
  if (typeof m.stealPercent === "number" && Number.isFinite(m.stealPercent)) parts.push(`steal ${percentText(m.stealPercent)}`);
  if (typeof m.load === "number" && Number.isFinite(m.load)) {
    const cores = typeof m.cores === "number" && m.cores > 0 ? ` on ${m.cores} core${m.cores === 1 ? "" : "s"}` : "";
    parts.push(`load ${Math.round(m.load * 10) / 10}${cores}`);
  }
  return parts.join(", ");
}

/** The advice said for real saturation only. */
export const SATURATED_ADVICE = "Add workers or machines, or lower the load per process.";

/**
 * "this machine was busy with other work (the generator used 4.6% CPU; steal 0%, load 3.1 on 2
 * cores): latencies include that delay". No advice to add workers: they would compete for the
 * same busy CPU.
 */
export function starvedText(cpuPercent: number | null | undefined, machine?: Partial<MachineLoad> | null): string {
  const figures = [typeof cpuPercent === "number" && Number.isFinite(cpuPercent) ? `the generator used ${percentText(cpuPercent)} CPU` : "", machineText(machine)].filter((s) => s !== "");
  return `this machine was busy with other work${figures.length > 0 ? ` (${figures.join("; ")})` : ""}: latencies include that delay`;
}

/**
 * The engine's console warning for a late second. `cpuPercent`: the generator thread's CPU while
 * it was late, % of one core.
 */
export function lagWarningText(lagMs: number, cause: LateCause, cpuPercent: number | null, machine?: Partial<MachineLoad> | null): string {
  const late = `artillery-engine-cable: the event loop was ${Math.round(lagMs)} ms late`;
  if (cause === "starved") return `${late}: ${starvedText(cpuPercent, machine)}.`;
  const used = cpuPercent === null ? "" : ` (it used ${percentText(cpuPercent)} CPU while late)`;
  return `${late}: this load generator is saturated${used}, so latencies include its own delay. ${SATURATED_ADVICE}`;
}
