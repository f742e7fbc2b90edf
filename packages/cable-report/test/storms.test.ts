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
