import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { groupAlive, type LocalStackProcess, startLocalStack } from '../../scripts/local-stack';
import { getOperation, postOperation, send, waitForOperation } from './api-client';

/**
 * Operations their caller executes, end to end through local mode (`npm start`): the same handlers on
 * dynalite and fauxqs, spoken to over HTTP only, with the deployment's caller-tool rules set in
 * `TOOL_LEDGER_CALLER_TOOLS` and the reconciler loop running on its own.
 */

const TOKENS = 'dev-token=local:agent+operator,dev-approver=local:approver,other-token=other:agent';
let stack: LocalStackProcess;
let dataDir: string;

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'tool-ledger-e2e-caller-'));
  stack = await startLocalStack({
    dataDir,
    env: {
      TOOL_LEDGER_TOKENS: TOKENS,
      TOOL_LEDGER_CALLER_TOOLS: 'crm.*,local/pay.*:approval',
      TOOL_LEDGER_RECONCILE_EVERY_MS: '200',
      TOOL_LEDGER_RETRY_BASE_MS: '60000',
    },
  });
});

afterAll(async () => {
  if (stack) {
    await stack.kill();
    expect(groupAlive(stack.pgid)).toBe(false);
  }
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

function claim(key: string, fields: Record<string, unknown> = {}, token = 'dev-token') {
  return postOperation(stack.api, {
    key,
    token,
    body: {
      tool: 'crm.create_contact',
      arguments: { email: 'a@example.com' },
      execution: 'caller',
      ...fields,
    },
  });
}

function post(key: string, suffix: string, body: unknown, token = 'dev-token') {
  return send(stack.api, `/v1/operations/${encodeURIComponent(key)}/${suffix}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
}

type Claim = { token: string; attempt: number; lease_expires_at: string; downstream_key: string };

function claimOf(res: { status: number; json: Record<string, unknown> | undefined; text: string }): Claim {
  if (res.status !== 200) throw new Error(`expected a claim, got ${res.status} ${res.text}`);
  return res.json?.claim as Claim;
}

describe('local mode carries operations their caller executes', () => {
  it('claim, heartbeat, outcome and replay over HTTP; the token is in the claim’s answer only', async () => {
    const key = `e2e-caller-${Date.now()}`;
    const c = claimOf(await claim(key, { lease_seconds: 30 }));
    expect(c.attempt).toBe(1);
    const beat = await post(key, 'lease', { token: c.token });
    expect(beat.status).toBe(200);
    const read = await getOperation(stack.api, key, 'dev-token');
    expect(read.json).toMatchObject({
      state: 'pending',
      execution: 'caller',
      downstream_key: c.downstream_key,
    });
    expect(read.text).not.toContain(c.token);
    const done = await post(key, 'outcome', { token: c.token, outcome: 'succeeded', result: { id: 'c-1' } });
    expect(done.json).toMatchObject({ state: 'succeeded', result: { id: 'c-1' } });
    const replay = await claim(key, { lease_seconds: 30 });
    expect(replay.status).toBe(201);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.json).toMatchObject({ replayed: true, result: { id: 'c-1' } });
    expect(stack.output()).not.toContain(c.token.split('.')[2]);
  });

  it('refuses names the deployment does not allow (403) or runs itself (400), and records nothing', async () => {
    const key = `e2e-refused-${Date.now()}`;
    const hr = await claim(key, { tool: 'hr.fire' });
    expect(hr.status).toBe(403);
    expect(hr.json?.code).toBe('caller_tool_not_allowed');
    const theirs = await claim(key, { tool: 'pay.refund' }, 'other-token');
    expect(theirs.status).toBe(403);
    const own = await claim(key, {
      tool: 'webhook.post',
      arguments: { url: 'http://127.0.0.1:1/x', json: {} },
    });
    expect(own.status).toBe(400);
    expect(own.json?.code).toBe('tool_executed_by_ledger');
    expect((await getOperation(stack.api, key, 'dev-token')).status).toBe(404);
  });

  it('forced approval: approved, the operation waits for its caller through reconciler passes, then its caller claims it', async () => {
    const key = `e2e-approval-${Date.now()}`;
    const reserved = await claim(key, { tool: 'pay.refund', arguments: { amount: 5 } });
    expect(reserved.status).toBe(202);
    expect(reserved.json?.state).toBe('awaiting_approval');
    const approved = await send(stack.api, `/v1/operations/${key}/approval`, {
      method: 'POST',
      headers: { authorization: 'Bearer dev-approver', 'content-type': 'application/json' },
      body: JSON.stringify({ decision: 'approve', arguments_digest: reserved.json?.arguments_digest }),
    });
    expect(approved.json?.state).toBe('queued');
    const pass = await send(stack.api, '/v1/reconciliations', {
      method: 'POST',
      headers: { authorization: 'Bearer dev-token' },
    });
    expect(pass.status).toBe(200);
    expect((await getOperation(stack.api, key, 'dev-token')).json?.state).toBe('queued');
    const c = claimOf(await claim(key, { tool: 'pay.refund', arguments: { amount: 5 } }));
    expect(c.attempt).toBe(1);
    const done = await post(key, 'outcome', { token: c.token, outcome: 'succeeded' });
    expect(done.json?.state).toBe('succeeded');
  });

  it('a caller that dies: its lease runs out, the reconciler makes it uncertain, a verdict lets the next attempt run with the same key', async () => {
    const key = `e2e-crash-${Date.now()}`;
    const first = claimOf(await claim(key, { lease_seconds: 1 }));
    await waitForOperation(stack.api, key, (op) => op.state === 'uncertain', { token: 'dev-token' });
    const verdict = await post(key, 'reconciliation', {
      attempt: 1,
      verdict: 'not_applied',
      downstream_key: first.downstream_key,
    });
    expect(verdict.json).toMatchObject({ state: 'failed_retryable', reconciled: true });
    const second = claimOf(await claim(key, { lease_seconds: 60 }));
    expect(second).toMatchObject({ attempt: 2, downstream_key: first.downstream_key });
    const late = await post(key, 'outcome', { token: first.token, outcome: 'succeeded' });
    expect(late.status).toBe(409);
    const done = await post(key, 'outcome', { token: second.token, outcome: 'succeeded' });
    expect(done.json).toMatchObject({ state: 'succeeded', attempt: 2, late_outcome: { attempt: 1 } });
  });
});
