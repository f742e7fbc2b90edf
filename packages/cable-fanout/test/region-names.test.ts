import { existsSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { FanoutInputError } from "../src/errors";
import { LocalBackend } from "../src/local/local-backend";
import { parseRegions } from "../src/options";
import { regionNameProblem } from "../src/region-names";
import { runCli } from "./cli";

// A region's name becomes a results folder, a store prefix, a report column and (on AWS) an
// endpoint: `--regions constructor,eu-west-2` used to pass and kill the run's report.
const ROOT = path.resolve(__dirname, "../../..");
const work = mkdtempSync(path.join(os.tmpdir(), "cable-region-names-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe("region names", () => {
  it("takes AWS regions' names on both backends, local names with --local only", () => {
    for (const name of ["eu-west-2", "us-east-1", "us-gov-west-1", "ap-southeast-3", "cn-north-1", "eusc-de-east-1"]) {
      expect(regionNameProblem(name, "aws"), name).toBeUndefined();
      expect(regionNameProblem(name, "local"), name).toBeUndefined();
    }
    for (const name of ["local", "local-a", "local-east", "local-eu.1_b"]) {
      expect(regionNameProblem(name, "local"), name).toBeUndefined();
      expect(regionNameProblem(name, "aws"), name).toContain("is a local region name: add --local");
    }
    expect(parseRegions("local-a, eu-west-2", "local")).toEqual(["local-a", "eu-west-2"]);
  });

  it("refuses any other word, prototype keys and the run's own folders included, naming each", () => {
    for (const name of ["constructor", "__proto__", "toString", "hasOwnProperty", "bundle", "control", "seed", "a", "eu-west", "EU-WEST-2", "eu-west-2 ", "../x", "local-", "locale", "local-a/b"]) {
      expect(regionNameProblem(name, "local"), name).toMatch(/is not a region name: with --local, use local or local-<name>/);
      expect(regionNameProblem(name, "aws"), name).toMatch(/is not an AWS region name|is a local region name/);
    }
    expect(() => parseRegions("constructor,eu-west-2", "aws")).toThrow(new FanoutInputError('--regions: "constructor" is not an AWS region name (such as eu-west-2 or us-east-1)'));
    expect(() => parseRegions("__proto__,local-a,constructor", "local")).toThrow(/"__proto__" is not a region name[^]*\n--regions: "constructor" is not a region name/);
  });

  it("the local backend refuses them too, for a caller that skips the flags' parsing", async () => {
    const backend = new LocalBackend({ storeDir: path.join(work, "store") });
    await expect(backend.openRegion("constructor")).rejects.toThrow('--regions: "constructor" is not a region name');
    await expect(backend.openRegion("bundle")).rejects.toThrow(FanoutInputError);
  });

  it("run, compare, capacity, collect and stop exit 2 before anything starts: no results folder, no store", async () => {
    const chat = path.join(ROOT, "scenarios/chat.yml");
    const capacity = path.join(ROOT, "scenarios/capacity-rails.yml");
    const out = path.join(work, "out");
    const cases: Array<[string[], string]> = [
      [["run", chat, "--local", "--regions", "constructor,local-a"], '"constructor" is not a region name'],
      [["run", chat, "--regions", "constructor,eu-west-2"], '"constructor" is not an AWS region name'],
      [["run", chat, "--regions", "local-a"], '"local-a" is a local region name: add --local'],
      [["compare", chat, "--local", "--regions", "__proto__", "--target", "a=ws://127.0.0.1:1/cable", "--target", "b=ws://127.0.0.1:2/cable"], '"__proto__" is not a region name'],
      [["capacity", capacity, "--local", "--regions", "constructor", "--slo", "errors<1%", "--start", "10", "--step", "10", "--max", "20"], '"constructor" is not a region name'],
      [["collect", "r1", "--local", "--regions", "constructor"], '"constructor" is not a region name'],
      [["stop", "r1", "--local", "--regions", "constructor"], '"constructor" is not a region name'],
    ];
    for (const [args, message] of cases) {
      const result = await runCli([...args, "--out", out], { cwd: work, timeoutMs: 30_000 });
      expect(result.code, `${args.join(" ")}\n${result.stderr}`).toBe(2);
      expect(result.stderr).toContain(message);
    }
    expect(existsSync(out)).toBe(false);
  }, 120_000);
});
