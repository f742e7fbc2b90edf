import { randomBytes } from "node:crypto";

/**
 * AnyCable's reliable streams, as its in-memory broker keeps them (anycable/anycable
 * broker/memory.go, docs/reliable_streams.md "Cache settings"): every broadcast to a stream gets
 * the next offset of that stream (1, 2, 3, …) and the broker's epoch; the last `--history_limit`
 * messages younger than `--history_ttl` are kept for `history` requests.
 */

export interface StreamPosition {
  stream: string;
  epoch: string;
  offset: number;
}

export interface HistoryEntry {
  offset: number;
  /** Unix ms at append; `history.since` (unix seconds) is compared with it in whole seconds, as memory.go does. */
  timeMs: number;
  /** The message as serialised JSON, spliced into each replayed frame. */
  messageJson: string;
}

/** What a client sends as `history` (common.go `HistoryRequest`). */
export interface HistoryRequest {
  /** Unix seconds: every kept message at or after it, for streams without a position. */
  since?: number;
  streams?: Record<string, { epoch: string; offset: number }>;
}

/** One stream's log: a ring buffer of at most `limit` entries, so appending is O(1). */
class StreamLog {
  private readonly entries: HistoryEntry[] = [];
  private head = 0;
  private size = 0;
  lastOffset = 0;

  constructor(private readonly limit: number) {}

  append(messageJson: string, timeMs: number): number {
    const entry = { offset: ++this.lastOffset, timeMs, messageJson };
    if (this.size < this.limit) {
      this.entries[(this.head + this.size) % this.limit] = entry;
      this.size++;
    } else {
      this.entries[this.head] = entry;
      this.head = (this.head + 1) % this.limit;
    }
    return entry.offset;
  }

  /** Drops entries appended before `oldestMs`; they sit at the head, in append order. */
  expire(oldestMs: number): void {
    while (this.size > 0 && this.entries[this.head].timeMs < oldestMs) {
      this.head = (this.head + 1) % this.limit;
      this.size--;
    }
  }

  private at(index: number): HistoryEntry {
    return this.entries[(this.head + index) % this.limit];
  }

  /**
   * memory.go `filterByOffset`: the entries after `offset`, or undefined when they cannot all be
   * served. As AnyCable does, the client's own last offset must still be kept (lowest ≤ offset),
   * an empty log cannot serve anything, and an offset beyond the latest is unknown.
   */
  after(offset: number): HistoryEntry[] | undefined {
    if (this.size === 0) return undefined;
    const low = this.at(0).offset;
    if (low > offset) return undefined;
    const start = offset - low + 1;
    if (start > this.size) return undefined;
    const result: HistoryEntry[] = [];
    for (let i = start; i < this.size; i++) result.push(this.at(i));
    return result;
  }

  /** memory.go `filterByTime`: every kept entry stamped at or after `since`. */
  since(since: number): HistoryEntry[] {
    const result: HistoryEntry[] = [];
    for (let i = 0; i < this.size; i++) {
      const entry = this.at(i);
      if (Math.floor(entry.timeMs / 1000) >= since) result.push(entry);
    }
    return result;
  }
}

/** AnyCable's epoch is a 4-character nanoid; any short random string does the same job. */
function newEpoch(): string {
  return randomBytes(3).toString("base64url");
}

export interface HistoryOptions {
  /** `--history_limit`: messages kept per stream (AnyCable default 100). */
  limit: number;
  /** `--history_ttl`: how long a message is kept, in ms (AnyCable default 300 s). */
  ttlMs: number;
}

export class HistoryStore {
  private readonly logs = new Map<string, StreamLog>();
  private currentEpoch = newEpoch();

  constructor(private readonly options: HistoryOptions) {}

  get epoch(): string {
    return this.currentEpoch;
  }

  /** Records a broadcast; returns its position. Called once per broadcast, before fan-out. */
  append(stream: string, messageJson: string, nowMs: number): StreamPosition {
    let log = this.logs.get(stream);
    if (!log) this.logs.set(stream, (log = new StreamLog(this.options.limit)));
    log.expire(nowMs - this.options.ttlMs);
    return { stream, epoch: this.currentEpoch, offset: log.append(messageJson, nowMs) };
  }

  /**
   * node.go `retreiveHistory`: for each stream of the subscription, the entries after the client's
   * position when it sent one for that stream, else those since `since`. Undefined means
   * `reject_history`: a position from another epoch, for an unknown stream, or older than the kept
   * history.
   */
  retrieve(request: HistoryRequest, streams: readonly string[], nowMs: number): Array<{ stream: string; entry: HistoryEntry }> | undefined {
    const oldest = nowMs - this.options.ttlMs;
    const backlog: Array<{ stream: string; entry: HistoryEntry }> = [];
    for (const stream of streams) {
      const log = this.logs.get(stream);
      log?.expire(oldest);
      const position = request.streams?.[stream];
      if (position) {
        if (position.epoch !== this.currentEpoch || !log) return undefined;
        const entries = log.after(position.offset);
        if (!entries) return undefined;
        for (const entry of entries) backlog.push({ stream, entry });
      } else if (request.since && log) {
        for (const entry of log.since(request.since)) backlog.push({ stream, entry });
      }
    }
    return backlog;
  }

  /** Drops expired messages everywhere (AnyCable's broker runs the same sweep every second). */
  expire(nowMs: number): void {
    const oldest = nowMs - this.options.ttlMs;
    for (const log of this.logs.values()) log.expire(oldest);
  }

  /** What a real restart of AnyCable's memory broker does: a new epoch, no history, offsets from 1. */
  reset(): void {
    this.logs.clear();
    this.currentEpoch = newEpoch();
  }
}
