import type { EventEmitter } from "node:events";

/**
 * Metric names, defined once: the engine emits only these (and `cable.<metric>` of a receive step);
 * the report, the fan-out and the bench may import them (`artillery-engine-cable/metrics`). Keep
 * them stable.
 */
export const METRICS = {
  handshakeLatency: "cable.handshake_latency",
  subscriptionLatency: "cable.subscription_latency",
  broadcastLatency: "cable.broadcast_latency",
  /**
   * Counter: stamped broadcasts whose latency came out negative, received before they were sent by
   * the receiver's clock: the sender's and receiver's clocks disagree by more than the latency. Not
   * recorded into `cable.broadcast_latency` (a negative sample would pull its percentiles down);
   * counted here instead, so that the report can say how many. Present (0) wherever a stamped
   * broadcast was received, so that an `ensure` condition on it holds in a clean run.
   */
  broadcastLatencyNegative: "cable.broadcast_latency_negative",
  publishLatency: "cable.publish_latency",
  /**
   * An HTTP step's time, from its request to the last redirect's answer (retries' waits included):
   * a sign-in as its user waits for it. A step with a `name` records `cable.http_latency.<name>` as
   * well, as Artillery's metrics-by-endpoint does, so that the sign-in's own time can be read.
   */
  httpLatency: "cable.http_latency",
  /** Counter: an HTTP step's attempts again after a 429 or 503 (its `retry`). */
  httpRetries: "cable.http_retries",
  /** Counter: cookies the user's jar dropped or evicted, or left off a `Cookie` header, over its caps (session.ts). */
  cookiesDropped: "cable.cookies_dropped",
  /** A Pusher private or presence channel's call to the app's authEndpoint, request to answer: the app's share of a subscription. */
  authLatency: "cable.auth_latency",
  /** Counter prefix: `cable.http_codes.<status>`, every answer of an HTTP step (redirects too), as Artillery's `http.codes.<status>`. */
  httpCodes: "cable.http_codes",
  /** Counter prefix: `cable.auth_failed.<status>` beside `errors.cable.auth_failed`: what the app's authEndpoint answered. */
  authFailed: "cable.auth_failed",
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
  /**
   * Counter prefix: `cable.server_software.<identity>`, once per connection welcomed: what the server
   * said it is on the upgrade (server-software.ts: `anycable-go/1.6.16`, `nginx/1.25.3`), letters,
   * digits and `._/-` only, 60 characters at most, 8 distinct per worker thread. Says who was loaded,
   * not how it did: the report names the server from it and leaves it out of its tables.
   */
  serverSoftware: "cable.server_software",
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
  eventLoopLag: "cable.event_loop_lag",
  /**
   * Counters: seconds whose event-loop lag passed 100 ms, by cause (generator-verdict.ts): the
   * generator's thread used at least half a core while late (saturated), or less (starved: it
   * waited for a CPU that other work held).
   */
  eventLoopLateSaturated: "cable.event_loop_late_saturated",
  eventLoopLateStarved: "cable.event_loop_late_starved",
} as const;

/** `metric: rtt` on a receive step records `cable.rtt`. */
export function customMetric(name: string): string {
  return `cable.${name}`;
}

export type Events = Pick<EventEmitter, "emit">;
