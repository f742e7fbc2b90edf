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

/**
 * A payload file csv-parse refused, said as a person reads the file: its name, the line as an
 * editor numbers it (the header is line 1) and what usually causes it. Never a value of the file:
 * its rows hold passwords.
 */
export class PayloadCsvError extends Error {
  override name = "PayloadCsvError";
}

/** What is known of the file's shape beyond its CSV options: Artillery's `fields`, when the spec names them. */
export interface PayloadShape {
  fields?: number;
}

/** The line (1-based) on which the byte at `offset` lies, past any blank lines there. */
function lineAt(body: Buffer, offset: number): number {
  let at = offset;
  while (at < body.length && (body[at] === LF || body[at] === CR)) at++;
  let line = 1;
  for (let i = 0; i < at; i++) if (body[i] === LF || (body[i] === CR && body[i + 1] !== LF)) line++;
  return line;
}

/** Where line `line` (1-based) begins. */
function lineStart(body: Buffer, line: number): number {
  let at = 0;
  for (let n = 1; n < line && at < body.length; at++) if (body[at] === LF || (body[at] === CR && body[at + 1] !== LF)) n++;
  return at;
}

/**
 * csv-parse's error about `body`, reworded (PayloadCsvError). csv-parse compares every record with
 * the first one it reads, so an unquoted comma in the first row is reported on the second, and a
 * quote never closed is reported at the end of the file: the line named here is the one to fix,
 * found by reading the file again leniently. Its other errors keep their words, with the file's name.
 */
export function explainCsvError(err: unknown, body: Buffer, options: Record<string, unknown>, file: string, shape: PayloadShape = {}): Error {
  const e = err as Error & { code?: string; lines?: number };
  if (typeof e?.code !== "string") return err as Error;
  const delimiter = typeof options.delimiter === "string" ? options.delimiter : ",";
  const comma = delimiter === "," ? "comma" : `"${delimiter}"`;
  const example = `"pa${delimiter}ss"`;
  if (e.code === "CSV_INCONSISTENT_RECORD_LENGTH" || e.code === "CSV_RECORD_INCONSISTENT_FIELDS_LENGTH") {
    let records: ParsedRecord[] = [];
    try {
      records = parseCsv(body, { ...options, relax_column_count: true, info: true }) as ParsedRecord[];
    } catch {
      // Read leniently it fails elsewhere: csv-parse's own words, with the file's name.
    }
    const counts = records.map((r) => (Array.isArray(r.record) ? r.record.length : 0));
    const expected = expectedFields(body, options, counts, shape);
    const odd = records.findIndex((_, i) => counts[i] !== expected.count);
    if (odd !== -1) {
      const fields = counts[odd];
      // Counted here from where the record begins: csv-parse's own count takes a CRLF inside quotes for two lines.
      const line = lineAt(body, odd === 0 ? lineStart(body, typeof options.from_line === "number" ? options.from_line : 1) : records[odd - 1].info.bytes);
      const cause =
        fields > expected.count
          ? `an unquoted ${comma} or quote in a value? Quote the value (${example})`
          : `a value missing, or a quote that runs two values together? Every line needs ${expected.count} fields (an empty value is written ${delimiter}${delimiter})`;
      return new PayloadCsvError(`${file} line ${line}: ${fields} field${fields === 1 ? "" : "s"} where ${expected.basis} ${expected.count} — ${cause}`);
    }
  }
  if (e.code === "CSV_QUOTE_NOT_CLOSED") {
    // The quote opens in the record after the last one read whole.
    let lastEnd = 0;
    try {
      parseCsv(body, { ...options, on_record: (record: unknown, context: { bytes: number }) => ((lastEnd = context.bytes), record) });
    } catch {
      // Expected: the same error, after the last whole record.
    }
    return new PayloadCsvError(`${file} line ${lineAt(body, lastEnd)}: a quote opens a value that no quote closes before the end of the file — a value that begins with a quote? Quote the whole value and double the quotes inside it ("""pa"ss")`);
  }
  if (e.code === "CSV_INVALID_CLOSING_QUOTE" || e.code === "INVALID_OPENING_QUOTE" || e.code === "CSV_INVALID_OPENING_QUOTE") {
    return new PayloadCsvError(`${file} line ${e.lines}: a quote inside a value — quote the whole value and double the quotes inside it ("pa""ss")`);
  }
  return new PayloadCsvError(`${file}${typeof e.lines === "number" ? ` line ${e.lines}` : ""}: ${e.message}`);
}

/** How many fields a row should have: the header's (skipHeader), the spec's `fields`, or most rows'. */
function expectedFields(body: Buffer, options: Record<string, unknown>, counts: number[], shape: PayloadShape): { count: number; basis: string } {
  if (options.from_line === 2) {
    try {
      const [header] = parseCsv(body, { ...options, from_line: 1, to_line: 1, relax_column_count: true }) as unknown[][];
      if (Array.isArray(header)) return { count: header.length, basis: "the header has" };
    } catch {
      // A header csv-parse cannot read: judged by the rows.
    }
  }
  if (shape.fields !== undefined) return { count: shape.fields, basis: "the payload's fields name" };
  const tally = new Map<number, number>();
  for (const n of counts) tally.set(n, (tally.get(n) ?? 0) + 1);
  const [count] = [...tally].sort((a, b) => b[1] - a[1] || a[0] - b[0])[0] ?? [0];
  return { count, basis: "most lines have" };
}

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
export function readPayloadRows(file: Buffer, payload: PayloadFile, shape: PayloadShape = {}): PayloadRows {
  // Values as written: a cut is compared with the rows it should hold, text for text.
  const options: Record<string, unknown> = { ...artilleryCsvOptions(payload), cast: false };
  // csv-parse's offsets leave out a byte-order mark it strips, so the mark is set aside here.
  const bom = options.bom === true && file.subarray(0, UTF8_BOM.length).equals(UTF8_BOM) ? UTF8_BOM.length : 0;
  const body = file.subarray(bom);
  const bodyOptions = { ...options, bom: false };
  let records: ParsedRecord[];
  try {
    records = parseCsv(body, { ...bodyOptions, info: true }) as ParsedRecord[];
  } catch (err) {
    throw explainCsvError(err, body, bodyOptions, payload.path, shape);
  }
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
      // A PayloadCsvError names the file and line itself.
      throw err instanceof PayloadCsvError ? err : new Error(`payload ${payload.path}: ${(err as Error).message}`);
    }
  }
}
