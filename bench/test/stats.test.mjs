import assert from "node:assert/strict";
import { test } from "node:test";
import { bestConnectRun, bestListenRun, evaluateGoals, framesPerCpuSecond, marginalBytesPerVu, peerRatios, percentile } from "../lib/stats.mjs";

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

test("repeated listen runs: the best throughput counts, the worst delivery counts", () => {
  const a = { framesPerCpuSecond: 40_000, delivery: 1, bytesPerIdleVu: 9_000 };
  const b = { framesPerCpuSecond: 52_000, delivery: 0.999, bytesPerIdleVu: 8_000 };
  assert.deepEqual(bestListenRun([a, b]), { framesPerCpuSecond: 52_000, delivery: 0.999, bytesPerIdleVu: 8_000, runsFramesPerCpuSecond: [40_000, 52_000] });
  assert.equal(bestListenRun([{ ...b, delivery: 1 }, a]).delivery, 1);
  assert.equal(bestListenRun([{ ...a, delivery: 0.5 }, { ...b, delivery: 1 }]).delivery, 0.5);
  // Artillery's ws engine reports no delivery of its own.
  assert.equal(bestListenRun([{ framesPerCpuSecond: 1, delivery: null }, { framesPerCpuSecond: 2, delivery: null }]).delivery, null);
  assert.equal(bestListenRun([a]), a);
  assert.throws(() => bestListenRun([]), /no runs/);
});

test("the best connect run is the one whose many-VU ramp cost least CPU per VU, every run kept", () => {
  const a = { cpuMsPerVuFew: 1, cpuMsPerVuMany: 0.62, marginalCpuMsPerVu: 0.56 };
  const b = { cpuMsPerVuFew: 1.2, cpuMsPerVuMany: 0.57, marginalCpuMsPerVu: 0.52 };
  assert.deepEqual(bestConnectRun([a, b]), { ...b, runsCpuMsPerVuMany: [0.62, 0.57], runsMarginalCpuMsPerVu: [0.56, 0.52] });
  assert.deepEqual(bestConnectRun([a]), a);
  assert.throws(() => bestConnectRun([]), /no runs/);
});

test("against the peer, each run's ratios are paired and the worst run counts, in each goal's direction", () => {
  const run = (engine, peer) => ({
    engine: { connect: { marginalTotalCpuMsPerUser: engine[0], marginalRssBytesPerUser: engine[3] }, listen: { framesPerCpuSecond: engine[1] }, chat: { cpuUsPerFrame: engine[2] } },
    peer: { connect: { marginalTotalCpuMsPerUser: peer[0], marginalRssBytesPerUser: peer[3] }, listen: { framesPerCpuSecond: peer[1] }, chat: { cpuUsPerFrame: peer[2] } },
  });
  const r = peerRatios([run([0.4, 120_000, 30, 10_000], [0.8, 60_000, 40, 100_000]), run([0.5, 90_000, 36, 12_000], [0.8, 60_000, 40, 100_000])]);
  assert.deepEqual(r.runs.map((x) => x.frames), [2, 1.5]);
  assert.deepEqual(r.worst, { "peer-connect": 0.625, "peer-frames": 1.5, "peer-chat": 0.9, "peer-memory": 0.12 });
  const goals = Object.fromEntries(evaluateGoals(r.worst).map((g) => [g.id, g.status]));
  assert.deepEqual(goals, { "peer-connect": "met", "peer-frames": "met", "peer-chat": "met", "peer-memory": "met" });
});

test("the idle ratio joins the peer's figures when both subjects were measured idle, the worst run counting", () => {
  const side = (cpu, idle) => ({ connect: { marginalTotalCpuMsPerUser: cpu, marginalRssBytesPerUser: 1 }, listen: { framesPerCpuSecond: 1 }, chat: { cpuUsPerFrame: 1 }, ...(idle === undefined ? {} : { idle: { cpuUsPerUserSecond: idle } }) });
  const r = peerRatios([{ engine: side(1, 30), peer: side(1, 25) }, { engine: side(1, 20), peer: side(1, 25) }]);
  assert.deepEqual(r.runs.map((x) => x.idle), [1.2, 0.8]);
  assert.equal(r.worst["peer-idle"], 1.2);
  assert.equal(Object.fromEntries(evaluateGoals(r.worst).map((g) => [g.id, g.status]))["peer-idle"], "missed");
  // Runs from before the idle workload: no idle goal, rather than a goal judged on nothing.
  assert.equal(peerRatios([{ engine: side(1), peer: side(1) }]).worst["peer-idle"], undefined);
});


test("a workload the peer could not finish has no ratio in that run and is counted; one the engine could not finish regresses", () => {
  const side = (cpu) => ({ connect: { marginalTotalCpuMsPerUser: cpu, marginalRssBytesPerUser: 1 }, listen: { framesPerCpuSecond: 2 }, chat: { cpuUsPerFrame: 1 } });
  const crashed = { ...side(1), listen: { error: "process 1 exited before it was measured" } };
  const r = peerRatios([{ engine: side(0.5), peer: crashed }, { engine: side(0.5), peer: side(1) }]);
  assert.equal(r.runs[0].frames, undefined);
  assert.equal(r.runs[1].frames, 1);
  assert.equal(r.worst["peer-frames"], 1);
  assert.deepEqual(r.peerFailed, { listen: 1 });
  const ours = peerRatios([{ engine: { ...side(0.5), chat: { error: "timeout" } }, peer: side(1) }]);
  assert.ok(Number.isNaN(ours.worst["peer-chat"]));
  assert.equal(Object.fromEntries(evaluateGoals(ours.worst).map((g) => [g.id, g.status]))["peer-chat"], "regressed");
  // Every run of the peer failed: no goal is judged on nothing.
  assert.equal(peerRatios([{ engine: side(0.5), peer: crashed }]).worst["peer-frames"], undefined);
});

test("a workload left out of a pair (--peer-workloads) has no ratio and no goal, the others are judged", () => {
  const side = { connect: { marginalTotalCpuMsPerUser: 0.5, marginalRssBytesPerUser: 5_000 }, listen: undefined, idle: undefined, chat: undefined };
  const peer = { connect: { marginalTotalCpuMsPerUser: 1, marginalRssBytesPerUser: 100_000 }, listen: undefined, idle: undefined, chat: undefined };
  const r = peerRatios([{ engine: side, peer }]);
  assert.deepEqual(r.runs, [{ connect: 0.5, memory: 0.05 }]);
  assert.deepEqual(r.worst, { "peer-connect": 0.5, "peer-memory": 0.05 });
  assert.deepEqual(r.peerFailed, {});
});
