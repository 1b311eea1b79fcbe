import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../lib/bundling';
import { ToolLedger } from '../../lib/tool-ledger';
import { EXAMPLE_TENANTS, testApp } from './synth';

/**
 * A consumer's CDK app holds its own aws-cdk-lib. If the published package brought a second copy, the
 * consumer's `Role` would not be an instance of the package's `Role`, and `grantEnqueue(role, …)`
 * threw "is not a Role of this app". The package names aws-cdk-lib and constructs as peer
 * dependencies (the consumer's copy is used), and the construct recognises a role of any copy.
 */

const require = createRequire(import.meta.url);

/**
 * A role made with aws-cdk-lib loaded a second time, as a consumer's own copy of aws-cdk-lib makes it:
 * the library is loaded afresh (and lazily loads its parts afresh) while the role is built.
 */
function roleOfAnotherCopy(scope: Stack, id: string): { role: unknown; sameClass: boolean } {
  const saved = new Map<string, NodeModule | undefined>();
  const root = path.dirname(require.resolve('aws-cdk-lib/package.json'));
  const original = require('aws-cdk-lib/aws-iam') as typeof import('aws-cdk-lib/aws-iam');
  for (const key of Object.keys(require.cache)) {
    if (key.startsWith(root)) {
      saved.set(key, require.cache[key]);
      delete require.cache[key];
    }
  }
  try {
    const iam = require('aws-cdk-lib/aws-iam') as typeof import('aws-cdk-lib/aws-iam');
    const role = new iam.Role(scope, id, { assumedBy: new iam.ServicePrincipal('ecs-tasks.amazonaws.com') });
    return { role, sameClass: role instanceof original.Role };
  } finally {
    for (const key of Object.keys(require.cache)) if (key.startsWith(root)) delete require.cache[key];
    for (const [key, module] of saved) require.cache[key] = module;
  }
}

describe('a consumer’s own aws-cdk-lib', () => {
  it('binds a queue sender role made with another copy of aws-cdk-lib', () => {
    const stack = new Stack(testApp(), 'Consumer');
    const ledger = new ToolLedger(stack, 'Ledger', { tenants: EXAMPLE_TENANTS });
    const { role, sameClass } = roleOfAnotherCopy(stack, 'Orchestrator');
    expect(sameClass).toBe(false); // really another copy
    ledger.grantEnqueue(role as Parameters<ToolLedger['grantEnqueue']>[0], ['acme']);
    const executor = Object.values(Template.fromStack(stack).findResources('AWS::Lambda::Function')).find(
      (fn) => String(fn.Properties.Description).includes('SQS executor'),
    )!;
    expect(JSON.stringify(executor.Properties.Environment)).toMatch(
      /"Fn::GetAtt":\["Orchestrator[0-9A-F]+","RoleId"\]/,
    );
  });

  it('is a peer dependency of the published package, and a pinned dev dependency of the repository', () => {
    const pkg = JSON.parse(readFileSync(path.join(PROJECT_ROOT, 'package.json'), 'utf8')) as Record<
      string,
      Record<string, string> | undefined
    >;
    for (const name of ['aws-cdk-lib', 'constructs']) {
      expect(pkg.dependencies?.[name], name).toBeUndefined();
      expect(pkg.peerDependencies?.[name], name).toMatch(/^\^\d+\.\d+\.\d+$/);
      expect(pkg.devDependencies?.[name], name).toMatch(/^\d+\.\d+\.\d+$/);
    }
  });
});
