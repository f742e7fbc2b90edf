import assert from "node:assert/strict";
import { test } from "node:test";
import { marginal, threeSizes } from "../lib/whole.mjs";

const run = (cpuS, users, maxRssKb = 0) => ({ cpuS, users, maxRssKb });
const users = (r) => r.users;

test("a marginal divides the larger run's extra CPU and peak RSS by its extra units", () => {
  const m = marginal(run(4, 1, 300_000), run(8, 2001, 330_000), users);
  assert.equal(m.cpuPerUnitS, 0.002);
  assert.equal(m.rssPerUnitKb, 15);
  assert.equal(m.units, 2000);
});

test("a marginal with a failed run, or no more units, has no figure", () => {
  assert.equal(marginal({ error: "panicked" }, run(8, 2000), users), null);
  assert.equal(marginal(run(4, 10), { error: "timed out" }, users), null);
  assert.equal(marginal(run(4, 10), run(5, 10), users), null);
});

test("three sizes: the scale rate from N/10 to N, the rate from one, and the warming beyond the scale rate", () => {
  // Start-up 4 s; 1 ms a user at scale; the first 200 users cost 0.5 s more than that rate.
  const one = run(4.001, 1);
  const tenth = run(4.001 + 0.199 + 0.5, 200);
  const all = run(tenth.cpuS + 1.8, 2000);
  const f = threeSizes(one, tenth, all, users);
  assert.ok(Math.abs(f.atScale.cpuPerUnitS - 0.001) < 1e-12);
  assert.ok(Math.abs(f.fromOne.cpuPerUnitS - (all.cpuS - one.cpuS) / 1999) < 1e-12);
  assert.equal(f.warmingS, 0.5);
});

test("three sizes with a failed first run keep the scale rate and lose the rest", () => {
  const f = threeSizes({ error: "exited 2" }, run(5, 200), run(6.8, 2000), users);
  assert.ok(Math.abs(f.atScale.cpuPerUnitS - 0.001) < 1e-12);
  assert.equal(f.fromOne, null);
  assert.equal(f.warmingS, null);
});
