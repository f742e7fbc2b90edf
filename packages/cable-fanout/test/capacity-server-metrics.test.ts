// --server-metrics: the Prometheus text of a real anycable-go (--metrics_http=/metrics) read through
// parse-prometheus-text-format, and the figures per window.
import { startAnyCable, type AnyCableServer } from "cable-test-servers";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import WebSocket from "ws";
import { readSample, scrape, summarizeServer } from "../src/server-metrics";

describe("server metrics", () => {
  test("a Go client's process metrics: CPU seconds, resident memory, a connection gauge by its name", () => {
    const text = [
      "# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.",
      "# TYPE process_cpu_seconds_total counter",
      "process_cpu_seconds_total 12.5",
      "# TYPE process_resident_memory_bytes gauge",
      "process_resident_memory_bytes 1.048576e+08",
      "# TYPE sockudo_connected gauge",
      'sockudo_connected{app_id="a"} 40',
      'sockudo_connected{app_id="b"} 2',
    ].join("\n");
    expect(readSample(text, 1)).toEqual({ at: 1, cpuSeconds: 12.5, memoryBytes: 104857600, connections: 42 });
    expect(readSample("# TYPE x gauge\nx 1\n", 2)).toEqual({ at: 2, cpuSeconds: null, memoryBytes: null, connections: null });
    // anycable-go before its first stats refresh: its memory gauge reads 0, which is no reading.
    expect(readSample("# TYPE anycable_go_mem_sys_bytes gauge\nanycable_go_mem_sys_bytes 0\n", 3).memoryBytes).toBeNull();
  });

  test("per window: vCPU from the CPU counter's slope, the most memory and connections", () => {
    const samples = [0, 10, 20, 30].map((s, i) => ({ at: 1_000_000 + s * 1000, cpuSeconds: 100 + s * 0.7, memoryBytes: (150 + i) * 2 ** 20, connections: 100 * i }));
    expect(summarizeServer(samples, 1_010_000, 1_030_000)).toEqual({ vCPU: 0.7, "memory MiB": 153, connections: 300 });
    expect(summarizeServer(samples, 2_000_000, 3_000_000)).toEqual({ vCPU: null, "memory MiB": null, connections: null });
  });

  describe("against anycable-go's own /metrics", () => {
    let server: AnyCableServer;
    beforeAll(async () => {
      server = await startAnyCable({ args: ["--metrics_http=/metrics", "--stats_refresh_interval=1"] });
    });
    afterAll(() => server?.stop());

    test("memory and open connections", async () => {
      const metrics = `http://127.0.0.1:${server.port}/metrics`;
      // anycable-go refreshes its gauges every --stats_refresh_interval: poll, bounded.
      let before = await scrape(metrics);
      for (let i = 0; i < 40 && !before.memoryBytes; i++) {
        await new Promise((r) => setTimeout(r, 250));
        before = await scrape(metrics);
      }
      expect(before.memoryBytes).toBeGreaterThan(1 << 20);
      expect(before.connections).toBe(0);
      const sockets = await Promise.all(
        [1, 2, 3].map(
          () =>
            new Promise<WebSocket>((resolve, reject) => {
              const ws = new WebSocket(server.url, "actioncable-v1-json");
              ws.once("message", () => resolve(ws));
              ws.once("error", reject);
            }),
        ),
      );
      try {
        let connections: number | null = null;
        for (let i = 0; i < 40 && connections !== 3; i++) {
          await new Promise((r) => setTimeout(r, 250));
          connections = (await scrape(metrics)).connections;
        }
        expect(connections).toBe(3);
      } finally {
        for (const ws of sockets) ws.close();
      }
    }, 30_000);
  });
});
