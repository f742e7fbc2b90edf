// Smoke tests of the scenario library: each scenario runs against the local target, shortened
// through Artillery's own overrides, and must finish clean with its headline metrics present.
import path from "node:path";
import { readdirSync, readFileSync } from "node:fs";
import yaml from "js-yaml";
import { counter, runArtillery, samples, startAnyCable, waitForConnections } from "cable-test-servers";
import { startTarget, type LocalTarget } from "cable-local-target";
import { afterAll, beforeAll, describe, expect, test } from "vitest";

const repo = path.resolve(__dirname, "../../..");
let target: LocalTarget;
beforeAll(async () => {
  target = await startTarget({ port: 0 });
});
afterAll(() => target?.close());


interface Smoke {
  users: number;
  variables?: Record<string, unknown>;
  /** Histograms that must have samples. */
  histograms: string[];
  pusher?: boolean;
}

const smoke: Record<string, Smoke> = {
  "chat.yml": { users: 4, histograms: ["cable.rtt", "cable.broadcast_latency"] },
  "connection-storm.yml": { users: 30, variables: { hold: 1 }, histograms: ["cable.handshake_latency", "cable.subscription_latency"] },
  "active-chat.yml": { users: 5, variables: { messages: 4 }, histograms: ["cable.broadcast_latency"] },
  "bot-stress.yml": { users: 3, variables: { commands: 20 }, histograms: ["cable.command_rtt"] },
  "spike.yml": { users: 6, variables: { messages: 2 }, histograms: ["cable.broadcast_latency"] },
  "soak.yml": { users: 3, variables: { stay_messages: 1 }, histograms: ["cable.broadcast_latency"] },
  "soak-pubsub.yml": { users: 3, variables: { stay_messages: 1 }, histograms: ["cable.broadcast_latency", "cable.publish_latency"] },
  "mixed.yml": { users: 20, variables: { stay: 1, messages: 1, commands: 3 }, histograms: ["cable.handshake_latency"] },
  "avalanche.yml": { users: 20, variables: { hold: 1 }, histograms: ["cable.connect_to_confirm", "cable.subscription_latency"] },
  "pusher-avalanche.yml": { users: 20, variables: { hold: 1 }, histograms: ["cable.connect_to_confirm", "cable.subscription_latency"], pusher: true },
  // Weights pick senders at random (1 in 5): with 40 users, none is picked once in ~7,000 runs.
  "cable-broadcast.yml": { users: 40, variables: { lifetime: 2, sends: 8 }, histograms: ["cable.handshake_latency"] },
  "pusher-broadcast.yml": { users: 40, variables: { lifetime: 2, sends: 8 }, histograms: ["cable.handshake_latency"], pusher: true },
  "pubsub-rooms.yml": { users: 4, variables: { messages: 2, stay: 1 }, histograms: ["cable.publish_latency", "cable.broadcast_latency"], pusher: true },
  // The capacity scenarios loop until `cable-fanout capacity` says stop, or for capacity_max_s.
  "capacity-rails.yml": { users: 10, variables: { capacity_max_s: 2 }, histograms: ["cable.handshake_latency", "cable.subscription_latency"] },
  "capacity-anycable.yml": { users: 10, variables: { capacity_max_s: 2 }, histograms: ["cable.handshake_latency", "cable.subscription_latency"] },
  "capacity-pusher.yml": { users: 10, variables: { capacity_max_s: 2 }, histograms: ["cable.handshake_latency"], pusher: true },
};

/** Scenarios that need a real server or app, run by the test file named. */
const elsewhere: Record<string, string> = {
  "reconnect-storm.yml": "scenarios.test.ts", // a real restart: its smoke test is below
  "rails-devise.yml": "rails-devise.test.ts",
  "anycable-jwt.yml": "rails-devise.test.ts",
  "laravel-presence.yml": "laravel-app.test.ts",
  "laravel-token.yml": "laravel-app.test.ts",
  "laravel-token-pool.yml": "laravel-app.test.ts",
  "laravel-presence-html.yml": "laravel-sign-in-limits.test.ts",
};

test("every scenario in scenarios/ has a smoke test", () => {
  const files = readdirSync(path.join(repo, "scenarios")).filter((f) => f.endsWith(".yml"));
  expect(files.filter((f) => !(f in smoke) && !(f in elsewhere))).toEqual([]);
  for (const [file, testFile] of Object.entries(elsewhere)) expect(readFileSync(path.join(__dirname, testFile), "utf8"), testFile).toContain(file);
});

test("every scenario in scenarios/ fails a run in which a user failed: an ensure on vusers.failed, or (a capacity stair) says why not", () => {
  for (const file of readdirSync(path.join(repo, "scenarios")).filter((f) => f.endsWith(".yml"))) {
    const config = (yaml.load(readFileSync(path.join(repo, "scenarios", file), "utf8")) as { config: { plugins?: Record<string, unknown>; ensure?: { conditions?: { expression: string }[] } } }).config;
    if (file.startsWith("capacity-")) {
      expect(readFileSync(path.join(repo, "scenarios", file), "utf8"), file).toContain("# No `ensure`: past its capacity a stair is meant to fail");
      continue;
    }
    expect(config.plugins, file).toHaveProperty("ensure");
    expect((config.ensure?.conditions ?? []).map((c) => c.expression), file).toContain("vusers.failed == 0");
  }
});

describe.each(Object.entries(smoke))("%s against the local target", (file, spec) => {
  test("runs clean, shortened", async () => {
    const overrides: Record<string, any> = { config: { phases: [{ duration: 1, arrivalCount: spec.users }] } };
    if (spec.pusher) overrides.config.cable = { pusher: { key: target.pusher.key, appId: target.pusher.appId } };
    const { code, output, report } = await runArtillery({
      script: path.join(repo, "scenarios", file),
      args: [
        "--target",
        spec.pusher ? target.url : target.cableUrl,
        "--overrides",
        JSON.stringify(overrides),
        ...(spec.variables ? ["-v", JSON.stringify(spec.variables)] : []),
      ],
      env: { PUSHER_APP_SECRET: target.pusher.secret },
    });
    expect(code, output).toBe(0);
    const r = report!;
    expect(counter(r, "vusers.created")).toBe(spec.users);
    expect(counter(r, "vusers.completed"), output).toBe(spec.users);
    expect(counter(r, "cable.connections")).toBe(spec.users);
    expect(Object.keys(r.aggregate.counters).filter((k) => k.startsWith("errors."))).toEqual([]);
    for (const h of spec.histograms) expect(samples(r, h), h).toBeGreaterThan(0);
  });
});

describe("reconnect-storm.yml against a real restart", () => {
  test("anycable-go killed (-9) once the listeners are in, back 3 s later: every VU completes", async () => {
    const anycable = await startAnyCable({ broker: "memory" });
    try {
      // Senders send twice, 0.2 s apart, so they are done before the restart: a publish while the
      // server is down fails, as the scenario says. The restart is the listeners' test.
      const overrides = { config: { phases: [{ duration: 3, arrivalCount: 40 }], cable: { anycable: { broadcastUrl: anycable.broadcastUrl } } } };
      const running = runArtillery({
        script: path.join(repo, "scenarios", "reconnect-storm.yml"),
        args: ["--target", anycable.url, "--overrides", JSON.stringify(overrides), "-v", JSON.stringify({ messages: 2, interval_ms: 200, jitter: 0.5 })],
        timeoutMs: 90_000,
      });
      await waitForConnections(anycable.port, 1, { steadyMs: 2_000 });
      await anycable.kill();
      await new Promise((r) => setTimeout(r, 3_000));
      await anycable.restart();
      const { code, output, report } = await running;
      expect(code, output).toBe(0);
      const r = report!;
      expect(counter(r, "vusers.created")).toBe(40);
      expect(counter(r, "vusers.completed"), output).toBe(40);
      const listeners = counter(r, "vusers.created_by_name.listener");
      expect(listeners).toBeGreaterThan(0);
      expect(samples(r, "cable.restore_latency")).toBe(listeners);
      expect(counter(r, "cable.reconnect_attempts")).toBeGreaterThan(listeners);
      // A memory broker dies with the process: no session to restore, its history epoch is gone.
      expect(counter(r, "cable.subscriptions_resubscribed")).toBe(listeners);
      // Listeners that heard a message before the kill ask for history from it, and are refused;
      // those that heard none have no position to ask from.
      expect(counter(r, "errors.cable.history_rejected")).toBeLessThanOrEqual(listeners);
      expect(Object.keys(r.aggregate.counters).filter((k) => k.startsWith("errors.") && k !== "errors.cable.history_rejected")).toEqual([]);
    } finally {
      await anycable.stop();
    }
  });
});
