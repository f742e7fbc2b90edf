import type { VuContext } from "./vu.js";

// Every `{{ }}` of a step, a header, a URL, a body or the authEndpoint is rendered here, once.
//
// Artillery's own `template` (lib/commons/engine_util.ts renderVariables) substitutes a variable,
// then searches the result again for `{{ }}`: a value the app answered (a captured token, a
// `sid`) that holds `{{ $env.SECRET }}` is rendered in turn and sends the generator's secret to the
// app, and one that holds `{{ token }}` renders itself for ever. Here the scenario's own text is
// the only template: each `{{ }}` in it is replaced by its value as text, and the value is never
// read again. A variable, a dotted or bracketed path into one (`$env.KEY`, `user.id`, `rows[0]`),
// and a call of a context function with literal arguments (`$randomNumber(1, 10)`) render as in
// Artillery; a template that is the whole string keeps its value's type (a number, an object).

/** Artillery's two template shapes, in its own syntax: a function call, and a variable or path. */
const CALL = /^\s*(\$[A-Za-z0-9_]+)\s*\(\s*([A-Za-z0-9_,\s.-]*)\)\s*$/;
const VARIABLE = /^\s*([\s$\w.[\]'"-]+?)\s*$/;
/** One `{{ … }}` (or Artillery's `{{{ … }}}`), without crossing into the next. */
const TOKEN = /\{\{\{?([^{}]*)\}\}\}?/g;

/** `x.y[0]['z']` → ["x", "y", "0", "z"], as lodash's `get` reads a path. */
function pathOf(expression: string): string[] {
  const parts: string[] = [];
  for (const match of expression.matchAll(/[^.[\]'"]+|\[\s*(['"]?)([^\]'"]*)\1\s*\]/g)) parts.push(match[2] ?? match[0]);
  return parts;
}

function lookup(vars: Record<string, unknown>, expression: string): unknown {
  // A variable whose name holds a dot is found whole first, as lodash does.
  if (Object.hasOwn(vars, expression)) return vars[expression];
  let value: unknown = vars;
  for (const key of pathOf(expression)) {
    if (value === null || value === undefined) return undefined;
    value = (value as Record<string, unknown>)[key];
  }
  return value;
}

/** A literal argument as espree reads it in Artillery: a number, true, false or null; anything else is undefined. */
function literal(arg: string): unknown {
  const text = arg.trim();
  if (text === "") return undefined;
  if (/^-?\d+(\.\d+)?$/.test(text)) return Number(text);
  return ({ true: true, false: false, null: null } as Record<string, unknown>)[text];
}

/** One `{{ }}`'s value, or `unknown` when it is not Artillery's syntax (left as written). */
function evaluate(inner: string, context: VuContext): { value: unknown } | undefined {
  const call = CALL.exec(inner);
  if (call) {
    const fn = (context.funcs as Record<string, unknown> | undefined)?.[call[1]];
    if (typeof fn !== "function") return undefined;
    const args = call[2].trim() === "" ? [] : call[2].split(",").map(literal);
    // Artillery puts a call's result into the string: text, even alone.
    return { value: String((fn as (...a: unknown[]) => unknown)(...args)) };
  }
  const variable = VARIABLE.exec(inner);
  if (!variable) return undefined;
  return { value: lookup(context.vars, variable[1]) };
}

/** A value inside a longer string, as Artillery writes it: objects as JSON, anything else as text. */
const asText = (value: unknown) => (typeof value === "object" && value !== null ? JSON.stringify(value) : String(value));

/** Artillery's sanitiseValue: a whole-string template of an empty value is "", of 0, false, null or undefined itself. */
const whole = (value: unknown) => (value === 0 || value === false || value === null || value === undefined ? value : value ? value : "");

export function renderString(text: string, context: VuContext): unknown {
  if (!text.includes("{{")) return text;
  TOKEN.lastIndex = 0;
  const only = TOKEN.exec(text);
  if (only && only.index === 0 && only[0].length === text.length) {
    const result = evaluate(only[1], context);
    return result === undefined ? text : whole(result.value);
  }
  // One pass over the scenario's text: what a value holds is never searched for templates.
  return text.replace(TOKEN, (token, inner: string) => {
    const result = evaluate(inner, context);
    return result === undefined ? token : asText(result.value);
  });
}

/**
 * A step's value with every template rendered once for this user: strings, and the keys and
 * values of objects and arrays, at any depth. The value itself is not changed.
 */
export function render<T>(value: T, context: VuContext): T {
  if (typeof value === "string") return renderString(value, context) as T;
  if (Array.isArray(value)) return value.map((item) => render(item, context)) as T;
  if (isPlainObject(value)) {
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) out[asText(renderString(key, context))] = render(item, context);
    return out as T;
  }
  return value;
}

const isPlainObject = (value: unknown): value is Record<string, unknown> => {
  if (value === null || typeof value !== "object") return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
};

/** Whether a value holds any template: a step without one is rendered never, not once per user. */
export const hasTemplate = (value: unknown) => JSON.stringify(value ?? null).includes("{{");
