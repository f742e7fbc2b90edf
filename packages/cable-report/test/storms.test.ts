// Reconnect storms: the times until 50%, 95% and all of the dropped users were back, read from the
// merged restore latencies, with the users who never came back counted.
import { describe, expect, it } from "vitest";
import { renderMarkdown } from "../src/markdown.js";
import { mergeRegions } from "../src/results.js";
import { describeVerdicts } from "../src/recovery.js";
import { exactQuantile, taskOf } from "./fixtures.js";

const RESTORE = "cable.restore_latency";
/** n restores spread evenly over [from, to] ms. */
const spread = (n: number, from: number, to: number) => Array.from({ length: n }, (_, i) => from + ((to - from) * i) / Math.max(1, n - 1));
const T0 = 1_700_000_000_000;

function storm(regions: Array<{ name: string; restores: number[]; never: number }>) {
  return mergeRegions(
    regions.map(({ name, restores, never }) => ({
      name,
      files: [`${name}/t.json`],
      tasks: [
        taskOf(
          {
            counters: { "vusers.created": restores.length + never, ...(never > 0 ? { "errors.cable.reconnect_timeout": never } : {}) },
            histograms: { [RESTORE]: restores },
            periods: [0, 1].map((i) => ({ period: T0 + i * 10_000, counters: { "vusers.created": 1 }, samples: { [RESTORE]: restores.slice(i * 5, i * 5 + 5) } })),
          },
          `${name}/t.json`,
        ),
      ],
    })),
  );
}

describe("reconnect storms", () => {
  it("reads 50%, 95% and 100% back from the merged restore latencies, per region and for all", () => {
    const a = spread(100, 1_000, 3_000);
    const b = spread(100, 2_000, 8_000);
    const merged = storm([
      { name: "eu-west-2", restores: a, never: 0 },
      { name: "us-east-1", restores: b, never: 0 },
    ]);
    const storms = merged.verdicts!.storms;
    expect(storms["eu-west-2"]).toMatchObject({ dropped: 100, back: 100, never: 0, allBackMs: 3_000, approximate: false });
    expect(Math.abs(storms["eu-west-2"].halfBackMs! - exactQuantile(a, 0.5)) / exactQuantile(a, 0.5)).toBeLessThan(0.02);
    const all = [...a, ...b];
    expect(Math.abs(storms["all regions"].mostBackMs! - exactQuantile(all, 0.95)) / exactQuantile(all, 0.95)).toBeLessThan(0.02);
    expect(storms["all regions"].allBackMs).toBe(8_000);
  });

  it("counts who never came back: 95% of the dropped is then further into the restores, and 'all' is never", () => {
    // 90 back within [1, 3] s, 10 never: 50% of 100 is the 50th of 90 restores; 95% of 100 is never.
    const merged = storm([{ name: "local", restores: spread(90, 1_000, 3_000), never: 10 }]);
    const s = merged.verdicts!.storms.local;
    expect(s).toMatchObject({ dropped: 100, back: 90, never: 10, mostBackMs: null, allBackMs: null });
    expect(Math.abs(s.halfBackMs! - exactQuantile(spread(90, 1_000, 3_000), 50 / 90)) / 2_000).toBeLessThan(0.02);
    expect(describeVerdicts(merged)).toContain(`reconnect storm, local: 100 dropped: 50% back in ${(s.halfBackMs! / 1000).toFixed(1)} s, 95% never; 10 never came back`);
    expect(renderMarkdown(merged)).toMatch(/\| local \| 100 \| \d\.\d s \| never \| never \| ❌ 10 \|/);
  });

  it("says nothing for a run without reconnects", () => {
    expect(storm([{ name: "x", restores: [], never: 0 }]).verdicts!.storms).toEqual({});
  });
});

describe("connection storms", () => {
  const HANDSHAKE = "cable.handshake_latency";
  /** One region, one task: `users` arriving over `seconds` from T0 + 3 s, connecting `perPeriod[i]` in period i. */
  function connectStorm(opts: { users: number; seconds: number; perPeriod: number[]; handshakes: number[]; phases?: Array<Record<string, unknown>> }) {
    const phases = opts.phases ?? [{ name: "storm", duration: opts.seconds, arrivalCount: opts.users }];
    return mergeRegions([
      {
        name: "eu-west-2",
        files: ["eu-west-2/t.json"],
        tasks: [
          taskOf(
            {
              counters: { "vusers.created": opts.users, "cable.connections": opts.perPeriod.reduce((a, b) => a + b, 0) },
              histograms: { [HANDSHAKE]: opts.handshakes },
              periods: opts.perPeriod.map((c, i) => ({ period: T0 + i * 10_000, counters: { "cable.connections": c, "vusers.created": i === 0 ? opts.users : 0 }, samples: {} })),
              phaseStarts: phases.map((p, index) => ({ index, name: String(p.name ?? ""), startTime: T0 + 3_000 + index * 10_000 })),
              test: { name: "storm", scenarios: ["join"], phases },
            },
            "eu-west-2/t.json",
          ),
        ],
      },
    ]);
  }

  it("holds the periods' counts to the arrivals and the handshake latencies: a healthy server connects everyone as they arrive", () => {
    // 200 users over 10 s from 3 s into the first period: 140 connect in it, 60 in the next; 5–20 ms handshakes.
    const merged = connectStorm({ users: 200, seconds: 10, perPeriod: [140, 60], handshakes: spread(200, 5, 20) });
    expect(merged.verdicts!.connects["all regions"]).toEqual({ phase: "storm", start: T0 + 3_000, users: 200, connected: 200, never: 0, halfMs: 5_005, mostMs: 9_520, allMs: 10_020, basis: "arrivals" });
    expect(describeVerdicts(merged)).toContain('connection storm "storm", eu-west-2: 200 users: 50% connected in 5.0 s, 95% in 9.5 s, all in 10.0 s');
    expect(renderMarkdown(merged)).toContain("| eu-west-2 | 200 | 5.0 s | 9.5 s | 10.0 s | 0 |");
  });

  it("lets the periods decide between the bounds when the server chokes, and counts who never connected", () => {
    // Handshakes of 5 ms to 30 s: 40 in the first period, 120 in the second, 40 in the third.
    const choking = connectStorm({ users: 200, seconds: 10, perPeriod: [40, 120, 40], handshakes: spread(200, 5, 30_000) });
    const c = choking.verdicts!.connects["all regions"];
    // 50%: 60 of the second period's 120, half way through it: 10 + 5 = 15 s into the run, 12 s after the phase began.
    expect(c.halfMs).toBe(12_000);
    expect(c.allMs).toBe(27_000);
    const lost = connectStorm({ users: 200, seconds: 10, perPeriod: [140, 40], handshakes: spread(180, 5, 20) });
    expect(lost.verdicts!.connects["all regions"]).toMatchObject({ connected: 180, never: 20, allMs: null, mostMs: null });
    expect(describeVerdicts(lost)).toContain('connection storm "storm", eu-west-2: 200 users: 50% connected in 5.0 s, 95% never; 20 never connected');
  });

  it("judges only a run whose users all arrive in one burst of at least 20/s for a minute or less", () => {
    const trickle = connectStorm({ users: 100, seconds: 10, perPeriod: [70, 30], handshakes: spread(100, 5, 20) });
    expect(trickle.verdicts!.connects).toEqual({});
    const ramp = connectStorm({ users: 200, seconds: 10, perPeriod: [140, 60], handshakes: spread(200, 5, 20), phases: [{ name: "warm", duration: 10, arrivalRate: 1 }, { name: "storm", duration: 10, arrivalRate: 20 }] });
    expect(ramp.verdicts!.connects).toEqual({});
    const long = connectStorm({ users: 4_000, seconds: 120, perPeriod: [2_800, 1_200], handshakes: spread(200, 5, 20) });
    expect(long.verdicts!.connects).toEqual({});
  });
});
