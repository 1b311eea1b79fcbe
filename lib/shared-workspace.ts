import path from 'node:path';
import type { ISecurityGroup, IVpc, SubnetSelection } from 'aws-cdk-lib/aws-ec2';
import type { IAccessPoint } from 'aws-cdk-lib/aws-efs';
import { FileSystem } from 'aws-cdk-lib/aws-lambda';
import { PROJECT_ROOT } from './bundling';

/**
 * The workspace tools keep their effects in a folder. On Lambda the only writable folder is `/tmp`,
 * and every sandbox has its own: a file written by one executor is not there for the next, so an
 * uncertain `workspace.delete_file` is reconciled as applied by a sandbox that never had the file, and
 * `workspace.append_line`'s markers vanish with the sandbox. Those tools are correct on AWS only with a
 * file system every handler shares (EFS), so the construct deploys them only then and refuses a tools
 * module that contains them otherwise.
 */

/** Where the shared file system is mounted in every handler (Lambda requires a path under /mnt). */
export const SHARED_WORKSPACE_MOUNT = '/mnt/workspace';

/** Tool names whose effects live in the handler's file system: the shipped workspace tools' family. */
export const WORKSPACE_TOOL_PREFIX = 'workspace.';

/** The default tools module of a deployment without a shared file system: `webhook.post` alone. */
export const WEBHOOK_ONLY_TOOLS_MODULE = path.join(PROJECT_ROOT, 'functions', 'aws-default-tools.ts');

/** An EFS access point the handlers mount as the workspace root, and the network to reach it. */
export interface SharedWorkspace {
  /**
   * The access point (its file system's security group must admit NFS from `securityGroups`, or let
   * the construct add the rule, which it does through the access point's file system connections).
   */
  readonly accessPoint: IAccessPoint;
  /** The VPC of the file system's mount targets; every handler runs in it. */
  readonly vpc: IVpc;
  /** Subnets for the handlers (they need a route to the AWS APIs: NAT or VPC endpoints). @default the VPC's private subnets */
  readonly vpcSubnets?: SubnetSelection;
  /** Security groups of the handlers. @default one per handler, created by Lambda */
  readonly securityGroups?: readonly ISecurityGroup[];
}

/** What a handler function needs to mount the workspace. */
export interface WorkspaceMount {
  filesystem: FileSystem;
  vpc: IVpc;
  vpcSubnets?: SubnetSelection;
  securityGroups?: ISecurityGroup[];
}

/** The mount for a handler, or nothing without a shared workspace. */
export function workspaceMount(workspace: SharedWorkspace | undefined): WorkspaceMount | undefined {
  if (workspace === undefined) return undefined;
  return {
    filesystem: FileSystem.fromEfsAccessPoint(workspace.accessPoint, SHARED_WORKSPACE_MOUNT),
    vpc: workspace.vpc,
    ...(workspace.vpcSubnets === undefined ? {} : { vpcSubnets: workspace.vpcSubnets }),
    ...(workspace.securityGroups === undefined ? {} : { securityGroups: [...workspace.securityGroups] }),
  };
}

/** A problem for each tool that would keep its effects in a sandbox's own `/tmp`; empty when safe. */
export function checkWorkspaceTools(toolNames: readonly string[], shared: boolean): string[] {
  if (shared) return [];
  const local = toolNames.filter((name) => name.startsWith(WORKSPACE_TOOL_PREFIX));
  if (local.length === 0) return [];
  return [
    `the tools module contains ${local.map((name) => `"${name}"`).join(', ')}, whose effects live in the ` +
      "handler's file system; on Lambda each sandbox has its own /tmp, so one executor's file is not " +
      'there for the next and the reconciler would decide from a sandbox that never saw it: set ' +
      'sharedWorkspace (an EFS access point and its VPC), or deploy a tools module without them.',
  ];
}
