import { describe, expect, it } from "vitest";
import { withBaselineVerdict } from "../src/compare.js";
import { sidecarSchema } from "../src/sidecar.js";
import {
  baselineCaveats,
  baselineMismatch,
  cleanServerName,
  judgeBaseline,
  mergeTargets,
  parseServerIdentity,
  redactTarget,
  serverFromCounters,
  TargetFold,
  type RunIdentity,
} from "../src/target.js";

describe("redactTarget: scheme, host, port and path, nothing else", () => {
  it.each([
    ["ws://127.0.0.1:3000/cable", "ws://127.0.0.1:3000/cable"],
    ["wss://app.example.com/cable", "wss://app.example.com/cable"],
    // credentials, query and fragment never kept
    ["wss://admin:s3cret@app.example.com:8443/cable?token=hush&x=1#frag", "wss://app.example.com:8443/cable"],
    ["ws://user@host/cable", "ws://host/cable"],
    ["ws://host:3000/app/key?protocol=7&client=js", "ws://host:3000/app/key"],
    ["ws://host/cable;jsessionid=ABC123", "ws://host/cable"],
    // http(s) is a WebSocket to the engine: written ws(s)
    ["http://host:3000/cable", "ws://host:3000/cable"],
    ["https://host/cable?x=1", "wss://host/cable"],
    // default ports and case, as URL normalizes them; no lone "/"
    ["WS://Host.Example:80/", "ws://host.example"],
    ["wss://host:443", "wss://host"],
    ["  ws://host:3000  ", "ws://host:3000"],
    // IPv6
    ["ws://[::1]:3000/cable", "ws://[::1]:3000/cable"],
    ["wss://u:p@[2001:db8::1]/cable?k=v", "wss://[2001:db8::1]/cable"],
  ])("%s → %s", (input, output) => {
    expect(redactTarget(input)).toBe(output);
  });

  it.each([
    ["not a url"],
    [""],
    ["/cable"],
    ["127.0.0.1:3000"],
    ["ftp://host/file"],
    ["file:///etc/passwd"],
    ["javascript:alert(1)"],
    ["ws://{{ $env.HOST }}/cable"],
    ["{{ $processEnvironment.TARGET }}"],
    ["ws://"],
    [`ws://host/${"a".repeat(2_000)}`],
  ])("junk %j → null", (input) => {
    expect(redactTarget(input)).toBeNull();
  });

  it("null for anything that is not a string", () => {
    for (const value of [undefined, null, 42, {}, ["ws://host"]]) expect(redactTarget(value)).toBeNull();
  });

  it("is idempotent, and its output holds no line break", () => {
    const once = redactTarget("ws://h/a\nb\r\tc?x")!;
    expect(once).not.toMatch(/[\r\n\t]/);
    expect(redactTarget(once)).toBe(once);
  });
});

describe("the server's identity", () => {
  it("cleans what a file says: letters, digits, ._/- only, 60 characters at most", () => {
    expect(cleanServerName("anycable-go/1.6.16")).toBe("anycable-go/1.6.16");
    expect(cleanServerName("Laravel Reverb")).toBe("Laravel_Reverb");
    expect(cleanServerName("\u001b[31mnginx<script>")).toBe("31mnginxscript");
    expect(cleanServerName("x".repeat(500))).toHaveLength(60);
    expect(cleanServerName("///")).toBeNull();
    expect(cleanServerName(7)).toBeNull();
  });

  it("parses a name and a version", () => {
    expect(parseServerIdentity("anycable-go/1.6.16")).toEqual({ name: "anycable-go", version: "1.6.16" });
    expect(parseServerIdentity("cloudflare")).toEqual({ name: "cloudflare", version: null });
    expect(parseServerIdentity("odd/")).toEqual({ name: "odd", version: null });
  });

  it("reads the one server a task's counters name", () => {
    expect(serverFromCounters({ "cable.connections": 3, "cable.server_software.anycable-go/1.6.16": 3 })).toBe("anycable-go/1.6.16");
    expect(serverFromCounters({ "cable.server_software.a/1": 2, "cable.server_software.a/2": 1 })).toBeNull();
    expect(serverFromCounters({ "cable.server_software.a/1": 0 })).toBeNull();
    // not a server's name: the disconnect breakdown shares the first letters
    expect(serverFromCounters({ "cable.server_disconnect.remote": 4 })).toBeNull();
    expect(serverFromCounters(undefined)).toBeNull();
  });
});

describe("mergeTargets", () => {
  it("equal → that; disagreeing → null; nothing known → undefined", () => {
    const a = { url: "ws://a:1/cable", server: "anycable-go/1.6.16" };
    expect(mergeTargets([a, a, { ...a }])).toEqual(a);
    expect(mergeTargets([a, { url: "ws://b:1/cable", server: a.server }])).toEqual({ url: null, server: a.server });
    expect(mergeTargets([a, { url: a.url, server: "soketi" }])).toEqual({ url: a.url, server: null });
    expect(mergeTargets([])).toBeUndefined();
    expect(mergeTargets([undefined, null, { url: null, server: null }])).toBeUndefined();
  });

  it("a task that knew nothing does not count against the others", () => {
    expect(mergeTargets([undefined, { url: "ws://a/cable", server: null }, { url: null, server: "nginx/1.25.3" }])).toEqual({ url: "ws://a/cable", server: "nginx/1.25.3" });
  });

  it("redacts and cleans what it is handed (a file may hold anything)", () => {
    expect(mergeTargets([{ url: "ws://u:p@a/cable?t=1", server: "x y" }])).toEqual({ url: "ws://a/cable", server: "x_y" });
  });

  it("the fold reads the servers from the tasks' counters too: a task whose connections reached two says so", () => {
    const fold = new TargetFold();
    fold.add({ url: "ws://a/cable", server: null }, { "cable.server_software.anycable-go/1.6.15": 5 });
    expect(fold.result()).toEqual({ url: "ws://a/cable", server: "anycable-go/1.6.15" });
    fold.add(undefined, { "cable.server_software.anycable-go/1.6.15": 3, "cable.server_software.anycable-go/1.6.16": 2 });
    expect(fold.result()).toEqual({ url: "ws://a/cable", server: null });
  });
});

describe("baselineMismatch", () => {
  const run = (over: Partial<RunIdentity["test"]> = {}, target?: RunIdentity["target"]): RunIdentity => ({
    test: { name: "", scenarios: ["chat"], ...over },
    ...(target ? { target } : {}),
  });
  const local = { url: "ws://127.0.0.1:3000/cable", server: "anycable-go/1.6.16" };

  it("the same scenario and target: comparable", () => {
    expect(baselineMismatch(run({}, local), run({}, local))).toBeNull();
  });

  it("another target, naming both", () => {
    const staging = { url: "ws://staging.example:8080/cable", server: "anycable-go/1.6.16" };
    expect(baselineMismatch(run({}, local), run({}, staging))).toBe("baseline is of another target: ws://staging.example:8080/cable, this run ws://127.0.0.1:3000/cable");
  });

  it("another server behind the same URL; a new version of the same server is no mismatch", () => {
    expect(baselineMismatch(run({}, local), run({}, { ...local, server: "uWebSockets/20" }))).toBe("baseline is of another server: uWebSockets/20, this run anycable-go/1.6.16");
    expect(baselineMismatch(run({}, local), run({}, { ...local, server: "AnyCable-Go/1.6.15" }))).toBeNull();
  });

  it("another test name, or scenarios sharing no name", () => {
    expect(baselineMismatch(run({ name: "chat" }), run({ name: "presence" }))).toBe('baseline is of another scenario: test "presence", this run test "chat"');
    expect(baselineMismatch(run({ scenarios: ["a", "b"] }), run({ scenarios: ["c"] }))).toBe('baseline is of another scenario: "c", this run "a", "b"');
    // overlapping scenarios, or a test unnamed on one side: comparable
    expect(baselineMismatch(run({ scenarios: ["a", "b"] }), run({ scenarios: ["b", "c"] }))).toBeNull();
    expect(baselineMismatch(run({ name: "chat" }), run({ name: "" }))).toBeNull();
  });

  it("an old baseline without a target, or a side that does not know: no mismatch (said as a caveat)", () => {
    expect(baselineMismatch(run({}, local), run())).toBeNull();
    expect(baselineCaveats(run({}, local), run())).toEqual([
      "the baseline names no target (written before runs named theirs, or without the cable-report plugin): compared as a run against ws://127.0.0.1:3000/cable",
    ]);
    expect(baselineMismatch(run({}, local), run({}, { url: null, server: null }))).toBeNull();
    expect(baselineCaveats(run(), run({}, local))).toEqual(["this run names no target: compared as a run against the baseline's ws://127.0.0.1:3000/cable"]);
  });

  it("caveats: the server's new version, and scenarios that changed", () => {
    expect(baselineCaveats(run({ scenarios: ["a", "b"] }, local), run({ scenarios: ["b", "c"] }, { ...local, server: "anycable-go/1.6.15" }))).toEqual([
      "the server's version changed: anycable-go/1.6.15 → anycable-go/1.6.16",
      'the scenarios changed: only in the baseline "c"; only in this run "a"',
    ]);
  });

  it("a hostile baseline file cannot break the line or leak what a URL must not keep", () => {
    const reason = baselineMismatch(run({}, local), run({ name: "a\nb" }, { url: "ws://u:pw@evil/x?secret=1", server: "a\nb" }))!;
    expect(reason).not.toMatch(/\n/);
    const target = baselineMismatch(run({}, local), run({}, { url: "ws://u:pw@evil/x?secret=1", server: null }))!;
    expect(target).toBe("baseline is of another target: ws://evil/x, this run ws://127.0.0.1:3000/cable");
  });
});

describe("judgeBaseline", () => {
  const current: RunIdentity = { test: { name: "", scenarios: ["chat"] }, target: { url: "ws://127.0.0.1:3000/cable", server: null } };
  const staging: RunIdentity = { test: { name: "", scenarios: ["chat"] }, target: { url: "ws://staging.example:8080/cable", server: null } };

  it("the gate refuses another target, in one line naming the flag that compares anyway", () => {
    expect(judgeBaseline(current, staging, { gate: true, any: false })).toEqual({
      refused: "baseline is of another target: ws://staging.example:8080/cable, this run ws://127.0.0.1:3000/cable; --baseline-any compares anyway",
      notes: [],
    });
  });

  it("--baseline-any compares, and says it compared across targets", () => {
    expect(judgeBaseline(current, staging, { gate: true, any: true })).toEqual({
      notes: ["compared across targets (--baseline-any): baseline is of another target: ws://staging.example:8080/cable, this run ws://127.0.0.1:3000/cable"],
    });
  });

  it("deltas only (no gate): compared, with a warning", () => {
    expect(judgeBaseline(current, staging, { gate: false, any: false }).notes[0]).toMatch(/^⚠️ compared across targets: baseline is of another target: .* \(--fail-on-regression refuses it without --baseline-any\)$/);
  });

  it("nothing to say for the same target", () => {
    expect(judgeBaseline(current, current, { gate: true, any: false })).toEqual({ notes: [] });
  });
});

describe("withBaselineVerdict: the verdict in report.md's header", () => {
  // As renderMarkdown lays it out: the title, the headline's quote, the header's list, the table.
  const headline = "> **✅ Completed** · **10** virtual users\n>\n> Target: `ws://a/cable`\n";
  const markdown = `## Load test: chat\n\n${headline}\n- **Scenarios:** chat\n- **Baseline:** base.json — no regression beyond 10%\n\n| Metric |\n`;

  it("after the Baseline line, escaped (no autolink)", () => {
    const out = withBaselineVerdict(markdown, { notes: ["compared across targets (--baseline-any): ws://a/cable"] }, "base.json").split("\n");
    expect(out[7]).toBe("- **Baseline:** base.json — no regression beyond 10%");
    expect(out[8]).toMatch(/^- \*\*Baseline note:\*\* compared across targets \(--baseline-any\): ws\\:\u2060\/\/a\/cable$/);
  });

  it("refused: in the Baseline line's place, at the end of the header's list (not in the headline's quote)", () => {
    const plain = `## Load test: chat\n\n${headline}\n- **Scenarios:** chat\n- **Tasks per region:** local: 1\n\n| Metric |\n`;
    const out = withBaselineVerdict(plain, { refused: "baseline is of another target: ws://b, this run ws://a; --baseline-any compares anyway", notes: [] }, "base.json");
    expect(out.split("\n").slice(6, 10)).toEqual([
      "- **Scenarios:** chat",
      "- **Tasks per region:** local: 1",
      expect.stringMatching(/^- \*\*Baseline:\*\* base\.json — not compared: baseline is of another target/),
      "",
    ]);
  });

  it("nothing to say: the markdown as it was", () => {
    expect(withBaselineVerdict(markdown, { notes: [] }, "base.json")).toBe(markdown);
  });
});

describe("the sidecar's target", () => {
  it("is redacted and cleaned again as it is read", () => {
    const base = {
      format: "artillery-cable-report-sidecar",
      version: 2,
      artilleryVersion: "2.0.34",
      testRunId: "t",
      test: { name: "", scenarios: ["chat"], phases: [] },
      relativeAccuracy: 0.01,
      aggregate: { counters: {}, rates: {}, histograms: {} },
      periods: [],
      checks: null,
    };
    const parsed = sidecarSchema.parse({ ...base, target: { url: "wss://me:pw@host/cable?token=t", server: "nginx/1.25.3 (Ubuntu)" } });
    expect(parsed.target).toEqual({ url: "wss://host/cable", server: "nginx/1.25.3_Ubuntu" });
    expect(sidecarSchema.parse(base).target).toBeUndefined();
    expect(sidecarSchema.safeParse({ ...base, target: { url: "x".repeat(9_000), server: null } }).success).toBe(false);
  });
});
