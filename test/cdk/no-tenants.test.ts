import { Stack } from 'aws-cdk-lib';
import { Annotations, Match } from 'aws-cdk-lib/assertions';
import { describe, it } from 'vitest';
import { ToolLedger } from '../../lib/tool-ledger';
import { exampleStack, testApp } from './synth';

describe('a deployment nobody can call', () => {
  it('synth warns when no tenant is bound, and says what to pass', () => {
    const stack = new Stack(testApp(), 'NoTenants');
    new ToolLedger(stack, 'Ledger');
    Annotations.fromStack(stack).hasWarning(
      '*',
      Match.stringLikeRegexp('No tenant is bound, so nobody can call this deployment.*pass tenants'),
    );
  });

  it('does not warn once a tenant is bound', () => {
    const stack = exampleStack(testApp());
    Annotations.fromStack(stack).hasNoWarning('*', Match.stringLikeRegexp('No tenant is bound'));
  });
});
