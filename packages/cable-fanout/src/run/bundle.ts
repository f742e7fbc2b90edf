// The bundle every task fetches: the scenario and the files it reads, at their paths relative to
// their common directory (so `../processors/x.js` still resolves), plus the run.json manifest.
import path from "node:path";
import { MANIFEST_FILE, type RunManifest } from "cable-worker/contract";
import { FanoutInputError } from "../errors.js";
import type { SlicedPayload } from "../payloads.js";
import type { Scenario } from "../scenario.js";

export interface BundleFile {
  /** Path inside the bundle, `/`-separated. */
  key: string;
  /** Absolute path on this machine. */
  source: string;
}

export interface Bundle {
  files: BundleFile[];
  manifest: RunManifest;
}

export interface ManifestInput {
  /** A fixed start (no barrier); with `barrier` the go marker sets it. */
  startAt?: number;
  overrides?: Record<string, unknown>;
  environment?: string;
  barrier?: RunManifest["barrier"];
  heartbeat?: RunManifest["heartbeat"];
  maxDurationMs?: number;
  /** The payload files each task cuts to its slice (payloads.ts); all of them are among the scenario's files. */
  sequencePayloads?: SlicedPayload[];
}

export function buildBundle(scenario: Scenario, input: ManifestInput): Bundle {
  const all = [scenario.file, ...scenario.dependencies];
  const root = commonDirectory(all.map((f) => path.dirname(f)));
  const files = all.map((source) => ({ key: path.relative(root, source).split(path.sep).join("/"), source }));
  if (files.some((f) => f.key === MANIFEST_FILE)) {
    throw new FanoutInputError(`${path.join(root, MANIFEST_FILE)}: a scenario file named ${MANIFEST_FILE} at the bundle root would clash with the run manifest; rename or move it`);
  }
  const manifest: RunManifest = {
    scenario: files[0].key,
    ...(input.startAt !== undefined ? { startAt: input.startAt } : {}),
    ...(input.barrier ? { barrier: input.barrier } : {}),
    ...(input.heartbeat ? { heartbeat: input.heartbeat } : {}),
    ...(input.maxDurationMs !== undefined ? { maxDurationMs: input.maxDurationMs } : {}),
    ...(input.overrides && Object.keys(input.overrides).length > 0 ? { overrides: input.overrides } : {}),
    ...(input.environment ? { environment: input.environment } : {}),
    ...(input.sequencePayloads?.length ? { sequencePayloads: input.sequencePayloads.map((p) => ({ path: keyOf(files, p.file), ...p.csv })) } : {}),
  };
  return { files, manifest };
}

function keyOf(files: BundleFile[], source: string): string {
  const file = files.find((f) => f.source === source);
  if (!file) throw new Error(`${source} is not in the bundle`);
  return file.key;
}

/** The deepest directory containing all of `dirs` (absolute paths). */
export function commonDirectory(dirs: string[]): string {
  const split = dirs.map((d) => path.resolve(d).split(path.sep));
  const first = split[0];
  let n = 0;
  while (n < first.length && split.every((parts) => parts[n] === first[n])) n++;
  return first.slice(0, n).join(path.sep) || path.sep;
}
