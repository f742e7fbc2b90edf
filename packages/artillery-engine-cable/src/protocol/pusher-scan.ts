import { BACKSLASH, COLON, equalsAt, isSpace, payloadField, QUOTE, type RawBroadcast } from "./scan.js";

// The listen path of the Pusher protocol without JSON.parse (issue 28: the RelayBox replay's
// generator decoded every frame twice, the frame and then its `data`, a JSON string inside it).
// A channel event is `{"event":"…","channel":"…","data":"{\"text\":…,\"ts\":…}"}`, its keys in any
// order (the local target and Soketi write event, channel, data; other servers differ). This
// reads the channel as a byte range, and the stamp, `seq` and `sender` among the payload's
// top-level fields, whether `data` is an escaped JSON string or an object, and checks the frame is
// balanced. Protocol frames (`pusher:…`, `pusher_internal:…`, pings among them, whose reply the
// decoder writes) and anything unusual (escapes inside the payload's strings, a payload that is
// not an object) go to the full decoder.

const EVENT = Buffer.from("event");
const CHANNEL = Buffer.from("channel");
const DATA = Buffer.from("data");
const PUSHER = Buffer.from("pusher");

function skipSpace(data: Buffer, i: number): number {
  while (i < data.length && isSpace(data[i])) i++;
  return i;
}

/** The index of the closing quote of the string whose opening quote is at `at`, or -1. */
function stringEnd(data: Buffer, at: number): number {
  for (let i = at + 1; i < data.length; i++) {
    const b = data[i];
    if (b === BACKSLASH) i++;
    else if (b === QUOTE) return i;
  }
  return -1;
}

/** The index after the JSON value at `at` (any type), balanced outside strings, or -1. */
function valueEnd(data: Buffer, at: number): number {
  const first = data[at];
  if (first === QUOTE) {
    const end = stringEnd(data, at);
    return end < 0 ? -1 : end + 1;
  }
  if (first !== 0x7b && first !== 0x5b) {
    let i = at;
    while (i < data.length && data[i] !== 0x2c && data[i] !== 0x7d && data[i] !== 0x5d && !isSpace(data[i])) i++;
    return i === at ? -1 : i;
  }
  let depth = 0;
  for (let i = at; i < data.length; i++) {
    const b = data[i];
    if (b === QUOTE) {
      i = stringEnd(data, i);
      if (i < 0) return -1;
    } else if (b === 0x7b || b === 0x5b) {
      depth++;
    } else if (b === 0x7d || b === 0x5d) {
      if (--depth === 0) return i + 1;
    }
  }
  return -1;
}

/**
 * The payload object from `from` (its `{`) to before `end`: its top-level stamp, seq and sender
 * into `out`. `escaped`: the object is written inside a JSON string, its quotes as `\"`; any other
 * escape there gives up. Returns the index after its closing brace, or -1.
 */
export function scanPayload(data: Buffer, from: number, end: number, escaped: boolean, stampField: Buffer, out: RawBroadcast): number {
  if (data[from] !== 0x7b) return -1;
  let depth = 0;
  let inString = false;
  let stringStart = 0;
  for (let i = from; i < end; i++) {
    const b = data[i];
    let quote = false;
    if (escaped) {
      if (b === BACKSLASH) {
        if (data[i + 1] !== QUOTE) return -1;
        quote = true;
        i++;
      } else if (b === QUOTE) {
        return -1;
      }
    } else if (b === QUOTE) {
      quote = true;
    } else if (inString && b === BACKSLASH) {
      i++;
      continue;
    }
    if (inString) {
      if (!quote) continue;
      inString = false;
      if (depth !== 1) continue;
      const next = skipSpace(data, i + 1);
      if (data[next] === COLON) payloadField(data, stringStart, escaped ? i - 1 : i, next + 1, stampField, escaped, out);
      continue;
    }
    if (quote) {
      inString = true;
      stringStart = i + 1;
    } else if (b === 0x7b || b === 0x5b) {
      depth++;
    } else if (b === 0x7d || b === 0x5d) {
      depth--;
      if (depth === 0) return i + 1;
      if (depth < 0) return -1;
    }
  }
  return -1;
}

/** A channel event read from its raw bytes into `out`, or undefined for anything the decoder must read. */
export function scanPusherInto(data: Buffer, stampField: Buffer, out: RawBroadcast): RawBroadcast | undefined {
  const last = data.length - 1;
  if (last < 1 || data[0] !== 0x7b || data[last] !== 0x7d) return undefined;
  out.stamp = out.seq = undefined;
  out.ledger = false;
  out.positioned = false;
  out.senderStart = out.senderEnd = -1;
  let event = false;
  let channel = false;
  let i = skipSpace(data, 1);
  while (i < last) {
    if (data[i] !== QUOTE) return undefined;
    const keyEnd = stringEnd(data, i);
    if (keyEnd < 0) return undefined;
    const keyStart = i + 1;
    let at = skipSpace(data, keyEnd + 1);
    if (data[at] !== COLON) return undefined;
    at = skipSpace(data, at + 1);
    let after: number;
    if (equalsAt(data, keyStart, keyEnd, EVENT)) {
      if (data[at] !== QUOTE) return undefined;
      // pusher:… and pusher_internal:… are the protocol's own frames.
      if (equalsAt(data, at + 1, at + 1 + PUSHER.length, PUSHER)) return undefined;
      after = valueEnd(data, at);
      event = true;
    } else if (equalsAt(data, keyStart, keyEnd, CHANNEL)) {
      if (data[at] !== QUOTE) return undefined;
      after = valueEnd(data, at);
      out.idStart = at + 1;
      out.idEnd = after - 1;
      channel = true;
    } else if (equalsAt(data, keyStart, keyEnd, DATA)) {
      if (data[at] === QUOTE) {
        const close = stringEnd(data, at);
        if (close < 0 || scanPayload(data, at + 1, close, true, stampField, out) !== close) return undefined;
        after = close + 1;
      } else {
        after = scanPayload(data, at, last, false, stampField, out);
      }
    } else {
      after = valueEnd(data, at);
    }
    if (after < 0) return undefined;
    i = skipSpace(data, after);
    if (data[i] === 0x2c) {
      i = skipSpace(data, i + 1);
      if (i >= last) return undefined;
    } else if (i !== last) {
      return undefined;
    }
  }
  // An empty channel is no channel to the decoder (an event it ignores): it reads those itself.
  return event && channel && out.idEnd > out.idStart ? out : undefined;
}
