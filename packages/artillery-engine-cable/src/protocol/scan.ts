// The listen path without JSON.parse (docs/benchmarks.md, suggestions 2 and 3): an Action Cable
// broadcast is `{"identifier":"…","message":…}`, with the identifier echoed byte for byte. This
// reads it on the raw Buffer, finds the stamp among the payload's top-level fields, and checks that
// the frame is balanced JSON; anything else goes to the full decoder. The hot path allocates
// nothing: it fills a result the connection owns, gives the identifier as a byte range (the
// connection compares it with the last one it matched before it makes a string), and reads an
// integer stamp from its digits.

const PING_PREFIX = Buffer.from('{"type":"ping"');
const BROADCAST_PREFIX = Buffer.from('{"identifier":"');
const MESSAGE_KEY = Buffer.from(',"message":');
const SENDER = Buffer.from("sender");
const SEQ = Buffer.from("seq");
const STREAM_ID = Buffer.from("stream_id");

export const QUOTE = 0x22;
export const BACKSLASH = 0x5c;
export const COLON = 0x3a;

export const PING_FRAME = "ping";

export interface ScannedBroadcast {
  /** The identifier as it is written in the frame (JSON-escaped, without its quotes). */
  identifier: string;
  /** The payload's top-level stamp field, when it is a number. */
  stamp: number | undefined;
  /** The payload has a top-level `sender`: the delivery ledger needs it parsed. */
  ledger: boolean;
  /** The frame carries a stream position (`stream_id`, AnyCable's reliable streams). */
  positioned: boolean;
}

function startsWith(data: Buffer, prefix: Buffer): boolean {
  if (data.length < prefix.length) return false;
  for (let i = 0; i < prefix.length; i++) if (data[i] !== prefix[i]) return false;
  return true;
}

export function equalsAt(data: Buffer, start: number, end: number, word: Buffer): boolean {
  if (end - start !== word.length) return false;
  for (let i = 0; i < word.length; i++) if (data[start + i] !== word[i]) return false;
  return true;
}

export function isSpace(b: number): boolean {
  return b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09;
}

function isNumberByte(b: number): boolean {
  return (b >= 0x30 && b <= 0x39) || b === 0x2e || b === 0x2d || b === 0x2b || b === 0x65 || b === 0x45;
}

/** Past this many digits an integer may not be exact in a double: read it as text instead. */
const MAX_EXACT_DIGITS = 15;

export function numberAt(data: Buffer, from: number): number | undefined {
  let start = from;
  while (start < data.length && isSpace(data[start])) start++;
  let end = start;
  // A plain integer (a Date.now() stamp) is read from its digits, without a string.
  let value = 0;
  let integer = true;
  while (end < data.length && isNumberByte(data[end])) {
    const b = data[end];
    if (b >= 0x30 && b <= 0x39) value = value * 10 + (b - 0x30);
    else integer = false;
    end++;
  }
  if (end === start) return undefined;
  if (integer && end - start <= MAX_EXACT_DIGITS && (data[start] !== 0x30 || end - start === 1)) return value;
  const parsed = Number(data.toString("latin1", start, end));
  return Number.isFinite(parsed) ? parsed : undefined;
}

/** The JSON string key of a stamp field, as bytes (`ts`, unescaped: stamp fields are plain names). */
export function stampKey(field: string): Buffer {
  return Buffer.from(field);
}

/** A scanned broadcast as the listen path reads it: the identifier as a byte range of the frame. */
export interface RawBroadcast {
  /** The identifier's bytes in the frame (Pusher: the channel's): [idStart, idEnd), JSON-escaped, without its quotes. */
  idStart: number;
  idEnd: number;
  stamp: number | undefined;
  /** The payload has a top-level `sender`: a stamped send, for the delivery ledger. */
  ledger: boolean;
  positioned: boolean;
  /** The payload's top-level `seq`, when it is a number. */
  seq: number | undefined;
  /** The `sender` string's bytes, [senderStart, senderEnd), when it is a string with nothing escaped; else -1. */
  senderStart: number;
  senderEnd: number;
}

export function rawBroadcast(): RawBroadcast {
  return { idStart: 0, idEnd: 0, stamp: undefined, ledger: false, positioned: false, seq: undefined, senderStart: -1, senderEnd: -1 };
}

/**
 * The end of a string value that starts at `from` (after spaces), or -1 unless it is a string with
 * no escapes: `escaped` when the value is written inside another JSON string (its quotes as `\"`).
 * Sets out.senderStart/End.
 */
function senderAt(data: Buffer, from: number, escaped: boolean, out: RawBroadcast): void {
  out.senderStart = out.senderEnd = -1;
  let i = from;
  while (i < data.length && isSpace(data[i])) i++;
  if (escaped) {
    if (data[i] !== BACKSLASH || data[i + 1] !== QUOTE) return;
    i += 2;
  } else if (data[i] === QUOTE) {
    i++;
  } else {
    return;
  }
  const start = i;
  for (; i < data.length; i++) {
    const b = data[i];
    if (b === BACKSLASH) {
      if (escaped && data[i + 1] === QUOTE) break;
      return;
    }
    if (b === QUOTE) {
      if (escaped) return;
      break;
    }
  }
  if (i >= data.length) return;
  out.senderStart = start;
  out.senderEnd = i;
}

/** A payload's top-level field whose key is data[keyStart, keyEnd) and whose value starts at `valueAt`. */
export function payloadField(data: Buffer, keyStart: number, keyEnd: number, valueAt: number, stampField: Buffer, escaped: boolean, out: RawBroadcast): void {
  if (equalsAt(data, keyStart, keyEnd, stampField)) out.stamp = numberAt(data, valueAt);
  else if (equalsAt(data, keyStart, keyEnd, SEQ)) out.seq = numberAt(data, valueAt);
  else if (equalsAt(data, keyStart, keyEnd, SENDER)) {
    out.ledger = true;
    senderAt(data, valueAt, escaped, out);
  }
}

/**
 * A ping, a broadcast, or undefined for anything the full decoder must read (other frame types,
 * other key orders, malformed frames: the decoder then counts them).
 */
export function scanActionCable(data: Buffer, stampField: Buffer): typeof PING_FRAME | ScannedBroadcast | undefined {
  const out = rawBroadcast();
  const scan = scanActionCableInto(data, stampField, out);
  if (scan === undefined || scan === PING_FRAME) return scan;
  return { identifier: data.toString("utf8", out.idStart, out.idEnd), stamp: out.stamp, ledger: out.ledger, positioned: out.positioned };
}

/** scanActionCable without allocations: a broadcast fills `out` and returns it. */
export function scanActionCableInto(data: Buffer, stampField: Buffer, out: RawBroadcast): typeof PING_FRAME | RawBroadcast | undefined {
  const last = data.length - 1;
  if (last < 1 || data[last] !== 0x7d) return undefined;
  if (startsWith(data, PING_PREFIX)) return PING_FRAME;
  if (!startsWith(data, BROADCAST_PREFIX)) return undefined;
  let i = BROADCAST_PREFIX.length;
  const idStart = i;
  for (; i < last; i++) {
    const b = data[i];
    if (b === BACKSLASH) i++;
    else if (b === QUOTE) break;
  }
  if (i >= last) return undefined;
  const idEnd = i;
  if (!equalsAt(data, idEnd + 1, idEnd + 1 + MESSAGE_KEY.length, MESSAGE_KEY)) return undefined;

  // One pass over the rest: balanced outside strings, ending with the frame's own brace; keys are
  // the strings followed by a colon. The frame's keys are at depth 1, the payload's at depth 2.
  let depth = 1;
  let inString = false;
  let stringStart = 0;
  let positioned = false;
  out.stamp = out.seq = undefined;
  out.ledger = false;
  out.senderStart = out.senderEnd = -1;
  for (i = idEnd + 1 + MESSAGE_KEY.length; i <= last; i++) {
    const b = data[i];
    if (inString) {
      if (b === BACKSLASH) {
        i++;
      } else if (b === QUOTE) {
        inString = false;
        let next = i + 1;
        while (next < last && isSpace(data[next])) next++;
        if (data[next] !== COLON) continue;
        if (depth === 2) {
          payloadField(data, stringStart + 1, i, next + 1, stampField, false, out);
        } else if (depth === 1 && equalsAt(data, stringStart + 1, i, STREAM_ID)) {
          positioned = true;
        }
      }
      continue;
    }
    if (b === QUOTE) {
      inString = true;
      stringStart = i;
    } else if (b === 0x7b || b === 0x5b) {
      depth++;
    } else if (b === 0x7d || b === 0x5d) {
      depth--;
      if (depth === 0 && i !== last) return undefined;
      if (depth < 0) return undefined;
    }
  }
  if (inString || depth !== 0) return undefined;
  out.idStart = idStart;
  out.idEnd = idEnd;
  out.positioned = positioned;
  return out;
}
