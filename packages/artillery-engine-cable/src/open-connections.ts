import { nowMs } from "./clock.js";
import { LagMonitor } from "./lag.js";
import { METRICS, type Events } from "./metrics.js";
import { periodAggregates, type PeriodAggregates } from "./period-metrics.js";

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
  /** Negative broadcast latencies since the last flush, batched as receivedCount is. */
  private negativeCount = 0;
  /** A stamped message was received in this thread, and `cable.broadcast_latency_negative` said so (0 at least) yet. */
  private stamped = false;
  private negativeCounted = false;

  /** `periods`: this thread's per-period aggregates, where Artillery's metric store takes them (period-metrics.ts). */
  constructor(private readonly periods: PeriodAggregates | undefined = periodAggregates()) {}

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

  /**
   * One received message: `cable.messages_received` (in batches), `cable.receive_rate`, and
   * `cable.broadcast_latency` when it was stamped; the last two a period at a time where Artillery
   * takes them so, else one event each. A negative latency (the sender's clock ahead of this one
   * by more than the latency) is no sample: it is counted in `cable.broadcast_latency_negative`
   * (in batches), on both paths alike.
   */
  received(events: Events, latencyMs: number | undefined): void {
    this.receivedCount++;
    if (latencyMs !== undefined) {
      this.stamped = true;
      if (latencyMs < 0) {
        this.negativeCount++;
        latencyMs = undefined;
      }
    }
    const periods = this.periods;
    // Artillery's own clock (Date.now), so that a frame lands in the period Artillery would put it in.
    const now = periods?.live ? Date.now() : 0;
    if (periods?.takes(now)) {
      periods.rate(METRICS.receiveRate, now);
      if (latencyMs !== undefined) periods.histogram(METRICS.broadcastLatency, latencyMs, now);
      return;
    }
    events.emit("rate", METRICS.receiveRate);
    if (latencyMs !== undefined) events.emit("histogram", METRICS.broadcastLatency, latencyMs);
  }

  private flushReceived(): void {
    if (!this.events) return;
    if (this.receivedCount > 0) this.events.emit("counter", METRICS.messagesReceived, this.receivedCount);
    this.receivedCount = 0;
    // The first flush after a stamped message says 0 too: the counter exists in a clean run.
    if (this.negativeCount > 0 || (this.stamped && !this.negativeCounted)) {
      this.events.emit("counter", METRICS.broadcastLatencyNegative, this.negativeCount);
      this.negativeCounted = true;
      this.negativeCount = 0;
    }
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
