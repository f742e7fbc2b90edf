// DDSketch to and from base64 protobuf: how every file of the project carries a histogram.
import { DDSketch } from "@artilleryio/sketches-js";

/** Artillery creates every histogram with this accuracy (lib/core/ssms.ts); sketches only merge when it matches. */
export const RELATIVE_ACCURACY = 0.01;

export function encodeSketch(sketch: { toProto(): Uint8Array }): string {
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
