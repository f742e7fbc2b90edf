// The run's live side: the tasks' live files read every LIVE_POLL_MS into lines per region and
// period, --abort-on judged on them, the live page drawn from them (--live), and the feed handed to
// whoever judges more (a capacity search).
import { readFile } from "node:fs/promises";
import path from "node:path";
import type { RunnerStop } from "cable-worker/contract";
import type { ServerSeries } from "artillery-plugin-cable-report";
import { LiveFeed } from "../live/feed.js";
import { judgeAbort, type AbortCondition } from "../live/abort.js";
import { formatFinal, LiveView } from "../live/view.js";
import type { Region } from "../backend.js";
import type { Progress } from "../progress.js";
import { LivePage, type LivePageAddress, type LiveRunFacts } from "../live/page.js";
import type { RunRecord } from "./record.js";
import type { RunDeps } from "./run-options.js";

/** How often the live files are read. */
const LIVE_POLL_MS = 2_000;

/** What of a run under way its live side reads and may stop. */
export interface FollowedRun {
  readonly runId: string;
  readonly regions: Region[];
  readonly record: RunRecord;
  /** What the live page shows of the scenario: all but phaseCount unknown to a runner that attached without it. */
  readonly scenario: { phaseCount?: number; durationMs?: number; file?: string; config?: Record<string, unknown>; scenarios?: unknown[] };
  readonly stopped: boolean;
  stop(reason: string, why: RunnerStop): void;
  save(): void;
}

export interface FollowOptions {
  count: number;
  liveLines?: boolean;
  abortOn?: AbortCondition[];
  /** --live: the page's address. */
  live?: LivePageAddress;
  /** The config the tasks run with (the scenario's after -e and --overrides), for the live page; else the scenario's own. */
  config?: Record<string, unknown>;
  /** The server's scrapes so far (--server-metrics), for the live page. */
  server?: () => ServerSeries | null;
}

/** The run's live side, as the runner drives it. */
export interface LiveSide {
  /** The progress to hand the rest of the run: its task counts reach the live page too. */
  progress: Progress;
  /** Every task has stopped: the last read, and the final lines. */
  stop(): Promise<void>;
  /** The report is written (undefined: none could be): the live page becomes it, then closes. */
  final(htmlFile: string | undefined): Promise<void>;
}

/**
 * What the tasks stream while they run: a line per region and period, and --abort-on's verdict on
 * the merged figures. `stop` prints the whole run per region, from the last of the live files.
 */
export function followLive(run: FollowedRun, options: FollowOptions, deps: Pick<RunDeps, "now" | "sleep" | "onFeed" | "livePage">, progress: Progress): LiveSide {
  // Once the barrier has gone, only a region's ready tasks send periods: one that missed it, or never
  // started, holds no line back.
  const expected = (region: string) => run.record.barrier?.readyByRegion?.[region] ?? options.count;
  const feed = new LiveFeed(
    run.runId,
    new Map(run.regions.map((r) => [r.name, r.store])),
    { now: deps.now, sleep: deps.sleep, warn: (line) => progress.event(line) },
    { expected, phaseCount: run.scenario.phaseCount, pollMs: LIVE_POLL_MS },
  ).start();
  deps.onFeed?.(feed);
  const view = options.liveLines === false ? undefined : new LiveView(expected);
  const facts = runFacts(run, options, expected);
  const page = deps.livePage ? sharedPage(deps.livePage, facts, progress) : options.live ? openPage(options.live, facts, deps.now, progress) : undefined;
  const offFeed = feed.onUpdate((snapshot) => {
    const now = deps.now();
    page?.current?.show(snapshot);
    for (const line of view?.lines(snapshot, now) ?? []) progress.event(line);
    if (!options.abortOn?.length || run.record.aborted || run.stopped) return;
    const firstPeriod = Math.min(...[...snapshot.values()].map((region) => region.periods()[0]?.period ?? Infinity));
    const verdict = judgeAbort(options.abortOn, snapshot, expected, now, Number.isFinite(firstPeriod) ? firstPeriod : now);
    if (!verdict) return;
    run.record.aborted = verdict;
    run.save();
    const reason = `--abort-on ${verdict.condition}: ${verdict.figure}`;
    progress.event(`⛔ ${reason}; stopping every task`);
    run.stop(reason, { by: "abort" });
  });
  return {
    progress: page ? teeCounts(progress, page) : progress,
    async final(htmlFile) {
      // A page the caller keeps across runs is the caller's to end.
      const live = deps.livePage ? undefined : await page?.opened;
      if (!live) return;
      let html: string | undefined;
      try {
        html = htmlFile ? await readFile(htmlFile, "utf8") : undefined;
      } catch {
        html = undefined;
      }
      await live.final(html);
      progress.event(`live page: now the report (${describeTransfer(live)})`);
    },
    async stop() {
      offFeed();
      const last = await feed.finish();
      (await page?.opened)?.show(last);
      if (!view) return;
      // Every task has stopped: no period it has not sent is coming.
      for (const line of view.lines(last, Infinity)) progress.event(line);
      for (const region of last.values()) if (region.tasks.size > 0) progress.event(formatFinal(region));
    },
  };
}

interface OpeningPage {
  opened: Promise<LivePage | undefined>;
  /** Set once listening: the feed's updates before then are drawn from the first one after. */
  current?: LivePage;
}

/** What the page says of this run besides the feed. */
function runFacts(run: FollowedRun, options: FollowOptions, expected: (region: string) => number): LiveRunFacts {
  return {
    title: run.scenario.file ? path.basename(run.scenario.file) : run.runId,
    config: options.config ?? run.scenario.config ?? {},
    scenarios: run.scenario.scenarios ?? [],
    plannedMs: run.scenario.durationMs,
    startAt: () => run.record.startAt,
    expected,
    estimate: run.record.estimate,
    aborted: () => run.record.aborted,
    ...(options.server ? { server: options.server } : {}),
  };
}

/** The caller's page (a capacity search's, across its runs), on this run from now on. */
function sharedPage(page: LivePage, facts: LiveRunFacts, progress: Progress): OpeningPage {
  page.follow(facts);
  page.log = (line) => progress.event(line);
  return { opened: Promise.resolve(page), current: page };
}

/** Starts the live page's server; a port that cannot be had is said, and the run goes on without it. */
function openPage(address: LivePageAddress, facts: LiveRunFacts, now: () => number, progress: Progress): OpeningPage {
  const opening: OpeningPage = { opened: Promise.resolve(undefined) };
  // A host other than loopback was said aloud by the command, before anything started.
  opening.opened = LivePage.open(address, facts, now).then(
    (page) => {
      opening.current = page;
      page.log = (line) => progress.event(line);
      progress.event(`live page: ${page.url}`);
      return page;
    },
    (err: Error) => {
      progress.event(`live page: cannot listen on ${address.host}:${address.port} (${(err as NodeJS.ErrnoException).code ?? err.name}); the run goes on without it`);
      return undefined;
    },
  );
  return opening;
}

/** The progress line, and the page's line of each region's tasks. */
function teeCounts(progress: Progress, page: OpeningPage): Progress {
  return {
    update(region, counts) {
      page.current?.tasks(region, counts);
      progress.update(region, counts);
    },
    event: (line) => progress.event(line),
    stop: () => progress.stop(),
  };
}

function describeTransfer(page: LivePage): string {
  const t = page.transfer;
  return `${t.updates} updates, ${Math.round(t.eventBytes / 1024)} KiB streamed, ${t.pagesServed} page loads`;
}
