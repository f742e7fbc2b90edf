import assert from "node:assert/strict";
import { test } from "node:test";
import { arrivalLateness } from "../lib/stats.mjs";

test("arrival lateness is measured against the best-fitting uniform schedule", () => {
  // Due every 10 ms from 1000; the third came 4 ms late, order of input does not matter.
  assert.deepEqual(arrivalLateness([1024, 1000, 1010, 1030], 10), [0, 0, 4, 0]);
  // All late by the same amount: a shifted schedule, no lateness.
  assert.deepEqual(arrivalLateness([1005, 1015, 1025], 10), [0, 0, 0]);
  // A batch: three arrivals at once where one per ms was due.
  assert.deepEqual(arrivalLateness([100, 103, 103, 103], 1), [0, 2, 1, 0]);
});
