import path from 'node:path';
import { type Duration, type RemovalPolicy, Validations } from 'aws-cdk-lib';
import { Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Architecture, Runtime, Tracing } from 'aws-cdk-lib/aws-lambda';
import { type BundlingOptions, NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { PROJECT_ROOT } from './bundling';
import type { WorkspaceMount } from './shared-workspace';

/**
 * One handler as a Lambda function: its own role (no AWS managed policy), its own log group with a
 * retention, ARM64, Node.js 22, bundled by local esbuild. The three handlers differ only in entry,
 * timeout, environment and the grants the composing construct adds.
 */

/** Settings of one handler function. */
export interface HandlerFunctionProps {
  /** Entry file exporting `handler`. */
  entry: string;
  /** Shown in the console. */
  description: string;
  /** Hard stop of one invocation. */
  timeout: Duration;
  /** MB of memory (CPU scales with it). */
  memorySize: number;
  /** Environment variables (functions/config.ts). */
  environment: Record<string, string>;
  /** How the entry is bundled. */
  bundling: BundlingOptions;
  /** How long the function's logs are kept. */
  logRetention: RetentionDays;
  /** What happens to the log group when the stack is deleted. */
  removalPolicy: RemovalPolicy;
  /** Active X-Ray tracing. */
  tracing: boolean;
  /** Reserved concurrency, if any. */
  reservedConcurrentExecutions?: number;
  /** Retries of asynchronous invocations. @default Lambda's default (2) */
  retryAttempts?: number;
  /** Oldest asynchronous event still run. @default Lambda's default (6 hours) */
  maxEventAge?: Duration;
  /** A shared file system to mount, and the VPC that reaches it. @default none */
  mount?: WorkspaceMount;
}

/** A NodejsFunction with its own role and log group. */
export class HandlerFunction extends Construct {
  /** The function. */
  readonly fn: NodejsFunction;
  /** Its execution role; grants are added to it. */
  readonly role: Role;
  /** Its log group. */
  readonly logGroup: LogGroup;

  constructor(scope: Construct, id: string, props: HandlerFunctionProps) {
    super(scope, id);
    this.role = new Role(this, 'Role', {
      assumedBy: new ServicePrincipal('lambda.amazonaws.com'),
      description: `tool-ledger ${id} handler`,
    });
    this.logGroup = new LogGroup(this, 'Logs', {
      retention: props.logRetention,
      removalPolicy: props.removalPolicy,
    });
    this.logGroup.grantWrite(this.role);
    this.fn = new NodejsFunction(this, 'Function', {
      entry: props.entry,
      handler: 'handler',
      description: props.description,
      runtime: Runtime.NODEJS_22_X,
      architecture: Architecture.ARM_64,
      memorySize: props.memorySize,
      timeout: props.timeout,
      environment: props.environment,
      role: this.role,
      logGroup: this.logGroup,
      tracing: props.tracing ? Tracing.ACTIVE : Tracing.DISABLED,
      reservedConcurrentExecutions: props.reservedConcurrentExecutions,
      retryAttempts: props.retryAttempts,
      maxEventAge: props.maxEventAge,
      ...(props.mount === undefined
        ? {}
        : {
            filesystem: props.mount.filesystem,
            vpc: props.mount.vpc,
            vpcSubnets: props.mount.vpcSubnets,
            securityGroups: props.mount.securityGroups,
          }),
      projectRoot: PROJECT_ROOT,
      depsLockFilePath: path.join(PROJECT_ROOT, 'package-lock.json'),
      bundling: props.bundling,
    });
    Validations.of(this.fn).acknowledge({
      id: 'AwsSolutions-L1',
      reason:
        'Node.js 22 is pinned on purpose: the bundles are built with esbuild target node22 and the handlers ' +
        'are tested on that line; moving to a newer runtime is a deliberate, tested change, not a default.',
    });
    const unscoped = [
      ...(props.tracing ? ['X-Ray PutTraceSegments/PutTelemetryRecords'] : []),
      // Lambda manages the ENIs of a function in a VPC (the shared workspace's) through these.
      ...(props.mount ? ['ec2:CreateNetworkInterface/DescribeNetworkInterfaces/DeleteNetworkInterface'] : []),
    ];
    if (unscoped.length > 0) {
      Validations.of(this.role).acknowledge({
        id: 'AwsSolutions-IAM5[Resource::*]',
        reason: `${unscoped.join(' and ')} support no resource-level permissions.`,
      });
    }
  }
}
