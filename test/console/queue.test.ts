import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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
 * The console's queue page in headless Chromium, against a local mode of its own holding 36
 * unresolved operations of two tools: 18 `webhook.post` calls left `uncertain` (three of them at
 * attempt 2) and 18 `workspace.delete_file` calls `awaiting_approval`, created alternately in two
 * batches a known instant apart. With 10 operations a page, every filter's matches are spread over
 * several API pages, so each test proves that the console searched the whole queue with the API's
 * cursor, and what every page showed is compared with the API's own listing.
 */

const TOKENS = 'ops-token=local:operator+approver,agent-token=local:agent';

let dataDir: string;
let stack: LocalStackProcess;
let target: WebhookTarget;
let consoleRun: RunningConsole;
let browser: Browser;
let agent: ToolLedgerClient;
let operator: ToolLedgerClient;

/** The queue as the API lists it, newest first. */
let queue: Operation[];
/** The newest `created_at` of the older batch (epoch ms): the age filter's dividing line. */
let olderBatchNewest: number;
/** IDs of the older batch. */
let olderBatch: Set<string>;
/** IDs of the uncertain calls at attempt 2 (the oldest webhook calls). */
let secondAttempts: Set<string>;

let seq = 0;

/** A webhook the target answers 500 (the effect may have happened): the operation is left `uncertain`. */
async function uncertainCall(id = `queue-hook-${++seq}-${process.pid}`): Promise<Operation> {
  const { operation } = await agent.call({
    operationId: id,
    tool: 'webhook.post',
    arguments: { url: `${target.origin}/status/500/${id}`, json: { id } },
  });
  expect(operation.state).toBe('uncertain');
  return operation;
}

async function approvalCall(): Promise<Operation> {
  seq += 1;
  const { operation } = await agent.call({
    operationId: `queue-delete-${seq}-${process.pid}`,
    tool: 'workspace.delete_file',
    arguments: { path: `report-${seq}.txt` },
  });
  expect(operation.state).toBe('awaiting_approval');
  return operation;
}

/** Every unresolved operation, from the API directly (at most 100; this queue holds fewer). */
async function apiQueue(): Promise<Operation[]> {
  const page = await operator.list({ limit: 100 });
  expect(page.cursor).toBeUndefined();
  return page.operations;
}

const ids = (ops: Operation[]) => ops.map((op) => op.operation_id);

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'tool-ledger-console-queue-'));
  target = await startWebhookTarget();
  stack = await startLocalStack({
    dataDir,
    // The reconciler stays out of the way: only the tests move records.
    env: { TOOL_LEDGER_TOKENS: TOKENS, TOOL_LEDGER_RECONCILE_EVERY_MS: '3600000' },
  });
  agent = new ToolLedgerClient({ endpoint: stack.api, signer: bearerToken('agent-token') });
  operator = new ToolLedgerClient({ endpoint: stack.api, signer: bearerToken('ops-token') });

  const older: Operation[] = [];
  for (let i = 0; i < 12; i++) older.push(await uncertainCall(), await approvalCall());
  // The three oldest webhook calls: resolved as not applied, then retried by the agent, which runs
  // attempt 2 and leaves it uncertain again.
  const retried = older.filter((op) => op.tool === 'webhook.post').slice(0, 3);
  for (const op of retried) {
    await operator.resolve(op.operation_id, { outcome: 'not_applied', attempt: 1 });
    expect(await uncertainCall(op.operation_id)).toMatchObject({ attempt: 2 });
  }
  const newer: Operation[] = [];
  for (let i = 0; i < 6; i++) newer.push(await uncertainCall(), await approvalCall());

  olderBatch = new Set(ids(older));
  secondAttempts = new Set(ids(retried));
  olderBatchNewest = Math.max(...older.map((op) => Date.parse(op.created_at)));
  // The age filter can tell the batches apart only if the newer one began strictly later.
  expect(Math.min(...newer.map((op) => Date.parse(op.created_at)))).toBeGreaterThan(olderBatchNewest);

  queue = await apiQueue();
  expect(queue).toHaveLength(36);
  consoleRun = await startConsole(stack.api, 'ops-token');
  browser = await launchChromium();
}, 180_000);

afterAll(async () => {
  await browser?.close();
  if (consoleRun) expect(await consoleRun.stop()).toBe(0);
  await stack?.kill();
  await target?.close();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

/** Requests each tab sent anywhere but the console (there must be none: no asset from elsewhere). */
const foreignRequests = new WeakMap<Page, string[]>();

/**
 * A tab that opened the printed URL (the secret moves into its session storage); `clock` fixes what
 * the page's `Date.now()` says.
 */
async function openConsole(clock?: number): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1366, height: 860 } });
  if (clock !== undefined) await page.clock.setFixedTime(clock);
  const foreign: string[] = [];
  page.on('request', (request) => {
    if (!request.url().startsWith(`${consoleRun.origin}/`)) foreign.push(request.url());
  });
  foreignRequests.set(page, foreign);
  const listed = page.waitForResponse((r) => r.url().includes('/api/v1/operations?'));
  await page.goto(consoleRun.url);
  await listed;
  await page.locator('#queue-summary').waitFor();
  return page;
}

/**
 * Goes to the queue with these filters (as the address holds them) and waits for its first page.
 * The queue page reads the tools first, so once that answer is in, any summary on the page is new.
 */
async function openQueue(page: Page, query: string): Promise<void> {
  const rebuilt = page.waitForResponse((r) => r.url().includes('/api/v1/tools'));
  await page.goto(`${consoleRun.origin}/#/queue?${query}`);
  await rebuilt;
  await page.locator('#queue-summary', { hasText: 'Page 1:' }).waitFor();
}

async function rows(page: Page): Promise<string[]> {
  return page
    .locator('#queue-results tbody tr')
    .evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-operation-id') ?? ''));
}

async function summary(page: Page): Promise<string> {
  return (await page.locator('#queue-summary').textContent()) ?? '';
}

/** Presses a paging button and waits for the page it leads to. */
async function press(page: Page, name: 'Next page' | 'Previous page', to: number): Promise<void> {
  await page.getByRole('button', { name }).click();
  await page.locator('#queue-summary', { hasText: `Page ${to}:` }).waitFor();
}

/** Every page from the one shown to the last, by "Next page"; the IDs of each. */
async function allPages(page: Page): Promise<string[][]> {
  const pages = [await rows(page)];
  // A queue of 36 fills at most 36 pages: a Next that led nowhere new must not loop for ever.
  while (pages.length <= 36 && (await page.getByRole('button', { name: 'Next page' }).isEnabled())) {
    await press(page, 'Next page', pages.length + 1);
    pages.push(await rows(page));
  }
  expect(await summary(page)).toContain('end of the queue');
  return pages;
}

/** Counts the page's listing requests from now on. */
function countListings(page: Page): { count(): number } {
  let n = 0;
  page.on('response', (r) => {
    if (r.url().includes('/api/v1/operations?')) n += 1;
  });
  return { count: () => n };
}

describe('the console’s queue: filters search the whole queue, pages and refresh', {
  timeout: 120_000,
}, () => {
  it('pages through the queue newest first, each operation exactly once, and back again', async () => {
    const page = await openConsole();
    await openQueue(page, 'per_page=10');
    const pages = await allPages(page);
    expect(pages.map((p) => p.length)).toEqual([10, 10, 10, 6]);
    expect(pages.flat()).toEqual(ids(queue));
    const created = pages
      .flat()
      .map((id) => Date.parse(queue.find((op) => op.operation_id === id)?.created_at ?? ''));
    expect(created).toEqual([...created].sort((a, b) => b - a));

    // Back to the first page, from the keyboard: focus stays on the button that was pressed.
    await page.getByRole('button', { name: 'Previous page' }).focus();
    for (const n of [3, 2, 1]) {
      await page.keyboard.press('Enter');
      await page.locator('#queue-summary', { hasText: `Page ${n}:` }).waitFor();
      expect(await rows(page)).toEqual(pages[n - 1]);
    }
    expect(await page.getByRole('button', { name: 'Previous page' }).isDisabled()).toBe(true);
    expect(foreignRequests.get(page)).toEqual([]);
    await page.close();
  });

  it('filters by state with the API’s own filter, over every page', async () => {
    const page = await openConsole();
    await openQueue(page, 'state=awaiting_approval&per_page=10');
    const pages = await allPages(page);
    expect(pages.map((p) => p.length)).toEqual([10, 8]);
    expect(pages.flat()).toEqual(ids(queue.filter((op) => op.state === 'awaiting_approval')));
    await page.close();
  });

  it('filters by tool across the whole queue, chosen from the keyboard, reading several API pages for one page of matches', async () => {
    const page = await openConsole();
    await openQueue(page, 'per_page=10');
    const tool = page.locator('select[name=tool]');
    await tool.focus();
    // Down the list with the arrow key, as far as webhook.post (at most past every tool).
    for (let i = 0; i < 10 && (await tool.inputValue()) !== 'webhook.post'; i++) {
      await page.keyboard.press('ArrowDown');
    }
    expect(await tool.inputValue()).toBe('webhook.post');
    await page.getByRole('button', { name: 'Apply filters' }).focus();
    const listings = countListings(page);
    const rebuilt = page.waitForResponse((r) => r.url().includes('/api/v1/tools'));
    await page.keyboard.press('Enter');
    await rebuilt;
    await page.locator('#queue-summary', { hasText: 'Page 1:' }).waitFor();
    expect(new URL(page.url()).hash).toBe('#/queue?tool=webhook.post&per_page=10');
    // Ten matches lie among the newest twenty entries, which no single read of ten holds.
    expect(listings.count()).toBeGreaterThanOrEqual(2);
    expect(await summary(page)).toMatch(
      /^Page 1: 10 matching operations, found among \d+ read from the queue/,
    );

    const pages = await allPages(page);
    expect(pages.map((p) => p.length)).toEqual([10, 8]);
    expect(pages.flat()).toEqual(ids(queue.filter((op) => op.tool === 'webhook.post')));
    await press(page, 'Previous page', 1);
    expect(await rows(page)).toEqual(pages[0]);

    // From an operation, the way back leads to the queue as it was filtered.
    const id = pages[0]?.[0] as string;
    const opened = page.waitForResponse((r) =>
      r.url().includes(`/api/v1/operations/${encodeURIComponent(id)}?`),
    );
    await page.getByRole('link', { name: id, exact: true }).click();
    await opened;
    const back = page.waitForResponse((r) => r.url().includes('/api/v1/tools'));
    await page.getByRole('link', { name: '← Back to the queue' }).click();
    await back;
    await page.locator('#queue-summary', { hasText: 'Page 1:' }).waitFor();
    expect(new URL(page.url()).hash).toBe('#/queue?tool=webhook.post&per_page=10');
    expect(await rows(page)).toEqual(pages[0]);
    await page.close();
  });

  it('filters by attempt across the whole queue', async () => {
    const page = await openConsole();
    await openQueue(page, 'attempt=2&per_page=10');
    expect(await page.locator('input[name=attempt]').inputValue()).toBe('2');
    const second = await allPages(page);
    expect(second).toHaveLength(1);
    expect(second[0]).toEqual(ids(queue.filter((op) => op.attempt >= 2)));
    expect(new Set(second[0])).toEqual(secondAttempts);

    await openQueue(page, 'attempt=1&per_page=10');
    const first = await allPages(page);
    expect(first.flat()).toEqual(ids(queue.filter((op) => op.attempt >= 1)));
    expect(first.flat()).toHaveLength(18);
    await page.close();
  });

  it('filters by age across the whole queue, alone and with a tool', async () => {
    // The browser's clock (not the test's) says a minute has passed since the older batch's newest
    // operation: the older batch is over a minute old, every operation of the newer one is not.
    const page = await openConsole(olderBatchNewest + 60_000);
    await openQueue(page, 'age=60&per_page=10');
    expect(await page.locator('select[name=age]').inputValue()).toBe('60');
    const pages = await allPages(page);
    expect(pages.map((p) => p.length)).toEqual([10, 10, 4]);
    expect(pages.flat()).toEqual(ids(queue.filter((op) => olderBatch.has(op.operation_id))));

    await openQueue(page, 'tool=workspace.delete_file&age=60&per_page=10');
    const both = await allPages(page);
    expect(both.map((p) => p.length)).toEqual([10, 2]);
    expect(both.flat()).toEqual(
      ids(queue.filter((op) => olderBatch.has(op.operation_id) && op.tool === 'workspace.delete_file')),
    );
    await page.close();
  });

  it('says when a search stopped at its bound, and keeps searching where it stopped', async () => {
    const page = await openConsole();
    // At most 10 entries a search: the three attempt-2 calls are among the oldest six of 36.
    await openQueue(page, 'attempt=2&per_page=10&scan=10');
    const notice = page.getByTestId('stopped-early');
    expect(await notice.textContent()).toContain('The search stopped after reading 10 operations');
    expect(await rows(page)).toEqual([]);
    expect(await page.locator('.empty').textContent()).toBe('No match among the operations read so far.');
    expect(await page.getByRole('button', { name: 'Next page' }).isEnabled()).toBe(true);

    let presses = 0;
    while (await notice.isVisible()) {
      presses += 1;
      await page.getByRole('button', { name: 'Keep searching (10 more)' }).focus();
      const searched = page.waitForResponse((r) => r.url().includes('/api/v1/operations?'));
      await page.keyboard.press('Enter');
      await searched;
      await page.locator('#queue-summary').waitFor();
    }
    // 10 + 10 + 10 read without a match, then the last 6 entries hold all three.
    expect(presses).toBe(3);
    expect(await rows(page)).toEqual(ids(queue.filter((op) => op.attempt >= 2)));
    expect(await summary(page)).toMatch(
      /^Page 1: 3 matching operations, found among 36 read from the queue · end of the queue/,
    );
    expect(await page.getByRole('button', { name: 'Next page' }).isDisabled()).toBe(true);
    await page.close();
  });

  it('refresh shows a new unresolved operation, and drops one resolved elsewhere', async () => {
    const page = await openConsole();
    await openQueue(page, 'tool=webhook.post&per_page=10');
    const before = await rows(page);
    expect(before).toEqual(ids(queue.filter((op) => op.tool === 'webhook.post')).slice(0, 10));

    const fresh = await uncertainCall();
    expect(await rows(page)).toEqual(before);
    await page.getByRole('button', { name: 'Refresh' }).click();
    await page.locator(`tr[data-operation-id="${fresh.operation_id}"]`).waitFor();
    expect(await rows(page)).toEqual([fresh.operation_id, ...before.slice(0, 9)]);

    // Another operator resolves one the page shows.
    const gone = before[2] as string;
    await operator.resolve(gone, { outcome: 'failed', attempt: 1 });
    await page.getByRole('button', { name: 'Refresh' }).click();
    await page.locator(`tr[data-operation-id="${gone}"]`).waitFor({ state: 'detached' });
    await page.locator('#queue-summary', { hasText: 'Page 1:' }).waitFor();
    expect(await rows(page)).toEqual([fresh.operation_id, ...before.filter((id) => id !== gone)]);
    expect(await apiQueue()).not.toContainEqual(expect.objectContaining({ operation_id: gone }));

    // One on the next page leaves the queue too: the next page still starts right after this one's
    // last operation, and across both pages every webhook call left in the queue shows exactly once.
    const hooks = () => apiQueue().then((all) => ids(all.filter((op) => op.tool === 'webhook.post')));
    const later = (await hooks())[12] as string;
    await operator.resolve(later, { outcome: 'failed', attempt: 1 });
    const shown = await rows(page);
    await press(page, 'Next page', 2);
    const second = await rows(page);
    expect(second).not.toContain(later);
    expect([...shown, ...second]).toEqual(await hooks());
    await page.close();
  });
});

/** The page's search function (a browser module without DOM), loaded as the page loads it. */
type SearchQueue = (options: {
  list: (query: { state?: string; limit: number; cursor?: string }) => Promise<{
    operations: Operation[];
    next_cursor: string | null;
  }>;
  state?: string;
  matches?: (op: Operation) => boolean;
  want: number;
  budget: number;
  from?: string;
}) => Promise<{ operations: Operation[]; next: string | null; read: number; stoppedEarly: boolean }>;

describe('the queue search, run in Node against the same API', () => {
  it('ends a page on a cursor the API issued, even when the queue changed between a read and its re-read', async () => {
    const specifier = new URL('../../cli/console/static/search.js', import.meta.url).href;
    const { searchQueue } = (await import(specifier)) as { searchQueue: SearchQueue };
    const calls: { limit: number; cursor: string | undefined }[] = [];
    let injected: string | undefined;
    const list = async (query: { limit: number; cursor?: string }) => {
      const previous = calls.at(-1);
      calls.push({ limit: query.limit, cursor: query.cursor });
      // The fault: the first re-read of a range (same cursor, fewer entries) finds the first webhook
      // call of that range resolved by another operator in between.
      if (!injected && previous && previous.cursor === query.cursor && query.limit < previous.limit) {
        const range = await operator.list({
          limit: previous.limit,
          ...(query.cursor ? { cursor: query.cursor } : {}),
        });
        const first = range.operations.find((op) => op.tool === 'webhook.post');
        injected = first?.operation_id;
        if (first) await operator.resolve(first.operation_id, { outcome: 'failed', attempt: first.attempt });
      }
      const page = await operator.list({
        limit: query.limit,
        ...(query.cursor ? { cursor: query.cursor } : {}),
      });
      return { operations: page.operations, next_cursor: page.cursor ?? null };
    };
    const hook = (op: Operation) => op.tool === 'webhook.post';
    const first = await searchQueue({ list, matches: hook, want: 5, budget: 1000 });
    expect(injected).toBeDefined();
    expect(first.operations.map((op) => op.operation_id)).not.toContain(injected);
    expect(first.operations).toHaveLength(5);
    expect(first.next).not.toBeNull();
    const rest = await searchQueue({
      list,
      matches: hook,
      want: 100,
      budget: 1000,
      from: first.next ?? undefined,
    });
    expect(rest.next).toBeNull();
    const hooks = ids((await apiQueue()).filter(hook));
    expect([...first.operations, ...rest.operations].map((op) => op.operation_id)).toEqual(hooks);
  });
});
