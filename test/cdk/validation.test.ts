import path from 'node:path';
import { Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { checkRetention, minimumRetention } from '../../lib/retention-check';
import { resolveSettings, ToolLedgerConfigError } from '../../lib/settings';
import { ToolLedger, type ToolLedgerProps } from '../../lib/tool-ledger';
import { readToolManifest } from '../../lib/tool-manifest';
import { exampleStack, testApp } from './synth';

const FIXTURE_TOOLS = path.join(import.meta.dirname, 'fixtures', 'short-retention-tools.ts');

/** The problems a configuration is refused for (empty when it is accepted). */
function problemsOf(props: ToolLedgerProps): string[] {
  try {
    resolveSettings(props);
    return [];
  } catch (error) {
    if (error instanceof ToolLedgerConfigError) return [...error.problems];
    throw error;
  }
}

describe('retention check (SPEC §8)', () => {
  it('refuses to synth a tool whose retention is shorter than queue + DLQ retention + one day, and says what to change', async () => {
    const manifest = await readToolManifest(FIXTURE_TOOLS, {
      workspaceRoot: '/tmp/workspace',
      webhookAllow: [],
      local: false,
    });
    expect(manifest.retentions['acme.audit_note']?.toDays()).toBe(7);
    expect(manifest.retentions['acme.lookup']).toBeUndefined(); // a read tool's cache lifetime
    const attempt = () =>
      exampleStack(testApp(), {
        ledger: { toolRetentions: manifest.retentions, toolTimeouts: manifest.timeouts },
      });
    expect(attempt).toThrow(ToolLedgerConfigError);
    expect(attempt).toThrow(
      'tool "acme.audit_note" keeps terminal records for 7 days, but a message can live 19 days ' +
        '(work queue retention 4 days + DLQ retention 14 days + 1 day margin); a message that outlives ' +
        'its record would run the operation again: raise it to at least 19 days (1641600 seconds), or ' +
        "shorten queueRetention / deadLetterRetention (the tool's `retention`, in seconds).",
    );
  });

  it('accepts the same tool when the queues keep messages for less time', () => {
    expect(
      problemsOf({
        toolRetentions: { 'acme.audit_note': Duration.days(7) },
        queueRetention: Duration.days(2),
        deadLetterRetention: Duration.days(4),
      }),
    ).toEqual([]);
    expect(minimumRetention(Duration.days(2), Duration.days(4)).toDays()).toBe(7);
  });

  it('checks the default retention too, and a retention exactly at the minimum passes', () => {
    expect(problemsOf({ retention: Duration.days(10) })[0]).toMatch(
      /^the default retention \(retention\) keeps terminal records for 10 days, but a message can live 19 days/,
    );
    expect(
      checkRetention({
        defaultRetention: Duration.days(19),
        toolRetentions: { a: Duration.days(19), b: Duration.seconds(19 * 86_400 - 1) },
        queueRetention: Duration.days(4),
        deadLetterRetention: Duration.days(14),
      }),
    ).toEqual([
      expect.stringMatching(/^tool "b" keeps terminal records for 1641599 seconds \(18\.99 days\), but/),
    ]);
  });
});

describe('other synth-time checks', () => {
  it('accepts the defaults', () => {
    expect(problemsOf({})).toEqual([]);
  });

  it('refuses a tool that cannot finish inside the executor timeout', () => {
    expect(problemsOf({ toolTimeouts: { 'slow.tool': Duration.minutes(3) } })).toEqual([
      expect.stringContaining('raise executorTimeout to at least 182 s'),
    ]);
  });

  it('refuses a synchronous wait that does not fit in API Gateway’s 29 s', () => {
    expect(problemsOf({ syncWait: Duration.seconds(28) })).toEqual([
      expect.stringContaining('use at most 27000 ms'),
    ]);
  });

  it('refuses tenants the API could not tell apart, and queue bindings to unknown tenants', () => {
    const role = 'arn:aws:iam::123456789012:role/shared';
    const problems = problemsOf({
      tenants: {
        acme: { agents: [role] },
        'bad#tenant': { agents: ['not-an-arn'] },
        globex: { operators: [role] },
      },
      queueTenants: ['acme', 'initech'],
    });
    expect(problems).toEqual(
      expect.arrayContaining([
        expect.stringContaining('tenant "bad#tenant" is not a valid label'),
        expect.stringContaining('lists "not-an-arn", which is not an IAM role'),
        expect.stringContaining(`"${role}" is bound to tenants "acme" and "globex"`),
        expect.stringContaining('queueTenants names "initech"'),
      ]),
    );
    expect(problems).toHaveLength(4);
  });

  it('accepts role paths and users', () => {
    expect(
      problemsOf({
        tenants: {
          acme: {
            agents: ['arn:aws:iam::123456789012:user/ci/bot'],
            operators: ['arn:aws:iam::123456789012:role/teams/ops/oncall'],
          },
        },
      }),
    ).toEqual([]);
  });

  it('refuses schedules EventBridge cannot express and queue settings SQS refuses', () => {
    expect(
      problemsOf({
        reconcileInterval: Duration.seconds(90),
        maxReceiveCount: 0,
        executorBatchSize: 11,
        queueRetention: Duration.days(15),
      }),
    ).toHaveLength(4);
  });

  it('refuses extra environment variables that would override the construct’s own', () => {
    const stack = new Stack(testApp(), 'Env');
    expect(
      () => new ToolLedger(stack, 'Ledger', { environment: { TOOL_LEDGER_TABLE_NAME: 'other' } }),
    ).toThrow('environment sets TOOL_LEDGER_TABLE_NAME');
  });
});

describe('dev stacks', () => {
  it('drop deletion protection and are destroyed with the stack only when asked to', () => {
    const template = Template.fromStack(
      exampleStack(testApp(), { ledger: { removalPolicy: RemovalPolicy.DESTROY } }),
    );
    template.hasResource('AWS::DynamoDB::Table', {
      DeletionPolicy: 'Delete',
      Properties: { DeletionProtectionEnabled: false },
    });
  });
});
