import { type Duration, type RemovalPolicy, Validations } from 'aws-cdk-lib';
import type { ISecurityGroup, IVpc, SubnetSelection } from 'aws-cdk-lib/aws-ec2';
import { PolicyStatement, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import type { IKey } from 'aws-cdk-lib/aws-kms';
import { Architecture, Function as LambdaFunction, Runtime, Tracing } from 'aws-cdk-lib/aws-lambda';
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { BUNDLE_ENTRY_FILE, type BundleSettings, handlerCode } from './bundling';
import type { WorkspaceMount } from './shared-workspace';

/**
 * The handlers' Lambda runtime. The repository runs its tests on the same Node major (its toolchain
 * workspace pins Node 24), and lib/bundling.ts targets it.
 */
export const HANDLER_RUNTIME = Runtime.NODEJS_24_X;

/**
 * One handler as a Lambda function: its own role (no AWS managed policy), its own log group with a
 * retention, ARM64, Node.js 24, bundled by local esbuild. The three handlers differ only in entry,
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
  /** How the entry is bundled (lib/bundling.ts). */
  bundling: BundleSettings;
  /** How long the function's logs are kept. */
  logRetention: RetentionDays;
  /** A customer-managed key for the log group. @default CloudWatch Logs' own encryption */
  logKey?: IKey;
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
  /** Run in these subnets with these security groups (egress control). @default no VPC */
  network?: HandlerNetwork;
}

/** Where a handler runs when it must not reach the internet directly. */
export interface HandlerNetwork {
  /** The VPC. */
  readonly vpc: IVpc;
  /** Subnets of `vpc` (private, with a NAT or endpoints for DynamoDB and SQS). @default private subnets */
  readonly subnets?: SubnetSelection;
  /** Security groups whose egress rules decide what the handler reaches. @default one that allows all egress */
  readonly securityGroups?: readonly ISecurityGroup[];
}

/** A Lambda function with its own role and log group, its code bundled by lib/bundling.ts. */
export class HandlerFunction extends Construct {
  /** The function. */
  readonly fn: LambdaFunction;
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
      ...(props.logKey === undefined ? {} : { encryptionKey: props.logKey }),
    });
    this.logGroup.grantWrite(this.role);
    this.fn = new LambdaFunction(this, 'Function', {
      code: handlerCode(props.entry, props.bundling),
      handler: `${BUNDLE_ENTRY_FILE.replace(/\.mjs$/, '')}.handler`,
      description: props.description,
      runtime: HANDLER_RUNTIME,
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
      // A shared workspace needs the VPC that reaches its file system; an explicit network wins otherwise.
      ...(props.mount === undefined ? {} : { filesystem: props.mount.filesystem }),
      ...(props.network !== undefined
        ? {
            vpc: props.network.vpc,
            vpcSubnets: props.network.subnets,
            securityGroups: [...(props.network.securityGroups ?? [])],
          }
        : props.mount !== undefined
          ? {
              vpc: props.mount.vpc,
              vpcSubnets: props.mount.vpcSubnets,
              securityGroups: props.mount.securityGroups,
            }
          : {}),
    });
    Validations.of(this.fn).acknowledge({
      id: 'AwsSolutions-L1',
      reason:
        'Node.js 24 is pinned on purpose: the bundles are built with esbuild target node24 and the repository ' +
        'runs its tests on Node 24; moving to a newer runtime is a deliberate, tested change, not a default.',
    });
    if (props.network || props.mount) {
      // What AWSLambdaVPCAccessExecutionRole grants, inline: the role has no AWS managed policy.
      this.role.addToPolicy(
        new PolicyStatement({
          actions: [
            'ec2:CreateNetworkInterface',
            'ec2:DescribeNetworkInterfaces',
            'ec2:DescribeSubnets',
            'ec2:DeleteNetworkInterface',
            'ec2:AssignPrivateIpAddresses',
            'ec2:UnassignPrivateIpAddresses',
          ],
          resources: ['*'],
        }),
      );
    }
    if (props.tracing || props.network || props.mount) {
      Validations.of(this.role).acknowledge({
        id: 'AwsSolutions-IAM5[Resource::*]',
        reason:
          'X-Ray PutTraceSegments/PutTelemetryRecords and the EC2 network-interface actions a function in a VPC ' +
          'needs (what AWSLambdaVPCAccessExecutionRole grants) support no resource-level permissions.',
      });
    }
  }
}
