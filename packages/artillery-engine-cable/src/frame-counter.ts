import type { ChannelInbox, InboundMessage } from "./channel-inbox.js";
import type { DeliveryLedger } from "./delivery.js";
import type { Events } from "./metrics.js";
import type { OpenConnections } from "./open-connections.js";
import { equalsAt, rawBroadcast, stampKey, type RawBroadcast } from "./protocol/scan.js";
import type { Protocol, StreamPosition } from "./protocol/types.js";

/**
 * What a VU knows of its streams across connections: the last position seen in each (for history
 * after a reconnect) and the delivery ledger (for messages lost across it).
 */
export interface StreamMemory {
  /** By channel key, then stream id. */
  positions: Map<string, Map<string, StreamPosition>>;
  ledger: DeliveryLedger;
}

/** What `countRaw` made of a frame: a ping to answer, a broadcast counted, or undefined: decode it. */
export type RawFrame = "ping" | "counted" | undefined;

/**
 * A connection's count of the broadcasts it receives (`cable.messages_received`, their latency,
 * the delivery ledger, stream positions), alike whether a broadcast was decoded or, on the listen
 * path, read from its raw bytes with the protocol's scanner.
 */
export class FrameCounter {
  /** Subscribed identifiers as the server writes them (JSON-escaped) → channel key, for the scanner. */
  private readonly rawKeys = new Map<string, string>();
  /**
   * The identifier bytes the scanner matched last, and their channel key: a connection's broadcasts
   * mostly come on one channel, whose identifier is then compared in place instead of being made
   * into a string and looked up.
   */
  private lastRawKey: Buffer | undefined;
  private lastKey = "";
  private readonly stampBytes: Buffer;
  /** Filled by the scanner for every broadcast: no object per frame. */
  private readonly scanOut = rawBroadcast();

  constructor(
    private readonly protocol: Protocol,
    private readonly stampField: string,
    private readonly channels: ChannelInbox,
    private readonly memory: StreamMemory,
    private readonly tracker: OpenConnections,
    private readonly events: Events,
  ) {
    this.stampBytes = stampKey(stampField);
  }

  subscribe(key: string): void {
    this.rawKeys.set(JSON.stringify(key).slice(1, -1), key);
  }

  unsubscribe(key: string): void {
    this.rawKeys.delete(JSON.stringify(key).slice(1, -1));
    if (this.lastKey === key) this.lastRawKey = undefined;
  }

  /**
   * The listen path: a ping, or a broadcast counted from the raw frame, never parsed, when
   * `mayCountUnparsed` allows it. `heardAt` is when the frame came; `extended`, the connection
   * speaks AnyCable's extended protocol; `messagesWanted`, a step waits for messages.
   */
  countRaw(data: Buffer, heardAt: number, extended: boolean, messagesWanted: boolean): RawFrame {
    const scan = this.protocol.scan!(data, this.stampBytes, this.scanOut);
    if (scan === undefined || scan === "ping") return scan;
    const key = this.keyAt(data, scan.idStart, scan.idEnd);
    if (!this.mayCountUnparsed(scan, key, extended, messagesWanted)) return undefined;
    this.tracker.received(this.events, scan.stamp === undefined ? undefined : heardAt - scan.stamp);
    if (scan.seq !== undefined && scan.senderStart >= 0) this.memory.ledger.record(key, data.toString("utf8", scan.senderStart, scan.senderEnd), scan.seq);
    return "counted";
  }

  /**
   * A broadcast may be counted from its raw bytes only when counting is all it is for: no step
   * waits for messages; no replay counts them and no restore tells copies apart (both read every
   * message); its channel keeps no unread ones for a later `receive`; it carries no stream
   * position that a later restore would start from (AnyCable's extended protocol restores); and
   * a ledger sender has no escapes in it (the ledger keys it as the decoder reads it). A channel
   * not subscribed is left to the decoder, which says what it is.
   */
  private mayCountUnparsed(scan: RawBroadcast, key: string | undefined, extended: boolean, messagesWanted: boolean): key is string {
    return (
      !messagesWanted &&
      !this.channels.readsEveryMessage &&
      !(scan.positioned && extended) &&
      !(scan.ledger && scan.senderStart < 0 && scan.seq !== undefined) &&
      key !== undefined &&
      !this.channels.keepsUnread(key)
    );
  }

  /** The subscribed channel key whose identifier is written at data[start, end), if any. */
  private keyAt(data: Buffer, start: number, end: number): string | undefined {
    if (this.lastRawKey && equalsAt(data, start, end, this.lastRawKey)) return this.lastKey;
    const raw = data.toString("utf8", start, end);
    const key = this.rawKeys.get(raw);
    if (key !== undefined) {
      this.lastRawKey = Buffer.from(raw);
      this.lastKey = key;
    }
    return key;
  }

  /** A decoded broadcast, heard at `heardAt`. */
  countMessage(msg: InboundMessage, heardAt: number): void {
    const payload = msg.payload;
    const stamped = payload !== null && typeof payload === "object" ? (payload as Record<string, unknown>) : undefined;
    const sentAt = stamped?.[this.stampField];
    this.tracker.received(this.events, typeof sentAt === "number" ? heardAt - sentAt : undefined);
    if (stamped && typeof stamped.seq === "number" && typeof stamped.sender === "string") this.memory.ledger.record(msg.channel, stamped.sender, stamped.seq);
    const position = msg.position;
    if (position) {
      let streams = this.memory.positions.get(msg.channel);
      if (!streams) this.memory.positions.set(msg.channel, (streams = new Map()));
      // A replay delivers older offsets after newer live ones: the position only moves forward.
      const last = streams.get(position.stream);
      if (!last || last.epoch !== position.epoch || position.offset > last.offset) streams.set(position.stream, position);
    }
  }
}
