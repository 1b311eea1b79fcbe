import { beforeEach, describe, expect, it } from 'vitest';
import { operationKey } from '../../functions/contract/keys';
import { samePrincipalForApproval } from '../../functions/domain/principal';
import { createApiHandler } from '../../functions/http/api-handler';
import { IamAuthenticator } from '../../functions/http/auth-iam';
import { freshTable, useDynalite } from '../support/dynalite';
import { ScriptedTool, type TestLedger, testLedger } from '../support/harness';
import { parse, type TestResponse, testContext, toEvent } from './support';

/**
 * Self-approval on AWS, where the principal is the SigV4 caller's ARN. A person who may assume a role
 * listed as both agent and approver picks the session name every time, so `.../Deployer/alice` and
 * `.../Deployer/bob` are one principal for the rule; the record and the approval keep the full session
 * ARN for the audit trail. Through the real API handler and IAM authenticator, on dynalite.
 */

const ACCT = '123456789012';
const session = (role: string, name: string) => `arn:aws:sts::${ACCT}:assumed-role/${role}/${name}`;
const IAM_TENANTS = JSON.stringify({
  acme: {
    agents: [`arn:aws:iam::${ACCT}:role/Deployer`, `arn:aws:iam::${ACCT}:user/carol`],
    approvers: [
      `arn:aws:iam::${ACCT}:role/Deployer`,
      `arn:aws:iam::${ACCT}:role/team/Reviewer`,
      `arn:aws:iam::${ACCT}:user/carol`,
    ],
  },
});

const db = useDynalite();
let tool: ScriptedTool;
let ledger: TestLedger;
let call: (userArn: string, path: string, body?: unknown, key?: string) => Promise<TestResponse>;

beforeEach(async () => {
  tool = new ScriptedTool('test.guarded', { requiresApproval: true });
  ledger = testLedger(db.client, await freshTable(db.client), [tool.tool]);
  const handler = createApiHandler({ deps: ledger.deps }, new IamAuthenticator(IAM_TENANTS));
  call = async (userArn, path, body, key) => {
    const event = toEvent({ path, token: null, body, ...(key ? { key } : {}) });
    (event.requestContext as { identity: { userArn: string } }).identity.userArn = userArn;
    return parse(await handler(event, testContext()));
  };
});

async function requested(id: string, by: string): Promise<string> {
  const res = await call(by, '/v1/operations', { tool: 'test.guarded', arguments: { target: id } }, id);
  expect(res.status).toBe(202);
  expect(res.body.state).toBe('awaiting_approval');
  return res.body.arguments_digest as string;
}

const approve = (id: string, digest: string, by: string) =>
  call(by, `/v1/operations/${id}/approval`, { decision: 'approve', arguments_digest: digest });

describe('self-approval through a second session name', () => {
  it('a second session of the requester’s own role is the requester: 403 self_approval, nothing queued', async () => {
    const digest = await requested('deploy-1', session('Deployer', 'alice'));
    const res = await approve('deploy-1', digest, session('Deployer', 'bob'));
    expect(res.status).toBe(403);
    expect(res.body.code).toBe('self_approval');
    const record = await ledger.store.get(operationKey('acme', 'deploy-1'));
    expect(record).toMatchObject({ state: 'awaiting_approval', requested_by: session('Deployer', 'alice') });
    expect(record?.approval).toBeUndefined();
    expect(ledger.queue.messages).toHaveLength(0);
    expect(tool.starts).toHaveLength(0);
  });

  it('another role approves, and the record keeps both full session ARNs for the audit trail', async () => {
    const digest = await requested('deploy-2', session('Deployer', 'alice'));
    const res = await approve('deploy-2', digest, session('Reviewer', 'bob'));
    expect(res.status).toBe(200);
    expect(res.body.state).toBe('queued');
    const record = await ledger.store.get(operationKey('acme', 'deploy-2'));
    expect(record?.requested_by).toBe(session('Deployer', 'alice'));
    expect(record?.approval?.by).toBe(session('Reviewer', 'bob'));
    expect(record?.history?.map((h) => h.by)).toEqual([
      session('Deployer', 'alice'),
      session('Reviewer', 'bob'),
    ]);
  });

  it('an IAM user is one principal; a role session is another, whatever its session name', async () => {
    const carol = `arn:aws:iam::${ACCT}:user/carol`;
    const digest = await requested('deploy-3', carol);
    expect((await approve('deploy-3', digest, carol)).body.code).toBe('self_approval');
    expect((await approve('deploy-3', digest, session('Deployer', 'carol'))).status).toBe(200);
  });

  it('the requester may still withdraw (reject) its operation from a second session', async () => {
    const digest = await requested('deploy-4', session('Deployer', 'alice'));
    const res = await call(session('Deployer', 'bob'), '/v1/operations/deploy-4/approval', {
      decision: 'reject',
      arguments_digest: digest,
    });
    expect(res.status).toBe(200);
    expect(res.body.state).toBe('rejected');
  });
});

describe('samePrincipalForApproval', () => {
  it('compares sessions as their role, across session names and role paths, and nothing else', () => {
    expect(samePrincipalForApproval(session('Role', 'alice'), session('Role', 'bob'))).toBe(true);
    expect(samePrincipalForApproval(session('Role', 'alice'), `arn:aws:iam::${ACCT}:role/path/Role`)).toBe(
      true,
    );
    expect(samePrincipalForApproval(session('Role', 'alice'), session('Other', 'alice'))).toBe(false);
    expect(
      samePrincipalForApproval(session('Role', 'a'), `arn:aws:sts::999999999999:assumed-role/Role/a`),
    ).toBe(false);
    expect(samePrincipalForApproval(`arn:aws:iam::${ACCT}:user/alice`, session('alice', 'x'))).toBe(false);
    expect(samePrincipalForApproval('token:0123abcd', 'token:0123abcd')).toBe(true);
    expect(samePrincipalForApproval('token:0123abcd', 'token:89abcdef')).toBe(false);
  });
});
