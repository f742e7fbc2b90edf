// What wss:// costs the generator per connection, against plain ws:// measured in the same run
// (docs/benchmarks.md, "wss:// against ws://"). Real anycable-go on loopback; TLS through
// cable-test-servers' terminator with a throwaway CA (config.tls.ca). Each run: USERS users connect,
// subscribe to a stream and hold it 2 s; runs alternate ws, wss, ws, wss… (PAIRS pairs) so that
// the machine's drift falls on both. The generator's CPU is read from /proc after it ends (user +
// system of the whole `artillery run` process and its threads, from its parent's children
// counters), the handshake latency from Artillery's report.
//
//   node bench/tls.mjs [--users 500] [--pairs 3]
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { createRequire } from "node:module";
import { parseArgs } from "node:util";
import { makeTestCa, startAnyCable, startTlsTerminator } from "cable-test-servers";

const require = createRequire(import.meta.url);
const artillery = path.join(path.dirname(require.resolve("artillery/package.json")), "bin", "run");
const { values } = parseArgs({ options: { users: { type: "string", default: "500" }, pairs: { type: "string", default: "3" } } });
const USERS = Number(values.users);
const work = mkdtempSync(path.join(os.tmpdir(), "cable-bench-tls-"));

/** CPU seconds of this process's waited-for children so far (/proc/self/stat cutime + cstime). */
function childrenCpu() {
  const fields = readFileSync("/proc/self/stat", "utf8").split(") ")[1].split(" ");
  return (Number(fields[13]) + Number(fields[14])) / 100;
}

function runOnce(target, tls) {
  const script = path.join(work, "scenario.json");
  const report = path.join(work, "report.json");
  writeFileSync(
    script,
    JSON.stringify({
      config: { target, engines: { cable: {} }, ...(tls ? { tls } : {}), cable: { timeout: 10 }, phases: [{ duration: 5, arrivalCount: USERS }] },
      scenarios: [{ engine: "cable", flow: [{ connect: {} }, { subscribe: { stream: "bench", as: "s" } }, { think: 2 }] }],
    }),
  );
  const before = childrenCpu();
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [artillery, "run", "-o", report, script], { stdio: "ignore", env: { ...process.env, ARTILLERY_DISABLE_TELEMETRY: "true" } });
    child.on("close", (code) => {
      const cpu = childrenCpu() - before;
      const r = JSON.parse(readFileSync(report, "utf8")).aggregate;
      const h = r.summaries["cable.handshake_latency"];
      resolve({ code, completed: r.counters["vusers.completed"] ?? 0, cpuMsPerUser: (cpu * 1000) / USERS, handshakeP50: h?.p50, handshakeP95: h?.p95 });
    });
  });
}

const ca = makeTestCa();
const anycable = await startAnyCable();
const terminator = await startTlsTerminator({ targetPort: anycable.port, ...ca.issue(["127.0.0.1"]) });
const runs = { ws: [], wss: [] };
for (let i = 0; i < Number(values.pairs); i++) {
  runs.ws.push(await runOnce(anycable.url));
  runs.wss.push(await runOnce(terminator.secure(anycable.url), { ca: ca.caPem }));
}
await terminator.close();
await anycable.stop();
ca.remove();
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const row = (name) => ({
  subject: name,
  completed: runs[name].map((r) => r.completed).join("/"),
  cpuMsPerUser: median(runs[name].map((r) => r.cpuMsPerUser)).toFixed(2),
  handshakeP50: median(runs[name].map((r) => r.handshakeP50)),
  handshakeP95: median(runs[name].map((r) => r.handshakeP95)),
});
const [ws, wss] = [row("ws"), row("wss")];
console.table([ws, wss]);
// The process's start-up is in both; the difference is what TLS adds per connection.
console.log(`TLS adds ${(wss.cpuMsPerUser - ws.cpuMsPerUser).toFixed(2)} ms of generator CPU per connection (wss ${wss.cpuMsPerUser} vs ws ${ws.cpuMsPerUser} ms per user, start-up included in both); handshake p50 ${wss.handshakeP50} vs ${ws.handshakeP50} ms`);
console.log(JSON.stringify(runs));
