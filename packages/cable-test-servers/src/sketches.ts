import { DDSketch } from "@artilleryio/sketches-js";

/** A real DDSketch of known samples, at the accuracy the report plugin records with (cable-report's RELATIVE_ACCURACY). */
export function sketchOf(samples: number[]): DDSketch {
  const sketch = new DDSketch({ relativeAccuracy: 0.01 });
  for (const s of samples) sketch.accept(s);
  return sketch;
}

/** The samples' sketch as a period record carries it: base64 of `toProto()`. */
export const encoded = (samples: number[]): string => Buffer.from(sketchOf(samples).toProto()).toString("base64");
