// The block every run, capacity search and comparison prints before its first RunTask (and all that
// `cable-fanout plan` does): how many users each task will carry, what one task of that size holds
// for this kind of workload, whether the regions' quotas and subnets hold the run, and what it will
// cost; then the guard that refuses a run dearer than --max-cost, or asks above a threshold.
import type { RegionFacts } from "../backend.js";
import { FanoutInputError } from "../errors.js";
import type { BackendKind } from "../region-names.js";
import { planPayloads } from "../payloads.js";
import { effectiveOverrides, type RunOptions } from "../run/run-options.js";
import { effectiveConfig, loadScenario, type Scenario } from "../scenario.js";
import { checkTaskEnv, missingEnvProblem, type TaskEnvCheck, taskEnvLines } from "../task-env.js";
import { BILLED_BEYOND_PHASES, type CapacityChoice, type CostEstimate, estimateCost, type RegionCost, usd } from "./estimate.js";
import { PRICES } from "./prices.js";
import { TASK_CAPACITY, taskCapacity, type Workload } from "./task-capacity.js";
import { estimateUsers, UsersUnknown, type UsersEstimate } from "./users.js";

/** The task size a stack is deployed with unless told otherwise (infra's settings). */
export const STACK_DEFAULT_SIZE = { cpu: 4096, memoryMiB: 8192 } as const;

/** Above this estimate, a run asks first (or needs --yes when nobody can answer). */
export const ASK_ABOVE_USD = 25;

/** Memory a task's users may fill before the size is judged too small (the rest is Node, Artillery, the kernel's buffers). */
const MEMORY_HEADROOM = 0.8;

export interface PlanInput {
  backend: BackendKind;
  regions: string[];
  count: number;
  capacity: CapacityChoice;
  /** The config Artillery will run with (effectiveConfig) and the script's scenarios. */
  config: Record<string, unknown>;
  scenarios: unknown[];
  /** Seconds of phases; undefined when they cannot be read. */
  phasesMs: number | undefined;
  /** What bounds a task's life when the phases cannot (--max-duration, or its default). */
  maxDurationMs: number;
  startDelayMs: number;
  /** --cpu/--memory, when given. */
  size?: { cpu?: number; memory?: number };
  /** Per region, what its preflight found; absent when the region could not be reached (plan without an account). */
  facts: Map<string, RegionFacts>;
  /** Why regions could not be reached, for the "not checked" line. */
  unreached?: string;
  /** Runs like this one the command makes (a comparison's servers); the cost covers them all. */
  runsInAll?: number;
  /** What the scenario reads from the tasks' environment, beside what they get (task-env.ts); absent: not checked. */
  env?: TaskEnvCheck;
}

export interface LaunchPlan {
  users?: UsersEstimate;
  /** The task size the estimate assumes, and where it came from. */
  size: { cpu: number; memoryMiB: number; from: "flags" | "stack" | "stack default" };
  /** What one task of that size holds for this workload; undefined without a measured figure. */
  holds?: number;
  /** Tasks per region that carry the same users a region gets from this run (count × a task's peak). */
  suggestedCount?: number;
  /** A smaller task size that still holds a task's peak, with its cost. */
  smaller?: { cpu: number; memoryMiB: number; holds: number; cost?: number };
  /** undefined on the local backend: nothing is billed. */
  cost?: CostEstimate;
  lines: string[];
  /** Why the run would fail in every task (what the scenario reads that no task has): guardCost refuses it, `plan` says it. */
  refusals?: string[];
}

const fmt = (n: number) => Math.round(n).toLocaleString("en-US");
const gib = (mib: number) => `${mib % 1024 === 0 ? mib / 1024 : (mib / 1024).toFixed(1)} GiB`;

/** What one task of `cpu`/`memoryMiB` holds of `workload`: the measured figure at its vCPU, bounded by its memory. */
export function holdsPerTask(workload: Workload, cpu: number, memoryMiB: number): number | undefined {
  const entry = taskCapacity(workload, cpu / 1024);
  if (!entry) return undefined;
  const byMemory = Math.floor((memoryMiB * 1024 * MEMORY_HEADROOM) / entry.kibPerUser);
  return Math.min(entry.users, byMemory);
}

/** The smallest Fargate size (1, 2 or 4 vCPU, the least memory each allows) that holds `peak` users of `workload`. */
export function smallestHolding(workload: Workload, peak: number): { cpu: number; memoryMiB: number; holds: number } | undefined {
  for (const vcpu of [1, 2, 4]) {
    const cpu = vcpu * 1024;
    const memoryMiB = cpu * 2;
    const holds = holdsPerTask(workload, cpu, memoryMiB);
    if (holds !== undefined && holds >= peak) return { cpu, memoryMiB, holds };
  }
  return undefined;
}

/** The run's flags a plan reads (RunOptions' own fields). */
export interface PlanFlags {
  regions: string[];
  count: number;
  spot: boolean;
  spotOnly?: boolean;
  cpu?: number;
  memory?: number;
  environment?: string;
  runsInAll?: number;
  /** --env and --secret: what the tasks' environment holds beside the runtime's own. */
  taskEnv?: Record<string, string>;
  secretRefs?: Record<string, string>;
  secretValues?: Record<string, string>;
}

/** A plan's input from a run's flags, its scenario and what each region's preflight found. */
export function planInput(
  flags: PlanFlags,
  backend: BackendKind,
  scenario: Pick<Scenario, "config" | "scenarios" | "durationMs"> & Partial<Pick<Scenario, "file" | "hooks">>,
  overrides: Record<string, unknown> | undefined,
  limits: { maxDurationMs: number; startDelayMs: number },
  facts: Map<string, RegionFacts>,
  unreached?: string,
): PlanInput {
  return {
    // Every run and plan passes through here before its first task: what the scenario reads from the tasks' environment is judged here.
    env: checkTaskEnv(scenario, overrides, flags.environment, flags),
    backend,
    regions: flags.regions,
    count: flags.count,
    capacity: flags.spotOnly ? "spot-only" : flags.spot ? "spot" : "on-demand",
    config: effectiveConfig(scenario, overrides, flags.environment),
    scenarios: scenario.scenarios,
    phasesMs: scenario.durationMs,
    ...limits,
    size: { cpu: flags.cpu, memory: flags.memory },
    facts,
    ...(unreached ? { unreached } : {}),
    ...(flags.runsInAll ? { runsInAll: flags.runsInAll } : {}),
  };
}

export function makePlan(input: PlanInput): LaunchPlan {
  const facts = [...input.facts.values()];
  const stackCpu = facts.find((f) => f.cpu !== undefined)?.cpu;
  const stackMemory = facts.find((f) => f.memoryMiB !== undefined)?.memoryMiB;
  const size: LaunchPlan["size"] =
    input.size?.cpu !== undefined && input.size.memory !== undefined
      ? { cpu: input.size.cpu, memoryMiB: input.size.memory, from: "flags" }
      : stackCpu !== undefined
        ? { cpu: stackCpu, memoryMiB: stackMemory ?? Math.max(STACK_DEFAULT_SIZE.memoryMiB, stackCpu * 2), from: "stack" }
        : { ...STACK_DEFAULT_SIZE, from: "stack default" };
  const lines: string[] = [];
  const total = input.count * input.regions.length;
  lines.push(`plan: ${input.count} task(s) in each of ${input.regions.join(", ")} (${fmt(total)} in all)${input.backend === "aws" ? `, ${size.cpu / 1024} vCPU / ${gib(size.memoryMiB)} each (${size.from}), ${input.capacity}` : ", local processes"}`);

  let users: UsersEstimate | undefined;
  try {
    users = estimateUsers(input.config, input.scenarios);
  } catch (err) {
    if (!(err instanceof UsersUnknown)) throw err;
    lines.push(`  users: not estimated (${err.message})`);
  }
  const plan: LaunchPlan = { size, lines, ...(users ? { users } : {}) };
  if (input.env) {
    lines.push(...taskEnvLines(input.env));
    const missing = missingEnvProblem(input.env, input.backend);
    if (missing) plan.refusals = [missing];
  }
  if (users) {
    const stay = users.flowSeconds === undefined ? "a user's stay is not known, so every arrival is counted as staying" : `a user stays about ${fmt(users.flowSeconds)} s`;
    const sends = users.sendsPerUserSecond > 0 ? `, each sending ${users.sendsPerUserSecond.toFixed(2)} message(s)/s` : "";
    lines.push(`  users: about ${fmt(users.peak)} at once per task at the peak (${fmt(users.arrivals)} arrive over ${fmt(users.phasesSeconds)} s; ${stay}), ${fmt(users.peak * total)} in all; each user ${users.does}${sends} (sized as the ${users.workload} workload)`);
    // A local task is a process on this machine: what a Fargate task holds says nothing of it.
    const holds = input.backend === "aws" ? holdsPerTask(users.workload, size.cpu, size.memoryMiB) : undefined;
    if (input.backend === "aws" && holds === undefined) {
      lines.push(`  one task: no measured capacity for ${users.workload} at ${size.cpu / 1024} vCPU (${TASK_CAPACITY.doc})`);
    } else if (holds !== undefined) {
      plan.holds = holds;
      plan.suggestedCount = Math.max(1, Math.ceil((users.peak * input.count) / holds));
      const share = users.peak / holds;
      const verdict =
        share > 1
          ? `each task would carry ${fmt(share * 100)}% of it: the generator, not the server, would set the figures`
          : `each task carries ${fmt(share * 100)}% of it`;
      lines.push(`  one ${size.cpu / 1024} vCPU task holds about ${fmt(holds)} ${users.workload} users (measured ${TASK_CAPACITY.measuredOn}: ${TASK_CAPACITY.criterion}; ${TASK_CAPACITY.doc}): ${verdict}`);
      if (plan.suggestedCount !== input.count) {
        const factor = input.count / plan.suggestedCount;
        lines.push(`  suggested: --count ${plan.suggestedCount} per region carries the same ${fmt(users.peak * input.count)} users a region gets, each task's arrivals ×${Number(factor.toFixed(2)).toLocaleString("en-US")} (--overrides on config.phases)`);
      }
      const smaller = smallestHolding(users.workload, users.peak);
      if (input.backend === "aws" && smaller && smaller.cpu < size.cpu) plan.smaller = smaller;
    }
  }

  if (input.backend === "aws") {
    const taskSeconds = BILLED_BEYOND_PHASES.readyS + input.startDelayMs / 1000 + (input.phasesMs ?? input.maxDurationMs) / 1000 + BILLED_BEYOND_PHASES.stopS;
    const regions = input.regions.map((region) => ({ region, tasks: input.count, publicIp: input.facts.get(region)?.publicIp ?? true }));
    const runs = input.runsInAll ?? 1;
    const cost = scaleCost(estimateCost({ regions, cpu: size.cpu, memoryMiB: size.memoryMiB, capacity: input.capacity, taskSeconds }), runs);
    plan.cost = cost;
    if (plan.smaller) {
      plan.smaller.cost = scaleCost(estimateCost({ regions, cpu: plan.smaller.cpu, memoryMiB: plan.smaller.memoryMiB, capacity: input.capacity, taskSeconds }), runs).total;
      lines.push(`  a ${plan.smaller.cpu / 1024} vCPU / ${gib(plan.smaller.memoryMiB)} task holds ${fmt(plan.smaller.holds)}: --cpu ${plan.smaller.cpu} --memory ${plan.smaller.memoryMiB} would cost about ${usd(plan.smaller.cost)} instead of ${usd(cost.total)}`);
    }
    for (const region of input.regions) lines.push(`  ${regionLine(region, input, size.cpu, cost)}`);
    const parts = (pick: (r: CostEstimate["regions"][number]) => number) => usd(cost.regions.reduce((n, r) => n + pick(r), 0));
    const upTo = cost.upTo > cost.total ? ` (up to ${usd(cost.upTo)} if every task falls back to on-demand)` : "";
    const inAll = runs > 1 ? `, ${runs} runs like this one in all` : "";
    lines.push(
      `  cost: about ${usd(cost.total)}${upTo}${inAll} for about ${fmt(cost.taskSeconds / 60)} min a task (${BILLED_BEYOND_PHASES.readyS} s to be ready, the phases, ${BILLED_BEYOND_PHASES.stopS} s to stop): Fargate ${parts((r) => r.fargate)}, public IPv4 ${parts((r) => r.publicIpv4)}, S3 ${parts((r) => r.s3)}, logs ${parts((r) => r.logs)}; list prices as of ${cost.asOf} (packages/cable-fanout/src/plan/prices.ts)`,
    );
    const unpriced = cost.regions.filter((r) => r.unpriced).map((r) => r.region);
    if (unpriced.length > 0) lines.push(`  not in the price table: ${unpriced.join(", ")} (priced at its dearest region's rates)`);
    const spotUnpriced = cost.regions.filter((r) => r.spotUnpriced && !r.unpriced).map((r) => r.region);
    if (spotUnpriced.length > 0) lines.push(`  no Spot price in the table for ${spotUnpriced.join(", ")}: priced at on-demand, an upper bound`);
    const egress = `${usd(PRICES.internetEgressPerGb.value)}/GB to the internet${PRICES.interRegionPerGb ? `, ${usd(PRICES.interRegionPerGb.value)}/GB to another region` : ""}`;
    lines.push(`  traffic is not in it: what the tasks send the target is billed as egress (${egress}; within a region over public addresses too); what they receive is on the server's side of the bill`);
    const unchecked = [...new Set([...(input.unreached ? [input.unreached] : []), ...[...input.facts].flatMap(([region, f]) => f.unchecked.map((u) => `${region}: ${u}`))])];
    if (unchecked.length > 0) lines.push(`  not checked: ${unchecked.join("; ")}`);
  }
  return plan;
}

function regionLine(region: string, input: PlanInput, cpu: number, cost: CostEstimate): string {
  const facts = input.facts.get(region);
  const wanted = (input.count * cpu) / 1024;
  const quota = (kind: "on-demand" | "spot") => {
    const q = facts?.quotas.find((x) => x.kind === kind);
    if (!q || q.quota === undefined) return `${kind} quota unknown`;
    const free = Math.max(0, q.quota - (q.inUse ?? 0));
    return `${kind} ${fmt(free)} of ${fmt(q.quota)} vCPU free${q.inUse === undefined ? " (use unread)" : q.inUse > 0 ? ` (${fmt(q.inUse)} in use)` : ""}${q.from === "default" ? " (default quota)" : ""}`;
  };
  const quotas = !facts ? "quota not checked" : input.capacity === "on-demand" ? quota("on-demand") : `${quota("spot")}, ${quota("on-demand")}`;
  const addresses = facts?.freeAddresses === undefined ? "addresses not checked" : `${fmt(facts.freeAddresses)} addresses free`;
  const regionCost = cost.regions.find((r) => r.region === region);
  return `${region}: ${input.count} task(s), ${fmt(wanted)} vCPU; ${quotas}; ${addresses}; ${regionCost ? usd(regionCost.total) : ""}`;
}

/** The same run made `runs` times (a comparison's servers, one after another). */
function scaleCost(cost: CostEstimate, runs: number): CostEstimate {
  if (runs === 1) return cost;
  const times = (r: RegionCost): RegionCost => ({
    ...r,
    fargate: r.fargate * runs,
    fargateUpTo: r.fargateUpTo * runs,
    publicIpv4: r.publicIpv4 * runs,
    s3: r.s3 * runs,
    logs: r.logs * runs,
    total: r.total * runs,
    upTo: r.upTo * runs,
  });
  return {
    ...cost,
    total: cost.total * runs,
    upTo: cost.upTo * runs,
    regions: cost.regions.map(times),
  };
}

/**
 * What would fail every task of every run, checked once before a command that makes several runs
 * (compare's servers, the capacity search's levels) starts its first, since each run's own failure
 * is outlived: a file the bundle refuses, --overrides on files (loadScenario), a payload csv-parse
 * refuses (planPayloads), a variable the scenario reads that no task has. Throws FanoutInputError.
 */
export function refuseUnrunnable(
  options: Pick<RunOptions, "scenarioFile"> & Partial<Pick<RunOptions, "bundleRoot" | "environment" | "overrides" | "target" | "variables" | "insecure" | "taskEnv" | "secretRefs" | "secretValues">>,
  backend: BackendKind,
): void {
  const overrides = effectiveOverrides(options);
  const scenario = loadScenario(options.scenarioFile, overrides, options.bundleRoot);
  planPayloads(scenario, options.environment);
  const missing = missingEnvProblem(checkTaskEnv(scenario, overrides, options.environment, options), backend);
  if (missing) throw new FanoutInputError(`not starting any task: ${missing}`);
}

/** What fanout.json keeps of the plan: the estimate, and the users it was made for. */
export function estimateRecord(plan: LaunchPlan) {
  const cost = plan.cost!;
  return {
    usd: round2(cost.total),
    upToUsd: round2(cost.upTo),
    taskSeconds: Math.round(cost.taskSeconds),
    cpu: plan.size.cpu,
    memoryMiB: plan.size.memoryMiB,
    pricesAsOf: cost.asOf,
    byRegion: Object.fromEntries(cost.regions.map((r) => [r.region, round2(r.total)])),
    publicIp: cost.regions.some((r) => r.publicIpv4 > 0),
    ...(plan.users ? { peakUsersPerTask: plan.users.peak, workload: plan.users.workload } : {}),
    ...(plan.holds !== undefined ? { holdsPerTask: plan.holds } : {}),
    ...(plan.suggestedCount !== undefined ? { suggestedCount: plan.suggestedCount } : {}),
  };
}

const round2 = (n: number) => Math.round(n * 100) / 100;

export interface GuardInput {
  /** --max-cost, in dollars. */
  maxCostUsd?: number;
  /** --yes: no question above the threshold. */
  yes?: boolean;
  /** Asks the person at the terminal; undefined when nobody can answer (no TTY, CI). */
  ask?: (question: string) => Promise<boolean>;
}

/**
 * Refuses a run the plan found would fail in every task (plan.refusals: a variable the scenario reads
 * that no task has), then one dearer than --max-cost; above ASK_ABOVE_USD asks, or needs --yes or
 * --max-cost. Throws FanoutInputError (exit 2) when refused.
 */
export async function guardCost(plan: LaunchPlan, guard: GuardInput): Promise<void> {
  if (plan.refusals?.length) throw new FanoutInputError(`not starting any task: ${plan.refusals.join("\n")}`);
  if (!plan.cost) return;
  const figure = plan.cost.upTo;
  const shown = `the estimate ${usd(figure)}${plan.cost.upTo > plan.cost.total ? " (every task on on-demand)" : ""}`;
  if (guard.maxCostUsd !== undefined) {
    if (figure > guard.maxCostUsd) throw new FanoutInputError(`not starting any task: ${shown} is above --max-cost ${usd(guard.maxCostUsd)}`);
    return;
  }
  if (figure <= ASK_ABOVE_USD || guard.yes) return;
  if (!guard.ask) throw new FanoutInputError(`not starting any task: ${shown} is above ${usd(ASK_ABOVE_USD)}; add --yes, or --max-cost <usd>, to start it without asking`);
  if (!(await guard.ask(`${shown} is above ${usd(ASK_ABOVE_USD)}. Start the run? [y/N] `))) throw new FanoutInputError("not starting any task: not confirmed");
}
