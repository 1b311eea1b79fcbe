import type { Context } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { parseTenantRateLimits } from '../../functions/engine/tenant-rate-limit';
import { createApiHandler } from '../../functions/http/api-handler';
import { BearerTokenAuthenticator } from '../../functions/http/auth-tokens';
import { DynamoTenantLimiter } from '../../functions/ledger/tenant-limiter';
import { freshTable, useDynalite } from '../support/dynalite';
import { ScriptedTool, testLedger } from '../support/harness';
import { TOKENS, toEvent } from './support';

/**
 * Per-tenant limits (the deployment's `tenantRateLimits`): each tenant within its own requests per
 * second, counted in the ledger table that every API instance shares, so one tenant's runaway agent
 * leaves the others their share of the stage's limit. Above it: 429 `throttled`, `Retry-After: 1`,
 * nothing read or run.
 */

const db = useDynalite();
const CONTEXT = { awsRequestId: 'req-1', getRemainingTimeInMillis: () => 29_000 } as unknown as Context;

async function setup(limits: string) {
  const table = await freshTable(db.client);
  const tool = new ScriptedTool('test.effect');
  const ledger = testLedger(db.client, table, [tool.tool]);
  const tenantLimiter = new DynamoTenantLimiter(db.client, table, parseTenantRateLimits(limits, 'X')!);
  // A clock the test moves: every request of a test falls in the second it says.
  const clock = { now: 1_800_000_000_000 };
  ledger.deps.clock = () => clock.now;
  const handler = createApiHandler(
    { deps: ledger.deps, tenantLimiter },
    new BearerTokenAuthenticator(TOKENS),
  );
  const get = (token: string) => handler(toEvent({ path: '/v1/tools', token }), CONTEXT);
  return { clock, ledger, tool, handler, get };
}

describe('per-tenant request limits', () => {
  it('refuses a tenant over its limit with 429 throttled, and leaves another tenant its own', async () => {
    const { clock, get } = await setup('{"*":3}');
    const acme = [];
    for (let i = 0; i < 4; i++) acme.push(await get('agent-a'));
    expect(acme.map((r) => r.statusCode)).toEqual([200, 200, 200, 429]);
    const refused = acme[3]!;
    expect(refused.headers?.['Retry-After']).toBe('1');
    expect(JSON.parse(refused.body)).toMatchObject({ status: 429, code: 'throttled' });
    expect((await get('agent-b')).statusCode).toBe(200);
    // The next second starts a new count.
    clock.now += 1000;
    expect((await get('agent-a')).statusCode).toBe(200);
  });

  it('runs nothing for a refused call', async () => {
    const { ledger, tool, handler } = await setup('{"*":1,"acme":1}');
    const call = (key: string) =>
      handler(
        toEvent({ path: '/v1/operations', key, body: { tool: 'test.effect', arguments: { target: key } } }),
        CONTEXT,
      );
    expect((await call('k-1')).statusCode).toBe(201);
    expect((await call('k-2')).statusCode).toBe(429);
    expect(tool.starts.map((s) => s.operationId)).toEqual(['k-1']);
    expect(await ledger.store.get({ pk: 'acme#k-2', sk: 'op' })).toBeUndefined();
  });

  it('limits a named tenant apart from the rest, and refuses malformed settings', async () => {
    const { get } = await setup('{"*":1,"other":2}');
    expect([(await get('agent-b')).statusCode, (await get('agent-b')).statusCode]).toEqual([200, 200]);
    expect((await get('agent-b')).statusCode).toBe(429);
    for (const bad of ['[1]', '{"*":0}', '{"*":1.5}', 'nope']) {
      expect(() => parseTenantRateLimits(bad, 'TOOL_LEDGER_TENANT_RATE_LIMITS')).toThrow(
        /TOOL_LEDGER_TENANT_RATE_LIMITS/,
      );
    }
    expect(parseTenantRateLimits(undefined, 'X')).toBeUndefined();
  });
});
