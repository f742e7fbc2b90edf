// `cable-fanout capacity <scenario> --slo … --start N --step N --max N --hold S`: flags → search.
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { shownPath } from "../shown-path.js";
import { LivePage, type LivePageAddress } from "../live/page.js";
import { liveOptions } from "../live/live-options.js";
import { type Command, Option } from "commander";
import type { Store } from "cable-worker/contract";
import type { Backend } from "../backend.js";
import { BUNDLE_ROOT_HELP } from "../run/bundle-root.js";
import { type BackendFlags, capacityOptions } from "../cli-options.js";
import { HISTORY_BRANCH_HELP } from "../history-help.js";
import { askAtTerminal } from "../plan/ask.js";
import { usd } from "../plan/estimate.js";
import { ASK_ABOVE_USD } from "../plan/launch.js";
import { LineProgress } from "../progress.js";
import { runCapacity } from "./controller.js";
import { CAPACITY_EXIT } from "./options.js";

export const CAPACITY_HELP = `
A step adds --step users (the scenario's own flow; users that hold their connection stay through
the later steps), then holds the level --hold seconds. The step is judged on what was measured
during its hold only, never during the climb (handshake latencies, measured only while users
arrive, on the climb into the level; counters such as errors on the whole step). A breach is run
again from zero before it counts. The search ends the run once it has its answer: every user ends
its flow once. A step during which a task's generator was saturated is no verdict on the server:
the answer is then "at least N, generator-bound". Saturated is cable-report's rule for a PR report:
the generator's CPU over 90 % of its worker cores in a period of the hold, or event-loop lag over
100 ms (its p90 over the step) while its CPU reached 50 % or its late seconds were spent running.
Lag while its CPU stayed low is starved: its machine was busy with other work. That step is run
again; starved again, the answer is "at least N, starved at M" (exit 4 under --min-capacity).

--vary rate asks "how many messages per second can we handle": --users N users (all regions
together) stay at every level, and --start/--step/--max are messages a second that they send
together (the scenario's perform, publish or trigger; processors/capacity.js paces them from
config.variables capacity_users and capacity_rate). Each level is a run of its own: the users
arrive in --climb seconds, then the level is held --hold seconds and judged on its hold, where the
users must have sent at least 90 % of the level (a server that slows its publishers down is not
credited with a rate it never received). held and firstFailing are then msg/s.
  --vary rate --users 1000 --start 100 --step 100 --max 3000 --slo 'cable.broadcast_latency.p95<250'

--refine N: once a breach is confirmed, the search tries levels between the last one held and the
first that broke (the middle one each time, on a grid of N from the level held), each a fresh run
from zero whose breach is repeated before it counts, until the two are N apart.

SLO: <metric>.<p50|p75|p90|p95|p99|p999|min|max|mean><op><bound> for a histogram,
<counter><op><bound> for a counter (errors = every errors.* counter), <counter><op><n>% per user.
  --slo 'cable.broadcast_latency.p95<250' --slo 'cable.handshake_latency.p99<1000'
  --slo 'errors<1%' --slo 'vusers.failed=0'

The scenario's users must loop \`whileTrue: capacityRunning\` (processors/capacity.js), as
scenarios/capacity-*.yml do, so that the search can end them.

Runs on Fargate from each region's CableLoadtest-<region> stack, as \`run\` does (the tasks write
their live periods into the region's bucket and read the search's stop marker there), or with
--local as processes of this machine.

Writes <out>/<searchId>/capacity.json and capacity.md (printed on stdout), and each run's results
beside them. Exit status: 0 done; 1 held fewer than --min-capacity; 2 bad input; 3 internal error;
4 no verdict (a task left no data, interrupted, or starved below --min-capacity); 6 generator-bound
below --min-capacity.`;

interface Hooks {
  makeBackend: (flags: BackendFlags) => Backend;
  localStore: (flags: BackendFlags) => string;
  sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  log: (line: string) => void;
  exit: (code: number) => void;
}

export function registerCapacity(program: Command, hooks: Hooks): void {
  const command = program
    .command("capacity <scenario>")
    .description("find how many concurrent users (or, --vary rate, messages a second) the server holds under the SLO: a stair of levels, each held and judged, from every region at once")
    .addHelpText("after", CAPACITY_HELP)
    .addOption(new Option("--slo <expr>", "an SLO every level must meet; repeatable").argParser((v: string, prev: string[] = []) => [...prev, v]).makeOptionMandatory())
    .addOption(new Option("--vary <axis>", "what the levels count: concurrent users, or messages a second sent by --users users").choices(["users", "rate"]).default("users"))
    .option("--users <n>", "--vary rate: the users at every level (all regions together)")
    .requiredOption("--start <n>", "users (by rate: msg/s) at the first level, all regions together")
    .requiredOption("--step <n>", "users (by rate: msg/s) each step adds")
    .requiredOption("--max <n>", "the highest level tried")
    .option("--hold <seconds>", "how long each level is held and judged (at least 20: Artillery's metrics periods are 10 s)", "30")
    .option("--climb <seconds>", "how long one step's users take to arrive", "10")
    .option("--refine <n>", "after a confirmed breach, bisect between the last level held and the first that broke, down to n users (by rate: msg/s)")
    .option("--min-capacity <n>", "exit 1 when the server held fewer users (by rate: msg/s)")
    .option("--server-metrics <url>", "the server's Prometheus endpoint (anycable-go --metrics_http=/metrics, Sockudo's metrics port, a node exporter): its vCPU, memory and connections beside every step")
    .requiredOption("--regions <list>", "comma-separated regions: AWS regions (eu-west-2); with --local also local or local-<name>; each adds its share of every step")
    .option("--count <n>", "tasks per region", "1")
    .option("--bundle-root <dir>", BUNDLE_ROOT_HELP)
    .option("--out <dir>", "results directory", "results")
    .option("--local", "run the tasks as local processes, with a directory standing in for the buckets")
    .option("--store <dir>", "--local: the directory standing in for the buckets (default: <out>/.local-store)")
    .option("--target <url>", "the server to load (Artillery's --target)")
    .option("-k, --insecure", "Artillery's --insecure: no TLS certificate check (a staging server's internal CA; config.tls.ca trusts one instead)")
    .option("--overrides <json>", "Artillery's --overrides (phases are the stair's)")
    .option("-v, --variables <json>", "Artillery's -v: values for config.variables")
    .option("-e, --environment <name>", "Artillery's -e: one of config.environments")
    .option("--spot", "Fargate Spot capacity (FARGATE_SPOT)")
    .option("--cpu <units>", "task CPU units (with --memory, a Fargate pair)")
    .option("--memory <MiB>", "task memory in MiB (with --cpu)")
    .option("--arch <x86_64|arm64>", "the tasks' CPU architecture, as for `run`: a region whose stack runs the other is refused before any task starts")
    .option("--subnets <public|private>", "the tasks' subnets for the plan's cost where no stack says, as for `run`")
    .addOption(new Option("--secret <NAME=ref>", "a secret env var for the scenario, as for `run`; repeatable").argParser((v: string, prev: string[] = []) => [...prev, v]))
    .addOption(new Option("--env <NAME[=value]>", "a plain (non-secret) env var for every task, as for `run`: NAME passes this shell's $NAME, NAME=value the value; repeatable").argParser((v: string, prev: string[] = []) => [...prev, v]))
    .option("--start-delay <duration>", "how far ahead each run's common start is set")
    .option("--start-timeout <duration>", "a region whose tasks are not running by then is marked failed")
    .option("--max-cost <usd>", "refuse a segment whose cost estimate is higher (the first segment's plan is printed and guarded)")
    .option("-y, --yes", `start without asking when the estimate is above ${usd(ASK_ABOVE_USD)}`)
    .option("--history <dir|s3://bucket/prefix>", "keep every segment's run there, as `run --history` does (each segment is its own load, comparable with the same segment of later searches)")
    .option("--history-branch <name>", HISTORY_BRANCH_HELP);
  liveOptions(command).action(async (scenario: string, raw: unknown) => {
    // Every flag is checked before any region is opened: a typo costs no AWS call.
    const { backend: flags, placement, search, task, live, warnings } = capacityOptions(raw);
    for (const line of warnings) hooks.log(line);
    const { regions, count } = placement;
    const { users, refine } = search;
    const backend = hooks.makeBackend(flags);
    const storeDir = backend.kind === "local" ? hooks.localStore(flags) : undefined;
    // The tasks write their live files into their region's store (its bucket on AWS, from the
    // stack's outputs; the directory locally), and read the stop marker there.
    const liveStores = new Map<string, Store>();
    for (const region of regions) liveStores.set(region, (await backend.openRegion(region)).store);
    const abort = new AbortController();
    let interrupts = 0;
    const onSigint = () => {
      if (++interrupts > 1) process.exit(130);
      hooks.log("stopping the search and every task (Ctrl-C again to quit at once)…");
      abort.abort();
    };
    // Any signal that stops the runner stops its tasks (a closed terminal sends SIGHUP).
    for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.on(signal, onSigint);
    // One page for the whole search: each run of it drawn in turn, the last one's report.html at the end.
    const page = live ? await openSearchPage(live, hooks.log) : undefined;
    let lastReport: string | undefined;
    try {
      const result = await runCapacity(
        {
          scenarioFile: scenario,
          regions,
          count,
          outDir: flags.out,
          ...task,
          ...(storeDir ? { store: storeDir } : {}),
          slos: search.slos,
          stair: search.stair,
          vary: search.vary,
          ...(users !== undefined ? { users } : {}),
          ...(refine !== undefined ? { refine } : {}),
        },
        {
          backend,
          liveStore: (region): Store => liveStores.get(region)!,
          now: Date.now,
          sleep: hooks.sleep,
          log: hooks.log,
          abort,
          ...askAtTerminal(),
          // Plain lines, not a spinner: the search prints its own progress line between the runs' ones.
          progress: (clock) => new LineProgress(hooks.log, { ...clock, now: Date.now }),
          ...(page ? { livePage: page } : {}),
        },
      );
      const last = page ? result.runs.at(-1)?.runId : undefined;
      if (last) lastReport = path.join(result.searchDir, last, "report.html");
      process.stdout.write(`${shownPath(result.markdownFile, flags.out)}\n`);
      hooks.exit(result.exitCode);
    } finally {
      for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.off(signal, onSigint);
      await page?.final(lastReport && existsSync(lastReport) ? readFileSync(lastReport, "utf8") : undefined);
    }
  });
}

/** The search's live page, before its first run: a port that cannot be had is said, and the search goes on without it. */
async function openSearchPage(address: LivePageAddress, log: (line: string) => void): Promise<LivePage | undefined> {
  try {
    const page = await LivePage.open(address, undefined, Date.now);
    log(`live page: ${page.url}`);
    return page;
  } catch (err) {
    log(`live page: cannot listen on ${address.host}:${address.port} (${(err as NodeJS.ErrnoException).code ?? (err as Error).name}); the search goes on without it`);
    return undefined;
  }
}

export { CAPACITY_EXIT };
