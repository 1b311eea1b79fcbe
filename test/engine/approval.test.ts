import { beforeEach, describe, expect, it } from 'vitest';
import { operationKey } from '../../functions/contract/keys';
import { decideApproval } from '../../functions/engine/approval';
import { resolveOperation } from '../../functions/engine/resolution';
import { freshTable, useDynalite } from '../support/dynalite';
import { drive, ScriptedTool, type TestLedger, testLedger } from '../support/harness';

const db = useDynalite();
let tool: ScriptedTool;
let ledger: TestLedger;
beforeEach(async () => {
  tool = new ScriptedTool('test.guarded', { requiresApproval: true });
  ledger = testLedger(db.client, await freshTable(db.client), [tool.tool]);
});

const approve = (operationId: string, digest: string, principal = 'human-1', decision = 'approve') =>
  decideApproval(ledger.deps, ledger.req(), {
    tenant: 'acme',
    principal,
    operationId,
    decision,
    argumentsDigest: digest,
  });

describe('approval bound to the operation ID and digest', () => {
  it('the first call waits for approval and retries answer the same', async () => {
    const first = await ledger.submit({ operationId: 'a-1', arguments: { target: 'a' } });
    expect(first).toMatchObject({ kind: 'accepted' });
    expect(first.record.state).toBe('awaiting_approval');
    expect(first.record.approval_deadline).toBeGreaterThan(Date.now());
    const again = await ledger.submit({ operationId: 'a-1', arguments: { target: 'a' } });
    expect(again.record.state).toBe('awaiting_approval');
    await expect(ledger.submit({ operationId: 'a-1', arguments: { target: 'b' } })).rejects.toMatchObject({
      code: 'idempotency_key_reused',
    });
    expect(tool.starts).toHaveLength(0);
  });

  it('an approved operation runs exactly once even when approved twice and retried meanwhile', async () => {
    const first = await ledger.submit({ operationId: 'a-2', arguments: { target: 'a' } });
    const digest = first.record.arguments_digest;
    const [x, y] = await Promise.all([approve('a-2', digest), approve('a-2', digest)]);
    expect([x.changed, y.changed].sort()).toEqual([false, true]);
    expect(x.record.approval).toMatchObject({ decision: 'approve', by: 'human-1', arguments_digest: digest });
    await ledger.submit({ operationId: 'a-2', arguments: { target: 'a' } });
    await drive(ledger);
    await ledger.submit({ operationId: 'a-2', arguments: { target: 'a' } });
    expect(await ledger.store.get(operationKey('acme', 'a-2'))).toMatchObject({
      state: 'succeeded',
      attempt: 1,
    });
    expect(tool.effects).toHaveLength(1);
    expect(await approve('a-2', digest)).toMatchObject({ changed: false });
  });

  it('an approval for digest A never runs arguments B, whatever the order of calls', async () => {
    const a = await ledger.submit({ operationId: 'a-3', arguments: { target: 'A' } });
    const b = await ledger.submit({ operationId: 'a-4', arguments: { target: 'B' } });
    await expect(approve('a-3', b.record.arguments_digest)).rejects.toMatchObject({
      code: 'approval_mismatch',
    });
    await expect(ledger.submit({ operationId: 'a-3', arguments: { target: 'B' } })).rejects.toMatchObject({
      code: 'idempotency_key_reused',
    });
    await approve('a-3', a.record.arguments_digest);
    await drive(ledger);
    expect(tool.effects.map((e) => e.args)).toEqual([{ target: 'A' }]);
    expect((await ledger.store.get(operationKey('acme', 'a-4')))?.state).toBe('awaiting_approval');
  });

  it('the requester may not approve its own operation unless self-approval is allowed', async () => {
    const first = await ledger.submit({ operationId: 'a-5', arguments: { target: 'a' } });
    await expect(approve('a-5', first.record.arguments_digest, 'agent-1')).rejects.toMatchObject({
      code: 'self_approval',
    });
    ledger.deps.config.allowSelfApproval = true;
    expect(await approve('a-5', first.record.arguments_digest, 'agent-1')).toMatchObject({ changed: true });
  });

  it('the requester may always withdraw (reject) its own operation', async () => {
    const first = await ledger.submit({ operationId: 'a-9', arguments: { target: 'a' } });
    const rejected = await approve('a-9', first.record.arguments_digest, 'agent-1', 'reject');
    expect(rejected.record.state).toBe('rejected');
  });

  it('reject is final; the opposite decision afterwards is state_changed, and a retry does not run', async () => {
    const first = await ledger.submit({ operationId: 'a-6', arguments: { target: 'a' } });
    const digest = first.record.arguments_digest;
    const rejected = await approve('a-6', digest, 'human-1', 'reject');
    expect(rejected.record).toMatchObject({ state: 'rejected' });
    expect(await approve('a-6', digest, 'human-1', 'reject')).toMatchObject({ changed: false });
    await expect(approve('a-6', digest)).rejects.toMatchObject({ code: 'state_changed' });
    expect(await ledger.submit({ operationId: 'a-6', arguments: { target: 'a' } })).toMatchObject({
      kind: 'completed',
      replayed: true,
    });
    expect(tool.starts).toHaveLength(0);
  });

  it('an expired approval cannot be approved', async () => {
    const first = await ledger.submit({ operationId: 'a-7', arguments: { target: 'a' } });
    ledger.advance(86_400_000 + 1_000);
    await expect(approve('a-7', first.record.arguments_digest)).rejects.toMatchObject({
      code: 'state_changed',
    });
    await drive(ledger);
    await expect(approve('a-7', first.record.arguments_digest)).rejects.toMatchObject({
      code: 'state_changed',
    });
    expect((await ledger.store.get(operationKey('acme', 'a-7')))?.outcome_code).toBe('approval_expired');
    expect(tool.starts).toHaveLength(0);
  });

  it('bad decisions and digests are validation errors that change nothing', async () => {
    const first = await ledger.submit({ operationId: 'a-8', arguments: { target: 'a' } });
    await expect(approve('a-8', first.record.arguments_digest, 'human-1', 'maybe')).rejects.toMatchObject({
      code: 'validation_failed',
    });
    await expect(approve('a-8', 'v1:nope')).rejects.toMatchObject({ code: 'validation_failed' });
    await expect(approve('missing', first.record.arguments_digest)).rejects.toMatchObject({
      code: 'not_found',
    });
    expect((await ledger.store.get(operationKey('acme', 'a-8')))?.state).toBe('awaiting_approval');
  });
});

describe('operator resolution', () => {
  const resolve = (
    l: TestLedger,
    operationId: string,
    outcome: string,
    extra: { result?: unknown; attempt?: unknown } = {},
  ) =>
    resolveOperation(l.deps, l.req(), {
      tenant: 'acme',
      principal: 'op-1',
      operationId,
      outcome,
      attempt: 1,
      ...extra,
    });

  it('applied → succeeded with resolved_by; the same resolution again is idempotent; other states refused', async () => {
    const plain = new ScriptedTool('test.plain', { reconcile: undefined });
    const l = testLedger(db.client, await freshTable(db.client), [plain.tool]);
    plain.next({ kind: 'uncertain', code: 'timeout' });
    await l.submit({ operationId: 'r-1', arguments: { target: 'a' } });
    await drive(l);
    expect((await l.store.get(operationKey('acme', 'r-1')))?.state).toBe('needs_reconciliation');
    await expect(resolve(l, 'r-1', 'applied', { attempt: 2 })).rejects.toMatchObject({
      code: 'state_changed',
    });
    const done = await resolve(l, 'r-1', 'applied', { result: { by: 'hand' }, attempt: 1 });
    expect(done.record).toMatchObject({ state: 'succeeded', resolved_by: 'op-1', result: '{"by":"hand"}' });
    expect(await resolve(l, 'r-1', 'applied')).toMatchObject({ changed: false });
    // The same resolution again is 200 whoever repeats it; a success carries no stale error.
    const again = await resolveOperation(l.deps, l.req(), {
      tenant: 'acme',
      principal: 'op-2',
      operationId: 'r-1',
      outcome: 'applied',
      attempt: 1,
    });
    expect(again).toMatchObject({ changed: false });
    expect(done.record.error).toBeUndefined();
    await expect(resolve(l, 'r-1', 'failed')).rejects.toMatchObject({ code: 'state_changed' });
    expect(await l.submit({ operationId: 'r-1', arguments: { target: 'a' } })).toMatchObject({
      replayed: true,
    });
    expect(plain.starts).toHaveLength(1);

    await l.submit({ operationId: 'r-2', arguments: { target: 'a' } });
    await expect(resolve(l, 'r-2', 'applied')).rejects.toMatchObject({ code: 'state_changed' });
  });

  it('not_applied → failed_retryable, and the next attempt runs', async () => {
    const plain = new ScriptedTool('test.plain', { reconcile: undefined });
    const l = testLedger(db.client, await freshTable(db.client), [plain.tool]);
    plain.next({ kind: 'uncertain', code: 'timeout' });
    await l.submit({ operationId: 'r-3', arguments: { target: 'a' } });
    expect((await resolve(l, 'r-3', 'not_applied')).record.state).toBe('failed_retryable');
    await drive(l);
    expect(await l.store.get(operationKey('acme', 'r-3'))).toMatchObject({ state: 'succeeded', attempt: 2 });
  });

  it('a resolution without attempt is validation_failed naming attempt, and changes nothing', async () => {
    const plain = new ScriptedTool('test.plain', { reconcile: undefined });
    const l = testLedger(db.client, await freshTable(db.client), [plain.tool]);
    plain.next({ kind: 'uncertain', code: 'timeout' });
    await l.submit({ operationId: 'r-4', arguments: { target: 'a' } });
    const before = await l.store.get(operationKey('acme', 'r-4'));
    await expect(
      resolveOperation(l.deps, l.req(), {
        tenant: 'acme',
        principal: 'op-1',
        operationId: 'r-4',
        outcome: 'not_applied',
      } as Parameters<typeof resolveOperation>[2]),
    ).rejects.toMatchObject({ code: 'validation_failed', issues: [{ path: '$.attempt' }] });
    expect(await l.store.get(operationKey('acme', 'r-4'))).toEqual(before);
  });

  it('not_applied sent twice (a retry after a lost response) starts exactly one more attempt', async () => {
    const plain = new ScriptedTool('test.plain', { reconcile: undefined });
    const l = testLedger(db.client, await freshTable(db.client), [plain.tool]);
    plain.defaultBehaviour = { kind: 'uncertain', code: 'timeout' };
    await l.submit({ operationId: 'r-5', arguments: { target: 'a' } });
    await drive(l);
    expect(await l.store.get(operationKey('acme', 'r-5'))).toMatchObject({
      state: 'needs_reconciliation',
      attempt: 1,
    });
    const first = await resolve(l, 'r-5', 'not_applied', { attempt: 1 });
    expect(first).toMatchObject({ changed: true, record: { state: 'failed_retryable', attempt: 1 } });
    // Repeated before any worker claimed it: the same resolution of the same attempt, idempotent.
    expect(await resolve(l, 'r-5', 'not_applied', { attempt: 1 })).toMatchObject({ changed: false });
    await drive(l);
    expect(await l.store.get(operationKey('acme', 'r-5'))).toMatchObject({
      state: 'needs_reconciliation',
      attempt: 2,
    });
    // The retry arrives after the next attempt started and ended uncertain: refused, nothing started.
    await expect(resolve(l, 'r-5', 'not_applied', { attempt: 1 })).rejects.toMatchObject({
      code: 'state_changed',
    });
    await drive(l);
    expect(plain.starts.map((s) => s.attempt)).toEqual([1, 2]);
    expect(await l.store.get(operationKey('acme', 'r-5'))).toMatchObject({
      state: 'needs_reconciliation',
      attempt: 2,
    });
  });

  it('the same outcome for an earlier attempt is not a repeat: state_changed once a later attempt was resolved', async () => {
    const plain = new ScriptedTool('test.plain', { reconcile: undefined });
    const l = testLedger(db.client, await freshTable(db.client), [plain.tool]);
    plain.next({ kind: 'uncertain', code: 'timeout' });
    plain.next({ kind: 'uncertain', code: 'timeout' });
    await l.submit({ operationId: 'r-6', arguments: { target: 'a' } });
    await resolve(l, 'r-6', 'not_applied', { attempt: 1 });
    // The retry (attempt 2) is claimed and ends uncertain again, and an operator resolves it too.
    await l.submit({ operationId: 'r-6', arguments: { target: 'a' } });
    expect(await resolve(l, 'r-6', 'not_applied', { attempt: 2 })).toMatchObject({
      changed: true,
      record: { state: 'failed_retryable', attempt: 2 },
    });
    await expect(resolve(l, 'r-6', 'not_applied', { attempt: 1 })).rejects.toMatchObject({
      code: 'state_changed',
    });
    expect(plain.starts.map((s) => s.attempt)).toEqual([1, 2]);
  });
});
