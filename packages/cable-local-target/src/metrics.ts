/** The Content-Type of Prometheus' text exposition format. */
export const PROMETHEUS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

export interface MetricsFigures {
  /** Open WebSocket connections, Action Cable and Pusher together. */
  connections: number;
  /** Bytes the `leakMbPerMinute` knob retains now. */
  leakedBytes: number;
}

/**
 * `GET /metrics`: the target's real process figures in Prometheus' text format, under the names a
 * Prometheus client library uses (so that `cable-fanout --server-metrics` finds them), plus the
 * target's own gauges. Every line ends with a newline, as the format requires.
 */
export function renderMetrics(figures: MetricsFigures): string {
  const cpu = process.cpuUsage();
  const lines = [
    "# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.",
    "# TYPE process_cpu_seconds_total counter",
    `process_cpu_seconds_total ${(cpu.user + cpu.system) / 1e6}`,
    "# HELP process_resident_memory_bytes Resident memory size in bytes.",
    "# TYPE process_resident_memory_bytes gauge",
    `process_resident_memory_bytes ${process.memoryUsage().rss}`,
    "# HELP process_start_time_seconds Start time of the process since unix epoch in seconds.",
    "# TYPE process_start_time_seconds gauge",
    `process_start_time_seconds ${Math.round(Date.now() / 1000 - process.uptime())}`,
    "# HELP cable_local_target_connections Open WebSocket connections (Action Cable and Pusher).",
    "# TYPE cable_local_target_connections gauge",
    `cable_local_target_connections ${figures.connections}`,
    "# HELP cable_local_target_leaked_bytes Bytes retained by the leakMbPerMinute fault knob.",
    "# TYPE cable_local_target_leaked_bytes gauge",
    `cable_local_target_leaked_bytes ${figures.leakedBytes}`,
  ];
  return `${lines.join("\n")}\n`;
}
