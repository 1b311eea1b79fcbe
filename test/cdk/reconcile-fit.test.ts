import path from 'node:path';
import { Duration } from 'aws-cdk-lib';
import { describe, expect, it } from 'vitest';
import { resolveSettings, ToolLedgerConfigError } from '../../lib/settings';
import type { ToolLedgerProps } from '../../lib/tool-ledger';
import { readToolManifestSync } from '../../lib/tool-manifest';

/**
 * A reconciler pass decides only what fits in it (the contract, §7): a tool whose `reconcile` cannot
 * fit in a scheduled pass, or in an operator's pass inside the API's 29 s, would be handed to an
 * operator every time instead of checked. The construct refuses it at synth and says what to set.
 */

const SLOW_TOOLS = path.join(import.meta.dirname, 'fixtures', 'slow-reconcile-tools.ts');

function problemsOf(props: ToolLedgerProps): string[] {
  try {
    resolveSettings(props);
    return [];
  } catch (error) {
    if (error instanceof ToolLedgerConfigError) return [...error.problems];
    throw error;
  }
}

describe('reconcile deadlines against the passes that run them', () => {
  it('reads each tool’s reconcile deadline from the tools module (reconcileTimeoutMs, else timeoutMs)', () => {
    const manifest = readToolManifestSync(SLOW_TOOLS, {
      workspaceRoot: '/tmp/w',
      webhookAllow: [],
      local: false,
    });
    expect(manifest.reconcileTimeouts['acme.deploy']?.toSeconds()).toBe(90);
    expect(manifest.reconcileTimeouts['acme.ticket']?.toSeconds()).toBe(10);
  });

  it('refuses a reconcile that cannot fit the reconciler’s pass, saying what to set', () => {
    const problems = problemsOf({ toolsModule: SLOW_TOOLS, executorTimeout: Duration.minutes(2) });
    expect(problems).toContain(
      'tool "acme.deploy" may spend 90000 ms in one reconcile call (its reconcileTimeoutMs, else its ' +
        'timeoutMs), but a scheduled reconciler pass starts a check only if it can end within 80% of the ' +
        "reconciler's 60 s timeout (reconcileInterval), with 2 s for its commit and 2 s to end the pass, " +
        "so at most 44000 ms: set the tool's reconcileTimeoutMs to at most 44000, or raise " +
        'reconcileInterval to at least 2 minutes.',
    );
  });

  it('refuses a reconcile that cannot fit an operator’s pass inside the API’s 29 s, saying what to set', () => {
    const problems = problemsOf({ toolsModule: SLOW_TOOLS, reconcileInterval: Duration.minutes(3) });
    expect(problems).toEqual([
      'tool "acme.deploy" may spend 90000 ms in one reconcile call (its reconcileTimeoutMs, else its ' +
        "timeoutMs), but POST /v1/reconciliations runs an operator's pass inside the API's 29 s and " +
        'starts a check only if it can end within 80% of it, with 2 s for its commit and 2 s to end the ' +
        "pass, so at most 19200 ms: set the tool's reconcileTimeoutMs to at most 19200.",
    ]);
  });

  it('accepts the default tools and a quick check', () => {
    expect(problemsOf({})).toEqual([]);
    expect(problemsOf({ toolReconcileTimeouts: { 'acme.ticket': Duration.seconds(19) } })).toEqual([]);
    expect(problemsOf({ toolReconcileTimeouts: { 'acme.ticket': Duration.seconds(20) } })[0]).toMatch(
      /^tool "acme.ticket" may spend 20000 ms in one reconcile call/,
    );
  });
});
