// The per-frame metrics a period at a time (src/period-metrics.ts) through the real artillery CLI:
// the patch goes live in the worker thread, and every delivery and every latency still reaches
// Artillery's report, period by period.
import { counter, runArtillery, samples } from "cable-test-servers";
import { startTarget, type LocalTarget } from "cable-local-target";
import { afterAll, beforeAll, describe, expect, test } from "vitest";

let target: LocalTarget;
beforeAll(async () => {
  target = await startTarget({ port: 0 });
});
afterAll(async () => {
  await target?.close();
});

const LISTENERS = 10;
const BROADCASTS = 240;

describe("per-frame metrics handed to Artillery a period at a time", () => {
  test("over periods of a real run, every delivery is counted and every latency recorded", async () => {
    const script = {
      config: { target: target.cableUrl, engines: { cable: {} }, cable: { timeout: 5 }, phases: [{ duration: 1, arrivalCount: LISTENERS }] },
      scenarios: [{ name: "listener", engine: "cable", flow: [{ connect: { cookies: { uid: "P/{{ $uuid }}" } } }, { subscribe: { stream: "ticker", as: "ticker" } }, { listen: { channel: "ticker", for: 20 } }, { disconnect: {} }] }],
    };
    const run = runArtillery({ script, env: { NODE_DEBUG: "cable" }, timeoutMs: 60_000 });
    const deadline = Date.now() + 20_000;
    while (target.counters().framesIn < LISTENERS && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    // 12 s of stamped broadcasts, 20 a second: the run's periods close while they come.
    let reached = 0;
    for (let i = 0; i < BROADCASTS; i++) {
      reached += target.broadcast("ticker", JSON.stringify({ seq: i, ts: Date.now() }));
      await new Promise((r) => setTimeout(r, 50));
    }
    const { code, output, report } = await run;
    expect(code, output).toBe(0);
    expect(reached).toBe(LISTENERS * BROADCASTS);
    expect(output).toContain("per-frame metrics: handed to Artillery a period at a time from the next period");
    const r = report!;
    expect(counter(r, "cable.messages_received")).toBe(LISTENERS * BROADCASTS);
    expect(samples(r, "cable.broadcast_latency")).toBe(LISTENERS * BROADCASTS);
    const periods = (r as unknown as { intermediate: Array<{ rates?: Record<string, number>; summaries?: Record<string, { count: number }> }> }).intermediate;
    const withFrames = periods.filter((p) => (p.summaries?.["cable.broadcast_latency"]?.count ?? 0) > 0);
    expect(withFrames.length).toBeGreaterThanOrEqual(2);
    expect(withFrames.reduce((sum, p) => sum + p.summaries!["cable.broadcast_latency"].count, 0)).toBe(LISTENERS * BROADCASTS);
    for (const p of withFrames) expect(p.rates?.["cable.receive_rate"]).toBeGreaterThan(0);
  }, 90_000);
});
