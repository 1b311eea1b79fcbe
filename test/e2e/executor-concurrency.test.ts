import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { groupAlive, type LocalStackProcess, startLocalStack } from '../../scripts/local-stack';
import { startWebhookTarget, type WebhookTarget } from '../../scripts/webhook-target';
import { getOperation, postOperation, waitForOperation } from './api-client';

/**
 * Local mode runs several executors at once (`TOOL_LEDGER_EXECUTOR_CONCURRENCY`, the construct's
 * reserved concurrency by default), as the SQS event source keeps several invocations running: a
 * slow tool holds up its own batch, not every call queued after it.
 */

let stack: LocalStackProcess;
let target: WebhookTarget;
let dataDir: string;

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'tool-ledger-e2e-executors-'));
  target = await startWebhookTarget();
  stack = await startLocalStack({ dataDir, env: { TOOL_LEDGER_EXECUTOR_CONCURRENCY: '2' } });
});

afterAll(async () => {
  if (stack) {
    await stack.kill();
    expect(groupAlive(stack.pgid)).toBe(false);
  }
  await target?.close();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

function queued(id: string, path: string) {
  return postOperation(stack.api, {
    token: stack.tokens.agent,
    key: id,
    body: { tool: 'webhook.post', arguments: { url: `${target.origin}${path}`, json: {} } },
    headers: { prefer: 'respond-async' },
  });
}

describe('local mode with two executors', () => {
  it('runs a call queued behind a slow one while the slow one still holds its executor', async () => {
    const slow = `slow-${Date.now()}`;
    const fast = `fast-${Date.now()}`;
    expect((await queued(slow, `/hold/${slow}`)).status).toBe(202);
    // One executor is now inside the slow call, and stays there until the target is released.
    await target.waitForHit(`/hold/${slow}`);

    expect((await queued(fast, `/ok/${fast}`)).status).toBe(202);
    const done = await waitForOperation(stack.api, fast, (op) => op.state === 'succeeded', {
      token: stack.tokens.agent,
    });
    expect(done).toMatchObject({ attempt: 1, replayed: false });
    expect((await getOperation(stack.api, slow, stack.tokens.agent)).json).toMatchObject({
      state: 'pending',
      attempt: 1,
    });

    target.release(slow);
    await waitForOperation(stack.api, slow, (op) => op.state === 'succeeded', { token: stack.tokens.agent });
    expect(target.count(`/hold/${slow}`)).toBe(1);
    expect(target.count(`/ok/${fast}`)).toBe(1);
  });
});
