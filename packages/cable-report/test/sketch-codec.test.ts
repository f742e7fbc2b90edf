// decodeSketch reads Artillery's sketches without the library's bin-by-bin fromProto; it must give
// the very sketch DDSketch.fromProto gives: the same figures, the same merges, the same bytes back.
import { DDSketch } from "@artilleryio/sketches-js";
import { describe, expect, it } from "vitest";
import { decodeSketch, encodeSketch, RELATIVE_ACCURACY } from "../src/sketch-codec.js";
import { random } from "./fixtures.js";

function sketchOf(samples: number[]): DDSketch {
  const sketch = new DDSketch({ relativeAccuracy: RELATIVE_ACCURACY });
  for (const x of samples) sketch.accept(x);
  return sketch;
}

const figures = (s: DDSketch) => ({
  count: s.count,
  zeroCount: s.zeroCount,
  min: s.min,
  max: s.max,
  sum: s.sum,
  quantiles: [0, 0.1, 0.5, 0.9, 0.95, 0.99, 0.999, 1].map((q) => s.getValueAtQuantile(q)),
});

describe("decodeSketch", () => {
  const next = random(5);
  const cases: Record<string, number[]> = {
    "empty": [],
    "one sample": [42],
    "zeros and negatives": [0, 0, -3, -0.5, 2, 7],
    "a wide spread": Array.from({ length: 5_000 }, () => Math.exp(12 * next() - 4)),
    "a narrow one": Array.from({ length: 1_000 }, () => 20 + next()),
  };
  for (const [what, samples] of Object.entries(cases)) {
    it(`${what}: the figures, the merge and the bytes of DDSketch.fromProto`, () => {
      const base64 = encodeSketch(sketchOf(samples));
      const fast = decodeSketch("cable.rtt", base64);
      const library = DDSketch.fromProto(Buffer.from(base64, "base64"));
      expect(figures(fast)).toEqual(figures(library));
      expect(encodeSketch(fast)).toEqual(encodeSketch(library));
      const other = sketchOf([1, 10, 100, 1_000]);
      const a = new DDSketch({ relativeAccuracy: RELATIVE_ACCURACY });
      a.merge(fast);
      a.merge(other);
      const b = new DDSketch({ relativeAccuracy: RELATIVE_ACCURACY });
      b.merge(library);
      b.merge(other);
      expect(figures(a)).toEqual(figures(b));
      expect(encodeSketch(a)).toEqual(encodeSketch(b));
    });
  }

  it("still refuses a sketch of another accuracy", () => {
    const coarse = new DDSketch({ relativeAccuracy: 0.05 });
    coarse.accept(3);
    expect(() => decodeSketch("cable.rtt", encodeSketch(coarse))).toThrow(/relative accuracy 0.01/);
  });
});
