import type { Stack } from 'aws-cdk-lib';
import { ToolLedger, type ToolLedgerProps } from 'tool-ledger';

// #region docs
new ToolLedger(stack, 'Ledger', {
  tenants,
  declaredThroughput: { firstExecutionsPerSecond: 10_000, perTenant: 10_000 },
});
// #endregion docs

declare const stack: Stack;
declare const tenants: ToolLedgerProps['tenants'];
