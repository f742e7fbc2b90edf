import { readFileSync } from "node:fs";
import yaml from "js-yaml";
import type { Script } from "./script.js";

// Artillery renders `config` once, in the main thread, before any virtual user exists
// (lib/util.ts resolveConfigTemplates): `X-CSRF-TOKEN: "{{ csrf }}"` in config.cable arrives here as
// undefined, and `Bearer {{ token }}` as "Bearer undefined". The settings that are per user by
// nature (the Pusher authEndpoint: Laravel's CSRF token, a Sanctum token) are therefore read back
// from the scenario's own file, where their templates still stand, and rendered per user.

type Json = Record<string, unknown>;
const isRecord = (value: unknown): value is Json => typeof value === "object" && value !== null && !Array.isArray(value);

/** A template that needs a user: anything but `$env`, `$processEnvironment` and `$environment`, which Artillery has already rendered right. */
const PER_USER = /\{\{\s*(?!\$(?:env|processEnvironment|environment)\b)[^}]*\}\}/;

export const hasPerUserTemplate = (value: unknown) => value !== undefined && PER_USER.test(JSON.stringify(value));

function authEndpointIn(config: unknown, environment: string | undefined): unknown {
  if (!isRecord(config)) return undefined;
  const pick = (section: unknown) => (isRecord(section) && isRecord(section.cable) && isRecord(section.cable.pusher) ? section.cable.pusher.authEndpoint : undefined);
  const fromEnvironment = environment && isRecord(config.environments) ? pick(config.environments[environment]) : undefined;
  return fromEnvironment ?? pick(config);
}

/**
 * Puts each per-user template of the file back where Artillery's rendering left the trace of a
 * variable no user had yet (undefined, or "undefined" inside a string); anything else rendered, an
 * `--overrides` value or `{{ $env.APP_URL }}`, stays as Artillery made it.
 */
function restore(written: unknown, rendered: unknown): unknown {
  if (typeof written === "string") return hasPerUserTemplate(written) && (rendered === undefined || (typeof rendered === "string" && rendered.includes("undefined"))) ? written : rendered;
  if (!isRecord(written) || !isRecord(rendered)) return rendered;
  const out: Json = { ...rendered };
  for (const [key, value] of Object.entries(written)) out[key] = restore(value, rendered[key]);
  return out;
}

/** `config.cable` as the engine reads it: Artillery's rendering, with the authEndpoint's per-user templates put back as written. */
export function cableSection(script: Script): unknown {
  const rendered = script.config.cable;
  if (!isRecord(rendered) || !isRecord(rendered.pusher)) return rendered;
  for (const file of new Set([script._configPath, script._scriptPath])) {
    if (!file) continue;
    let doc: unknown;
    try {
      doc = yaml.safeLoad(readFileSync(file, "utf8"));
    } catch {
      continue;
    }
    const written = authEndpointIn(isRecord(doc) ? doc.config : undefined, script._environment);
    if (!hasPerUserTemplate(written)) continue;
    // A string endpoint is its url.
    const asObject = (e: unknown) => (typeof e === "string" ? { url: e } : e);
    const endpoint = restore(asObject(written), asObject(rendered.pusher.authEndpoint));
    return { ...rendered, pusher: { ...rendered.pusher, authEndpoint: endpoint } };
  }
  return rendered;
}
