// `cable-report <results-dir> [options]`: merge, render, write atomically.
import { parseArgs } from "node:util";
import { writeFileAtomic } from "./atomic-write.js";
import { findRegressions, withBaselineVerdict } from "./compare.js";
import { ResultsInputError } from "./input.js";
import { renderReportPage } from "./html.js";
import { renderMarkdown, type RenderOptions } from "./markdown.js";
import { loadBaseline, mergeResults } from "./results.js";
import { judgeBaseline } from "./target.js";
import { HISTORY_GATE } from "./history/gate.js";
import { HistoryInputError, openHistory } from "./history/store.js";
import { renderTrendHtml } from "./history/trend-html.js";
import { renderTrendMarkdown } from "./history/trend-markdown.js";
import { TrendInputError, trendModel } from "./history/trend-model.js";

const USAGE = `Usage: cable-report <results-dir> [options]
       cable-report trend <history> [options]   (cable-report trend --help)

<results-dir> holds one folder per region (the folder name is the column
heading), each with the Artillery JSON reports of that region's tasks and the
cable-report plugin's <report>.sketches.json sidecars.

Options:
  --out <file>                  write the markdown here (default: stdout)
  --json <file>                 also write the merged result as JSON (usable as a --baseline)
  --html <file>                 also write report.html: the tables and interactive charts over
                                time, in one file that opens offline
  --baseline <file|dir>         a --json output or a results directory to compare with
  --fail-on-regression <pct>    exit 1 when a server metric is worse than the baseline by at least
                                this much (e.g. 10%), significantly and above an absolute floor;
                                a baseline of another scenario or target is refused (exit 2)
  --baseline-any                compare with a baseline of another scenario or target anyway
                                (the report says it compared across them)
  --title <text>                heading of the markdown
  --expect-regions <a,b,…>      regions that must report; absent ones are marked missing
  --expect-tasks <n>            tasks per region (default: the most any region ran)
  -h, --help                    show this help

Exit status: 0 done, 1 regression beyond --fail-on-regression, 2 bad input or usage (a baseline
of another scenario or target refused: the report is written without the comparison),
3 internal error.`;

export const EXIT_OK = 0;
export const EXIT_REGRESSION = 1;
export const EXIT_BAD_INPUT = 2;
export const EXIT_INTERNAL_ERROR = 3;

class UsageError extends Error {
  constructor(
    message: string,
    readonly usage: string = USAGE,
  ) {
    super(message);
  }
}

const TREND_USAGE = `Usage: cable-report trend <history> [options]

<history> is the folder or s3://bucket/prefix that cable-fanout --history keeps its runs in (one
JSON record per run). The runs drawn are those comparable with the newest on --branch (the same
scenario, load, tasks and target); the others are counted and said.

Options:
  --out <file>          write trend.md here (default: stdout)
  --html <file>         also write trend.html: interactive charts, one file that opens offline
  --branch <name>       the runs of this branch (default main)
  --all-branches        the runs of every branch
  --last <n>            the newest n comparable runs (default 30)
  --metric <name>       a figure (cable.broadcast_latency.p95) or a group of them
                        (cable.broadcast_latency, vusers.failed, errors.per_user, connections.peak,
                        messages.received_rate, generator.event_loop_lag); repeatable; default: the
                        main latency's p50, p95 and p99 and the five others
  --scenario <file|hash> the runs of this scenario (its file, or the start of its hash in the
                        records; default: the newest run's), when a history holds several
  --title <text>        heading of trend.md
  -h, --help            show this help

Exit status: 0 done, 2 bad input or usage (no run to draw), 3 internal error.`;

/** `cable-report trend <history> [options]`. */
export async function trendMain(argv: string[]): Promise<number> {
  try {
    return await trend(argv);
  } catch (err) {
    return failed(err);
  }
}

async function trend(argv: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        out: { type: "string" },
        html: { type: "string" },
        branch: { type: "string" },
        "all-branches": { type: "boolean" },
        last: { type: "string" },
        metric: { type: "string", multiple: true },
        scenario: { type: "string" },
        title: { type: "string" },
        help: { type: "boolean", short: "h" },
      },
    });
  } catch (err) {
    throw new UsageError((err as Error).message, TREND_USAGE);
  }
  const { values, positionals } = parsed;
  if (values.help) {
    process.stdout.write(`${TREND_USAGE}\n`);
    return EXIT_OK;
  }
  if (positionals.length !== 1) throw new UsageError("give exactly one <history> (a folder or s3://bucket/prefix)", TREND_USAGE);
  if (values.branch !== undefined && values["all-branches"]) throw new UsageError("--branch and --all-branches: give one", TREND_USAGE);
  const last = values.last === undefined ? 30 : parseCount(values.last, "--last", TREND_USAGE);
  const read = await openHistory(positionals[0]).read();
  const model = trendModel(read, { branch: values["all-branches"] ? null : (values.branch ?? HISTORY_GATE.branch), last, metrics: values.metric ?? [], scenario: values.scenario });
  const markdown = renderTrendMarkdown(model, { title: values.title });
  const html = values.html === undefined ? undefined : renderTrendHtml(model, { title: values.title, markdown });
  if (values.html && html !== undefined) writeFileAtomic(values.html, html);
  if (values.out) writeFileAtomic(values.out, markdown);
  else process.stdout.write(markdown);
  for (const s of read.skipped) process.stderr.write(`cable-report: history record ${JSON.stringify(s.file)} skipped: ${s.reason}\n`);
  return EXIT_OK;
}

/** The bin's entry: `cable-report trend …` (which may read an S3 history), else the merge. */
export async function cli(argv: string[]): Promise<number> {
  return argv[0] === "trend" ? trendMain(argv.slice(1)) : main(argv);
}

/** `cable-report <results-dir> [options]`. */
export function main(argv: string[]): number {
  try {
    return run(argv);
  } catch (err) {
    return failed(err);
  }
}

function failed(err: unknown): number {
  if (err instanceof UsageError) {
    process.stderr.write(`cable-report: ${err.message}\n\n${err.usage}\n`);
    return EXIT_BAD_INPUT;
  }
  if (err instanceof ResultsInputError || err instanceof HistoryInputError || err instanceof TrendInputError) {
    process.stderr.write(`cable-report: ${err.message}\n`);
    return EXIT_BAD_INPUT;
  }
  process.stderr.write(`cable-report: internal error: ${(err as Error).stack ?? String(err)}\n`);
  return EXIT_INTERNAL_ERROR;
}

function run(argv: string[]): number {
  const { values, positionals } = parseCommandLine(argv);
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return EXIT_OK;
  }
  if (positionals.length !== 1) throw new UsageError("give exactly one <results-dir>");
  const threshold = values["fail-on-regression"] === undefined ? undefined : parsePercent(values["fail-on-regression"]);
  if (threshold !== undefined && !values.baseline) throw new UsageError("--fail-on-regression needs --baseline");
  if (values["baseline-any"] && !values.baseline) throw new UsageError("--baseline-any needs --baseline");

  const merged = mergeResults(positionals[0], {
    regions: values["expect-regions"]?.split(",").map((r) => r.trim()).filter(Boolean),
    tasksPerRegion: values["expect-tasks"] === undefined ? undefined : parseCount(values["expect-tasks"]),
  });
  const given = values.baseline === undefined ? undefined : loadBaseline(values.baseline);
  // Of another scenario or target: the gate refuses it (unless --baseline-any), the report says so.
  const verdict = given && judgeBaseline(merged, given, { gate: threshold !== undefined, any: values["baseline-any"] === true });
  const baseline = verdict?.refused ? undefined : given;
  const renderOptions: RenderOptions = {
    title: values.title,
    baseline,
    baselineLabel: values.baseline,
    regressionThreshold: threshold,
  };
  const rendered = renderMarkdown(merged, renderOptions);
  const markdown = verdict ? withBaselineVerdict(rendered, verdict, values.baseline!) : rendered;
  const html = values.html === undefined ? undefined : renderReportPage(merged, renderOptions);

  // Everything is computed before anything is written, and each write is atomic.
  if (values.json) writeFileAtomic(values.json, `${JSON.stringify(merged, null, 2)}\n`);
  if (values.html && html !== undefined) writeFileAtomic(values.html, html);
  if (values.out) writeFileAtomic(values.out, markdown);
  else process.stdout.write(markdown);

  if (verdict?.refused) {
    process.stderr.write(`cable-report: ${verdict.refused}\n`);
    return EXIT_BAD_INPUT;
  }
  if (baseline && threshold !== undefined) {
    const regressions = findRegressions(merged, baseline, threshold);
    for (const r of regressions) {
      const change = Number.isFinite(r.percent) ? `${r.percent.toFixed(1)}%` : "new";
      process.stderr.write(`regression: ${r.row} in ${r.column}: ${r.baseline} → ${r.current} (${change}): ${r.reason}\n`);
    }
    if (regressions.length > 0) return EXIT_REGRESSION;
  }
  return EXIT_OK;
}

function parseCommandLine(argv: string[]) {
  try {
    return parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        out: { type: "string" },
        json: { type: "string" },
        html: { type: "string" },
        baseline: { type: "string" },
        "fail-on-regression": { type: "string" },
        "baseline-any": { type: "boolean" },
        title: { type: "string" },
        "expect-regions": { type: "string" },
        "expect-tasks": { type: "string" },
        help: { type: "boolean", short: "h" },
      },
    });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}

function parsePercent(text: string): number {
  const match = /^(\d+(?:\.\d+)?)%?$/.exec(text.trim());
  if (!match) throw new UsageError(`--fail-on-regression wants a percentage such as 10%, not "${text}"`);
  return Number(match[1]);
}

function parseCount(text: string, flag = "--expect-tasks", usage = USAGE): number {
  if (!/^[1-9]\d*$/.test(text.trim())) throw new UsageError(`${flag} wants a positive whole number, not "${text}"`, usage);
  return Number(text);
}
