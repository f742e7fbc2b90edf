// report.md's "Cost" section: the estimate the run was started on, and what its tasks were billed
// for once they stopped (Fargate and public IPv4 at the table's list prices), side by side.
import type { TaskSnapshot } from "../backend.js";
import type { RunRecord } from "../run/record.js";
import { billedCost, usd } from "./estimate.js";

type Billed = NonNullable<RunRecord["billed"]>;

/**
 * What the run's tasks were billed, from the run loop's last look at each (its pull start and stop);
 * undefined without an estimate to take the task size from, or without a task that pulled its image.
 */
export function billedFromSnapshots(record: Pick<RunRecord, "estimate">, snapshots: Map<string, TaskSnapshot[]>, now: number): Billed | undefined {
  const estimate = record.estimate;
  if (!estimate) return undefined;
  const tasks = [...snapshots].flatMap(([region, list]) =>
    list.flatMap((t) => (t.billing?.pullStartedAt === undefined ? [] : [{ region, capacity: t.billing.capacity, seconds: ((t.billing.stoppedAt ?? now) - t.billing.pullStartedAt) / 1000 }])),
  );
  if (tasks.length === 0) return undefined;
  const billed = billedCost(tasks, { cpu: estimate.cpu, memoryMiB: estimate.memoryMiB, arch: estimate.arch ?? "x86_64", publicIp: () => estimate.publicIp ?? true });
  const round = (n: number) => Math.round(n * 100) / 100;
  return {
    taskSeconds: Math.round(billed.taskSeconds),
    usd: round(billed.usd),
    pricesAsOf: billed.asOf,
    byRegion: Object.fromEntries(Object.entries(billed.byRegion).map(([region, r]) => [region, { tasks: r.tasks, taskSeconds: Math.round(r.taskSeconds), usd: round(r.usd) }])),
  };
}

const minutes = (seconds: number) => `${(seconds / 60).toLocaleString("en-US", { maximumFractionDigits: 1 })} min`;

/** The section, or "" for a run without an estimate (the local backend). */
export function renderCostSection(record: Pick<RunRecord, "estimate" | "billed" | "count" | "regions">): string {
  const e = record.estimate;
  if (!e) return "";
  const tasks = record.count * record.regions.length;
  const lines = ["", "### Cost", "", "| | Tasks | Task time | Cost |", "|---|---|---|---|"];
  // The high end: every Spot task fallen back to on-demand, the traffic at its most.
  const upTo = usd(e.upToUsd) !== usd(e.usd) ? ` (up to ${usd(e.upToUsd)} if Spot tasks fall back to on-demand and the traffic is at its most)` : "";
  lines.push(`| Estimate before the run | ${tasks} | ${tasks} × ${minutes(e.taskSeconds)} | ${usd(e.usd)}${upTo} |`);
  const b = record.billed;
  if (b) {
    const started = Object.values(b.byRegion).reduce((n, r) => n + r.tasks, 0);
    lines.push(`| Billed: Fargate and public IPv4 | ${started} | ${minutes(b.taskSeconds)} in all | ${usd(b.usd)} |`);
  } else {
    lines.push("| Billed | – | not known (no task's pull and stop times were seen) | – |");
  }
  lines.push(
    "",
    `${e.cpu / 1024} vCPU / ${e.memoryMiB / 1024} GiB ${e.arch ?? "x86_64"} tasks, list prices as of ${e.pricesAsOf} (no Savings Plans, no free tier). Fargate bills from the image pull to the task's stop, a minute at least; S3 requests, logs and traffic are left out of the billed figure (the estimate counts S3, logs and the traffic's range).`,
  );
  return `${lines.join("\n")}\n`;
}
