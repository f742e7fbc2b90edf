// infra/src/cdk still imports the layout from here, and another change owns that folder; once it
// imports cable-worker/contract, this folder goes.
export { RUNS_PREFIX, bundleKeyPattern, controlKeyPattern, resultKeyPattern } from "cable-worker/contract";
