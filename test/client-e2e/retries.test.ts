import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearerToken, IdempotencyConflictError, operationIdFor, ToolLedgerClient } from '../../client/index';
import { type LostResponseProxy, startLostResponseProxy } from '../../scripts/demo/lost-response-proxy';
import { groupAlive, type LocalStackProcess, startLocalStack } from '../../scripts/local-stack';
import { startWebhookTarget, type WebhookTarget } from '../../scripts/webhook-target';

/**
 * The client against local mode, over HTTP only (issue 9): a retry after a lost response is answered
 * with the stored outcome, a reused operation ID surfaces as a typed conflict, and `waitFor` follows
 * an uncertain operation through the reconciler to its outcome.
 */

let stack: LocalStackProcess;
let proxy: LostResponseProxy;
let plain: WebhookTarget;
let idempotent: WebhookTarget;
let dataDir: string;
let client: ToolLedgerClient;
const run = `client-e2e-${Date.now()}`;

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'tool-ledger-client-e2e-'));
  plain = await startWebhookTarget();
  idempotent = await startWebhookTarget({ dedupeByKey: true });
  stack = await startLocalStack({
    dataDir,
    env: {
      TOOL_LEDGER_WEBHOOK_IDEMPOTENT: idempotent.origin,
      TOOL_LEDGER_RECONCILE_EVERY_MS: '200',
      TOOL_LEDGER_RETRY_BASE_MS: '100',
      TOOL_LEDGER_LEASE_GRACE_MS: '500',
    },
  });
  proxy = await startLostResponseProxy(stack.api);
  client = new ToolLedgerClient({
    endpoint: proxy.url,
    signer: bearerToken(stack.tokens.agent),
    deadlineMs: 20_000,
  });
});

afterAll(async () => {
  if (stack) {
    await stack.kill();
    expect(groupAlive(stack.pgid)).toBe(false);
  }
  await proxy?.close();
  await plain?.close();
  await idempotent?.close();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

describe('ToolLedgerClient against local mode', () => {
  it('retries after a lost response and gets the stored outcome: the line is appended once', async () => {
    const operationId = operationIdFor({ agentRunId: run, step: 1, callIndex: 0 });
    proxy.loseNextResponseFor(operationId);
    const outcome = await client.call({
      operationId,
      tool: 'workspace.append_line',
      arguments: { path: 'log/lost.txt', line: 'deployed main' },
    });
    expect(proxy.lost).toBe(1);
    expect(outcome).toMatchObject({ status: 201, replayed: true, attempts: 2 });
    expect(outcome.operation).toMatchObject({ operation_id: operationId, state: 'succeeded', attempt: 1 });
    const text = await readFile(join(dataDir, 'workspace', 'local', 'log', 'lost.txt'), 'utf8');
    expect(text).toBe('deployed main\n');
  });

  it('a lost webhook response is not posted again: one request reaches the target', async () => {
    const operationId = operationIdFor({ agentRunId: run, step: 1, callIndex: 1 });
    const path = `/ok/${run}-lost`;
    proxy.loseNextResponseFor(operationId);
    const outcome = await client.call({
      operationId,
      tool: 'webhook.post',
      arguments: { url: `${plain.origin}${path}`, json: { ref: 'main' } },
    });
    expect(outcome).toMatchObject({ replayed: true, attempts: 2 });
    expect(outcome.operation).toMatchObject({ state: 'succeeded', result: { status: 200 } });
    expect(plain.count(path)).toBe(1);
  });

  it('the same operation ID with other arguments throws IdempotencyConflictError and runs nothing', async () => {
    const operationId = operationIdFor({ agentRunId: run, step: 2, callIndex: 0 });
    const first = await client.call({
      operationId,
      tool: 'workspace.append_line',
      arguments: { path: 'log/conflict.txt', line: 'first' },
    });
    expect(first).toMatchObject({ status: 201, replayed: false });

    const second = client.call({
      operationId,
      tool: 'workspace.append_line',
      arguments: { path: 'log/conflict.txt', line: 'regenerated' },
    });
    await expect(second).rejects.toBeInstanceOf(IdempotencyConflictError);
    const error = (await second.catch((e: unknown) => e)) as IdempotencyConflictError;
    expect(error).toMatchObject({ code: 'idempotency_key_reused', status: 422, operationId });
    expect(await readFile(join(dataDir, 'workspace', 'local', 'log', 'conflict.txt'), 'utf8')).toBe(
      'first\n',
    );
    expect((await client.get(operationId)).arguments_digest).toBe(first.operation.arguments_digest);
  });

  it('waitFor follows an uncertain webhook call to its reconciled outcome, with one effect', async () => {
    // The origin dedupes on Idempotency-Key and is configured so; its first answer is a 503, which
    // leaves the outcome unknown. The reconciler may then retry with the same key.
    const operationId = operationIdFor({ agentRunId: run, step: 3, callIndex: 0 });
    const path = `/fail-once/503/${run}`;
    const outcome = await client.call({
      operationId,
      tool: 'webhook.post',
      arguments: { url: `${idempotent.origin}${path}`, json: { ref: 'main' } },
    });
    expect(outcome.status).toBe(202);
    expect(outcome.operation).toMatchObject({ state: 'uncertain', attempt: 1, error: { code: 'http_503' } });

    const settled = await client.waitFor(operationId, { timeoutMs: 15_000 });
    expect(settled).toMatchObject({ state: 'succeeded', attempt: 2, result: { status: 200 } });
    expect(idempotent.count(path)).toBe(2);
    expect(idempotent.distinctKeys(path)).toBe(1);
    expect(idempotent.effects(path)).toBe(1);

    const again = await client.call({
      operationId,
      tool: 'webhook.post',
      arguments: { url: `${idempotent.origin}${path}`, json: { ref: 'main' } },
    });
    expect(again).toMatchObject({ status: 201, replayed: true });
    expect(idempotent.count(path)).toBe(2);
  });

  it('waitFor stops at needs_reconciliation for an origin that cannot dedupe, and the operator resolves it', async () => {
    const operationId = operationIdFor({ agentRunId: run, step: 4, callIndex: 0 });
    const path = `/fail-once/503/${run}`;
    const outcome = await client.call({
      operationId,
      tool: 'webhook.post',
      arguments: { url: `${plain.origin}${path}`, json: {} },
    });
    expect(outcome.operation.state).toBe('uncertain');
    const parked = await client.waitFor(operationId, {
      timeoutMs: 15_000,
      until: ['succeeded', 'failed_terminal', 'rejected', 'needs_reconciliation'],
    });
    expect(parked).toMatchObject({ state: 'needs_reconciliation', attempt: 1 });
    expect(plain.count(path)).toBe(1);

    // The operator checked the target and found nothing applied (the 503 was scripted before the effect).
    const resolved = await client.resolve(operationId, { outcome: 'failed', attempt: 1 });
    expect(resolved.state).toBe('failed_terminal');
    expect((await client.waitFor(operationId)).state).toBe('failed_terminal');
    expect(plain.count(path)).toBe(1);
  });
});
