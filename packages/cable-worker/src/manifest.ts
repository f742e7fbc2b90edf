import { LIVE_PLUGIN } from "./live-keys.js";
import { z } from "zod";
import { envVarName, formatIssues, secretsMap } from "./config.js";
import { payloadFileSchema } from "./payload-slice.js";

/**
 * `runs/<runId>/bundle/run.json`, written by the fan-out runner next to the files it uploads.
 * Every task of a run reads the same manifest, so `startAt` lines all regions up.
 */
export const manifestSchema = z
  .object({
    /** Path of the Artillery script, relative to the bundle root. */
    scenario: z
      .string()
      .min(1)
      .refine((p) => !p.startsWith("/") && !p.split(/[\\/]/).includes(".."), "must be a relative path inside the bundle"),
    /** Epoch milliseconds at which every task starts Artillery (without a barrier). */
    startAt: z.number().int().nonnegative().optional(),
    /**
     * The ready barrier: the task writes its ready marker, then waits up to `waitMs` for the runner's
     * go marker, whose `startAt` replaces the one above. A task the go marker does not list runs no load.
     */
    barrier: z.object({ waitMs: z.number().int().positive(), pollMs: z.number().int().positive().default(1_000) }).strict().optional(),
    /** The task stops itself when the runner's heartbeat has not changed for `staleMs`. */
    heartbeat: z.object({ staleMs: z.number().int().positive(), pollMs: z.number().int().positive().default(15_000) }).strict().optional(),
    /** The task stops Artillery this long after it started, whatever the runner does (--max-duration). */
    maxDurationMs: z.number().int().positive().optional(),
    /** Passed as `artillery run --overrides <json>`. */
    overrides: z.record(z.unknown()).optional(),
    /** Passed as `artillery run -e <environment>`. */
    environment: z.string().min(1).optional(),
    /** Plain (non-secret) variables for Artillery's environment, e.g. for `{{ $env.TARGET }}`. */
    env: z.record(envVarName, z.string()).optional(),
    /** More secret references, merged over CABLE_SECRETS. Names only, never values. */
    secrets: secretsMap.optional(),
    /**
     * The `order: sequence` payloads of the scenario (for `environment`) that each task replaces with
     * its slice (CABLE_SLICE) before Artillery starts (payload-slice.ts); the runner picks them.
     */
    sequencePayloads: z.array(payloadFileSchema).optional(),
  })
  .strict();

export type RunManifest = z.infer<typeof manifestSchema>;

export function parseManifest(text: string, source: string): RunManifest {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new Error(`${source} is not valid JSON: ${(err as Error).message}`);
  }
  const result = manifestSchema.safeParse(json);
  if (!result.success) throw new Error(`${source} is invalid: ${formatIssues(result.error)}`);
  return result.data;
}

/** The plugin that writes the raw-sketch sidecar (artillery-plugin-cable-report), as named in `config.plugins`. */
export const REPORT_PLUGIN = "cable-report";

/**
 * The `--overrides` a task passes: the manifest's, plus the report plugin and the live plugin
 * (live-keys.ts) switched on, so every task leaves a sidecar for the merger and streams its periods
 * to the runner whether or not the scenario lists them. Plugin options the manifest sets win.
 */
export function taskOverrides(overrides: Record<string, unknown> | undefined): Record<string, unknown> {
  const config = isRecord(overrides?.config) ? overrides.config : {};
  const plugins = isRecord(config.plugins) ? config.plugins : {};
  return { ...overrides, config: { ...config, plugins: { [REPORT_PLUGIN]: {}, [LIVE_PLUGIN]: {}, ...plugins } } };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
