#!/usr/bin/env node
// What `cable-fanout plan` suggests for each scenario in scenarios/, as a markdown table
// (docs/benchmarks.md, "What `plan` suggests for each scenario"): the built plan (npm run build)
// on each scenario as written, `--count 1 --regions us-east-1`, the stack's 4 vCPU / 8 GiB x86_64
// on-demand task, no account reached. Pure arithmetic: no run, no network.
//
//   node bench/plan-table.mjs [--count 1] [--regions us-east-1]
import { readdirSync } from "node:fs";
import path from "node:path";
import { parseArgs } from "node:util";
import { fileURLToPath } from "node:url";

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const dist = (p) => import(path.join(repo, "packages/cable-fanout/dist", p));
const { makePlan } = await dist("plan/launch.js");
const { effectiveConfig, loadScenario } = await dist("scenario.js");
const { usd } = await dist("plan/estimate.js");
const { taskFrames } = await dist("plan/sizing.js");

const { values } = parseArgs({ options: { count: { type: "string", default: "1" }, regions: { type: "string", default: "us-east-1" } } });
const count = Number(values.count);
const regions = values.regions.split(",");
const fmt = (n) => Math.round(n).toLocaleString("en-US");

console.log("| scenario | workload | users per task | a user stays | frames received a second per task | binds on | share of one 4 vCPU task | count | cheapest that holds it | cost as asked | cheapest's cost |");
console.log("|---|---|---|---|---|---|---|---|---|---|---|");
for (const file of readdirSync(path.join(repo, "scenarios")).filter((f) => f.endsWith(".yml")).sort()) {
  const scenario = loadScenario(path.join(repo, "scenarios", file));
  const plan = makePlan({
    backend: "aws",
    regions,
    count,
    capacity: "on-demand",
    config: effectiveConfig(scenario),
    scenarios: scenario.scenarios,
    phasesMs: scenario.durationMs,
    maxDurationMs: 3_600_000,
    startDelayMs: 0,
    facts: new Map(),
  });
  const u = plan.users;
  const frames = u ? taskFrames(u, count * regions.length) : null;
  const c = plan.cheapest;
  const cheapest = c ? `${c.count} × ${c.cpu / 1024} vCPU ${c.arch}${c.capacity === "spot" ? " Spot" : ""}` : "as asked";
  console.log(
    `| ${file} | ${u?.workload ?? "–"} | ${u ? fmt(u.peak) : "–"} | ${u?.flowSeconds === undefined ? "unknown" : `${fmt(u.flowSeconds)} s`} | ${u?.unreadable.length ? "not readable" : frames === null ? "–" : fmt(frames ?? 0)} | ${plan.binding?.dimension ?? "–"} | ${plan.binding ? `${fmt(plan.binding.share * 100)} %` : "–"} | ${plan.suggestedCount ?? "–"} | ${cheapest} | ${usd(plan.cost.total)} | ${c ? usd(c.cost) : "–"} |`,
  );
}
