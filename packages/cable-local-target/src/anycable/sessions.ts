/**
 * AnyCable's session cache for resumable sessions (docs/reliable_streams.md "Cache settings",
 * `--sessions_ttl`): what a disconnected extended-protocol session was subscribed to, kept for a
 * while so that a client reconnecting with `?sid=<old sid>` (or `X-ANYCABLE-RESTORE-SID`) gets it
 * back without subscribing again. As in AnyCable's memory broker, restoring does not consume the
 * entry: it expires on its own.
 */
export class SessionCache<Snapshot> {
  // Insertion order is expiry order (one TTL for all), so the sweep stops at the first live entry.
  private readonly retired = new Map<string, { snapshot: Snapshot; expiresAtMs: number }>();

  /** `ttlMs` 0 disables the cache, as `--sessions_ttl=0` does. */
  constructor(private readonly ttlMs: number) {}

  retire(sid: string, snapshot: Snapshot, nowMs: number): void {
    if (this.ttlMs <= 0) return;
    this.retired.delete(sid);
    this.retired.set(sid, { snapshot, expiresAtMs: nowMs + this.ttlMs });
  }

  find(sid: string, nowMs: number): Snapshot | undefined {
    const entry = this.retired.get(sid);
    return entry && entry.expiresAtMs > nowMs ? entry.snapshot : undefined;
  }

  expire(nowMs: number): void {
    for (const [sid, entry] of this.retired) {
      if (entry.expiresAtMs > nowMs) break;
      this.retired.delete(sid);
    }
  }

  clear(): void {
    this.retired.clear();
  }

  get size(): number {
    return this.retired.size;
  }
}
