// What one task sends to the target and receives from it over a run, from the script: the frames
// (sends, broadcasts received, the server's pings) times their size (what each send carries as the
// script writes it, in the protocol's envelope, in a WebSocket frame). Low: the frames alone, as if
// packed many to a packet; high: each frame in a TCP/IP packet of its own (and a TLS record on
// wss), which is what a quiet socket does. AWS bills the IP bytes, which fall in between.
import type { UsersEstimate } from "./users.js";
import type { TaskBytes } from "./estimate.js";

/** Bytes around a message's data, per protocol: the JSON envelope each way (measured on the wire of the local target, a short channel name). */
const ENVELOPE = {
  // {"command":"message","identifier":"{\"channel\":\"ChatChannel\",\"id\":\"demo\"}","data":"{…,\"action\":\"speak\"}"} and the stamp
  actioncable: { send: 110, receive: 80, pingBytes: 40, pingEveryS: 3 },
  // {"event":"client-message","channel":"private-room","data":{…}} and the stamp; Pusher servers ping only an idle socket (120 s)
  pusher: { send: 70, receive: 80, pingBytes: 30, pingEveryS: 120 },
} as const;

/** The upgrade request (with a session cookie) and its answer, the welcome and a subscription's confirmation. */
const CONNECT = { sent: 450, received: 400 } as const;
/** A WebSocket frame's header: client frames are masked (RFC 6455 §5.2), payloads under 126 bytes. */
const WS_HEADER = { client: 6, server: 2 } as const;
/** Per packet when a frame travels alone: IPv4 + TCP with timestamps (20 + 32), a TLS 1.3 record (5-byte header, 1-byte inner type, 16-byte AEAD tag). */
const PACKET = { tcpIp: 52, tls: 22 } as const;

export interface TrafficInput {
  users: UsersEstimate;
  /** Broadcast frames a task receives a second at the peak (sizing.ts). */
  framesPerSecond: number;
  protocol: "actioncable" | "pusher";
  tls: boolean;
}

/** A task's bytes over its run, low and high; undefined when a user's stay is not known. */
export function taskBytes(input: TrafficInput): TaskBytes | undefined {
  const { users } = input;
  if (users.flowSeconds === undefined || users.peak <= 0) return undefined;
  const env = ENVELOPE[input.protocol];
  const userSeconds = users.arrivals * users.flowSeconds;
  // The load's length at its peak: frames per second are counted at the peak, so this many seconds of them.
  const peakSeconds = userSeconds / users.peak;
  const sends = users.sendsPerUserSecond * userSeconds;
  const frames = input.framesPerSecond * peakSeconds;
  const pings = userSeconds / env.pingEveryS;
  const perPacket = PACKET.tcpIp + (input.tls ? PACKET.tls : 0);
  const sentFrame = users.sendBytes + env.send + WS_HEADER.client;
  const receivedFrame = users.sendBytes + env.receive + WS_HEADER.server;
  const sent = users.arrivals * CONNECT.sent + sends * sentFrame;
  const received = users.arrivals * CONNECT.received + frames * receivedFrame + pings * (env.pingBytes + WS_HEADER.server);
  return {
    sent: [sent, sent + sends * perPacket],
    received: [received, received + (frames + pings) * perPacket],
  };
}

/** Bytes as people read them. */
export function bytes(n: number): string {
  const units = ["B", "KB", "MB", "GB", "TB"];
  let i = 0;
  while (n >= 1000 && i < units.length - 1) {
    n /= 1000;
    i++;
  }
  return `${n.toLocaleString("en-US", { maximumFractionDigits: n < 10 ? 1 : 0 })} ${units[i]}`;
}
