// The sidecar file: what Artillery's JSON report leaves out (raw DDSketch
// histograms, the test's identity, `ensure` outcomes), written by the plugin
// beside the report and read back by the merger.
import { DDSketch } from "@artilleryio/sketches-js";
import { z } from "zod";

export const SIDECAR_FORMAT = "artillery-cable-report-sidecar";
export const SIDECAR_VERSION = 1;
export const SIDECAR_SUFFIX = ".sketches.json";

/** Artillery creates every histogram with this accuracy (lib/core/ssms.ts); sketches only merge when it matches. */
export const RELATIVE_ACCURACY = 0.01;

/** `report.json` → `report.json.sketches.json`, in the same directory. */
export function sidecarPathFor(reportPath: string): string {
  return reportPath + SIDECAR_SUFFIX;
}

export function isSidecarPath(path: string): boolean {
  return path.endsWith(SIDECAR_SUFFIX);
}

const numberRecord = z.record(z.string(), z.number());

const phaseSchema = z.record(z.string(), z.unknown());

const checkSchema = z.object({
  check: z.string(),
  strict: z.boolean(),
  passed: z.boolean(),
});

export const sidecarSchema = z.object({
  format: z.literal(SIDECAR_FORMAT),
  version: z.literal(SIDECAR_VERSION),
  artilleryVersion: z.string(),
  testRunId: z.string(),
  test: z.object({
    name: z.string(),
    scenarios: z.array(z.string()),
    phases: z.array(phaseSchema),
  }),
  relativeAccuracy: z.literal(RELATIVE_ACCURACY),
  aggregate: z.object({
    counters: numberRecord,
    rates: numberRecord,
    /** Metric name → base64 of `DDSketch.toProto()`. */
    histograms: z.record(z.string(), z.string()),
  }),
  periods: z.array(
    z.object({
      period: z.number(),
      counters: numberRecord,
      rates: numberRecord,
    }),
  ),
  /** null: no `ensure` checks ran in that task. */
  checks: z.array(checkSchema).nullable(),
  /**
   * The generator's CPU: process CPU time (every thread) over wall time, in %
   * of `workers` threads, over the whole run since the first phase started and
   * in its busiest period. Absent in sidecars written before it was recorded.
   */
  generator: z
    .object({
      workers: z.number(),
      cpuMean: z.number().nullable(),
      cpuPeak: z.number().nullable(),
    })
    .optional(),
});

export type Sidecar = z.infer<typeof sidecarSchema>;
export type CheckOutcome = z.infer<typeof checkSchema>;
export type Phase = z.infer<typeof phaseSchema>;

export function encodeSketch(sketch: DDSketch): string {
  return Buffer.from(sketch.toProto()).toString("base64");
}

/** Throws with the metric's name when the bytes are not a DDSketch protobuf. */
export function decodeSketch(name: string, base64: string): DDSketch {
  let sketch: DDSketch;
  try {
    sketch = DDSketch.fromProto(Buffer.from(base64, "base64"));
  } catch (err) {
    throw new Error(`histogram "${name}" is not a DDSketch protobuf (${(err as Error).message})`);
  }
  if (!Number.isFinite(sketch.count) || sketch.count < 0) {
    throw new Error(`histogram "${name}" has an invalid sample count`);
  }
  if (!new DDSketch({ relativeAccuracy: RELATIVE_ACCURACY }).mergeable(sketch)) {
    throw new Error(`histogram "${name}" was not made with relative accuracy ${RELATIVE_ACCURACY}, so it cannot be merged`);
  }
  return sketch;
}
