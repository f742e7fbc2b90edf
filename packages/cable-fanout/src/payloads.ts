// Payloads in a fan-out: which payload files every task cuts down to its own slice (cable-worker's
// payload-slice.ts does the cut, by the rule Artillery deals rows to its threads with), and what the
// runner says before launch about them.
import { readFileSync } from "node:fs";
import path from "node:path";
import { type PayloadFile, PayloadCsvError, readPayloadRows } from "cable-worker/contract";
import { FanoutInputError } from "./errors.js";
import type { Scenario } from "./scenario.js";

type Json = Record<string, unknown>;
const isRecord = (value: unknown): value is Json => typeof value === "object" && value !== null && !Array.isArray(value);

/** A payload file the tasks slice: its path on this machine and how Artillery reads its rows. */
export interface SlicedPayload {
  /** Absolute path. */
  file: string;
  csv: Omit<PayloadFile, "path">;
}

export interface PayloadPlan {
  sliced: SlicedPayload[];
  /** Why a sequence payload is read whole after all, one line each. */
  notes: string[];
}

/**
 * The payloads Artillery will read for `environment`, and of those the ones each task slices:
 * `order: sequence` ones only. `order: random` (Artillery's default) promises no distinct rows, and
 * a `loadAll` payload is a table every virtual user reads whole: both are left as they are. A file
 * that another payload reads whole, or that two sequence payloads read differently, is not cut.
 * Every one of them is read now as Artillery will read it: a file csv-parse refuses stops the run
 * here, named with the line to fix (checkPayloadCsv), not every task later.
 */
export function planPayloads(scenario: Pick<Scenario, "file" | "config">, environment: string | undefined): PayloadPlan {
  const { config } = scenario;
  const env = environment !== undefined && isRecord(config.environments) ? config.environments[environment] : undefined;
  const payload = isRecord(env) ? mergeLikeArtillery(config.payload, env.payload) : config.payload;
  const specs = (Array.isArray(payload) ? payload : isRecord(payload) ? [payload] : []).filter((p): p is Json => isRecord(p) && typeof p.path === "string");
  checkPayloadCsv(scenario.file, specs);
  const byFile = new Map<string, Json[]>();
  for (const spec of specs) {
    const file = path.resolve(path.dirname(scenario.file), spec.path as string);
    byFile.set(file, [...(byFile.get(file) ?? []), spec]);
  }
  const sliced: SlicedPayload[] = [];
  const notes: string[] = [];
  for (const [file, uses] of byFile) {
    const sequence = uses.filter((spec) => spec.order === "sequence" && spec.loadAll !== true);
    if (sequence.length === 0) continue;
    const shown = path.relative(process.cwd(), file);
    if (sequence.length < uses.length) {
      notes.push(`payload ${shown} is read whole by every task: another payload reads it in random order or with loadAll`);
      continue;
    }
    const ways = sequence.map((spec) => csvFields(spec, shown));
    if (ways.some((way) => JSON.stringify(way) !== JSON.stringify(ways[0]))) {
      notes.push(`payload ${shown} is read whole by every task: its sequence payloads read it with different CSV options`);
      continue;
    }
    sliced.push({ file, csv: ways[0] });
  }
  return { sliced, notes };
}

/**
 * Artillery parses every payload in its main thread before any engine or plugin loads, and stops on
 * csv-parse's first complaint, which names the line after the one to fix when the first row is the
 * broken one. Each payload is read here with Artillery's options, once per file and way of reading
 * it; a refusal names the file, the line as a person counts it and the likely cause.
 */
export function checkPayloadCsv(scenarioFile: string, specs: readonly Json[]): void {
  const read = new Set<string>();
  for (const spec of specs) {
    const file = path.resolve(path.dirname(scenarioFile), spec.path as string);
    const shown = path.relative(process.cwd(), file);
    const csv = csvFields(spec, shown);
    const fields = Array.isArray(spec.fields) ? spec.fields.length : undefined;
    const key = JSON.stringify([file, csv, fields]);
    if (read.has(key)) continue;
    read.add(key);
    try {
      readPayloadRows(readFileSync(file), { path: shown, ...csv }, { fields });
    } catch (err) {
      throw new FanoutInputError(err instanceof PayloadCsvError ? err.message : `payload ${shown}: ${(err as Error).message}`);
    }
  }
}

/** The fields of a payload spec that decide its rows, as Artillery takes them; a type it would choke on is refused now. */
function csvFields(spec: Json, shown: string): SlicedPayload["csv"] {
  const wrong = (field: string, what: string) => new FanoutInputError(`payload ${shown}: ${field} must be ${what}`);
  if (spec.delimiter !== undefined && typeof spec.delimiter !== "string") throw wrong("delimiter", "a string");
  if (spec.skipEmptyLines !== undefined && typeof spec.skipEmptyLines !== "boolean") throw wrong("skipEmptyLines", "true or false");
  if (spec.options !== undefined && !isRecord(spec.options)) throw wrong("options", "a map of csv-parse options");
  return {
    // Artillery skips the header only for `skipHeader: true` itself.
    ...(spec.skipHeader === true ? { skipHeader: true } : {}),
    ...(spec.delimiter !== undefined ? { delimiter: spec.delimiter } : {}),
    ...(spec.skipEmptyLines !== undefined ? { skipEmptyLines: spec.skipEmptyLines } : {}),
    ...(spec.options !== undefined ? { options: spec.options } : {}),
  };
}

/**
 * How Artillery lays `config.environments.<name>` over `config` (lodash's merge): maps key by key,
 * lists item by item, and a map laid over a list leaves the list.
 */
export function mergeLikeArtillery(base: unknown, over: unknown): unknown {
  if (over === undefined) return base;
  if (Array.isArray(over)) {
    const merged = Array.isArray(base) ? [...base] : [];
    over.forEach((item, i) => (merged[i] = mergeLikeArtillery(merged[i], item)));
    return merged;
  }
  if (isRecord(over)) {
    if (Array.isArray(base)) return base;
    const merged: Json = isRecord(base) ? { ...base } : {};
    for (const [key, value] of Object.entries(over)) merged[key] = mergeLikeArtillery(merged[key], value);
    return merged;
  }
  return over;
}

/**
 * Reads each sliced file once and cuts every task's slice as the task will: a file some slice
 * cannot be cut from stops the run now, not a task later; a file with fewer rows than the run has
 * tasks gets a warning, since tasks then share rows (as Artillery's threads do).
 */
export function checkSlicedPayloads(sliced: readonly SlicedPayload[], run: { count: number; regions: number }): string[] {
  const tasks = run.count * run.regions;
  return sliced.flatMap(({ file, csv }) => {
    const shown = path.relative(process.cwd(), file);
    let rows: number;
    try {
      const read = readPayloadRows(readFileSync(file), { path: shown, ...csv });
      rows = read.rows;
      // Slices k and k + rows are the same when rows are fewer than tasks.
      for (let index = 0; index < Math.min(tasks, rows); index++) read.cut({ index, count: tasks });
    } catch (err) {
      throw new FanoutInputError(err instanceof PayloadCsvError ? err.message : `payload ${shown}: ${(err as Error).message}`);
    }
    if (rows >= tasks) return [];
    const split = `${tasks} task(s) (${run.count} per region × ${run.regions} region(s))`;
    if (rows === 0) return [`payload ${shown} has no rows for its ${split}`];
    return [`payload ${shown} has ${rows} row(s) for ${split}: rows reused: some users will be signed in by two tasks at once (give it at least ${tasks} rows, or start fewer tasks)`];
  });
}
