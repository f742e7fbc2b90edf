// The time verdicts' long proofs, as manual runs (too long for CI; their figures are in
// docs/verdicts.md). Each runs the real `cable-fanout run --local` against a target with a known
// truth and prints the verdict beside it:
//
//   node bench/verdicts.mjs spike [--runs 10]      scenarios/spike.yml against the local target's
//                                                  spike penalty (the over-time CLI test's settings),
//                                                  then once with no penalty ("at once")
//   node bench/verdicts.mjs soak [--runs 10]       compressed soaks (soakMinimum 2m), a flat target
//                                                  and one with its leak sped up, side by side (A/A, A/B)
//   node bench/verdicts.mjs anycable-soak [--minutes 30]
//                                                  scenarios/soak-pubsub.yml against real anycable-go
//                                                  with --server-metrics on its own /metrics
//   node bench/verdicts.mjs partition [--listeners 100] [--silence 20] [--server anycable|rails|sockudo]
//                                                  listeners on a real server through a proxy that
//                                                  goes silent, healed by resetting or forgetting the
//                                                  survivors (partition.test.ts at full size)
//
// Results go to bench/results/verdicts-<mode>.json (one entry a run). Needs `npm run build` and,
// for anycable-soak, `bash scripts/setup-test-servers.sh`.
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { startTarget } from "cable-local-target";
import { counter, establishedConnections, freePort, runArtillery, spawnServer, startAnyCable, startRails, startSockudo, startTcpProxy } from "cable-test-servers";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const FANOUT = path.join(root, "packages/cable-fanout/bin/cable-fanout.js");
const TARGET_CLI = path.join(root, "packages/cable-local-target/dist/cli.js");
const { values: flags, positionals } = parseArgs({
  allowPositionals: true,
  options: { runs: { type: "string", default: "10" }, minutes: { type: "string", default: "30" }, listeners: { type: "string", default: "100" }, silence: { type: "string", default: "20" }, server: { type: "string", default: "anycable" } },
});
const mode = positionals[0];
const runs = Number(flags.runs);
const work = mkdtempSync(path.join(os.tmpdir(), "cable-verdicts-"));

function fanout(args) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [FANOUT, ...args], { cwd: work, env: { ...process.env, ARTILLERY_DISABLE_TELEMETRY: "true" }, stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    child.stderr.on("data", (d) => (stderr += d));
    child.on("close", (code) => resolve({ code, stderr }));
  });
}
const mergedOf = (out) => {
  const dir = path.join(out, readdirSync(out).filter((d) => !d.startsWith("."))[0]);
  return JSON.parse(readFileSync(path.join(dir, "merged.json"), "utf8"));
};
const save = (name, entries) => {
  mkdirSync(path.join(root, "bench/results"), { recursive: true });
  writeFileSync(path.join(root, `bench/results/verdicts-${name}.json`), `${JSON.stringify({ date: new Date().toISOString(), cpus: os.cpus().length, entries }, null, 1)}\n`);
};

async function spike() {
  const SPIKE_PHASES = [
    { name: "normal", duration: 30, arrivalRate: 1 },
    { name: "spike", duration: 20, arrivalRate: 5 },
    { name: "recovery", duration: 50, arrivalRate: 1 },
  ];
  const [DELAY_MS, LINGER_MS] = [400, 20_000];
  const entries = [];
  for (let i = 0; i <= runs; i++) {
    const penalty = i < runs;
    const target = await startTarget({ port: 0, faults: penalty ? { capacityConnections: 50, overCapacityDelayMs: DELAY_MS, overCapacityLingerMs: LINGER_MS } : {} });
    let overloadEnd = 0;
    const watch = setInterval(() => {
      if (target.counters().cableConnections > 50) overloadEnd = Date.now();
    }, 100);
    const out = path.join(work, `spike-${i}`);
    const { code, stderr } = await fanout(["run", path.join(root, "scenarios/spike.yml"), "--local", "--regions", "local-a,local-b", "--target", target.cableUrl, "--overrides", JSON.stringify({ config: { phases: SPIKE_PHASES } }), "--start-delay", "2", "--out", out]);
    clearInterval(watch);
    await target.close();
    if (code !== 0) {
      entries.push({ run: i, penalty, code, error: stderr.slice(-2000) });
      console.log(`run ${i}: exit ${code}`);
      continue;
    }
    const [verdict] = mergedOf(out).verdicts.spikes;
    const truthMs = penalty ? overloadEnd + LINGER_MS - verdict.end : 0;
    const columns = Object.fromEntries(Object.entries(verdict.columns).map(([name, c]) => [name, { before: c.before, worst: c.worst, recoveredAfterMs: c.recoveredAfterMs, errorMs: c.recoveredAfterMs === null ? null : c.recoveredAfterMs - truthMs }]));
    const within = Object.values(columns).every((c) => c.errorMs !== null && Math.abs(c.errorMs) <= 10_000 + DELAY_MS + 100);
    entries.push({ run: i, penalty, truthMs, columns, within });
    console.log(`run ${i}${penalty ? "" : " (no penalty)"}: truth ${(truthMs / 1000).toFixed(1)} s; ${Object.entries(columns).map(([n, c]) => `${n} ${c.recoveredAfterMs === null ? "never" : `${(c.recoveredAfterMs / 1000).toFixed(1)} s`}`).join(", ")}${penalty ? (within ? " ✓ within one period" : " ✗") : ""}`);
  }
  save("spike", entries);
}

async function targetProcess(args) {
  const port = await freePort();
  const server = await spawnServer({ command: process.execPath, args: [TARGET_CLI, "--port", String(port), ...args], port });
  return { ...server, cableUrl: `ws://127.0.0.1:${port}/cable`, metricsUrl: `http://127.0.0.1:${port}/metrics` };
}

const driftOf = (merged) => ({
  latency: Object.fromEntries(Object.entries(merged.verdicts.drift?.latency ?? {}).map(([n, d]) => [n, { kind: d.kind, perHour: d.perHour, low: d.low, high: d.high, level: d.level }])),
  memory: merged.verdicts.drift?.memory ? (({ kind, perHour, low, high, level }) => ({ kind, perHour, low, high, level }))(merged.verdicts.drift.memory) : null,
});

async function soak() {
  // The soak CLI test's settings (packages/cable-fanout/test/soak-cli.test.ts).
  const overrides = JSON.stringify({ config: { plugins: { "cable-report": { soakMinimum: "2m" } }, phases: [{ name: "soak", duration: 2, arrivalRate: 10 }], variables: { stay_messages: 15 } } });
  const LEAK = ["--leak-mb-per-minute", "20", "--leak-delay-ms-per-minute", "30"];
  const entries = [];
  for (let i = 0; i < runs; i++) {
    const one = async (kind, args) => {
      const target = await targetProcess(args);
      const out = path.join(work, `soak-${kind}-${i}`);
      const { code, stderr } = await fanout(["run", path.join(root, "scenarios/soak.yml"), "--local", "--regions", "local", "--target", target.cableUrl, "--overrides", overrides, "--out", out, "--server-metrics", target.metricsUrl]);
      await target.stop();
      return code === 0 ? { kind, ...driftOf(mergedOf(out)) } : { kind, code, error: stderr.slice(-2000) };
    };
    const pair = await Promise.all([one("flat", []), one("leak", LEAK)]);
    entries.push({ run: i, pair });
    console.log(`run ${i}: ${pair.map((p) => `${p.kind}: p95 ${p.latency?.local?.kind ?? p.code} (${p.latency?.local?.perHour?.toFixed(1)} ms/h), memory ${p.memory?.kind} (${p.memory?.perHour?.toFixed(0)} MiB/h)`).join("; ")}`);
  }
  save("soak", entries);
}

async function anycableSoak() {
  const minutes = Number(flags.minutes);
  const anycable = await startAnyCable({ args: ["--metrics_http=/metrics"] });
  const out = path.join(work, "anycable-soak");
  const overrides = JSON.stringify({ config: { phases: [{ name: "soak", duration: minutes * 60, arrivalRate: 2 }], cable: { anycable: { broadcastUrl: anycable.broadcastUrl } } } });
  const started = Date.now();
  const { code, stderr } = await fanout(["run", path.join(root, "scenarios/soak-pubsub.yml"), "--local", "--regions", "local", "--target", anycable.url, "--overrides", overrides, "--out", out, "--server-metrics", `http://127.0.0.1:${anycable.port}/metrics`]);
  await anycable.stop();
  if (code !== 0) {
    console.log(stderr.slice(-3000));
    save("anycable-soak", [{ code, error: stderr.slice(-2000) }]);
    return;
  }
  const merged = mergedOf(out);
  const entry = { minutes, wallMs: Date.now() - started, users: merged.all.counters["vusers.created"], failed: merged.all.counters["vusers.failed"] ?? 0, broadcastP95: merged.all.histograms["cable.broadcast_latency"]?.p95, ...driftOf(merged), reasons: { latency: merged.verdicts.drift?.latency?.["all regions"]?.reason, memory: merged.verdicts.drift?.memory?.reason } };
  save("anycable-soak", [entry]);
  console.log(JSON.stringify(entry, null, 1));
  console.log(`report: ${out}`);
}

async function partition() {
  const listeners = Number(flags.listeners);
  const silenceMs = Number(flags.silence) * 1000;
  const entries = [];
  // Each server as partition.test.ts drives it: a stream, a ChatChannel room, a Pusher channel.
  const servers = {
    anycable: { start: () => startAnyCable(), path: "/cable", subscribe: { stream: "partition" }, cable: () => ({}) },
    rails: { start: () => startRails(), path: "/cable", subscribe: { channel: "ChatChannel", params: { id: "partition" } }, cable: () => ({}) },
    // Sockudo announces activity_timeout 120: Pusher's rule would wait 150 s; staleAfter says 6.
    sockudo: { start: () => startSockudo(), path: "", subscribe: { channel: "partition" }, cable: (s) => ({ protocol: "pusher", pusher: { key: s.key, appId: s.appId }, staleAfter: 6 }) },
  };
  const kind = servers[flags.server];
  if (!kind) throw new Error(`--server: one of ${Object.keys(servers).join(", ")}`);
  for (const survivors of ["forget", "reset"]) {
    const server = await kind.start();
    const proxy = await startTcpProxy(server.port);
    const script = {
      config: {
        target: `ws://127.0.0.1:${proxy.port}${kind.path}`,
        engines: { cable: {} },
        cable: { timeout: 5, reconnect: { initialDelay: 0.5, maxDelay: 5 }, ...kind.cable(server) },
        phases: [{ duration: 8, arrivalCount: listeners }],
      },
      scenarios: [{ engine: "cable", flow: [{ connect: { cookies: { uid: "Listener/{{ $uuid }}" } } }, { subscribe: { ...kind.subscribe, as: "s" } }, { reconnect: { after: "drop", wait: 120, timeout: 120, jitter: 1 } }, { listen: { channel: "s", for: 2 } }] }],
    };
    const running = runArtillery({ script, timeoutMs: 300_000 });
    // 8 s into the run, as the issue's proxy does.
    await new Promise((r) => setTimeout(r, 8_000 + 3_000));
    const before = establishedConnections(proxy.port);
    proxy.silence();
    await new Promise((r) => setTimeout(r, silenceMs));
    proxy.heal(survivors);
    const run = await running;
    await proxy.stop();
    await server.stop();
    const s = run.report.aggregate.summaries;
    const entry = {
      server: flags.server,
      survivors,
      listeners,
      silenceMs,
      connectedAtSilence: before,
      completed: counter(run.report, "vusers.completed"),
      failed: counter(run.report, "vusers.failed"),
      stale: counter(run.report, "cable.stale_connection"),
      restore: s["cable.restore_latency"] && { p50: s["cable.restore_latency"].p50, p95: s["cable.restore_latency"].p95, max: s["cable.restore_latency"].max },
      detection: s["cable.drop_detection_latency"] && { p50: s["cable.drop_detection_latency"].p50, max: s["cable.drop_detection_latency"].max },
      attempts: counter(run.report, "cable.reconnect_attempts"),
    };
    entries.push(entry);
    console.log(JSON.stringify(entry));
  }
  save(`partition-${flags.server}`, entries);
}

const modes = { spike, soak, "anycable-soak": anycableSoak, partition };
if (!modes[mode]) {
  console.error(`usage: node bench/verdicts.mjs ${Object.keys(modes).join("|")} [--runs N] [--minutes M]`);
  process.exit(2);
}
await modes[mode]();
