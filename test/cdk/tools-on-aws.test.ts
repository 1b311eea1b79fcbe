import path from 'node:path';
import { Duration, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { Vpc } from 'aws-cdk-lib/aws-ec2';
import { FileSystem } from 'aws-cdk-lib/aws-efs';
import { AwsSolutionsChecks } from 'cdk-nag';
import { describe, expect, it } from 'vitest';
import { DEFAULT_TOOLS_MODULE } from '../../lib/bundling';
import { resolveSettings, ToolLedgerConfigError } from '../../lib/settings';
import {
  SHARED_WORKSPACE_MOUNT,
  type SharedWorkspace,
  WEBHOOK_ONLY_TOOLS_MODULE,
} from '../../lib/shared-workspace';
import { ToolLedger } from '../../lib/tool-ledger';
import { testApp } from './synth';

/**
 * What the construct checks about the tools by itself, with no manifest loaded by the app: retention
 * and timeouts (SPEC §8), and that tools whose effects live in the handler's file system are deployed
 * only onto a file system every handler shares.
 */

const SHORT_RETENTION_TOOLS = path.join(import.meta.dirname, 'fixtures', 'short-retention-tools.ts');
const APPROVED_READ_TOOLS = path.join(import.meta.dirname, 'fixtures', 'approved-read-tools.ts');

function sharedWorkspace(stack: Stack): SharedWorkspace {
  const vpc = new Vpc(stack, 'Vpc', { maxAzs: 2, natGateways: 0 });
  const fileSystem = new FileSystem(stack, 'Workspace', { vpc });
  const accessPoint = fileSystem.addAccessPoint('Ledger', {
    path: '/tool-ledger',
    posixUser: { uid: '1000', gid: '1000' },
    createAcl: { ownerUid: '1000', ownerGid: '1000', permissions: '750' },
  });
  return { accessPoint, vpc };
}

describe('the construct checks the tools module itself', () => {
  it('a stack built without the manifest step still fails on a tool’s short retention', () => {
    const attempt = () =>
      new ToolLedger(new Stack(testApp(), 'NoManifest'), 'L', { toolsModule: SHORT_RETENTION_TOOLS });
    expect(attempt).toThrow(ToolLedgerConfigError);
    expect(attempt).toThrow(
      /tool "acme\.audit_note" keeps terminal records for 7 days, but a message can live 19 days/,
    );
  });

  it('refuses a read tool that requires approval, naming the prop and the tool', () => {
    const attempt = () =>
      new ToolLedger(new Stack(testApp(), 'ApprovedRead'), 'L', { toolsModule: APPROVED_READ_TOOLS });
    expect(attempt).toThrow(ToolLedgerConfigError);
    expect(attempt).toThrow(
      /toolsModule: tool "acme\.export_customers" is a read tool that requires approval/,
    );
  });

  it('reads the tools’ timeouts too, and a prop can only make a check stricter', () => {
    const settings = resolveSettings({
      toolsModule: SHORT_RETENTION_TOOLS,
      queueRetention: Duration.days(1),
      deadLetterRetention: Duration.days(1),
      toolTimeouts: { 'acme.audit_note': Duration.seconds(1) },
    });
    expect(settings.toolTimeouts['acme.audit_note']?.toMilliseconds()).toBe(5_000);
    expect(settings.toolNames).toEqual(['acme.audit_note', 'acme.lookup']);
    // A longer retention in props does not hide the 7 days the code keeps.
    expect(() =>
      resolveSettings({
        toolsModule: SHORT_RETENTION_TOOLS,
        toolRetentions: { 'acme.audit_note': Duration.days(30) },
      }),
    ).toThrow(/keeps terminal records for 7 days/);
  });
});

describe('workspace tools on AWS', () => {
  it('deploys webhook.post alone by default: each Lambda sandbox has its own /tmp', () => {
    const settings = resolveSettings({});
    expect(settings.toolsModule).toBe(WEBHOOK_ONLY_TOOLS_MODULE);
    expect(settings.toolNames).toEqual(['webhook.post']);
  });

  it('refuses at synth a tools module with workspace tools when no shared file system is configured', () => {
    const attempt = () =>
      new ToolLedger(new Stack(testApp(), 'Tmp'), 'L', { toolsModule: DEFAULT_TOOLS_MODULE });
    expect(attempt).toThrow(ToolLedgerConfigError);
    expect(attempt).toThrow(
      /"workspace\.write_file", "workspace\.append_line", "workspace\.delete_file".*set sharedWorkspace \(an EFS access point and its VPC\)/s,
    );
  });

  it('with a shared EFS workspace ships every tool and mounts it in every handler as the workspace root', () => {
    const stack = new Stack(testApp(), 'Efs');
    const workspace = sharedWorkspace(stack);
    expect(resolveSettings({ sharedWorkspace: workspace }).toolNames).toEqual([
      'workspace.write_file',
      'workspace.append_line',
      'workspace.delete_file',
      'webhook.post',
    ]);
    new ToolLedger(stack, 'L', { sharedWorkspace: workspace });
    // The construct's own resources stay clean under cdk-nag in a VPC (the test's VPC is not its).
    const report = new AwsSolutionsChecks().validateScope(stack);
    expect(
      report.violations.flatMap((v) =>
        v.violatingResources
          .filter((r) => r.constructPath?.startsWith('Efs/L/'))
          .map((r) => `${v.ruleName} at ${r.constructPath}`),
      ),
    ).toEqual([]);
    const functions = Object.values(Template.fromStack(stack).findResources('AWS::Lambda::Function')).filter(
      (fn) =>
        String(fn.Properties.Description).startsWith('tool-ledger') &&
        !String(fn.Properties.Description).includes('completion events'), // runs no tools
    );
    expect(functions).toHaveLength(3);
    for (const fn of functions) {
      expect(fn.Properties.FileSystemConfigs).toEqual([
        { Arn: expect.anything(), LocalMountPath: SHARED_WORKSPACE_MOUNT },
      ]);
      expect(fn.Properties.VpcConfig).toBeDefined();
      expect(fn.Properties.Environment.Variables.TOOL_LEDGER_WORKSPACE_DIR).toBe(SHARED_WORKSPACE_MOUNT);
    }
  });
});
