import type { EventEmitter } from "node:events";
import { nowMs } from "./clock.js";
import { EVENT_LOOP_LAG, LagMonitor } from "./lag.js";
import { periodAggregates, type PeriodAggregates } from "./period-metrics.js";

/**
 * Metric names, defined once: the engine emits only these (and `cable.<metric>` of a receive step);
 * the report, the fan-out and the bench may import them (`artillery-engine-cable/metrics`). Keep
 * them stable.
 */
export const METRICS = {
  handshakeLatency: "cable.handshake_latency",
  subscriptionLatency: "cable.subscription_latency",
  broadcastLatency: "cable.broadcast_latency",
  publishLatency: "cable.publish_latency",
  connections: "cable.connections",
  subscriptions: "cable.subscriptions",
  messagesSent: "cable.messages_sent",
  messagesReceived: "cable.messages_received",
  sendRate: "cable.send_rate",
  receiveRate: "cable.receive_rate",
  /**
   * Histogram, one sample per second per worker thread: the most connections the thread held open
   * at once in that second. Its `max` in Artillery's console is the peak (with several worker
   * threads, the busiest thread's; the report's peak sums them). A counter could not say it:
   * Artillery's summary adds counters over periods (issue 16: 29,980 for a real peak of 4,034).
   * Not `cable.connections_…`: Artillery's ensure replaces metric names inside an expression by
   * substring, and the counter `cable.connections` would break `cable.connections_….max`.
   */
  connectionsOpenPeak: "cable.open_connections_peak",
  /**
   * Counter, in each 10 s period: the most connections this process held open at once during it.
   * Artillery sums it over worker threads, the report over aligned tasks, and the report's peak is
   * its max over periods; its whole-run total in Artillery's summary is a sum of peaks, not one.
   */
  connectionsOpenPeriodPeak: "cable.connections_open_period_peak",
  /**
   * Counter: VUs whose subscription failed (rejected, unanswered, or refused auth); 0 for the others,
   * so that an `ensure` condition on it holds in a clean run (an absent metric fails every check).
   * Not `cable.subscriptions_failed`: Artillery's ensure replaces metric names inside expressions by
   * substring, and `cable.subscriptions` would eat its prefix.
   */
  failedSubscriptions: "cable.failed_subscriptions",
  /**
   * Counter prefix: `cable.subscription_rejected.<cause>` beside `errors.cable.subscription_rejected`,
   * one of limit_reached, unauthorized, app_rejected, other (protocol/rejections.ts): why the server refused.
   */
  subscriptionRejected: "cable.subscription_rejected",
  /** Counter prefix: `cable.server_disconnect.<cause>` (server_restart, remote, invalid_request, other) beside `errors.cable.server_disconnect`. */
  serverDisconnect: "cable.server_disconnect",
  staleConnection: "cable.stale_connection",
  /** Delivery accounting of stamped sends: gaps and repeats in each sender's sequence, per channel. */
  messagesMissing: "cable.messages_missing",
  messagesDuplicated: "cable.messages_duplicated",
  /** Reconnects (every protocol): connection attempts, and drop → every channel usable again. */
  reconnectAttempts: "cable.reconnect_attempts",
  /** AnyCable: restored sessions and history; every protocol: restore latency and resubscriptions. */
  restoreLatency: "cable.restore_latency",
  /** From the last frame heard to the drop noticed: 0 for a close or reset, the stale wait for a silent network. */
  dropDetectionLatency: "cable.drop_detection_latency",
  subscriptionsRestored: "cable.subscriptions_restored",
  subscriptionsResubscribed: "cable.subscriptions_resubscribed",
  historyLatency: "cable.history_latency",
  historyReplayed: "cable.history_replayed",
  /** `receive … metric: true`; other names give `cable.<name>` (customMetric). */
  rtt: "cable.rtt",
  /** The generator's worst event-loop delay in each second (lag.ts). */
  eventLoopLag: EVENT_LOOP_LAG,
} as const;

/** `metric: rtt` on a receive step records `cable.rtt`. */
export function customMetric(name: string): string {
  return `cable.${name}`;
}

export type Events = Pick<EventEmitter, "emit">;

/** Artillery's reporting period; its buckets start on 10 s wall-clock boundaries (ssms.ts normalizeTs). */
const PERIOD_MS = 10_000;
const SWEEP_MS = 1_000;

export interface Tracked {
  /** Called about once a second: keepalives and staleness, for all connections in one timer. */
  tick(now: number, events: Events): void;
}

/**
 * The connections open in this thread: feeds the open-connection peaks and finds stale
 * connections with one sweep per second for all of them, instead of a timer per socket.
 */
export class OpenConnections {
  private readonly open = new Set<Tracked>();
  private periodStart = 0;
  private countedInPeriod = 0;
  /** The most connections open at once since the last `cable.open_connections_peak` sample. */
  private highSinceSample = 0;
  private events: Events | undefined;
  private timer: NodeJS.Timeout | undefined;
  /** Warn past this event-loop lag, in ms (config.cable.lagWarning). */
  lagWarningMs = 100;
  private lag: LagMonitor | undefined;
  /**
   * Messages received since the last flush. Artillery stores every counter call until its period
   * closes (three array slots and a timestamp each): one call per second instead of one per frame
   * saves CPU and, under a broadcast burst, hundreds of MB (docs/benchmarks.md). The price: a
   * count may land in the period after the one it belongs to, by up to a second.
   */
  private receivedCount = 0;

  add(conn: Tracked, events: Events): void {
    this.events = events;
    this.open.add(conn);
    this.roll(nowMs());
    this.raisePeak();
    if (!this.timer) {
      this.timer = setInterval(() => this.sweep(), SWEEP_MS);
      this.timer.unref();
      this.lag ??= new LagMonitor(this.lagWarningMs, SWEEP_MS);
      this.lag.start(nowMs());
    }
  }

  /** This thread's per-period aggregates, where Artillery's metric store takes them (period-metrics.ts). */
  private readonly periods: PeriodAggregates | undefined;

  constructor(periods: PeriodAggregates | undefined = periodAggregates()) {
    this.periods = periods;
  }

  /**
   * One received message: `cable.messages_received` (in batches), `cable.receive_rate`, and
   * `cable.broadcast_latency` when it was stamped; the last two a period at a time where Artillery
   * takes them so, else one event each.
   */
  received(events: Events, latencyMs: number | undefined): void {
    this.receivedCount++;
    const periods = this.periods;
    if (periods?.live) {
      const now = Date.now();
      periods.rate(METRICS.receiveRate, now);
      if (latencyMs !== undefined) periods.histogram(METRICS.broadcastLatency, latencyMs, now);
      return;
    }
    events.emit("rate", METRICS.receiveRate);
    if (latencyMs !== undefined) events.emit("histogram", METRICS.broadcastLatency, latencyMs);
  }

  private flushReceived(): void {
    if (this.receivedCount === 0 || !this.events) return;
    this.events.emit("counter", METRICS.messagesReceived, this.receivedCount);
    this.receivedCount = 0;
  }

  delete(conn: Tracked): void {
    this.open.delete(conn);
    // Before the VU that closes it ends: every count reaches the report.
    this.flushReceived();
    if (this.open.size === 0) this.samplePeak();
    if (this.open.size === 0 && this.timer) {
      clearInterval(this.timer);
      this.timer = undefined;
      this.lag?.stop();
    }
  }

  private raisePeak(): void {
    if (this.open.size > this.highSinceSample) this.highSinceSample = this.open.size;
    if (this.open.size > this.countedInPeriod) {
      this.events?.emit("counter", METRICS.connectionsOpenPeriodPeak, this.open.size - this.countedInPeriod);
      this.countedInPeriod = this.open.size;
    }
  }

  /** One `cable.open_connections_peak` sample: the most open at once since the last one. */
  private samplePeak(): void {
    if (this.highSinceSample === 0 || !this.events) return;
    this.events.emit("histogram", METRICS.connectionsOpenPeak, this.highSinceSample);
    this.highSinceSample = this.open.size;
  }

  private roll(now: number): void {
    const start = now - (now % PERIOD_MS);
    if (start !== this.periodStart) {
      this.periodStart = start;
      this.countedInPeriod = 0;
    }
  }

  private sweep(): void {
    const now = nowMs();
    this.roll(now);
    this.raisePeak();
    if (!this.events) return;
    this.samplePeak();
    this.flushReceived();
    this.lag?.sample(this.events, now);
    for (const conn of this.open) conn.tick(now, this.events);
  }
}
