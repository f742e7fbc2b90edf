/**
 * The bucket the runner uploads run bundles to and the tasks write results to, and what a task may do
 * in it. It knows the key layout (src/worker/layout.ts), so the grants live here.
 */
import { Duration, RemovalPolicy, Stack } from "aws-cdk-lib";
import * as iam from "aws-cdk-lib/aws-iam";
import * as s3 from "aws-cdk-lib/aws-s3";
import { Construct } from "constructs";
import { RUNS_PREFIX, bundleKeyPattern, capacityStopKeyPattern, controlKeyPattern, resultKeyPattern } from "cable-worker/contract";
import type { StackSettings } from "./settings.js";

export interface ResultsBucketProps extends Pick<StackSettings, "resultsExpireDays" | "destroyBucket"> {}

export class ResultsBucket extends Construct {
  readonly bucket: s3.Bucket;

  constructor(scope: Construct, id: string, props: ResultsBucketProps) {
    super(scope, id);
    // "Default" keeps the bucket's logical id (and its policy's) what it was when the stack created it
    // itself: CDK leaves this id out of logical ids, and a renamed bucket would be a new, empty one.
    this.bucket = new s3.Bucket(this, "Default", {
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      encryption: s3.BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
      lifecycleRules: [
        { id: "expire-old-runs", prefix: `${RUNS_PREFIX}/`, expiration: Duration.days(props.resultsExpireDays) },
        { id: "abort-incomplete-uploads", abortIncompleteMultipartUploadAfter: Duration.days(1) },
      ],
      removalPolicy: props.destroyBucket ? RemovalPolicy.DESTROY : RemovalPolicy.RETAIN,
      autoDeleteObjects: props.destroyBucket,
    });
  }

  /**
   * What a task of this region's load generator may do here: read the bundles, write this region's
   * results (never a bundle), see whether this region's capacity stop marker exists (nothing else of
   * the results). Explicit statements rather than bucket.grantRead/grantPut, which add actions beyond these.
   */
  grantWorker(grantee: iam.IGrantable): void {
    const bucket = this.bucket;
    const region = Stack.of(this).region;
    const statements = [
      // Listing control/ too makes a missing go marker a 404 rather than a 403. The capacity probe
      // looks for its region's stop marker by listing that one key (artillery-plugin-cable-capacity-probe).
      new iam.PolicyStatement({
        sid: "ListRunBundles",
        actions: ["s3:ListBucket"],
        resources: [bucket.bucketArn],
        conditions: { StringLike: { "s3:prefix": [bundleKeyPattern(), controlKeyPattern(), capacityStopKeyPattern(region)] } },
      }),
      new iam.PolicyStatement({ sid: "ReadRunBundles", actions: ["s3:GetObject"], resources: [bucket.arnForObjects(bundleKeyPattern()), bucket.arnForObjects(controlKeyPattern())] }),
      new iam.PolicyStatement({ sid: "WriteRegionResults", actions: ["s3:PutObject"], resources: [bucket.arnForObjects(resultKeyPattern(region))] }),
      // IAM's * also matches "/", so the pattern above would admit runs/<id>/bundle/<region>/…; bundles and the runner's markers
      // (control/, and the capacity stop marker inside the region's own folder) stay read-only.
      new iam.PolicyStatement({
        sid: "NeverWriteBundles",
        effect: iam.Effect.DENY,
        actions: ["s3:PutObject"],
        resources: [bucket.arnForObjects(bundleKeyPattern()), bucket.arnForObjects(controlKeyPattern()), bucket.arnForObjects(capacityStopKeyPattern(region))],
      }),
    ];
    for (const statement of statements) grantee.grantPrincipal.addToPrincipalPolicy(statement);
  }
}
