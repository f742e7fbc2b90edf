#!/usr/bin/env node
// By hand, not in CI (minutes per search): capacity searches against real servers on this machine,
// as docs/capacity.md reports them. Starts the server on loopback, runs `cable-fanout capacity`
// --local the given number of times in a row, prints each headline and the capacity.md paths.
//
//   node packages/cable-fanout/test/capacity-servers.js anycable [searches] [-- extra capacity flags]
//   node packages/cable-fanout/test/capacity-servers.js rails [searches] [-- extra capacity flags]
const { spawnSync } = require("node:child_process");
const { readFileSync } = require("node:fs");
const path = require("node:path");
const { startAnyCable, startRails } = require("cable-test-servers");

const ROOT = path.resolve(__dirname, "../../..");
const BIN = path.join(__dirname, "../bin/cable-fanout.js");

async function main() {
  const [kind = "anycable", searches = "3", ...rest] = process.argv.slice(2);
  const extra = rest[0] === "--" ? rest.slice(1) : rest;
  const server = kind === "rails" ? await startRails() : await startAnyCable({ args: ["--metrics_http=/metrics", "--stats_refresh_interval=1"] });
  // anycable-go serves its Prometheus metrics on its own port; Rails has no such endpoint.
  const metrics = kind === "rails" ? [] : ["--server-metrics", `http://127.0.0.1:${server.port}/metrics`];
  const scenario = path.join(ROOT, "scenarios", kind === "rails" ? "capacity-rails.yml" : "capacity-anycable.yml");
  const overrides = kind === "rails" ? [] : ["--overrides", JSON.stringify({ config: { cable: { anycable: { broadcastUrl: server.broadcastUrl } } } })];
  const defaults = kind === "rails" ? ["--start", "100", "--step", "100", "--max", "2000"] : ["--start", "200", "--step", "200", "--max", "5000"];
  const out = path.join(ROOT, "results", "capacity", kind);
  try {
    for (let n = 1; n <= Number(searches); n++) {
      const started = Date.now();
      const args = [BIN, "capacity", scenario, "--local", "--regions", "local", "--target", server.url, ...overrides, ...metrics, "--slo", "cable.broadcast_latency.p95<250", "--slo", "errors<1%", "--hold", "30", "--out", out, ...defaults, ...extra];
      const run = spawnSync(process.execPath, args, { cwd: ROOT, encoding: "utf8", env: { ...process.env, ARTILLERY_DISABLE_TELEMETRY: "true" }, maxBuffer: 64 * 1024 * 1024 });
      const md = run.stdout.trim();
      const answer = md ? JSON.parse(readFileSync(path.join(ROOT, path.dirname(md), "capacity.json"), "utf8")) : undefined;
      console.log(`${kind} search ${n}: exit ${run.status}, ${Math.round((Date.now() - started) / 1000)} s: ${answer ? answer.headline : run.stderr.slice(-2000)} (${md})`);
    }
  } finally {
    await server.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
