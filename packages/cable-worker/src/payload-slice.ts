// A task's slice of each `order: sequence` payload: the rows Artillery itself would give worker k of
// N (its lib/dist.ts), cut from the task's copy of the file before Artillery reads it, so that no two
// tasks of a fan-out sign in as the same user at once. Artillery's threads then split the slice.
import { readFile, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import path from "node:path";
import { isDeepStrictEqual } from "node:util";
import { z } from "zod";

/** The environment variable that gives a task its slice, `<index>/<count>` (e.g. `3/8`): not secret. */
export const SLICE_ENV = "CABLE_SLICE";

/** Task `index` (0-based) of `count`, the run's tasks over all its regions. */
export interface TaskSlice {
  index: number;
  count: number;
}

export function formatSlice(slice: TaskSlice): string {
  return `${slice.index}/${slice.count}`;
}

/** Throws a message naming the expected form when `text` is not `<index>/<count>` with index < count. */
export function parseSlice(text: string): TaskSlice {
  const match = /^(\d{1,9})\/(\d{1,9})$/.exec(text.trim());
  const slice = match ? { index: Number(match[1]), count: Number(match[2]) } : undefined;
  if (!slice || slice.count < 1 || slice.index >= slice.count) throw new Error(`must be <index>/<count> with 0 ≤ index < count, not "${text}"`);
  return slice;
}

/**
 * Artillery's rule for worker i of n (dist.ts, divideWork): the rows whose index % n is i % rows.
 * With at least n rows the slices are disjoint and cover the file; with fewer, slice i is row
 * i % rows alone, so rows repeat across slices.
 */
export function keepsRow(rowIndex: number, rows: number, slice: TaskSlice): boolean {
  return rowIndex % slice.count === slice.index % rows;
}

/**
 * One payload to cut, as `run.json` lists it: its path in the bundle and the fields of Artillery's
 * payload spec that decide how its rows are read (none of its rows' meaning: `fields` is not needed).
 */
export const payloadFileSchema = z
  .object({
    path: z
      .string()
      .min(1)
      .refine((p) => !p.startsWith("/") && !p.split(/[\\/]/).includes(".."), "must be a relative path inside the bundle"),
    skipHeader: z.boolean().optional(),
    delimiter: z.string().optional(),
    skipEmptyLines: z.boolean().optional(),
    /** csv-parse options, passed through by Artillery over its own. */
    options: z.record(z.unknown()).optional(),
  })
  .strict();

export type PayloadFile = z.infer<typeof payloadFileSchema>;

/**
 * The csv-parse options Artillery 2 reads a payload with (readPayload in
 * lib/util/prepare-test-execution-plan.ts), short of `cast`, which changes values, not rows.
 */
function artilleryCsvOptions(payload: PayloadFile): Record<string, unknown> {
  return {
    skip_empty_lines: payload.skipEmptyLines ?? true,
    from_line: payload.skipHeader === true ? 2 : 1,
    delimiter: payload.delimiter || ",",
    ...payload.options,
  };
}

/** A record as csv-parse gives it with `info`. */
interface ParsedRecord {
  record: unknown;
  /** Where the record ends, its line break included (bytes into the input). */
  info: { bytes: number };
}

type ParseCsv = (input: Buffer, options: Record<string, unknown>) => unknown[];

let csvParser: ParseCsv | undefined;

/**
 * Artillery's own csv-parse (the version Artillery pins), so rows are counted and cut exactly as
 * Artillery will read them; and the image carries no second copy.
 */
function parseCsv(input: Buffer, options: Record<string, unknown>): unknown[] {
  csvParser ??= createRequire(require.resolve("artillery/package.json"))("csv-parse/lib/sync") as ParseCsv;
  return csvParser(input, options);
}

const UTF8_BOM = Buffer.from([0xef, 0xbb, 0xbf]);

/** A payload file read once, as Artillery will read it: its rows, and any task's slice of them. */
export interface PayloadRows {
  /** Rows in the file, as Artillery counts them. */
  readonly rows: number;
  /**
   * The file with only `slice`'s rows, what came before the first row (a header) kept as it was.
   * Throws when the cut would not read back as exactly those rows. A file without rows stays whole.
   */
  cut(slice: TaskSlice): { text: Buffer; kept: number };
}

/**
 * Reads a payload file with Artillery's options. Slices copy rows byte for byte as the parser
 * delimited them (quoting, delimiters, line breaks inside quotes and all), so nothing is re-encoded;
 * each cut is then read back with the same options and must give exactly the slice's rows, or it is
 * refused: never a slice that is half right.
 */
export function readPayloadRows(file: Buffer, payload: PayloadFile): PayloadRows {
  // Values as written: a cut is compared with the rows it should hold, text for text.
  const options: Record<string, unknown> = { ...artilleryCsvOptions(payload), cast: false };
  // csv-parse's offsets leave out a byte-order mark it strips, so the mark is set aside here.
  const bom = options.bom === true && file.subarray(0, UTF8_BOM.length).equals(UTF8_BOM) ? UTF8_BOM.length : 0;
  const body = file.subarray(bom);
  const bodyOptions = { ...options, bom: false };
  const records = parseCsv(body, { ...bodyOptions, info: true }) as ParsedRecord[];
  const rows = records.length;
  // Row i is the bytes from the end of row i - 1 to its own end; row 0's carry what comes before it.
  const ends = records.map((r) => r.info.bytes);
  let headerEnd: number | undefined;
  return {
    rows,
    cut(slice) {
      if (rows === 0) return { text: file, kept: 0 };
      const keptRows = records.flatMap((_, i) => (keepsRow(i, rows, slice) ? [i] : []));
      // Only a slice without row 0 needs to know where the header ends.
      if (keptRows[0] !== 0) headerEnd ??= firstRowStart(body, records, bodyOptions);
      const header = keptRows[0] === 0 ? 0 : headerEnd;
      const text =
        header === undefined ? undefined : Buffer.concat([file.subarray(0, bom + header), ...keptRows.map((i) => body.subarray(i === 0 ? 0 : ends[i - 1], ends[i]))]);
      if (text === undefined || !readsBackAs(text, options, keptRows.map((i) => records[i].record))) {
        throw new Error(`slice ${formatSlice(slice)} does not read back as the same rows under the payload's CSV options (mixed line breaks?); fix the file or read it whole (order: random)`);
      }
      return { text, kept: keptRows.length };
    },
  };
}

function readsBackAs(text: Buffer, options: Record<string, unknown>, records: unknown[]): boolean {
  try {
    return isDeepStrictEqual(parseCsv(text, options), records);
  } catch {
    return false;
  }
}

/**
 * Where row 0 begins (csv-parse says where records end, not where they begin): the last line start
 * before its end such that the text up to there, followed by row 1, reads as row 1 alone.
 */
function firstRowStart(body: Buffer, records: ParsedRecord[], options: Record<string, unknown>): number | undefined {
  const [first, second] = records;
  const rowOne = body.subarray(first.info.bytes, second.info.bytes);
  for (let at = first.info.bytes - 1; at >= 0; at--) {
    const lineStart = at === 0 || body[at - 1] === LF || (body[at - 1] === CR && body[at] !== LF);
    if (lineStart && readsBackAs(Buffer.concat([body.subarray(0, at), rowOne]), options, [second.record])) return at;
  }
  return undefined;
}

const LF = 0x0a;
const CR = 0x0d;

/**
 * The task's stage before Artillery starts: each sequence payload in the bundle copy replaced by
 * its slice. Without a slice (a task started without one) every file stays whole, as before.
 * Logs each file's rows and the slice's size, never a row (they hold passwords).
 */
export async function slicePayloads(bundleDir: string, payloads: readonly PayloadFile[], slice: TaskSlice | undefined, log: (line: string) => void): Promise<void> {
  if (payloads.length === 0) return;
  if (!slice) {
    log(`no ${SLICE_ENV}: ${payloads.map((p) => p.path).join(", ")} read whole`);
    return;
  }
  for (const payload of payloads) {
    const file = path.join(bundleDir, payload.path);
    try {
      const read = readPayloadRows(await readFile(file), payload);
      const { text, kept } = read.cut(slice);
      await writeFile(file, text);
      log(`payload ${payload.path}: ${read.rows} row(s), slice ${formatSlice(slice)} keeps ${kept}`);
    } catch (err) {
      throw new Error(`payload ${payload.path}: ${(err as Error).message}`);
    }
  }
}
