import { randomUUID } from 'node:crypto';
import { beforeEach, describe, expect, it } from 'vitest';
import { operationKey } from '../../functions/contract/keys';
import { createApiHandler } from '../../functions/http/api-handler';
import { IamAuthenticator } from '../../functions/http/auth-iam';
import { BearerTokenAuthenticator } from '../../functions/http/auth-tokens';
import type { Authenticator } from '../../functions/http/identity';
import { parse, type TestRequest, type TestResponse, TOKENS, testContext, toEvent } from '../http/support';
import { freshTable, useDynalite } from '../support/dynalite';
import { ScriptedTool, type TestLedger, testLedger } from '../support/harness';

/**
 * Who may do what (SPEC §5), as one matrix: every route against every kind of caller of two tenants,
 * with both authenticators the project ships (bearer tokens for local mode, IAM principals on AWS). A
 * missing role is 403 `forbidden`; another tenant's operation is 404 `not_found` (never 403, which
 * would confirm that it exists); no credentials are 401.
 */

type Caller =
  | 'agent-a'
  | 'approver-a'
  | 'operator-a'
  | 'all-a'
  | 'agent-b'
  | 'approver-b'
  | 'operator-b'
  | 'none';
const CALLERS: Caller[] = [
  'agent-a',
  'approver-a',
  'operator-a',
  'all-a',
  'agent-b',
  'approver-b',
  'operator-b',
  'none',
];

/** The IAM form of the same callers: a role per caller, listed under its tenant's role lists. */
const ACCOUNT = '123456789012';
const arn = (caller: string) => `arn:aws:sts::${ACCOUNT}:assumed-role/${caller}/session-1`;
const role = (caller: string) => `arn:aws:iam::${ACCOUNT}:role/${caller}`;
const IAM_TENANTS = JSON.stringify({
  acme: {
    agents: [role('agent-a'), role('all-a')],
    approvers: [role('approver-a'), role('all-a')],
    operators: [role('operator-a'), role('all-a')],
  },
  other: { agents: [role('agent-b')], approvers: [role('approver-b')], operators: [role('operator-b')] },
});

const db = useDynalite();
let effect: ScriptedTool;
let ledger: TestLedger;

beforeEach(async () => {
  effect = new ScriptedTool('test.effect');
  const approval = new ScriptedTool('test.approve', { requiresApproval: true });
  ledger = testLedger(db.client, await freshTable(db.client), [effect.tool, approval.tool]);
});

/** Calls the API as `caller`, through the given authenticator. */
function caller(kind: 'tokens' | 'iam') {
  const authenticator: Authenticator =
    kind === 'tokens' ? new BearerTokenAuthenticator(TOKENS) : new IamAuthenticator(IAM_TENANTS);
  const handler = createApiHandler({ deps: ledger.deps }, authenticator);
  return async (who: Caller, request: TestRequest): Promise<TestResponse> => {
    const event = toEvent({ ...request, token: kind === 'tokens' && who !== 'none' ? who : null });
    if (kind === 'iam' && who !== 'none') {
      (event.requestContext.identity as { userArn: string | null }).userArn = arn(who);
    }
    return parse(await handler(event, testContext()));
  };
}

/** A fresh operation of tenant acme, requested by agent-a, in the state a route needs. */
async function operation(
  kind: 'succeeded' | 'awaiting' | 'uncertain',
): Promise<{ id: string; digest: string }> {
  const id = `op-${randomUUID().slice(0, 8)}`;
  if (kind === 'uncertain') effect.next({ kind: 'uncertain', code: 'lost' });
  const out = await ledger.submit({
    operationId: id,
    tool: kind === 'awaiting' ? 'test.approve' : 'test.effect',
    arguments: { target: 'secret-target' },
    principal: 'agent-a',
  });
  return { id, digest: out.record.arguments_digest };
}

interface RouteCase {
  name: string;
  request(): Promise<TestRequest>;
  expected: Record<Caller, number>;
}

const ROUTES: RouteCase[] = [
  {
    name: 'POST /v1/operations',
    request: async () => ({
      method: 'POST',
      path: '/v1/operations',
      key: `new-${randomUUID().slice(0, 8)}`,
      body: { tool: 'test.effect', arguments: { target: 't' } },
    }),
    expected: {
      'agent-a': 201,
      'approver-a': 403,
      'operator-a': 403,
      'all-a': 201,
      'agent-b': 201,
      'approver-b': 403,
      'operator-b': 403,
      none: 401,
    },
  },
  {
    name: 'GET /v1/operations/{id}',
    request: async () => ({ path: `/v1/operations/${(await operation('succeeded')).id}` }),
    expected: {
      'agent-a': 200,
      'approver-a': 200,
      'operator-a': 200,
      'all-a': 200,
      'agent-b': 404,
      'approver-b': 404,
      'operator-b': 404,
      none: 401,
    },
  },
  {
    name: 'GET /v1/operations/{id}?include=arguments',
    request: async () => ({
      path: `/v1/operations/${(await operation('succeeded')).id}`,
      query: [['include', 'arguments']],
    }),
    expected: {
      'agent-a': 403,
      'approver-a': 200,
      'operator-a': 200,
      'all-a': 200,
      'agent-b': 403,
      'approver-b': 404,
      'operator-b': 404,
      none: 401,
    },
  },
  {
    name: 'GET /v1/operations',
    request: async () => {
      await operation('uncertain');
      return { path: '/v1/operations' };
    },
    expected: {
      'agent-a': 403,
      'approver-a': 403,
      'operator-a': 200,
      'all-a': 200,
      'agent-b': 403,
      'approver-b': 403,
      'operator-b': 200,
      none: 401,
    },
  },
  {
    name: 'POST /v1/operations/{id}/approval',
    request: async () => {
      const op = await operation('awaiting');
      return {
        method: 'POST',
        path: `/v1/operations/${op.id}/approval`,
        body: { decision: 'reject', arguments_digest: op.digest },
      };
    },
    expected: {
      'agent-a': 403,
      'approver-a': 200,
      'operator-a': 403,
      'all-a': 200,
      'agent-b': 403,
      'approver-b': 404,
      'operator-b': 403,
      none: 401,
    },
  },
  {
    name: 'POST /v1/operations/{id}/resolution',
    request: async () => ({
      method: 'POST',
      path: `/v1/operations/${(await operation('uncertain')).id}/resolution`,
      body: { outcome: 'failed', attempt: 1 },
    }),
    expected: {
      'agent-a': 403,
      'approver-a': 403,
      'operator-a': 200,
      'all-a': 200,
      'agent-b': 403,
      'approver-b': 403,
      'operator-b': 404,
      none: 401,
    },
  },
  {
    name: 'POST /v1/reconciliations',
    request: async () => {
      await operation('uncertain');
      return { method: 'POST', path: '/v1/reconciliations', body: {} };
    },
    expected: {
      'agent-a': 403,
      'approver-a': 403,
      'operator-a': 200,
      'all-a': 200,
      'agent-b': 403,
      'approver-b': 403,
      'operator-b': 200,
      none: 401,
    },
  },
  {
    name: 'GET /v1/tools',
    request: async () => ({ path: '/v1/tools' }),
    expected: {
      'agent-a': 200,
      'approver-a': 200,
      'operator-a': 200,
      'all-a': 200,
      'agent-b': 200,
      'approver-b': 200,
      'operator-b': 200,
      none: 401,
    },
  },
  {
    name: 'GET /v1/identity',
    request: async () => ({ path: '/v1/identity' }),
    expected: {
      'agent-a': 200,
      'approver-a': 200,
      'operator-a': 200,
      'all-a': 200,
      'agent-b': 200,
      'approver-b': 200,
      'operator-b': 200,
      none: 401,
    },
  },
];

const CODES: Record<number, string> = { 401: 'unauthenticated', 403: 'forbidden', 404: 'not_found' };

for (const kind of ['tokens', 'iam'] as const) {
  describe(`every route × every caller (${kind === 'tokens' ? 'bearer tokens' : 'IAM principals'})`, () => {
    for (const route of ROUTES) {
      it(`${route.name}: ${CALLERS.map((c) => `${c} ${route.expected[c]}`).join(', ')}`, async () => {
        const call = caller(kind);
        for (const who of CALLERS) {
          const res = await call(who, await route.request());
          const want = route.expected[who];
          expect(res.status, `${who}: ${JSON.stringify(res.body)}`).toBe(want);
          if (want >= 400) expect(res.body.code, who).toBe(CODES[want]);
          // A refusal carries nothing of the operation; only include=arguments shows the arguments.
          if (res.status >= 400) expect(JSON.stringify(res.body), who).not.toContain('secret-target');
          if (res.status === 200 && route.name.startsWith('GET /v1/operations/{id}')) {
            expect('arguments' in res.body, who).toBe(route.name.includes('include=arguments'));
          }
          if (route.name === 'GET /v1/operations' && res.status === 200) {
            // The other tenant's operator sees its own (empty) queue, never acme's.
            const listed = res.body.operations as unknown[];
            expect(listed.length > 0, who).toBe(who.endsWith('-a'));
          }
        }
      });
    }
  });
}

describe('what a refusal reveals', () => {
  it('a missing role is refused before the body or the record is looked at: garbage and unknown IDs get the same 403', async () => {
    const call = caller('tokens');
    for (const path of ['/v1/operations/nobody/approval', '/v1/operations/%ZZ/resolution']) {
      const res = await call('agent-a', { method: 'POST', path, body: '{"not json' });
      expect(res.status).toBe(403);
      expect(res.body.code).toBe('forbidden');
    }
  });

  it('an approver of another tenant cannot tell an existing operation from an unused ID', async () => {
    const call = caller('iam');
    const op = await operation('awaiting');
    const body = { decision: 'approve', arguments_digest: op.digest };
    const existing = await call('approver-b', {
      method: 'POST',
      path: `/v1/operations/${op.id}/approval`,
      body,
    });
    const unused = await call('approver-b', { method: 'POST', path: '/v1/operations/unused/approval', body });
    expect({ ...existing.body, request_id: null }).toEqual({ ...unused.body, request_id: null });
    expect((await ledger.store.get(operationKey('acme', op.id)))?.state).toBe('awaiting_approval');
  });
});
