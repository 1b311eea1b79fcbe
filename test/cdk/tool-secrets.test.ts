import { Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { Secret } from 'aws-cdk-lib/aws-secretsmanager';
import { StringParameter } from 'aws-cdk-lib/aws-ssm';
import { AwsSolutionsChecks } from 'cdk-nag';
import { describe, expect, it } from 'vitest';
import { SETTINGS } from '../../functions/contract/environment';
import { parseToolSecrets, SecretUnavailableError, secretReader } from '../../functions/tools/tool-secrets';
import { resolveSettings } from '../../lib/settings';
import { ToolLedger } from '../../lib/tool-ledger';
import { testApp } from './synth';

/**
 * Tools get secrets through Secrets Manager or SSM references, never as plaintext environment: the
 * template holds where each secret lives, and only the functions whose tools need one may read it.
 */

type Props = Record<string, unknown>;
const SECRET_ARN = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:acme-token-AbCdEf';

function deployment() {
  const app = testApp();
  const stack = new Stack(app, 'Secrets');
  const secret = Secret.fromSecretCompleteArn(stack, 'Token', SECRET_ARN);
  const parameter = StringParameter.fromSecureStringParameterAttributes(stack, 'Hook', {
    parameterName: '/acme/hook-signing-key',
  });
  new ToolLedger(stack, 'Ledger', {
    toolSecrets: {
      ACME_TOKEN: { secret, field: 'token' },
      HOOK_KEY: { parameter, handlers: ['executor'] },
    },
  });
  return { app, t: Template.fromStack(stack) };
}

const handlers = (t: Template) =>
  Object.entries(t.findResources('AWS::Lambda::Function')).filter(
    ([, fn]) =>
      String((fn.Properties as Props).Description).startsWith('tool-ledger') &&
      !String((fn.Properties as Props).Description).includes('completion events'), // runs no tools
  );
const kindOf = (fn: { Properties: Props }) =>
  String(fn.Properties.Description).includes('HTTP API')
    ? 'api'
    : String(fn.Properties.Description).includes('executor')
      ? 'executor'
      : 'reconciler';

describe('tool secrets', () => {
  it('name where each secret lives, per function, and never hold a value', () => {
    const { t } = deployment();
    const byKind: Record<string, unknown> = {};
    for (const [, fn] of handlers(t)) {
      const variables = ((fn.Properties as Props).Environment as { Variables: Props }).Variables;
      byKind[kindOf(fn as { Properties: Props })] = JSON.parse(String(variables[SETTINGS.toolSecrets.name]));
    }
    expect(byKind).toEqual({
      api: { ACME_TOKEN: { source: 'secretsmanager', id: SECRET_ARN, field: 'token' } },
      reconciler: { ACME_TOKEN: { source: 'secretsmanager', id: SECRET_ARN, field: 'token' } },
      executor: {
        ACME_TOKEN: { source: 'secretsmanager', id: SECRET_ARN, field: 'token' },
        HOOK_KEY: { source: 'ssm', id: '/acme/hook-signing-key' },
      },
    });
  });

  it('let only the functions that need a secret read it', () => {
    const { t } = deployment();
    const roleOf = (kind: string) =>
      handlers(t).find(([, fn]) => kindOf(fn as { Properties: Props }) === kind)![1].Properties as Props;
    const statementsOf = (kind: string) => {
      const roleId = (roleOf(kind).Role as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0];
      return Object.values(t.findResources('AWS::IAM::Policy'))
        .filter((p) => JSON.stringify((p.Properties as Props).Roles).includes(roleId))
        .flatMap((p) => ((p.Properties as Props).PolicyDocument as { Statement: Props[] }).Statement);
    };
    for (const kind of ['api', 'executor', 'reconciler']) {
      const text = JSON.stringify(statementsOf(kind));
      expect(text, kind).toContain('secretsmanager:GetSecretValue');
      expect(text.includes('ssm:GetParameter'), kind).toBe(kind === 'executor');
    }
  });

  it('refuse a name a tool could not ask for, and stay cdk-nag clean', () => {
    expect(() => resolveSettings({ toolSecrets: { 'acme-token': { parameter: {} as never } } })).toThrow(
      /toolSecrets name "acme-token"/,
    );
    const { app } = deployment();
    const report = new AwsSolutionsChecks().validateScope(app);
    expect(
      report.violations.flatMap((v) =>
        v.violatingResources.map((r) => `${v.ruleName} at ${r.constructPath}`),
      ),
    ).toEqual([]);
  });
});

describe('a tool reading a secret', () => {
  const sources = parseToolSecrets(
    '{"ACME_TOKEN":{"source":"secretsmanager","id":"arn:x","field":"token"},"PLAIN":{"source":"ssm","id":"/p"}}',
    'TOOL_LEDGER_TOOL_SECRETS',
  );
  const fetched: string[] = [];
  const fetcher = async (source: { id: string }) => {
    fetched.push(source.id);
    return source.id === 'arn:x' ? '{"token":"t0k3n","other":1}' : 'plain-value';
  };

  it('gets the named secret, or one member of its JSON', async () => {
    const secret = secretReader(sources, false, {}, fetcher);
    expect(await secret('ACME_TOKEN')).toBe('t0k3n');
    expect(await secret('PLAIN')).toBe('plain-value');
    expect(fetched).toEqual(['arn:x', '/p']);
  });

  it('refuses a name the deployment does not give, saying so without any value', async () => {
    const secret = secretReader(sources, false, { GHOST: 'from-env' }, fetcher);
    await expect(secret('GHOST')).rejects.toBeInstanceOf(SecretUnavailableError);
  });

  it('reads the environment in local mode when the deployment names no secrets', async () => {
    expect(await secretReader(undefined, true, { ACME_TOKEN: 'local' }, fetcher)('ACME_TOKEN')).toBe('local');
    await expect(secretReader(undefined, false, { ACME_TOKEN: 'x' }, fetcher)('ACME_TOKEN')).rejects.toThrow(
      /not available/,
    );
    expect(() => parseToolSecrets('{"bad name":{"source":"ssm","id":"/p"}}', 'V')).toThrow(/V must be/);
  });
});
