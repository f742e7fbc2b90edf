// The plugin's own ensure conditions on the time verdicts: their grammar, with every mistake named.
import { describe, expect, it } from "vitest";
import { parseSoakMinimum, parseVerdictCheck, verdictCheckProblems } from "../src/verdict-checks.js";

describe("verdict checks", () => {
  it("parse recovery, storm and drift conditions with their units", () => {
    expect(parseVerdictCheck("recovery < 30s")).toEqual({ kind: "recovery", text: "recovery < 30s", op: "<", boundMs: 30_000 });
    expect(parseVerdictCheck("storm.p95 <= 1500ms")).toEqual({ kind: "storm", text: "storm.p95 <= 1500ms", share: "p95", op: "<=", boundMs: 1_500 });
    expect(parseVerdictCheck("drift.memory < 5%/h")).toMatchObject({ kind: "drift", of: "memory", bound: 5, unit: "%/h" });
    expect(parseVerdictCheck("drift.latency<3ms/h")).toMatchObject({ kind: "drift", of: "latency", bound: 3, unit: "ms/h" });
  });

  it("name what is wrong, field by field, before any load", () => {
    expect(() => parseVerdictCheck("recovery < 30")).toThrow(/write one of recovery < 30s/);
    expect(() => parseVerdictCheck("recovery < 5%/h")).toThrow(/recovery is a time: give it in s or ms/);
    expect(() => parseVerdictCheck("drift.memory < 10s")).toThrow(/drift.memory is a trend: give it in %\/h or MiB\/h/);
    expect(() => parseVerdictCheck("drift.latency < 8MiB/h")).toThrow(/drift.latency is not measured in MiB\/h/);
    expect(verdictCheckProblems({ ensure: ["recovery < 30s", "recovry < 30s"] })).toEqual([expect.stringMatching(/^config.plugins.cable-report.ensure\[1\]: "recovry < 30s": write one of/)]);
    expect(verdictCheckProblems({ ensure: "recovery < 30s" })).toEqual(["config.plugins.cable-report.ensure: must be a list of conditions such as recovery < 30s"]);
    expect(verdictCheckProblems({})).toEqual([]);
    expect(verdictCheckProblems(undefined)).toEqual([]);
  });

  it("read soakMinimum as a span, and refuse one too short for a trend", () => {
    expect(parseSoakMinimum("2m")).toBe(120_000);
    expect(parseSoakMinimum("150s")).toBe(150_000);
    expect(parseSoakMinimum(600)).toBe(600_000);
    expect(parseSoakMinimum("1h")).toBe(3_600_000);
    expect(verdictCheckProblems({ soakMinimum: "30s" })).toEqual([expect.stringMatching(/^config.plugins.cable-report.soakMinimum "30s": give a span such as 2m or 90s, at least 120 s/)]);
    expect(verdictCheckProblems({ soakMinimum: "two minutes" })).toEqual([expect.stringMatching(/soakMinimum "two minutes": give a span/)]);
    expect(verdictCheckProblems({ soakMinimum: "2m", ensure: ["drift.memory < 5%/h"] })).toEqual([]);
  });
});
