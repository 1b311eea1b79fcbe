import * as path from 'node:path';
import type { Stack } from 'aws-cdk-lib';
import type { IRole } from 'aws-cdk-lib/aws-iam';
import { ToolLedger } from 'tool-ledger';

// #region docs
new ToolLedger(stack, 'Ledger', {
  tenants: {
    acme: {
      agents: [agentRole.roleArn],
      approvers: [approverRole.roleArn],
      operators: [operatorRole.roleArn],
    },
  },
  toolsModule: path.resolve('tools/index.ts'),
});
// #endregion docs

declare const stack: Stack;
declare const agentRole: IRole;
declare const approverRole: IRole;
declare const operatorRole: IRole;
