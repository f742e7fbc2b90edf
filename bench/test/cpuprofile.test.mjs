import assert from "node:assert/strict";
import { test } from "node:test";
import { areaOf, byArea, mergeSelfTimes, selfTimes } from "../lib/cpuprofile.mjs";

const frame = (id, functionName, url, lineNumber = 0) => ({ id, callFrame: { functionName, url, lineNumber, columnNumber: 0 } });
const profile = {
  nodes: [frame(1, "(root)", ""), frame(2, "onFrame", "file:///w/packages/artillery-engine-cable/dist/connection.js", 9), frame(3, "getData", "file:///w/node_modules/ws/lib/receiver.js", 99), frame(4, "(garbage collector)", "")],
  startTime: 1_000,
  // samples at 1100, 1200, 1300, 1400, 1500 µs, each lasting until the next
  samples: [2, 3, 2, 4, 2],
  timeDeltas: [100, 100, 100, 100, 100],
};

test("areas come from the script URL", () => {
  assert.equal(areaOf("file:///x/node_modules/artillery-engine-cable/dist/vu.js", "f"), "engine");
  assert.equal(areaOf("file:///x/node_modules/ws/lib/receiver.js", "f"), "ws");
  assert.equal(areaOf("file:///x/node_modules/@artilleryio/int-core/lib/runner.js", "f"), "artillery");
  assert.equal(areaOf("node:internal/streams/readable", "f"), "node");
  assert.equal(areaOf("", "(garbage collector)"), "(garbage collector)");
});

test("self time per function, optionally within windows", () => {
  const all = Object.fromEntries(selfTimes(profile).map((e) => [e.functionName, e.selfUs]));
  assert.deepEqual(all, { onFrame: 200, getData: 100, "(garbage collector)": 100 }); // the last sample has no duration
  const windowed = Object.fromEntries(selfTimes(profile, [{ hrStartUs: 1_150, hrEndUs: 1_350 }]).map((e) => [e.functionName, e.selfUs]));
  assert.deepEqual(windowed, { getData: 100, onFrame: 100 });
});

test("threads merge by function and sort by self time", () => {
  const merged = mergeSelfTimes([selfTimes(profile), selfTimes(profile)]);
  assert.equal(merged[0].functionName, "onFrame");
  assert.equal(merged[0].selfUs, 400);
  assert.deepEqual(byArea(merged)[0], ["engine", 400]);
});
