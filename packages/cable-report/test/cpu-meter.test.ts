// The plugin's CPU meter records the machine around the generator beside its CPU, where it can be
// read (steal from /proc/stat, the load average), and a sidecar with or without those figures reads.
import { describe, expect, it } from "vitest";
import { CpuMeter } from "../src/period.js";
import { sidecarSchema } from "../src/sidecar.js";

describe("CpuMeter's machine figures", () => {
  it("keeps the steal over the run and the busiest load at a period's end, with the cores", () => {
    const times = [
      { steal: 100, total: 10_000 },
      { steal: 150, total: 10_400 },
      { steal: 300, total: 11_000 },
    ];
    const loads = [1.2, 3.456];
    const meter = new CpuMeter({ cpuTimes: () => times.shift() ?? null, load: () => ({ load: loads.shift() ?? 0.5, cores: 2 }) });
    meter.begin();
    meter.mark();
    meter.mark();
    const summary = meter.summary();
    expect(summary).toMatchObject({ stealPercent: 20, loadPeak: 3.46, cores: 2 });
  });

  it("leaves them out where they cannot be read (no /proc, no load average), never failing", () => {
    const meter = new CpuMeter({ cpuTimes: () => null, load: () => null });
    meter.begin();
    meter.mark();
    const summary = meter.summary();
    expect(Object.keys(summary).sort()).toEqual(["cpuMean", "cpuPeak", "workers"]);
  });

  it("reads sidecars written before the figures, and with them", () => {
    const base = {
      format: "artillery-cable-report-sidecar",
      version: 2,
      artilleryVersion: "2.0.34",
      testRunId: "t",
      test: { name: "", scenarios: [], phases: [] },
      relativeAccuracy: 0.01,
      aggregate: { counters: {}, rates: {}, histograms: {} },
      periods: [],
      checks: null,
    };
    expect(sidecarSchema.parse({ ...base, generator: { workers: 1, cpuMean: 3, cpuPeak: 4 } }).generator).toEqual({ workers: 1, cpuMean: 3, cpuPeak: 4 });
    expect(sidecarSchema.parse({ ...base, generator: { workers: 1, cpuMean: 3, cpuPeak: 4, stealPercent: 0.2, loadPeak: 17, cores: 2 } }).generator).toEqual({
      workers: 1,
      cpuMean: 3,
      cpuPeak: 4,
      stealPercent: 0.2,
      loadPeak: 17,
      cores: 2,
    });
  });
});
