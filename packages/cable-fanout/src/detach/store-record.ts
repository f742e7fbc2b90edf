// A detached run's record in every region's store, beside its go marker: what `attach`, `collect`,
// `stop` and `status` need on a machine that has no results directory for the run. What comes back
// from a store is somebody else's file: it is parsed with the record's schema and checked against
// the run asked for before anything acts on it.
import { controlPrefix, SEGMENT_PATTERN, type Store } from "cable-worker/contract";
import type { Backend, Region } from "../backend.js";
import { FanoutInputError } from "../errors.js";
import { regionNameProblem } from "../region-names.js";
import { RECORD_FILE, recordSchema, type RunRecord } from "../run/record.js";

/** `runs/<runId>/control/fanout.json`: under control/, which the operator writes and reads (and the tasks may read: names only, no values). */
export const storedRecordKey = (runId: string): string => `${controlPrefix(runId)}${RECORD_FILE}`;

/** Writes the record into every region's store; the regions where that failed, one line each. */
export async function storeRecord(regions: Region[], record: RunRecord): Promise<string[]> {
  const text = `${JSON.stringify(record, null, 2)}\n`;
  const settled = await Promise.allSettled(regions.map((r) => r.store.putText(storedRecordKey(record.runId), text)));
  return settled.flatMap((s, i) => (s.status === "rejected" ? [`${regions[i].name}: writing the run record to ${regions[i].location} failed: ${(s.reason as Error).message}`] : []));
}

/** The record of `runId` in one store, validated; undefined when the store holds none. */
export async function readStoredRecord(store: Store, runId: string, backend: Backend["kind"]): Promise<RunRecord | undefined> {
  const key = storedRecordKey(runId);
  // A listing first: a missing object is the ordinary case (a watched run), not an error to parse.
  if (!(await store.list(key)).includes(key)) return undefined;
  const where = `${store.location} ${key}`;
  let json: unknown;
  try {
    json = JSON.parse(await store.getText(key));
  } catch (err) {
    throw new FanoutInputError(`${where}: not valid JSON: ${(err as Error).message}`);
  }
  const parsed = recordSchema.safeParse(json);
  if (!parsed.success) throw new FanoutInputError(`${where}: not a cable-fanout run record: ${parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`);
  const record = parsed.data;
  if (record.runId !== runId) throw new FanoutInputError(`${where}: the record is of run ${record.runId}, not ${runId}`);
  if (record.backend !== backend) throw new FanoutInputError(`${where}: run ${runId} ran on the ${record.backend} backend; ${record.backend === "local" ? "add --local" : "drop --local"}`);
  const problems = record.regions.flatMap((r) => regionNameProblem(r, backend) ?? []);
  if (record.regions.length === 0 || problems.length > 0 || new Set(record.regions).size !== record.regions.length) {
    throw new FanoutInputError(`${where}: the record names no usable regions${problems.length > 0 ? `: ${problems.join("; ")}` : ""}`);
  }
  for (const [region, refs] of Object.entries(record.started)) {
    if (!record.regions.includes(region)) throw new FanoutInputError(`${where}: the record lists tasks in ${region}, which is not one of its regions`);
    // Local refs are <runId>/<taskId>, turned into a pid file's path: nothing else may pass.
    if (backend === "local" && refs.some((ref) => !(ref.startsWith(`${runId}/`) && SEGMENT_PATTERN.test(ref.slice(runId.length + 1))))) {
      throw new FanoutInputError(`${where}: the record lists a task reference that is not one of run ${runId}'s`);
    }
  }
  return record;
}

/**
 * The record of `runId` from the stores: with --local the one directory (any region's store is it),
 * on AWS each region given in turn until one holds it (every region's store holds the whole record).
 */
export async function findStoredRecord(backend: Backend, runId: string, regions: string[] | undefined): Promise<RunRecord | undefined> {
  const candidates = regions ?? (backend.kind === "local" ? ["local"] : []);
  for (const name of candidates) {
    const region = await backend.openRegion(name);
    const record = await readStoredRecord(region.store, runId, backend.kind);
    if (record) return record;
  }
  return undefined;
}
