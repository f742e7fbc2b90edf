// A region's name becomes a folder of the results, a key prefix in the store, a column of the report
// and, on AWS, part of every endpoint and stack name. So only names of the two kinds the backends
// mean are taken, before anything starts: an AWS region's (eu-west-2), or a local one (local,
// local-a). Any other word (`constructor`, `__proto__`, `bundle`) is refused.

import { FanoutInputError } from "./errors.js";

/** eu-west-2, us-gov-west-1, ap-southeast-3, eusc-de-east-1: a partition's letters, words, a number. */
const AWS_REGION = /^[a-z]{2,4}(-[a-z]+)+-\d{1,2}$/;
/** `local`, or `local-` and a name: what the local backend's docs, the demo and the Action use. */
const LOCAL_REGION = /^local(-[A-Za-z0-9._-]{1,64})?$/;

export type BackendKind = "aws" | "local";

/** Why `name` cannot be a region of `backend`; undefined when it can. */
export function regionNameProblem(name: string, backend: BackendKind): string | undefined {
  if (AWS_REGION.test(name)) return undefined;
  if (LOCAL_REGION.test(name)) return backend === "local" ? undefined : `--regions: "${name}" is a local region name: add --local, or name AWS regions such as eu-west-2`;
  return backend === "local"
    ? `--regions: "${name}" is not a region name: with --local, use local or local-<name> (local-a, local-b), or an AWS region's name (eu-west-2)`
    : `--regions: "${name}" is not an AWS region name (such as eu-west-2 or us-east-1)`;
}

/** `name` as a region of `backend`; else the refusal, before any call (it goes into endpoints, stack names and folders). */
export function checkedRegionName(name: string, backend: BackendKind): string {
  const problem = regionNameProblem(name, backend);
  if (problem) throw new FanoutInputError(problem);
  return name;
}
