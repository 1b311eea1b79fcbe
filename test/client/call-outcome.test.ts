import { afterEach, describe, expect, it } from 'vitest';
import { bearerToken, callResultKind, ToolLedgerClient } from '../../client/index';
import {
  fakeClock,
  operationBody,
  type ScriptedServer,
  startScriptedServer,
} from './support/scripted-server';

let server: ScriptedServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe("the client's typed outcome", () => {
  it('a terminal failure answered 201 is outcome failed, not a success', async () => {
    server = await startScriptedServer(() => ({
      status: 201,
      json: operationBody('op-f', 'failed_terminal', { error: { code: 'http_404', message: 'm' } }),
    }));
    const client = new ToolLedgerClient({
      endpoint: server.url,
      signer: bearerToken('t'),
      clock: fakeClock(),
    });
    const call = await client.call({ operationId: 'op-f', tool: 'webhook.post', arguments: {} });
    expect(call.status).toBe(201);
    expect(call.outcome).toBe('failed');
  });

  it('maps every state to one outcome', () => {
    expect(callResultKind('succeeded')).toBe('succeeded');
    expect(callResultKind('failed_terminal')).toBe('failed');
    expect(callResultKind('rejected')).toBe('rejected');
    for (const state of [
      'queued',
      'pending',
      'awaiting_approval',
      'failed_retryable',
      'uncertain',
      'needs_reconciliation',
    ] as const) {
      expect(callResultKind(state)).toBe('not_settled');
    }
  });
});
