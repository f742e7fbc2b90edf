import { describe, expect, test } from "vitest";
import { compilePattern, matches, parsePath, readPath } from "../src/match.js";

describe("partial deep match", () => {
  const payload = { action: "newMessage", author_id: "42", message: "hello world", meta: { room: 7, tags: ["a", "b"] } };

  test("extra fields in the payload do not matter", () => {
    expect(matches(payload, compilePattern({ author_id: "42" }))).toBe(true);
    expect(matches(payload, compilePattern({ meta: { room: 7 } }))).toBe(true);
  });

  test("a differing or missing field fails", () => {
    expect(matches(payload, compilePattern({ author_id: "43" }))).toBe(false);
    expect(matches(payload, compilePattern({ nope: "x" }))).toBe(false);
    expect(matches(payload, compilePattern({ meta: { room: 8 } }))).toBe(false);
  });

  test("a string written /.../ is a regexp, with flags", () => {
    expect(matches(payload, compilePattern({ message: "/^hello/" }))).toBe(true);
    expect(matches(payload, compilePattern({ message: "/^HELLO/i" }))).toBe(true);
    expect(matches(payload, compilePattern({ message: "/^world/" }))).toBe(false);
    expect(matches(payload, compilePattern({ missing: "/.*/" }))).toBe(false);
  });

  test("a templated string equals a number with the same text", () => {
    expect(matches({ author_id: 42 }, compilePattern({ author_id: "42" }))).toBe(true);
    expect(matches({ author_id: 42 }, compilePattern({ author_id: "4" }))).toBe(false);
    expect(matches({ ok: true }, compilePattern({ ok: "true" }))).toBe(true);
  });

  test("arrays match element by element", () => {
    expect(matches(payload, compilePattern({ meta: { tags: ["a"] } }))).toBe(true);
    expect(matches(payload, compilePattern({ meta: { tags: ["b"] } }))).toBe(false);
    expect(matches(payload, compilePattern({ meta: { tags: ["a", "b", "c"] } }))).toBe(false);
  });

  test("an object pattern never matches a scalar or null", () => {
    expect(matches(null, compilePattern({ a: 1 }))).toBe(false);
    expect(matches("text", compilePattern({ a: 1 }))).toBe(false);
  });

  test("a whole-payload regexp tests scalar payloads as text", () => {
    expect(matches("pong 12", compilePattern("/^pong \\d+$/"))).toBe(true);
  });
});

describe("capture paths", () => {
  test("the JSONPath subset: $, .key, [index], ['key']", () => {
    expect(parsePath("$")).toEqual([]);
    expect(parsePath("$.message.author_id")).toEqual(["message", "author_id"]);
    expect(parsePath("$.items[2]['odd key']")).toEqual(["items", 2, "odd key"]);
  });

  test("a path that is not of the subset is an error that names it", () => {
    expect(() => parsePath("message.id")).toThrow(/starts with "\$"/);
    expect(() => parsePath("$..id")).toThrow(/\$\.\.id/);
    expect(() => parsePath("$.items[*]")).toThrow(/\[\*\]/);
  });

  test("reading follows the path and gives undefined past the end", () => {
    const value = { a: { b: [10, { c: "x" }] } };
    expect(readPath(value, parsePath("$.a.b[1].c"))).toBe("x");
    expect(readPath(value, parsePath("$.a.b[0]"))).toBe(10);
    expect(readPath(value, parsePath("$.a.z.q"))).toBeUndefined();
    expect(readPath(value, [])).toBe(value);
  });
});
