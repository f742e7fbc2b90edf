// The note on negative broadcast latencies: a clock disagreement, said plainly, never an error.
import { describe, expect, it } from "vitest";
import { formatMs, negativeLatencyNote } from "../src/clocks";

const column = (negative: number | undefined, recorded: number) => ({
  counters: { "cable.messages_received": 10_000, ...(negative === undefined ? {} : { "cable.broadcast_latency_negative": negative }) },
  histograms: { "cable.broadcast_latency": { count: recorded, min: 0, max: 90, mean: 10, p50: 8, p75: 12, p90: 20, p95: 30, p99: 60, p999: 80 } as never },
});

describe("negativeLatencyNote", () => {
  it("is null when none was negative, or the engine did not count them", () => {
    expect(negativeLatencyNote(column(0, 9_000))).toBeNull();
    expect(negativeLatencyNote(column(undefined, 9_000))).toBeNull();
  });

  it("says how many, of how many stamped, and why", () => {
    expect(negativeLatencyNote(column(1_200, 8_800))).toBe(
      "1,200 broadcast latencies were negative: the sender's and receiver's clocks disagree by more than the latency. " +
        "They are left out of cable.broadcast_latency (1,200 of 10,000 stamped broadcasts, 12%); the latencies recorded carry the same disagreement.",
    );
    expect(negativeLatencyNote(column(1, 9_999))).toContain("1 broadcast latency was negative:");
    expect(negativeLatencyNote(column(1, 9_999))).toContain("(1 of 10,000 stamped broadcasts, under 0.1%)");
  });

  it("adds the cross-task bound when the fan-out knows it, and says when it is unknown", () => {
    expect(negativeLatencyNote(column(3, 97), 2.4)).toMatch(/By the tasks' clock error bounds, two clocks may disagree by up to 2\.4 ms\.$/);
    expect(negativeLatencyNote(column(3, 97), null)).toMatch(/The tasks' clock error bounds are unknown\.$/);
  });
});

describe("formatMs", () => {
  it("keeps two significant digits below 10 ms", () => {
    expect(formatMs(0.5458)).toBe("0.55 ms");
    expect(formatMs(2.44)).toBe("2.4 ms");
    expect(formatMs(12.4)).toBe("12 ms");
    expect(formatMs(1234.5)).toBe("1,235 ms");
  });
});
