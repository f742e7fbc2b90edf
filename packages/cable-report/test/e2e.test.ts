// End to end: real `artillery run` tasks with the cable engine against the local
// target, in two region folders, through the `cable-report` bin. Every expected
// number is computed here from the raw report files (and, for percentiles, by
// merging the sidecars' DDSketches with the library directly).
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { DDSketch } from "@artilleryio/sketches-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const run = promisify(execFile);
const ROOT = resolve(__dirname, "../../..");
const PACKAGE = resolve(__dirname, "..");
const ARTILLERY = join(ROOT, "node_modules", ".bin", "artillery");
const TASKS: Array<[region: string, task: string]> = [
  ["eu-west-2", "task-1"],
  ["eu-west-2", "task-2"],
  ["us-east-1", "task-1"],
];

interface Summary {
  min: number;
  max: number;
  count: number;
  mean: number;
  p50: number;
  p95: number;
  p99: number;
}
interface Period {
  period: string;
  counters: Record<string, number>;
  rates: Record<string, number>;
}
interface Report {
  aggregate: { counters: Record<string, number>; summaries: Record<string, Summary> };
  intermediate: Period[];
}
interface SidecarFile {
  aggregate: { histograms: Record<string, string> };
  checks: Array<{ check: string; passed: boolean }> | null;
}

const scenario = (target: string) => `
config:
  target: ${target}
  engines:
    cable: {}
  cable:
    timeout: 5
  phases:
    - name: steady
      duration: 4
      arrivalRate: 3
  plugins:
    cable-report: {}
    ensure: {}
  ensure:
    thresholds:
      - cable.rtt.p99: 5000
scenarios:
  - name: chat
    engine: cable
    flow:
      - connect:
          cookies:
            uid: "e2e/{{ $uuid }}"
      - subscribe:
          channel: ChatChannel
          params:
            id: e2e
          as: chat
      - loop:
          - perform:
              channel: chat
              action: speak
              data:
                message: "hello {{ $uuid }}"
              stamp: true
          - receive:
              channel: chat
              match:
                author_id: "{{ $uuid }}"
              metric: rtt
          - think: "200ms"
        count: 3
      - disconnect: {}
`;

let dir: string;
let markdown: string;
let table: Map<string, string[]>;
let headings: string[];
let target: { cableUrl: string; close(): Promise<void> } | undefined;
const reports = new Map<string, Report>();
const sidecars = new Map<string, SidecarFile>();

beforeAll(async () => {
  await run("npx", ["tsc", "-p", join(PACKAGE, "tsconfig.build.json")], { cwd: ROOT });
  const { startTarget } = (await import("cable-local-target")) as {
    startTarget(o: { port: number }): Promise<{ cableUrl: string; close(): Promise<void> }>;
  };
  target = await startTarget({ port: 0 });
  dir = mkdtempSync(join(tmpdir(), "cable-report-e2e-"));
  const script = join(dir, "chat.yml");
  writeFileSync(script, scenario(target.cableUrl));

  // The tasks run at once, as the fan-out runs them, so their periods overlap.
  await Promise.all(
    TASKS.map(async ([region, task]) => {
      mkdirSync(join(dir, "results", region), { recursive: true });
      const output = join(dir, "results", region, `${task}.json`);
      await run(ARTILLERY, ["run", "-o", output, script], { cwd: ROOT, timeout: 90_000 });
      reports.set(`${region}/${task}`, JSON.parse(readFileSync(output, "utf8")));
      sidecars.set(`${region}/${task}`, JSON.parse(readFileSync(`${output}.sketches.json`, "utf8")));
    }),
  );

  const out = join(dir, "report.md");
  await run(process.execPath, [join(PACKAGE, "bin", "cable-report.js"), join(dir, "results"), "--out", out, "--json", join(dir, "merged.json")], {
    cwd: ROOT,
  });
  markdown = readFileSync(out, "utf8");
  ({ table, headings } = parseTable(markdown));
}, 180_000);

afterAll(async () => {
  await target?.close();
});

/** The comparison table as "Section / Label" → cells, in heading order. */
function parseTable(text: string): { table: Map<string, string[]>; headings: string[] } {
  const lines = text.split("\n").filter((l) => l.startsWith("| "));
  const split = (line: string) => line.split(/(?<!\\)\|/).slice(1, -1).map((c) => c.trim());
  const rows = new Map<string, string[]>();
  let section = "";
  for (const line of lines.slice(1)) {
    const [label, ...cells] = split(line);
    if (/^\*\*.*\*\*$/.test(label) && cells.every((c) => c === "")) section = label.slice(2, -2);
    else rows.set(`${section} / ${label}`, cells);
  }
  return { table: rows, headings: split(lines[0]).slice(1) };
}

const regionTasks = (region: string) =>
  TASKS.filter(([r]) => r === region || region === "all").map(([r, t]) => `${r}/${t}`);
const COLUMNS = ["eu-west-2", "us-east-1", "all"];

function counterSum(column: string, name: string): number {
  return regionTasks(column).reduce((sum, key) => sum + (reports.get(key)!.aggregate.counters[name] ?? 0), 0);
}

function peakOverPeriods(column: string, pick: (p: Period) => number | undefined): number {
  const byPeriod = new Map<string, number>();
  for (const key of regionTasks(column)) {
    for (const p of reports.get(key)!.intermediate) byPeriod.set(p.period, (byPeriod.get(p.period) ?? 0) + (pick(p) ?? 0));
  }
  return Math.max(...byPeriod.values());
}

function mergedSketch(column: string, metric: string): DDSketch {
  const merged = new DDSketch({ relativeAccuracy: 0.01 });
  for (const key of regionTasks(column)) {
    merged.merge(DDSketch.fromProto(Buffer.from(sidecars.get(key)!.aggregate.histograms[metric], "base64")));
  }
  return merged;
}

const round1 = (x: number) => Math.round(x * 10) / 10;
const count = (n: number) => n.toLocaleString("en-US");
const ms = (x: number) => round1(x).toLocaleString("en-US", { minimumFractionDigits: 1, maximumFractionDigits: 1 });

describe("real Artillery runs through the CLI", () => {
  it("the plugin's sketches rebuild each report's own percentiles (within 1%)", () => {
    for (const [key, report] of reports) {
      const histograms = sidecars.get(key)!.aggregate.histograms;
      expect(Object.keys(histograms).sort()).toEqual(Object.keys(report.aggregate.summaries).sort());
      for (const [metric, summary] of Object.entries(report.aggregate.summaries)) {
        const sketch = DDSketch.fromProto(Buffer.from(histograms[metric], "base64"));
        expect(sketch.count).toBe(summary.count);
        for (const [q, reported] of [[0.5, summary.p50], [0.95, summary.p95], [0.99, summary.p99]] as const) {
          expect(Math.abs(round1(sketch.getValueAtQuantile(q)) - reported)).toBeLessThanOrEqual(0.01 * reported + 0.05);
        }
      }
    }
  });

  it("has a column per region, all regions, and marks the region short of tasks", () => {
    expect(headings).toEqual(["eu-west-2", "us-east-1 ⚠️", "**all regions**"]);
    expect(markdown).toContain("- ⚠️ **us-east-1**: 1 of 2 tasks reported");
    expect(markdown).toContain("- **Tasks per region:** eu-west-2: 2, us-east-1: 1 (3 in all)");
    expect(markdown).toContain("- **Phases:** steady: 4 s, 3/s");
  });

  it("adds the counters", () => {
    const rows: Array<[string, string]> = [
      ["Virtual users / Created", "vusers.created"],
      ["Virtual users / Completed", "vusers.completed"],
      ["Virtual users / Failed", "vusers.failed"],
      ["Messages / Sent", "cable.messages_sent"],
      ["Messages / Received", "cable.messages_received"],
      ["Connections / Opened", "cable.connections"],
      ["Connections / Subscriptions", "cable.subscriptions"],
    ];
    for (const [row, counter] of rows) {
      expect(table.get(row), row).toEqual(COLUMNS.map((c) => count(counterSum(c, counter))));
    }
    expect(counterSum("all", "vusers.created")).toBeGreaterThan(0);
    const errors = (c: string) =>
      regionTasks(c).reduce(
        (sum, key) =>
          sum + Object.entries(reports.get(key)!.aggregate.counters).filter(([n]) => n.startsWith("errors.")).reduce((s, [, v]) => s + v, 0),
        0,
      );
    expect(table.get("Errors / All errors")).toEqual(COLUMNS.map((c) => count(errors(c))));
  });

  it("merges the percentiles exactly, and a one-task region shows Artillery's own numbers", () => {
    for (const [section, metric] of [
      ["Round-trip time (rtt) (ms)", "cable.rtt"],
      ["Handshake latency (ms)", "cable.handshake_latency"],
      ["Broadcast latency (ms)", "cable.broadcast_latency"],
    ]) {
      for (const [label, q] of [["p50", 0.5], ["p95", 0.95], ["p99", 0.99]] as const) {
        const cells = table.get(`${section} / ${label}`)!;
        // Clamped to the sketch's own [min, max], as the report does.
        const expected = (c: string) => {
          const sketch = mergedSketch(c, metric);
          return ms(Math.min(Math.max(round1(sketch.getValueAtQuantile(q)), round1(sketch.min)), round1(sketch.max)));
        };
        expect(cells, `${metric} ${label}`).toEqual(COLUMNS.map(expected));
      }
      // A one-task region's cells come from its sketch: Artillery's own figures, within the sketch's
      // 1% (Artillery's JSON summary is read from its own merge of the worker threads' sketches).
      const single = reports.get("us-east-1/task-1")!.aggregate.summaries[metric];
      expectWithinSketchAccuracy(table.get(`${section} / p95`)![1], single.p95);
      expect(table.get(`${section} / Max`)![1]).toBe(ms(single.max));
    }
    const session = reports.get("us-east-1/task-1")!.aggregate.summaries["vusers.session_length"];
    expectWithinSketchAccuracy(table.get("Session length (ms) / Median")![1], session.p50);
    expect(table.get("Session length (ms) / Mean")![2]).toBe(ms(mergedSketch("all", "vusers.session_length").sum / mergedSketch("all", "vusers.session_length").count));
  });

  it("takes peaks over periods aligned by timestamp", () => {
    expect(table.get("Connections / Peak concurrent connections")).toEqual(
      COLUMNS.map((c) => count(peakOverPeriods(c, (p) => p.counters["cable.connections_open_period_peak"]))),
    );
    expect(table.get("Messages / Peak send rate (msg/s)")).toEqual(
      COLUMNS.map((c) => count(peakOverPeriods(c, (p) => p.rates["cable.send_rate"]))),
    );
  });

  it("shows each region's ensure outcomes", () => {
    const passed = (c: string) => regionTasks(c).filter((k) => sidecars.get(k)!.checks?.[0]?.passed).length;
    expect(table.get("Checks (ensure) / cable.rtt.p99 \\< 5000")).toEqual(
      COLUMNS.map((c) => `✅ ${passed(c)}/${regionTasks(c).length} passed`),
    );
  });

  it("draws the latency charts from 0 and stays under the PR comment limit", () => {
    // One chart for both percentiles, or one each when they are over 10× apart.
    expect(markdown).toMatch(/title "Round-trip time \(rtt\): p99( and p50)?"/);
    expect(markdown).toContain('x-axis ["eu-west-2", "us-east-1", "all regions"]');
    expect(markdown).toMatch(/y-axis "ms" 0 --> [\d.]+\n/);
    expect(Buffer.byteLength(markdown)).toBeLessThan(60_000);
  });
});

function expectWithinSketchAccuracy(cell: string, reported: number): void {
  const shown = Number(cell.replace(/[^\d.-]/g, ""));
  expect(Math.abs(shown - reported), `${cell} vs Artillery's ${reported}`).toBeLessThanOrEqual(0.01 * reported + 0.05);
}
