import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { OperationState } from '../../functions/domain/states';
import {
  defineTool,
  NotAppliedError,
  TerminalToolError,
  UncertainOutcomeError,
} from '../../functions/domain/tool';
import { logger } from '../../functions/observability/logger';
import { builtinTools } from '../../functions/tools/builtin';
import { captureOutput, type TestRequest } from '../http/support';
import { useDynalite } from '../support/dynalite';
import { startServer, type TestServer } from '../tools/tool-context';
import { startWorld, type World } from './world';

/**
 * SPEC §9: no argument value, result, header, tool error message or reconcile error ever reaches a log
 * line. A whole scenario set runs through the deployed handlers (API, SQS executor, reconciler) with
 * the production sinks (Powertools logger at DEBUG, EMF metrics, transition lines): synchronous and
 * asynchronous calls, approvals, conflicts, validation failures, every failure class, lease expiry,
 * reconciliation, operator resolutions, webhooks that fail in every way, malformed queue messages and an
 * unreachable ledger. Every argument and every result carries a canary; everything written to stdout
 * and stderr, and every transition line, is scanned for it.
 */

/** Every canary starts with this; the scan looks for the prefix, so a truncated value is caught too. */
const PREFIX = 'zqcanary';
let canaryCounter = 0;
/** A fresh canary, unique per use. */
function canary(label: string): string {
  canaryCounter += 1;
  return `${PREFIX}-${label}-${canaryCounter}-${randomBytes(4).toString('hex')}`;
}

type Mode =
  | 'ok'
  | 'terminal'
  | 'not_applied_once'
  | 'not_applied'
  | 'uncertain'
  | 'throw'
  | 'hang'
  | 'sanitize_throws';

/** Attempts seen per target, so `not_applied_once` fails only its first attempt. */
const attemptsByTarget = new Map<string, number>();

/**
 * A tool whose every message, error and result is made of its arguments: whatever it is asked to do,
 * the canary in `target` is in its result, its error messages and its reconcile errors.
 */
const canaryTool = defineTool({
  name: 'test.canary',
  description: 'echoes canaries back in every way a tool can',
  effect: 'write',
  targetClass: 'test',
  // Long enough that every mode starts on a busy machine (the deadline counts from the request's
  // start); only `hang` ever waits for it.
  timeoutMs: 2_000,
  maxAttempts: 2,
  schema: z
    .object({
      target: z.string(),
      mode: z.enum([
        'ok',
        'terminal',
        'not_applied_once',
        'not_applied',
        'uncertain',
        'throw',
        'hang',
        'sanitize_throws',
      ]),
    })
    .strict(),
  async execute(args, ctx) {
    const n = (attemptsByTarget.get(args.target) ?? 0) + 1;
    attemptsByTarget.set(args.target, n);
    ctx.logger.info('tool says hello', { attempt: ctx.attempt });
    switch (args.mode as Mode) {
      case 'ok':
      case 'sanitize_throws':
        return { echoed: args.target, secret: `${args.target}-result` };
      case 'terminal':
        throw new TerminalToolError('refused', `the target refused ${args.target}`, { status: 400 });
      case 'not_applied_once':
        if (n === 1) throw new NotAppliedError('refused_connect', `nothing sent for ${args.target}`);
        return { echoed: args.target };
      case 'not_applied':
        throw new NotAppliedError('refused_connect', `nothing sent for ${args.target}`);
      case 'uncertain':
        throw new UncertainOutcomeError('lost', `lost the answer for ${args.target}`);
      case 'throw':
        throw new Error(`boom ${JSON.stringify(args)}`);
      case 'hang':
        return new Promise(() => {});
    }
  },
  async reconcile(args) {
    if (args.mode === 'uncertain')
      return { status: 'applied', result: { reconciled: `${args.target}-reconciled` } };
    if (args.mode === 'throw') throw new Error(`reconcile failed for ${args.target}`);
    return { status: 'unknown' };
  },
  sanitizeResult(result, args) {
    if (args.mode === 'sanitize_throws') throw new Error(`cannot sanitize ${args.target}`);
    return result;
  },
});

const db = useDynalite();
let workspace: string;
let hooks: TestServer;
let world: World;

beforeAll(async () => {
  workspace = await mkdtemp(path.join(tmpdir(), 'tool-ledger-canary-'));
  hooks = await startServer((req, res, body) => {
    const marker = canary('webhook-response');
    const url = req.url ?? '/';
    if (url.startsWith('/ok')) {
      res.writeHead(200, { 'content-type': 'application/json', 'x-echo': marker });
      res.end(JSON.stringify({ got: body, marker }));
    } else if (url.startsWith('/fail')) {
      res.writeHead(500, { 'content-type': 'text/plain' });
      res.end(`server error ${body} ${marker}`);
    } else if (url.startsWith('/bad')) {
      res.writeHead(422, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: marker, body }));
    } else if (url.startsWith('/redirect')) {
      res.writeHead(302, { location: `http://127.0.0.1:1/${marker}` });
      res.end();
    } else {
      req.socket.destroy();
    }
  });
  world = await startWorld(db, (env) => [...builtinTools(env), canaryTool], {
    TOOL_LEDGER_WORKSPACE_DIR: workspace,
    TOOL_LEDGER_WEBHOOK_ALLOW: `http://127.0.0.1:${hooks.port}`,
    TOOL_LEDGER_RETRY_BASE_MS: '1000',
    TOOL_LEDGER_MAX_RECONCILE_CHECKS: '1',
    TOOL_LEDGER_LEASE_GRACE_MS: '200',
  });
});

afterAll(async () => {
  await hooks?.close();
  await rm(workspace, { recursive: true, force: true });
});

let keyCounter = 0;
/** What each key was sent with, so a retry can send it again byte for byte. */
const sent = new Map<string, TestRequest>();

/** Submits a call under a fresh key; returns the response and the key. */
async function submit(tool: string, args: Record<string, unknown>, extra: Partial<TestRequest> = {}) {
  keyCounter += 1;
  const key = `canary-op-${keyCounter}`;
  const request: TestRequest = {
    method: 'POST',
    path: '/v1/operations',
    key,
    body: { tool, arguments: args, agent_run_id: `run-${keyCounter}` },
    ...extra,
  };
  sent.set(key, request);
  return { key, ...(await world.call(request)) };
}

/** Sends the request of `key` again (a client retry). */
function resubmit(key: string) {
  return world.call(sent.get(key) as TestRequest);
}

/** Drives every queued or due operation: deliveries, reconciler passes, the clock moved past leases. */
async function settle(rounds = 6): Promise<void> {
  for (let i = 0; i < rounds; i++) {
    await world.deliver();
    world.advance(60_000);
    await world.reconcile();
    await world.deliver();
  }
}

describe('no argument or result value in any log line', () => {
  // One long scenario: a busy machine can take minutes; the bound is only a hang detector.
  it('across sync, async, approvals, conflicts, failures, reconciliation, resolutions, webhooks, bad messages and an unreachable ledger', {
    timeout: 180_000,
  }, async () => {
    const served: Record<string, unknown>[] = [];
    let file = '';
    const previousLevel = logger.getLevelName();
    logger.setLogLevel('DEBUG');
    const { lines } = await captureOutput(async () => {
      logger.info('capture check', { marker: 'capture-works' });

      // Synchronous calls: success (and its replay and reads), every failure class, a lost sanitize.
      const ok = await submit('test.canary', { target: canary('arg'), mode: 'ok' });
      expect(ok.status).toBe(201);
      served.push(ok.body);
      const replay = await resubmit(ok.key);
      expect(replay.headers['Idempotent-Replayed']).toBe('true');
      const withArgs = await world.call({
        path: `/v1/operations/${ok.key}`,
        token: 'operator-a',
        query: [['include', 'arguments,history']],
      });
      expect(JSON.stringify(withArgs.body)).toContain(PREFIX);
      for (const mode of [
        'terminal',
        'not_applied_once',
        'uncertain',
        'throw',
        'hang',
        'sanitize_throws',
        'not_applied',
      ]) {
        const res = await submit('test.canary', { target: canary(`arg-${mode}`), mode });
        expect([201, 202, 503], mode).toContain(res.status);
        // A client retry of the not-applied attempt runs the next attempt with the same key.
        if (mode === 'not_applied_once') expect((await resubmit(res.key)).status).toBe(201);
      }

      // Conflicts and refusals: the same key with other arguments, schema failures, unknown tools.
      const conflict = await world.call({
        method: 'POST',
        path: '/v1/operations',
        key: ok.key,
        body: { tool: 'test.canary', arguments: { target: canary('conflict'), mode: 'ok' } },
      });
      expect(conflict.status).toBe(422);
      for (const body of [
        { tool: 'test.canary', arguments: { target: 7, mode: canary('bad-mode') } },
        { tool: 'test.canary', arguments: { target: 'x', mode: 'ok', [canary('key')]: canary('value') } },
        { tool: canary('tool').slice(0, 60), arguments: { target: canary('arg') } },
        {
          tool: 'webhook.post',
          arguments: { url: `http://127.0.0.1:1/${canary('url')}`, json: canary('json') },
        },
        {
          tool: 'workspace.write_file',
          arguments: { path: `../${canary('escape')}`, content: canary('content') },
        },
      ]) {
        const res = await submit(body.tool, body.arguments as Record<string, unknown>);
        expect(res.status).toBe(400);
      }

      // Asynchronous calls through the queue, and an approval flow (approve, reject, wrong digest).
      for (const mode of ['ok', 'uncertain', 'not_applied']) {
        const res = await submit(
          'test.canary',
          { target: canary(`async-${mode}`), mode },
          { headers: [['Prefer', 'respond-async']] },
        );
        expect(res.status).toBe(202);
      }
      await world.deliver();
      const approve = await submit('workspace.delete_file', { path: `${canary('approve')}.txt` });
      expect(approve.body.state).toBe('awaiting_approval');
      const reject = await submit('workspace.delete_file', { path: `${canary('reject')}.txt` });
      const mismatch = await world.call({
        method: 'POST',
        path: `/v1/operations/${approve.key}/approval`,
        token: 'approver-a',
        body: { decision: 'approve', arguments_digest: reject.body.arguments_digest },
      });
      expect(mismatch.status).toBe(409);
      for (const [key, decision, digest] of [
        [approve.key, 'approve', approve.body.arguments_digest],
        [reject.key, 'reject', reject.body.arguments_digest],
      ]) {
        const res = await world.call({
          method: 'POST',
          path: `/v1/operations/${key}/approval`,
          token: 'approver-a',
          body: { decision, arguments_digest: digest },
        });
        expect(res.status).toBe(200);
      }
      await world.deliver();

      // Real effects: workspace files and webhooks answering in every way (with secrets in headers).
      file = canary('file');
      expect(
        (await submit('workspace.write_file', { path: `${file}.txt`, content: canary('content') })).status,
      ).toBe(201);
      expect(
        (await submit('workspace.append_line', { path: `${file}.log`, line: canary('line') })).status,
      ).toBe(201);
      for (const route of ['ok', 'fail', 'bad', 'redirect', 'reset']) {
        const res = await submit('webhook.post', {
          url: `http://127.0.0.1:${hooks.port}/${route}/${canary('path')}?q=${canary('query')}`,
          json: { secret: canary('json') },
          headers: { 'x-secret': canary('header') },
        });
        expect(res.status, route).toBeLessThan(500);
      }

      // Malformed queue messages, and a valid one for a tenant the queue is not bound to.
      const failed = await world.deliver([
        `{"operation_id":"${canary('bad-json')}"`,
        JSON.stringify({
          operation_id: 'm-1',
          tenant: 'acme',
          tool: 'test.canary',
          arguments: { target: canary('sqs'), mode: 'nope' },
        }),
        JSON.stringify({
          operation_id: 'm-2',
          tenant: 'other',
          tool: 'test.canary',
          arguments: { target: canary('sqs'), mode: 'ok' },
        }),
      ]);
      expect(failed).toHaveLength(3);

      // Leases expire, the reconciler decides, and what it cannot decide goes to an operator.
      await settle();
      const queue = await world.call({ path: '/v1/operations', token: 'operator-a' });
      const unresolved = queue.body.operations as { operation_id: string; state: string; attempt: number }[];
      expect(unresolved.length).toBeGreaterThan(0);
      for (const [i, op] of unresolved.entries()) {
        const outcome = ['applied', 'not_applied', 'failed'][i % 3];
        const body: Record<string, unknown> = { outcome, attempt: op.attempt };
        if (outcome === 'applied') body.result = { resolved: canary('resolution') };
        const res = await world.call({
          method: 'POST',
          path: `/v1/operations/${encodeURIComponent(op.operation_id)}/resolution`,
          token: 'operator-a',
          body,
        });
        expect(res.status, JSON.stringify(res.body)).toBe(200);
      }
      await settle();

      // The ledger is unreachable: the API answers 503 and the executor reports the message failed.
      const saved = world.runtime.deps.store;
      const { LedgerStore } = await import('../../functions/ledger/ledger-store');
      const { DynamoDBClient } = await import('@aws-sdk/client-dynamodb');
      world.runtime.deps.store = new LedgerStore({
        client: new DynamoDBClient({
          endpoint: 'http://127.0.0.1:9',
          region: 'us-east-1',
          credentials: { accessKeyId: 'x', secretAccessKey: 'x' },
          maxAttempts: 1,
        }),
        tableName: 'nowhere',
      });
      const down = await submit('test.canary', { target: canary('down'), mode: 'ok' });
      expect(down.status).toBe(503);
      const downFailed = await world.deliver([
        JSON.stringify({
          operation_id: 'down-1',
          tenant: 'acme',
          tool: 'test.canary',
          arguments: { target: canary('down'), mode: 'ok' },
        }),
      ]);
      expect(downFailed).toHaveLength(1);
      world.runtime.deps.store = saved;
    });
    logger.setLogLevel(previousLevel);

    // The scan is only meaningful if the capture works and the scenarios reached every state.
    const output = lines.join('');
    expect(output).toContain('capture-works');
    const states = new Set<OperationState>(world.transitions.map((t) => t.state_after));
    expect([...states].sort()).toEqual(
      [
        'awaiting_approval',
        'failed_retryable',
        'failed_terminal',
        'needs_reconciliation',
        'pending',
        'queued',
        'rejected',
        'succeeded',
        'uncertain',
      ].sort(),
    );
    expect(JSON.stringify(served)).toContain(PREFIX);
    expect(hooks.requests.length).toBeGreaterThanOrEqual(5);
    expect(await readFile(path.join(workspace, 'acme', `${file}.log`), 'utf8')).toContain(PREFIX);

    const leaks = lines.filter((line) => line.includes(PREFIX));
    expect(leaks).toEqual([]);
    expect(JSON.stringify(world.transitions)).not.toContain(PREFIX);
  });
});
