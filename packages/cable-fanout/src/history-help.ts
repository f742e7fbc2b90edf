// --history's and --history-branch's help: `run`, `collect`, `attach`, `compare` and `capacity` say them alike.

export const HISTORY_HELP =
  "keep this run there (one small JSON record per run: a folder, s3://bucket/prefix, or stack: the first region's results bucket under history/, which never expires) and show in report.md where it sits in the band of the last 20 comparable runs (same scenario, load, tasks and target, on --history-branch); with --fail-on-regression the gate judges the run against that band (8 comparable runs or more; fewer: against the newest of them, or --baseline)";
export const HISTORY_BRANCH_HELP = "the branch whose runs make the band (default main; * for every branch); this run's own branch comes from GITHUB_HEAD_REF/GITHUB_REF_NAME, else git";

