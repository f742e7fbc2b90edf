// Why the generator was late, pure: the cut between saturated and starved, the words of each, and
// the lag monitor's reading of a late second from its thread's CPU (fake probes, fake clock).
import { EventEmitter } from "node:events";
import { afterEach, describe, expect, it, vi } from "vitest";
import { GENERATOR_LIMITS, lagWarningText, lateCause, machineText, starvedText } from "../src/generator-verdict.js";
import { LagMonitor, systemProbes, type GeneratorProbes } from "../src/lag.js";
import { parseProcStat, stealPercent, type CpuTimes } from "../src/machine.js";
import { METRICS } from "../src/metrics.js";

describe("the verdict on a late second", () => {
  it("cuts at half a core: running at least half the late time is saturated, less is starved; unknown CPU stays saturated", () => {
    expect(GENERATOR_LIMITS).toEqual({ lagMs: 100, busyCpuPercent: 50, cpuPercent: 90 });
    expect(lateCause(97)).toBe("saturated");
    expect(lateCause(50)).toBe("saturated");
    expect(lateCause(49.9)).toBe("starved");
    expect(lateCause(0)).toBe("starved");
    expect(lateCause(null)).toBe("saturated");
    expect(lateCause(Number.NaN)).toBe("saturated");
  });

  it("words starved as the machine's other work, with the figures it has, and never advises more workers", () => {
    expect(starvedText(4.6, { stealPercent: 0, load: 3.14, cores: 2 })).toBe(
      "this machine was busy with other work (the generator used 4.6% CPU; steal 0%, load 3.1 on 2 cores): latencies include that delay",
    );
    expect(starvedText(12.4, { stealPercent: null, load: 1, cores: 1 })).toBe("this machine was busy with other work (the generator used 12% CPU; load 1 on 1 core): latencies include that delay");
    expect(starvedText(null, null)).toBe("this machine was busy with other work: latencies include that delay");
    expect(machineText({ stealPercent: 7.25, load: null, cores: 4 })).toBe("steal 7.3%");
    const starved = lagWarningText(133, "starved", 4.6, { stealPercent: 0, load: 3.1, cores: 2 });
    expect(starved).toBe("artillery-engine-cable: the event loop was 133 ms late: this machine was busy with other work (the generator used 4.6% CPU; steal 0%, load 3.1 on 2 cores): latencies include that delay.");
    expect(starved).not.toMatch(/saturated|workers|machines/);
  });

  it("words saturated as the generator's own delay, with the advice", () => {
    expect(lagWarningText(412.4, "saturated", 98, null)).toBe(
      "artillery-engine-cable: the event loop was 412 ms late: this load generator is saturated (it used 98% CPU while late), so latencies include its own delay. Add workers or machines, or lower the load per process.",
    );
    expect(lagWarningText(150, "saturated", null, null)).toBe(
      "artillery-engine-cable: the event loop was 150 ms late: this load generator is saturated, so latencies include its own delay. Add workers or machines, or lower the load per process.",
    );
  });
});

describe("/proc/stat", () => {
  it("reads steal and the total of the first eight fields; anything else is null", () => {
    const stat = "cpu  1057453 603 90314 1373554 2983 0 5388 1976 0 0\ncpu0 525191 386 45718 689477 1796 0 2539 1010 0 0\n";
    expect(parseProcStat(stat)).toEqual({ steal: 1976, total: 1057453 + 603 + 90314 + 1373554 + 2983 + 0 + 5388 + 1976 });
    expect(parseProcStat("cpu  1 2 3\n")).toBeNull();
    expect(parseProcStat("intr 1 2 3 4 5 6 7 8 9")).toBeNull();
    expect(parseProcStat("")).toBeNull();
    expect(stealPercent({ steal: 10, total: 1000 }, { steal: 60, total: 1200 })).toBe(25);
    expect(stealPercent(null, { steal: 60, total: 1200 })).toBeNull();
    expect(stealPercent({ steal: 10, total: 1000 }, { steal: 10, total: 1000 })).toBeNull();
  });

  it("the system's probes never throw, here or where /proc is missing", () => {
    expect(() => systemProbes.cpuTimes()).not.toThrow();
    expect(systemProbes.cpuMicros()).toBeGreaterThan(0);
    const load = systemProbes.load();
    if (process.platform !== "win32") expect(load!.cores).toBeGreaterThan(0);
  });
});

/** A thread whose CPU time and machine the test sets; the clock is the test's `now`. */
class FakeProbes implements GeneratorProbes {
  cpuUs = 0;
  times: CpuTimes | null = { steal: 0, total: 0 };
  loadAvg: { load: number; cores: number } | null = { load: 3.1, cores: 2 };
  cpuMicros = () => this.cpuUs;
  cpuTimes = () => this.times;
  load = () => this.loadAvg;
}

function run(gapCpuMs: number, probes = new FakeProbes(), lateMs = 300) {
  const events = new EventEmitter();
  const counters: string[] = [];
  const lags: number[] = [];
  events.on("counter", (name: string) => counters.push(name));
  events.on("histogram", (name: string, v: number) => name === METRICS.eventLoopLag && lags.push(v));
  const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
  // Probes every 50 ms for a second at 0.1 ms of CPU each, then one gap of `lateMs` with `gapCpuMs` of CPU.
  const monitor = new LagMonitor(100, 1000, probes, 50, () => 0);
  monitor.start(0);
  for (let t = 50; t <= 1000; t += 50) {
    probes.cpuUs += 100;
    monitor.probe(t);
  }
  probes.cpuUs += gapCpuMs * 1000;
  if (probes.times) probes.times = { steal: 50, total: 200 };
  monitor.sample(events, 1000 + lateMs);
  monitor.stop();
  return { counters, lags, warnings: warn.mock.calls.map((c) => String(c[0])) };
}

describe("LagMonitor reads a late second's cause from its thread's CPU", () => {
  afterEach(() => vi.restoreAllMocks());

  it("a thread that waited (it ran 3 ms of the 250 ms its probe was late) is starved: counted so, warned without advice, with steal and load", () => {
    const r = run(3);
    expect(r.lags).toEqual([300]);
    expect(r.counters).toEqual([METRICS.eventLoopLateStarved]);
    expect(r.warnings).toEqual([
      "artillery-engine-cable: the event loop was 300 ms late: this machine was busy with other work (the generator used 1.2% CPU; steal 25%, load 3.1 on 2 cores): latencies include that delay.",
    ]);
  });

  it("a thread that ran through its stretch (a blocking callback) is saturated, with the advice", () => {
    const r = run(240);
    expect(r.counters).toEqual([METRICS.eventLoopLateSaturated]);
    expect(r.warnings).toEqual([
      "artillery-engine-cable: the event loop was 300 ms late: this load generator is saturated (it used 96% CPU while late), so latencies include its own delay. Add workers or machines, or lower the load per process.",
    ]);
  });

  it("a 400 ms block in an idle second is the block's CPU, not the second's: saturated", () => {
    // 400 ms of CPU over a 1.4 s second is 29 %, under the cut; over its 400 ms stretch it is all of it.
    expect(run(400, new FakeProbes(), 400).counters).toEqual([METRICS.eventLoopLateSaturated]);
  });

  it("without /proc or a load average the warning keeps the CPU alone; a second under 100 ms counts nothing", () => {
    const probes = new FakeProbes();
    probes.times = null;
    probes.loadAvg = null;
    expect(run(3, probes).warnings[0]).toContain("(the generator used 1.2% CPU): latencies include that delay.");
    expect(run(3, new FakeProbes(), 80)).toEqual({ counters: [], lags: [80], warnings: [] });
  });
});
