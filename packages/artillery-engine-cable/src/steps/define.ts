import { z } from "zod";
import type { CableConfig } from "../config.js";
import { parsePath } from "../match.js";
import type { StepFn } from "../vu.js";
import type { Compiler } from "./compiler.js";

// One declaration per step: its schema (and from it, its type), the rules checked before the load,
// and its compiler. steps/table.ts lists them; schema.ts checks flows and steps/index.ts compiles
// them from that one table, so adding a step touches one place.

export type ProtocolName = "actioncable" | "pusher";

/** What a step's own check sees: where it is, and the run's settings. */
export interface CheckContext {
  /** `scenario "name", step 3`: every problem starts with it. */
  at: string;
  config: CableConfig;
  /** config.processor, when the script has one. */
  processor: unknown;
  /** config.target, when the script has one (`--target` included). */
  target?: string;
}

export interface StepDefinition<S extends z.ZodTypeAny> {
  schema: S;
  /** Keys allowed beside the step's own key (Artillery's modifiers). */
  modifiers?: readonly string[];
  /** Only this protocol speaks the step; `instead` says what the other one uses. */
  only?: { protocol: ProtocolName; instead: string };
  /** A "connect" must come before it. */
  needsConnection?: boolean;
  /** What it does to the flow's connection, for the checks of later steps. */
  opens?: boolean;
  closes?: boolean;
  /** Its `channel` field names a channel an earlier step subscribed. */
  usesChannel?: boolean;
  /** The name later steps use for the channel it subscribes, and the channel's own name. */
  subscribes?(spec: z.output<S>): { as: string; channel: string };
  /** Rules beyond the shape: settings it needs, names it must have. */
  check?(spec: z.output<S>, ctx: CheckContext, channelOf: (name: string) => string | undefined): string[];
  /** Steps nested in it (loop), checked in the same scope. */
  nested?(step: Record<string, unknown>): unknown;
  /** The step as Artillery runs it: `spec` is the parsed (typed) value of its key, `step` the whole step. */
  compile(compiler: Compiler, spec: z.output<S>, step: Record<string, unknown>): StepFn;
}

/** Declares a step; the spec's type flows from the schema into `check` and `compile`. */
export function defineStep<S extends z.ZodTypeAny>(definition: StepDefinition<S>): StepDefinition<S> {
  return definition;
}

// Field shapes shared by steps. Every string may hold `{{ }}` templates, so numeric fields also
// take a string that Artillery templates at run time.

export const templated = z.string().regex(/\{\{.*\}\}/s, "expected a number or a {{ template }}");
export const seconds = z.union([z.number().nonnegative(), templated]);
export const stringMap = z.record(z.union([z.string(), z.number(), z.boolean()]));
export const channelRef = z.string().min(1);
export const isTemplated = (s: string) => s.includes("{{");

function validPath(path: string, ctx: z.RefinementCtx): void {
  try {
    parsePath(path);
  } catch (err) {
    ctx.addIssue({ code: z.ZodIssueCode.custom, message: (err as Error).message });
  }
}

export const capture = z.object({ json: z.string().superRefine(validPath), as: z.string().min(1) }).strict();

export const needsExtended = (at: string, name: string, config: CableConfig): string[] =>
  config.anycable.extended === "off" ? [`${at} (${name}): needs AnyCable's extended protocol: set config.cable.anycable.extended`] : [];
