// What a run will cost, before it starts, and what it cost once its tasks have stopped: list prices
// from the table in prices.ts (its sources and date travel with every figure), times the task-hours
// Fargate bills (from the image pull to the task's stop, per second, one minute at least).
import type { Arch } from "../backend.js";
import { type ArchPrices, PRICES, type PriceTable, type RatePair, regionExtras } from "./prices.js";

export type CapacityChoice = "on-demand" | "spot" | "spot-only";

/** How long a task is billed beyond its phases, when the run has not happened yet. */
export const BILLED_BEYOND_PHASES = {
  /** Image pull and Artillery's start, up to the go (the report's start section shows the real one). */
  readyS: 120,
  /** After the load: the report's upload and the container's stop. */
  stopS: 60,
} as const;

/** Fargate bills a task for one minute at least. */
const MIN_BILLED_S = 60;

/**
 * The small parts, as assumptions the estimate prints: what a task writes to the logs, and the
 * store requests a task and the runner make (periods every 10 s, the go and heartbeat polls).
 */
export const SMALL_PARTS = {
  logKibPerTaskMinute: 20,
  periodS: 10,
  goPollS: 1,
  heartbeatPollS: 15,
  runnerPollS: 2,
  fixedPutsPerTask: 12,
  fixedGetsPerTask: 8,
} as const;

export interface RegionTasks {
  region: string;
  tasks: number;
  /** Tasks take a public IPv4 address (the stack's public subnets). */
  publicIp: boolean;
}

/** What one task sends and receives over its life, low and high (traffic.ts). */
export interface TaskBytes {
  sent: [number, number];
  received: [number, number];
}

export interface EstimateInput {
  regions: readonly RegionTasks[];
  /** The stack's architecture (x86_64 unless told). */
  arch?: Arch;
  /** Bytes per task; absent: traffic not estimated. */
  traffic?: TaskBytes;
  /** Task CPU units and memory (MiB). */
  cpu: number;
  memoryMiB: number;
  capacity: CapacityChoice;
  /** Seconds a task is billed: ready wait, start delay, phases, stop. */
  taskSeconds: number;
}

export interface RegionCost {
  region: string;
  tasks: number;
  fargate: number;
  /** Fargate if every task fell back from Spot to on-demand (equal to `fargate` without --spot). */
  fargateUpTo: number;
  publicIpv4: number;
  s3: number;
  logs: number;
  /** What the tasks send, priced as egress to the internet, and NAT processing in both directions without public addresses: low and high. */
  traffic: [number, number];
  /** Everything, with traffic at its low end, on the capacity asked for. */
  total: number;
  /** Everything, with traffic at its high end, every task on on-demand. */
  upTo: number;
  /** The table has no prices for the region: priced at its dearest region's. */
  unpriced: boolean;
  /** Figures taken from the default region's (us-east-1) for want of the region's own. */
  borrowed: string[];
  /** --spot in a region the table has no Spot price for: priced at on-demand. */
  spotUnpriced: boolean;
}

export interface CostEstimate {
  regions: RegionCost[];
  total: number;
  /** With --spot (fallback allowed): every task on on-demand. The guard judges this one. */
  upTo: number;
  taskSeconds: number;
  asOf: string;
  currency: "USD";
}

const hourly = (rates: RatePair, vcpu: number, gib: number) => rates.vcpuHour * vcpu + rates.gbHour * gib;

/** The table's rates for a region and architecture, or the dearest region's when it has none (ARM64 without a figure: x86's). */
export function regionRates(region: string, arch: Arch = "x86_64", table: PriceTable = PRICES): { prices: ArchPrices; unpriced: boolean } {
  const known = Object.hasOwn(table.fargate, region) ? table.fargate[region] : undefined;
  const pick = (r: (typeof table.fargate)[string]) => (arch === "arm64" && r.arm64 ? r.arm64 : r.x86_64);
  if (known && (arch === "x86_64" || known.arm64)) return { prices: pick(known), unpriced: false };
  const dearest = Object.values(table.fargate).reduce((a, b) => (hourly(b.x86_64.onDemand.value, 1, 2) > hourly(a.x86_64.onDemand.value, 1, 2) ? b : a));
  return { prices: known ? known.x86_64 : dearest.x86_64, unpriced: true };
}

const GB = 1024 ** 3;

export function estimateCost(input: EstimateInput, table: PriceTable = PRICES): CostEstimate {
  const vcpu = input.cpu / 1024;
  const gib = input.memoryMiB / 1024;
  const seconds = Math.max(MIN_BILLED_S, input.taskSeconds);
  const hours = seconds / 3600;
  const regions = input.regions.map((r): RegionCost => {
    const { prices, unpriced } = regionRates(r.region, input.arch, table);
    const extras = regionExtras(r.region, table);
    const onDemand = hourly(prices.onDemand.value, vcpu, gib) * hours * r.tasks;
    const wantsSpot = input.capacity !== "on-demand";
    const spot = prices.spot ? hourly(prices.spot.value, vcpu, gib) * hours * r.tasks : onDemand;
    const fargate = wantsSpot ? spot : onDemand;
    const fargateUpTo = input.capacity === "spot" ? onDemand : fargate;
    const publicIpv4 = r.publicIp ? extras.publicIpv4Hour.value * hours * r.tasks : 0;
    const s3 = storeRequests(r.tasks, seconds, extras);
    const logs = ((SMALL_PARTS.logKibPerTaskMinute * (seconds / 60) * r.tasks) / (1024 * 1024)) * extras.logsIngestionPerGb.value;
    const traffic = trafficCost(input.traffic, r.publicIp, extras, r.tasks);
    const rest = publicIpv4 + s3 + logs;
    return {
      region: r.region,
      tasks: r.tasks,
      fargate,
      fargateUpTo,
      publicIpv4,
      s3,
      logs,
      traffic,
      total: fargate + rest + traffic[0],
      upTo: fargateUpTo + rest + traffic[1],
      unpriced,
      borrowed: extras.borrowed,
      spotUnpriced: wantsSpot && !prices.spot,
    };
  });
  return {
    regions,
    total: regions.reduce((n, r) => n + r.total, 0),
    upTo: regions.reduce((n, r) => n + r.upTo, 0),
    taskSeconds: seconds,
    asOf: table.asOf,
    currency: "USD",
  };
}

/**
 * Traffic, low and high: what the tasks send leaves AWS for the target (internet egress; to a
 * target in another region it is the cheaper inter-region rate, so this is the upper case); what
 * they receive is free inbound, except through a NAT gateway (no public address), which charges
 * per GB processed both ways.
 */
function trafficCost(bytes: TaskBytes | undefined, publicIp: boolean, extras: ReturnType<typeof regionExtras>, tasks: number): [number, number] {
  if (!bytes) return [0, 0];
  const at = (i: 0 | 1) => {
    const sent = (bytes.sent[i] * tasks) / GB;
    const received = (bytes.received[i] * tasks) / GB;
    return sent * extras.internetEgressPerGb.value + (publicIp ? 0 : (sent + received) * extras.natPerGb.value);
  };
  return [at(0), at(1)];
}

/** S3 requests of a region's tasks and of the runner's live feed over `seconds`. */
function storeRequests(tasks: number, seconds: number, table: Pick<ReturnType<typeof regionExtras>, "s3">): number {
  const p = SMALL_PARTS;
  const puts = tasks * (p.fixedPutsPerTask + seconds / p.periodS);
  const gets = tasks * (p.fixedGetsPerTask + BILLED_BEYOND_PHASES.readyS / p.goPollS + seconds / p.heartbeatPollS + seconds / p.periodS) + seconds / p.runnerPollS;
  return (puts / 1000) * table.s3.putPer1000.value + (gets / 1000) * table.s3.getPer1000.value;
}

/** One task as Fargate billed it: seconds from the image pull to the stop, and the capacity it ran on. */
export interface BilledTask {
  region: string;
  seconds: number;
  capacity: "FARGATE" | "FARGATE_SPOT";
}

export interface BilledCost {
  taskSeconds: number;
  /** Fargate and public IPv4 at list prices; S3 and logs left out (the estimate shows their size). */
  usd: number;
  byRegion: Record<string, { taskSeconds: number; usd: number; tasks: number }>;
  asOf: string;
}

/** What the run's tasks cost, from their billed seconds (each at least a minute) on the capacity each ran on. */
export function billedCost(tasks: BilledTask[], size: { cpu: number; memoryMiB: number; arch?: Arch; publicIp: (region: string) => boolean }, table: PriceTable = PRICES): BilledCost {
  const vcpu = size.cpu / 1024;
  const gib = size.memoryMiB / 1024;
  const byRegion: BilledCost["byRegion"] = {};
  for (const t of tasks) {
    const seconds = t.seconds > 0 ? Math.max(MIN_BILLED_S, t.seconds) : 0;
    const { prices } = regionRates(t.region, size.arch, table);
    const rates = t.capacity === "FARGATE_SPOT" && prices.spot ? prices.spot.value : prices.onDemand.value;
    const usd = (hourly(rates, vcpu, gib) + (size.publicIp(t.region) ? regionExtras(t.region, table).publicIpv4Hour.value : 0)) * (seconds / 3600);
    const entry = (byRegion[t.region] ??= { taskSeconds: 0, usd: 0, tasks: 0 });
    entry.taskSeconds += seconds;
    entry.usd += usd;
    entry.tasks += 1;
  }
  const all = Object.values(byRegion);
  return { taskSeconds: all.reduce((n, r) => n + r.taskSeconds, 0), usd: all.reduce((n, r) => n + r.usd, 0), byRegion, asOf: table.asOf };
}

/** Dollars as people read them: cents, and "<$0.01" rather than $0.00. */
export function usd(value: number): string {
  if (value > 0 && value < 0.005) return "<$0.01";
  return `$${value.toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 })}`;
}
