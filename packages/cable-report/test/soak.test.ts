// Soak drift through the merge: a 30-minute run whose p95 creeps up is called drifting, a flat one
// never, a short one gets no drift verdict at all; the server's memory likewise (drift.ts holds the
// statistics and their A/A and A/B counts on 1,000 seeds).
import { describe, expect, it } from "vitest";
import { findRegressions } from "../src/compare.js";
import { renderMarkdown } from "../src/markdown.js";
import { mergeRegions } from "../src/results.js";
import { describeVerdicts } from "../src/recovery.js";
import { soakDrift } from "../src/soak.js";
import { around, taskOf } from "./fixtures.js";

const T0 = 1_700_000_000_000;
const BROADCAST = "cable.broadcast_latency";

/** `minutes` of periods from two regions; p95 at 20 ms growing by `perHour` ms an hour. */
function soak(minutes: number, perHour: number, memoryPerHour?: number) {
  const periods = (minutes * 60) / 10;
  const server =
    memoryPerHour === undefined
      ? null
      : {
          at: Array.from({ length: periods * 2 }, (_, i) => T0 + i * 5_000),
          vcpu: Array.from({ length: periods * 2 }, () => 0.5),
          memoryMiB: Array.from({ length: periods * 2 }, (_, i) => 40 + (memoryPerHour * i * 5) / 3600 + ((i * 7919) % 13) / 13),
          connections: Array.from({ length: periods * 2 }, () => 100),
        };
  return mergeRegions(
    ["eu-west-2", "us-east-1"].map((name, r) => ({
      name,
      files: [`${name}/t.json`],
      tasks: [
        taskOf(
          {
            counters: { "vusers.created": periods },
            histograms: { [BROADCAST]: [10] },
            periods: Array.from({ length: periods }, (_, i) => ({
              period: T0 + i * 10_000,
              counters: { "vusers.created": 1 },
              samples: { [BROADCAST]: around(20 + (perHour * i * 10) / 3600, 30, r * 10_000 + i) },
            })),
          },
          `${name}/t.json`,
        ),
      ],
    })),
    { server },
  );
}

describe("soak drift", () => {
  it("calls a 30-minute soak whose p95 grows 30 ms an hour drifting, in every column", () => {
    const merged = soak(30, 30);
    const drift = merged.verdicts!.drift!;
    expect(drift.metric).toBe(BROADCAST);
    for (const column of ["eu-west-2", "us-east-1", "all regions"]) {
      expect(drift.latency[column].kind).toBe("drifting");
      expect(drift.latency[column].perHour!).toBeGreaterThan(20);
      expect(drift.latency[column].perHour!).toBeLessThan(40);
    }
    expect(renderMarkdown(merged)).toMatch(/- all regions: ❌ drifting: /);
    expect(describeVerdicts(merged).some((l) => l.startsWith("soak drift, all regions: drifting: "))).toBe(true);
  });

  it("never calls a flat soak drifting, and judges the server's memory from --server-metrics", () => {
    const flat = soak(30, 0, 0);
    expect(Object.values(flat.verdicts!.drift!.latency).map((d) => d.kind)).toEqual(["flat", "flat", "flat"]);
    expect(flat.verdicts!.drift!.memory!.kind).toBe("flat");
    expect(soak(30, 0, 40).verdicts!.drift!.memory!.kind).toBe("drifting");
    expect(renderMarkdown(soak(30, 0, 40))).toMatch(/- server memory: ❌ drifting: /);
  });

  it("gives a run under 10 minutes no drift verdict at all", () => {
    expect(soak(5, 300).verdicts!.drift).toBeNull();
    expect(renderMarkdown(soak(5, 300))).not.toContain("Soak drift");
  });

  it("judges a compressed soak (soakMinimum 2m): a flat one flat, a leak sped up 100× drifting", () => {
    const judged = (perHour: number, memoryPerHour: number) => {
      const drift = soakDrift(soak(3, perHour, memoryPerHour), 120_000)!;
      return [...Object.values(drift.latency).map((d) => d.kind), drift.memory!.kind];
    };
    expect(judged(0, 0)).toEqual(["flat", "flat", "flat", "flat"]);
    expect(judged(3000, 2000)).toEqual(["drifting", "drifting", "drifting", "drifting"]);
    expect(soakDrift(soak(1, 3000, 2000), 120_000)).toBeNull();
  });
});

describe("the regression gate on drift", () => {
  it("fails a soak that drifts where the baseline was flat, and passes identical flat ones", () => {
    const verdictRows = (current: ReturnType<typeof soak>, baseline: ReturnType<typeof soak>) => findRegressions(current, baseline, 10).filter((r) => r.row.startsWith("Verdicts:"));
    expect(verdictRows(soak(30, 0, 0), soak(30, 0, 0))).toEqual([]);
    const drifting = verdictRows(soak(30, 30, 40), soak(30, 0, 0));
    expect(drifting.map((r) => r.row)).toEqual(expect.arrayContaining(["Verdicts: cable.broadcast_latency p95 drift (per hour)", "Verdicts: server memory drift (MiB per hour)"]));
    expect(drifting.every((r) => r.reason.startsWith("flat in the baseline, drifting now: "))).toBe(true);
  });
});
