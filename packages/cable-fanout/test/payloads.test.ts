import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { parseManifest } from "cable-worker/contract";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildBundle } from "../src/run/bundle";
import { FanoutInputError } from "../src/errors";
import { checkSlicedPayloads, mergeLikeArtillery, planPayloads } from "../src/payloads";
import { loadScenario } from "../src/scenario";

let dir: string;
const file = (name: string) => path.join(dir, name);
/** A scenario in `dir` with this config (its payload files exist: a header and 4 rows). */
const scenario = (config: Record<string, unknown>) => ({ file: file("scenario.yml"), config });

beforeAll(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), "fanout-payloads-"));
  for (const name of ["users.csv", "admins.csv", "rooms.csv", "staging-users.csv"]) writeFileSync(file(name), "email,password\na,1\nb,2\nc,3\nd,4\n");
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("which payloads the tasks slice", () => {
  it("slices order: sequence, with the fields that decide its rows", () => {
    const plan = planPayloads(scenario({ payload: { path: "users.csv", fields: ["email", "password"], order: "sequence", skipHeader: true, delimiter: ";", cast: false } }), undefined);
    expect(plan).toEqual({ sliced: [{ file: file("users.csv"), csv: { skipHeader: true, delimiter: ";" } }], notes: [] });
  });

  it("leaves random payloads alone, whether said or by default, and loadAll tables too", () => {
    const plan = planPayloads(
      scenario({
        payload: [
          { path: "users.csv", fields: ["email"], order: "sequence" },
          { path: "rooms.csv", fields: ["room"], order: "random" },
          { path: "admins.csv", fields: ["email"] },
          { path: "staging-users.csv", name: "everyone", loadAll: true, order: "sequence" },
        ],
      }),
      undefined,
    );
    expect(plan.sliced.map((p) => p.file)).toEqual([file("users.csv")]);
    expect(plan.notes).toEqual([]);
  });

  it("reads every payload of a list", () => {
    const plan = planPayloads(scenario({ payload: [{ path: "users.csv", order: "sequence" }, { path: "admins.csv", order: "sequence", skipHeader: true }] }), undefined);
    expect(plan.sliced).toEqual([
      { file: file("users.csv"), csv: {} },
      { file: file("admins.csv"), csv: { skipHeader: true } },
    ]);
  });

  it("takes the --environment's payload as Artillery merges it, and ignores other environments'", () => {
    const config = {
      payload: { path: "users.csv", fields: ["email"], order: "sequence", skipHeader: true },
      environments: {
        staging: { payload: { path: "staging-users.csv" } },
        random: { payload: { order: "random" } },
        other: { target: "ws://other" },
      },
    };
    expect(planPayloads(scenario(config), "staging").sliced).toEqual([{ file: file("staging-users.csv"), csv: { skipHeader: true } }]);
    expect(planPayloads(scenario(config), "random").sliced).toEqual([]);
    expect(planPayloads(scenario(config), "other").sliced).toEqual([{ file: file("users.csv"), csv: { skipHeader: true } }]);
    expect(planPayloads(scenario(config), undefined).sliced).toEqual([{ file: file("users.csv"), csv: { skipHeader: true } }]);
    // A payload only in an environment.
    expect(planPayloads(scenario({ environments: { staging: { payload: [{ path: "admins.csv", order: "sequence" }] } } }), "staging").sliced).toEqual([{ file: file("admins.csv"), csv: {} }]);
  });

  it("reads a file whole, and says so, when another payload reads it at random or the sequence payloads read it differently", () => {
    const shared = planPayloads(scenario({ payload: [{ path: "users.csv", order: "sequence" }, { path: "users.csv", order: "random" }] }), undefined);
    expect(shared.sliced).toEqual([]);
    expect(shared.notes).toEqual([`payload ${path.relative(process.cwd(), file("users.csv"))} is read whole by every task: another payload reads it in random order or with loadAll`]);
    const twoWays = planPayloads(scenario({ payload: [{ path: "users.csv", order: "sequence" }, { path: "users.csv", order: "sequence", skipHeader: true }] }), undefined);
    expect(twoWays.notes).toEqual([expect.stringContaining("its sequence payloads read it with different CSV options")]);
    // The same file twice, read alike: cut once.
    expect(planPayloads(scenario({ payload: [{ path: "users.csv", order: "sequence", fields: ["a"] }, { path: "users.csv", order: "sequence", fields: ["b"] }] }), undefined).sliced).toHaveLength(1);
  });

  it("refuses a CSV option Artillery's parser would refuse", () => {
    expect(() => planPayloads(scenario({ payload: { path: "users.csv", order: "sequence", delimiter: 1 } }), undefined)).toThrow(FanoutInputError);
    expect(() => planPayloads(scenario({ payload: { path: "users.csv", order: "sequence", skipEmptyLines: "yes" } }), undefined)).toThrow("skipEmptyLines must be true or false");
  });

  it("lays an environment over config as lodash's merge does, which Artillery uses", () => {
    const lodashMerge = createRequire(require.resolve("artillery/package.json"))("lodash").merge as (a: unknown, b: unknown) => unknown;
    const cases: Array<[unknown, unknown]> = [
      [{ path: "a.csv", fields: ["x", "y"], order: "sequence" }, { path: "b.csv", fields: ["z"] }],
      [[{ path: "a.csv", order: "sequence" }, { path: "b.csv" }], [{ path: "c.csv" }]],
      [{ path: "a.csv" }, [{ path: "b.csv", order: "sequence" }]],
      [[{ path: "a.csv", order: "sequence" }], { path: "b.csv", order: "random" }],
      [undefined, { path: "b.csv" }],
      [{ path: "a.csv", options: { quote: "'" } }, { options: { delimiter: ";" } }],
    ];
    for (const [base, over] of cases) expect(mergeLikeArtillery(base, over), JSON.stringify([base, over])).toEqual(JSON.parse(JSON.stringify(lodashMerge({ payload: structuredClone(base) }, { payload: over }))).payload);
  });
});

describe("the payloads in the bundle", () => {
  it("lists the sliced files in run.json by their bundle path", () => {
    const yml = path.join(dir, "bundle-scenario.yml");
    writeFileSync(yml, "config:\n  target: ws://x\n  payload:\n    path: users.csv\n    fields: [email]\n    order: sequence\n    skipHeader: true\nscenarios:\n  - flow: []\n");
    const loaded = loadScenario(yml);
    const bundle = buildBundle(loaded, { sequencePayloads: planPayloads(loaded, undefined).sliced });
    expect(bundle.manifest.sequencePayloads).toEqual([{ path: "users.csv", skipHeader: true }]);
    expect(parseManifest(JSON.stringify(bundle.manifest), "run.json").sequencePayloads).toEqual([{ path: "users.csv", skipHeader: true }]);
    expect(buildBundle(loaded, { sequencePayloads: [] }).manifest).not.toHaveProperty("sequencePayloads");
  });
});

describe("before launch", () => {
  const users = () => ({ file: file("users.csv"), csv: { skipHeader: true } });

  it("says nothing when every task has rows of its own", () => {
    expect(checkSlicedPayloads([users()], { count: 2, regions: 2 })).toEqual([]);
  });

  it("warns, naming the payload, its rows and the tasks, when tasks must share rows", () => {
    expect(checkSlicedPayloads([users()], { count: 3, regions: 2 })).toEqual([
      `payload ${path.relative(process.cwd(), file("users.csv"))} has 4 row(s) for 6 task(s) (3 per region × 2 region(s)): rows reused: some users will be signed in by two tasks at once (give it at least 6 rows, or start fewer tasks)`,
    ]);
    writeFileSync(file("empty.csv"), "email,password\n");
    expect(checkSlicedPayloads([{ file: file("empty.csv"), csv: { skipHeader: true } }], { count: 1, regions: 2 })).toEqual([expect.stringContaining("has no rows for its 2 task(s)")]);
  });

  it("stops the run when some task's slice cannot be cut", () => {
    writeFileSync(file("mixed.csv"), "a,1\nb,2\r\nc,3\r\n");
    expect(() => checkSlicedPayloads([{ file: file("mixed.csv"), csv: {} }], { count: 3, regions: 1 })).toThrow(FanoutInputError);
    expect(() => checkSlicedPayloads([{ file: file("mixed.csv"), csv: {} }], { count: 3, regions: 1 })).toThrow(/mixed\.csv: slice 1\/3 does not read back as the same rows/);
  });
});
