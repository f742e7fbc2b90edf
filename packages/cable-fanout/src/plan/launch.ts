// The block every run, capacity search and comparison prints before its first RunTask (and all that
// `cable-fanout plan` does): how many users each task will carry, what one task of that size holds
// for this kind of workload, whether the regions' quotas and subnets hold the run, and what it will
// cost; then the guard that refuses a run dearer than --max-cost, or asks above a threshold.
import { plain } from "artillery-plugin-cable-report";
import type { Arch, RegionFacts } from "../backend.js";
import { FanoutInputError } from "../errors.js";
import type { BackendKind } from "../region-names.js";
import { planPayloads } from "../payloads.js";
import { effectiveOverrides, type RunOptions } from "../run/run-options.js";
import { effectiveConfig, loadScenario, type Scenario } from "../scenario.js";
import { checkTaskEnv, missingEnvProblem, type TaskEnvCheck, taskEnvLines } from "../task-env.js";
import { BILLED_BEYOND_PHASES, type CapacityChoice, type CostEstimate, estimateCost, type EstimateInput, type RegionCost, type TaskBytes, usd } from "./estimate.js";
import { fargatePrices, fargateRuns, PRICES, regionExtras } from "./prices.js";
import { countHolding, type DimensionShare, shares, SIZES, taskFrames } from "./sizing.js";
import { FRAME_CAPACITY, TASK_CAPACITY } from "./task-capacity.js";
import { bytes, taskBytes } from "./traffic.js";
import { estimateUsers, UsersUnknown, type UsersEstimate } from "./users.js";

/** The task size a stack is deployed with unless told otherwise (infra's settings). */
export const STACK_DEFAULT_SIZE = { cpu: 4096, memoryMiB: 8192 } as const;

/** Above this estimate, a run asks first (or needs --yes when nobody can answer). */
export const ASK_ABOVE_USD = 25;

/**
 * The most tasks per region a plan without the region's facts lets start: the stack's own network
 * (three /20 subnets, one address per task: infra/src/cdk/network.ts) holds 3 × 4,091. A reached
 * region's preflight judges its free addresses and quotas instead.
 */
export const STACK_TASK_ADDRESSES = 3 * 4_091;

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
  /** --arch: the architecture asked for; the stack's (facts) otherwise. */
  arch?: Arch;
  /** --subnets private: the tasks reach the target through a NAT gateway (a reached stack's facts say it themselves). */
  subnets?: "public" | "private";
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
  /** The dimension that sets the suggested count, and its share of one task now. */
  binding?: DimensionShare;
  /** The architecture the estimate prices. */
  arch: Arch;
  /** What one task sends and receives, low and high. */
  traffic?: TaskBytes;
  /** The cheapest size, architecture and capacity that holds the load, when it is not this run's. */
  cheapest?: Choice;
  /** undefined on the local backend: nothing is billed. */
  cost?: CostEstimate;
  lines: string[];
  /** Why the run would fail in every task (what the scenario reads that no task has): guardCost refuses it, `plan` says it. */
  refusals?: string[];
}

const fmt = (n: number) => Math.round(n).toLocaleString("en-US");
const gib = (mib: number) => `${mib % 1024 === 0 ? mib / 1024 : (mib / 1024).toFixed(1)} GiB`;

/** The run's flags a plan reads (RunOptions' own fields). */
export interface PlanFlags {
  regions: string[];
  count: number;
  spot: boolean;
  spotOnly?: boolean;
  cpu?: number;
  memory?: number;
  arch?: Arch;
  subnets?: "public" | "private";
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
    ...(flags.arch ? { arch: flags.arch } : {}),
    ...(flags.subnets ? { subnets: flags.subnets } : {}),
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
  const arch: Arch = input.arch ?? facts.find((f) => f.arch !== undefined)?.arch ?? "x86_64";
  const lines: string[] = [];
  const total = input.count * input.regions.length;
  lines.push(
    `plan: ${input.count} task(s) in each of ${input.regions.join(", ")} (${fmt(total)} in all)${input.backend === "aws" ? `, ${size.cpu / 1024} vCPU / ${gib(size.memoryMiB)} ${arch} each (${size.from}), ${input.capacity}` : ", local processes"}`,
  );

  let users: UsersEstimate | undefined;
  try {
    users = estimateUsers(input.config, input.scenarios);
  } catch (err) {
    if (!(err instanceof UsersUnknown)) throw err;
    lines.push(`  users: not estimated (${err.message})`);
  }
  const plan: LaunchPlan = { size, arch, lines, ...(users ? { users } : {}) };
  const refusals: string[] = [];
  let suggestedLine: number | undefined;
  if (input.env) {
    lines.push(...taskEnvLines(input.env));
    const missing = missingEnvProblem(input.env, input.backend);
    if (missing) refusals.push(missing);
  }
  if (users) {
    const stay = users.flowSeconds === undefined ? "a user's stay is not known, so every arrival is counted as staying" : `a user stays about ${fmt(users.flowSeconds)} s`;
    const sends = users.sendsPerUserSecond > 0 ? `, each sending ${rate(users.sendsPerUserSecond)} message(s)/s` : "";
    lines.push(`  users: about ${fmt(users.peak)} at once per task at the peak (${fmt(users.arrivals)} arrive over ${fmt(users.phasesSeconds)} s; ${stay}), ${fmt(users.peak * total)} in all; each user ${users.does}${sends} (sized as the ${users.workload} workload)`);
    lines.push(...receiveLines(users, total));
    if (users.functions.length > 0) lines.push(`  assumed: the flow's functions (${users.functions.map((f) => named(f)).join(", ")}) take no time and leave its pacing as written; one that holds users back and releases them together (a wave) makes bursts the plan does not see`);
    if (users.unpaced) lines.push("  sends: a flow sends with no think or listen between its sends, only waits for answers: as fast as the server answers, so its rate (and the CPU it takes) is not known before the run; sized by its users and arrivals alone");
    // A local task is a process on this machine: what a Fargate task holds says nothing of it.
    const dims = input.backend === "aws" ? shares(users, total, size.cpu, size.memoryMiB) : [];
    if (input.backend === "aws" && dims.length === 0) {
      lines.push(`  one task: no measured capacity for ${users.workload} at ${size.cpu / 1024} vCPU (${TASK_CAPACITY.doc})`);
    } else if (dims.length > 0) {
      const binding = dims[0];
      plan.binding = binding;
      plan.holds = dims.find((d) => d.dimension === "users")?.holds;
      plan.suggestedCount = countHolding(input.count, binding);
      lines.push(`  one ${size.cpu / 1024} vCPU task holds ${dims.filter((d) => d.dimension !== "work").map(holdsText).join(", ")} (measured ${TASK_CAPACITY.measuredOn}, ${FRAME_CAPACITY.measuredOn}: ${TASK_CAPACITY.criterion}; ${TASK_CAPACITY.doc})${arch === "arm64" ? "; on ARM64 as on x86, assumed: ARM64 is not measured here" : ""}`);
      lines.push(`  ${binding.dimension === "work" ? `${(binding.parts ?? []).map((p) => PART[p]).join(" and ")} together bind` : BINDS[binding.dimension]}: ${verdict(binding)}`);
      if (plan.suggestedCount !== input.count) {
        const factor = input.count / plan.suggestedCount;
        // Its cost is added once the run is priced, below (an AWS run; a local one has no suggestion).
        suggestedLine = lines.push(`  suggested: --count ${plan.suggestedCount} per region carries the same ${fmt(users.peak * input.count)} users a region gets, each task's arrivals ×${Number(factor.toFixed(3)).toLocaleString("en-US")} (--overrides on config.phases)`) - 1;
      }
    }
  }

  if (input.backend === "aws") {
    const phasesKnown = input.phasesMs !== undefined;
    const taskSeconds = BILLED_BEYOND_PHASES.readyS + input.startDelayMs / 1000 + (input.phasesMs ?? input.maxDurationMs) / 1000 + BILLED_BEYOND_PHASES.stopS;
    const publicIp = (region: string) => input.facts.get(region)?.publicIp ?? input.subnets !== "private";
    const tls = typeof input.config.target === "string" && /^(wss|https):/i.test(input.config.target);
    const protocol = isRecord(input.config.cable) && input.config.cable.protocol === "pusher" ? "pusher" : "actioncable";
    plan.traffic = users ? taskBytes({ users, framesPerSecond: taskFrames(users, total), protocol, tls }) : undefined;
    const runs = input.runsInAll ?? 1;
    const estimateAt = (choice: Omit<Choice, "cost" | "upTo">) =>
      scaleCost(
        estimateCost({
          regions: input.regions.map((region) => ({ region, tasks: choice.count, publicIp: publicIp(region) })),
          cpu: choice.cpu,
          memoryMiB: choice.memoryMiB,
          arch: choice.arch,
          capacity: choice.capacity,
          taskSeconds,
          ...(plan.traffic ? { traffic: scaleBytes(plan.traffic, input.count / choice.count) } : {}),
        } satisfies EstimateInput),
        runs,
      );
    const cost = estimateAt({ count: input.count, cpu: size.cpu, memoryMiB: size.memoryMiB, arch, capacity: input.capacity });
    plan.cost = cost;
    const holding = plan.suggestedCount === undefined ? cost : estimateAt({ count: plan.suggestedCount, cpu: size.cpu, memoryMiB: size.memoryMiB, arch, capacity: input.capacity });
    if (suggestedLine !== undefined) lines[suggestedLine] += `: about ${usd(holding.total)}`;
    if (users && plan.binding) {
      const cheapest = cheapestHolding(users, input, estimateAt);
      // Against this size at the count that holds the load: the run as asked may not hold it at all.
      const same = cheapest && cheapest.cpu === size.cpu && cheapest.arch === arch && cheapest.capacity === input.capacity;
      if (cheapest && !same && cheapest.cost < holding.total) {
        plan.cheapest = cheapest;
        lines.push(`  cheapest that holds it: ${choiceFlags(cheapest)}: about ${usd(cheapest.cost)}${cheapest.upTo > cheapest.cost ? ` (up to ${usd(cheapest.upTo)} if every task falls back to on-demand)` : ""}${cheapest.arch === "arm64" ? "; ARM64 needs a stack deployed with -c arch=arm64, and holds what x86 holds by assumption (not measured)" : ""}`);
      }
    }
    for (const region of input.regions) lines.push(`  ${regionLine(region, input, size.cpu, cost)}`);
    const parts = (pick: (r: CostEstimate["regions"][number]) => number) => usd(cost.regions.reduce((n, r) => n + pick(r), 0));
    const upTo = usd(cost.upTo) !== usd(cost.total) ? ` (up to ${usd(cost.upTo)}${input.capacity === "spot" ? " if every task falls back to on-demand" : ""}${plan.traffic ? ", traffic at its high end" : ""})` : "";
    const inAll = runs > 1 ? `, ${runs} runs like this one in all` : "";
    const spotNote = input.capacity === "on-demand" ? "" : ` on Fargate Spot${input.capacity === "spot" ? " (falling back to on-demand where Spot has no room)" : ""}`;
    const duration = phasesKnown ? `${BILLED_BEYOND_PHASES.readyS} s to be ready, the phases, ${BILLED_BEYOND_PHASES.stopS} s to stop` : `the phases cannot be read, so each task is priced for --max-duration (${fmt(input.maxDurationMs / 60_000)} min), a placeholder: the real run may be far shorter`;
    lines.push(
      `  cost: about ${usd(cost.total)}${spotNote}${upTo}${inAll} for about ${fmt(cost.taskSeconds / 60)} min a task (${duration}): Fargate ${parts((r) => r.fargate)}, public IPv4 ${parts((r) => r.publicIpv4)}, S3 ${parts((r) => r.s3)}, logs ${parts((r) => r.logs)}, traffic ${plan.traffic ? range(parts((r) => r.traffic[0]), parts((r) => r.traffic[1])) : "not estimated"}; list prices as of ${cost.asOf} (packages/cable-fanout/src/plan/prices.ts)`,
    );
    lines.push(...priceNotes(input, cost, arch));
    lines.push(trafficLine(plan.traffic, input.regions, publicIp));
    const unchecked = [...new Set([...(input.unreached ? [input.unreached] : []), ...[...input.facts].flatMap(([region, f]) => f.unchecked.map((u) => `${region}: ${u}`))])];
    if (unchecked.length > 0) lines.push(`  not checked: ${unchecked.join("; ")}`);
    const unreachedRegions = input.regions.filter((r) => !input.facts.has(r));
    if (unreachedRegions.length > 0 && input.count > STACK_TASK_ADDRESSES) {
      refusals.push(`--count ${fmt(input.count)} is more tasks than a region's network holds: the stack's own VPC has ${fmt(STACK_TASK_ADDRESSES)} task addresses (three /20 subnets, one address per task), and Fargate's default vCPU quota is far below that; split the load over more regions or make each task carry more (${unreachedRegions.join(", ")} not reached, so neither was read)`);
    }
  }
  if (refusals.length > 0) plan.refusals = refusals;
  return plan;
}

/** A size, architecture, capacity and count, with its cost. */
export interface Choice {
  count: number;
  cpu: number;
  memoryMiB: number;
  arch: Arch;
  capacity: CapacityChoice;
  cost: number;
  upTo: number;
}

/**
 * The cheapest of every Fargate size, architecture and capacity the table prices in all the run's
 * regions, each at the count that holds the load (its binding share brought to 1).
 */
function cheapestHolding(users: UsersEstimate, input: PlanInput, estimateAt: (c: Omit<Choice, "cost" | "upTo">) => CostEstimate): Choice | undefined {
  const total = input.count * input.regions.length;
  const priced = (arch: Arch, spot: boolean) =>
    input.regions.every((r) => {
      const p = fargatePrices(r)?.[arch];
      return p && (!spot || p.spot);
    });
  let best: Choice | undefined;
  for (const s of SIZES) {
    const binding = shares(users, total, s.cpu, s.memoryMiB)[0];
    if (!binding) continue;
    const count = countHolding(input.count, binding);
    for (const arch of ["x86_64", "arm64"] as const) {
      for (const capacity of ["on-demand", "spot"] as const) {
        if (!priced(arch, capacity === "spot")) continue;
        const e = estimateAt({ count, cpu: s.cpu, memoryMiB: s.memoryMiB, arch, capacity });
        if (!best || e.total < best.cost) best = { count, cpu: s.cpu, memoryMiB: s.memoryMiB, arch, capacity, cost: e.total, upTo: e.upTo };
      }
    }
  }
  return best;
}

const range = (low: string, high: string) => (low === high ? low : `${low}–${high}`);

/** A name the scenario wrote, as one printable line for the terminal (no escape sequence, no line break). */
const named = (text: string) => plain(text, 120);

const choiceFlags = (c: Choice) => `--count ${c.count} --cpu ${c.cpu} --memory ${c.memoryMiB}${c.arch === "arm64" ? " --arch arm64" : ""}${c.capacity === "spot" ? " --spot" : ""}`;

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);
const rate = (n: number) => (n >= 10 ? fmt(n) : Number(n.toFixed(2)).toLocaleString("en-US"));

const BINDS: Record<Exclude<DimensionShare["dimension"], "work">, string> = {
  users: "users at once bind",
  frames: "frames received bind",
  arrivals: "arrivals bind",
  publishes: "HTTP publishes bind",
};
const PART: Record<DimensionShare["dimension"], string> = { users: "users", frames: "frames received", arrivals: "arrivals", publishes: "HTTP publishes", work: "work" };

function holdsText(d: DimensionShare): string {
  if (d.dimension === "users") return `about ${fmt(d.holds)} users at once`;
  if (d.dimension === "frames") return `about ${fmt(d.holds)} broadcast frames received a second`;
  if (d.dimension === "publishes") return `about ${fmt(d.holds)} HTTP publishes a second`;
  return `about ${fmt(d.holds)} arrivals a second`;
}

function verdict(d: DimensionShare): string {
  if (d.dimension === "work") return `each task's work ${d.share > 1 ? "would take" : "takes"} ${fmt(d.share * 100)}% of what it holds (the measured shares added)${d.share > 1 ? ": the generator, not the server, would set the figures" : ""}`;
  const unit = { users: "users at once", frames: "frames a second", arrivals: "arrivals a second", publishes: "HTTP publishes a second" }[d.dimension];
  const what = `${fmt(d.demand)} ${unit}`;
  return d.share > 1
    ? `each task would carry ${what}, ${fmt(d.share * 100)}% of what it holds: the generator, not the server, would set the figures`
    : `each task carries ${what}, ${fmt(d.share * 100)}% of what it holds`;
}

/** What a task's users receive: the broadcasts' frames per channel the script names, and what it cannot say. */
function receiveLines(users: UsersEstimate, tasksInAll: number): string[] {
  const lines: string[] = [];
  const frames = taskFrames(users, tasksInAll);
  if (frames > 0) {
    const by = users.audiences
      .map((a) => `${named(a.channel)}: ${rate(a.sendsPerUserSecond * users.peak * tasksInAll)} sends/s in all, heard by ${fmt(a.subscribedShare * users.peak)} users a task${a.spread === "per-user" ? " (each their own)" : a.spread > 1 ? ` spread over ${fmt(a.spread)} channels` : ""}`)
      .join("; ");
    lines.push(`  receives: about ${fmt(frames)} broadcast frames a second per task at the peak (${by}${users.echoesPerUserSecond > 0 ? `; echoes ${rate(users.echoesPerUserSecond * users.peak)}/s` : ""}); assumed: a perform other than echo is broadcast to the channel's subscribers`);
  }
  if (users.unreadable.length > 0) {
    lines.push(`  receives: who hears ${users.unreadable.map((c) => JSON.stringify(named(c))).join(", ")} cannot be read from the script (picked at run time, or streamed by the app): sized by the measured ${users.workload} workload`);
  }
  return lines;
}

/** Prices the table borrows or lacks, said once. */
function priceNotes(input: PlanInput, cost: CostEstimate, arch: Arch): string[] {
  const out: string[] = [];
  const notRun = input.regions.filter((r) => !fargateRuns(r));
  if (notRun.length > 0) out.push(`  not in AWS's list of Fargate regions (${PRICES.fargateRegions.asOf}): ${notRun.join(", ")}`);
  const unpriced = cost.regions.filter((r) => r.unpriced).map((r) => r.region);
  if (unpriced.length > 0) out.push(`  no ${arch} Fargate price in the table for ${unpriced.join(", ")}: priced at ${arch === "arm64" ? "its x86 rate, or " : ""}the dearest region's rates`);
  const spotUnpriced = cost.regions.filter((r) => r.spotUnpriced && !r.unpriced).map((r) => r.region);
  if (spotUnpriced.length > 0) out.push(`  no Spot price in the table for ${spotUnpriced.join(", ")}: priced at on-demand, an upper bound`);
  const borrowed = cost.regions.filter((r) => r.borrowed.length > 0 && r.region !== "us-east-1");
  if (borrowed.length > 0) out.push(`  priced at us-east-1's rates for want of the region's own: ${borrowed.map((r) => `${r.region} (${r.borrowed.join(", ")})`).join("; ")}`);
  return out;
}

function trafficLine(traffic: TaskBytes | undefined, regions: string[], publicIp: (region: string) => boolean): string {
  const e = regionExtras(regions[0]);
  const egress = `${usd(e.internetEgressPerGb.value)}/GB to the internet, ${usd(e.interRegionPerGb.value)}/GB to another region`;
  const nat = regions.filter((r) => !publicIp(r));
  const natText = nat.length > 0 ? `; ${nat.join(", ")} without public addresses: both ways through a NAT gateway at ${usd(regionExtras(nat[0]).natPerGb.value)}/GB processed (its hourly charge is the VPC's own)` : "";
  if (!traffic) return `  traffic: not estimated (a user's stay is not known); what the tasks send is billed as egress (${egress})${natText}`;
  return `  traffic per task: sends ${bytes(traffic.sent[0])}–${bytes(traffic.sent[1])}, receives ${bytes(traffic.received[0])}–${bytes(traffic.received[1])} (frames × their size as the script writes them, alone or packed in packets); sending is billed as egress (${egress}), receiving is free${natText}`;
}

/** A task's bytes when its region's users are spread over `ratio` times fewer tasks (count ÷ ratio): the same users each, so bytes scale with users per task. */
function scaleBytes(b: TaskBytes, ratio: number): TaskBytes {
  return { sent: [b.sent[0] * ratio, b.sent[1] * ratio], received: [b.received[0] * ratio, b.received[1] * ratio] };
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
    arch: plan.arch,
    ...(plan.binding ? { binding: plan.binding.dimension } : {}),
    ...(plan.traffic ? { traffic: { sent: plan.traffic.sent.map(Math.round) as [number, number], received: plan.traffic.received.map(Math.round) as [number, number] } } : {}),
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
  const shown = `the estimate ${usd(figure)}${plan.cost.upTo > plan.cost.total ? " (its high end: every task on on-demand, traffic at its most)" : ""}`;
  if (guard.maxCostUsd !== undefined) {
    if (figure > guard.maxCostUsd) throw new FanoutInputError(`not starting any task: ${shown} is above --max-cost ${usd(guard.maxCostUsd)}`);
    return;
  }
  if (figure <= ASK_ABOVE_USD || guard.yes) return;
  if (!guard.ask) throw new FanoutInputError(`not starting any task: ${shown} is above ${usd(ASK_ABOVE_USD)}; add --yes, or --max-cost <usd>, to start it without asking`);
  if (!(await guard.ask(`${shown} is above ${usd(ASK_ABOVE_USD)}. Start the run? [y/N] `))) throw new FanoutInputError("not starting any task: not confirmed");
}
