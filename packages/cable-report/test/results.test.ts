import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeEach, describe, expect, it } from "vitest";
import { loadBaseline, mergeResults } from "../src/results.js";
import { sidecarPathFor } from "../src/sidecar.js";
import { around, TEST, writeTask } from "./fixtures.js";

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "cable-report-"));
});

const task = (created: number) => ({
  counters: { "vusers.created": created, "vusers.created_by_name.chat": created },
  histograms: { "cable.rtt": around(20, 50, created) },
});

describe("loading a results directory", () => {
  it("reads each region folder's reports at any depth, with their sidecars", () => {
    writeTask(join(dir, "eu-west-2", "task-1", "report.json"), task(3));
    writeTask(join(dir, "eu-west-2", "task-2.json"), task(4));
    writeTask(join(dir, "us-east-1", "a.json"), task(5));
    writeFileSync(join(dir, "us-east-1", "artillery.log"), "not json, ignored");
    // The task worker's own file beside the report (cable-worker): not a report.
    writeFileSync(join(dir, "eu-west-2", "task-1", "status.json"), JSON.stringify({ exitCode: 0, reason: "ok" }));

    const merged = mergeResults(dir);

    expect(merged.regions.map((r) => [r.name, r.tasks, r.counters["vusers.created"]])).toEqual([
      ["eu-west-2", 2, 7],
      ["us-east-1", 1, 5],
    ]);
    expect(merged.regions[0].files).toEqual(["eu-west-2/task-1/report.json", "eu-west-2/task-2.json"]);
    expect(merged.all.counters["vusers.created"]).toBe(12);
    expect(merged.test).toEqual(TEST);
    expect(merged.notes).toEqual([]);
  });

  it("marks an empty region folder and expected regions without a folder as missing, and short regions", () => {
    writeTask(join(dir, "eu-west-2", "a.json"), task(1));
    writeTask(join(dir, "eu-west-2", "b.json"), task(1));
    writeTask(join(dir, "us-east-1", "a.json"), task(1));
    mkdirSync(join(dir, "ap-south-1"));

    const merged = mergeResults(dir, { regions: ["sa-east-1"] });

    expect(merged.regions.map((r) => [r.name, r.tasks, r.expectedTasks])).toEqual([
      ["ap-south-1", 0, 2],
      ["eu-west-2", 2, 2],
      ["sa-east-1", 0, 2],
      ["us-east-1", 1, 2],
    ]);
  });

  it("takes the run's early stop as an input of the merge: in the timeline, and nowhere without one", () => {
    writeTask(join(dir, "eu-west-2", "a.json"), task(2));
    const aborted = { condition: "errors>5%", at: 1_700_000_030_000, figure: "errors 7.1% for 30 s" };
    expect(mergeResults(dir, { aborted }).timeline?.aborted).toEqual(aborted);
    expect(mergeResults(dir).timeline?.aborted).toBeNull();
  });

  it("notes a sidecar whose report is missing", () => {
    writeTask(join(dir, "eu-west-2", "a.json"), task(1));
    writeTask(join(dir, "eu-west-2", "b.json"), task(1));
    writeFileSync(join(dir, "eu-west-2", "b.json"), readFileSync(join(dir, "eu-west-2", "a.json")));
    writeFileSync(join(dir, "eu-west-2", "lost.json.sketches.json"), readFileSync(sidecarPathFor(join(dir, "eu-west-2", "a.json"))));
    expect(mergeResults(dir).notes).toEqual(["eu-west-2/lost.json.sketches.json has no report beside it; that task is not counted."]);
  });

  it("notes reports without a sidecar", () => {
    writeTask(join(dir, "eu-west-2", "a.json"), { ...task(1), sidecar: false });
    expect(mergeResults(dir).notes[0]).toMatch(/^1 of 1 reports have no sketches sidecar/);
  });
});

describe("bad input names the file", () => {
  it("rejects a missing directory and a directory without region folders", () => {
    expect(() => mergeResults(join(dir, "nope"))).toThrow(`${join(dir, "nope")}: is not a directory`);
    expect(() => mergeResults(dir)).toThrow(`${dir}: holds no region folders`);
  });

  it("rejects region folders without any report", () => {
    mkdirSync(join(dir, "eu-west-2"));
    expect(() => mergeResults(dir)).toThrow(`${dir}: holds no Artillery reports`);
  });

  it("rejects a results directory whose only report is not an Artillery report, naming it", () => {
    const file = join(dir, "eu-west-2", "package.json");
    mkdirSync(join(dir, "eu-west-2"));
    writeFileSync(file, JSON.stringify({ name: "x" }));
    expect(() => mergeResults(dir)).toThrow(`eu-west-2/package.json: is not an Artillery JSON report (artillery run -o) (Required at aggregate)`);
  });

  it("rejects a results directory whose only report is not JSON", () => {
    mkdirSync(join(dir, "eu-west-2"));
    writeFileSync(join(dir, "eu-west-2", "report.json"), "{ half a rep");
    expect(() => mergeResults(dir)).toThrow(/holds no Artillery reports that could be read \(eu-west-2\/report.json: is not an Artillery JSON report/);
  });

  it("rejects reports of different tests mixed together", () => {
    writeTask(join(dir, "eu-west-2", "a.json"), task(1));
    writeTask(join(dir, "us-east-1", "a.json"), { ...task(1), test: { ...TEST, name: "other.yml" } });
    expect(() => mergeResults(dir)).toThrow(
      `${sidecarPathFor(join(dir, "us-east-1", "a.json"))}: is from test "other.yml" (scenarios: chat)`,
    );
  });

  it("rejects a bare report that ran a scenario the test does not declare", () => {
    writeTask(join(dir, "eu-west-2", "a.json"), task(1));
    const file = join(dir, "us-east-1", "a.json");
    writeTask(file, { counters: { "vusers.created": 1, "vusers.created_by_name.checkout": 1 }, sidecar: false });
    expect(() => mergeResults(dir)).toThrow(`${file}: ran scenarios checkout that test "chat.yml"`);
  });

  it("rejects bare reports that share no scenario", () => {
    writeTask(join(dir, "eu-west-2", "a.json"), { ...task(1), sidecar: false });
    const file = join(dir, "us-east-1", "a.json");
    writeTask(file, { counters: { "vusers.created": 1, "vusers.created_by_name.checkout": 1 }, sidecar: false });
    expect(() => mergeResults(dir)).toThrow(`${file}: ran scenarios checkout, but`);
  });

  // A bad sidecar costs its task the exact percentiles, never the report.
  const sidecarNotUsed = (file: string, why: string | RegExp) => {
    const merged = mergeResults(dir);
    const note = merged.notes.find((n) => n.startsWith(`eu-west-2/a.json: its sidecar was not used (${sidecarPathFor(file)}: `));
    expect(note).toBeDefined();
    expect(note).toMatch(why);
    expect(merged.regions[0].tasks).toBe(1);
    expect(merged.regions[0].histograms["cable.rtt"].approximate).toBe(false); // one task: its own summary
    return merged;
  };

  it("uses the report alone when the sidecar's sketch bytes are corrupt", () => {
    const file = join(dir, "eu-west-2", "a.json");
    writeTask(file, task(1));
    const sidecar = JSON.parse(readFileSync(sidecarPathFor(file), "utf8"));
    sidecar.aggregate.histograms["cable.rtt"] = Buffer.from("not a sketch").toString("base64");
    writeFileSync(sidecarPathFor(file), JSON.stringify(sidecar));
    sidecarNotUsed(file, /histogram "cable.rtt" is not a DDSketch protobuf/);
  });

  it("uses the report alone when the sidecar belongs to another report", () => {
    const file = join(dir, "eu-west-2", "a.json");
    writeTask(file, task(1));
    writeTask(join(dir, "other", "b.json"), task(2));
    writeFileSync(sidecarPathFor(file), readFileSync(sidecarPathFor(join(dir, "other", "b.json"))));
    sidecarNotUsed(file, /does not match its report .*: counter "vusers.created"/);
  });

  it("uses the report alone when the sidecar is truncated", () => {
    const file = join(dir, "eu-west-2", "a.json");
    writeTask(file, task(1));
    writeFileSync(sidecarPathFor(file), readFileSync(sidecarPathFor(file), "utf8").slice(0, 100));
    sidecarNotUsed(file, /is not a cable-report sketches sidecar/);
  });
});

describe("baselines", () => {
  it("loads a results directory or a merged JSON, and rejects anything else by name", () => {
    writeTask(join(dir, "eu-west-2", "a.json"), task(1));
    const merged = mergeResults(dir);
    const json = join(dir, "merged.json");
    writeFileSync(json, JSON.stringify(merged));
    expect(loadBaseline(dir)).toEqual(merged);
    expect(loadBaseline(json)).toEqual(merged);
    expect(() => loadBaseline(join(dir, "eu-west-2", "a.json"))).toThrow(/a.json: is not a cable-report --json output/);
    expect(() => loadBaseline(join(dir, "missing.json"))).toThrow(/missing.json: baseline not found/);
  });
});

describe("a merge that survives bad input", () => {
  it("keeps every healthy task and region when one task file is truncated, and marks it", () => {
    writeTask(join(dir, "eu-west-2", "task-1.json"), task(3));
    writeTask(join(dir, "eu-west-2", "task-2.json"), task(4));
    writeTask(join(dir, "us-east-1", "task-1.json"), task(5));
    writeTask(join(dir, "us-east-1", "task-2.json"), task(6));
    const bad = join(dir, "eu-west-2", "task-2.json");
    writeFileSync(bad, readFileSync(bad, "utf8").slice(0, 200));

    const merged = mergeResults(dir);

    expect(merged.regions.map((r) => [r.name, r.tasks, r.expectedTasks, r.counters["vusers.created"]])).toEqual([
      ["eu-west-2", 1, 2, 3],
      ["us-east-1", 2, 2, 11],
    ]);
    expect(merged.regions[0].rejected).toEqual([
      { file: "eu-west-2/task-2.json", kind: "corrupt", reason: expect.stringMatching(/^is not an Artillery JSON report \(artillery run -o\): /) },
    ]);
    expect(merged.all.counters["vusers.created"]).toBe(14);
    expect(merged.all.histograms["cable.rtt"].count).toBe(150);
  });

  it("counts a task folder copied twice once (same test run id)", () => {
    writeTask(join(dir, "eu-west-2", "task-1", "report.json"), { ...task(3), testRunId: "t7xk2" });
    writeTask(join(dir, "eu-west-2", "task-1-copy", "report.json"), { ...task(3), testRunId: "t7xk2" });
    writeTask(join(dir, "eu-west-2", "task-2", "report.json"), { ...task(4), testRunId: "t9abc" });

    const merged = mergeResults(dir);

    expect(merged.regions[0].tasks).toBe(2);
    expect(merged.regions[0].counters["vusers.created"]).toBe(7);
    expect(merged.regions[0].rejected).toEqual([
      { file: "eu-west-2/task-1-copy/report.json", kind: "duplicate", reason: "a copy of eu-west-2/task-1/report.json (same test run), counted once" },
    ]);
  });

  it("accepts a task that ran no virtual users", () => {
    writeTask(join(dir, "eu-west-2", "a.json"), task(3));
    mkdirSync(join(dir, "us-east-1"));
    // What Artillery writes when no user arrived: no period, no histograms.
    writeFileSync(join(dir, "us-east-1", "a.json"), JSON.stringify({ aggregate: { counters: {}, rates: {}, summaries: {}, histograms: {} }, intermediate: [] }));

    const merged = mergeResults(dir);

    expect(merged.regions.map((r) => [r.name, r.tasks, r.rejected.length])).toEqual([
      ["eu-west-2", 1, 0],
      ["us-east-1", 1, 0],
    ]);
    expect(merged.regions[1].histograms).toEqual({});
    expect(merged.all.counters["vusers.created"]).toBe(3);
  });

  it("keeps percentiles within their [min, max]", () => {
    writeTask(join(dir, "eu-west-2", "a.json"), { histograms: { "cable.rtt": [40_000.4, 40_000.4, 40_100] } });
    writeTask(join(dir, "eu-west-2", "b.json"), { histograms: { "cable.rtt": [40_000.4] } });
    const rtt = mergeResults(dir).all.histograms["cable.rtt"];
    for (const p of [rtt.p50, rtt.p75, rtt.p90, rtt.p95, rtt.p99, rtt.p999]) {
      expect(p).toBeGreaterThanOrEqual(rtt.min);
      expect(p).toBeLessThanOrEqual(rtt.max);
    }
  });
});
