import { z } from "zod";
import { CableError } from "../errors.js";
import type { Events } from "../metrics.js";
import { asyncStep, type StepFn, type VuContext } from "../vu.js";
import { hasTemplate, render } from "../template.js";
import type { Compiler } from "./compiler.js";
import { defineStep } from "./define.js";

type CallbackProcessor = (context: VuContext, events: Events, done: (err?: Error) => void) => void;
type PromiseProcessor = (context: VuContext, events: Events) => unknown;

/**
 * A think time or a loop count with a template is rendered here (template.ts) before Artillery's
 * helper sees it: the helper renders with Artillery's own template, which would render a captured
 * `{{ … }}` again. What is left holding `{{` after the one rendering is not a number: refused.
 */
function renderedFirst(field: string, value: unknown, run: (rendered: unknown) => StepFn): StepFn {
  if (typeof value !== "string" || !hasTemplate(value)) return run(value);
  return (context, callback) => {
    const rendered = render(value, context);
    if (typeof rendered === "string" && rendered.includes("{{")) return callback(new CableError("invalid_value", `"${field}" is not a number: it rendered to a template`), context);
    run(rendered)(context, callback);
  };
}

export function compileThink(compiler: Compiler, step: Record<string, unknown>): StepFn {
  return renderedFirst("think", step.think, (think) => compiler.helpers.createThink({ ...step, think }, compiler.thinkDefaults));
}

export function compileLoop(compiler: Compiler, step: Record<string, unknown>): StepFn {
  const body = (step.loop as Record<string, unknown>[]).map((s) => compiler.compile(s));
  const whileTrue = typeof step.whileTrue === "string" ? compiler.processor[step.whileTrue] : undefined;
  return renderedFirst("count", step.count, (count) =>
    compiler.helpers.createLoopWithCount((count as number | string | undefined) ?? -1, body, {
      loopValue: step.loopValue ?? "$loopCount",
      loopElement: step.loopElement ?? "$loopElement",
      overValues: step.over,
      whileTrue,
    }),
  );
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

export function compileLog(message: string): StepFn {
  return asyncStep((_vu, context) => {
    console.log(render(message, context));
  });
}

// Artillery's own steps, with its semantics, through its helpers.

export const think = defineStep({
  schema: z.union([z.number().nonnegative(), z.string().min(1)]),
  modifiers: ["jitter"],
  compile: (compiler, _spec, step) => compileThink(compiler, step),
});

export const fn = defineStep({
  schema: z.string().min(1),
  check(name, { at, processor }) {
    if (processor && typeof processor === "object" && typeof (processor as Record<string, unknown>)[name] !== "function") {
      return [`${at} (function): the processor has no function "${name}"`];
    }
    return [];
  },
  compile: (compiler, name) => compileFunction(compiler, name),
});

export const log = defineStep({ schema: z.string(), compile: (_compiler, message) => compileLog(message) });

export const loop = defineStep({
  schema: z.array(z.unknown()),
  modifiers: ["count", "over", "whileTrue", "loopValue", "loopElement"],
  nested: (step) => step.loop,
  compile: (compiler, _spec, step) => compileLoop(compiler, step),
});
