import { CableError } from "../errors.js";
import type { Events } from "../metrics.js";
import { asyncStep, type StepFn, type VuContext } from "../vu.js";
import type { Compiler } from "./compiler.js";

type CallbackProcessor = (context: VuContext, events: Events, done: (err?: Error) => void) => void;
type PromiseProcessor = (context: VuContext, events: Events) => unknown;

export function compileThink(compiler: Compiler, step: Record<string, unknown>): StepFn {
  return compiler.helpers.createThink(step, compiler.thinkDefaults);
}

export function compileLoop(compiler: Compiler, step: Record<string, unknown>): StepFn {
  const body = (step.loop as Record<string, unknown>[]).map((s) => compiler.compile(s));
  const whileTrue = typeof step.whileTrue === "string" ? compiler.processor[step.whileTrue] : undefined;
  return compiler.helpers.createLoopWithCount((step.count as number | string | undefined) ?? -1, body, {
    loopValue: step.loopValue ?? "$loopCount",
    loopElement: step.loopElement ?? "$loopElement",
    overValues: step.over,
    whileTrue,
  });
}

/**
 * Processor functions in both of Artillery's styles: `(context, events, done)` calls back, and
 * `(context, events)` may return a promise.
 */
export function compileFunction(compiler: Compiler, name: string): StepFn {
  const { events } = compiler;
  return asyncStep((_vu, context) => {
    const fn = compiler.processor[name] as CallbackProcessor | PromiseProcessor | undefined;
    if (typeof fn !== "function") throw new CableError("function_missing", `the processor has no function "${name}"`);
    // A processor's own failure keeps its code when it has one (Artillery's convention); otherwise
    // it is named for the step, never by its message.
    const failed = (err: unknown) => {
      const code = (err as { code?: unknown } | undefined)?.code;
      throw typeof code === "string" && code ? err : new CableError("function_failed", `function "${name}" failed: ${(err as Error)?.message ?? String(err)}`);
    };
    if (fn.length >= 3) {
      return new Promise<void>((resolve, reject) => {
        (fn as CallbackProcessor)(context, events, (err) => (err ? reject(err) : resolve()));
      }).catch(failed);
    }
    return new Promise<unknown>((resolve) => resolve((fn as PromiseProcessor)(context, events))).then(() => undefined, failed);
  });
}

export function compileLog(compiler: Compiler, message: string): StepFn {
  return asyncStep((_vu, context) => {
    console.log(compiler.helpers.template(message, context));
  });
}
