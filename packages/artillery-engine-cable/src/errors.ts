import { cableCode, type ErrorName } from "./error-names.js";
import { tlsReason } from "./tls.js";

/**
 * A failure of a virtual user with a name from the engine's vocabulary. It reaches Artillery's
 * `error` event as `cable.<reason>` (so the report counts `errors.cable.<reason>`); socket errors
 * keep their own code (`ECONNREFUSED`, …) instead.
 */
export class CableError extends Error {
  readonly code: string;
  /** The HTTP status an app answered, when the failure is its answer (`cable.auth_failed.<status>`). */
  httpStatus?: number;

  constructor(reason: ErrorName, message?: string) {
    super(message ?? reason);
    this.name = "CableError";
    this.code = cableCode(reason);
  }

  /**
   * A socket or HTTP client failure, counted under its own code (`ECONNREFUSED`, `UND_ERR_SOCKET`,
   * …), or a certificate's or TLS failure under `cable.tls_*` (tls.ts) with Node's code in the message.
   */
  static socket(code: string, message: string): CableError {
    const tls = tlsReason(code);
    if (tls) return new CableError(tls, message.includes(code) ? message : `${message} (${code})`);
    const err = new CableError("socket_error", message);
    (err as { code: string }).code = code;
    return err;
  }
}

/** A socket or library error code (ECONNREFUSED, UND_ERR_SOCKET, WS_ERR_…): a name, never a sentence. */
const NAMED_CODE = /^[A-Z][A-Z0-9_]{1,63}$/;

/**
 * The name a failure is counted under in Artillery's `errors.*` counters: a `cable.*` code or a
 * socket code, never an exception's message (a user's dashboard groups by it, and a message can
 * carry a URL, a token or a server's answer). Anything else is `cable.timeout` when it is an
 * abort by timeout, and `cable.unexpected_error` otherwise.
 */
export function errorCode(err: unknown): string {
  if (err instanceof CableError) return err.code;
  const e = err as { code?: unknown; name?: unknown } | undefined;
  const tls = e && typeof e.code === "string" ? tlsReason(e.code) : undefined;
  if (tls) return cableCode(tls);
  if (e && typeof e.code === "string" && (NAMED_CODE.test(e.code) || /^cable\.[a-z0-9_]+$/.test(e.code))) return e.code;
  if (e && e.name === "TimeoutError") return cableCode("timeout");
  return cableCode("unexpected_error");
}

/** A scenario mistake, found before any load starts. */
export class ScenarioError extends Error {
  constructor(readonly problems: string[]) {
    super(`artillery-engine-cable: the scenario has ${problems.length === 1 ? "a mistake" : `${problems.length} mistakes`}:\n  - ${problems.join("\n  - ")}`);
    this.name = "ScenarioError";
    // Artillery prints the stack of an engine that fails to load: the problems are the useful part.
    this.stack = this.message;
  }
}
