import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { PayloadCsvError, readPayloadRows, type PayloadFile, type PayloadShape } from "cable-worker/contract";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { main } from "../src/cli";
import { FanoutInputError } from "../src/errors";
import { planPayloads } from "../src/payloads";
import { loadScenario } from "../src/scenario";

// A payload csv-parse refuses, said as a person reads the file: its name, the line as an editor
// numbers it (the header is line 1) and the likely cause; never a value from it. csv-parse itself
// compares every row with the first it reads, so an unquoted comma in the first row is reported on
// the second ("Invalid Record Length: expect 3, got 2 on line 2"), and a quote never closed at the
// end of the file. The fan-out reads every payload so before any task starts (run and plan).

/** The error readPayloadRows (the worker's and the fan-out's one reader) gives for `text`. */
function refusal(text: string, payload: Omit<PayloadFile, "path"> = {}, shape: PayloadShape = {}): string {
  try {
    readPayloadRows(Buffer.from(text), { path: "users.csv", ...payload }, shape);
  } catch (err) {
    expect(err).toBeInstanceOf(PayloadCsvError);
    return (err as Error).message;
  }
  throw new Error("no error");
}

describe("a payload csv-parse refuses", () => {
  it("names the line with the unquoted comma, when it is the first row (csv-parse names the next)", () => {
    expect(refusal("email,password,name\na@x.com,pa,ss,Alice\nb@x.com,secret,Bob\n", { skipHeader: true })).toBe(
      'users.csv line 2: 4 fields where the header has 3 — an unquoted comma or quote in a value? Quote the value ("pa,ss")',
    );
  });

  it("names a later line, past blank lines and a quoted value that spans two lines, with CRLF line ends", () => {
    const text = 'email,password,name\r\na@x.com,"multi\r\nline",Alice\r\n\r\nb@x.com,secret,Bob\r\nc@x.com,pa,ss,Carol\r\n';
    expect(refusal(text, { skipHeader: true })).toBe('users.csv line 6: 4 fields where the header has 3 — an unquoted comma or quote in a value? Quote the value ("pa,ss")');
  });

  it("says what a row with too few fields may be", () => {
    expect(refusal("email,password,name\na@x.com,secret,Alice\nb@x.com,Bob\n", { skipHeader: true })).toBe(
      "users.csv line 3: 2 fields where the header has 3 — a value missing, or a quote that runs two values together? Every line needs 3 fields (an empty value is written ,,)",
    );
  });

  it("without a header, judges by the payload's fields, else by most lines; with the file's own delimiter", () => {
    expect(refusal("a@x.com,pa,ss\nb@x.com,pw\n", {}, { fields: 2 })).toBe('users.csv line 1: 3 fields where the payload\'s fields name 2 — an unquoted comma or quote in a value? Quote the value ("pa,ss")');
    expect(refusal("a@x.com,pa,ss\nb@x.com,pw\nc@x.com,pw\n")).toBe('users.csv line 1: 3 fields where most lines have 2 — an unquoted comma or quote in a value? Quote the value ("pa,ss")');
    expect(refusal("email;password\na;p;w\nb;q\n", { skipHeader: true, delimiter: ";" })).toBe('users.csv line 2: 3 fields where the header has 2 — an unquoted ";" or quote in a value? Quote the value ("pa;ss")');
  });

  it("names the line where a quote opens that nothing closes, and a quote inside a value", () => {
    expect(refusal('email,password\na@x.com,secret\n\nb@x.com,"pass\nc@x.com,pw\n', { skipHeader: true })).toBe(
      'users.csv line 4: a quote opens a value that no quote closes before the end of the file — a value that begins with a quote? Quote the whole value and double the quotes inside it ("""pa"ss")',
    );
    expect(refusal('email,password\na@x.com,"pa"ss\n', { skipHeader: true })).toBe('users.csv line 2: a quote inside a value — quote the whole value and double the quotes inside it ("pa""ss")');
    expect(refusal('email,password\na@x.com,pa"ss\n', { skipHeader: true })).toBe('users.csv line 2: a quote inside a value — quote the whole value and double the quotes inside it ("pa""ss")');
  });

  it("prints no value of the file (its rows hold passwords)", () => {
    const message = refusal("email,password\nalice@example.com,hunter,2\nbob@example.com,pw\n", { skipHeader: true });
    expect(message).not.toMatch(/alice|hunter/);
  });

  it("reads a file Artillery reads as it always did", () => {
    expect(readPayloadRows(Buffer.from('email,password\na@x.com,"pa,ss"\nb@x.com,"q""uote"\n'), { path: "users.csv", skipHeader: true }).rows).toBe(2);
  });
});

describe("the fan-out, before any task starts", () => {
  let dir: string;
  const write = (name: string, text: string) => {
    const file = path.join(dir, name);
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, text);
    return file;
  };
  beforeAll(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "fanout-payload-csv-"));
    write("package.json", "{}");
    write("users.csv", "email,password,name\na@x.com,pa,ss,Alice\nb@x.com,secret,Bob\n");
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const scenarioWith = (payload: string) => write("s.yml", `config:\n  target: ws://127.0.0.1:9\n  phases: [{ duration: 1, arrivalRate: 1 }]\n  payload: ${payload}\nscenarios:\n  - flow: [{ think: 1 }]\n`);

  it("reads every payload Artillery will read, sequence or random, and refuses naming the file and line", () => {
    for (const order of ["sequence", "random"]) {
      const scenario = loadScenario(scenarioWith(`{ path: users.csv, fields: [email, password, name], skipHeader: true, order: ${order} }`));
      let message = "";
      try {
        planPayloads(scenario, undefined);
      } catch (err) {
        expect(err).toBeInstanceOf(FanoutInputError);
        message = (err as Error).message;
      }
      expect(message).toBe(`${path.relative(process.cwd(), path.join(dir, "users.csv"))} line 2: 4 fields where the header has 3 — an unquoted comma or quote in a value? Quote the value ("pa,ss")`);
    }
  });

  describe("through the CLI", () => {
    let out: string[];
    beforeEach(() => {
      out = [];
      vi.spyOn(process.stderr, "write").mockImplementation((chunk) => (out.push(String(chunk)), true));
      vi.spyOn(process.stdout, "write").mockImplementation((chunk) => (out.push(String(chunk)), true));
    });
    afterEach(() => vi.restoreAllMocks());

    it("plan and run say it (exit 2), run before any task", async () => {
      const file = scenarioWith("{ path: users.csv, fields: [email, password, name], skipHeader: true }");
      const cwd = process.cwd();
      process.chdir(dir);
      try {
        expect(await main(["plan", file, "--local", "--regions", "local", "--out", path.join(dir, "out")])).toBe(2);
        expect(out.join("")).toContain('would not start: users.csv line 2: 4 fields where the header has 3 — an unquoted comma or quote in a value? Quote the value ("pa,ss")');
        out.length = 0;
        expect(await main(["run", file, "--local", "--regions", "local", "--out", path.join(dir, "out")])).toBe(2);
        expect(out.join("")).toContain("cable-fanout: users.csv line 2: 4 fields where the header has 3");
        expect(out.join("")).not.toMatch(/^run /m);
      } finally {
        process.chdir(cwd);
      }
    });
  });
});
