// Artillery's own `publish-metrics` plugin (its Prometheus pushgateway and OpenTelemetry OTLP/HTTP
// reporters) keeps working with the engine's metrics: through the real artillery CLI, every
// `cable.*` counter of the JSON report's aggregate arrives at each backend with the same total, and
// `cable.*` rates and summaries arrive with the values of the report's periods (issue 41). The
// engine patches Artillery's per-period aggregation (src/period-metrics.ts); both reporters read
// the per-period `stats` events that the report's `intermediate` is made of, while the report's
// `aggregate` is built from the workers' own period data: a period the patch merged late, or twice,
// would make them differ. docs/publish-metrics.md relies on this test.
//
// What the plugin sends (artillery 2.0.34, dist/builtin-packages/artillery-plugin-publish-metrics):
//
// Prometheus (lib/prometheus.js), on every `stats` event (one Artillery period, all workers merged):
//   - counters:  prom-client Counter `<prefix>_counters{metric="<name>"}`, `.inc(period value)`: the
//     push carries the running total since the start of the run (not a delta);
//   - rates:     Gauge `<prefix>_rates{metric="<name>"}`, set to the period's rate;
//   - summaries: Gauge `<prefix>_summaries{metric="<name>_<stat>"}` for stat in min, max, count,
//     mean, p50, median, p75, p90, p95, p99, p999: set to the period's value;
//   - <name> is Artillery's with dots and whitespace made `_`, lowercased (toPrometheusKey);
//     `tags: ["k:v"]` become labels of every series;
//   - sent with `pushAdd` (POST /metrics/job/<WORKER_ID or a uuid>) of prom-client's whole registry,
//     serialized asynchronously: pushes triggered together (the final flush emits the last periods
//     in one loop) all carry the state after the last of them. A gauge keeps its last value until a
//     later period sets it again.
//
// OpenTelemetry (lib/open-telemetry/metrics.js), exporter `otlp-http` (the default):
//   @opentelemetry/exporter-metrics-otlp-http, i.e. OTLP/HTTP with JSON bodies (JsonMetricsSerializer,
//   Content-Type application/json), POSTed to `metrics.endpoint` as given (the full URL, /v1/metrics).
//   On every `stats` event the reporter sets the attributes `startTime`/`endTime` to the period's
//   firstMetricAt/lastMetricAt (beside `metrics.attributes`), records, then collects and exports once:
//   - counters:  Sum, monotonic, DELTA temporality, name unchanged (`cable.messages_sent`): each
//     period's value once, as a point with that period's attributes;
//   - rates:     Gauge `<name>` (observable), the period's rate;
//   - summaries: Gauge `<name>.<stat>` per stat, as above.
//   Gauges are observed at collection with the current attributes: a gauge of a name the period
//   lacks repeats its last value, and when two periods are exported in one collection (the final
//   flush) only the later one's gauges are seen. At cleanup (after a fixed 10 s wait) the reader's
//   shutdown exports once more: the last period's gauges again, and no counter point.
import { createServer, type IncomingMessage, type Server } from "node:http";
import { createRequire } from "node:module";
import type { AddressInfo } from "node:net";
import { gunzipSync } from "node:zlib";
import { runArtillery } from "cable-test-servers";
import { startTarget, type LocalTarget } from "cable-local-target";
import { afterAll, beforeAll, describe, expect, test } from "vitest";

// parse-prometheus-text-format (a cable-fanout dependency, hoisted) ships no types: its prom2json shape.
interface PrometheusFamily {
  name: string;
  type: string;
  metrics: Array<{ value?: string; labels?: Record<string, string> }>;
}
const parsePrometheusTextFormat = createRequire(__filename)("parse-prometheus-text-format") as (text: string) => PrometheusFamily[];

interface Received {
  /** When it arrived (epoch ms). */
  at: number;
  method: string;
  url: string;
  contentType: string;
  body: string;
}

/** An HTTP double on 127.0.0.1, a random port: records every request, answers `answer`. */
async function startDouble(answer: { status: number; contentType: string; body: string }): Promise<{ url: string; received: Received[]; server: Server }> {
  const received: Received[] = [];
  const server = createServer((req: IncomingMessage, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      let raw = Buffer.concat(chunks);
      if (req.headers["content-encoding"] === "gzip") raw = gunzipSync(raw);
      received.push({ at: Date.now(), method: req.method ?? "", url: req.url ?? "", contentType: String(req.headers["content-type"] ?? ""), body: raw.toString("utf8") });
      res.writeHead(answer.status, { "content-type": answer.contentType });
      res.end(answer.body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, received, server };
}

// --- OTLP/JSON (opentelemetry-proto's JSON mapping, as the exporter writes it) ---
interface OtlpValue {
  stringValue?: string;
  intValue?: number | string;
  doubleValue?: number;
  boolValue?: boolean;
}
interface OtlpPoint {
  attributes?: Array<{ key: string; value: OtlpValue }>;
  asDouble?: number;
  asInt?: number | string;
}
interface OtlpMetric {
  name: string;
  sum?: { dataPoints: OtlpPoint[]; aggregationTemporality: number; isMonotonic: boolean };
  gauge?: { dataPoints: OtlpPoint[] };
}
interface OtlpRequest {
  resourceMetrics: Array<{ resource?: { attributes?: OtlpPoint["attributes"] }; scopeMetrics: Array<{ scope?: { name?: string }; metrics: OtlpMetric[] }> }>;
}
/** One received point: its export's index, the metric's kind and name, its value and attributes. */
interface Point {
  exportIndex: number;
  kind: "sum" | "gauge";
  name: string;
  value: number;
  temporality?: number;
  monotonic?: boolean;
  attributes: Record<string, string | number | boolean>;
}
const attributeValue = (v: OtlpValue): string | number | boolean =>
  v.stringValue ?? (v.intValue !== undefined ? Number(v.intValue) : undefined) ?? v.doubleValue ?? v.boolValue ?? "";
function otlpPoints(requests: Received[]): Point[] {
  const points: Point[] = [];
  requests.forEach((r, exportIndex) => {
    const body = JSON.parse(r.body) as OtlpRequest;
    for (const rm of body.resourceMetrics)
      for (const sm of rm.scopeMetrics)
        for (const m of sm.metrics) {
          const kind = m.sum ? "sum" : m.gauge ? "gauge" : undefined;
          if (!kind) continue;
          for (const dp of (m.sum ?? m.gauge)!.dataPoints) {
            const attributes = Object.fromEntries((dp.attributes ?? []).map((a) => [a.key, attributeValue(a.value)]));
            points.push({ exportIndex, kind, name: m.name, value: Number(dp.asDouble ?? dp.asInt), temporality: m.sum?.aggregationTemporality, monotonic: m.sum?.isMonotonic, attributes });
          }
        }
  });
  return points;
}

// --- Prometheus text format, as prom-client pushes it ---
/** One push: `<prefix>_<family>` → metric label → value. */
type Push = Record<string, Record<string, number>>;
function parsePush(body: string): Push {
  const push: Push = {};
  for (const family of parsePrometheusTextFormat(body)) {
    const byLabel: Record<string, number> = {};
    for (const m of family.metrics) byLabel[m.labels?.metric ?? ""] = Number(m.value);
    push[family.name] = byLabel;
  }
  return push;
}
const promKey = (name: string): string => name.replace(/\s|\./g, "_").toLowerCase();

/** A period of the report's `intermediate`: the very `stats` object the plugin was handed. */
interface Period {
  period: string | number;
  firstMetricAt: number;
  lastMetricAt: number;
  counters?: Record<string, number>;
  rates?: Record<string, number>;
  summaries?: Record<string, Record<string, number>>;
}

let target: LocalTarget;
let pushgateway: Awaited<ReturnType<typeof startDouble>>;
let collector: Awaited<ReturnType<typeof startDouble>>;
beforeAll(async () => {
  target = await startTarget({ port: 0 });
  pushgateway = await startDouble({ status: 200, contentType: "text/plain", body: "" });
  collector = await startDouble({ status: 200, contentType: "application/json", body: "{}" });
});
afterAll(async () => {
  await target?.close();
  for (const d of [pushgateway, collector]) await new Promise((r) => d?.server.close(r));
});

const USERS = 4;
const MESSAGES = 32;

describe("Artillery's publish-metrics plugin with the engine's metrics", () => {
  test("every cable.* counter, and cable.* rates and summaries, reach a Prometheus pushgateway and an OTLP/HTTP collector as in the report", async () => {
    // A chat room: each user speaks MESSAGES times (stamped), ~0.5 s apart, and waits for its own
    // message back; all four receive every message (cable.broadcast_latency, cable.receive_rate).
    // ~16 s of traffic: the patch goes live in a worker from the period after its SSMS's first
    // aggregation (5 s after the runner is created, before the first VU), so at most 15 s after the
    // VUs start; the last period of frames is handed to Artillery by the patch, the first by events.
    const script = {
      config: {
        target: target.cableUrl,
        engines: { cable: {} },
        cable: { timeout: 10 },
        phases: [{ duration: 1, arrivalCount: USERS }],
        plugins: {
          "publish-metrics": [
            { type: "prometheus", pushgateway: pushgateway.url, prefix: "artillery", tags: ["testid:issue41"] },
            { type: "open-telemetry", serviceName: "cable-test", metrics: { exporter: "otlp-http", endpoint: `${collector.url}/v1/metrics`, attributes: { testid: "issue41" } } },
          ],
        },
      },
      scenarios: [
        {
          name: "chat",
          engine: "cable",
          flow: [
            { connect: { cookies: { uid: "Kay/{{ $uuid }}" } } },
            { subscribe: { channel: "ChatChannel", params: { id: "publish-metrics" }, as: "chat" } },
            {
              loop: [
                { perform: { channel: "chat", action: "speak", data: { message: "hello from {{ $uuid }}" }, stamp: true } },
                { receive: { channel: "chat", match: { author_id: "{{ $uuid }}" }, metric: "rtt" } },
                { think: "500ms" },
              ],
              count: MESSAGES,
            },
            { disconnect: {} },
          ],
        },
      ],
    };
    const run = await runArtillery({ script, env: { NODE_DEBUG: "cable" }, timeoutMs: 60_000 });
    expect(run.code, run.output).toBe(0);
    // The patch was live in the run (it traces when it goes live, under NODE_DEBUG=cable).
    expect(run.output).toContain("per-frame metrics: handed to Artillery a period at a time from the next period");
    const report = run.report as unknown as { aggregate: Period & { summaries: Record<string, Record<string, number>> }; intermediate: Period[] };
    const aggregate = report.aggregate;
    const periods = report.intermediate;
    const cableCounters = Object.entries(aggregate.counters ?? {}).filter(([name]) => name.startsWith("cable."));

    // The run is what it should be, and the report is self-consistent: its periods add up to it.
    expect(aggregate.counters?.["cable.messages_sent"]).toBe(USERS * MESSAGES);
    // Each user gets its own messages back, and the others' while it is in the room.
    expect(aggregate.counters?.["cable.messages_received"]).toBeGreaterThanOrEqual(USERS * MESSAGES);
    expect(aggregate.summaries["cable.broadcast_latency"]?.count).toBeGreaterThan(0);
    expect(cableCounters.length).toBeGreaterThanOrEqual(5);
    for (const [name, total] of cableCounters) expect(periods.reduce((s, p) => s + (p.counters?.[name] ?? 0), 0), name).toBe(total);
    for (const name of ["cable.broadcast_latency", "cable.rtt", "cable.handshake_latency"])
      expect(periods.reduce((s, p) => s + (p.summaries?.[name]?.count ?? 0), 0), name).toBe(aggregate.summaries[name].count);

    // --- Prometheus pushgateway ---
    expect(pushgateway.received.length).toBeGreaterThan(0);
    for (const r of pushgateway.received) {
      expect(r.method).toBe("POST"); // pushAdd
      // The job: the environment's WORKER_ID, else a uuid made when the run starts.
      expect(r.url).toBe(pushgateway.received[0].url);
      expect(r.url).toMatch(/^\/metrics\/job\/[0-9a-f-]{36}$/);
      // `tags` are labels of every series.
      expect(r.body).toContain('artillery_counters{metric="cable_messages_sent",testid="issue41"}');
    }
    const pushes = pushgateway.received.map((r) => parsePush(r.body));
    // Counters are running totals, so the latest state is the push with the largest sum (the last
    // to arrive among equals): the pushgateway keeps only that one.
    const sumOf = (p: Push) => Object.values(p.artillery_counters ?? {}).reduce((s, v) => s + v, 0);
    const most = Math.max(...pushes.map(sumOf));
    const last = pushes.filter((p) => sumOf(p) === most).at(-1)!;
    for (const [name, total] of cableCounters) expect(last.artillery_counters?.[promKey(name)], `prometheus ${name}`).toBe(total);
    // Running totals: every push's counter is the sum of a prefix of the periods.
    const prefixSums = (name: string) => periods.map((_, i) => periods.slice(0, i + 1).reduce((s, p) => s + (p.counters?.[name] ?? 0), 0));
    for (const push of pushes) expect(prefixSums("cable.messages_sent")).toContain(push.artillery_counters?.["cable_messages_sent"] ?? 0);
    // Rates and summaries are the last period's that had them (gauges keep their value).
    const lastWith = (kind: "rates" | "summaries", name: string) => periods.filter((p) => p[kind]?.[name] !== undefined).at(-1)!;
    expect(last.artillery_rates?.["cable_receive_rate"]).toBe(lastWith("rates", "cable.receive_rate").rates!["cable.receive_rate"]);
    expect(last.artillery_rates?.["cable_receive_rate"]).toBeGreaterThan(0);
    for (const name of ["cable.broadcast_latency", "cable.rtt"]) {
      const summary = lastWith("summaries", name).summaries![name];
      for (const stat of ["count", "min", "max", "p50", "p95", "p99"]) expect(last.artillery_summaries?.[`${promKey(name)}_${stat}`], `prometheus ${name}_${stat}`).toBe(summary[stat]);
    }
    // Every count a push carried is one period's count (the pushgateway keeps only the last push:
    // the per-period counts go by, they are not added up).
    const broadcastCounts = new Set(periods.map((p) => p.summaries?.["cable.broadcast_latency"]?.count).filter((c) => c !== undefined));
    for (const push of pushes) {
      const c = push.artillery_summaries?.["cable_broadcast_latency_count"];
      if (c !== undefined) expect(broadcastCounts).toContain(c);
    }
    // When every period was pushed alone (no two pushes within 1 s: the launcher hands the plugin at
    // most one period per 2 s tick, except at its final flush), push i is the state after period i:
    // its counters are the running totals to it, and every rate and summary statistic the period
    // had is exactly the period's.
    const pushedAt = pushgateway.received.map((r) => r.at);
    const pushedAlone = pushedAt.every((at, i) => pushedAt.every((other, j) => j === i || Math.abs(at - other) >= 1_000));
    if (pushes.length === periods.length && pushedAlone) {
      periods.forEach((period, i) => {
        for (const [name] of cableCounters) expect(pushes[i].artillery_counters?.[promKey(name)] ?? 0, `push ${i} ${name}`).toBe(prefixSums(name)[i]);
        for (const [name, rate] of Object.entries(period.rates ?? {})) if (name.startsWith("cable.")) expect(pushes[i].artillery_rates?.[promKey(name)], `push ${i} ${name}`).toBe(rate);
        for (const [name, summary] of Object.entries(period.summaries ?? {}))
          if (name.startsWith("cable."))
            for (const [stat, value] of Object.entries(summary)) expect(pushes[i].artillery_summaries?.[`${promKey(name)}_${stat}`], `push ${i} ${name}_${stat}`).toBe(value);
      });
    }

    // --- OpenTelemetry collector (OTLP/HTTP JSON) ---
    expect(collector.received.length).toBeGreaterThan(0);
    for (const r of collector.received) {
      expect(r.method).toBe("POST");
      expect(r.url).toBe("/v1/metrics");
      expect(r.contentType).toContain("application/json");
    }
    const points = otlpPoints(collector.received);
    for (const r of collector.received) {
      const resource = (JSON.parse(r.body) as OtlpRequest).resourceMetrics[0].resource?.attributes ?? [];
      expect(resource.find((a) => a.key === "service.name")?.value.stringValue).toBe("cable-test");
    }
    for (const p of points) expect(p.attributes.testid, p.name).toBe("issue41");
    // Every point's attributes name a period of the report (startTime/endTime: its first and last metric).
    const periodOf = (p: Point) => periods.find((q) => q.firstMetricAt === p.attributes.startTime && q.lastMetricAt === p.attributes.endTime);
    for (const p of points.filter((q) => q.name.startsWith("cable."))) expect(periodOf(p), `otel ${p.name}: a period of the report`).toBeDefined();
    // Counters: DELTA sums, one point per period that had the counter: the points' values are the
    // periods' values, each once, so their sum over every export is the report's total. (Matched as
    // multisets, not by attributes: the reporter mutates one attributes object that the SDK keeps by
    // reference, so when two periods go out in one collection both points show the later period's.)
    for (const [name, total] of cableCounters) {
      const sums = points.filter((p) => p.kind === "sum" && p.name === name);
      for (const p of sums) {
        expect(p.temporality, name).toBe(1); // AGGREGATION_TEMPORALITY_DELTA
        expect(p.monotonic, name).toBe(true);
      }
      const byPeriod = periods.map((q) => q.counters?.[name]).filter((v) => v !== undefined);
      const ascending = (a: number, b: number) => a - b;
      expect(sums.map((p) => p.value).sort(ascending), `otel ${name}`).toEqual(byPeriod.sort(ascending));
      expect(sums.reduce((s, p) => s + p.value, 0), `otel ${name}`).toBe(total);
    }
    // Gauges (rates; summaries as <name>.<stat>): every value is one a period of the report had for
    // that name, never anything else; and the last export (the reader's shutdown, after every
    // period) carries, exactly, the last period's value of every rate and summary statistic.
    const expectedOf = (period: Period, name: string): number | undefined => {
      const dot = name.lastIndexOf(".");
      return period.rates?.[name] ?? period.summaries?.[name.slice(0, dot)]?.[name.slice(dot + 1)];
    };
    const gauges = points.filter((q) => q.kind === "gauge" && q.name.startsWith("cable."));
    for (const p of gauges)
      expect(
        periods.map((q) => expectedOf(q, p.name)),
        `otel ${p.name}`,
      ).toContain(p.value);
    const finalExport = gauges.filter((p) => p.exportIndex === collector.received.length - 1);
    for (const name of ["cable.receive_rate", "cable.send_rate", "cable.broadcast_latency.count", "cable.broadcast_latency.p99", "cable.rtt.count", "cable.rtt.max"]) {
      const lastValue = periods.map((q) => expectedOf(q, name)).filter((v) => v !== undefined).at(-1);
      expect(lastValue, name).toBeDefined();
      expect(finalExport.filter((p) => p.name === name).map((p) => p.value), `otel final ${name}`).toEqual([lastValue]);
    }
    expect(gauges.some((p) => p.name === "cable.receive_rate" && p.value > 0)).toBe(true);
    // Exports of one period each are told by their time: the launcher hands the plugin at most one
    // period per 2 s tick during the run; only its final flush emits several at once. For those
    // exports the attributes name the period surely, and each gauge is exactly that period's value
    // where the period had the name (else it repeats an older one).
    const exportsAt = collector.received.map((r) => r.at);
    const alone = (i: number) => exportsAt.every((at, j) => j === i || Math.abs(at - exportsAt[i]) >= 1_000);
    const single = gauges.filter((p) => p.exportIndex < collector.received.length - 1 && alone(p.exportIndex));
    let exact = 0;
    for (const p of single) {
      const expected = expectedOf(periodOf(p)!, p.name);
      if (expected === undefined) continue;
      expect(p.value, `otel ${p.name} of period ${periodOf(p)!.period}`).toBe(expected);
      exact++;
    }
    expect(exact).toBeGreaterThan(0);
    // And when every period went out alone, the counts of the periods that had the summary add up
    // to the report's count.
    if (collector.received.length === periods.length + 1 && periods.every((_, i) => alone(i))) {
      const counted = single.filter((p) => p.name === "cable.broadcast_latency.count" && periodOf(p)!.summaries?.["cable.broadcast_latency"] !== undefined);
      expect(counted.reduce((s, p) => s + p.value, 0)).toBe(aggregate.summaries["cable.broadcast_latency"].count);
    }
  }, 90_000);
});
