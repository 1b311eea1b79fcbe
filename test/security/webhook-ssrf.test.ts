import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { operationKey } from '../../functions/contract/keys';
import { builtinTools } from '../../functions/tools/builtin';
import { captureOutput } from '../http/support';
import { useDynalite } from '../support/dynalite';
import { startServer, type TestServer } from '../tools/tool-context';
import { startWorld, type World } from './world';

/**
 * The SSRF guard of `webhook.post` (SPEC §4), end to end through the deployed handlers: the API and
 * the SQS executor. test/tools/webhook-post.test.ts and origin-policy.test.ts prove the tool and the
 * policy on their own (allow-list matching, DNS pinning, private addresses, a 307 not followed); this
 * file proves that no route into the ledger gets around them: every redirect status to a disallowed
 * origin is a terminal outcome whose target is never hit, retries and reconciler passes do not try
 * again, disallowed URLs are refused before a record exists, and a message put on the queue directly
 * (bypassing the API's validation) cannot reach a disallowed origin either.
 */

const db = useDynalite();
let allowed: TestServer;
/** Same host, other port: not on the allow list. */
let otherPort: TestServer;
/** Another loopback address: not on the allow list. */
let otherHost: TestServer;
let world: World;
let redirectTo = '';
let redirectStatus = 302;

beforeAll(async () => {
  otherPort = await startServer((_req, res) => res.end('internal secret'));
  otherHost = await startServer((_req, res) => res.end('internal secret'), '127.0.0.2');
  allowed = await startServer((_req, res) => {
    res.writeHead(redirectStatus, { location: redirectTo });
    res.end();
  });
});

afterAll(async () => {
  await Promise.all([allowed?.close(), otherPort?.close(), otherHost?.close()]);
});

beforeEach(async () => {
  world = await startWorld(db, builtinTools, {
    TOOL_LEDGER_WORKSPACE_DIR: '/nonexistent',
    TOOL_LEDGER_WEBHOOK_ALLOW: `http://127.0.0.1:${allowed.port}`,
  });
  allowed.requests.length = 0;
  otherPort.requests.length = 0;
  otherHost.requests.length = 0;
});

afterEach(async () => {
  // Give a request that should not have been sent time to arrive before the counts are read.
  await new Promise((resolve) => setTimeout(resolve, 30));
  expect(otherPort.requests).toHaveLength(0);
  expect(otherHost.requests).toHaveLength(0);
});

let counter = 0;
function post(url: string, async = false) {
  counter += 1;
  return world.call({
    method: 'POST',
    path: '/v1/operations',
    key: `hook-${counter}`,
    body: { tool: 'webhook.post', arguments: { url, json: { n: counter } } },
    ...(async ? { headers: [['Prefer', 'respond-async']] as [string, string][] } : {}),
  });
}

const targets = () => [
  `${otherPort.origin}/internal`,
  `${otherHost.origin}/internal`,
  `http://localhost:${otherPort.port}/internal`,
  `http://[::1]:${otherPort.port}/internal`,
  'http://169.254.169.254/latest/meta-data/',
];

describe('redirects to a disallowed origin', () => {
  for (const status of [301, 302, 303, 307, 308]) {
    it(`${status}: the operation ends failed_terminal with the status, the target is never hit, and nothing retries`, async () => {
      redirectStatus = status;
      for (const target of targets()) {
        redirectTo = target;
        const first = await post(`${allowed.origin}/hook`);
        expect(first.status).toBe(201);
        expect(first.body).toMatchObject({
          state: 'failed_terminal',
          error: { code: `http_${status}`, status },
        });
        const key = `hook-${counter}`;
        // A client retry is a replay; reconciler passes have nothing to do.
        const again = await world.call({
          method: 'POST',
          path: '/v1/operations',
          key,
          body: { tool: 'webhook.post', arguments: { url: `${allowed.origin}/hook`, json: { n: counter } } },
        });
        expect(again.headers['Idempotent-Replayed']).toBe('true');
        world.advance(3_600_000);
        await captureOutput(() => world.reconcile());
      }
      expect(allowed.requests).toHaveLength(targets().length);
    });
  }

  it('the same holds on the asynchronous path: the executor records the redirect as terminal and acknowledges the message', async () => {
    redirectStatus = 302;
    redirectTo = `${otherPort.origin}/internal`;
    const accepted = await post(`${allowed.origin}/hook`, true);
    expect(accepted.status).toBe(202);
    const { result: failed } = await captureOutput(() => world.deliver());
    expect(failed).toEqual([]);
    const read = await world.call({ path: `/v1/operations/hook-${counter}` });
    expect(read.body).toMatchObject({ state: 'failed_terminal', error: { code: 'http_302' } });
    expect(allowed.requests).toHaveLength(1);
  });

  it('a relative redirect to another path of the allowed origin is not followed either', async () => {
    redirectStatus = 307;
    redirectTo = '/elsewhere';
    const res = await post(`${allowed.origin}/hook`);
    expect(res.body).toMatchObject({ state: 'failed_terminal', error: { code: 'http_307' } });
    expect(allowed.requests.map((r) => r.url)).toEqual(['/hook']);
  });
});

describe('URLs outside the allow list', () => {
  const refused = () => [
    `${otherPort.origin}/`,
    `${otherHost.origin}/`,
    `http://localhost:${allowed.port}/`,
    `https://127.0.0.1:${allowed.port}/`,
    `http://user@127.0.0.1:${allowed.port}/`,
    `http://127.0.0.1:${allowed.port}@127.0.0.1:${otherPort.port}/`,
    `http://127.0.0.1:${otherPort.port}#@127.0.0.1:${allowed.port}/`,
    `http://127.0.0.1:${otherPort.port}\\@127.0.0.1:${allowed.port}/`,
    `http://[::ffff:127.0.0.1]:${allowed.port}/`,
    `http://[::1]:${allowed.port}/`,
    `http://0.0.0.0:${allowed.port}/`,
    `http://127.0.0.2:${allowed.port}/`,
    'http://169.254.169.254/latest/meta-data/',
    `ftp://127.0.0.1:${allowed.port}/`,
    `//127.0.0.1:${allowed.port}/`,
  ];

  it('are 400 validation_failed through the API, with no record and no request anywhere', async () => {
    for (const url of refused()) {
      const res = await post(url);
      expect(res.status, url).toBe(400);
      expect(res.body.code).toBe('validation_failed');
      expect(JSON.stringify(res.body)).not.toContain(String(otherPort.port));
      expect(await world.runtime.deps.store.get(operationKey('acme', `hook-${counter}`))).toBeUndefined();
    }
    expect(allowed.requests).toHaveLength(0);
  });

  it('are refused on the queue too: a message written directly (bypassing the API) is poison and reaches nothing', async () => {
    const bodies = refused().map((url, i) =>
      JSON.stringify({
        operation_id: `direct-${i}`,
        tenant: 'acme',
        tool: 'webhook.post',
        arguments: { url, json: {} },
      }),
    );
    const { result: failed } = await captureOutput(() => world.deliver(bodies));
    expect(failed).toHaveLength(bodies.length);
    for (let i = 0; i < bodies.length; i++) {
      expect(await world.runtime.deps.store.get(operationKey('acme', `direct-${i}`))).toBeUndefined();
    }
    expect(allowed.requests).toHaveLength(0);
  });

  it('an operation queued while its origin was allowed never reaches it once the allow list no longer has it: an operator decides', async () => {
    redirectStatus = 200;
    const accepted = await post(`${allowed.origin}/hook`, true);
    expect(accepted.status).toBe(202);
    const id = `hook-${counter}`;
    const message = world.queue.messages.splice(0);
    // A new deployment whose allow list dropped the origin picks the message up.
    const shrunk = await startWorld(db, builtinTools, {
      TOOL_LEDGER_WORKSPACE_DIR: '/nonexistent',
      TOOL_LEDGER_WEBHOOK_ALLOW: `http://127.0.0.1:${otherHost.port}`,
    });
    shrunk.runtime.deps.store = world.runtime.deps.store;
    const { result: failed } = await captureOutput(() =>
      shrunk.deliver(message.map((m) => JSON.stringify(m))),
    );
    // The stored call no longer passes the tool's schema: the record goes to an operator
    // (policy_changed) instead of its message going to the DLQ while the record waits forever.
    expect(failed).toHaveLength(0);
    expect(allowed.requests).toHaveLength(0);
    expect(await world.runtime.deps.store.get(operationKey('acme', id))).toMatchObject({
      state: 'needs_reconciliation',
      outcome_code: 'policy_changed',
    });
  });
});
