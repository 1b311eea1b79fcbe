import { Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { SETTINGS } from '../../functions/contract/environment';
import { parseCallerTools } from '../../functions/domain/caller-tools';
import { resolveSettings, ToolLedgerConfigError } from '../../lib/settings';
import type { ToolLedgerProps } from '../../lib/tool-ledger-props';
import { EXAMPLE_TENANTS, exampleStack, testApp } from './synth';

/**
 * The stack carries operations their caller executes (the contract, §14): the heartbeat, outcome and
 * verdict routes with IAM authorization, body models and the agent's policy, and the `callerTools`
 * prop, checked at synth and handed to the API alone.
 */

type Resources = Record<string, { Type: string; Properties: Record<string, unknown> }>;

function resources(props: ToolLedgerProps = {}): Resources {
  const template = Template.fromStack(exampleStack(testApp(), { ledger: props })).toJSON() as {
    Resources: Resources;
  };
  return template.Resources;
}

const ofType = (all: Resources, type: string) => Object.values(all).filter((r) => r.Type === type);

/** The environment of the handler whose description contains `label`. */
function environmentOf(all: Resources, label: string): Record<string, unknown> {
  const fn = ofType(all, 'AWS::Lambda::Function').find((f) =>
    String(f.Properties.Description ?? '').includes(label),
  );
  if (!fn) throw new Error(`no function described as ${label}`);
  return (fn.Properties.Environment as { Variables: Record<string, unknown> }).Variables;
}

function problemsOf(props: ToolLedgerProps): string[] {
  try {
    resolveSettings({ tenants: EXAMPLE_TENANTS, ...props });
    return [];
  } catch (error) {
    if (error instanceof ToolLedgerConfigError) return [...error.problems];
    throw error;
  }
}

describe('the caller routes in the stack', () => {
  const all = resources();

  it('are POST methods with IAM authorization and a body model on their own resources', () => {
    const byPart = new Map(
      ofType(all, 'AWS::ApiGateway::Resource').map((r) => [
        Object.keys(all).find((id) => all[id] === r) as string,
        r.Properties.PathPart as string,
      ]),
    );
    for (const part of ['lease', 'outcome', 'reconciliation']) {
      const resourceId = [...byPart].find(([, p]) => p === part)?.[0];
      expect(resourceId, part).toBeDefined();
      const methods = ofType(all, 'AWS::ApiGateway::Method').filter(
        (m) => (m.Properties.ResourceId as { Ref: string }).Ref === resourceId,
      );
      expect(methods.map((m) => m.Properties.HttpMethod)).toEqual(['POST']);
      expect(methods[0]?.Properties.AuthorizationType).toBe('AWS_IAM');
      expect(methods[0]?.Properties.RequestModels).toBeDefined();
    }
  });

  it('check the claim’s fields in the submit model: execution, lease, flags, attempts', () => {
    const model = ofType(all, 'AWS::ApiGateway::Model').find(
      (m) =>
        String(m.Properties.Name ?? '') === 'POSTv1operationsModel' ||
        JSON.stringify(m).includes('"execution"'),
    );
    const schema = model?.Properties.Schema as { properties: Record<string, Record<string, unknown>> };
    expect(schema.properties.execution).toEqual({ type: 'string', enum: ['ledger', 'caller'] });
    expect(schema.properties.lease_seconds).toEqual({ type: 'integer', minimum: 1, maximum: 900 });
    expect(schema.properties.max_attempts).toEqual({ type: 'integer', minimum: 1, maximum: 10 });
    expect(schema.properties.requires_approval).toEqual({ type: 'boolean' });
    expect(schema.properties.downstream_idempotent).toEqual({ type: 'boolean' });
  });

  it('share the stage’s throttling: no method setting of their own', () => {
    const stage = ofType(all, 'AWS::ApiGateway::Stage')[0]!;
    const paths = (stage.Properties.MethodSettings as { ResourcePath: string }[]).map((s) => s.ResourcePath);
    expect(paths).toEqual(expect.arrayContaining(['/*']));
    for (const path of paths) expect(path).not.toMatch(/lease|outcome|reconciliation$/);
  });
});

describe('the callerTools prop', () => {
  it('is handed to the API alone, in the format the API parses back to the same rules', () => {
    const all = resources({
      callerTools: [
        { pattern: 'crm.*' },
        { pattern: 'pay.*', tenant: 'acme', requiresApproval: true, maxAttempts: 1 },
      ],
    });
    const value = environmentOf(all, 'HTTP API')[SETTINGS.callerTools.name];
    expect(value).toBe('crm.*,acme/pay.*:approval:max_attempts=1');
    expect(parseCallerTools(value as string, 'x')).toEqual([
      { pattern: 'crm.*', requiresApproval: false },
      { tenant: 'acme', pattern: 'pay.*', requiresApproval: true, maxAttempts: 1 },
    ]);
    expect(environmentOf(all, 'SQS executor')[SETTINGS.callerTools.name]).toBeUndefined();
    expect(environmentOf(all, 'reconciler')[SETTINGS.callerTools.name]).toBeUndefined();
  });

  it('left out, allows any name: the API gets no setting', () => {
    expect(environmentOf(resources(), 'HTTP API')[SETTINGS.callerTools.name]).toBeUndefined();
  });

  it('refuses at synth what the API would refuse, an unknown tenant and an empty list, naming each rule', () => {
    expect(
      problemsOf({
        callerTools: [
          { pattern: 'Pay.*' },
          { pattern: 'crm.*', maxAttempts: 0 },
          { pattern: 'crm.*', tenant: 'initech' },
          { pattern: 'a,b' },
        ],
      }),
    ).toEqual([
      'callerTools[0] (Pay.*): the pattern must be a tool name ([a-z][a-z0-9_.-]{0,63}) in which * stands for any characters.',
      'callerTools[1] (crm.*): max_attempts must be 1 to 10.',
      'callerTools[2] names tenant "initech", which is not in tenants: add it to tenants or fix the name.',
      'callerTools[3] (a,b): the pattern must be a tool name ([a-z][a-z0-9_.-]{0,63}) in which * stands for any characters.',
    ]);
    expect(problemsOf({ callerTools: [] })).toEqual([expect.stringContaining('callerTools is empty')]);
    // Only the prop sets it: an extra environment variable of that name is refused.
    expect(() =>
      exampleStack(testApp(), { ledger: { environment: { [SETTINGS.callerTools.name]: '*' } } }),
    ).toThrow(`environment sets ${SETTINGS.callerTools.name}`);
  });
});
