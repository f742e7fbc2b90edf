/**
 * AnyCable presence sets (docs/presence.md, anycable/anycable broker/memory.go `PresenceAdd`,
 * `PresenceRemove`, `PresenceInfo`): per stream, one record per presence ID, shared by every
 * session that joined with that ID. `join` is announced only for a new ID, `leave` only when the
 * last session of an ID is gone. A disconnected session's records stay for `--presence_ttl`
 * (default 15 s), so that reconnecting clients do not cause join/leave bursts.
 */

/** The `message` of a `{"type":"presence",…}` frame (common.go `PresenceEvent`). */
export interface PresenceEvent {
  type: "join" | "leave";
  id: string;
  info?: unknown;
}

export interface PresenceInfo {
  type: "info";
  total: number;
  records: Array<{ id: string; info: unknown }>;
}

interface PresenceRecord {
  info: unknown;
  sessions: Set<string>;
}

export class PresenceSets {
  private readonly streams = new Map<string, Map<string, PresenceRecord>>();
  /** sid → stream → presence ID */
  private readonly sessions = new Map<string, Map<string, string>>();
  /** Disconnected sessions, in order of their deadline (one TTL for all). */
  private readonly expiring = new Map<string, number>();

  constructor(private readonly ttlMs: number) {}

  /** Undefined when the ID was already present (no event); "mismatch" when this session joined the stream under another ID. */
  join(stream: string, sid: string, id: string, info: unknown): PresenceEvent | undefined | "mismatch" {
    let ofSession = this.sessions.get(sid);
    if (!ofSession) this.sessions.set(sid, (ofSession = new Map()));
    const previous = ofSession.get(stream);
    if (previous !== undefined && previous !== id) return "mismatch";
    ofSession.set(stream, id);
    let records = this.streams.get(stream);
    if (!records) this.streams.set(stream, (records = new Map()));
    const record = records.get(id);
    if (record) {
      record.sessions.add(sid);
      record.info = info;
      return undefined;
    }
    records.set(id, { info, sessions: new Set([sid]) });
    return { type: "join", id, info };
  }

  leave(stream: string, sid: string): PresenceEvent | undefined {
    const ofSession = this.sessions.get(sid);
    const id = ofSession?.get(stream);
    if (!ofSession || id === undefined) return undefined;
    ofSession.delete(stream);
    if (ofSession.size === 0) this.sessions.delete(sid);
    const records = this.streams.get(stream);
    const record = records?.get(id);
    if (!records || !record) return undefined;
    record.sessions.delete(sid);
    if (record.sessions.size > 0) return undefined;
    records.delete(id);
    if (records.size === 0) this.streams.delete(stream);
    return { type: "leave", id };
  }

  info(stream: string): PresenceInfo {
    const records = [...(this.streams.get(stream) ?? new Map<string, PresenceRecord>())].map(([id, { info }]) => ({ id, info }));
    return { type: "info", total: records.length, records };
  }

  /** A session closed: its records expire after the TTL unless it comes back. */
  disconnected(sid: string, nowMs: number): void {
    if (!this.sessions.has(sid)) return;
    this.expiring.delete(sid);
    this.expiring.set(sid, nowMs + this.ttlMs);
  }

  /** Removes the records of sessions past their deadline; returns the leave events to announce. */
  expire(nowMs: number): Array<{ stream: string; event: PresenceEvent }> {
    const events: Array<{ stream: string; event: PresenceEvent }> = [];
    for (const [sid, deadline] of this.expiring) {
      if (deadline > nowMs) break;
      this.expiring.delete(sid);
      for (const stream of [...(this.sessions.get(sid)?.keys() ?? [])]) {
        const event = this.leave(stream, sid);
        if (event) events.push({ stream, event });
      }
    }
    return events;
  }

  clear(): void {
    this.streams.clear();
    this.sessions.clear();
    this.expiring.clear();
  }
}
