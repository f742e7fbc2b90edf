/**
 * A failure of a virtual user with a name from the engine's vocabulary. It reaches Artillery's
 * `error` event as `cable.<reason>` (so the report counts `errors.cable.<reason>`); socket errors
 * keep their own code (`ECONNREFUSED`, …) instead.
 */
export class CableError extends Error {
  readonly code: string;

  constructor(reason: string, message?: string) {
    super(message ?? reason);
    this.name = "CableError";
    this.code = `cable.${reason}`;
  }
}

/** The name a failure is counted under in Artillery's `errors.*` counters. */
export function errorCode(err: unknown): string {
  if (err instanceof CableError) return err.code;
  const e = err as { code?: unknown; message?: unknown } | undefined;
  if (e && typeof e.code === "string" && e.code) return e.code;
  if (e && typeof e.message === "string" && e.message) return e.message;
  return String(err);
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
