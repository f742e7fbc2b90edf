// Reading JSON input files; every error names the file at fault.
import { readFileSync } from "node:fs";
import type { z } from "zod";

/** Bad input, always naming the file at fault. */
export class ResultsInputError extends Error {
  constructor(
    readonly file: string,
    reason: string,
  ) {
    super(`${file}: ${reason}`);
    this.name = "ResultsInputError";
  }
}

export function parseJsonFile<T extends z.ZodTypeAny>(file: string, schema: T, what: string): z.output<T> {
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(file, "utf8"));
  } catch (err) {
    throw new ResultsInputError(file, `${what}: ${(err as Error).message}`);
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue.path.length > 0 ? ` at ${issue.path.join(".")}` : "";
    throw new ResultsInputError(file, `${what} (${issue.message}${where})`);
  }
  return parsed.data;
}
