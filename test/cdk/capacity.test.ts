import { Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../functions/config';
import { resolveSettings, ToolLedgerConfigError } from '../../lib/settings';
import type { ToolLedgerProps } from '../../lib/tool-ledger';
import { exampleStack, testApp } from './synth';

/** The shard variables of every Lambda function of a synthesized stack. */
function shardVariables(props: ToolLedgerProps): Record<string, string>[] {
  const template = Template.fromStack(exampleStack(testApp(), { ledger: props }));
  return Object.values(template.findResources('AWS::Lambda::Function')).map((fn) => {
    const vars = (fn.Properties.Environment?.Variables ?? {}) as Record<string, string>;
    return {
      TOOL_LEDGER_ATTENTION_SHARDS: vars.TOOL_LEDGER_ATTENTION_SHARDS as string,
      TOOL_LEDGER_UNRESOLVED_SHARDS: vars.TOOL_LEDGER_UNRESOLVED_SHARDS as string,
    };
  });
}

describe('declared throughput and the GSI shards that carry it', () => {
  it('defaults to 8 attention shards and one unresolved partition per tenant', () => {
    const settings = resolveSettings({});
    expect(settings.throughput).toEqual({
      firstExecutionsPerSecond: 2_000,
      perTenant: 400,
      attentionShards: 8,
      unresolvedShards: 1,
    });
  });

  it('derives the shards for 10,000 first executions per second of one tenant, and the handlers read them', () => {
    const handlers = shardVariables({
      declaredThroughput: { firstExecutionsPerSecond: 10_000, perTenant: 10_000 },
    }).filter((env) => env.TOOL_LEDGER_ATTENTION_SHARDS !== undefined);
    expect(handlers.length).toBeGreaterThanOrEqual(3); // API, executor, reconciler
    for (const env of handlers) {
      expect(env).toEqual({ TOOL_LEDGER_ATTENTION_SHARDS: '25', TOOL_LEDGER_UNRESOLVED_SHARDS: '25' });
      expect(loadConfig(env)).toMatchObject({ attentionShards: 25, unresolvedShards: 25 });
    }
  });

  it('refuses to synth a declared throughput the attention shards cannot carry, and says what to set', () => {
    const attempt = () =>
      exampleStack(testApp(), {
        ledger: { attentionShards: 8, declaredThroughput: { firstExecutionsPerSecond: 10_000 } },
      });
    expect(attempt).toThrow(ToolLedgerConfigError);
    expect(attempt).toThrow(
      'attentionShards is 8, but declaredThroughput.firstExecutionsPerSecond 10000 needs 25; each shard ' +
        'carries 400 first executions per second (1000 write units per partition × 80 % ÷ 2 index ' +
        'writes): set attentionShards to at least 25, or leave it unset to derive it.',
    );
  });

  it('refuses a per-tenant rate beyond the most unresolved shards, and a tenant above the deployment', () => {
    expect(() =>
      resolveSettings({ declaredThroughput: { firstExecutionsPerSecond: 100_000, perTenant: 50_000 } }),
    ).toThrow('declaredThroughput.perTenant 50000 needs 125 unresolved shards per tenant');
    expect(() =>
      resolveSettings({ declaredThroughput: { firstExecutionsPerSecond: 500, perTenant: 600 } }),
    ).toThrow('set perTenant to at most 500');
    expect(() => resolveSettings({ declaredThroughput: { firstExecutionsPerSecond: 0 } })).toThrow(
      'use positive integers',
    );
  });
});
