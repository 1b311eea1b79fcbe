import { Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { AccountRootPrincipal, Role } from 'aws-cdk-lib/aws-iam';
import { describe, expect, it } from 'vitest';
import { SETTINGS } from '../../functions/contract/environment';
import { SenderBinding } from '../../functions/queue/sender-binding';

const QUEUE_SENDERS_VARIABLE = SETTINGS.queueSenders.name;

import { ToolLedgerConfigError } from '../../lib/settings';
import { ToolLedger } from '../../lib/tool-ledger';
import { testApp } from './synth';

/**
 * The synthesized sender binding (SPEC §6): the executor learns, from the template, which IAM unique
 * IDs may send work for which tenants: the construct's API and reconciler roles for all, each producer
 * role for its own. CloudFormation resolves role IDs (`Fn::GetAtt Role.RoleId`); the test renders them
 * as `<LogicalId>` and reads the binding back with the executor's own parser.
 */

const TENANTS = {
  acme: { agents: ['arn:aws:iam::123456789012:role/acme-agent'] },
  globex: { agents: ['arn:aws:iam::123456789012:role/globex-agent'] },
};

type Fn = string | { 'Fn::Join'?: [string, Fn[]]; 'Fn::GetAtt'?: [string, string] };

/** Renders the intrinsic functions of an environment value, with each role ID as `<LogicalId>`. */
function render(value: Fn): string {
  if (typeof value === 'string') return value;
  if (value['Fn::Join']) return value['Fn::Join'][1].map(render).join(value['Fn::Join'][0]);
  if (value['Fn::GetAtt']?.[1] === 'RoleId') return `<${value['Fn::GetAtt'][0]}>`;
  throw new Error(`unexpected intrinsic ${JSON.stringify(value)}`);
}

function synth(build: (stack: Stack) => void): Template {
  const stack = new Stack(testApp(), 'Senders');
  build(stack);
  return Template.fromStack(stack);
}

function executorEnvironment(template: Template): Record<string, Fn> {
  const [fn] = Object.values(template.findResources('AWS::Lambda::Function')).filter((r) =>
    String(r.Properties.Description).includes('SQS executor'),
  );
  return fn!.Properties.Environment.Variables as Record<string, Fn>;
}

function logicalIdOf(template: Template, path: string): string {
  const [id] = Object.entries(template.findResources('AWS::IAM::Role')).find(([, r]) =>
    String(r.Properties.Description ?? '').includes(path),
  ) ?? [undefined];
  return id!;
}

describe('queue sender binding in the template', () => {
  it('binds each producer role to its tenants by role ID and trusts the construct’s own roles for all', () => {
    let acmeProducer!: Role;
    const template = synth((stack) => {
      acmeProducer = new Role(stack, 'AcmeProducer', {
        assumedBy: new AccountRootPrincipal(),
        description: 'acme orchestrator',
      });
      const ledger = new ToolLedger(stack, 'Ledger', {
        tenants: TENANTS,
        queueSenders: [{ principal: 'AROAGLOBEXELSEWHERE01', tenants: ['globex'] }],
      });
      ledger.grantEnqueue(acmeProducer, ['acme']);
    });
    const raw = render(executorEnvironment(template)[QUEUE_SENDERS_VARIABLE]!);
    const api = logicalIdOf(template, 'ApiHandler');
    const reconciler = logicalIdOf(template, 'ReconcilerHandler');
    const producer = logicalIdOf(template, 'acme orchestrator');
    expect(JSON.parse(raw)).toEqual(
      expect.arrayContaining([
        { id: `<${api}>`, tenants: '*' },
        { id: `<${reconciler}>`, tenants: '*' },
        { id: 'AROAGLOBEXELSEWHERE01', tenants: ['globex'] },
        { id: `<${producer}>`, tenants: ['acme'] },
      ]),
    );
    // What the executor will do with it, once CloudFormation has put real IDs in.
    const binding = SenderBinding.parse(raw);
    expect(binding.mayActFor(`<${producer}>:orchestrator`, 'acme')).toBe(true);
    expect(binding.mayActFor(`<${producer}>:orchestrator`, 'globex')).toBe(false);
    expect(binding.mayActFor(`<${api}>:tool-ledger-api`, 'globex')).toBe(true);
    // The producer policy alone binds nothing: a role granted without tenants sends in vain.
    expect(binding.mayActFor('AROASOMEONEELSE00001:x', 'acme')).toBe(false);
  });

  it('refuses at synth a sender bound to a tenant the queue does not carry, an ARN, or an imported role', () => {
    const attempt = (build: (stack: Stack, ledger: ToolLedger) => void) => () =>
      synth((stack) =>
        build(stack, new ToolLedger(stack, 'Ledger', { tenants: TENANTS, queueTenants: ['acme'] })),
      );
    expect(
      attempt((stack, ledger) =>
        ledger.grantEnqueue(new Role(stack, 'P', { assumedBy: new AccountRootPrincipal() }), ['globex']),
      ),
    ).toThrow(/bound to "globex", which the work queue does not carry/);
    expect(
      () =>
        new ToolLedger(new Stack(testApp(), 'S'), 'Ledger', {
          tenants: TENANTS,
          queueSenders: [{ principal: 'arn:aws:iam::123456789012:role/acme-agent', tenants: ['acme'] }],
        }),
    ).toThrow(ToolLedgerConfigError);
    expect(
      attempt((stack, ledger) =>
        ledger.grantEnqueue(Role.fromRoleArn(stack, 'Imported', 'arn:aws:iam::123456789012:role/x'), [
          'acme',
        ]),
      ),
    ).toThrow(/pass its ID in queueSenders/);
  });
});
