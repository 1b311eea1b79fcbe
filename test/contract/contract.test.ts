import { Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import {
  readSetting,
  SETTINGS,
  type Setting,
  SettingError,
  type SettingReader,
} from '../../functions/contract/environment';
import { API_RESOURCES, LEDGER_ROUTES, operationPath } from '../../functions/contract/routes';
import { loadLocalSettings } from '../../functions/local/settings';
import { handlerEnvironment } from '../../functions/local/stack';
import { exampleStack, testApp } from '../cdk/synth';

/**
 * The contract both sides read (functions/contract/). Names are stated there once, so these tests do
 * not compare copies: they check that what the construct and local mode actually set is what the
 * contract declares, for the readers it declares, and that the readers parse values as it says.
 */

const DECLARED = new Map<string, Setting>(
  Object.values(SETTINGS as Record<string, Setting>).map((s) => [s.name, s]),
);

/** Variables of ours (not AWS's or Node's): everything else in an environment is left alone. */
const OURS = /^(TOOL_LEDGER_|POWERTOOLS_)/;

describe('the environment the construct writes', () => {
  it('sets on each handler only variables the contract says that handler reads', () => {
    const template = Template.fromStack(exampleStack(testApp())).toJSON() as {
      Resources: Record<string, { Type: string; Properties: Record<string, unknown> }>;
    };
    const functions = Object.values(template.Resources).filter(
      (r) => r.Type === 'AWS::Lambda::Function' && typeof r.Properties.Description === 'string',
    );
    const readers: Record<string, SettingReader> = {
      'HTTP API': 'api',
      'SQS executor': 'executor',
      reconciler: 'reconciler',
    };
    let checked = 0;
    for (const fn of functions) {
      const description = fn.Properties.Description as string;
      const reader = Object.entries(readers).find(([label]) => description.includes(label))?.[1];
      if (reader === undefined) continue;
      const variables = Object.keys(
        (fn.Properties.Environment as { Variables: Record<string, unknown> }).Variables,
      ).filter((name) => OURS.test(name));
      for (const name of variables) {
        expect(DECLARED.get(name)?.readers ?? [], `${name} on the ${reader}`).toContain(reader);
        checked += 1;
      }
    }
    expect(checked).toBeGreaterThan(20);
  });
});

describe('the environment local mode writes', () => {
  it('sets only variables the contract declares, for the handlers or for local mode itself', () => {
    const settings = loadLocalSettings({ TOOL_LEDGER_TOKENS: 'agent-token=local:agent' }, false);
    const env = handlerEnvironment(
      settings,
      { dynamo: 'http://d', sqs: 'http://s', queueUrl: 'http://q' },
      {},
    );
    const ours = Object.keys(env).filter((name) => OURS.test(name));
    expect(ours.length).toBeGreaterThan(5);
    for (const name of ours) {
      const readers = DECLARED.get(name)?.readers ?? [];
      expect(
        readers.some((r) => r !== 'cli'),
        `${name} is read by a handler or local mode`,
      ).toBe(true);
    }
  });
});

describe('reading a setting', () => {
  it('takes the default when the variable is absent, and an empty integer as absent', () => {
    expect(readSetting({}, SETTINGS.retentionSeconds)).toBe(2_592_000);
    expect(readSetting({ [SETTINGS.retentionSeconds.name]: '' }, SETTINGS.retentionSeconds)).toBe(2_592_000);
    expect(readSetting({}, SETTINGS.tableName)).toBe('tool-ledger');
    expect(readSetting({}, SETTINGS.dynamoEndpoint)).toBeUndefined();
    expect(readSetting({}, SETTINGS.allowSelfApproval)).toBe(false);
  });

  it('refuses an integer that is negative, fractional or not a number, naming the variable', () => {
    for (const raw of ['-1', '1.5', 'ten']) {
      try {
        readSetting({ [SETTINGS.syncWaitMs.name]: raw }, SETTINGS.syncWaitMs);
        expect.unreachable(`${raw} was accepted`);
      } catch (error) {
        expect(error).toBeInstanceOf(SettingError);
        expect((error as SettingError).variable).toBe('TOOL_LEDGER_SYNC_WAIT_MS');
        expect((error as Error).message).toBe('TOOL_LEDGER_SYNC_WAIT_MS must be a non-negative integer');
      }
    }
  });

  it('turns a flag on only for "true", and splits a list on commas', () => {
    expect(readSetting({ TOOL_LEDGER_ALLOW_SELF_APPROVAL: 'true' }, SETTINGS.allowSelfApproval)).toBe(true);
    expect(readSetting({ TOOL_LEDGER_ALLOW_SELF_APPROVAL: 'yes' }, SETTINGS.allowSelfApproval)).toBe(false);
    expect(
      readSetting({ TOOL_LEDGER_WEBHOOK_ALLOW: ' https://a , ,https://b' }, SETTINGS.webhookAllow),
    ).toEqual(['https://a', 'https://b']);
  });

  it('declares every variable once', () => {
    const names = Object.values(SETTINGS as Record<string, Setting>).map((s) => s.name);
    expect(new Set(names).size).toBe(names.length);
  });
});

describe('the routes', () => {
  it('give API Gateway each resource once, in the order of the table', () => {
    expect(API_RESOURCES).toEqual([
      '/v1/operations',
      '/v1/operations/{id}',
      '/v1/operations/{id}/approval',
      '/v1/operations/{id}/resolution',
      '/v1/operations/{id}/lease',
      '/v1/operations/{id}/outcome',
      '/v1/operations/{id}/reconciliation',
      '/v1/reconciliations',
      '/v1/tools',
      '/mcp',
    ]);
    expect(new Set(LEDGER_ROUTES.map((r) => r.id)).size).toBe(LEDGER_ROUTES.length);
  });

  it('encode an operation ID as one path segment', () => {
    expect(operationPath('run/42?x#y%')).toBe('/v1/operations/run%2F42%3Fx%23y%25');
    expect(operationPath('run-1', 'resolution')).toBe('/v1/operations/run-1/resolution');
    expect(operationPath('run/1', 'outcome')).toBe('/v1/operations/run%2F1/outcome');
  });
});
