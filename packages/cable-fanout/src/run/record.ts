// `results/<runId>/fanout.json`: what was run where, and how each task ended. `collect` and `stop`
// read it back; the merger ignores top-level files, so it sits beside report.md.
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { runnerStopSchema } from "cable-worker/contract";
import { z } from "zod";
import { FanoutInputError } from "../errors.js";

export const RECORD_FILE = "fanout.json";

const taskOutcomeSchema = z.object({
  region: z.string(),
  taskId: z.string(),
  /** ECS task ARN or the local ref; absent when the task never started. */
  ref: z.string().optional(),
  /**
   * "missed-barrier": not ready when the run started, so it ran no load (with --min-ready below 100%).
   * "aborted": stopped by the run's --abort-on; its figures up to then count.
   */
  state: z.enum(["ok", "ensure-failed", "failed", "missed-barrier", "aborted"]),
  reason: z.string().nullable(),
  log: z.string().optional(),
  startLagMs: z.number().nullable().optional(),
});

export const barrierRecordSchema = z.object({
  outcome: z.enum(["go", "failed", "cancelled"]),
  minReadyPct: z.number(),
  readyTimeoutMs: z.number(),
  expected: z.number().int(),
  ready: z.number().int(),
  /** From the first RunTask to the go (or failure) decision. */
  waitedMs: z.number(),
  reason: z.string().optional(),
  /** Per region, the task ids that were not ready at the go: they ran no load. */
  missed: z.record(z.string(), z.array(z.string())).default({}),
  /** Per region, the tasks that were ready at the go: those that run the load (absent in records before it). */
  readyByRegion: z.record(z.string(), z.number().int()).optional(),
});
export type BarrierRecord = z.infer<typeof barrierRecordSchema>;

export const recordSchema = z.object({
  format: z.literal("cable-fanout-run"),
  version: z.literal(1),
  runId: z.string(),
  backend: z.enum(["aws", "local"]),
  /** The local backend's store directory. */
  store: z.string().optional(),
  scenario: z.string(),
  /**
   * The server loaded (--target, else the scenario's config.target under -e and --overrides): scheme,
   * host, port and path only (cable-report's redactTarget: no credentials, query or fragment). null:
   * a template only the tasks resolve, or not a URL. Absent in records before it was recorded.
   */
  target: z.string().nullable().optional(),
  regions: z.array(z.string()),
  count: z.number().int().positive(),
  /** The names of the run's secrets (never a value): the merge redacts the values this machine holds under them (collect.ts). */
  secrets: z.array(z.string()).default([]),
  /** When the runner made this record (this machine's clock): `status` shows a run's age from it. */
  createdAt: z.number().optional(),
  /**
   * --detach: the runner left the run once the go was given; each region's store holds this record
   * (detach/store-record.ts) for `attach`, `collect`, `stop` and `status` on any machine.
   */
  detached: z
    .object({
      /** When the runner left (epoch ms). */
      at: z.number(),
      /** The tasks stop themselves this long after they start (they watch no heartbeat). */
      maxDurationMs: z.number().int().positive(),
      /** The phases' length, when known (progress), and the most phases a task runs (the live feed). */
      phasesMs: z.number().nonnegative().optional(),
      phaseCount: z.number().int().nonnegative().optional(),
      /** Per region, where its tasks write their live files (for people: attach finds the stores itself). */
      live: z.record(z.string(), z.string()).default({}),
      /**
       * What `attach --live`'s page says of the scenario (as the watching runner's page does): its
       * file's name, the phases and config.cable as the tasks run them, the scenarios' names.
       * Shown as text only; absent in records before it.
       */
      page: z
        .object({
          title: z.string().max(200),
          phases: z.array(z.record(z.string(), z.unknown())).max(1_000),
          cable: z.record(z.string(), z.unknown()),
          scenarios: z.array(z.string().max(200)).max(1_000),
        })
        .optional(),
    })
    .optional(),
  /**
   * --history: where the run is kept and judged (run/history.ts), and what makes it comparable,
   * fixed when it started so that a later `collect` writes the same record.
   */
  history: z
    .object({
      location: z.string().max(1_000),
      /** The band's branch; null: every branch. */
      bandBranch: z.string().max(200).nullable(),
      kind: z.enum(["run", "compare", "capacity"]),
      label: z.string().max(200).nullable(),
      /** The scenario relative to its project (the bundle root); absent in records before it. */
      file: z.string().max(1_000).optional(),
      scenarioHash: z.string().regex(/^[0-9a-f]{64}$/),
      branch: z.string().max(200).nullable(),
      commit: z.string().max(200).nullable(),
    })
    .optional(),
  /** The common start from the go marker (the store's clock); null until the barrier let the run go. */
  startAt: z.number().nullable(),
  /** How the ready barrier went. */
  barrier: barrierRecordSchema.optional(),
  /** Refs of every task started, per region, so `stop` can reach them. */
  started: z.record(z.string(), z.array(z.string())),
  /**
   * Per region and task id, why the runner stopped the task (the first reason counts): what the
   * task saw as a stop signal, and all that is known of a task killed before it wrote its status.
   * Absent from records before it, which collect reads as an --abort-on stop of every task when the
   * run was aborted, and as no stop otherwise (collect.ts runnerStop).
   */
  stops: z.record(z.string(), z.record(z.string(), runnerStopSchema)).optional(),
  /** Filled in when the results are collected. */
  tasks: z.array(taskOutcomeSchema).default([]),
  regionFailures: z.record(z.string(), z.array(z.string())).default({}),
  /** Per region, what the report should say that is no failure (tasks on FARGATE because Spot had none). */
  notices: z.record(z.string(), z.array(z.string())).default({}),
  /** What stopped the run early (--abort-on), when, with which figure. */
  aborted: z.object({ condition: z.string(), at: z.number(), figure: z.string() }).optional(),
  /** The plan's cost estimate before the first RunTask (AWS runs; plan/launch.ts estimateRecord). */
  estimate: z
    .object({
      usd: z.number(),
      upToUsd: z.number(),
      taskSeconds: z.number(),
      cpu: z.number(),
      memoryMiB: z.number(),
      pricesAsOf: z.string(),
      byRegion: z.record(z.string(), z.number()),
      /** Tasks take a public IPv4 address (billed by the hour). */
      publicIp: z.boolean().optional(),
      peakUsersPerTask: z.number().optional(),
      workload: z.string().optional(),
      holdsPerTask: z.number().optional(),
      suggestedCount: z.number().optional(),
      /** The stack's architecture the estimate priced; absent before Graviton: x86_64. */
      arch: z.enum(["x86_64", "arm64"]).optional(),
      /** The dimension that set the suggested count (users at once, broadcast frames a second, arrivals a second, or frames and arrivals together). */
      binding: z.enum(["users", "frames", "arrivals", "publishes", "work"]).optional(),
      /** What one task sends and receives, low and high (bytes). */
      traffic: z.object({ sent: z.tuple([z.number(), z.number()]), received: z.tuple([z.number(), z.number()]) }).optional(),
    })
    .optional(),
  /** Written when results are collected: what Fargate billed, from each task's pull start to its stop, at list prices (plan/estimate.ts billedCost). */
  billed: z
    .object({
      taskSeconds: z.number(),
      usd: z.number(),
      pricesAsOf: z.string(),
      byRegion: z.record(z.string(), z.object({ tasks: z.number(), taskSeconds: z.number(), usd: z.number() })),
    })
    .optional(),
  /** Written when results are collected: when each region's tasks really started (start-report.ts). */
  start: z.unknown().optional(),
});

export type RunRecord = z.infer<typeof recordSchema>;
export type TaskOutcome = z.infer<typeof taskOutcomeSchema>;

export function readRecord(runDir: string): RunRecord | undefined {
  const file = path.join(runDir, RECORD_FILE);
  if (!existsSync(file)) return undefined;
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(file, "utf8"));
  } catch (err) {
    throw new FanoutInputError(`${file}: not valid JSON: ${(err as Error).message}`);
  }
  const parsed = recordSchema.safeParse(json);
  if (!parsed.success) throw new FanoutInputError(`${file}: not a cable-fanout run record: ${parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`);
  return parsed.data;
}
