import { mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { establishedPeers, startAnyCable, startRails, waitForConnections, type RunningServer } from "cable-test-servers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "./cli";

// Storm completion through the real CLI against real servers, the kernel's table as the truth.
// - Reconnect storms: anycable-go with scenarios/reconnect-storm.yml and Rails under puma with its
//   Action Cable twin (fixtures/rails-storm.yml), each killed (-9) and restarted in the harness. "All
//   back" must be the time from the kill until the server has accepted a new socket from every
//   listener (counted by peer: the first back may have left before the last one is in); 50% and 95%
//   must be the engine's own restore latencies (merged sketch) at those shares.
// - A connection storm: connection-storm.yml against Rails; 50/95/100% connected must be when the
//   kernel first showed that many of the users' sockets.
const ROOT = path.resolve(__dirname, "../../..");
const DOWN_MS = 3_000;

const json = (file: string) => JSON.parse(readFileSync(file, "utf8"));
const runDirOf = (out: string) => path.join(out, readdirSync(out).filter((d) => !d.startsWith("."))[0]);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface StormVerdict {
  dropped: number;
  back: number;
  never: number;
  halfBackMs: number | null;
  mostBackMs: number | null;
  allBackMs: number | null;
}

/** Runs `scenario` through cable-fanout while the server is killed once its listeners are in; returns the verdict and the truth. */
async function storm(server: RunningServer & { url: string }, scenario: string, work: string, overrides: object, variables?: object) {
  const out = path.join(work, path.basename(scenario, ".yml"));
  const args = ["run", scenario, "--local", "--regions", "local", "--target", server.url, "--overrides", JSON.stringify(overrides), "--out", out];
  const running = runCli(variables ? [...args, "--variables", JSON.stringify(variables)] : args, { cwd: work, timeoutMs: 150_000 });
  const listeners = await waitForConnections(server.port, 1, { steadyMs: 3_000, timeoutMs: 90_000 });
  const killedAt = Date.now();
  await server.kill();
  await sleep(DOWN_MS);
  await server.restart();
  let backAt = NaN;
  const seen = new Set<string>();
  for (const deadline = Date.now() + 60_000; Date.now() < deadline; await sleep(50)) {
    for (const peer of establishedPeers(server.port)) seen.add(peer);
    if (seen.size >= listeners) {
      backAt = Date.now();
      break;
    }
  }
  const result = await running;
  expect(result.code, result.stderr).toBe(0);
  const merged = json(path.join(runDirOf(out), "merged.json"));
  return { listeners, truthMs: backAt - killedAt, merged, stderr: result.stderr };
}

function expectConsistent(run: Awaited<ReturnType<typeof storm>>) {
  const verdict = run.merged.verdicts.storms["all regions"] as StormVerdict;
  const restore = run.merged.all.histograms["cable.restore_latency"];
  const summary = `${JSON.stringify(verdict)}; truth ${run.truthMs} ms; restore ${JSON.stringify(restore)}`;
  expect(verdict, summary).toMatchObject({ dropped: run.listeners, back: run.listeners, never: 0 });
  // Nobody was back before the server was: every restore waited out the downtime.
  expect(verdict.halfBackMs!, summary).toBeGreaterThanOrEqual(DOWN_MS);
  expect(verdict.halfBackMs!, summary).toBeLessThanOrEqual(verdict.mostBackMs!);
  expect(verdict.mostBackMs!, summary).toBeLessThanOrEqual(verdict.allBackMs!);
  // The last one back is the kernel's last socket, give or take its subscription and the polling.
  expect(Math.abs(verdict.allBackMs! - run.truthMs), summary).toBeLessThanOrEqual(1_000);
  // And the shares are the engine's recorded restore latencies (the summary is the same sketch's).
  // (the summary's max is the sketch's exact max to 0.1 ms; the verdict rounds it to 1 ms)
  expect(Math.abs(verdict.allBackMs! - restore.max), summary).toBeLessThanOrEqual(1);
  expect(Math.abs(verdict.halfBackMs! - restore.p50) / restore.p50, summary).toBeLessThanOrEqual(0.02);
  expect(Math.abs(verdict.mostBackMs! - restore.p95) / restore.p95, summary).toBeLessThanOrEqual(0.02);
  expect(run.stderr).toMatch(new RegExp(`reconnect storm, all regions: ${run.listeners} dropped: 50% back in [\\d.]+ s, 95% in [\\d.]+ s, all in [\\d.]+ s`));
}

describe("storm completion against real servers", () => {
  let work: string;
  beforeAll(() => {
    work = mkdtempSync(path.join(os.tmpdir(), "cable-fanout-storm-"));
  });
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  it("anycable-go (-9, back 3 s later): 50/95/100% back from the restore latencies, all back when the kernel says so", async () => {
    const anycable = await startAnyCable({ broker: "memory" });
    try {
      // Senders send twice, 0.2 s apart, and are done before the kill (reconnect-storm's smoke test).
      const run = await storm(anycable, path.join(ROOT, "scenarios/reconnect-storm.yml"), work, { config: { phases: [{ duration: 3, arrivalCount: 40 }], cable: { anycable: { broadcastUrl: anycable.broadcastUrl } } } }, { messages: 2, interval_ms: 200, jitter: 0.5 });
      expect(run.listeners).toBeGreaterThan(20);
      expectConsistent(run);
    } finally {
      await anycable.stop();
    }
  }, 200_000);

  it("Rails under puma (-9, back 3 s later): the same, with Action Cable's plain resubscribe", async () => {
    const rails = await startRails();
    try {
      const run = await storm(rails, path.join(__dirname, "fixtures/rails-storm.yml"), work, {});
      expect(run.listeners).toBe(30);
      expectConsistent(run);
    } finally {
      await rails.stop();
    }
  }, 200_000);

  it("Rails under puma, connection-storm.yml: 50/95/100% connected when the kernel saw that many new sockets", async () => {
    const rails = await startRails();
    try {
      const out = path.join(work, "connection-storm");
      const overrides = { config: { phases: [{ name: "storm", duration: 5, arrivalRate: 20 }] } };
      const running = runCli(["run", path.join(ROOT, "scenarios/connection-storm.yml"), "--local", "--regions", "local", "--target", rails.url, "--overrides", JSON.stringify(overrides), "--variables", JSON.stringify({ hold: 8 }), "--out", out], { cwd: work, timeoutMs: 120_000 });
      // When each listener's socket first showed in the kernel's table.
      const firstSeen = new Map<string, number>();
      for (const deadline = Date.now() + 60_000; firstSeen.size < 100 && Date.now() < deadline; await sleep(20)) {
        for (const peer of establishedPeers(rails.port)) if (!firstSeen.has(peer)) firstSeen.set(peer, Date.now());
      }
      const result = await running;
      expect(result.code, result.stderr).toBe(0);
      const merged = json(path.join(runDirOf(out), "merged.json"));
      const verdict = merged.verdicts.connects["all regions"];
      const seen = [...firstSeen.values()].sort((a, b) => a - b);
      const truth = (share: number) => seen[Math.ceil(share * 100) - 1] - verdict.start;
      const summary = `${JSON.stringify(verdict)}; kernel ${[0.5, 0.95, 1].map(truth).join(", ")} ms`;
      expect(verdict, summary).toMatchObject({ phase: "storm", users: 100, connected: 100, never: 0, basis: "arrivals" });
      expect(Math.abs(verdict.halfMs - truth(0.5)), summary).toBeLessThanOrEqual(500);
      expect(Math.abs(verdict.mostMs - truth(0.95)), summary).toBeLessThanOrEqual(500);
      expect(Math.abs(verdict.allMs - truth(1)), summary).toBeLessThanOrEqual(500);
      // The line says the verdict's own figures (the kernel's timing, above, is what bounds them).
      const said = result.stderr.match(/connection storm "storm", all regions: 100 users: 50% connected in (\d+\.\d) s, 95% in (\d+\.\d) s, all in (\d+\.\d) s/);
      expect(said, result.stderr).not.toBeNull();
      expect(said!.slice(1).map(Number), summary).toEqual([verdict.halfMs, verdict.mostMs, verdict.allMs].map((ms) => Number((ms / 1000).toFixed(1))));
    } finally {
      await rails.stop();
    }
  }, 200_000);
});
