import path from "node:path";
import { expect, test } from "vitest";
import { shownPath } from "../src/shown-path.js";

test("a results file is shown as the user named --out: absolute stays absolute, relative is from here", () => {
  const file = path.resolve("results", "run-1", "report.md");
  expect(shownPath(file, "results")).toBe(path.join("results", "run-1", "report.md"));
  expect(shownPath("/tmp/elsewhere/run-1/report.md", "/tmp/elsewhere")).toBe("/tmp/elsewhere/run-1/report.md");
  expect(shownPath(path.resolve("results"), "results")).toBe("results");
});
