import { copyFile, mkdir, readFile, readdir, writeFile } from "node:fs/promises";
import path from "node:path";
import type { ObjectStore } from "../store.js";

/** A directory laid out like the bucket (key `a/b` is the file `<root>/a/b`), as the worker's LocalStore reads it. */
export class DirectoryStore implements ObjectStore {
  readonly location: string;

  constructor(private readonly root: string) {
    this.location = root;
  }

  async list(prefix: string): Promise<string[]> {
    const dir = this.pathOf(prefix);
    let entries;
    try {
      entries = await readdir(dir, { recursive: true, withFileTypes: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return [];
      throw err;
    }
    return entries
      .filter((e) => e.isFile())
      .map((e) => prefix + path.relative(dir, path.join(e.parentPath, e.name)).split(path.sep).join("/"))
      .sort();
  }

  getToFile(key: string, file: string): Promise<void> {
    return copyFile(this.pathOf(key), file);
  }

  getText(key: string): Promise<string> {
    return readFile(this.pathOf(key), "utf8");
  }

  async putFile(key: string, file: string): Promise<void> {
    const target = this.pathOf(key);
    await mkdir(path.dirname(target), { recursive: true });
    await copyFile(file, target);
  }

  async putText(key: string, text: string): Promise<void> {
    const target = this.pathOf(key);
    await mkdir(path.dirname(target), { recursive: true });
    await writeFile(target, text);
  }

  private pathOf(key: string): string {
    const target = path.resolve(this.root, ...key.split("/").filter(Boolean));
    if (target !== this.root && !target.startsWith(this.root + path.sep)) throw new Error(`key ${key} escapes ${this.root}`);
    return target;
  }
}
