import { z } from "zod";
import { SEGMENT_PATTERN } from "./layout.js";
import { type TaskSlice, parseSlice } from "./payload-slice.js";

/**
 * The worker's whole contract with whoever starts it (ECS RunTask, or the fan-out runner's local
 * backend) is these environment variables. Nothing secret is ever among them: CABLE_SECRETS holds
 * only the *names* of SSM parameters / Secrets Manager secrets, CABLE_SECRET_ENV only the names of
 * the variables that hold the local backend's secrets (their values are this machine's own).
 */
export interface WorkerConfig {
  runId: string;
  region: string;
  /** Undefined means "ask ECS, or make one up" (see task-id.ts). */
  taskId: string | undefined;
  /** `s3://bucket[/prefix]`, `file:///dir` or a plain directory path. */
  store: string;
  /** Env var name → SSM parameter name/ARN or Secrets Manager ARN. */
  secrets: Record<string, string>;
  /** Variables of the worker's own environment that hold secrets (CABLE_SECRET_ENV: the local backend's `--secret NAME`). */
  envSecrets: string[];
  /** Scratch space for the bundle and the results before upload. */
  workDir: string;
  /** How long the worker may wait for the manifest's startAt before it gives up. */
  maxStartWaitMs: number;
  /** A task stopping itself (runner gone, --max-duration): how long Artillery has after SIGTERM before SIGKILL. */
  selfStopGraceMs: number;
  /** This task's slice of the run's sequence payloads; undefined: every payload read whole. */
  slice: TaskSlice | undefined;
}

const segment = (what: string) =>
  z.string({ required_error: `${what} is required` }).regex(SEGMENT_PATTERN, `${what} must match ${SEGMENT_PATTERN}`);

export const envVarName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "must be a valid environment variable name");
export const secretsMap = z.record(envVarName, z.string().min(1, "must name a parameter or secret"));

const schema = z.object({
  CABLE_RUN_ID: segment("CABLE_RUN_ID"),
  CABLE_REGION: segment("CABLE_REGION"),
  CABLE_TASK_ID: segment("CABLE_TASK_ID").optional(),
  CABLE_STORE: z.string({ required_error: "CABLE_STORE is required" }).min(1, "CABLE_STORE is required"),
  CABLE_SECRETS: z
    .string()
    .optional()
    .transform((text, ctx) => {
      if (text === undefined || text.trim() === "") return {};
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch {
        ctx.addIssue({ code: z.ZodIssueCode.custom, message: "CABLE_SECRETS is not valid JSON" });
        return z.NEVER;
      }
      const result = secretsMap.safeParse(parsed);
      if (!result.success) {
        ctx.addIssue({ code: z.ZodIssueCode.custom, message: `CABLE_SECRETS: ${formatIssues(result.error)}` });
        return z.NEVER;
      }
      return result.data;
    }),
  CABLE_SECRET_ENV: z
    .string()
    .optional()
    .transform((text, ctx) => {
      const names = (text ?? "").split(",").map((n) => n.trim()).filter(Boolean);
      const bad = names.find((n) => !envVarName.safeParse(n).success);
      if (bad !== undefined) {
        ctx.addIssue({ code: z.ZodIssueCode.custom, message: `CABLE_SECRET_ENV: "${bad}" is not an environment variable name` });
        return z.NEVER;
      }
      return names;
    }),
  CABLE_SLICE: z
    .string()
    .optional()
    .transform((text, ctx) => {
      if (text === undefined || text.trim() === "") return undefined;
      try {
        return parseSlice(text);
      } catch (err) {
        ctx.addIssue({ code: z.ZodIssueCode.custom, message: `CABLE_SLICE ${(err as Error).message}` });
        return z.NEVER;
      }
    }),
  CABLE_WORK_DIR: z.string().min(1).optional(),
  CABLE_MAX_START_WAIT_MS: z.coerce.number().int().nonnegative().default(10 * 60_000),
  // Under ECS's own stopTimeout (60 s), so that the upload after a SIGKILL still happens in time.
  CABLE_SELF_STOP_GRACE_MS: z.coerce.number().int().positive().default(30_000),
});

export class ConfigError extends Error {}

export function formatIssues(error: z.ZodError): string {
  return error.issues.map((i) => (i.path.length ? `${i.path.join(".")}: ${i.message}` : i.message)).join("; ");
}

export function readWorkerConfig(env: NodeJS.ProcessEnv, defaultWorkDir: string): WorkerConfig {
  const result = schema.safeParse(env);
  if (!result.success) throw new ConfigError(`invalid worker environment: ${formatIssues(result.error)}`);
  const e = result.data;
  return {
    runId: e.CABLE_RUN_ID,
    region: e.CABLE_REGION,
    taskId: e.CABLE_TASK_ID,
    store: e.CABLE_STORE,
    secrets: e.CABLE_SECRETS,
    envSecrets: e.CABLE_SECRET_ENV,
    workDir: e.CABLE_WORK_DIR ?? defaultWorkDir,
    maxStartWaitMs: e.CABLE_MAX_START_WAIT_MS,
    selfStopGraceMs: e.CABLE_SELF_STOP_GRACE_MS,
    slice: e.CABLE_SLICE,
  };
}
