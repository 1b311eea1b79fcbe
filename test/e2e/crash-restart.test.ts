import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { groupAlive, type LocalStackProcess, startLocalStack } from '../../scripts/local-stack';
import { startWebhookTarget, type WebhookTarget } from '../../scripts/webhook-target';
import { getOperation, postOperation, waitForOperation } from './api-client';

/**
 * `kill -9` of the whole local stack while a webhook call is in flight, then a restart on the same
 * data folder (issue 3, SPEC §§2, 7, 10): the ledger record survives, the effect is not run again, and
 * the reconciler moves the operation on: pending → uncertain once the lease has expired →
 * needs_reconciliation, because the webhook origin is not downstream-idempotent.
 */

const ENV = { TOOL_LEDGER_LEASE_GRACE_MS: '200', TOOL_LEDGER_RECONCILE_EVERY_MS: '200' };

let target: WebhookTarget;
let dataDir: string;
const stacks: LocalStackProcess[] = [];

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'tool-ledger-e2e-crash-'));
  target = await startWebhookTarget();
});

afterAll(async () => {
  for (const stack of stacks) {
    await stack.kill();
    expect(groupAlive(stack.pgid)).toBe(false);
  }
  await target?.close();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

function transitions(stack: LocalStackProcess, id: string): string[] {
  return stack
    .stdoutLines()
    .filter((line) => line.startsWith('{') && line.includes('"operation transition"'))
    .map((line) => JSON.parse(line) as { operation_id: string; state_before?: string; state_after: string })
    .filter((line) => line.operation_id === id)
    .map((line) => `${line.state_before ?? '(none)'}->${line.state_after}`);
}

describe('crash and restart on the same data folder', () => {
  it('finds the operation after kill -9, never runs it again, and the reconciler hands it to an operator', async () => {
    const first = await startLocalStack({ dataDir, env: ENV });
    stacks.push(first);
    const id = `crash-${Date.now()}`;
    const path = `/hold/${id}`;
    const body = { tool: 'webhook.post', arguments: { url: `${target.origin}${path}`, json: { n: 1 } } };

    const inFlight = postOperation(first.api, { token: first.tokens.agent, key: id, body }).catch(
      (error: unknown) => error,
    );
    await target.waitForHit(path);
    await first.kill();
    expect(groupAlive(first.pgid)).toBe(false);
    expect(await inFlight).toBeInstanceOf(Error);

    const second = await startLocalStack({ dataDir, env: ENV });
    stacks.push(second);
    const found = await getOperation(second.api, id, second.tokens.agent);
    expect(found.status).toBe(200);
    expect(found.json).toMatchObject({ operation_id: id, attempt: 1 });
    expect(['pending', 'uncertain', 'needs_reconciliation']).toContain(found.json?.state);

    // A caller retrying with the same key is told where the operation stands; nothing runs.
    const retry = await postOperation(second.api, { token: second.tokens.agent, key: id, body });
    expect([409, 202]).toContain(retry.status);
    const conflict = await postOperation(second.api, {
      token: second.tokens.agent,
      key: id,
      body: { ...body, arguments: { ...body.arguments, json: { n: 2 } } },
    });
    expect(conflict.status).toBe(422);

    const settled = await waitForOperation(second.api, id, (op) => op.state === 'needs_reconciliation', {
      timeoutMs: 25_000,
      token: second.tokens.agent,
    });
    expect(settled).toMatchObject({ attempt: 1, replayed: false });
    expect(transitions(second, id)).toEqual(
      expect.arrayContaining(['pending->uncertain', 'uncertain->needs_reconciliation']),
    );
    expect(target.count(path)).toBe(1);

    const after = await postOperation(second.api, { token: second.tokens.agent, key: id, body });
    expect(after.status).toBe(202);
    expect(after.json?.state).toBe('needs_reconciliation');
    expect(target.count(path)).toBe(1);
  });

  it('keeps every record across a restart and stops cleanly on SIGTERM with exit code 0', async () => {
    const running = stacks.at(-1) ?? (await startLocalStack({ dataDir, env: ENV }));
    const id = `durable-${Date.now()}`;
    const created = await postOperation(running.api, {
      token: running.tokens.agent,
      key: id,
      body: { tool: 'workspace.write_file', arguments: { path: `${id}.txt`, content: 'kept' } },
    });
    expect(created.status).toBe(201);

    const status = await running.stop();
    expect(status).toEqual({ code: 0, signal: null });
    expect(groupAlive(running.pgid)).toBe(false);

    const again = await startLocalStack({ dataDir, env: ENV });
    stacks.push(again);
    const replay = await postOperation(again.api, {
      token: again.tokens.agent,
      key: id,
      body: { tool: 'workspace.write_file', arguments: { path: `${id}.txt`, content: 'kept' } },
    });
    expect(replay.status).toBe(201);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.json).toEqual({ ...created.json, replayed: true });
  });
});
