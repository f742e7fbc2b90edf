import { DEFAULT_LEAK_MAX_MB, type Faults } from "./faults.js";

const MIB = 1024 * 1024;
/** Largest single allocation: a big step (a high rate) is taken as several buffers. */
const CHUNK_BYTES = 16 * MIB;
/** How often the leak grows. */
export const LEAK_TICK_MS = 1_000;

/**
 * The `leakMbPerMinute` knob: memory the target really allocates and retains, so that a memory chart
 * (`GET /metrics`' process_resident_memory_bytes) shows a known growth. At every tick the retained
 * amount is brought to min(leakMbPerMinute × minutes since the target started, leakMaxMb) MiB.
 * The buffers are filled, so their pages are resident (a zeroed allocation may not be). Lowering or
 * removing the knob at runtime releases the excess; `release()` (the target's close) frees it all.
 */
export class Leak {
  private readonly chunks: Buffer[] = [];
  private held = 0;

  constructor(
    private readonly faults: Faults,
    /** Epoch ms the leak counts from (the target's start). */
    readonly startedAt = faults.startedAt,
  ) {}

  /** Bytes retained now. */
  get heldBytes(): number {
    return this.held;
  }

  /** Bytes the leak should retain at `now`. */
  targetBytes(now: number): number {
    const { leakMbPerMinute, leakMaxMb } = this.faults.config;
    if (!leakMbPerMinute) return 0;
    const minutes = Math.max(0, now - this.startedAt) / 60_000;
    return Math.floor(Math.min(leakMbPerMinute * minutes, leakMaxMb ?? DEFAULT_LEAK_MAX_MB) * MIB);
  }

  /** Grows (or, after the knob was lowered, shrinks) the retained memory to `targetBytes(now)`. */
  tick(now = Date.now()): void {
    const target = this.targetBytes(now);
    while (this.held < target) {
      const size = Math.min(CHUNK_BYTES, target - this.held);
      // allocUnsafeSlow: an unpooled buffer of its own; fill touches every page so that it counts in RSS.
      this.chunks.push(Buffer.allocUnsafeSlow(size).fill(0xa5));
      this.held += size;
    }
    while (this.held > target && this.chunks.length > 0) {
      const last = this.chunks[this.chunks.length - 1];
      if (this.held - last.length < target) break;
      this.chunks.pop();
      this.held -= last.length;
    }
  }

  release(): void {
    this.chunks.length = 0;
    this.held = 0;
  }
}
