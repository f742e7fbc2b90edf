// infra/src/cdk still imports formatIssues from here (see layout.ts).
export { formatIssues } from "cable-worker/contract";
