// Spike recovery, from constructed runs whose truth is known: quiet, a fivefold spike, quiet again,
// with the slow periods lasting a known time past the spike's end.
import { describe, expect, it } from "vitest";
import { findRegressions } from "../src/compare.js";
import { renderMarkdown } from "../src/markdown.js";
import { phaseRate } from "../src/phases.js";
import { findSpikes } from "../src/recovery.js";
import { mergeRegions } from "../src/results.js";
import { around, taskOf, TEST } from "./fixtures.js";

const T0 = 1_700_000_000_000;
const CHECKS = ["recovery < 45s"];
const BROADCAST = "cable.broadcast_latency";
const PHASES = [
  { name: "quiet", duration: 60, arrivalRate: 1 },
  { name: "spike", duration: 40, arrivalRate: 5 },
  { name: "after", duration: 80, arrivalRate: 1 },
];

/**
 * 18 periods; p95 ~20 ms, ~200 ms from period 6 (the spike's start) through period `slowUntil` − 1;
 * `noise` sets the p95 of chosen periods instead (a noisy runner).
 */
function run(slowUntil: number, regions = ["eu-west-2", "us-east-1"], noise: Record<number, number> = {}) {
  return mergeRegions(
    regions.map((name, r) => ({
      name,
      files: [`${name}/t.json`],
      tasks: [
        taskOf(
          {
            test: { ...TEST, phases: PHASES, verdictChecks: CHECKS },
            phaseStarts: [
              { index: 0, name: "quiet", startTime: T0 },
              { index: 1, name: "spike", startTime: T0 + 60_000 },
              { index: 2, name: "after", startTime: T0 + 100_000 },
            ],
            counters: { "vusers.created": 18 },
            histograms: { [BROADCAST]: [10] },
            periods: Array.from({ length: 18 }, (_, i) => ({
              period: T0 + i * 10_000,
              counters: { "vusers.created": 1 },
              samples: { [BROADCAST]: around(noise[i] ?? (i >= 6 && i < slowUntil ? 200 : 20), 40, r * 100 + i) },
            })),
          },
          `${name}/t.json`,
        ),
      ],
    })),
  );
}

describe("spike recovery", () => {
  it("finds the phase at least 3× the rate of the one before", () => {
    expect(phaseRate({ arrivalRate: 2, rampTo: 10 })).toBe(10);
    expect(phaseRate({ arrivalCount: 50, duration: 10 })).toBe(5);
    expect(phaseRate({ pause: 5 })).toBe(0);
    const spikes = findSpikes(run(10));
    expect(spikes.map((s) => [s.phase, s.rateBefore, s.rate, s.start - T0, s.end! - T0])).toEqual([["spike", 1, 5, 60_000, 100_000]]);
  });

  it("says 'at once' when the first period after the spike is back, and when otherwise, within one period of the truth", () => {
    const atOnce = findSpikes(run(10))[0];
    for (const column of ["eu-west-2", "us-east-1", "all regions"]) {
      expect(atOnce.columns[column]).toMatchObject({ recoveredAfterMs: 0 });
      expect(atOnce.columns[column].before).toBeGreaterThan(18);
      expect(atOnce.columns[column].before).toBeLessThan(23);
      expect(atOnce.columns[column].worst).toBeGreaterThan(200);
    }
    // Slow for 30 s past the spike's end (periods 10, 11, 12): back from the period at 130 s.
    const late = findSpikes(run(13))[0];
    expect(late.columns["all regions"].recoveredAfterMs).toBe(30_000);
    expect(late.columns["all regions"].recoveredAt).toBe(T0 + 130_000);
  });

  it("holds the periods after the spike to the worst the phase before saw, when that is looser than 20% or 5 ms", () => {
    // One noisy period before the spike (p95 ~40 ms) and noise of the same size after it: back.
    const noisy = findSpikes(run(10, ["eu-west-2"], { 4: 40, 10: 38, 11: 36 }))[0].columns["eu-west-2"];
    expect(noisy.threshold).toBeGreaterThan(38);
    expect(noisy.recoveredAfterMs).toBe(0);
    // Without it, the same periods after the spike are not back until the noise ends.
    expect(findSpikes(run(10, ["eu-west-2"], { 10: 38, 11: 36 }))[0].columns["eu-west-2"].recoveredAfterMs).toBe(20_000);
    // Worse than the worst before is not back.
    expect(findSpikes(run(10, ["eu-west-2"], { 4: 40, 10: 60, 11: 60 }))[0].columns["eu-west-2"].recoveredAfterMs).toBe(20_000);
  });

  it("says when latency never came back, and one period back is not a recovery", () => {
    expect(findSpikes(run(99))[0].columns["all regions"]).toMatchObject({ recoveredAfterMs: null, recoveredAt: null });
    // Back only in the very last period: not two in a row.
    expect(findSpikes(run(17))[0].columns["eu-west-2"].recoveredAfterMs).toBeNull();
  });

  it("puts a table under report.md's latency chart and the verdicts in merged.json", () => {
    const merged = run(13);
    expect(merged.verdicts?.spikes).toHaveLength(1);
    const markdown = renderMarkdown(merged);
    const table = markdown.slice(markdown.indexOf("**Recovery after each spike**"));
    // Under the charts over time, in the verdicts' section, which report.html keeps too (it draws its own charts).
    expect(markdown.indexOf("**Recovery after each spike**")).toBeGreaterThan(markdown.indexOf("### What happened when: the verdicts"));
    expect(markdown.indexOf("### What happened when: the verdicts")).toBeGreaterThan(markdown.indexOf("No errors in any period."));
    expect(renderMarkdown(merged, { charts: false })).toContain("**Recovery after each spike**");
    expect(table).toMatch(/\| spike 1:00–1:40 \(5\/s after 1\/s\) \| all regions \| 2\d(\.\d)? ms \| 2\d\d(\.\d)? ms \| 2\d(\.\d)? ms \| ✅ after 30 s \|/);
    expect(renderMarkdown(run(99))).toContain("❌ not recovered by the end of the run");
  });
});

describe("the regression gate on recovery", () => {
  const gate = (current: number, baseline: number) => findRegressions(run(current), run(baseline), 10).filter((r) => r.row.startsWith("Verdicts:"));

  it("passes identical runs, and a change no larger than one period (the verdict's resolution)", () => {
    expect(gate(13, 13)).toEqual([]);
    expect(gate(14, 13)).toEqual([]);
  });

  it("fails a spike that took 30 s to recover and now takes 60 s, and one that no longer recovers", () => {
    const slower = gate(16, 13);
    expect(slower.map((r) => [r.column, r.baseline, r.current])).toEqual([
      ["eu-west-2", 30, 60],
      ["us-east-1", 30, 60],
      ["all regions", 30, 60],
    ]);
    expect(slower[0].reason).toContain("30 s → 60 s: +100% ≥ 10%");
    expect(gate(99, 13).map((r) => r.reason)).toContain("recovered after 30 s in the baseline; not by the end of this run");
    // The report lists it with the rest.
    expect(renderMarkdown(run(16), { baseline: run(13), regressionThreshold: 10 })).toContain('**Verdicts: recovery after spike "spike" (s)**, all regions');
  });
});

describe("recovery < 45s (config.plugins.cable-report.ensure)", () => {
  it("passes in every column when each recovered in time, fails when one did not, and shows it under the verdicts", () => {
    const passed = run(13).verdicts!.checks;
    expect(passed).toEqual([{ check: "recovery < 45s", columns: Object.fromEntries(["eu-west-2", "us-east-1", "all regions"].map((c) => [c, { passed: true, value: '"spike" recovered after 30 s' }])) }]);
    const failed = run(99);
    expect(failed.verdicts!.checks[0].columns["all regions"]).toEqual({ passed: false, value: '"spike" not recovered by the end of the run' });
    expect(renderMarkdown(failed)).toContain('| `recovery < 45s` | ❌ "spike" not recovered by the end of the run |');
  });
});
