// Commander hands each action an untyped bag of flags; these schemas turn it into typed values, one
// group of flags at a time, once, at the top of the action.
//
// The values are checked by options.ts' helpers, which throw FanoutInputError (exit 2). zod lets
// an error thrown in a transform through as it is, so the first bad flag stops the parse with the
// message it always had. Which flag is reported first when several are bad is the order the
// commands have always checked them in: the fields of a group in their order here, then the
// group's own transform, the groups in the order each command parses them. A ZodError from these
// schemas is no user's mistake: commander handed something they do not describe (exit 3).
import { z } from "zod";
import { CONTAINER_NAME } from "cable-infra/contract";
import { refuseOversizeOverrides } from "./aws/overrides-size.js";
import { parseCompareTargets } from "./compare/targets.js";
import { checkRefine, checkStair } from "./capacity/plan.js";
import { FanoutInputError } from "./errors.js";
import { HISTORY_GATE, parseHistoryLocation } from "artillery-plugin-cable-report";
import { STACK_HISTORY, type HistoryOptions } from "./run/history.js";
import { parseAbortOn } from "./live/abort.js";
import {
  parseDuration,
  parseHttpUrl,
  parseJsonObject,
  parseLive,
  parseMaxCost,
  parseMinReady,
  parsePercent,
  parsePositiveInt,
  parseRegions,
  parseRunId,
  parseSecrets,
  parseTaskSize,
} from "./options.js";
import { DEFAULT_LIVE_HOST } from "./live/page.js";
import type { Arch, StackExpectations, SubnetKind } from "./backend.js";
import type { BackendKind } from "./region-names.js";
import { parseSlo } from "./slo.js";
import { parseTaskEnv, refuseEnvAndSecret } from "./task-env.js";

// What commander gives: a valued flag's string (its default when it has one), true for a bare flag,
// an array for a repeatable one, undefined for a flag not given.
const text = z.string().optional();
const bare = z.boolean().default(false);
const repeated = z.array(z.string()).default([]);
const positiveInt = (flag: string) => z.string().transform((t) => parsePositiveInt(flag, t));
const duration = (flag: string) => z.string().transform((t) => parseDuration(flag, t));
const percent = (flag: string) => z.string().transform((t) => parsePercent(flag, t));
const jsonObject = (flag: string) => z.string().transform((t) => parseJsonObject(flag, t));
const httpUrl = (flag: string) => z.string().transform((t) => parseHttpUrl(flag, t));
const runId = z.string().transform((t) => parseRunId(t));

/** --out, --local, --store; `kind` is what the kind-dependent groups below are built for. */
export const backendFlags = z
  .object({ out: z.string(), local: bare, store: text })
  .transform(({ out, local, store }) => ({ out, local, store, kind: backendKind(local) }));
/**
 * `taskEnv`: --env, which the backend gives every task it starts (cli.ts makeBackend); `expected`:
 * --arch and --subnets, which it holds every region's stack to; absent for commands that start none.
 */
export type BackendFlags = z.output<typeof backendFlags> & { taskEnv?: Record<string, string>; expected?: StackExpectations };

function backendKind(local: boolean): BackendKind {
  return local ? "local" : "aws";
}

/** --secret: whether a bare NAME may pass this machine's $NAME, and which references the task role may read, depend on the backend. */
export const secretsFlags = (kind: BackendKind, env: NodeJS.ProcessEnv = process.env) =>
  z.object({ secret: repeated }).transform((o) => {
    const secrets = parseSecrets(o.secret, kind, env);
    return { secretRefs: secrets.refs, secretValues: secrets.values };
  });

/** --env NAME (this shell's value) and --env NAME=value: plain variables every task gets. */
export const taskEnvFlags = (env: NodeJS.ProcessEnv = process.env) => z.object({ env: repeated }).transform((o) => parseTaskEnv(o.env, env));

/**
 * --env beside --secret and the task size: a name given both ways is refused, and so are values
 * that would not fit in RunTask's overrides on Fargate (judged with --local too, so that what
 * passes here passes there; the AWS preflight judges again with the stack's container name).
 */
function checkTaskEnv(taskEnv: Record<string, string>, secrets: { secretRefs: Record<string, string>; secretValues: Record<string, string> }, size: { cpu?: number; memory?: number }): void {
  refuseEnvAndSecret(taskEnv, [...Object.keys(secrets.secretRefs), ...Object.keys(secrets.secretValues)]);
  refuseOversizeOverrides({ containerName: CONTAINER_NAME, secretRefs: secrets.secretRefs, env: taskEnv, cpu: size.cpu, memory: size.memory });
}

/** --regions and --count: which region names are valid depends on the backend. */
export const placementFlags = (kind: BackendKind) =>
  z.object({
    regions: z.string().transform((t) => parseRegions(t, kind)),
    count: positiveInt("--count"),
  });

const artilleryFlags = z.object({
  bundleRoot: text,
  overrides: jsonObject("--overrides").optional(),
  variables: jsonObject("--variables").optional(),
  insecure: bare,
  environment: text,
});

/** --cpu and --memory are checked as the Fargate pair they make, so neither is read alone. */
const taskSizeFlags = z.object({ cpu: text, memory: text }).transform((o) => parseTaskSize(o.cpu, o.memory));

const startFlags = z
  .object({ spot: bare, spotOnly: bare, startDelay: duration("--start-delay").optional(), startTimeout: duration("--start-timeout").optional() })
  .transform((o) => ({ spot: o.spot || o.spotOnly, spotOnly: o.spotOnly, startDelayMs: o.startDelay, startTimeoutMs: o.startTimeout }));

const ARCHES: Record<string, Arch> = { x86_64: "x86_64", amd64: "x86_64", arm64: "arm64" };

/** --arch: x86_64 or arm64 (any case; Docker's amd64 is x86_64), as the stack's `-c arch=` takes them. */
export function parseArch(text: string): Arch {
  const arch = ARCHES[text.trim().toLowerCase()];
  if (!arch) throw new FanoutInputError(`--arch wants x86_64 or arm64 (Graviton), not "${text}"`);
  return arch;
}

export function parseSubnets(text: string): SubnetKind {
  const kind = text.trim().toLowerCase();
  if (kind !== "public" && kind !== "private") throw new FanoutInputError(`--subnets wants public (a public IP per task) or private (through a NAT gateway), not "${text}"`);
  return kind;
}

/**
 * --arch and --subnets: what the run expects of the stacks (RunOptions.arch/subnets for the plan,
 * and the backend's `expected`, which the preflight holds each stack to); absent when not given.
 */
const stackFlags = z.object({ arch: text, subnets: text }).transform((o): StackExpectations => ({
  ...(o.arch === undefined ? {} : { arch: parseArch(o.arch) }),
  ...(o.subnets === undefined ? {} : { subnets: parseSubnets(o.subnets) }),
}));

/** The backend's share of the task flags: --arch and --subnets, when given. */
const expectedOf = (o: StackExpectations): { expected?: StackExpectations } =>
  o.arch === undefined && o.subnets === undefined ? {} : { expected: { ...(o.arch ? { arch: o.arch } : {}), ...(o.subnets ? { subnets: o.subnets } : {}) } };

/** --arch and --subnets say what a stack is: there is none with --local. */
function refuseLocalStackFlags(kind: BackendKind, o: StackExpectations): void {
  if (kind !== "local") return;
  const given = o.arch !== undefined ? "--arch" : o.subnets !== undefined ? "--subnets" : undefined;
  if (given) throw new FanoutInputError(`${given} applies to Fargate tasks (the stack's ${given === "--arch" ? "architecture" : "subnets"}), not to --local`);
}

/** The task flags `run`, `compare`, `plan` and `capacity` share, one schema so that they cannot read them differently. */
export const taskFlags = artilleryFlags.and(taskSizeFlags).and(startFlags).and(stackFlags);

const maxCost = z.string().transform((t) => parseMaxCost(t));

/** --max-cost and --yes: absent from the run's options when not given, as they always were. */
const costOf = (o: { maxCost?: number; yes: boolean }): { maxCostUsd?: number; yes?: true } => ({
  ...(o.maxCost === undefined ? {} : { maxCostUsd: o.maxCost }),
  ...(o.yes ? { yes: true } : {}),
});

const runLimitFlags = z
  .object({
    maxDuration: duration("--max-duration").optional(),
    maxCost: maxCost.optional(),
    yes: bare,
    minReady: z.string().transform((t) => parseMinReady(t)).optional(),
    readyTimeout: duration("--ready-timeout").optional(),
    heartbeatTimeout: duration("--heartbeat-timeout").optional(),
  })
  .transform((o) => ({
    maxDurationMs: o.maxDuration,
    ...costOf(o),
    minReadyPct: o.minReady,
    readyTimeoutMs: o.readyTimeout,
    heartbeatTimeoutMs: o.heartbeatTimeout,
  }));

/**
 * The flags of a run of the scenario, as `run`, `compare` and `plan` take them (cli.ts scenarioRunOptions).
 * --secret is a group of its own: `run` checks it before these, `compare` before its servers, `capacity` after its SLOs.
 */
export const scenarioRunFlags = (kind: BackendKind) => placementFlags(kind).and(taskFlags).and(runLimitFlags);

/**
 * --history and --history-branch (`run`, `collect`, `attach`, `compare`, `capacity`): a folder or
 * s3://bucket/prefix, and the branch whose runs make the band (main by default; `*`: every branch).
 */
export const historyFlags = z
  .object({ history: text, historyBranch: text })
  .transform((o): { history?: HistoryOptions } => {
    if (o.historyBranch !== undefined && o.history === undefined) throw new FanoutInputError("--history-branch needs --history");
    if (o.history === undefined) return {};
    try {
      if (o.history !== STACK_HISTORY) parseHistoryLocation(o.history);
    } catch (err) {
      throw new FanoutInputError((err as Error).message);
    }
    const branch = o.historyBranch === undefined ? HISTORY_GATE.branch : o.historyBranch.trim() === "*" ? null : o.historyBranch.trim();
    if (branch === "") throw new FanoutInputError("--history-branch wants a branch name, or * for every branch");
    return { history: { location: o.history, branch } };
  });

/** `run`'s and `collect`'s; the needs-a-baseline checks come after the threshold's own, as they always did. */
export const reportFlags = z
  .object({ baseline: text, failOnRegression: percent("--fail-on-regression").optional(), baselineAny: bare, title: text })
  .and(historyFlags)
  .transform((o) => {
    if (o.failOnRegression !== undefined && o.baseline === undefined && o.history === undefined) throw new FanoutInputError("--fail-on-regression needs --baseline or --history");
    if (o.baselineAny && o.baseline === undefined) throw new FanoutInputError("--baseline-any needs --baseline");
    return { baseline: o.baseline, regressionThreshold: o.failOnRegression, baselineAny: o.baselineAny, title: o.title, ...(o.history ? { history: o.history } : {}) };
  });

export const runFlags = z
  .object({ target: text, runId: runId.optional(), abortOn: repeated.transform((l) => l.map((t) => parseAbortOn(t))), serverMetrics: httpUrl("--server-metrics").optional() })
  .transform((o) => ({ target: o.target, runId: o.runId, abortOn: o.abortOn, serverMetricsUrl: o.serverMetrics }));

export const planFlags = z.object({ target: text });

/**
 * --live[=PORT] and --live-host: the live page's address (RunOptions.live); `warning` when the host
 * is not loopback, for the command to print before anything starts.
 */
export const liveFlags = z
  .object({ live: z.union([z.boolean(), z.string()]).optional(), liveHost: text })
  .transform((o) => parseLive(o.live, o.liveHost, DEFAULT_LIVE_HOST));

/**
 * --detach: the runner returns once the go is given. What needs a runner watching to the end is
 * refused beside it, naming both flags: a detached run has nobody to judge --abort-on, scrape
 * --server-metrics, serve --live or write the report (attach and collect take the report's flags).
 */
function checkDetach(detach: boolean, given: { abortOn: unknown[]; serverMetricsUrl?: string; live?: unknown; baseline?: string; regressionThreshold?: number; title?: string }): void {
  if (!detach) return;
  if (given.abortOn.length > 0) throw new FanoutInputError("--detach with --abort-on: --abort-on needs a runner that watches the run to its end; drop one of them");
  if (given.serverMetricsUrl !== undefined) throw new FanoutInputError("--detach with --server-metrics: the server is scraped by the runner, which a detached run leaves; drop one of them");
  if (given.live !== undefined) throw new FanoutInputError("--detach with --live: the live page is served by the runner, which a detached run leaves; watch it with `cable-fanout attach <runId> --live`");
  const report = given.baseline !== undefined ? "--baseline" : given.regressionThreshold !== undefined ? "--fail-on-regression" : given.title !== undefined ? "--title" : undefined;
  if (report) throw new FanoutInputError(`--detach with ${report}: a detached run writes no report; give ${report} to \`cable-fanout attach\` or \`cable-fanout collect\``);
}

/** `compare`'s servers: --target, --server-metrics and --server-pid, each NAME=… and repeatable, read together since the last two name a --target. */
export const compareTargetFlags = z
  .object({ target: repeated, serverMetrics: repeated, serverPid: repeated })
  .transform((o) => parseCompareTargets(o.target, o.serverMetrics, o.serverPid));

/** --compare-id's error says --run-id, as it always has (the two take the same ids). */
export const compareFlags = z
  .object({ title: text, pause: duration("--pause"), compareId: runId.optional(), failOnRegression: percent("--fail-on-regression").optional() })
  .transform((o) => ({ title: o.title, pauseMs: o.pause, compareId: o.compareId, regressionThreshold: o.failOnRegression }));

// `collect` and `stop` fall back to the run's own regions and count (fanout.json) for an empty
// value as for none, as they always have.
const regionsOfRun = (kind: BackendKind) => text.transform((t) => (t ? parseRegions(t, kind) : undefined));
const countOfRun = text.transform((t) => (t ? parsePositiveInt("--count", t) : undefined));

export const collectFlags = (kind: BackendKind) => z.object({ regions: regionsOfRun(kind), count: countOfRun });

export const stopFlags = (kind: BackendKind) => z.object({ regions: regionsOfRun(kind) });

/**
 * The capacity search's stair, axis and SLOs. The stair is checked against the tasks it is spread
 * over (regions × --count: every task adds the same share of a step), so the schema takes them.
 */
export const capacitySearchFlags = (tasks: number) =>
  z
    .object({
      start: positiveInt("--start"),
      step: positiveInt("--step"),
      max: positiveInt("--max"),
      hold: positiveInt("--hold"),
      climb: positiveInt("--climb"),
      vary: z.enum(["users", "rate"]),
      users: text,
      refine: text,
      slo: z.array(z.string()),
    })
    .transform((o) => {
      const stair = { start: o.start, step: o.step, max: o.max, holdS: o.hold, climbS: o.climb };
      if (o.vary === "users" && o.users !== undefined) throw new FanoutInputError("--users is the fixed user count of --vary rate; by users, the levels are the users (--start, --step, --max)");
      if (o.vary === "rate" && o.users === undefined) throw new FanoutInputError("--vary rate needs --users N: how many users send the levels' messages (all regions together)");
      const users = o.users === undefined ? undefined : parsePositiveInt("--users", o.users);
      checkStair(stair, tasks, users);
      const refine = o.refine === undefined ? undefined : parsePositiveInt("--refine", o.refine);
      if (refine !== undefined) checkRefine(refine, stair, tasks, o.vary === "rate");
      return { stair, vary: o.vary, users, refine, slos: o.slo.map((t) => parseSlo(t)) };
    });

const capacityLimitFlags = z
  .object({ target: text, maxCost: maxCost.optional(), yes: bare, minCapacity: positiveInt("--min-capacity").optional(), serverMetrics: httpUrl("--server-metrics").optional() })
  .transform((o) => ({ target: o.target, ...costOf(o), minCapacity: o.minCapacity, serverMetricsUrl: o.serverMetrics }));

// Each command parses its groups in the order it has always checked its flags in (see the top).

/**
 * --secret, then --env, then the scenario-run flags, --env judged beside both; --env goes to the
 * backend (which gives it to the tasks) and to the run (whose plan checks what the scenario reads).
 */
function scenarioRunWithEnv(raw: unknown, kind: BackendKind) {
  const secrets = secretsFlags(kind).parse(raw);
  const taskEnv = taskEnvFlags().parse(raw);
  const run = scenarioRunFlags(kind).parse(raw);
  checkTaskEnv(taskEnv, secrets, run);
  refuseLocalStackFlags(kind, run);
  return { ...secrets, taskEnv, ...run };
}

export function runOptions(raw: unknown) {
  const backend = backendFlags.parse(raw);
  const scenarioRun = scenarioRunWithEnv(raw, backend.kind);
  const run = runFlags.parse(raw);
  const report = reportFlags.parse(raw);
  const { live, warning } = liveFlags.parse(raw);
  const { detach } = detachFlags.parse(raw);
  checkDetach(detach, { ...run, ...report, live });
  return {
    backend: { ...backend, taskEnv: scenarioRun.taskEnv, ...expectedOf(scenarioRun) },
    scenarioRun,
    run: { ...run, ...(live ? { live } : {}), ...(detach ? { detach } : {}) },
    report,
    warnings: warning ? [warning] : [],
  };
}

const detachFlags = z.object({ detach: bare });

export function compareOptions(raw: unknown) {
  const backend = backendFlags.parse(raw);
  const secrets = secretsFlags(backend.kind).parse(raw);
  const taskEnv = taskEnvFlags().parse(raw);
  const targets = compareTargetFlags.parse(raw);
  const run = scenarioRunFlags(backend.kind).parse(raw);
  checkTaskEnv(taskEnv, secrets, run);
  refuseLocalStackFlags(backend.kind, run);
  if (detachFlags.parse(raw).detach) {
    throw new FanoutInputError("--detach does not apply to compare: it runs one server after another, and its runner must stay to start the next; start each server with `cable-fanout run --detach` instead");
  }
  const { live, warning } = liveFlags.parse(raw);
  return { backend: { ...backend, taskEnv, ...expectedOf(run) }, scenarioRun: { ...secrets, taskEnv, ...run, ...(live ? { live } : {}) }, targets, compare: { ...compareFlags.parse(raw), ...historyFlags.parse(raw) }, warnings: warning ? [warning] : [] };
}

export function planOptions(raw: unknown) {
  const backend = backendFlags.parse(raw);
  const scenarioRun = scenarioRunWithEnv(raw, backend.kind);
  return { backend: { ...backend, taskEnv: scenarioRun.taskEnv, ...expectedOf(scenarioRun) }, scenarioRun: { ...scenarioRun, ...planFlags.parse(raw) } };
}

export function collectOptions(raw: unknown) {
  const backend = backendFlags.parse(raw);
  return { backend, lookup: collectFlags(backend.kind).parse(raw), report: reportFlags.parse(raw) };
}

/** `attach <runId>`: where to find the run (as `collect`), the report's flags, and the live page. */
export function attachOptions(raw: unknown) {
  const backend = backendFlags.parse(raw);
  const lookup = stopFlags(backend.kind).parse(raw);
  const report = reportFlags.parse(raw);
  const { live, warning } = liveFlags.parse(raw);
  return { backend, lookup, report, ...(live ? { live } : {}), warnings: warning ? [warning] : [] };
}

/** `status`: the regions to look in (AWS: needed; --local: those the store holds, by default). */
export function statusOptions(raw: unknown) {
  const backend = backendFlags.parse(raw);
  const { regions } = stopFlags(backend.kind).parse(raw);
  if (!regions && backend.kind === "aws") throw new FanoutInputError("status needs --regions on AWS: the regions whose runs to list (e.g. --regions eu-west-2,us-east-1)");
  return { backend, regions };
}

export function stopOptions(raw: unknown) {
  const backend = backendFlags.parse(raw);
  return { backend, lookup: stopFlags(backend.kind).parse(raw) };
}

/** The history options of a command whose runs are one kind (compare's servers, capacity's segments). */
function historyOf(flags: { history?: HistoryOptions }, kind: NonNullable<HistoryOptions["kind"]>): { history?: HistoryOptions } {
  return flags.history ? { history: { ...flags.history, kind } } : {};
}

export function capacityOptions(raw: unknown) {
  const backend = backendFlags.parse(raw);
  const placement = placementFlags(backend.kind).parse(raw);
  const search = capacitySearchFlags(placement.regions.length * placement.count).parse(raw);
  const secrets = secretsFlags(backend.kind).parse(raw);
  const taskEnv = taskEnvFlags().parse(raw);
  const task = taskFlags.parse(raw);
  checkTaskEnv(taskEnv, secrets, task);
  refuseLocalStackFlags(backend.kind, task);
  const { live, warning } = liveFlags.parse(raw);
  return { backend: { ...backend, taskEnv, ...expectedOf(task) }, placement, search, task: { ...secrets, taskEnv, ...task, ...capacityLimitFlags.parse(raw), ...historyOf(historyFlags.parse(raw), "capacity") }, ...(live ? { live } : {}), warnings: warning ? [warning] : [] };
}
