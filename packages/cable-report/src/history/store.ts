// Where the history lives: a folder (in the user's repository, or a CI cache) or an S3 prefix (the
// bucket the stacks made, or any). One file per run, never an appended log: two runs that finish
// together each write their own file (no lost update, no lock), S3 needs no read-modify-write, and a
// torn or foreign file spoils only itself. The names sort by time (record.ts recordFileName).
//
// Every record is read as untrusted input, as a task file is: a size cap before parsing, the schema
// after (record.ts), and a file that fails either is listed as skipped with the reason, the rest used.
import { mkdirSync, readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { writeFileAtomic } from "../atomic-write.js";
import { LIMITS, plain } from "../text.js";
import { historyRecordSchema, recordFileName, type HistoryRecord } from "./record.js";

/** A record larger than this is not read (a slimmed record of three regions is tens of KB). */
export const MAX_RECORD_BYTES = 4 * 1024 * 1024;
/** Records read, newest first by name: thirty nights a month for almost three years. */
export const MAX_RECORDS_READ = 1_000;

export class HistoryInputError extends Error {}

export type HistoryLocation = { kind: "dir"; dir: string } | { kind: "s3"; bucket: string; prefix: string };

export interface SkippedRecord {
  file: string;
  reason: string;
}

export interface HistoryRead {
  /** Oldest first (by the load's start). */
  records: HistoryRecord[];
  skipped: SkippedRecord[];
  /** Files beyond MAX_RECORDS_READ that were not read (the oldest). */
  unread: number;
}

export interface HistoryStore {
  /** For messages: the folder or s3:// URL as given. */
  readonly where: string;
  /** Writes the record's file; returns where it went. */
  append(record: HistoryRecord): Promise<string>;
  read(): Promise<HistoryRead>;
  /** Lists the records without reading them (what a run checks before its tasks start); their count. */
  check(): Promise<number>;
}

/** `s3://bucket/prefix` or a folder. */
export function parseHistoryLocation(text: string): HistoryLocation {
  const given = text.trim();
  if (given === "") throw new HistoryInputError("--history wants a folder or s3://bucket/prefix");
  if (!/^s3:\/\//i.test(given)) return { kind: "dir", dir: path.resolve(given) };
  const match = /^s3:\/\/([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])(?:\/(.*))?$/i.exec(given);
  if (!match) throw new HistoryInputError(`--history ${JSON.stringify(given)}: an S3 location is s3://bucket/prefix, with a valid bucket name`);
  const prefix = (match[2] ?? "").replace(/^\/+|\/+$/g, "");
  return { kind: "s3", bucket: match[1], prefix: prefix === "" ? "" : `${prefix}/` };
}

export function openHistory(text: string, options: { s3Client?: () => Promise<S3Like> } = {}): HistoryStore {
  const location = parseHistoryLocation(text);
  return location.kind === "dir" ? new DirHistory(text, location.dir) : new S3History(text, location.bucket, location.prefix, options.s3Client ?? defaultS3Client);
}

/** The parsed record of one file's text, or why it was skipped. */
export function readRecord(text: string): { record: HistoryRecord } | { reason: string } {
  if (Buffer.byteLength(text) > MAX_RECORD_BYTES) return { reason: `larger than ${MAX_RECORD_BYTES / 1024 / 1024} MiB` };
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return { reason: "not JSON (truncated or corrupt)" };
  }
  const parsed = historyRecordSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const at = issue.path.length > 0 ? `${issue.path.slice(0, 6).join(".")}: ` : "";
    // The path holds the file's own keys: text from outside, one printable line.
    return { reason: plain(`not a cable-report history record (${at}${issue.message})`, LIMITS.note) };
  }
  return { record: parsed.data };
}

function collect(entries: Array<{ file: string; text: string | { error: string } }>, unread: number): HistoryRead {
  const records: HistoryRecord[] = [];
  const skipped: SkippedRecord[] = [];
  for (const { file, text } of entries) {
    // A file's name is the store's (a bucket key anyone with write access chose): one printable line.
    const name = plain(file, LIMITS.label);
    if (typeof text !== "string") {
      skipped.push({ file: name, reason: text.error });
      continue;
    }
    const read = readRecord(text);
    if ("record" in read) records.push(read.record);
    else skipped.push({ file: name, reason: read.reason });
  }
  records.sort((a, b) => a.run.at - b.run.at || a.run.id.localeCompare(b.run.id));
  return { records, skipped, unread };
}

/** The newest MAX_RECORDS_READ of the `.json` names, and how many older ones are left. */
function newest(names: string[]): { names: string[]; unread: number } {
  const json = names.filter((n) => n.endsWith(".json")).sort();
  const cut = Math.max(0, json.length - MAX_RECORDS_READ);
  return { names: json.slice(cut), unread: cut };
}

class DirHistory implements HistoryStore {
  constructor(
    readonly where: string,
    private readonly dir: string,
  ) {}

  async append(record: HistoryRecord): Promise<string> {
    mkdirSync(this.dir, { recursive: true });
    const file = path.join(this.dir, recordFileName(record));
    writeFileAtomic(file, `${JSON.stringify(record)}\n`);
    return file;
  }

  async check(): Promise<number> {
    return this.list().filter((n) => n.endsWith(".json")).length;
  }

  /** The folder's names; none when it does not exist yet (the first run makes it). */
  private list(): string[] {
    try {
      return readdirSync(this.dir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return [];
      throw new HistoryInputError(`--history ${this.where}: cannot list it (${(err as NodeJS.ErrnoException).code ?? "error"})`);
    }
  }

  async read(): Promise<HistoryRead> {
    const chosen = newest(this.list());
    return collect(
      chosen.names.map((name) => {
        const file = path.join(this.dir, name);
        try {
          const stat = statSync(file);
          if (!stat.isFile()) return { file: name, text: { error: "not a file" } };
          if (stat.size > MAX_RECORD_BYTES) return { file: name, text: { error: `larger than ${MAX_RECORD_BYTES / 1024 / 1024} MiB` } };
          return { file: name, text: readFileSync(file, "utf8") };
        } catch (err) {
          return { file: name, text: { error: `unreadable (${(err as NodeJS.ErrnoException).code ?? "error"})` } };
        }
      }),
      chosen.unread,
    );
  }
}

/** The part of S3Client this store uses (a test may pass its own). */
export interface S3Like {
  send(command: unknown): Promise<unknown>;
}

/** Loaded on first use: reading a local history needs no AWS SDK (an optional peer dependency, installed with cable-fanout). */
async function defaultS3Client(): Promise<S3Like> {
  let sdk: typeof import("@aws-sdk/client-s3");
  try {
    sdk = await import("@aws-sdk/client-s3");
  } catch {
    throw new HistoryInputError("an s3:// history needs @aws-sdk/client-s3 (npm install @aws-sdk/client-s3; cable-fanout brings it)");
  }
  // The bucket's own region, whatever AWS_REGION says (the history bucket need not be the run's).
  return new sdk.S3Client({ region: process.env.AWS_REGION ?? process.env.AWS_DEFAULT_REGION ?? "us-east-1", followRegionRedirects: true });
}

class S3History implements HistoryStore {
  private client: Promise<S3Like> | undefined;

  constructor(
    readonly where: string,
    private readonly bucket: string,
    private readonly prefix: string,
    private readonly makeClient: () => Promise<S3Like>,
  ) {}

  private async s3(): Promise<{ client: S3Like; sdk: typeof import("@aws-sdk/client-s3") }> {
    this.client ??= this.makeClient();
    const client = await this.client;
    return { client, sdk: await import("@aws-sdk/client-s3") };
  }

  async append(record: HistoryRecord): Promise<string> {
    const { client, sdk } = await this.s3();
    const key = `${this.prefix}${recordFileName(record)}`;
    await this.call("write", () => client.send(new sdk.PutObjectCommand({ Bucket: this.bucket, Key: key, Body: `${JSON.stringify(record)}\n`, ContentType: "application/json" })));
    return `s3://${this.bucket}/${key}`;
  }

  async check(): Promise<number> {
    return (await this.list(1)).length;
  }

  /** The records' keys and sizes under the prefix (not below it), at most `pages` pages of 1,000. */
  private async list(pages: number): Promise<Array<{ key: string; size: number }>> {
    const { client, sdk } = await this.s3();
    const names: Array<{ key: string; size: number }> = [];
    let token: string | undefined;
    for (let page = 0; page < pages; page++) {
      const listed = (await this.call("list", () =>
        client.send(new sdk.ListObjectsV2Command({ Bucket: this.bucket, Prefix: this.prefix, ContinuationToken: token })),
      )) as { Contents?: Array<{ Key?: string; Size?: number }>; IsTruncated?: boolean; NextContinuationToken?: string };
      for (const o of listed.Contents ?? []) if (o.Key && !o.Key.slice(this.prefix.length).includes("/")) names.push({ key: o.Key, size: o.Size ?? 0 });
      if (!listed.IsTruncated || !listed.NextContinuationToken) break;
      token = listed.NextContinuationToken;
    }
    return names;
  }

  async read(): Promise<HistoryRead> {
    const { client, sdk } = await this.s3();
    // Bounded: 20 pages of 1,000 keys.
    const names = await this.list(20);
    const sizes = new Map(names.map((n) => [n.key.slice(this.prefix.length), n.size]));
    const chosen = newest([...sizes.keys()]);
    const entries = await mapLimit(chosen.names, 16, async (name) => {
      if ((sizes.get(name) ?? 0) > MAX_RECORD_BYTES) return { file: name, text: { error: `larger than ${MAX_RECORD_BYTES / 1024 / 1024} MiB` } };
      try {
        const got = (await client.send(new sdk.GetObjectCommand({ Bucket: this.bucket, Key: `${this.prefix}${name}` }))) as { Body?: { transformToString(): Promise<string> } };
        return { file: name, text: got.Body ? await got.Body.transformToString() : { error: "empty object" } };
      } catch (err) {
        return { file: name, text: { error: `unreadable (${plain((err as { name?: string }).name ?? "error", 80)})` } };
      }
    });
    return collect(entries, chosen.unread);
  }

  private async call<T>(what: string, send: () => Promise<T>): Promise<T> {
    try {
      return await send();
    } catch (err) {
      const name = (err as { name?: string }).name ?? "error";
      throw new HistoryInputError(`--history ${this.where}: cannot ${what} it (${plain(name, 80)})`);
    }
  }
}

async function mapLimit<T, R>(items: T[], limit: number, f: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await f(items[i]);
      }
    }),
  );
  return out;
}
