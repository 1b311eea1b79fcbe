import { Duration, Stack } from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import { ToolLedger, type ToolLedgerProps } from 'tool-ledger';

/** A stack whose ledger serves two upstream MCP servers' tools through the ledger. */
export class GatewayStack extends Stack {
  constructor(scope: Construct, tenants: ToolLedgerProps['tenants']) {
    super(scope, 'Gateway');
    // #region docs
    new ToolLedger(this, 'Ledger', {
      tenants,
      mcpUpstreams: [
        { name: 'files', url: 'https://files.internal.example.com/mcp', trusted: true },
        { name: 'tickets', url: 'https://mcp.tickets.example.com/mcp', timeout: Duration.seconds(20) },
      ],
    });
    // #endregion docs
  }
}
