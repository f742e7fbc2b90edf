// A record read back from a store is somebody else's file: every way it can be wrong is refused
// with the store's location and key, before attach, collect, stop or status act on it.
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { LocalStore } from "cable-worker/local-store";
import { afterAll, describe, expect, it } from "vitest";
import { readStoredRecord, storedRecordKey } from "../src/detach/store-record";
import { formatStatus } from "../src/detach/status";
import { FanoutInputError } from "../src/errors";

const dir = mkdtempSync(path.join(os.tmpdir(), "detach-record-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const store = new LocalStore(dir);

const RECORD = {
  format: "cable-fanout-run",
  version: 1,
  runId: "r1",
  backend: "local",
  scenario: "chat.yml",
  regions: ["local-a", "local-b"],
  count: 1,
  secrets: ["KEY"],
  startAt: 1_000,
  started: { "local-a": ["r1/task-1"], "local-b": ["r1/task-1"] },
  detached: { at: 1_000, maxDurationMs: 60_000, live: {} },
};

async function stored(value: unknown, runId = "r1") {
  await store.putText(storedRecordKey(runId), typeof value === "string" ? value : JSON.stringify(value));
  return readStoredRecord(store, runId, "local");
}

async function refusal(value: unknown, runId = "r1"): Promise<string> {
  try {
    await stored(value, runId);
  } catch (err) {
    expect(err).toBeInstanceOf(FanoutInputError);
    return (err as Error).message;
  }
  throw new Error("no error");
}

describe("a run record read from the store", () => {
  it("lives under the run's control/ folder, and is absent for a run that left none", async () => {
    expect(storedRecordKey("r1")).toBe("runs/r1/control/fanout.json");
    expect(await readStoredRecord(store, "nothing-here", "local")).toBeUndefined();
  });

  it("is read when it is a valid record of that run", async () => {
    expect(await stored(RECORD)).toMatchObject({ runId: "r1", regions: ["local-a", "local-b"], detached: { maxDurationMs: 60_000 } });
  });

  it("is refused when it is not JSON, not a record, of another run or backend, or names what it may not", async () => {
    expect(await refusal("{")).toMatch(/runs\/r1\/control\/fanout\.json: not valid JSON/);
    expect(await refusal({ ...RECORD, count: 0 })).toMatch(/not a cable-fanout run record: count: /);
    expect(await refusal({ ...RECORD, runId: "r2" })).toMatch(/the record is of run r2, not r1$/);
    expect(await refusal({ ...RECORD, backend: "aws" })).toMatch(/run r1 ran on the aws backend; drop --local$/);
    expect(await refusal({ ...RECORD, regions: ["../etc"] })).toMatch(/the record names no usable regions/);
    expect(await refusal({ ...RECORD, regions: [] })).toMatch(/the record names no usable regions/);
    expect(await refusal({ ...RECORD, started: { elsewhere: [] } })).toMatch(/lists tasks in elsewhere, which is not one of its regions/);
    // A local ref becomes a pid file's path: only <runId>/<taskId> passes.
    expect(await refusal({ ...RECORD, started: { "local-a": ["r1/../../x"] } })).toMatch(/a task reference that is not one of run r1's/);
    expect(await refusal({ ...RECORD, started: { "local-a": ["other/task-1"] } })).toMatch(/a task reference that is not one of run r1's/);
  });
});

describe("status's table", () => {
  it("aligns a line per region and run, with ? where nothing says", () => {
    expect(formatStatus([])).toEqual(["no run in progress"]);
    expect(
      formatStatus([
        { region: "eu-west-2", runId: "20261129-133622-4f1a0c", running: 4, stopped: 0, ageMs: 727_000, runner: "detached" },
        { region: "us-east-1", runId: "ci-42", running: 12, runner: "unknown" },
      ]),
    ).toEqual([
      "REGION     RUN                     AGE    RUNNING  STOPPED  RUNNER",
      "eu-west-2  20261129-133622-4f1a0c  12:07  4        0        detached",
      "us-east-1  ci-42                   ?      12       ?        unknown",
    ]);
  });
});
