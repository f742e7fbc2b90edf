// infra/src/cdk still imports the stop marker's pattern from here (see layout.ts).
export { capacityStopKeyPattern } from "cable-worker/contract";
