import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { beforeEach, describe, expect, it } from 'vitest';
import {
  MCP_META_AGENT_RUN_ID,
  MCP_META_OPERATION_ID,
  MCP_META_REPLAYED,
  ToolLedgerMcpClient,
} from '../../client/mcp';
import { operationIdFor } from '../../client/operation-id';
import { META_AGENT_RUN_ID, META_OPERATION_ID, META_REPLAYED } from '../../functions/mcp/protocol';
import { type TestApi, testApi } from '../http/support';
import { useDynalite } from '../support/dynalite';
import { ScriptedTool } from '../support/harness';
import { body, handlerFetch, mcpClient } from './support';

/** `ToolLedgerMcpClient` against the API handler: stable IDs, and retries that keep them. */

const noWait = { now: () => Date.now(), sleep: async () => undefined };

const db = useDynalite();
let api: TestApi;
let tool: ScriptedTool;

beforeEach(async () => {
  tool = new ScriptedTool('test.effect');
  api = await testApi(db.client, [tool.tool]);
});

/** A handler fetch whose first `tools/call` fails before anything is sent. */
function failingFirstCall(): typeof fetch {
  const inner = handlerFetch(api.handler);
  let failed = false;
  return (async (input: string | URL, init?: RequestInit) => {
    if (!failed && typeof init?.body === 'string' && init.body.includes('"tools/call"')) {
      failed = true;
      throw new TypeError('fetch failed: connection refused');
    }
    return inner(input, init);
  }) as typeof fetch;
}

describe('ToolLedgerMcpClient', () => {
  it('uses the server’s _meta names', () => {
    expect([MCP_META_OPERATION_ID, MCP_META_AGENT_RUN_ID, MCP_META_REPLAYED]).toEqual([
      META_OPERATION_ID,
      META_AGENT_RUN_ID,
      META_REPLAYED,
    ]);
  });

  it('sends the operationIdFor ID and the agent run, and retries a failed request with the same ID', async () => {
    const client: Client = await mcpClient('http://api.invalid/mcp', 'agent-a', failingFirstCall());
    try {
      const ledger = new ToolLedgerMcpClient(client, { clock: noWait });
      const position = { agentRunId: 'run-7', step: 2, callIndex: 1 };
      const result = await ledger.callTool({ name: 'test.effect', arguments: { target: 'a' }, position });
      expect(body(result)).toMatchObject({
        operation_id: operationIdFor(position),
        agent_run_id: 'run-7',
        state: 'succeeded',
        replayed: false,
      });
      expect(tool.effects).toHaveLength(1);
    } finally {
      await client.close();
    }
  });

  it('does not retry a protocol refusal, and needs an operation ID before sending anything', async () => {
    const client = await mcpClient('http://api.invalid/mcp', 'agent-a', handlerFetch(api.handler));
    try {
      const ledger = new ToolLedgerMcpClient(client, { clock: noWait });
      await expect(ledger.callTool({ name: 'test.effect', arguments: { target: 'a' } })).rejects.toThrow(
        /operation ID/,
      );
      let calls = 0;
      const refusing = new ToolLedgerMcpClient(
        {
          callTool: async () => {
            calls += 1;
            throw new McpError(-32602, 'invalid params');
          },
        } as unknown as Client,
        { clock: noWait },
      );
      await expect(refusing.callTool({ name: 'x', operationId: 'op-1' })).rejects.toBeInstanceOf(McpError);
      expect(calls).toBe(1);
    } finally {
      await client.close();
    }
  });
});
