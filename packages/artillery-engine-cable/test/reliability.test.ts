// Reliability against the local target's fault knobs: each misbehaviour gives the errors a user
// expects, every VU ends, and the run finishes within its phases plus the timeout.
import { spawn } from "node:child_process";
import path from "node:path";
import { counter, runArtillery, samples, type ArtilleryReport, type ArtilleryRun } from "cable-test-servers";
import { startTarget, type FaultConfig, type LocalTarget } from "cable-local-target";
import { afterEach, describe, expect, test } from "vitest";

const cookie = { cookies: { uid: "Kay/{{ $uuid }}" } };
let target: LocalTarget | undefined;
afterEach(async () => {
  await target?.close();
  target = undefined;
});

function cableScript(url: string, users: number, flow: unknown[], cable: Record<string, unknown> = {}) {
  return {
    config: { target: url, engines: { cable: {} }, cable: { timeout: 2, ...cable }, phases: [{ duration: 1, arrivalCount: users }] },
    scenarios: [{ name: "user", engine: "cable", flow }],
  };
}

/**
 * What every reliability run must show, whatever the fault: `failed` of its users failed, on
 * purpose; with any, the run is over config.cable.maxFailedUsers (default 0), exits 1 and says why.
 */
function expectCleanEnd(run: ArtilleryRun, users: number, maxMs: number, failed: number): ArtilleryReport {
  expect(run.code, run.output).toBe(failed > 0 ? 1 : 0);
  if (failed > 0) expect(run.output).toMatch(/cable: 1 virtual user failed, more than config\.cable\.maxFailedUsers \(0\): artillery run will exit 1\./);
  const r = run.report!;
  expect(counter(r, "vusers.created")).toBe(users);
  expect(counter(r, "vusers.failed"), run.output).toBe(failed);
  expect(counter(r, "vusers.completed") + counter(r, "vusers.failed")).toBe(users);
  expect(run.durationMs).toBeLessThan(maxMs);
  expect(run.output).not.toMatch(/unhandled|UnhandledPromiseRejection|uncaught/i);
  return r;
}

async function withFaults(faults: FaultConfig, options: Parameters<typeof startTarget>[0] = {}) {
  target = await startTarget({ port: 0, ...options, faults });
  return target;
}

describe("reliability", () => {
  test("confirmations that never come: each VU fails its subscribe at the timeout", async () => {
    const t = await withFaults({ confirmDelayMs: 60_000 });
    const run = await runArtillery({ script: cableScript(t.cableUrl, 5, [{ connect: cookie }, { subscribe: { channel: "ChatChannel", params: { id: 1 } } }]) });
    const r = expectCleanEnd(run, 5, 25_000, 5);
    expect(counter(r, "errors.cable.subscription_timeout")).toBe(5);
    expect(counter(r, "vusers.failed")).toBe(5);
  });

  test("a server that closes every tenth socket: exactly those VUs fail, the others complete", async () => {
    const t = await withFaults({ closeAfterMs: 300, closeEveryNth: 10 });
    const flow = [{ connect: cookie }, { subscribe: { channel: "ChatChannel", params: { id: 1 }, as: "chat" } }, { listen: { channel: "chat", for: 1 } }];
    const run = await runArtillery({ script: cableScript(t.cableUrl, 30, flow) });
    const r = expectCleanEnd(run, 30, 25_000, 3);
    expect(counter(r, "errors.cable.connection_closed")).toBe(3);
    expect(counter(r, "vusers.completed")).toBe(27);
  });

  test("a server that stops pinging: its connections are dropped as stale (each VU fails once, cable.stale), a pinging one's are not", async () => {
    const flow = [{ connect: cookie }, { subscribe: { channel: "ChatChannel", params: { id: 1 }, as: "chat" } }, { listen: { channel: "chat", for: 2 } }];
    const stale = async (faults: FaultConfig, failed: number) => {
      const t = await withFaults(faults, { cable: { pingIntervalMs: 200 } });
      const run = await runArtillery({ script: cableScript(t.cableUrl, 4, flow, { pingInterval: 0.2 }) });
      await t.close();
      const r = expectCleanEnd(run, 4, 25_000, failed);
      return { stale: counter(r, "cable.stale_connection"), failed: counter(r, "errors.cable.stale"), detection: samples(r, "cable.drop_detection_latency") };
    };
    expect(await stale({ stopPinging: true }, 4)).toEqual({ stale: 4, failed: 4, detection: 4 });
    expect(await stale({}, 0)).toEqual({ stale: 0, failed: 0, detection: 0 });
  });

  test("malformed frames mid-run are counted and the VUs go on", async () => {
    const t = await withFaults({ channels: { BenchmarkChannel: { malformedRatio: 0.5 } }, seed: 7 });
    const flow = [
      { connect: cookie },
      { subscribe: { channel: "BenchmarkChannel", as: "bench" } },
      { loop: [{ perform: { channel: "bench", action: "broadcast", data: { n: "{{ $loopCount }}" } } }, { think: "50ms" }], count: 10 },
      { listen: { channel: "bench", for: 1 } },
    ];
    const run = await runArtillery({ script: cableScript(t.cableUrl, 4, flow) });
    const r = expectCleanEnd(run, 4, 25_000, 0);
    expect(counter(r, "vusers.completed")).toBe(4);
    expect(counter(r, "errors.cable.malformed_frame")).toBe(t.counters().deliveriesMalformed);
    expect(counter(r, "errors.cable.malformed_frame")).toBeGreaterThan(0);
  });

  test("4xxx close codes: Pusher's become cable.pusher_<code>, counted once per VU", async () => {
    const t = await withFaults({ closeAfterMs: 300, closeCode: 4100 });
    const flow = [{ connect: {} }, { subscribe: { channel: "news", as: "news" } }, { listen: { channel: "news", for: 2 } }];
    const run = await runArtillery({
      script: cableScript(t.url, 5, flow, { protocol: "pusher", pusher: { key: t.pusher.key } }),
    });
    const r = expectCleanEnd(run, 5, 25_000, 5);
    expect(counter(r, "errors.cable.pusher_4100")).toBe(5);
    expect(counter(r, "vusers.failed")).toBe(5);
  });

  test("a server killed mid-run: every VU fails with connection_closed, and the run still ends", async () => {
    const cli = path.resolve(__dirname, "../../cable-local-target/dist/cli.js");
    const server = spawn(process.execPath, [cli, "--port", "0"], { stdio: ["ignore", "pipe", "inherit"] });
    const { cableUrl: url, httpUrl } = await new Promise<{ cableUrl: string; httpUrl: string }>((resolve, reject) => {
      server.stdout.once("data", (line: Buffer) => resolve(JSON.parse(line.toString())));
      server.once("exit", () => reject(new Error("the target exited before listening")));
    });
    const flow = [{ connect: cookie }, { subscribe: { channel: "ChatChannel", params: { id: 1 }, as: "chat" } }, { listen: { channel: "chat", for: 10 } }];
    const running = runArtillery({ script: cableScript(url, 6, flow) });
    // Kill it once all six hold a subscription (bounded: 20 s of polling at most).
    for (let i = 0; i < 200; i++) {
      const health = (await (await fetch(`${httpUrl}/health`)).json()) as { connectionsOpen: number; framesIn: number };
      if (health.connectionsOpen === 6 && health.framesIn >= 6) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    server.kill("SIGKILL");
    const run = await running;
    const r = expectCleanEnd(run, 6, 30_000, 6);
    expect(counter(r, "errors.cable.connection_closed")).toBe(6);
    expect(counter(r, "cable.connections")).toBe(6);
  });
});
