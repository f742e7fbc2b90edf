import { describe, expect, it } from "vitest";
import { headline, runState } from "../src/headline.js";
import { renderMarkdown } from "../src/markdown.js";
import { mergeRegions } from "../src/results.js";
import { taskOf } from "./fixtures.js";

const task = (file: string, users: { created: number; completed: number; failed: number }, extra: Record<string, number> = {}) =>
  taskOf(
    {
      counters: { "vusers.created": users.created, "vusers.completed": users.completed, "vusers.failed": users.failed, ...extra },
      histograms: { "cable.broadcast_latency": Array.from({ length: 200 }, (_, i) => 1 + (i % 50)) },
      checks: [{ check: "cable.broadcast_latency.p95 < 1000", strict: true, passed: true }],
    },
    file,
  );
const run = (tasks = [task("eu-west-2/t1.json", { created: 10, completed: 9, failed: 1 }, { "errors.ETIMEDOUT": 1 })]) =>
  mergeRegions([{ name: "eu-west-2", tasks, files: tasks.map((t) => t.reportFile) }], { tasksPerRegion: tasks.length });

describe("the headline", () => {
  it("comes first, under the title: state, users, latency, errors, checks", () => {
    const markdown = renderMarkdown(run());
    const lines = markdown.split("\n");
    expect(lines[0]).toMatch(/^## /);
    expect(lines[2]).toBe("> **✅ Complete** · **10** virtual users (9 completed, 1 failed)");
    expect(markdown).toMatch(/> \*\*Broadcast latency\*\* p50 [\d.]+ · p95 \*\*[\d.]+\*\* · p99 [\d.]+ ms over 200 samples · \*\*1\*\* error\n/);
    expect(markdown).toContain("> ✅ ensure: 1 of 1 task checks passed");
    expect(markdown.indexOf("> **✅ Complete**")).toBeLessThan(markdown.indexOf("- **Test:**"));
    expect(markdown.indexOf("> **✅ Complete**")).toBeLessThan(markdown.indexOf("| Metric |"));
  });

  it("says a run cut short, with the reason, at the top", () => {
    const merged = run([task("eu-west-2/t1.json", { created: 30, completed: 8, failed: 0 })]);
    merged.all.partialTasks = 1;
    expect(runState(merged)).toEqual({ state: "cut short", reason: "1 task stopped before Artillery wrote its report (figures from the periods it streamed); 22 virtual users cut off in their flow" });
    expect(headline(merged)[1]).toMatch(/^> \*\*✂️ Cut short\*\*: 1 task stopped before Artillery wrote its report .*; 22 virtual users cut off in their flow · \*\*30\*\* virtual users/);
  });

  it("says an aborted run, when and why; a run with missing tasks is incomplete", () => {
    const merged = run();
    merged.timeline!.start = 1_700_000_000_000;
    merged.timeline!.aborted = { condition: "broadcast_latency.p95>300", at: merged.timeline!.start + 65_000, figure: "p95 412 ms" };
    expect(runState(merged)).toEqual({ state: "aborted", reason: "stopped at 1:05 by `--abort-on broadcast_latency.p95>300` (`p95 412 ms`)" });
    const short = mergeRegions([{ name: "eu-west-2", tasks: [task("eu-west-2/t1.json", { created: 1, completed: 1, failed: 0 })], files: ["eu-west-2/t1.json"] }], { tasksPerRegion: 3 });
    expect(runState(short)).toEqual({ state: "incomplete", reason: "1 of 3 tasks reported (eu-west-2 1 of 3)" });
  });

  it("names the target as text, never a link", () => {
    const merged = run();
    merged.target = { url: "wss://cable.example.com/cable", server: "anycable-go/1.6.16" };
    const lines = headline(merged);
    expect(lines[lines.length - 1]).toBe("> Target: `wss://cable.example.com/cable` (anycable-go/1.6.16)");
  });
});

describe("the headline's cross-task latency", () => {
  it("carries the clocks' bound beside it and the negatives counted apart", () => {
    const merged = run([task("eu-west-2/t1.json", { created: 2, completed: 2, failed: 0 }, { "cable.broadcast_latency_negative": 3 })]);
    merged.clockBoundMs = 1.2;
    expect(headline(merged).join("\n")).toMatch(/over 200 samples \(clocks within ±1\.2 ms\) · ⚠️ 3 negative, left out \(clocks disagree\) · \*\*0\*\* errors/);
    merged.clockBoundMs = null;
    expect(headline(merged).join("\n")).toContain("(clocks within an unknown bound)");
    // And the note says how many, of how many stamped broadcasts.
    expect(merged.notes.join("\n")).toContain("3 broadcast latencies were negative");
  });
});
