import { z } from "zod";

/** Knobs that act on one subscription or broadcast, and so can differ per channel. */
const channelFaultsSchema = z
  .object({
    /** Hold confirm_subscription / pusher_internal:subscription_succeeded back this long. */
    confirmDelayMs: z.number().int().min(0).max(120_000),
    /** Refuse every subscription: reject_subscription / the configured Pusher subscription error. */
    rejectSubscriptions: z.boolean(),
    /** Share (0..1) of broadcast deliveries silently not sent, decided per subscriber. */
    dropBroadcastRatio: z.number().min(0).max(1),
    /** Share (0..1) of broadcast deliveries sent cut in half, so that they are not valid JSON. */
    malformedRatio: z.number().min(0).max(1),
    /** Hold every broadcast delivery back this long: a server that is slow on purpose (e.g. the A/B test of the regression gate). */
    broadcastDelayMs: z.number().min(0).max(120_000),
  })
  .partial()
  .strict();

/** Knobs for the whole run (connections, pings, handshakes), plus per-channel overrides. */
export const faultsSchema = channelFaultsSchema
  .extend({
    /** Close every connection this long after it opened. */
    closeAfterMs: z.number().int().min(0).max(3_600_000),
    /** Apply closeAfterMs to every Nth connection only (1: every connection, the default). */
    closeEveryNth: z.number().int().min(1).max(1_000_000),
    /** WebSocket close code for closeAfterMs (default 1000 for Action Cable, 4200 for Pusher). */
    closeCode: z.number().int().min(1000).max(4999),
    /** Action Cable only: send {"type":"disconnect","reason":…} before closing (closeAfterMs). */
    disconnectReason: z.string().min(1).max(100),
    /** Action Cable only: the `reconnect` flag of that disconnect frame (default false). */
    disconnectReconnect: z.boolean(),
    /** Action Cable: no heartbeat pings. Pusher: pusher:ping is not answered with pusher:pong. */
    stopPinging: z.boolean(),
    /** Wait this long before answering the WebSocket upgrade (a slow accept). */
    acceptDelayMs: z.number().int().min(0).max(120_000),
    /**
     * A known capacity, for the capacity search's tests: while more than this many connections are
     * open, every broadcast delivery is held back `overCapacityDelayMs` more. Deterministic: the
     * target is on time up to N users and late beyond, whatever the machine.
     */
    capacityConnections: z.number().int().min(1).max(10_000_000),
    /**
     * A known message-rate capacity, for the capacity search's `--vary rate` tests: while more than
     * this many broadcasts a second arrive (averaged over the last 5 s, sliding, so that the jitter
     * of a steady rate does not count), every broadcast delivery is held back `overCapacityDelayMs` more.
     */
    rateCapacity: z.number().min(0.001).max(10_000_000),
    /** The extra delay above `capacityConnections` or `rateCapacity` (default 1000 ms). */
    overCapacityDelayMs: z.number().int().min(0).max(120_000),
    /**
     * A spike penalty that lingers: once the open connections drop back to `capacityConnections` or
     * fewer (after having been above it), deliveries stay `overCapacityDelayMs` late for this long
     * more, then are on time again. A spike whose recovery time is known: the end of the overload
     * plus the linger. Default 0: on time as soon as the connections are back under the capacity.
     */
    overCapacityLingerMs: z.number().int().min(0).max(3_600_000),
    /**
     * A known leak: the target really allocates and retains this many MiB per minute since it
     * started (a filled Buffer every second, so the pages are resident), up to `leakMaxMb`.
     */
    leakMbPerMinute: z.number().min(0).max(60_000),
    /** The bound of the leak, MiB (default 512): it can never eat the machine. */
    leakMaxMb: z.number().min(0).max(16_384),
    /** A known slowdown that grows: every broadcast delivery is held back (minutes since start × this) ms more. */
    leakDelayMsPerMinute: z.number().min(0).max(60_000),
    /** Seed of the generator behind the ratios, for repeatable runs. */
    seed: z.number().int(),
    /** Overrides by channel: Action Cable channel class (`ChatChannel`, `$pubsub`) or Pusher channel name. */
    channels: z.record(z.string(), channelFaultsSchema),
  })
  .partial()
  .strict();

export type ChannelFaults = z.infer<typeof channelFaultsSchema>;
export type FaultConfig = z.infer<typeof faultsSchema>;

/** Validates a fault configuration, naming the offending field in the error. */
export function parseFaults(input: unknown, source = "faults"): FaultConfig {
  const result = faultsSchema.safeParse(input);
  if (result.success) return result.data;
  const problems = result.error.issues.map((issue) => `${[source, ...issue.path].join(".")}: ${issue.message}`);
  throw new Error(`Invalid fault configuration: ${problems.join("; ")}`);
}

/** mulberry32: tiny, fast, seedable; quality is ample for "drop about 30 %". */
function generator(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Seconds over which `rateCapacity` averages the broadcast rate. */
export const RATE_WINDOW_S = 5;

/**
 * Broadcasts a second over the last RATE_WINDOW_S seconds, sliding: the times of the broadcasts in
 * the window, oldest first. Only kept while `rateCapacity` is set, so a target without it pays nothing.
 */
export class RateWindow {
  private times: number[] = [];
  private head = 0;

  note(now: number): void {
    this.times.push(now);
  }

  /** Broadcasts a second, averaged over the window that ends now. */
  rate(now: number): number {
    const from = now - RATE_WINDOW_S * 1000;
    while (this.head < this.times.length && this.times[this.head] <= from) this.head++;
    // Drop the consumed prefix now and then rather than shifting the array at every call.
    if (this.head > 4096 && this.head * 2 > this.times.length) {
      this.times = this.times.slice(this.head);
      this.head = 0;
    }
    return (this.times.length - this.head) / RATE_WINDOW_S;
  }
}

/** Default bound of the leak (`leakMaxMb`), MiB. */
export const DEFAULT_LEAK_MAX_MB = 512;

/** The live fault configuration of a target; replaced as a whole by `set`. */
export class Faults {
  private current: FaultConfig = {};
  private random: () => number = Math.random;
  private connectionsSeen = 0;
  private readonly broadcastRate = new RateWindow();
  /** Whether the open connections were above `capacityConnections` when last noted. */
  private overConnections = false;
  /** Until when (epoch ms) the over-capacity delay lingers after the connections dropped back. */
  private lingerUntil = 0;

  /** `startedAt`: the target's start (epoch ms), from which `leakDelayMsPerMinute` counts; injectable for tests. */
  constructor(
    config: FaultConfig = {},
    readonly startedAt = Date.now(),
  ) {
    this.set(config);
  }

  set(config: unknown): void {
    this.current = parseFaults(config);
    this.random = generator(this.current.seed ?? Math.floor(Math.random() * 2 ** 32));
    // A configuration without the capacity or the linger ends a linger under way.
    if (this.current.capacityConnections === undefined || !this.current.overCapacityLingerMs) this.lingerUntil = 0;
  }

  get config(): FaultConfig {
    return this.current;
  }

  /** The run-wide knobs with the channel's overrides applied. */
  forChannel(channel: string): ChannelFaults {
    const override = this.current.channels?.[channel];
    return override ? { ...this.current, ...override } : this.current;
  }

  /** Whether closeAfterMs applies to the connection opening now (every Nth, counted from the first). */
  closesThisConnection(): boolean {
    if (this.current.closeAfterMs === undefined) return false;
    this.connectionsSeen += 1;
    return this.connectionsSeen % (this.current.closeEveryNth ?? 1) === 0;
  }

  /** Counts one broadcast (before its fan-out) towards the rate `rateCapacity` is compared with. */
  noteBroadcast(now = Date.now()): void {
    if (this.current.rateCapacity !== undefined) this.broadcastRate.note(now);
  }

  /**
   * Notes the number of open connections, at every open and close: the moment they drop back to
   * `capacityConnections` or fewer starts the `overCapacityLingerMs` linger.
   */
  noteOpenConnections(openConnections: number, now = Date.now()): void {
    const { capacityConnections } = this.current;
    const over = capacityConnections !== undefined && openConnections > capacityConnections;
    if (this.overConnections && !over) this.lingerUntil = now + (this.current.overCapacityLingerMs ?? 0);
    this.overConnections = over;
  }

  /**
   * How long a broadcast delivery is held back: the channel's `broadcastDelayMs`, plus the
   * over-capacity delay above `capacityConnections` open connections (and for
   * `overCapacityLingerMs` after they dropped back) or above `rateCapacity` broadcasts a second,
   * plus `leakDelayMsPerMinute` × the minutes since the target started.
   */
  deliveryDelayMs(channel: ChannelFaults, openConnections: number, now = Date.now()): number {
    this.noteOpenConnections(openConnections, now);
    let delay = channel.broadcastDelayMs ?? 0;
    const { rateCapacity, leakDelayMsPerMinute } = this.current;
    const over = this.overConnections || now < this.lingerUntil || (rateCapacity !== undefined && this.broadcastRate.rate(now) > rateCapacity);
    if (over) delay += this.current.overCapacityDelayMs ?? 1000;
    if (leakDelayMsPerMinute) delay += Math.round((Math.max(0, now - this.startedAt) / 60_000) * leakDelayMsPerMinute);
    return delay;
  }

  /**
   * What becomes of one delivery that is due under the channel's faults, counted: dropped,
   * sent cut in half (not valid JSON), or sent as it is. Both protocols' servers ask this.
   */
  deliveryFate(channel: ChannelFaults, counts: { deliveriesDropped: number; deliveriesMalformed: number }): "dropped" | "malformed" | "intact" {
    if (this.chance(channel.dropBroadcastRatio)) {
      counts.deliveriesDropped++;
      return "dropped";
    }
    if (this.chance(channel.malformedRatio)) {
      counts.deliveriesMalformed++;
      return "malformed";
    }
    return "intact";
  }

  /** True with probability `ratio`; no draw is spent when the ratio is 0 or absent. */
  chance(ratio: number | undefined): boolean {
    if (!ratio) return false;
    return ratio >= 1 || this.random() < ratio;
  }
}
