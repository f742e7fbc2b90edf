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
    expect(lines[2]).toBe("> **❌ Complete, 1 of 10 virtual users failed (more than `maxFailedUsers: 0`)** · **10** virtual users (9 completed, 1 failed)");
    expect(markdown).toMatch(/> \*\*Broadcast latency\*\* p50 [\d.]+ · p95 \*\*[\d.]+\*\* · p99 [\d.]+ ms over 200 samples · \*\*1\*\* error\n/);
    expect(markdown).toContain("> ✅ ensure: 1 of 1 task checks passed");
    expect(markdown.indexOf("> **❌ Complete")).toBeLessThan(markdown.indexOf("- **Test:**"));
    expect(markdown.indexOf("> **❌ Complete")).toBeLessThan(markdown.indexOf("| Metric |"));
  });

  it("says a run cut short, with the reason, at the top", () => {
    const merged = run([task("eu-west-2/t1.json", { created: 30, completed: 8, failed: 0 })]);
    merged.all.partialTasks = 1;
    expect(runState(merged)).toMatchObject({ state: "cut short", reason: "1 task stopped before Artillery wrote its report (figures from the periods it streamed); 22 virtual users cut off in their flow" });
    expect(headline(merged)[1]).toMatch(/^> \*\*✂️ Cut short\*\*: 1 task stopped before Artillery wrote its report .*; 22 virtual users cut off in their flow · \*\*30\*\* virtual users/);
  });

  it("says an aborted run, when and why; a run with missing tasks is incomplete", () => {
    const merged = run();
    merged.timeline!.start = 1_700_000_000_000;
    merged.timeline!.aborted = { condition: "broadcast_latency.p95>300", at: merged.timeline!.start + 65_000, figure: "p95 412 ms" };
    expect(runState(merged)).toMatchObject({ state: "aborted", reason: "stopped at 1:05 by `--abort-on broadcast_latency.p95>300` (`p95 412 ms`)" });
    expect(headline(merged)[1]).toMatch(/^> \*\*❌ Aborted, 1 of 10 virtual users failed\*\*: stopped at 1:05/);
    const short = mergeRegions([{ name: "eu-west-2", tasks: [task("eu-west-2/t1.json", { created: 1, completed: 1, failed: 0 })], files: ["eu-west-2/t1.json"] }], { tasksPerRegion: 3 });
    expect(runState(short)).toMatchObject({ state: "incomplete", reason: "1 of 3 tasks reported (eu-west-2 1 of 3)" });
  });

  it("names the target as text, never a link", () => {
    const merged = run();
    merged.target = { url: "wss://cable.example.com/cable", server: "anycable-go/1.6.16" };
    const lines = headline(merged);
    expect(lines[lines.length - 1]).toBe("> Target: `wss://cable.example.com/cable` (anycable-go/1.6.16)");
  });
});

describe("the headline's state: never green when users failed", () => {
  const withLine = (line: number | string | false | undefined, users: { created: number; completed: number; failed: number }, extra: Record<string, number> = {}) => {
    const merged = run([task("eu-west-2/t1.json", users, extra)]);
    if (line !== undefined) merged.test.maxFailedUsers = line;
    return headline(merged)[1];
  };

  it("is green only when every user completed and nothing erred", () => {
    expect(withLine(undefined, { created: 20, completed: 20, failed: 0 })).toMatch(/^> \*\*✅ Complete\*\* · /);
  });

  it("says how many failed, over the default line of 0, and over a share", () => {
    expect(withLine(undefined, { created: 20, completed: 0, failed: 20 })).toMatch(/^> \*\*❌ Complete, 20 of 20 virtual users failed \(more than `maxFailedUsers: 0`\)\*\*/);
    expect(withLine("5%", { created: 80, completed: 60, failed: 20 })).toMatch(/^> \*\*❌ Complete, 20 of 80 virtual users failed \(more than `maxFailedUsers: 5%`\)\*\*/);
  });

  it("still says it, amber, within the line or with the line off", () => {
    expect(withLine("5%", { created: 100, completed: 98, failed: 2 })).toMatch(/^> \*\*⚠️ Complete, 2 of 100 virtual users failed \(within `maxFailedUsers: 5%`\)\*\*/);
    expect(withLine(false, { created: 20, completed: 0, failed: 20 })).toMatch(/^> \*\*⚠️ Complete, 20 of 20 virtual users failed \(within `maxFailedUsers: off`\)\*\*/);
  });

  it("tells errors without failed users apart", () => {
    expect(withLine(undefined, { created: 20, completed: 20, failed: 0 }, { "errors.cable.stale_connection": 3 })).toMatch(/^> \*\*⚠️ Complete, with 3 errors and no failed user\*\*/);
  });

  it("calls a check on subscriptions that no user attempted not evaluated, not passed", () => {
    const dead = taskOf(
      {
        counters: { "vusers.created": 20, "vusers.failed": 20, "cable.failed_subscriptions": 0, "errors.ECONNREFUSED": 20 },
        checks: [{ check: "cable.failed_subscriptions == 0", strict: true, passed: true }],
      },
      "eu-west-2/t1.json",
    );
    const merged = mergeRegions([{ name: "eu-west-2", tasks: [dead], files: [dead.reportFile] }], { tasksPerRegion: 1 });
    const markdown = renderMarkdown(merged);
    expect(markdown).toContain("> ⚠️ ensure: no task check evaluated, 1 check not evaluated");
    expect(markdown).toContain("| cable.failed\\_subscriptions == 0 | ⚪ not evaluated: no subscription was attempted |");
    // Once a subscription was tried, the same check counts.
    const tried = taskOf({ counters: { "vusers.created": 20, "vusers.completed": 20, "cable.subscriptions": 20, "cable.failed_subscriptions": 0 }, checks: [{ check: "cable.failed_subscriptions == 0", strict: true, passed: true }] }, "eu-west-2/t1.json");
    expect(renderMarkdown(mergeRegions([{ name: "eu-west-2", tasks: [tried], files: [tried.reportFile] }], { tasksPerRegion: 1 }))).toContain("> ✅ ensure: 1 of 1 task checks passed");
  });
});

describe("the headline points at a server that accepts slowly", () => {
  it("names a handshake p95 over half the timeout, and failed users that mostly timed out", () => {
    const slow = taskOf(
      {
        counters: { "vusers.created": 80, "vusers.completed": 60, "vusers.failed": 20, "errors.cable.handshake_timeout": 18, "errors.ECONNRESET": 2 },
        histograms: { "cable.handshake_latency": Array.from({ length: 100 }, (_, i) => 6000 + i * 40) },
      },
      "eu-west-2/t1.json",
    );
    const merged = mergeRegions([{ name: "eu-west-2", tasks: [slow], files: [slow.reportFile] }], { tasksPerRegion: 1 });
    merged.test.timeoutMs = 10_000;
    const text = headline(merged).join("\n");
    expect(text).toMatch(/> ⚠️ Slow acceptance: handshake p95 9\.\d s is over half the 10 s timeout\. .*accept queue \(Puma's backlog/);
    expect(text).toContain("> ⚠️ Most failed users timed out (`cable.handshake_timeout` 18)");
  });

  it("says nothing of quick handshakes, of a run without its timeout, or of failures that were refusals", () => {
    const quick = run([task("eu-west-2/t1.json", { created: 10, completed: 5, failed: 5 }, { "errors.ECONNREFUSED": 5 })]);
    quick.test.timeoutMs = 10_000;
    expect(headline(quick).join("\n")).not.toMatch(/Slow acceptance|timed out/);
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
