import { createReadStream, createWriteStream } from "node:fs";
import { stat } from "node:fs/promises";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { GetObjectCommand, PutObjectCommand, type S3Client, paginateListObjectsV2 } from "@aws-sdk/client-s3";
import type { ObjectStore } from "../store.js";

/** A region's results bucket. */
export class S3ObjectStore implements ObjectStore {
  constructor(
    private readonly client: S3Client,
    private readonly bucket: string,
  ) {}

  get location(): string {
    return `s3://${this.bucket}`;
  }

  async list(prefix: string): Promise<string[]> {
    const keys: string[] = [];
    for await (const page of paginateListObjectsV2({ client: this.client }, { Bucket: this.bucket, Prefix: prefix })) {
      for (const object of page.Contents ?? []) if (object.Key) keys.push(object.Key);
    }
    return keys.sort();
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
    await this.client.send(new PutObjectCommand({ Bucket: this.bucket, Key: key, Body: createReadStream(file), ContentLength: size }));
  }

  async putText(key: string, text: string): Promise<void> {
    await this.client.send(new PutObjectCommand({ Bucket: this.bucket, Key: key, Body: text, ContentType: "application/json" }));
  }

  private async body(key: string): Promise<Readable> {
    const response = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: key }));
    if (!(response.Body instanceof Readable)) throw new Error(`s3://${this.bucket}/${key}: no body`);
    return response.Body;
  }
}
