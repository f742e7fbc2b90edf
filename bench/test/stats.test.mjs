import assert from "node:assert/strict";
import { test } from "node:test";
import { evaluateGoals, framesPerCpuSecond, marginalBytesPerVu, percentile } from "../lib/stats.mjs";

test("percentile is nearest-rank", () => {
  assert.equal(percentile([5, 1, 4, 2, 3], 50), 3);
  assert.equal(percentile([1, 2, 3, 4], 50), 2);
  assert.equal(percentile([1, 2, 3, 4], 100), 4);
  assert.equal(percentile([7], 99), 7);
  assert.equal(percentile([], 50), undefined);
});

test("frames per CPU-second needs a positive CPU time", () => {
  assert.equal(framesPerCpuSecond(50_000, 0.5), 100_000);
  assert.equal(framesPerCpuSecond(50_000, 0), undefined);
  assert.equal(framesPerCpuSecond(undefined, 1), undefined);
});

test("marginal memory divides the RSS growth by the added VUs", () => {
  assert.equal(marginalBytesPerVu(300e6, 310e6, 10, 1010), 10_000);
  assert.throws(() => marginalBytesPerVu(1, 2, 10, 10), /must exceed/);
});

test("goals: met, missed within 25 %, regressed past it, in both directions", () => {
  const byId = Object.fromEntries(evaluateGoals({ throughput: 0.5, memory: 2, latency: 1.3 }).map((g) => [g.id, g.status]));
  assert.deepEqual(byId, { throughput: "missed", memory: "met", latency: "regressed" });
  const edge = Object.fromEntries(evaluateGoals({ throughput: 0.45, memory: 3.75, delivery: 0.999 }).map((g) => [g.id, g.status]));
  assert.deepEqual(edge, { throughput: "missed", memory: "missed", delivery: "regressed" });
  assert.equal(evaluateGoals({ scale: NaN })[0].status, "regressed");
  assert.equal(evaluateGoals({}).length, 0);
});
