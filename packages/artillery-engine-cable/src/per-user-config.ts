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

/** `config.cable` as the engine reads it: Artillery's rendering, with a per-user authEndpoint put back as written. */
export function cableSection(script: Script): unknown {
  const rendered = script.config.cable;
  for (const file of new Set([script._configPath, script._scriptPath])) {
    if (!file) continue;
    let doc: unknown;
    try {
      doc = yaml.safeLoad(readFileSync(file, "utf8"));
    } catch {
      continue;
    }
    const written = authEndpointIn(isRecord(doc) ? doc.config : undefined, script._environment);
    if (!hasPerUserTemplate(written) || !isRecord(rendered) || !isRecord(rendered.pusher)) continue;
    return { ...rendered, pusher: { ...rendered.pusher, authEndpoint: written } };
  }
  return rendered;
}
