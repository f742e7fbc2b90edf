// The error names are one table (src/error-names.ts): the README lists every one of them and no
// other, the families keep to their bounded shapes, and the back-off and the subscription count
// read the table's traits (the sets they spelled before, kept here as the expected answers).
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { isTransient } from "../src/backoff.js";
import { CableError } from "../src/errors.js";
import { ERROR_NAMES, errorTraits, httpStatusError, isErrorName, nameOfCode, pusherCodeError, type FixedErrorName } from "../src/error-names.js";

const README = readFileSync(path.resolve(__dirname, "../README.md"), "utf8");
const errorsStart = README.indexOf("\n## Errors\n");
const errorsSection = README.slice(errorsStart, README.indexOf("\n## ", errorsStart + 1));
// Families are written with a placeholder in the README: `cable.http_<status>`, `cable.pusher_*`, `cable.pusher_<code>`.
const FAMILY_SPELLINGS = new Set(["http_<status>", "pusher_*", "pusher_<code>"]);

describe("the error table", () => {
  const fixed = Object.keys(ERROR_NAMES) as FixedErrorName[];

  it("is what the README's Errors section lists: every name, and nothing else", () => {
    const written = new Set([...errorsSection.matchAll(/`cable\.([a-z0-9_*<>]+)`/g)].map((m) => m[1]));
    expect(fixed.filter((name) => !written.has(name)), "names the README does not list").toEqual([]);
    expect([...written].filter((name) => !isErrorName(name) && !FAMILY_SPELLINGS.has(name)), "README names the engine never counts").toEqual([]);
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
