// `results/<runId>/fanout.json`: what was run where, and how each task ended. `collect` and `stop`
// read it back; the merger ignores top-level files, so it sits beside report.md.
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { z } from "zod";
import { FanoutInputError } from "./errors.js";

export const RECORD_FILE = "fanout.json";

const taskOutcomeSchema = z.object({
  region: z.string(),
  taskId: z.string(),
  /** ECS task ARN or the local ref; absent when the task never started. */
  ref: z.string().optional(),
  state: z.enum(["ok", "ensure-failed", "failed"]),
  reason: z.string().nullable(),
  log: z.string().optional(),
  startLagMs: z.number().nullable().optional(),
});

export const recordSchema = z.object({
  format: z.literal("cable-fanout-run"),
  version: z.literal(1),
  runId: z.string(),
  backend: z.enum(["aws", "local"]),
  /** The local backend's store directory. */
  store: z.string().optional(),
  scenario: z.string(),
  regions: z.array(z.string()),
  count: z.number().int().positive(),
  startAt: z.number(),
  /** Refs of every task started, per region, so `stop` can reach them. */
  started: z.record(z.string(), z.array(z.string())),
  /** Filled in when the results are collected. */
  tasks: z.array(taskOutcomeSchema).default([]),
  regionFailures: z.record(z.string(), z.array(z.string())).default({}),
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
