import { copyFile, mkdir, readFile, readdir, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import type { Store } from "./store.js";

/** A directory laid out exactly like the bucket: key `a/b/c` is the file `<root>/a/b/c`. */
export class LocalStore implements Store {
  constructor(private readonly root: string) {}

  get location(): string {
    return this.root;
  }

  async list(prefix: string): Promise<string[]> {
    const dir = this.pathOf(prefix);
    let entries;
    try {
      entries = await readdir(dir, { recursive: true, withFileTypes: true });
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === "ENOENT") return [];
      // A prefix that is a whole key lists that key, as S3 does (the capacity probe asks so whether its stop marker exists).
      if (code === "ENOTDIR") return (await stat(dir).catch(() => undefined))?.isFile() ? [prefix] : [];
      throw err;
    }
    return entries
      .filter((e) => e.isFile())
      .map((e) => prefix + path.relative(dir, path.join(e.parentPath, e.name)).split(path.sep).join("/"))
      .sort();
  }

  async listFolders(prefix: string): Promise<string[]> {
    try {
      const entries = await readdir(this.pathOf(prefix), { withFileTypes: true });
      return entries.filter((e) => e.isDirectory()).map((e) => `${prefix}${e.name}/`).sort();
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === "ENOENT" || code === "ENOTDIR") return [];
      throw err;
    }
  }

  async getToFile(key: string, file: string): Promise<void> {
    await copyFile(this.pathOf(key), file);
  }

  getText(key: string): Promise<string> {
    return readFile(this.pathOf(key), "utf8");
  }

  async putFile(key: string, file: string): Promise<void> {
    await copyFile(file, await this.createParent(key));
  }

  async putText(key: string, text: string): Promise<void> {
    await writeFile(await this.createParent(key), text);
  }

  /** The key's file, once its directory exists. */
  private async createParent(key: string): Promise<string> {
    const target = this.pathOf(key);
    await mkdir(path.dirname(target), { recursive: true });
    return target;
  }

  private pathOf(key: string): string {
    const target = path.resolve(this.root, ...key.split("/").filter(Boolean));
    if (target !== this.root && !target.startsWith(this.root + path.sep)) throw new Error(`key ${key} escapes ${this.root}`);
    return target;
  }
}
