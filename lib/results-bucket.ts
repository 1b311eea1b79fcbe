import { Duration, type RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import { type IGrantable, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { IKey } from 'aws-cdk-lib/aws-kms';
import {
  BlockPublicAccess,
  Bucket,
  BucketEncryption,
  type IBucket,
  ObjectOwnership,
} from 'aws-cdk-lib/aws-s3';
import { Construct } from 'constructs';
import { RESULT_OBJECTS_PREFIX } from '../functions/contract/payload-objects';
import { acknowledgeWildcardResources } from './nag';

/**
 * The bucket whole results too large for their record are kept in (functions/engine/payloads.ts):
 * private, TLS only, encrypted with the deployment's key where it has one, versioning off, and every
 * object expiring a margin after the longest retention of the records that name it, so an object
 * written for a commit that never landed (an orphan) is removed within the same bound. Or the
 * platform team's own bucket, of which it owns the settings.
 */

/** How long an object outlives the longest retention of the records that name it. */
export const RESULT_OBJECT_MARGIN = Duration.days(1);

/**
 * The longest of the records' retentions: the default and every tool's own.
 *
 * @example
 * ```ts
 * longestRetention(Duration.days(30), [Duration.days(90)]); // 90 days
 * ```
 */
export function longestRetention(retention: Duration, toolRetentions: readonly Duration[]): Duration {
  return toolRetentions.reduce(
    (longest, each) => (each.toSeconds() > longest.toSeconds() ? each : longest),
    retention,
  );
}

/** Props of {@link ResultsBucket}. */
export interface ResultsBucketProps {
  /** The longest retention of a terminal record (the default and every tool's own). */
  retention: Duration;
  /** The deployment's KMS key; undefined: S3-managed encryption. */
  key?: IKey | undefined;
  /** Use this bucket instead of creating one. */
  existingBucket?: IBucket | undefined;
  removalPolicy: RemovalPolicy;
}

/** The results bucket, and the grants that let a function write or read its results. */
export class ResultsBucket extends Construct {
  /** The bucket. */
  readonly bucket: IBucket;
  /** The key objects are encrypted with, when it is a customer-managed one. */
  readonly key: IKey | undefined;

  constructor(scope: Construct, id: string, props: ResultsBucketProps) {
    super(scope, id);
    if (props.existingBucket !== undefined) {
      this.bucket = props.existingBucket;
      this.key = props.existingBucket.encryptionKey;
      return;
    }
    this.key = props.key;
    const bucket = new Bucket(this, 'Bucket', {
      ...(props.key === undefined
        ? { encryption: BucketEncryption.S3_MANAGED }
        : { encryption: BucketEncryption.KMS, encryptionKey: props.key, bucketKeyEnabled: true }),
      enforceSSL: true,
      minimumTLSVersion: 1.2,
      blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
      objectOwnership: ObjectOwnership.BUCKET_OWNER_ENFORCED,
      versioned: false,
      removalPolicy: props.removalPolicy,
      lifecycleRules: [
        {
          id: 'expire-with-records',
          prefix: RESULT_OBJECTS_PREFIX,
          expiration: props.retention.plus(RESULT_OBJECT_MARGIN),
          abortIncompleteMultipartUploadAfter: Duration.days(1),
        },
      ],
    });
    Validations.of(bucket).acknowledge({
      id: 'AwsSolutions-S1',
      reason:
        'Only the deployment’s own functions write and read its objects (results, named by the records); ' +
        'CloudTrail data events are the audit trail where a platform team wants one.',
    });
    this.bucket = bucket;
  }

  /** Lets `grantee` write results (the functions that commit outcomes). */
  grantWrite(grantee: IGrantable): void {
    this.grant(grantee, 's3:PutObject', ['kms:GenerateDataKey', 'kms:Encrypt']);
  }

  /** Lets `grantee` read results (the functions that answer with them). */
  grantRead(grantee: IGrantable): void {
    this.grant(grantee, 's3:GetObject', ['kms:Decrypt']);
  }

  /** One object action on the results prefix, and the key's use through S3 only. */
  private grant(grantee: IGrantable, action: string, keyActions: string[]): void {
    const principal = grantee.grantPrincipal;
    const objects = this.bucket.arnForObjects(`${RESULT_OBJECTS_PREFIX}*`);
    principal.addToPrincipalPolicy(new PolicyStatement({ actions: [action], resources: [objects] }));
    if (principal instanceof Construct) {
      acknowledgeWildcardResources(
        principal,
        [objects],
        'Result objects are named per operation and attempt at run time (functions/contract/payload-objects.ts): ' +
          'one action on the results prefix of this bucket only.',
      );
    }
    if (this.key === undefined) return;
    principal.addToPrincipalPolicy(
      new PolicyStatement({
        actions: keyActions,
        resources: [this.key.keyArn],
        conditions: { StringEquals: { 'kms:ViaService': `s3.${Stack.of(this).region}.amazonaws.com` } },
      }),
    );
  }
}
