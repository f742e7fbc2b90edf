// DDSketch to and from base64 protobuf: how every file of the project carries a histogram.
import { DDSketch } from "@artilleryio/sketches-js";
import { quoteName, sketchProblem, TASK_FILE_LIMITS } from "./task-file.js";

/** Artillery creates every histogram with this accuracy (lib/core/ssms.ts); sketches only merge when it matches. */
export const RELATIVE_ACCURACY = 0.01;

const REFERENCE = new DDSketch({ relativeAccuracy: RELATIVE_ACCURACY });
/** Values whose keys tell two mappings apart: the same gamma with another offset or interpolation maps them elsewhere. */
const PROBES = [0.5, 1, 1_000];

export function encodeSketch(sketch: { toProto(): Uint8Array }): string {
  return Buffer.from(sketch.toProto()).toString("base64");
}

/**
 * Throws with the metric's name when the bytes are not a DDSketch protobuf, or not one the merge
 * can take safely (task-file.ts sketchProblem): a sketch comes from a task file, and bins far apart
 * would make a merge allocate every bin between them.
 */
export function decodeSketch(name: string, base64: string): DDSketch {
  if (base64.length > TASK_FILE_LIMITS.sketchBase64) throw new Error(`histogram ${quoteName(name)} is ${base64.length} characters long, more than a sketch can be`);
  let sketch: DDSketch;
  try {
    sketch = DDSketch.fromProto(Buffer.from(base64, "base64"));
  } catch (err) {
    throw new Error(`histogram ${quoteName(name)} is not a DDSketch protobuf (${(err as Error).message})`);
  }
  if (!REFERENCE.mergeable(sketch) || PROBES.some((v) => sketch.mapping.key(v) !== REFERENCE.mapping.key(v))) {
    throw new Error(`histogram ${quoteName(name)} was not made with relative accuracy ${RELATIVE_ACCURACY}, so it cannot be merged`);
  }
  const problem = sketchProblem(sketch);
  if (problem) throw new Error(`histogram ${quoteName(name)} ${problem}`);
  return sketch;
}
