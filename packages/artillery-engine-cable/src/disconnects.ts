import { cableCode, type ErrorName } from "./error-names.js";
import { CableError } from "./errors.js";
import { METRICS, type Events } from "./metrics.js";
import { ACTIONCABLE_V1_EXT_JSON, disconnectCause } from "./protocol/actioncable.js";
import type { Protocol } from "./protocol/types.js";
import { sampleServerWords } from "./server-words.js";

// Why a connection ended when the VU did not end it, named: the server's disconnect frame, its
// close, or the socket's error.

/** A `disconnect` frame's failure; a plain server disconnect is also counted by its cause. */
export function disconnectFailure(protocol: Protocol, reason: string, events: Events): CableError {
  const err: CableError = protocol.disconnectError?.(reason) ?? new CableError("server_disconnect", `the server disconnected the client (${reason})`);
  // Why, beside errors.cable.server_disconnect: a restart, the app's own remote disconnect, a refused request.
  if (err.code === cableCode("server_disconnect")) {
    const cause = disconnectCause(reason);
    events.emit("counter", `${METRICS.serverDisconnect}.${cause}`, 1);
    if (cause === "other") sampleServerWords(cableCode("server_disconnect"), cause, reason);
  }
  return err;
}

/** A close by the server; `announcedClose`, a code its error frame announced before. */
export function closeFailure(protocol: Protocol, code: number, reason: string, announcedClose: ErrorName | undefined): CableError {
  const named = code >= 4000 && code < 5000 ? protocol.closeReason?.(code) : undefined;
  // A code the protocol does not name by number (Pusher's outside its documented ranges) is kept
  // in the server's words, never in a metric's name.
  if (named && !named.endsWith(String(code))) sampleServerWords(`cable.${named}`, "close", `close ${code}${reason ? `: ${reason}` : ""}`);
  if (named) return new CableError(named, `the server closed the connection with ${code} ${reason}`);
  // Reverb announces 4001 (no such app) with an error frame, then drops the socket without a
  // close frame (1006): the announced code is the reason, not the drop.
  if (announcedClose) return new CableError(announcedClose, `the server announced ${announcedClose} and dropped the connection (${code})`);
  return new CableError("connection_closed", `the server closed the connection (${code}${reason ? ` ${reason}` : ""})`);
}

/** A socket's error, named where ws says it in a sentence; one with a Node code keeps it. */
export function socketFailure(protocol: Protocol, err: Error): Error {
  // ws refuses an upgrade whose answer picks none of the subprotocols offered.
  if (/subprotocol/i.test(err.message)) {
    return protocol.subprotocols.includes(ACTIONCABLE_V1_EXT_JSON)
      ? new CableError("ext_unsupported", `the server did not accept ${protocol.subprotocols.join(", ")}: ${err.message}`)
      : new CableError("subprotocol_rejected", err.message);
  }
  // ws's own handshake timer ends the upgrade with a sentence, not a code.
  if (/handshake has timed out/i.test(err.message)) return new CableError("handshake_timeout", err.message);
  if (!(err instanceof CableError) && typeof (err as { code?: unknown }).code !== "string") return new CableError("socket_error", err.message);
  return err;
}
