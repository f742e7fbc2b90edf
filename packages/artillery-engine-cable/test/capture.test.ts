import { describe, expect, test } from "vitest";
import { captureHeader, captureJson, captureRegexp, runCaptures } from "../src/capture.js";

describe("HTTP captures, in Artillery's syntax", () => {
  const doc = { user: { id: 7, name: "Kay" }, rooms: [{ id: "a" }, { id: "b" }], token: null };

  test("json: a JSONPath, the first value it finds", () => {
    expect(captureJson(doc, "$.user.id")).toBe(7);
    expect(captureJson(doc, "$.rooms[1].id")).toBe("b");
    expect(captureJson(doc, "$.rooms[*].id")).toBe("a");
    expect(captureJson(doc, "$..name")).toBe("Kay");
    expect(captureJson(doc, "$.rooms[?(@.id=='b')].id")).toBe("b");
    expect(captureJson(doc, "$.missing")).toBeUndefined();
  });

  test("regexp: the whole match, a numbered group, a named group, flags", () => {
    const html = '<meta name="csrf-token" content="TOKEN-1">\n<input name="_token" value="TOKEN-2">';
    expect(captureRegexp(html, "TOKEN-\\d")).toBe("TOKEN-1");
    expect(captureRegexp(html, 'name="_token" value="([^"]+)"', 1)).toBe("TOKEN-2");
    expect(captureRegexp(html, 'content="(?<csrf>[^"]+)"', "csrf")).toBe("TOKEN-1");
    expect(captureRegexp(html, 'NAME="CSRF-TOKEN" CONTENT="([^"]+)"', 1, "i")).toBe("TOKEN-1");
    expect(captureRegexp(html, "nothing-here")).toBeUndefined();
  });

  test("header: by any case, a list joined", () => {
    const headers = { location: "/dashboard", "set-cookie": ["a=1", "b=2"] };
    expect(captureHeader(headers, "Location")).toBe("/dashboard");
    expect(captureHeader(headers, "set-cookie")).toBe("a=1, b=2");
    expect(captureHeader(headers, "x-missing")).toBeUndefined();
  });

  test("a capture that finds nothing is missing, unless strict: false; a null is nothing", () => {
    const answer = { body: JSON.stringify(doc), headers: { "x-user": "7" } };
    const { values, missing } = runCaptures(
      [
        { json: "$.user.id", as: "id" },
        { header: "x-user", as: "header" },
        { json: "$.token", as: "token" },
        { json: "$.nope", as: "optional", strict: false },
        { regexp: "nope", as: "word" },
      ],
      answer,
    );
    expect(values).toEqual({ id: 7, header: "7" });
    expect(missing).toEqual(["token", "word"]);
  });

  test("a json capture on an answer that is not JSON (a sign-in page) is missing, not a crash", () => {
    const { values, missing } = runCaptures([{ json: "$.id", as: "id" }, { regexp: "<title>([^<]+)", group: 1, as: "title" }], { body: "<html><title>Sign in</title>", headers: {} });
    expect(values).toEqual({ title: "Sign in" });
    expect(missing).toEqual(["id"]);
  });
});
