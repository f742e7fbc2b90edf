// `cable-fanout run | collect | stop | capacity`.
import { readFileSync } from "node:fs";
import path from "node:path";
import { shownPath } from "./shown-path.js";
import { setTimeout as delay } from "node:timers/promises";
import { Command, CommanderError, Option } from "commander";
import { ResultsInputError } from "artillery-plugin-cable-report";
import { AwsBackend } from "./aws/aws-backend.js";
import type { Backend } from "./backend.js";
import { EXIT } from "./run/collect.js";
import { collectCommand, stopCommand } from "./commands.js";
import { ALL_READY_MAX_TASKS, LARGE_FLEET_MIN_READY_PCT } from "./run/barrier.js";
import { BUNDLE_ROOT_HELP } from "./run/bundle-root.js";
import { FanoutInputError } from "./errors.js";
import { LocalBackend } from "./local/local-backend.js";
import { attachOptions, type BackendFlags, collectOptions, compareOptions, planOptions, runOptions, statusOptions, stopOptions } from "./cli-options.js";
import { attachRun, detachedSignalLine } from "./detach/attach.js";
import { formatStatus, runsInProgress } from "./detach/status.js";
import type { RunRecord } from "./run/record.js";
import { LineProgress, TerminalProgress } from "./progress.js";
import { runFanout } from "./run/runner.js";
import type { RunDeps } from "./run/run-options.js";
import { askAtTerminal } from "./plan/ask.js";
import { planCommand } from "./plan/command.js";
import { usd } from "./plan/estimate.js";
import { ASK_ABOVE_USD } from "./plan/launch.js";
import { registerCapacity } from "./capacity/command.js";
import { HISTORY_BRANCH_HELP, HISTORY_HELP } from "./history-help.js";
import { liveOptions } from "./live/live-options.js";
import { COMPARE_HELP } from "./compare/targets.js";
import { runCompare } from "./compare/run.js";

export const EXIT_STATUS_HELP = `Exit status: 0 done; 1 a regression beyond --fail-on-regression; 2 bad input or usage;
3 internal error; 4 a region failed (a task failed or never started, or no report); 5 ensure checks failed;
6 more virtual users failed than config.cable.maxFailedUsers allows (default 0);
7 stopped early by --abort-on.`;

export const ABORT_HELP = `
While the load runs, each region prints one line per 10 s metrics period (users active, open
connections, messages received a second, the main latency's p95, errors, the generator's lag and
CPU), from the periods every task streams into its region's store, and a line per region at the end.

--abort-on '<condition> [for <duration>]' stops every task early when the condition holds on the
merged figures of every task of every region (the capacity search's SLO syntax, written as what must
not happen), judged per 10 s period; with "for", in every period of a stretch that long:
  --abort-on 'cable.broadcast_latency.p95>2000 for 30s'   --abort-on 'errors>5%'   --abort-on 'vusers.failed>100'
errors>5% counts errors per user active in the period. report.md and report.html say which condition
stopped the run, when and with which figure; the tasks' figures up to the stop still count.

--server-metrics URL scrapes the server's Prometheus endpoint every 5 s (process_cpu_seconds_total,
resident memory, connections) and charts it beside the load in report.md and report.html.`;

export const PLAN_HELP = `
Every run prints this block before its first RunTask, and --max-cost refuses a run whose estimate is
higher; above ${usd(ASK_ABOVE_USD)} a run asks at the terminal, or needs --yes where nobody can answer.
Users per task come from the phases and the flow's thinks and listens (every task runs the whole
script); what they receive, from each send's channel and its subscribers in every task; what one
task holds, from the capacities measured at 1, 2 and 4 vCPU (users at once, broadcast frames and
arrivals a second: docs/benchmarks.md, "What one task holds"), the dimension that binds setting the
suggested --count, with the cheapest size, architecture and capacity that holds the load; prices
(Spot and ARM64 included), from the table in src/plan/prices.ts (its sources and dates are
printed), with the traffic's bytes. Without credentials or a deployed stack, plan still prices the
run from --cpu/--memory, --arch and --subnets or the stack's default size (4 vCPU / 8 GiB x86_64)
and says what it could not check.
Exit status: 0 the run would start; 2 it would not (a quota, addresses, a secret, --max-cost).`;

/** --env's help, for run, compare, plan and capacity. */
export const ENV_HELP =
  "a plain (non-secret) env var for every task: NAME passes this shell's $NAME, NAME=value the value; repeatable. Every {{ $env.X }} the scenario reads must be given by --env or --secret, or the run is refused before any task starts (--local too). Not -e/--environment, which picks one of config.environments";

const log = (line: string) => process.stderr.write(`${line}\n`);

export async function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  try {
    await delay(ms, undefined, { signal });
  } catch (err) {
    if ((err as Error).name !== "AbortError") throw err;
  }
}

/** --arch's and --subnets' help, for run, compare, plan and capacity. */
export const ARCH_HELP =
  "the tasks' CPU architecture, arm64 (Graviton) or x86_64: a region whose stack runs the other is refused before any task starts (the architecture is the stack's: cdk deploy -c arch=arm64); default: each stack's own";
export const SUBNETS_HELP = "public (a public IP per task) or private (through a NAT gateway): for the plan's cost where no stack says; a reached stack's own subnets win (a warning when they differ)";

/** The backend gives every task it starts the run's --env (flags.taskEnv), and holds every stack to --arch and --subnets (flags.expected). */
function makeBackend(flags: BackendFlags): Backend {
  if (flags.local) return new LocalBackend({ storeDir: localStore(flags), taskEnv: flags.taskEnv });
  return new AwsBackend({ retry: { sleep, log }, taskEnv: flags.taskEnv, ...(flags.expected ? { expected: flags.expected } : {}) });
}

/**
 * SIGINT (Ctrl-C), SIGTERM (CI cancel, kill) and SIGHUP (terminal closed) all stop every task; the
 * run then collects what exists. A second signal quits at once (the tasks still stop themselves when
 * the heartbeat goes stale).
 */
export function stopOnSignals(abort: AbortController): { off: () => void } {
  const signals = ["SIGINT", "SIGTERM", "SIGHUP"] as const;
  let received = 0;
  const handler = (signal: NodeJS.Signals) => {
    if (++received > 1) process.exit(128 + (signal === "SIGINT" ? 2 : signal === "SIGTERM" ? 15 : 1));
    log(`${signal}: stopping every task (send it again to quit at once)…`);
    abort.abort();
  };
  for (const s of signals) process.on(s, handler);
  return { off: () => signals.forEach((s) => process.off(s, handler)) };
}

/**
 * What a command that starts tasks runs under: its backend, and an abort that Ctrl-C, SIGTERM and
 * SIGHUP trip (stopOnSignals) for as long as `go` runs.
 */
async function startingTasks(flags: BackendFlags, progress: RunDeps["progress"], go: (deps: RunDeps) => Promise<void>): Promise<void> {
  const abort = new AbortController();
  const signals = stopOnSignals(abort);
  try {
    await go({ backend: makeBackend(flags), now: Date.now, sleep, log, abort, ...askAtTerminal(), progress });
  } finally {
    signals.off();
  }
}

const localStore = (flags: BackendFlags): string => path.resolve(flags.store ?? path.join(flags.out, ".local-store"));

/** Where a run's files go, and (local) its store, recorded for `collect` and `stop`. */
const runFiles = (flags: BackendFlags) => ({ outDir: flags.out, ...(flags.local ? { store: localStore(flags) } : {}) });

function program(exit: (code: number) => void): Command {
  const cmd = new Command("cable-fanout")
    .description("Run an Artillery scenario from several regions at once (Fargate, or local processes with --local) and write the per-region comparison")
    .addHelpText("after", `\n${EXIT_STATUS_HELP}`)
    .exitOverride()
    .showHelpAfterError();

  const backendOptions = (c: Command) =>
    c
      .option("--out <dir>", "results directory; the run's files go to <out>/<runId>/", "results")
      .option("--local", "run the tasks as local processes, with a directory standing in for the buckets")
      .option("--store <dir>", "--local: the directory standing in for the buckets (default: <out>/.local-store)");
  const reportOptions = (c: Command) =>
    c
      .option("--baseline <file|dir>", "a merged.json or results directory to compare with (deltas in the report)")
      .option("--fail-on-regression <pct>", "exit 1 when a cell is worse than the baseline by more (e.g. 10%); a baseline of another scenario or target is refused (exit 2, the report written without the comparison)")
      .option("--baseline-any", "compare with a baseline of another scenario or target anyway (report.md says it compared across them)")
      .option("--title <text>", "heading of report.md")
      .option("--history <dir|s3://bucket/prefix>", HISTORY_HELP)
      .option("--history-branch <name>", HISTORY_BRANCH_HELP);

  const detachOption = (c: Command) =>
    c.option("--detach", "return once the go is given, leaving the tasks to run to their end without this runner (no heartbeat; --max-duration bounds them); then `cable-fanout attach|collect|stop|status`");

  // The options of a run of the scenario, shared by `run` and `compare`.
  const scenarioRunOptions = (c: Command) =>
    c
      .requiredOption("--regions <list>", "comma-separated regions: AWS regions (eu-west-2); with --local also local or local-<name> (local-a)")
      .option("--bundle-root <dir>", BUNDLE_ROOT_HELP)
      .option("--count <n>", "tasks per region", "1")
      .option("-k, --insecure", "Artillery's --insecure: no TLS certificate check (a staging server's internal CA; config.tls.ca trusts one instead)")
      .option("--overrides <json>", "Artillery's --overrides, e.g. shorter phases")
      .option("-v, --variables <json>", "Artillery's -v: values for config.variables")
      .option("-e, --environment <name>", "Artillery's -e: one of config.environments")
      .option("--spot", "Fargate Spot capacity (FARGATE_SPOT); tasks Spot cannot place start on FARGATE instead, and the report says so")
      .option("--spot-only", "Fargate Spot and nothing else: tasks Spot cannot place are not started")
      .option("--cpu <units>", "task CPU units, overriding the stack's (1024 = 1 vCPU); with --memory, a Fargate pair")
      .option("--memory <MiB>", "task memory in MiB, overriding the stack's; with --cpu, a Fargate pair")
      .option("--arch <x86_64|arm64>", ARCH_HELP)
      .option("--subnets <public|private>", SUBNETS_HELP)
      .addOption(
        new Option(
          "--secret <NAME=ref>",
          "a secret env var for the scenario, read in each task's own region: NAME=ssm:/cable-loadtest/…, NAME=secretsmanager:cable-loadtest/…, or (--local) NAME from this environment; checked in every region before any task starts; repeatable",
        ).argParser((v: string, prev: string[] = []) => [...prev, v]),
      )
      .addOption(new Option("--env <NAME[=value]>", ENV_HELP).argParser((v: string, prev: string[] = []) => [...prev, v]))
      .option("--min-ready <pct>", `the share of all tasks that must be ready (image up, Artillery loaded) before the common start; tasks not ready then run no load (default: 100% up to ${ALL_READY_MAX_TASKS} tasks in all, ${LARGE_FLEET_MIN_READY_PCT}% beyond, rounded up)`)
      .option("--ready-timeout <duration>", "how long to wait for --min-ready; the run is called off if too few are ready by then (default: 600s on AWS, 60s locally)")
      .option("--max-duration <duration>", "stop every task after this long; each task also enforces it on its own (default: ready timeout + start delay + phases + a margin)")
      .option("--start-delay <duration>", "how far after the go (all ready) the common start lies (default: 10s on AWS, 2s locally)")
      .option("--start-timeout <duration>", "a region whose tasks are not running by then is marked failed (default: 600s on AWS, 60s locally)")
      .option("--heartbeat-timeout <duration>", "tasks stop themselves when this runner's heartbeat is this old (default: 90s on AWS, 30s locally)")
      .option("--max-cost <usd>", "refuse to start when the cost estimate (printed before any task starts) is higher, e.g. --max-cost 40")
      .option("-y, --yes", `start without asking when the estimate is above ${usd(ASK_ABOVE_USD)} (needed where nobody can answer: CI, no terminal)`);

  reportOptions(
    backendOptions(
      detachOption(
        liveOptions(
          scenarioRunOptions(
            cmd
              .command("run <scenario>")
              .description("bundle the scenario, start --count tasks in every region at once, wait, collect and report"),
          ).option("--target <url>", "the server to load (Artillery's --target)"),
        ),
      ),
    ),
  )
    .option("--run-id <id>", "use this run id (e.g. from CI, so a cancelled job can `cable-fanout stop` it) instead of a generated one")
    .addOption(new Option("--abort-on <condition>", "stop every task once this holds on the merged live figures, e.g. 'cable.broadcast_latency.p95>2000 for 30s' or 'errors>5%'; repeatable").argParser((v: string, prev: string[] = []) => [...prev, v]))
    .option("--server-metrics <url>", "the server's Prometheus endpoint (anycable-go --metrics_http=/metrics, Sockudo's metrics port, a node exporter): its CPU, memory and connections charted beside the load")
    .addHelpText("after", ABORT_HELP)
    .action(async (scenario: string, raw: unknown) => {
      const o = runOptions(raw);
      for (const line of o.warnings) log(line);
      const progress: RunDeps["progress"] = (clock) =>
        process.stderr.isTTY ? TerminalProgress.start(process.stderr, { ...clock, now: Date.now }) : new LineProgress(log, { ...clock, now: Date.now });
      await startingTasks(o.backend, progress, async (deps) => {
        const result = await runFanout({ scenarioFile: scenario, ...runFiles(o.backend), ...o.scenarioRun, ...o.run, ...o.report }, deps);
        // stdout: the run id of a detached run (`id=$(cable-fanout run --detach …)`), else the report's path.
        if (result.detached) process.stdout.write(`${result.runId}\n`);
        else printOutcome(result, o.backend.out);
        exit(result.exitCode);
      });
    });

  backendOptions(
    detachOption(
      liveOptions(
        scenarioRunOptions(
          cmd
            .command("compare <scenario>")
            .description("run the scenario against each --target in turn (same regions and tasks, a pause between), and write one report with a column per server"),
        ),
      ),
    ),
  )
    .addOption(new Option("--target <NAME=URL>", "a server to compare, by the name of its column (two or more; repeatable)").argParser((v: string, prev: string[] = []) => [...prev, v]))
    .addOption(new Option("--server-metrics <NAME=URL>", "that server's Prometheus endpoint, charted in its run's report; repeatable").argParser((v: string, prev: string[] = []) => [...prev, v]))
    .addOption(new Option("--server-pid <NAME=PID>", "that server's process on this machine: its memory (idle → peak → after) and CPU, with its children's, from /proc; repeatable").argParser((v: string, prev: string[] = []) => [...prev, v]))
    .option("--pause <duration>", "between two servers' runs", "10s")
    .option("--compare-id <id>", "use this id (the results go to <out>/<id>/<NAME>/) instead of a generated one")
    .option("--title <text>", "heading of report.md")
    .option("--fail-on-regression <pct>", "exit 1 when a server is worse than the first --target by more (e.g. 10%), significantly and above the floor, as the baseline gate")
    .option("--history <dir|s3://bucket/prefix>", "keep each server's run there (its report shows where it sits in the band of that server's earlier runs; compare's own gate stays the servers')")
    .option("--history-branch <name>", HISTORY_BRANCH_HELP)
    .addHelpText("after", COMPARE_HELP)
    .action(async (scenario: string, raw: unknown) => {
      const o = compareOptions(raw);
      for (const line of o.warnings) log(line);
      await startingTasks(o.backend, (clock) => new LineProgress(log, { ...clock, now: Date.now }), async (deps) => {
        const result = await runCompare({ scenarioFile: scenario, ...runFiles(o.backend), ...o.scenarioRun, targets: o.targets, ...o.compare }, deps);
        log(`compare ${result.compareId}: ${result.servers.map((s) => `${s.name} ${s.error ? "failed" : `exit ${s.exitCode}`}`).join(", ")}`);
        process.stdout.write(readFileSync(result.reportFile, "utf8"));
        log(`report: ${shownPath(result.reportFile, o.backend.out)}`);
        exit(result.exitCode);
      });
    });

  backendOptions(
    scenarioRunOptions(
      cmd
        .command("plan <scenario>")
        .description("print what `run` prints before its first task, and start nothing: users per task, what one task holds, quota headroom, free addresses, the cost estimate"),
    ),
  )
    .option("--target <url>", "the server to load (Artillery's --target)")
    .addHelpText("after", PLAN_HELP)
    .action(async (scenario: string, raw: unknown) => {
      const o = planOptions(raw);
      const backend = makeBackend(o.backend);
      const outcome = await planCommand({ scenarioFile: scenario, ...runFiles(o.backend), ...o.scenarioRun }, { backend, log: (line) => process.stdout.write(`${line}\n`), warn: log });
      exit(outcome.refusals.length > 0 ? EXIT.usage : EXIT.ok);
    });

  reportOptions(
    backendOptions(
      cmd
        .command("collect <runId>")
        .description("download a run's results again, merge them and rewrite report.md and merged.json")
        .option("--regions <list>", "regions (default: those in <out>/<runId>/fanout.json, or in the record a detached run left in the store)")
        .option("--count <n>", "tasks per region expected (default: the run's)"),
    ),
  ).action(async (runId: string, raw: unknown) => {
    const o = collectOptions(raw);
    const result = await collectCommand({ runId, outDir: o.backend.out, ...o.lookup }, makeBackend(o.backend), o.report, log);
    printOutcome(result, o.backend.out);
    exit(result.exitCode);
  });

  reportOptions(
    backendOptions(
      liveOptions(
        cmd
          .command("attach <runId>")
          .description("follow a run started with --detach (its record is in the store: any machine with access, or with --local another terminal), wait for its end and write the report as `run` does")
          .option("--regions <list>", "regions to find the run's record in (AWS, on a machine that did not start it: one is enough)"),
      ),
    ),
  ).action(async (runId: string, raw: unknown) => {
    const o = attachOptions(raw);
    for (const line of o.warnings) log(line);
    // Attached, a signal leaves the run going: the tasks are stopped by `stop`, never by this runner's end.
    let record: RunRecord | undefined;
    const signals = ["SIGINT", "SIGTERM", "SIGHUP"] as const;
    const leave = (signal: NodeJS.Signals) => {
      log(record ? detachedSignalLine(signal, record) : `${signal}: leaving run ${runId}, which goes on; \`cable-fanout stop ${runId}\` stops it`);
      process.exit(128 + (signal === "SIGINT" ? 2 : signal === "SIGTERM" ? 15 : 1));
    };
    for (const sig of signals) process.on(sig, leave);
    try {
      const progress: RunDeps["progress"] = (clock) =>
        process.stderr.isTTY ? TerminalProgress.start(process.stderr, { ...clock, now: Date.now }) : new LineProgress(log, { ...clock, now: Date.now });
      const result = await attachRun(
        { runId, outDir: o.backend.out, ...o.lookup },
        { ...o.report, ...(o.live ? { live: o.live } : {}) },
        { backend: makeBackend(o.backend), now: Date.now, sleep, log, abort: new AbortController(), progress, onRecord: (r) => (record = r) },
      );
      printOutcome(result, o.backend.out);
      exit(result.exitCode);
    } finally {
      for (const sig of signals) process.off(sig, leave);
    }
  });

  backendOptions(
    cmd
      .command("status")
      .description("list the runs with tasks still running, per region: age, tasks running and stopped, detached or watched")
      .option("--regions <list>", "regions to look in (needed on AWS; --local: every region of the store)"),
  ).action(async (raw: unknown) => {
    const o = statusOptions(raw);
    const backend = makeBackend(o.backend);
    const regions = o.regions ?? (backend instanceof LocalBackend ? backend.knownRegions() : []);
    const rows = regions.length === 0 ? [] : await runsInProgress(backend, regions, { now: Date.now, outDir: o.backend.out, warn: log });
    for (const line of formatStatus(rows)) process.stdout.write(`${line}\n`);
    exit(EXIT.ok);
  });

  backendOptions(
    cmd
      .command("stop <runId>")
      .description("stop every task of a run that still runs")
      .option("--regions <list>", "regions (default: those in <out>/<runId>/fanout.json)"),
  ).action(async (runId: string, raw: unknown) => {
    const o = stopOptions(raw);
    const stopped = await stopCommand({ runId, outDir: o.backend.out, ...o.lookup }, makeBackend(o.backend), log);
    log(`${stopped} task(s) stopped`);
    exit(EXIT.ok);
  });
  registerCapacity(cmd, { makeBackend, localStore, sleep, log, exit });
  return cmd;
}

function printOutcome(result: { reportFile?: string; failedRegions: string[]; runDir: string }, out: string): void {
  if (result.failedRegions.length > 0) log(`failed region(s): ${result.failedRegions.join(", ")}`);
  // stdout carries only the report's path, for scripts: `report=$(cable-fanout run …)`.
  if (result.reportFile) process.stdout.write(`${shownPath(result.reportFile, out)}\n`);
  else log(`no report: no task left results in ${result.runDir}`);
}

export async function main(argv: string[]): Promise<number> {
  let code: number = EXIT.ok;
  try {
    await program((c) => (code = c)).parseAsync(argv, { from: "user" });
    return code;
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode === 0 ? EXIT.ok : EXIT.usage;
    if (err instanceof FanoutInputError || err instanceof ResultsInputError) {
      log(`cable-fanout: ${err.message}`);
      return EXIT.usage;
    }
    log(`cable-fanout: internal error: ${(err as Error).stack ?? String(err)}`);
    return EXIT.internal;
  }
}
