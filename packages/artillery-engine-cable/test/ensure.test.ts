// Artillery's `ensure` on the engine's metrics, through the real CLI: broadcast latency p95,
// missing messages and failed subscriptions. A clean run passes every check (no false alarm), and
// each check fails, with exit code 1, on a server that misbehaves in that one way.
import { runArtillery, type ArtilleryRun } from "cable-test-servers";
import { startTarget, type FaultConfig, type LocalTarget } from "cable-local-target";
import { afterAll, describe, expect, test } from "vitest";

const targets: LocalTarget[] = [];
afterAll(async () => {
  await Promise.all(targets.map((t) => t.close()));
});

const CHECKS = {
  latency: "cable.broadcast_latency.p95 < 250",
  missing: "cable.messages_missing == 0",
  subscriptions: "cable.failed_subscriptions == 0",
  peak: "cable.open_connections_peak.max >= 1",
};

async function run(faults: Partial<FaultConfig>, cable: Record<string, unknown> = {}): Promise<ArtilleryRun> {
  const target = await startTarget({ port: 0, faults: faults as FaultConfig });
  targets.push(target);
  return runArtillery({
    script: {
      config: {
        target: target.cableUrl,
        engines: { cable: {} },
        cable: { timeout: 3, ...cable },
        phases: [{ duration: 1, arrivalCount: 4 }],
        // Artillery 2.0.34 runs `ensure` only when its plugin is listed.
        plugins: { ensure: {} },
        ensure: {
          thresholds: [{ "cable.broadcast_latency.p95": 250 }],
          conditions: [{ expression: CHECKS.missing }, { expression: CHECKS.subscriptions }, { expression: CHECKS.peak }],
        },
      },
      scenarios: [
        {
          name: "room",
          engine: "cable",
          flow: [
            { connect: { cookies: { uid: "u-{{ $uuid }}" } } },
            { subscribe: { channel: "ChatChannel", params: { id: "ensure" }, as: "room" } },
            { loop: [{ perform: { channel: "room", action: "speak", data: { message: "hi" }, stamp: true } }, { think: 0.1 }], count: 12 },
            { listen: { channel: "room", for: 1.5 } },
          ],
        },
      ],
    },
    timeoutMs: 60_000,
  });
}

function outcome(output: string, check: string): "ok" | "fail" | undefined {
  const line = output.split("\n").find((l) => l.trim().endsWith(check) && /(ok|fail): /.test(l));
  return line ? (/fail: /.test(line) ? "fail" : "ok") : undefined;
}

describe.concurrent("ensure on cable metrics sets the exit code", () => {
  test("a clean run passes every check", async () => {
    const r = await run({});
    for (const check of Object.values(CHECKS)) expect(outcome(r.output, check), `${check}\n${r.output}`).toBe("ok");
    expect(r.code, r.output).toBe(0);
  });

  test("a slow broadcast fails the latency threshold", async () => {
    const r = await run({ broadcastDelayMs: 400 });
    expect(outcome(r.output, CHECKS.latency), r.output).toBe("fail");
    expect(outcome(r.output, CHECKS.subscriptions), r.output).toBe("ok");
    expect(r.code, r.output).toBe(1);
  });

  test("dropped broadcasts fail the missing-messages check", async () => {
    const r = await run({ dropBroadcastRatio: 0.5, seed: 7 });
    expect(outcome(r.output, CHECKS.missing), r.output).toBe("fail");
    expect(r.report!.aggregate.counters["cable.messages_missing"]).toBeGreaterThan(0);
    expect(r.code, r.output).toBe(1);
  });

  test("rejected subscriptions fail the failed-subscriptions check", async () => {
    // Every user fails too: the failure line (config.cable.maxFailedUsers) off, so that the exit code is the check's alone.
    const r = await run({ rejectSubscriptions: true }, { maxFailedUsers: false });
    expect(outcome(r.output, CHECKS.subscriptions), r.output).toBe("fail");
    expect(r.report!.aggregate.counters["cable.failed_subscriptions"]).toBe(4);
    expect(r.code, r.output).toBe(1);
  });
});
