import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { readWorkerConfig } from "../src/config";
import { parseManifest } from "../src/manifest";
import { formatSlice, keepsRow, parseSlice, type PayloadFile, readPayloadRows, slicePayloads, type TaskSlice } from "../src/payload-slice";

const slice = (index: number, count: number): TaskSlice => ({ index, count });
const cut = (text: string, payload: Omit<PayloadFile, "path">, s: TaskSlice) => {
  const read = readPayloadRows(Buffer.from(text), { path: "users.csv", ...payload });
  const { text: out, kept } = read.cut(s);
  return { text: out.toString(), rows: read.rows, kept };
};
/** Every slice of a run of `count` tasks, as text. */
const allSlices = (text: string, payload: Omit<PayloadFile, "path">, count: number) => Array.from({ length: count }, (_, k) => cut(text, payload, slice(k, count)).text);

describe("the slice a task is given", () => {
  it("reads and writes <index>/<count>, and refuses anything else", () => {
    expect(parseSlice("3/8")).toEqual(slice(3, 8));
    expect(formatSlice(slice(0, 1))).toBe("0/1");
    for (const bad of ["8/8", "1/0", "-1/4", "1", "a/b", "1/2/3"]) expect(() => parseSlice(bad)).toThrow("must be <index>/<count> with 0 ≤ index < count");
  });

  it("comes from CABLE_SLICE; without it a task has none", () => {
    const base = { CABLE_RUN_ID: "r1", CABLE_REGION: "eu-west-2", CABLE_STORE: "s3://b" };
    expect(readWorkerConfig(base, "/w").slice).toBeUndefined();
    expect(readWorkerConfig({ ...base, CABLE_SLICE: "2/4" }, "/w").slice).toEqual(slice(2, 4));
    expect(() => readWorkerConfig({ ...base, CABLE_SLICE: "4/4" }, "/w")).toThrow("CABLE_SLICE must be <index>/<count>");
  });

  it("keeps the rows Artillery's own divideWork gives worker k of N", async () => {
    // Artillery's built dist.ts, the function that deals a payload's rows out to its threads.
    const artillery = path.dirname(require.resolve("artillery/package.json"));
    const { default: divideWork } = (await import(path.join(artillery, "dist/lib/dist.js"))) as {
      default: (script: unknown, n: number) => Array<{ config: { payload: Array<{ data: number[] }> } }>;
    };
    for (const rows of [1, 2, 3, 5, 12]) {
      for (const count of [1, 2, 4, 7]) {
        const data = Array.from({ length: rows }, (_, i) => i);
        const workers = divideWork({ config: { phases: [{ duration: 1, arrivalRate: count }], payload: [{ data }] } }, count);
        workers.forEach((worker, k) => expect(worker.config.payload[0].data, `${rows} rows, worker ${k} of ${count}`).toEqual(data.filter((i) => keepsRow(i, rows, slice(k, count)))));
      }
    }
  });
});

describe("cutting a payload file", () => {
  const users = ["email,password", ...Array.from({ length: 12 }, (_, i) => `user${i}@example.com,pw${i}`)].join("\n") + "\n";

  it("keeps the header line, and the slices of a run are disjoint and cover the file", () => {
    const slices = allSlices(users, { skipHeader: true }, 4);
    for (const text of slices) expect(text.startsWith("email,password\n")).toBe(true);
    expect(slices[1]).toBe("email,password\nuser1@example.com,pw1\nuser5@example.com,pw5\nuser9@example.com,pw9\n");
    const rows = slices.flatMap((text) => text.split("\n").slice(1, -1));
    expect(new Set(rows).size).toBe(12);
    expect(rows.sort()).toEqual(users.split("\n").slice(1, -1).sort());
    expect(cut(users, { skipHeader: true }, slice(1, 4))).toMatchObject({ rows: 12, kept: 3 });
  });

  it("without skipHeader the first line is a row like any other", () => {
    expect(cut("a,1\nb,2\nc,3\nd,4\n", {}, slice(0, 2))).toEqual({ text: "a,1\nc,3\n", rows: 4, kept: 2 });
  });

  it("copies quoted fields as written: embedded line breaks, delimiters and quotes", () => {
    const text = 'email,password\n"a@x","line one\nline two"\nb@x,"has, comma"\nc@x,"say ""hi"""\nd@x,plain';
    expect(cut(text, { skipHeader: true }, slice(0, 2)).text).toBe('email,password\n"a@x","line one\nline two"\nc@x,"say ""hi"""\n');
    expect(cut(text, { skipHeader: true }, slice(1, 2)).text).toBe('email,password\nb@x,"has, comma"\nd@x,plain');
  });

  it("reads with the payload's delimiter, csv-parse options and empty lines as Artillery does", () => {
    expect(cut("email;pw\na;1\n\nb;2\nc;3\n", { skipHeader: true, delimiter: ";" }, slice(1, 3)).text).toBe("email;pw\n\nb;2\n");
    // An empty line is a row when skipEmptyLines is false.
    expect(cut("a,1\n\nb,2\n", { skipEmptyLines: false, options: { relax_column_count: true } }, slice(1, 3))).toMatchObject({ rows: 3, kept: 1, text: "\n" });
    // `columns: true` makes the first record the header: it stays, and is no row.
    expect(cut("email,pw\na,1\nb,2\nc,3\n", { options: { columns: true } }, slice(2, 3))).toEqual({ text: "email,pw\nc,3\n", rows: 3, kept: 1 });
    expect(cut("skip\nme\nemail,pw\na,1\nb,2\n", { options: { from_line: 4 } }, slice(1, 2)).text).toBe("skip\nme\nemail,pw\nb,2\n");
    expect(cut("a,1\r\nb,2\r\nc,3\r\n", {}, slice(0, 2)).text).toBe("a,1\r\nc,3\r\n");
  });

  it("keeps a byte-order mark, whether Artillery is told to strip it or not", () => {
    const text = "\ufeffemail,pw\na,1\nb,2\n";
    expect(cut(text, { skipHeader: true }, slice(1, 2)).text).toBe("\ufeffemail,pw\nb,2\n");
    expect(cut(text, { options: { bom: true } }, slice(1, 3)).text).toBe("\ufeffa,1\n");
  });

  it("with fewer rows than tasks, gives each task one row, and tasks share rows", () => {
    const text = "email,pw\na,1\nb,2\nc,3\n";
    expect(allSlices(text, { skipHeader: true }, 5)).toEqual(["email,pw\na,1\n", "email,pw\nb,2\n", "email,pw\nc,3\n", "email,pw\na,1\n", "email,pw\nb,2\n"]);
    expect(cut(text, { skipHeader: true }, slice(4, 5))).toMatchObject({ rows: 3, kept: 1 });
  });

  it("leaves a file without rows as it is", () => {
    expect(cut("email,pw\n", { skipHeader: true }, slice(1, 2))).toEqual({ text: "email,pw\n", rows: 0, kept: 0 });
  });

  it("refuses a cut that would not read back as the slice's rows", () => {
    // csv-parse takes the first line's break for every line: "\n" here, so row 1 is "b","2\r"; a file
    // starting at row 1 would be split on "\r\n" and read "b","2".
    expect(() => cut("a,1\nb,2\r\nc,3\r\n", {}, slice(1, 3))).toThrow("slice 1/3 does not read back as the same rows");
    // A comment line before the first row stays at the top of every slice.
    expect(cut("# users\nemail,pw\r\na,1\r\nb,2\r\n", { options: { comment: "#" } }, slice(1, 3)).text).toBe("# users\na,1\r\n");
  });
});

describe("a task's sequence payloads", () => {
  it("are replaced by the slice in the task's bundle copy, logged by size and never by row", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "payload-slice-"));
    try {
      writeFileSync(path.join(dir, "users.csv"), "email,pw\nalice,secret-a\nbob,secret-b\ncarol,secret-c\n");
      const lines: string[] = [];
      await slicePayloads(dir, [{ path: "users.csv", skipHeader: true }], slice(1, 2), (l) => lines.push(l));
      expect(readFileSync(path.join(dir, "users.csv"), "utf8")).toBe("email,pw\nbob,secret-b\n");
      expect(lines).toEqual(["payload users.csv: 3 row(s), slice 1/2 keeps 1"]);
      expect(lines.join("\n")).not.toMatch(/secret|bob/);

      lines.length = 0;
      await slicePayloads(dir, [{ path: "users.csv", skipHeader: true }], undefined, (l) => lines.push(l));
      expect(readFileSync(path.join(dir, "users.csv"), "utf8")).toBe("email,pw\nbob,secret-b\n");
      expect(lines).toEqual(["no CABLE_SLICE: users.csv read whole"]);

      await expect(slicePayloads(dir, [{ path: "gone.csv" }], slice(0, 2), () => {})).rejects.toThrow("payload gone.csv: ENOENT");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("are listed in run.json by bundle path, with the fields that decide their rows", () => {
    const manifest = parseManifest(JSON.stringify({ scenario: "s.yml", sequencePayloads: [{ path: "data/users.csv", skipHeader: true, delimiter: ";", options: { quote: "'" } }] }), "run.json");
    expect(manifest.sequencePayloads).toEqual([{ path: "data/users.csv", skipHeader: true, delimiter: ";", options: { quote: "'" } }]);
    expect(() => parseManifest(JSON.stringify({ scenario: "s.yml", sequencePayloads: [{ path: "../users.csv" }] }), "run.json")).toThrow("must be a relative path inside the bundle");
    expect(() => parseManifest(JSON.stringify({ scenario: "s.yml", sequencePayloads: [{ path: "u.csv", order: "sequence" }] }), "run.json")).toThrow("Unrecognized key");
  });
});
