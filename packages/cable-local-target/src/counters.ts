import type { WebSocket } from "ws";

/** Simple totals for tests and the /health endpoint. */
export class Counters {
  connectionsOpened = 0;
  connectionsClosed = 0;
  framesIn = 0;
  framesOut = 0;
  /** Broadcasts published (HTTP, channel actions, client events), before fan-out. */
  broadcasts = 0;
  /** Deliveries not sent because of dropBroadcastRatio. */
  deliveriesDropped = 0;
  /** Deliveries sent malformed because of malformedRatio. */
  deliveriesMalformed = 0;
  /** Connections terminated because they did not read fast enough (see send). */
  slowConsumersTerminated = 0;
  /** AnyCable extended protocol: sessions brought back by `?sid=` / `X-ANYCABLE-RESTORE-SID`. */
  sessionsRestored = 0;
  /** `history` requests answered with `confirm_history` / `reject_history`. */
  historyConfirmed = 0;
  historyRejected = 0;
  /** `whisper` commands relayed. */
  whispers = 0;
  /** `restart()` calls (each drops every Action Cable and Pusher connection). */
  restarts = 0;

  snapshot() {
    return {
      connectionsOpened: this.connectionsOpened,
      connectionsClosed: this.connectionsClosed,
      connectionsOpen: this.connectionsOpened - this.connectionsClosed,
      framesIn: this.framesIn,
      framesOut: this.framesOut,
      broadcasts: this.broadcasts,
      deliveriesDropped: this.deliveriesDropped,
      deliveriesMalformed: this.deliveriesMalformed,
      slowConsumersTerminated: this.slowConsumersTerminated,
      sessionsRestored: this.sessionsRestored,
      historyConfirmed: this.historyConfirmed,
      historyRejected: this.historyRejected,
      whispers: this.whispers,
      restarts: this.restarts,
    };
  }
}

export type CounterSnapshot = ReturnType<Counters["snapshot"]>;

/** A client that lets this much pile up unread is cut off, so that one stalled reader cannot exhaust memory. */
const MAX_BUFFERED_BYTES = 64 * 1024 * 1024;

/** Sends one text frame if the socket is open; frames are strings or pre-encoded UTF-8 buffers. */
export function send(ws: WebSocket, frame: string | Buffer, counters: Counters): void {
  if (ws.readyState !== ws.OPEN) return;
  if (ws.bufferedAmount > MAX_BUFFERED_BYTES) {
    counters.slowConsumersTerminated++;
    ws.terminate();
    return;
  }
  ws.send(frame, { binary: false });
  counters.framesOut++;
}

/** The same frame cut in half: not valid JSON, but still a valid text frame. */
export function malformed(frame: Buffer): Buffer {
  let end = frame.length >> 1;
  // Cut on a character boundary: invalid UTF-8 would make the client close with 1007 instead of seeing bad JSON.
  while (end > 0 && (frame[end] & 0xc0) === 0x80) end--;
  return frame.subarray(0, end);
}
