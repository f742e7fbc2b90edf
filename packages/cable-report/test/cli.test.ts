import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { EXIT_BAD_INPUT, EXIT_OK, EXIT_REGRESSION, main } from "../src/cli.js";
import { around, writeTask } from "./fixtures.js";

let dir: string;
let stderr: string[];
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "cable-report-cli-"));
  stderr = [];
  vi.spyOn(process.stderr, "write").mockImplementation((chunk) => {
    stderr.push(String(chunk));
    return true;
  });
});
afterEach(() => {
  vi.restoreAllMocks();
});

function results(name: string, rttCenter: number, target?: { url: string | null; server: string | null }): string {
  const root = join(dir, name);
  for (const region of ["eu-west-2", "us-east-1"]) {
    writeTask(join(root, region, "task-1.json"), {
      counters: { "vusers.created": 10, "vusers.created_by_name.chat": 10, "vusers.completed": 10 },
      histograms: { "cable.rtt": around(rttCenter, 200, 9) },
      ...(target ? { target } : {}),
    });
  }
  return root;
}

describe("cable-report CLI", () => {
  it("writes the markdown and the merged JSON, and a JSON output works as the next baseline", () => {
    const out = join(dir, "report.md");
    const json = join(dir, "merged.json");
    expect(main([results("base", 20), "--out", out, "--json", json, "--title", "Chat"])).toBe(EXIT_OK);
    expect(readFileSync(out, "utf8")).toMatch(/^## Chat\n/);
    expect(JSON.parse(readFileSync(json, "utf8")).all.counters["vusers.created"]).toBe(20);

    const next = join(dir, "next.md");
    expect(main([results("same", 20), "--out", next, "--baseline", json, "--fail-on-regression", "10%"])).toBe(EXIT_OK);
    expect(readFileSync(next, "utf8")).toContain("no regression beyond 10%");
    expect(readdirSync(dir).filter((f) => f.startsWith("."))).toEqual([]);
  });

  it("exits 1 on a regression beyond the threshold, still writing the report", () => {
    const baseline = results("base", 20);
    const out = join(dir, "report.md");
    expect(main([results("slow", 30), "--out", out, "--baseline", baseline, "--fail-on-regression", "10"])).toBe(EXIT_REGRESSION);
    expect(readFileSync(out, "utf8")).toMatch(/\*\*\d+ regressions beyond 10%\*\*/);
    expect(stderr.join("")).toMatch(
      /regression: Round-trip time \(rtt\) \(ms\): p95 in eu-west-2: [\d.]+ → [\d.]+ \(\d+\.\d%\): p95 .* ms\); 95% interval of the change \+[\d.]+% … \+[\d.]+%; all of it ≥ 10%, above the 5 ms floor/,
    );
  });

  it("exits 2 naming the bad file when nothing can be read, and leaves an existing output untouched", () => {
    const root = results("bad", 20);
    for (const region of ["eu-west-2", "us-east-1"]) writeFileSync(join(root, region, "task-1.json"), '{"aggregate": {');
    const out = join(dir, "report.md");
    writeFileSync(out, "previous report\n");

    expect(main([root, "--out", out, "--json", join(dir, "m.json")])).toBe(EXIT_BAD_INPUT);

    expect(stderr.join("")).toContain(`${root}: holds no Artillery reports that could be read (eu-west-2/task-1.json: is not an Artillery JSON report`);
    expect(readFileSync(out, "utf8")).toBe("previous report\n");
    expect(existsSync(join(dir, "m.json"))).toBe(false);
  });

  it("exits 2 with usage on bad arguments", () => {
    expect(main([])).toBe(EXIT_BAD_INPUT);
    expect(main([dir, "--fail-on-regression", "10%"])).toBe(EXIT_BAD_INPUT);
    expect(main([dir, "--baseline", dir, "--fail-on-regression", "lots"])).toBe(EXIT_BAD_INPUT);
    expect(main([dir, "--bogus"])).toBe(EXIT_BAD_INPUT);
    expect(stderr.join("")).toContain("--fail-on-regression needs --baseline");
    expect(stderr.join("")).toContain("Usage: cable-report <results-dir>");
  });

  describe("a baseline of another target or scenario", () => {
    const local = { url: "ws://127.0.0.1:3000/cable", server: "cable-local-target/0.1.0" };
    const staging = { url: "ws://staging.example:8080/cable", server: "cable-local-target/0.1.0" };

    it("the gate refuses it: exit 2, one line naming both targets, the report written without the comparison", () => {
      const baseline = join(dir, "staging.json");
      expect(main([results("staging", 20, staging), "--out", join(dir, "base.md"), "--json", baseline])).toBe(EXIT_OK);
      expect(JSON.parse(readFileSync(baseline, "utf8")).target).toEqual(staging);
      stderr.length = 0;

      const out = join(dir, "report.md");
      expect(main([results("pr", 20, local), "--out", out, "--json", join(dir, "pr.json"), "--baseline", baseline, "--fail-on-regression", "10%"])).toBe(EXIT_BAD_INPUT);
      expect(stderr.join("")).toBe(
        "cable-report: baseline is of another target: ws://staging.example:8080/cable, this run ws://127.0.0.1:3000/cable; --baseline-any compares anyway\n",
      );
      const report = readFileSync(out, "utf8");
      expect(report).toContain(`- **Baseline:** ${baseline} — not compared: baseline is of another target`);
      expect(report).not.toMatch(/regression beyond/);
      expect(JSON.parse(readFileSync(join(dir, "pr.json"), "utf8")).target).toEqual(local);
    });

    it("--baseline-any compares anyway, and the report says it compared across targets", () => {
      const baseline = results("staging", 20, staging);
      const out = join(dir, "report.md");
      expect(main([results("pr", 20, local), "--out", out, "--baseline", baseline, "--fail-on-regression", "10%", "--baseline-any"])).toBe(EXIT_OK);
      const report = readFileSync(out, "utf8");
      expect(report).toContain("no regression beyond 10%");
      expect(report).toMatch(/- \*\*Baseline note:\*\* compared across targets \(--baseline-any\): baseline is of another target: ws\\:\u2060\/\/staging\.example:8080\/cable, this run ws\\:\u2060\/\/127\.0\.0\.1:3000\/cable/);
      // …and the gate still judges: a slower run across targets is a regression
      expect(main([results("pr-slow", 30, local), "--out", out, "--baseline", baseline, "--fail-on-regression", "10%", "--baseline-any"])).toBe(EXIT_REGRESSION);
    });

    it("refuses another server behind the same URL, and a baseline of another scenario", () => {
      const soketi = results("soketi", 20, { url: local.url, server: "uWebSockets/20" });
      expect(main([results("pr", 20, local), "--out", join(dir, "r.md"), "--baseline", soketi, "--fail-on-regression", "10%"])).toBe(EXIT_BAD_INPUT);
      expect(stderr.join("")).toContain("cable-report: baseline is of another server: uWebSockets/20, this run cable-local-target/0.1.0; --baseline-any compares anyway");

      const other = join(dir, "other");
      writeTask(join(other, "local", "task-1.json"), { counters: { "vusers.created": 10, "vusers.created_by_name.presence": 10 }, test: { name: "", scenarios: ["presence"], phases: [] } });
      stderr.length = 0;
      expect(main([results("pr2", 20, local), "--out", join(dir, "r2.md"), "--baseline", other, "--fail-on-regression", "10%"])).toBe(EXIT_BAD_INPUT);
      expect(stderr.join("")).toBe('cable-report: baseline is of another scenario: "presence", this run "chat"; --baseline-any compares anyway\n');
    });

    it("an old baseline that names no target is compared, and the report says so", () => {
      const old = results("old", 20);
      const out = join(dir, "report.md");
      expect(main([results("pr", 20, local), "--out", out, "--baseline", old, "--fail-on-regression", "10%"])).toBe(EXIT_OK);
      expect(readFileSync(out, "utf8")).toContain("- **Baseline note:** the baseline names no target");
    });

    it("--baseline-any needs --baseline", () => {
      expect(main([results("pr", 20, local), "--baseline-any"])).toBe(EXIT_BAD_INPUT);
      expect(stderr.join("")).toContain("--baseline-any needs --baseline");
    });
  });
});
