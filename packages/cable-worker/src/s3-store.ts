import { createReadStream, createWriteStream } from "node:fs";
import { stat } from "node:fs/promises";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { GetObjectCommand, PutObjectCommand, type S3Client, paginateListObjectsV2 } from "@aws-sdk/client-s3";
import type { Store } from "./store.js";

/** An S3 bucket, optionally under a key prefix (`s3://bucket/prefix`). */
export class S3Store implements Store {
  constructor(
    private readonly client: S3Client,
    private readonly bucket: string,
    private readonly prefix = "",
  ) {}

  get location(): string {
    return `s3://${this.bucket}${this.prefix ? `/${this.prefix}` : ""}`;
  }

  async list(prefix: string): Promise<string[]> {
    const keys: string[] = [];
    const pages = paginateListObjectsV2({ client: this.client }, { Bucket: this.bucket, Prefix: this.keyOf(prefix) });
    for await (const page of pages) {
      for (const object of page.Contents ?? []) if (object.Key) keys.push(this.unprefixed(object.Key));
    }
    return keys.sort();
  }

  async listFolders(prefix: string): Promise<string[]> {
    const folders: string[] = [];
    const pages = paginateListObjectsV2({ client: this.client }, { Bucket: this.bucket, Prefix: this.keyOf(prefix), Delimiter: "/" });
    for await (const page of pages) {
      for (const common of page.CommonPrefixes ?? []) if (common.Prefix) folders.push(this.unprefixed(common.Prefix));
    }
    return folders.sort();
  }

  async getToFile(key: string, file: string): Promise<void> {
    await pipeline(await this.body(key), createWriteStream(file));
  }

  async getText(key: string): Promise<string> {
    const chunks: Buffer[] = [];
    for await (const chunk of await this.body(key)) chunks.push(Buffer.from(chunk));
    return Buffer.concat(chunks).toString("utf8");
  }

  async putFile(key: string, file: string): Promise<void> {
    const { size } = await stat(file);
    await this.put(key, createReadStream(file), size);
  }

  async putText(key: string, text: string): Promise<void> {
    await this.put(key, text, Buffer.byteLength(text));
  }

  private async put(key: string, body: Readable | string, size: number): Promise<void> {
    await this.client.send(
      new PutObjectCommand({
        Bucket: this.bucket,
        Key: this.keyOf(key),
        Body: body,
        ContentLength: size,
        ContentType: key.endsWith(".json") ? "application/json" : "text/plain; charset=utf-8",
      }),
    );
  }

  private async body(key: string): Promise<Readable> {
    const response = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: this.keyOf(key) }));
    if (!(response.Body instanceof Readable)) throw new Error(`s3://${this.bucket}/${this.keyOf(key)}: no body`);
    return response.Body;
  }

  private keyOf(key: string): string {
    return this.prefix ? `${this.prefix}/${key}` : key;
  }

  private unprefixed(key: string): string {
    return this.prefix ? key.slice(this.prefix.length + 1) : key;
  }
}
