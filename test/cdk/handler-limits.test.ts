import { Duration, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { resolveSettings, ToolLedgerConfigError } from '../../lib/settings';
import { ToolLedger, type ToolLedgerProps } from '../../lib/tool-ledger';
import { testApp } from './synth';

/**
 * Concurrency caps on the synthesized template: a burst on the work queue must wait in the queue, not
 * scale the executor to the account's limit (flooding targets and starving the API and the
 * reconciler), and reconciler passes must not pile up behind each other.
 */

type Resource = { Properties: Record<string, unknown> };

function synth(props: ToolLedgerProps = {}): Template {
  const stack = new Stack(testApp(), 'Limits');
  new ToolLedger(stack, 'Ledger', props);
  return Template.fromStack(stack);
}

function lambda(template: Template, kind: string): Resource & { id: string } {
  const [id, fn] = Object.entries(template.findResources('AWS::Lambda::Function')).find(([, r]) =>
    String(r.Properties.Description).includes(kind),
  )!;
  return { id, ...(fn as Resource) };
}

function problemsOf(props: ToolLedgerProps): string[] {
  try {
    resolveSettings(props);
    return [];
  } catch (error) {
    if (error instanceof ToolLedgerConfigError) return [...error.problems];
    throw error;
  }
}

describe('concurrency defaults', () => {
  it('caps the executor at 10 both on the event source and by reservation, and the reconciler at one pass', () => {
    const template = synth();
    const executor = lambda(template, 'SQS executor');
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      FunctionName: { Ref: executor.id },
      ScalingConfig: { MaximumConcurrency: 10 },
      FunctionResponseTypes: ['ReportBatchItemFailures'],
    });
    expect(executor.Properties.ReservedConcurrentExecutions).toBe(10);
    expect(lambda(template, 'reconciler').Properties.ReservedConcurrentExecutions).toBe(1);
    // The API is reserved what the declared throughput needs (2,000 requests/s at 100 ms each).
    expect(lambda(template, 'HTTP API').Properties.ReservedConcurrentExecutions).toBe(200);
  });

  it('drops a reconciler event older than one tick instead of keeping it for Lambda’s default 6 hours', () => {
    const template = synth({ reconcileInterval: Duration.minutes(5) });
    template.hasResourceProperties('AWS::Lambda::EventInvokeConfig', {
      FunctionName: { Ref: lambda(template, 'reconciler').id },
      MaximumEventAgeInSeconds: 300,
      MaximumRetryAttempts: 0,
    });
  });

  it('follows a raised executorMaxConcurrency with the reservation, and lets a small account reserve nothing', () => {
    const raised = synth({ executorMaxConcurrency: 50 });
    expect(lambda(raised, 'SQS executor').Properties.ReservedConcurrentExecutions).toBe(50);
    const small = synth({ reservedConcurrency: { executor: false, reconciler: false } });
    expect(lambda(small, 'SQS executor').Properties.ReservedConcurrentExecutions).toBeUndefined();
    expect(lambda(small, 'reconciler').Properties.ReservedConcurrentExecutions).toBeUndefined();
    small.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      ScalingConfig: { MaximumConcurrency: 10 },
    });
  });

  it('refuses a reservation below the event source’s maxConcurrency and says what to set', () => {
    expect(problemsOf({ executorMaxConcurrency: 20, reservedConcurrency: { executor: 5 } })).toEqual([
      'reservedConcurrency.executor is 5, below executorMaxConcurrency 20: the SQS poller would keep ' +
        'invoking a throttled executor and messages would come back unrun; set reservedConcurrency.executor ' +
        'to at least 20, or lower executorMaxConcurrency to 5.',
    ]);
    expect(problemsOf({ executorMaxConcurrency: 1 })).toEqual([
      expect.stringContaining('SQS event sources allow 2 to 1000'),
    ]);
    expect(problemsOf({ reservedConcurrency: { reconciler: 0 } })).toEqual([
      expect.stringContaining('reservedConcurrency.reconciler is 0'),
    ]);
  });
});
