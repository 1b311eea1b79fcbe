import { existsSync } from 'node:fs';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Operation } from '../../client/api-types';
import { bearerToken } from '../../client/signer';
import { ToolLedgerClient } from '../../client/tool-ledger-client';
import { type LocalStackProcess, startLocalStack } from '../../scripts/local-stack';
import { startWebhookTarget, type WebhookTarget } from '../../scripts/webhook-target';
import { launchChromium } from './browser';
import { type RunningConsole, startConsole } from './console-process';

/**
 * The operators' console in headless Chromium, against local mode started for this file: the page is
 * driven as an operator would (links, buttons, the confirmation dialog), and what it did is checked
 * on the API and on the target, never only on the page.
 *
 * With `TOOL_LEDGER_SCREENSHOTS=1` the queue and operation tests also refresh the screenshots of docs/operators.md
 * (docs/images); without it they leave the committed files alone.
 */

const TOKENS =
  'ops-token=local:operator+approver,agent-token=local:agent,approver-token=local:approver,opsonly-token=local:operator';
const IMAGES = fileURLToPath(new URL('../../docs/images/', import.meta.url));
const SCREENSHOTS = process.env.TOOL_LEDGER_SCREENSHOTS === '1';

let dataDir: string;
let stack: LocalStackProcess;
let target: WebhookTarget;
let consoleRun: RunningConsole;
let browser: Browser;
let agent: ToolLedgerClient;
let operator: ToolLedgerClient;
let seq = 0;

function key(label: string): string {
  seq += 1;
  return `console-${label}-${seq}-${process.pid}`;
}

/** A webhook the target answers 500: the effect may have happened, so the operation is `uncertain`. */
function failingWebhook(name: string) {
  return {
    tool: 'webhook.post',
    arguments: { url: `${target.origin}/status/500/${name}`, json: { deploy: name } },
  };
}

async function uncertainOperation(
  label: string,
): Promise<{ id: string; op: Operation; body: ReturnType<typeof failingWebhook> }> {
  const id = key(label);
  const body = failingWebhook(id);
  const { operation, status } = await agent.call({ operationId: id, ...body });
  expect(status).toBe(202);
  expect(operation.state).toBe('uncertain');
  return { id, op: operation, body };
}

/** A fresh tab that has opened the printed URL (the secret moves to the tab's session storage). */
async function openConsole(): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1366, height: 860 } });
  const foreign: string[] = [];
  page.on('request', (request) => {
    if (!request.url().startsWith(`${consoleRun.origin}/`)) foreign.push(request.url());
  });
  (page as Page & { foreignRequests?: string[] }).foreignRequests = foreign;
  const listed = page.waitForResponse((r) => r.url().includes('/api/v1/operations?'));
  await page.goto(consoleRun.url);
  await listed;
  return page;
}

function foreignRequests(page: Page): string[] {
  return (page as Page & { foreignRequests?: string[] }).foreignRequests ?? [];
}

/** Opens one operation in the tab, waiting for the page's read of it. */
async function openOperation(page: Page, id: string): Promise<void> {
  const read = page.waitForResponse((r) => r.url().includes(`/api/v1/operations/${encodeURIComponent(id)}?`));
  await page.goto(`${consoleRun.origin}/#/operations/${encodeURIComponent(id)}`);
  await read;
  await expect.poll(() => page.locator('h1').textContent()).toBe(`Operation ${id}`);
}

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'tool-ledger-console-'));
  target = await startWebhookTarget();
  stack = await startLocalStack({
    dataDir,
    // The reconciler stays out of the way: the tests decide when records move.
    env: { TOOL_LEDGER_TOKENS: TOKENS, TOOL_LEDGER_RECONCILE_EVERY_MS: '3600000' },
  });
  agent = new ToolLedgerClient({ endpoint: stack.api, signer: bearerToken('agent-token') });
  operator = new ToolLedgerClient({ endpoint: stack.api, signer: bearerToken('ops-token') });
  consoleRun = await startConsole(stack.api, 'ops-token');
  browser = await launchChromium();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  if (consoleRun) expect(await consoleRun.stop()).toBe(0);
  await stack?.kill();
  await target?.close();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

// A browser, local mode and an executor share two busy cores with the other suites.
describe('the operators’ console in a browser', { timeout: 120_000 }, () => {
  it('shows an uncertain operation in the queue with its full timeline; resolving it as applied takes it out of the queue and a replay returns the resolved result', async () => {
    const { id, op, body } = await uncertainOperation('resolve');
    if (SCREENSHOTS) {
      // Company for the screenshot: an approval waiting and a second uncertain call.
      await agent.call({
        operationId: key('cleanup'),
        tool: 'workspace.delete_file',
        arguments: { path: 'old-report.txt' },
      });
      await uncertainOperation('notify');
    }
    const page = await openConsole();
    const row = page.locator(`tr[data-operation-id="${id}"]`);
    await expect.poll(() => row.count()).toBe(1);
    expect(await row.locator('.state').textContent()).toBe('uncertain');
    expect(await row.locator('td.num').first().textContent()).toBe('1');
    expect(await row.locator('td').first().textContent()).toBe('webhook.post');
    if (SCREENSHOTS) await page.screenshot({ path: join(IMAGES, 'console-queue.png') });

    const read = page.waitForResponse((r) =>
      r.url().includes(`/api/v1/operations/${encodeURIComponent(id)}?`),
    );
    await row.getByRole('link', { name: id }).click();
    await read;
    await page.getByRole('heading', { name: `Operation ${id}` }).waitFor();
    expect(await page.getByTestId('digest').textContent()).toBe(op.arguments_digest);

    // Every transition on the record, in order, and nothing else.
    const record = await getWithHistory(id);
    const history = record.history as { from: string | null; to: string; attempt: number }[];
    expect(history.map((e) => `${e.from ?? 'new'}>${e.to}`)).toEqual(['new>pending', 'pending>uncertain']);
    const items = page.getByTestId('timeline').locator('li');
    expect(await items.count()).toBe(history.length);
    expect(
      await items.evaluateAll((lis) =>
        lis.map((li) => `${li.getAttribute('data-from') || 'new'}>${li.getAttribute('data-to')}`),
      ),
    ).toEqual(history.map((e) => `${e.from ?? 'new'}>${e.to}`));
    if (SCREENSHOTS) await page.screenshot({ path: join(IMAGES, 'console-operation.png'), fullPage: true });

    expect(await page.locator('input[name="outcome"]:checked').count()).toBe(0);
    await page.getByLabel('applied: the effect happened').check();
    await page.getByLabel('Result to store').fill('{"checked": "by hand", "deploy": "seen"}');
    await page.getByRole('button', { name: 'Resolve…' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.waitFor();
    expect(await dialog.textContent()).toContain(op.arguments_digest);
    expect(await dialog.textContent()).toContain('Attempt: 1');
    const resolved = page.waitForResponse((r) => r.url().endsWith('/resolution'));
    await dialog.getByRole('button', { name: 'Resolve as applied' }).click();
    expect((await resolved).status()).toBe(200);
    await page.getByText('Done: the operation is now succeeded').waitFor();

    const listed = page.waitForResponse((r) => r.url().includes('/api/v1/operations?'));
    await page.getByRole('link', { name: '← Back to the queue' }).click();
    await listed;
    await page.locator('.summary').waitFor();
    expect(await page.locator(`tr[data-operation-id="${id}"]`).count()).toBe(0);

    const replay = await agent.call({ operationId: id, ...body });
    expect(replay.status).toBe(201);
    expect(replay.replayed).toBe(true);
    expect(replay.operation).toMatchObject({
      state: 'succeeded',
      result: { checked: 'by hand', deploy: 'seen' },
    });
    expect(target.count(`/status/500/${id}`)).toBe(1);
    expect(foreignRequests(page)).toEqual([]);
    await page.close();
  });

  it('an approval from the console lets the operation run exactly once', async () => {
    const id = key('approve');
    const name = `doomed-${id}.txt`;
    // The file is made through the API, so it lands wherever the workspace tools keep this tenant's files.
    const made = await agent.call({
      operationId: key('make'),
      tool: 'workspace.write_file',
      arguments: { path: name, content: 'bye' },
    });
    expect(made.operation.state).toBe('succeeded');
    const file = await findFile(join(dataDir, 'workspace'), name);
    const body = { tool: 'workspace.delete_file', arguments: { path: name } };
    const submitted = await agent.call({ operationId: id, ...body });
    expect(submitted.operation.state).toBe('awaiting_approval');

    const page = await openConsole();
    await openOperation(page, id);
    expect(await page.getByTestId('arguments').textContent()).toContain(name);
    await page.getByRole('button', { name: 'Approve…' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.waitFor();
    expect(await dialog.textContent()).toContain(submitted.operation.arguments_digest);
    const decided = page.waitForResponse((r) => r.url().endsWith('/approval'));
    await dialog.getByRole('button', { name: 'Approve', exact: true }).click();
    const answer = await decided;
    expect(answer.status()).toBe(200);
    expect(((await answer.json()) as Operation).state).toBe('queued');

    const done = await agent.waitFor(id, { timeoutMs: 60_000 });
    expect(done).toMatchObject({ state: 'succeeded', attempt: 1 });
    expect(done.result).toMatchObject({ deleted: true });
    expect(existsSync(file)).toBe(false);
    const history = (await getWithHistory(id)).history as { to: string }[];
    expect(history.filter((e) => e.to === 'pending')).toHaveLength(1);

    // Counting effects: a file of the same name again, and a replay of the call deletes nothing.
    await writeFile(file, 'back');
    const replay = await agent.call({ operationId: id, ...body });
    expect(replay).toMatchObject({ status: 201, replayed: true });
    expect(existsSync(file)).toBe(true);
    await page.close();
  });

  it('a stale page (the record moved on meanwhile) shows state_changed and changes nothing', async () => {
    const { id } = await uncertainOperation('stale');
    const page = await openConsole();
    await openOperation(page, id);

    // Another operator resolves it while this page still shows attempt 1, uncertain.
    const elsewhere = await operator.resolve(id, { outcome: 'failed', attempt: 1 });
    expect(elsewhere.state).toBe('failed_terminal');

    await page.getByLabel('applied: the effect happened').check();
    await page.getByLabel('Result to store').fill('{"late": true}');
    await page.getByRole('button', { name: 'Resolve…' }).click();
    const answered = page.waitForResponse((r) => r.url().endsWith('/resolution'));
    await page.getByRole('dialog').getByRole('button', { name: 'Resolve as applied' }).click();
    expect((await answered).status()).toBe(409);
    const problem = page.locator('.problem[data-code="state_changed"]');
    await problem.waitFor();
    expect(await problem.textContent()).toContain('state_changed (409): The operation changed state');
    expect(await problem.textContent()).toContain('now failed_terminal at attempt 1');

    const after = await getWithHistory(id);
    expect(after).toMatchObject({ state: 'failed_terminal', attempt: 1, result: null });
    expect((after.history as unknown[]).length).toBe(3);
    await page.close();
  });

  it('works from the keyboard, and a cancelled confirmation sends nothing; counts and tools pages read the API', async () => {
    const { id } = await uncertainOperation('keys');
    const page = await openConsole();
    const decisions: string[] = [];
    page.on('request', (request) => {
      if (request.method() === 'POST') decisions.push(request.url());
    });
    await openOperation(page, id);
    await page.getByLabel('not applied: it did not happen').focus();
    await page.keyboard.press('Space');
    await page.getByRole('button', { name: 'Resolve…' }).focus();
    await page.keyboard.press('Enter');
    await page.getByRole('dialog').waitFor();
    expect(await page.evaluate('document.activeElement && document.activeElement.id')).toBe('confirm-cancel');
    await page.keyboard.press('Escape');
    await page.getByRole('dialog').waitFor({ state: 'hidden' });
    expect(decisions).toEqual([]);
    expect(await getWithHistory(id)).toMatchObject({ state: 'uncertain', attempt: 1 });

    const counted = page.waitForResponse((r) => r.url().includes('/api/v1/operations?'));
    await page.getByRole('link', { name: 'Counts' }).click();
    await counted;
    const uncertainCount = page.locator('tr[data-state="uncertain"] td');
    await uncertainCount.waitFor();
    expect(Number(await uncertainCount.textContent())).toBeGreaterThanOrEqual(1);

    await page.getByRole('link', { name: 'Tools' }).click();
    const webhook = page.locator('section.tool', {
      has: page.getByRole('heading', { name: 'webhook.post' }),
    });
    await webhook.waitFor();
    await webhook.getByText('Arguments schema').click();
    expect(await webhook.locator('pre').textContent()).toContain('"url"');
    expect(foreignRequests(page)).toEqual([]);
    await page.close();
  });

  it('preselects no resolution: Resolve… without a choice says so and sends nothing', async () => {
    const { id } = await uncertainOperation('nochoice');
    const page = await openConsole();
    await page.locator('.summary').waitFor(); // the queue has rendered: nothing replaces the next page
    const decisions: string[] = [];
    page.on('request', (request) => {
      if (request.method() === 'POST') decisions.push(request.url());
    });
    await openOperation(page, id);
    expect(await page.locator('input[name="outcome"]').count()).toBe(3);
    expect(await page.locator('input[name="outcome"]:checked').count()).toBe(0);
    await page.getByRole('button', { name: 'Resolve…' }).click();
    const problem = page.locator('.feedback .problem[data-code="validation_failed"]');
    await problem.waitFor();
    expect(await problem.textContent()).toContain('choose what you found on the target first');
    expect(await page.getByRole('dialog').isVisible()).toBe(false);
    expect(decisions).toEqual([]);
    expect(await getWithHistory(id)).toMatchObject({ state: 'uncertain', attempt: 1 });
    await page.close();
  });

  it('says what each state means and what happens next; needs_reconciliation waits for a person', async () => {
    const { id } = await uncertainOperation('texts');
    const page = await openConsole();
    await page.locator('.summary').waitFor(); // the queue has rendered: nothing replaces the next page
    await openOperation(page, id);
    const note = await page.getByTestId('state-note').textContent();
    expect(note).toContain('The outcome of this attempt is unknown. The reconciler will check the target');
    // The page's own module, in the page (a string, so the test runner leaves its import alone).
    const notes = (await page.evaluate(`(async () => {
      const views = await import('/views.js');
      const of = (state, execution) => views.stateNote({ state, execution });
      return {
        needs: of('needs_reconciliation'),
        callerUncertain: of('uncertain', 'caller'),
        callerPending: of('pending', 'caller'),
        succeeded: of('succeeded'),
      };
    })()`)) as Record<string, string>;
    expect(notes.needs).toContain('will not try again by itself');
    expect(notes.needs).toContain('Nothing happens until a person checks the target');
    expect(notes.needs).not.toMatch(/will be reconciled|reconciler will/);
    expect(notes.callerUncertain).toContain('waits for a verdict from its caller');
    expect(notes.callerPending).toContain('Its caller holds the claim');
    expect(notes.succeeded).toContain('Final');
    // The stored error of an unknown outcome no longer promises what may not happen.
    const record = await getWithHistory(id);
    expect(JSON.stringify(record.error ?? {})).not.toContain('will be reconciled');
    await page.close();
  });

  it('offers each decision only to credentials whose roles may take it (the page asks the API who it is)', async () => {
    const { id: uncertainId } = await uncertainOperation('roles');
    const heldId = key('held');
    const held = await agent.call({
      operationId: heldId,
      tool: 'workspace.delete_file',
      arguments: { path: `never-${heldId}.txt` },
    });
    expect(held.operation.state).toBe('awaiting_approval');
    const approverConsole = await startConsole(stack.api, 'approver-token');
    const operatorConsole = await startConsole(stack.api, 'opsonly-token');
    try {
      const open = async (run: RunningConsole, id: string) => {
        const page = await browser.newPage();
        await page.goto(run.url);
        const read = page.waitForResponse((r) =>
          r.url().includes(`/api/v1/operations/${encodeURIComponent(id)}?`),
        );
        const asked = page.waitForResponse((r) => r.url().endsWith('/api/v1/identity'));
        await page.goto(`${run.origin}/#/operations/${encodeURIComponent(id)}`);
        expect((await asked).status()).toBe(200);
        await read;
        await page.getByTestId('state-note').waitFor();
        return page;
      };
      // An approver: approves, never resolves.
      let page = await open(approverConsole, uncertainId);
      expect(await page.getByRole('button', { name: 'Resolve…' }).count()).toBe(0);
      expect(await page.getByTestId('role-note').textContent()).toContain('needs the operator role');
      await page.close();
      page = await open(approverConsole, heldId);
      expect(await page.getByRole('button', { name: 'Approve…' }).count()).toBe(1);
      await page.close();
      // An operator without the approver role: resolves, never approves.
      page = await open(operatorConsole, heldId);
      expect(await page.getByRole('button', { name: 'Approve…' }).count()).toBe(0);
      expect(await page.getByRole('button', { name: 'Reject…' }).count()).toBe(0);
      expect(await page.getByTestId('role-note').textContent()).toContain('needs the approver role');
      await page.close();
      page = await open(operatorConsole, uncertainId);
      expect(await page.getByRole('button', { name: 'Resolve…' }).count()).toBe(1);
      await page.close();
      expect(await operator.get(heldId)).toMatchObject({ state: 'awaiting_approval' });
    } finally {
      expect(await approverConsole.stop()).toBe(0);
      expect(await operatorConsole.stop()).toBe(0);
    }
  });

  it('shows an operation its caller executes: who executes, the claim’s lease, the caller’s verdict in the history at its own time', async () => {
    const id = key('caller');
    const send = async (path: string, body: unknown, headers: Record<string, string> = {}) => {
      const response = await fetch(`${stack.api}${path}`, {
        method: 'POST',
        headers: { authorization: 'Bearer agent-token', 'content-type': 'application/json', ...headers },
        body: JSON.stringify(body),
      });
      return { status: response.status, body: (await response.json()) as Record<string, unknown> };
    };
    const claimed = await send(
      '/v1/operations',
      { tool: 'crm.create_contact', arguments: { name: 'Ada' }, execution: 'caller', lease_seconds: 300 },
      { 'idempotency-key': id },
    );
    expect(claimed.status).toBe(200);
    const claim = claimed.body.claim as { token: string; lease_expires_at: string };
    const page = await openConsole();
    await openOperation(page, id);
    const record = page.locator('dl.record').first();
    expect(await record.textContent()).toContain('its caller: an agent claims each attempt');
    expect(await record.textContent()).toContain(`Claim’s lease ends${claim.lease_expires_at}`);
    expect(await page.getByTestId('state-note').textContent()).toContain('Its caller holds the claim');
    // The queue says who runs each operation: this one its caller, an uncertain webhook the ledger.
    const beside = await uncertainOperation('beside-caller');
    const listed = page.waitForResponse((r) => r.url().includes('/api/v1/operations?'));
    await page.goto(`${consoleRun.origin}/#/queue`);
    await listed;
    const row = page.locator(`tr[data-operation-id="${id}"]`);
    await expect.poll(() => row.count()).toBe(1);
    expect(await row.locator('td.execution').textContent()).toBe('caller');
    expect(await page.locator(`tr[data-operation-id="${beside.id}"] td.execution`).textContent()).toBe(
      'ledger',
    );
    await openOperation(page, id);

    const path = `/v1/operations/${encodeURIComponent(id)}`;
    expect((await send(`${path}/outcome`, { token: claim.token, outcome: 'uncertain' })).status).toBe(200);
    expect(
      (await send(`${path}/reconciliation`, { attempt: 1, verdict: 'applied', result: { id: 7 } })).status,
    ).toBe(200);
    const reread = page.waitForResponse((r) =>
      r.url().includes(`/api/v1/operations/${encodeURIComponent(id)}?`),
    );
    await page.reload();
    await reread;
    await page.getByTestId('verdict').waitFor();
    const history = (await getWithHistory(id)).history as {
      to: string;
      at: string;
      by: string;
      code?: string;
    }[];
    expect(history.map((e) => e.to)).toEqual(['pending', 'uncertain', 'succeeded']);
    const items = page.getByTestId('timeline').locator('li');
    expect(
      await items.locator('time').evaluateAll((ts) => ts.map((t) => t.getAttribute('datetime'))),
    ).toEqual(history.map((e) => e.at));
    expect(await page.getByTestId('verdict').textContent()).toContain(
      'the caller’s verdict: the effect happened',
    );
    expect(await items.last().textContent()).toContain('verdict_applied');
    expect(await record.textContent()).toContain('checked the target and gave its caller’s verdict');
    await page.close();
  });

  it('refuses requests without the secret, with a wrong one, from another Origin or with another Host', async () => {
    const path = '/api/v1/operations';
    expect(await raw(path, {})).toMatchObject({ status: 401, code: 'unauthenticated' });
    expect(await raw(path, { 'x-tool-ledger-console': 'not-the-secret' })).toMatchObject({ status: 401 });
    const secret = { 'x-tool-ledger-console': consoleRun.secret };
    expect(await raw(path, secret)).toMatchObject({ status: 200 });
    expect(await raw(path, { ...secret, origin: 'http://evil.example' })).toMatchObject({
      status: 403,
      code: 'forbidden',
    });
    expect(await raw(path, { ...secret, origin: stack.api })).toMatchObject({
      status: 403,
      code: 'forbidden',
    });
    // DNS rebinding: the browser believes it talks to the attacker's name and says so in Host.
    const port = new URL(consoleRun.origin).port;
    expect(await raw(path, { ...secret, host: `rebind.evil.example:${port}` })).toMatchObject({
      status: 403,
    });
    expect(await raw('/', { host: `rebind.evil.example:${port}` })).toMatchObject({ status: 403 });
    expect(await raw(path, { ...secret, 'sec-fetch-site': 'cross-site' })).toMatchObject({ status: 403 });
    // Only the console's own calls are forwarded, whatever the secret.
    expect(await raw('/api/v1/reconciliations', secret, 'POST')).toMatchObject({
      status: 404,
      code: 'not_found',
    });
    expect(await raw(path, secret, 'POST')).toMatchObject({ status: 405 });
  });

  it('a page on another origin cannot drive the forwarder, even knowing the secret', async () => {
    const { id } = await uncertainOperation('evil');
    const evil = await serveOtherPage();
    try {
      const page = await browser.newPage();
      await page.goto(evil.url);
      const results = await page.evaluate(
        async ({ url, secret }) => {
          const body = JSON.stringify({ outcome: 'applied', attempt: 1 });
          const attempts: string[] = [];
          const tries: RequestInit[] = [
            // Needs a preflight (custom header, JSON): the console never allows one.
            {
              method: 'POST',
              headers: { 'x-tool-ledger-console': secret, 'content-type': 'application/json' },
              body,
            },
            // A "simple" request goes out without a preflight: the console refuses it by its Origin.
            { method: 'POST', headers: { 'content-type': 'text/plain' }, body },
            { method: 'POST', mode: 'no-cors', body },
          ];
          for (const init of tries) {
            try {
              const response = await fetch(url, init);
              attempts.push(`answered ${response.type}`);
            } catch (error) {
              attempts.push(`blocked ${(error as Error).name}`);
            }
          }
          return attempts;
        },
        {
          url: `${consoleRun.origin}/api/v1/operations/${encodeURIComponent(id)}/resolution`,
          secret: consoleRun.secret,
        },
      );
      // The third is refused by its Origin too; its opaque answer is then withheld by
      // Cross-Origin-Resource-Policy.
      expect(results).toEqual(['blocked TypeError', 'blocked TypeError', 'blocked TypeError']);
      const after = await getWithHistory(id);
      expect(after).toMatchObject({ state: 'uncertain', attempt: 1 });
      expect((after.history as unknown[]).length).toBe(2);
      await page.close();
    } finally {
      await evil.close();
    }
  });
});

/** The one file of this name under `root`, wherever the tools keep a tenant's files. */
async function findFile(root: string, name: string): Promise<string> {
  const found = (await readdir(root, { recursive: true })).filter((entry) => entry.split('/').pop() === name);
  expect(found).toHaveLength(1);
  return join(root, found[0] as string);
}

async function getWithHistory(id: string): Promise<Record<string, unknown>> {
  const response = await fetch(`${stack.api}/v1/operations/${encodeURIComponent(id)}?include=history`, {
    headers: { authorization: 'Bearer ops-token' },
  });
  expect(response.status).toBe(200);
  return (await response.json()) as Record<string, unknown>;
}

/** One request to the console with exactly these headers (node:http, which lets a test set Host). */
function raw(
  path: string,
  headers: Record<string, string>,
  method = 'GET',
): Promise<{ status: number; code: unknown }> {
  const url = new URL(path, consoleRun.origin);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      url,
      {
        method,
        headers: { ...(method === 'POST' ? { 'content-type': 'application/json' } : {}), ...headers },
      },
      (res) => {
        let text = '';
        res.on('data', (chunk: Buffer) => {
          text += chunk.toString('utf8');
        });
        res.on('end', () => {
          let code: unknown;
          try {
            code = (JSON.parse(text) as { code?: unknown }).code;
          } catch {
            code = undefined;
          }
          resolve({ status: res.statusCode ?? 0, code });
        });
      },
    );
    req.on('error', reject);
    req.end(method === 'POST' ? '{}' : undefined);
  });
}

/** Another web page on this machine (another port of 127.0.0.1: the same site, another origin). */
async function serveOtherPage(): Promise<{ url: string; close(): Promise<void> }> {
  const server: Server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end('<!doctype html><title>elsewhere</title><p>another page</p>');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
