import { CableError } from "./errors.js";

/**
 * Which side-call failed: its errors are `cable.<kind>_failed` and `cable.<kind>_timeout`.
 * `publish`: Pusher's events API and AnyCable's broadcast endpoint; `auth`: a Pusher authEndpoint.
 */
export type SideCall = "publish" | "auth";

export interface HttpAnswer {
  status: number;
  body: string;
}

/** An answer body is read up to this size: a hostile endpoint must not make the VU buffer without end. */
const MAX_BODY_BYTES = 1024 * 1024;

/**
 * One HTTP side-call of a VU, bounded by `timeoutMs` from the request to the answer's last byte.
 * Every failure is named: a socket error keeps its code (ECONNREFUSED, UND_ERR_SOCKET, …), a
 * timeout is `cable.<kind>_timeout`, anything else `cable.<kind>_failed`; the message says what
 * happened for the logs, the code is what the report counts.
 */
export async function httpRequest(kind: SideCall, url: string, init: { headers: Record<string, string>; body: string; timeoutMs: number }): Promise<HttpAnswer> {
  const signal = AbortSignal.timeout(init.timeoutMs);
  try {
    const res = await fetch(url, { method: "POST", headers: init.headers, body: init.body, signal });
    return { status: res.status, body: await readBounded(res) };
  } catch (err) {
    if (err instanceof CableError) throw err;
    if (signal.aborted || (err as Error).name === "TimeoutError" || (err as Error).name === "AbortError") {
      throw new CableError(`${kind}_timeout`, `${kind}: no complete answer within ${init.timeoutMs} ms`);
    }
    // fetch hides the socket error in `cause`: keep its code, as the WebSocket steps do.
    const cause = (err as { cause?: { code?: unknown } }).cause;
    if (typeof cause?.code === "string" && /^[A-Z][A-Z0-9_]+$/.test(cause.code)) {
      throw Object.assign(new Error(`${kind} failed: ${cause.code}`), { code: cause.code });
    }
    throw new CableError(`${kind}_failed`, `${kind} failed: ${(err as Error).message}`);
  }
}

async function readBounded(res: Response): Promise<string> {
  if (!res.body) return "";
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of res.body as AsyncIterable<Uint8Array>) {
    size += chunk.byteLength;
    if (size > MAX_BODY_BYTES) throw new CableError("response_too_large", `the answer is larger than ${MAX_BODY_BYTES} bytes`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString("utf8");
}

/** The JSON object of an answer, or `cable.<kind>_failed` for anything that is not one. */
export function jsonObject(kind: SideCall, answer: HttpAnswer): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(answer.body);
  } catch {
    throw new CableError(`${kind}_failed`, `${kind}: the answer is not JSON (HTTP ${answer.status}, ${answer.body.length} bytes)`);
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) throw new CableError(`${kind}_failed`, `${kind}: the answer is not a JSON object`);
  return value as Record<string, unknown>;
}
