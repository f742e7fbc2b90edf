// `--server-metrics URL`: the server's own figures beside each step, as the seed articles report them
// (vCPU, memory, connections). The search scrapes a Prometheus text endpoint (anycable-go's
// `--metrics_http=/metrics`, Sockudo's metrics port, a node exporter) while it runs; parsing is
// parse-prometheus-text-format's (the prom2json shape), not ours.
import type { ServerSeries } from "artillery-plugin-cable-report";
import parsePrometheusTextFormat from "parse-prometheus-text-format";

export interface ServerSample {
  at: number;
  /** process_cpu_seconds_total, summed over its series. */
  cpuSeconds: number | null;
  memoryBytes: number | null;
  connections: number | null;
}

/** Where each figure comes from, first found wins. */
const CPU = ["process_cpu_seconds_total"];
const MEMORY = ["process_resident_memory_bytes", "anycable_go_mem_sys_bytes"];
const CONNECTIONS = ["anycable_go_clients_num", "sockudo_connected", "sockudo_active_connections", "soketi_connected"];

function total(families: Map<string, number[]>, names: string[]): number | null {
  for (const name of names) {
    const values = families.get(name);
    if (values && values.length > 0) return values.reduce((a, b) => a + b, 0);
  }
  return null;
}

export function readSample(text: string, at: number): ServerSample {
  const families = new Map<string, number[]>();
  // The parser drops a last line without its newline (the format ends every line with one).
  for (const family of parsePrometheusTextFormat(text.endsWith("\n") ? text : `${text}\n`)) {
    const values = family.metrics.map((m) => Number((m as { value?: string }).value)).filter((v) => Number.isFinite(v));
    families.set(family.name, values);
  }
  // A connection gauge under another name: the first gauge that counts connections or clients.
  let connections = total(families, CONNECTIONS);
  if (connections === null) {
    const guess = [...families.keys()].find((n) => /(^|_)(connections|clients)(_num|_current|_active|_open)?$/.test(n));
    if (guess) connections = total(families, [guess]);
  }
  // anycable-go fills its gauges at its first stats refresh: a running process never has 0 bytes
  // resident, so a 0 is no reading yet (it would read as a step up to a drift verdict).
  const memoryBytes = total(families, MEMORY);
  return { at, cpuSeconds: total(families, CPU), memoryBytes: memoryBytes === 0 ? null : memoryBytes, connections };
}

export async function scrape(url: string, timeoutMs = 1_500): Promise<ServerSample> {
  const at = Date.now();
  const response = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
  if (!response.ok) throw new Error(`HTTP ${response.status}`);
  return readSample(await response.text(), at);
}

export interface ServerFigures {
  /** vCPU used on average over the window (Δ CPU seconds / Δ wall seconds). */
  vCPU: number | null;
  /** The most memory seen in the window, MiB. */
  "memory MiB": number | null;
  /** The most connections the server counted in the window. */
  connections: number | null;
}

const round = (n: number, digits: number) => Math.round(n * 10 ** digits) / 10 ** digits;

/** The server's figures between `from` and `to` (epoch ms), from the samples taken then. */
export function summarizeServer(samples: ServerSample[], from: number, to: number): ServerFigures {
  const inside = samples.filter((s) => s.at >= from && s.at <= to);
  const cpu = inside.filter((s) => s.cpuSeconds !== null);
  const first = cpu[0];
  const last = cpu[cpu.length - 1];
  const memory = inside.map((s) => s.memoryBytes).filter((v): v is number => v !== null);
  const connections = inside.map((s) => s.connections).filter((v): v is number => v !== null);
  return {
    vCPU: first && last && last.at > first.at ? round((last.cpuSeconds! - first.cpuSeconds!) / ((last.at - first.at) / 1000), 2) : null,
    "memory MiB": memory.length > 0 ? round(Math.max(...memory) / 2 ** 20, 1) : null,
    connections: connections.length > 0 ? Math.max(...connections) : null,
  };
}

/** The samples as report.md and report.html chart them (cable-report's ServerSeries): vCPU between consecutive samples. */
export function toServerSeries(samples: ServerSample[]): ServerSeries {
  const sorted = [...samples].sort((a, b) => a.at - b.at);
  return {
    at: sorted.map((s) => s.at),
    vcpu: sorted.map((s, i) => {
      const before = sorted[i - 1];
      if (!before || s.cpuSeconds === null || before.cpuSeconds === null || s.at <= before.at) return null;
      return round(Math.max(0, s.cpuSeconds - before.cpuSeconds) / ((s.at - before.at) / 1000), 2);
    }),
    memoryMiB: sorted.map((s) => (s.memoryBytes === null ? null : round(s.memoryBytes / 2 ** 20, 1))),
    connections: sorted.map((s) => s.connections),
  };
}

/** A URL fit for a log line: no user name or password. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.username || u.password) {
      u.username = "";
      u.password = "";
    }
    return u.toString();
  } catch {
    return "(not a URL)";
  }
}

/**
 * Scrapes `url` every `everyMs` until `signal` aborts; the first failure is logged (the run goes on
 * without the server's figures where scraping fails).
 */
/** `samples`: where each scrape goes as it comes (the live page reads them while the run goes). */
export async function scrapeEvery(
  url: string,
  everyMs: number,
  signal: AbortSignal,
  deps: { sleep: (ms: number, signal?: AbortSignal) => Promise<void>; log: (line: string) => void },
  samples: ServerSample[] = [],
): Promise<ServerSample[]> {
  let failures = 0;
  while (!signal.aborted) {
    try {
      samples.push(await scrape(url));
    } catch (err) {
      if (failures++ === 0) deps.log(`--server-metrics ${redactUrl(url)}: ${(err as Error).message} (the run goes on without the server's figures where it fails)`);
    }
    await deps.sleep(everyMs, signal);
  }
  return samples;
}
