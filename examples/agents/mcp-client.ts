import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { bearerToken } from '@tool-ledger/client';
import { signingFetch, ToolLedgerMcpClient } from '@tool-ledger/client/mcp';

const client = new Client({ name: 'my-agent', version: '1.0.0' });
await client.connect(
  new StreamableHTTPClientTransport(new URL('http://127.0.0.1:3000/mcp'), {
    fetch: signingFetch(bearerToken(process.env.TOKEN!)), // on AWS: signingFetch(sigv4Signer({ region }))
  }),
);
const ledger = new ToolLedgerMcpClient(client);
const { tools } = await client.listTools(); // hand these to the model
// For the model's call at position callIndex of step `step` in run `runId` (files.write_file: the tool
// write_file of an upstream MCP server the deployment names "files"):
const result = await ledger.callTool({
  name: 'files.write_file',
  arguments: { path: 'notes.md', content: 'hello' },
  position: { agentRunId: runId, step, callIndex },
});
// result.structuredContent: the operation (state, replayed, result); result._meta['io.tool-ledger/replayed']
// #endregion docs

console.log(tools.length, result.structuredContent);
declare const runId: string;
declare const step: number;
declare const callIndex: number;
