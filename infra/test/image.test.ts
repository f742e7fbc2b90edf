import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import { mkdir, readdir, readFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { type LocalTarget, startTarget } from "cable-local-target";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cleanEnv, runNode, writeTree } from "cable-test-servers";
import { IMAGE_PACKAGES, INFRA_DIR, type StageResult, stageImage } from "../src/image/stage";

const REPO_ROOT = path.resolve(INFRA_DIR, "..");
const workspaceDir = (name: string) => path.dirname(require.resolve(`${name}/package.json`, { paths: [INFRA_DIR] }));

describe("the image's build context", () => {
  let staged: StageResult;
  let dir: string;

  beforeAll(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "cable-image-"));
    staged = stageImage(dir);
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("holds the engine's and the report plugin's built files, exactly as built, and nothing unpublished", () => {
    expect(staged.packages.map((p) => p.name)).toEqual([...IMAGE_PACKAGES]);
    for (const file of ["artillery-engine-cable/dist/index.js", "artillery-engine-cable/package.json", "artillery-plugin-cable-report/dist/index.js", "artillery-plugin-cable-report/package.json"]) {
      expect(existsSync(path.join(dir, "packages", file)), file).toBe(true);
    }
    for (const pkg of staged.packages) {
      expect(pkg.files.some((f) => f.startsWith("src/") || f.startsWith("test/") || f.startsWith("node_modules/")), pkg.name).toBe(false);
      for (const file of pkg.files.filter((f) => f.startsWith("dist/"))) {
        expect(readFileSync(path.join(dir, "packages", pkg.name, file)), file).toEqual(readFileSync(path.join(workspaceDir(pkg.name), file)));
      }
    }
  });

  it("holds the worker and a package.json pinning the Artillery installed here, with the packages as file: dependencies", () => {
    expect(staged.workerFiles).toEqual(
      expect.arrayContaining(["main.js", "run-task.js", "store.js", "s3-store.js", "local-store.js", "secrets.js", "artillery-plugin-cable-start-gate.js", "artillery-plugin-cable-capacity-probe.js", "artillery-plugin-cable-live.js", "live-keys.js"]),
    );
    const manifest = JSON.parse(readFileSync(path.join(dir, "package.json"), "utf8"));
    const rootManifest = JSON.parse(readFileSync(path.join(REPO_ROOT, "package.json"), "utf8"));
    expect(manifest.dependencies).toMatchObject({
      artillery: rootManifest.devDependencies.artillery,
      "artillery-engine-cable": "file:packages/artillery-engine-cable",
      "artillery-plugin-cable-report": "file:packages/artillery-plugin-cable-report",
      "@aws-sdk/client-s3": expect.any(String),
      "@aws-sdk/client-ssm": expect.any(String),
      "@aws-sdk/client-secrets-manager": expect.any(String),
    });
    expect(manifest.dependencies).not.toHaveProperty("aws-cdk-lib");
    const dockerfile = readFileSync(path.join(dir, "Dockerfile"), "utf8");
    // Node pinned at or above what Artillery 2.0.34 needs, and the install is the lock, exactly.
    const nodeVersion = /^ARG NODE_VERSION=(\d+)\.(\d+)\.(\d+)$/m.exec(dockerfile);
    expect(nodeVersion).not.toBeNull();
    expect(Number(nodeVersion![1]) > 22 || (Number(nodeVersion![1]) === 22 && Number(nodeVersion![2]) >= 18)).toBe(true);
    expect(dockerfile).toMatch(/^FROM node:\$\{NODE_VERSION\}-bookworm-slim$/m);
    expect(dockerfile).toMatch(/^RUN npm ci --omit=dev --install-links/m);
    // The committed lock was made for exactly these dependencies (else: npm run lock-image -w cable-infra).
    const lock = JSON.parse(readFileSync(path.join(dir, "package-lock.json"), "utf8"));
    expect(lock.packages[""].dependencies, "infra/docker/package-lock.json is stale: npm run build -w cable-worker -w cable-infra && npm run lock-image -w cable-infra").toEqual(manifest.dependencies);
    expect(lock.packages["node_modules/artillery"].version).toBe(rootManifest.devDependencies.artillery);
    expect(dockerfile).toContain('ENTRYPOINT ["node", "/app/worker/main.js"]');
  });

  describe("its entrypoint, run from the staged files against a local store", () => {
    let target: LocalTarget;
    let store: string;

    beforeAll(async () => {
      // Stands in for the image's `npm install`: the staged worker resolves its modules from here.
      // CABLE_IMAGE_NODE_MODULES names the image's own tree instead (`npm ci` and the Dockerfile's
      // trim, run in a staged copy), to prove the trimmed install still runs a task (README, "The image").
      symlinkSync(process.env.CABLE_IMAGE_NODE_MODULES ?? path.join(REPO_ROOT, "node_modules"), path.join(dir, "node_modules"), "dir");
      target = await startTarget({ port: 0 });
      store = path.join(dir, "store");
      await mkdir(store);
    });
    afterAll(() => target?.close());

    /** One task of `runId` through the staged entrypoint (not the workspace's), which must succeed. */
    async function runStagedWorker(runId: string): Promise<void> {
      const result = await runNode(path.join(dir, "worker/main.js"), [], {
        env: cleanEnv({ CABLE_RUN_ID: runId, CABLE_REGION: "local", CABLE_TASK_ID: "t0", CABLE_STORE: store, CABLE_WORK_DIR: path.join(dir, "work") }),
        timeoutMs: 90_000,
      });
      expect(result.code, result.stderr).toBe(0);
    }

    it("runs an engine: cable scenario and leaves report, sidecar, log and status", async () => {
      await writeTree(path.join(store, "runs/cable1/bundle"), {
        "run.json": JSON.stringify({ scenario: "chat.yml", startAt: Date.now() + 1_000, overrides: { config: { target: target.cableUrl } } }),
        "chat.yml": `config:
  target: ws://127.0.0.1:1/cable
  engines:
    cable: {}
  phases:
    - arrivalCount: 2
      duration: 1
scenarios:
  - engine: cable
    flow:
      - connect:
          cookies:
            uid: "u/{{ $uuid }}"
      - subscribe: { channel: ChatChannel, params: { id: infra }, as: chat }
      - perform: { channel: chat, action: speak, data: { message: "hi {{ $uuid }}" }, stamp: true }
      - receive: { channel: chat, match: { author_id: "{{ $uuid }}" }, metric: rtt }
      - disconnect: {}
`,
      });

      await runStagedWorker("cable1");

      const results = path.join(store, "runs/cable1/local/t0");
      expect((await readdir(results)).sort()).toEqual(["artillery.log", "report.json", "report.json.sketches.json", "status.json"]);
      // The live plugin, loaded by name from the staged worker, streamed the periods and phases into the region's live folder.
      const live = path.join(store, "runs/cable1/local/live");
      expect((await readdir(live)).some((f) => /^\d+$/.test(f))).toBe(true);
      expect(await readdir(path.join(live, "phases"))).toEqual(["t0.live"]);
      const report = JSON.parse(await readFile(path.join(results, "report.json"), "utf8"));
      expect(report.aggregate.counters["vusers.completed"]).toBe(2);
      expect(report.aggregate.summaries["cable.rtt"].count).toBe(2);
      const sidecar = JSON.parse(await readFile(path.join(results, "report.json.sketches.json"), "utf8"));
      expect(Object.keys(sidecar.aggregate.histograms)).toContain("cable.rtt");
    });

    it("loads the capacity probe by its name alone (the worker's directory is Artillery's plugin path) and streams live periods with the generator's CPU", async () => {
      await writeTree(path.join(store, "runs/probe1/bundle"), {
        // As `cable-fanout capacity` sends it: the plugin by name, no path of the runner's machine.
        "run.json": JSON.stringify({ scenario: "idle.yml", startAt: Date.now() + 1_000, overrides: { config: { target: target.cableUrl, plugins: { "cable-capacity-probe": { endAfterS: 60 } } } } }),
        "idle.yml": `config:
  target: ws://127.0.0.1:1/cable
  engines:
    cable: {}
  phases:
    - name: climb
      arrivalCount: 2
      duration: 1
    - name: hold
      pause: 2
scenarios:
  - engine: cable
    flow:
      - connect:
          cookies:
            uid: "u/{{ $uuid }}"
      - think: 2
      - disconnect: {}
`,
      });
      await runStagedWorker("probe1");
      const live = path.join(store, "runs/probe1/local/live");
      const folders = (await readdir(live)).sort();
      expect(folders).toEqual(expect.arrayContaining(["ended", "phases"]));
      const phases = JSON.parse(await readFile(path.join(live, "phases", "t0.live"), "utf8"));
      expect(phases.map((p: { name: string }) => p.name)).toEqual(["climb", "hold"]);
      const periods = await Promise.all(folders.filter((f) => /^\d+$/.test(f)).map(async (f) => JSON.parse(await readFile(path.join(live, f, "t0.live"), "utf8"))));
      expect(periods.reduce((sum, p) => sum + (p.counters["vusers.completed"] ?? 0), 0), JSON.stringify(periods)).toBe(2);
      // Every period a second or longer carries the generator's CPU: a share of its worker cores, as the report's sidecar counts it.
      const cpu = periods.map((p) => p.cpuPercent).filter((c) => c !== undefined);
      expect(cpu.length).toBeGreaterThan(0);
      for (const c of cpu) expect(c).toBeGreaterThanOrEqual(0);
      expect(JSON.parse(await readFile(path.join(live, "ended", "t0.live"), "utf8"))).toMatchObject({ created: 2, completed: 2, failed: 0 });
    });
  });
});
