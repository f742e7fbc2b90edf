// The error names are one table (src/error-names.ts): the README lists every one of them and no
// other, with the steps that raise each; the families keep to their bounded shapes; the back-off and
// the subscription count read the table's traits (the sets they spelled before, kept here as the
// expected answers); and what the step compilers raise themselves is in the table's steps.
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { isTransient } from "../src/backoff.js";
import { CableError } from "../src/errors.js";
import { ERROR_NAMES, errorTraits, httpStatusError, isErrorName, isPusherCloseCode, nameOfCode, NOT_STEPS, pusherCodeError, type ErrorName, type FixedErrorName } from "../src/error-names.js";
import { STEPS, type StepName } from "../src/steps/table.js";

const README = readFileSync(path.resolve(__dirname, "../README.md"), "utf8");
const errorsStart = README.indexOf("\n## Errors\n");
const errorsSection = README.slice(errorsStart, README.indexOf("\n## ", errorsStart + 1));
// Families are written with a placeholder in the README: `cable.http_<status>`, `cable.pusher_*`, `cable.pusher_<code>`;
// their members differ in their traits, so each stands for a few.
const FAMILY_MEMBERS: Record<string, ErrorName[]> = {
  "http_<status>": [httpStatusError(401), httpStatusError(503)],
  "pusher_*": [4001, 4100, 4301].map(pusherCodeError),
  "pusher_<code>": [4001, 4100, 4301].map(pusherCodeError),
};
const FAMILY_SPELLINGS = new Set(Object.keys(FAMILY_MEMBERS));

// A typo in a table's step does not compile: every step it lists is a step's key or one of NOT_STEPS.
type Listed = (typeof ERROR_NAMES)[FixedErrorName]["steps"][number];
const listedSteps: ReadonlyArray<StepName | (typeof NOT_STEPS)[number]> = Object.values(ERROR_NAMES).flatMap((t): readonly Listed[] => t.steps);

const HTTP_STEPS = ["get", "post", "put", "patch", "delete"];
const RAISER_WORDS: Record<string, string> = { connection: "the connection", any: "any step", engine: "the engine, before any step" };
/** The README's "raised by" cell for a set of steps: in the steps table's order, the five HTTP steps as one. */
function raisedBy(steps: ReadonlySet<string>): string {
  const allHttp = HTTP_STEPS.every((s) => steps.has(s));
  return [...Object.keys(STEPS), ...NOT_STEPS]
    .filter((s) => steps.has(s) && !(allHttp && HTTP_STEPS.includes(s) && s !== "get"))
    .map((s) => (allHttp && s === "get" ? "HTTP steps" : (RAISER_WORDS[s] ?? `\`${s}\``)))
    .join(", ");
}

// The step compilers' own raises, by a light reading of src/steps: each top-level function or const
// with the CableError names it raises by literal (and the counted `emit("error", cableCode(…))`) and
// the other top-level names it calls; a step is its const in steps/table.ts and everything it calls.
const STEPS_DIR = path.resolve(__dirname, "../src/steps");
function stepRaises(): Map<StepName, Set<string>> {
  const bodies = new Map<string, string>();
  for (const file of readdirSync(STEPS_DIR).filter((f) => f.endsWith(".ts"))) {
    const text = readFileSync(path.join(STEPS_DIR, file), "utf8");
    const starts = [...text.matchAll(/^(?:export )?(?:async )?(?:function|const) (\w+)/gm)];
    starts.forEach((m, i) => bodies.set(m[1], (bodies.get(m[1]) ?? "") + text.slice(m.index, starts[i + 1]?.index ?? text.length)));
  }
  const raisedIn = (body: string) => [
    ...[...body.matchAll(/new CableError\(\s*"([a-z0-9_]+)"/g)].map((m) => m[1]),
    ...[...body.matchAll(/emit\("error", cableCode\("([a-z0-9_]+)"\)\)/g)].map((m) => m[1]),
    ...(/new CableError\(httpStatusError\(/.test(body) ? ["http_<status>"] : []),
  ];
  const calls = (body: string) => [...bodies.keys()].filter((name) => new RegExp(`(?<![\\w.])${name}\\(`).test(body));
  const table = readFileSync(path.join(STEPS_DIR, "table.ts"), "utf8");
  const entries = table.slice(table.indexOf("export const STEPS = {"), table.indexOf("};", table.indexOf("export const STEPS = {")));
  const out = new Map<StepName, Set<string>>();
  for (const [, key, local] of entries.matchAll(/^\s+(\w+)(?::\s*(\w+))?,$/gm)) {
    const seen = new Set<string>();
    const todo = [local ?? key];
    const raised = new Set<string>();
    while (todo.length) {
      const name = todo.pop()!;
      if (seen.has(name) || !bodies.has(name)) continue;
      seen.add(name);
      for (const r of raisedIn(bodies.get(name)!)) raised.add(r);
      todo.push(...calls(bodies.get(name)!));
    }
    out.set(key as StepName, raised);
  }
  return out;
}

describe("the error table", () => {
  const fixed = Object.keys(ERROR_NAMES) as FixedErrorName[];

  it("is what the README's Errors section lists: every name, and nothing else", () => {
    const written = new Set([...errorsSection.matchAll(/`cable\.([a-z0-9_*<>]+)`/g)].map((m) => m[1]));
    expect(fixed.filter((name) => !written.has(name)), "names the README does not list").toEqual([]);
    expect([...written].filter((name) => !isErrorName(name) && !FAMILY_SPELLINGS.has(name)), "README names the engine never counts").toEqual([]);
  });

  it("gives the README's table, row by row, the steps that raise its names", () => {
    const rows = errorsSection.split("\n").filter((line) => line.startsWith("| `"));
    const checked = rows.flatMap((row) => {
      const [codes, , cell] = row.slice(1, -1).split(" | ").map((c) => c.trim());
      const names = [...codes.matchAll(/`cable\.([a-z0-9_*<>]+)`/g)].flatMap((m) => FAMILY_MEMBERS[m[1]] ?? [m[1] as ErrorName]);
      if (names.length === 0) return [];
      return [{ codes, written: cell, expected: raisedBy(new Set(names.flatMap((n) => errorTraits(n).steps))) }];
    });
    expect(checked.length).toBeGreaterThan(15);
    expect(checked.filter((r) => r.written !== r.expected)).toEqual([]);
  });

  it("lists for each name where it is raised: steps by their key, or the connection, any step, the engine", () => {
    const known = new Set<string>([...Object.keys(STEPS), ...NOT_STEPS]);
    expect(listedSteps.filter((s) => !known.has(s))).toEqual([]);
    for (const name of [...fixed, ...Object.values(FAMILY_MEMBERS).flat()]) {
      const { steps, transient } = errorTraits(name);
      expect(steps.length, name).toBeGreaterThan(0);
      expect(new Set(steps).size, `${name} lists a step twice`).toBe(steps.length);
      // A reconnect retries a transient failure, and ends with reconnect_timeout: it never fails with one.
      if (transient) expect(steps, name).not.toContain("reconnect");
    }
  });

  it("has, for every step, the names its compiler raises itself", () => {
    const raises = stepRaises();
    expect(raises.get("reconnect")).toEqual(new Set(["not_connected", "reconnect_timeout", "history_rejected", "invalid_value"]));
    expect(raises.get("get")).toContain("http_<status>");
    const missing = [...raises].flatMap(([step, names]) =>
      [...names].filter((n) => !(FAMILY_MEMBERS[n] ?? [n as ErrorName]).every((member) => errorTraits(member).steps.includes(step))).map((n) => `${step}: ${n}`),
    );
    expect(missing).toEqual([]);
  });

  it("keeps the families bounded: a status or a documented Pusher code, nothing a server can invent", () => {
    expect(httpStatusError(419)).toBe("http_419");
    expect(isErrorName("http_419")).toBe(true);
    for (const made of ["http_abc", "http_1234", "pusher_99", "pusher_4009x", "stale.extra", "", "cable.stale"]) expect(isErrorName(made), made).toBe(false);
    expect([4001, 4100, 4201, 4301, 4302, 9999, "4100"].map(pusherCodeError)).toEqual(["pusher_4001", "pusher_4100", "pusher_4201", "pusher_4301", "pusher_error", "pusher_error", "pusher_error"]);
    expect(new CableError(pusherCodeError(4100)).code).toBe("cable.pusher_4100");
    expect(nameOfCode("cable.stale")).toBe("stale");
    expect(nameOfCode("ECONNREFUSED")).toBeUndefined();
    expect(nameOfCode("cable.made_up")).toBeUndefined();
  });

  it("knows Pusher's close codes, 4000–4299, whose error frame only announces the close", () => {
    expect([4000, 4009, 4100, 4299].map((c) => isPusherCloseCode(pusherCodeError(c)))).toEqual([true, true, true, true]);
    expect(["pusher_4301", "pusher_error", "http_4000", "stale"].map((n) => isPusherCloseCode(n as ErrorName))).toEqual([false, false, false, false]);
  });

  it("carries the report's hints: the fixed names', and the Pusher codes it explains", () => {
    expect(fixed.filter((name) => errorTraits(name).hint !== undefined)).toEqual(["tls_untrusted", "tls_expired", "tls_hostname", "tls_handshake", "subscription_rejected", "capture_failed", "server_disconnect", "http_redirect_refused", "http_address_refused", "origin_rejected"]);
    expect(errorTraits(pusherCodeError(4100)).hint).toMatch(/^the server is over capacity/);
    expect(errorTraits(pusherCodeError(4100)).transient).toBe(true);
    expect(errorTraits(pusherCodeError(4009)).hint).toBeUndefined();
    // A sign-in's throttle: what it is and what to do; the other statuses have none.
    expect(errorTraits(httpStatusError(429)).hint).toMatch(/per source address.*Retry-After/);
    expect(errorTraits(httpStatusError(404)).hint).toBeUndefined();
  });

  it("marks as transient what the back-off retried before the table: the server not (yet) there", () => {
    const transient = fixed.filter((name) => errorTraits(name).transient);
    expect(transient.sort()).toEqual(["connection_closed", "handshake_timeout", "idle_timeout", "no_pong", "server_disconnect", "subscription_timeout", "too_slow"]);
    const families: Array<[number, boolean]> = [[502, true], [503, true], [504, true], [500, false], [401, false], [419, false]];
    for (const [status, expected] of families) expect(isTransient(new CableError(httpStatusError(status))), `http_${status}`).toBe(expected);
    const pusher: Array<[number, boolean]> = [[4001, false], [4009, false], [4100, true], [4199, true], [4200, true], [4299, true], [4301, false]];
    for (const [code, expected] of pusher) expect(isTransient(new CableError(pusherCodeError(code))), `pusher_${code}`).toBe(expected);
    expect(isTransient(new CableError("unauthorized"))).toBe(false);
  });

  it("marks as a subscription's failure the four the subscription count took before", () => {
    expect(fixed.filter((name) => errorTraits(name).subscription).sort()).toEqual(["auth_failed", "auth_timeout", "subscription_rejected", "subscription_timeout"]);
  });
});
