import { CableError } from "../errors.js";
import type { StepFn } from "../vu.js";
import type { Compiler } from "./compiler.js";
import type { StepDefinition } from "./define.js";
import { isStepName, STEPS } from "./table.js";
import type { z } from "zod";

/**
 * Compiles one step that schema.ts validated before any load started: its definition parses the
 * value again (typed, with the schema's transforms) and compiles it.
 */
export function compileStep(compiler: Compiler, step: Record<string, unknown>): StepFn {
  const name = Object.keys(step).find(isStepName);
  if (!name) throw new CableError("invalid_scenario", `unknown step ${Object.keys(step).join(", ")}`);
  const definition: StepDefinition<z.ZodTypeAny> = STEPS[name];
  const run = definition.compile(compiler, definition.schema.parse(step[name]), step);
  if (step.probability === undefined) return run;
  return (context, callback) => (compiler.helpers.isProbableEnough(step) ? run(context, callback) : callback(null, context));
}
