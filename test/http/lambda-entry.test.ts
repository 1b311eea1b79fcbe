import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handler } from '../../functions/handlers/api';
import { freshTable, useDynalite } from '../support/dynalite';
import { parse, testContext, toEvent } from './support';

const db = useDynalite();
let workspace: string;
const saved = { ...process.env };

beforeAll(async () => {
  workspace = await mkdtemp(join(tmpdir(), 'ledger-api-'));
  Object.assign(process.env, {
    TOOL_LEDGER_LOCAL: 'true',
    TOOL_LEDGER_DYNAMODB_ENDPOINT: db.endpoint,
    TOOL_LEDGER_TABLE_NAME: await freshTable(db.client),
    TOOL_LEDGER_WORKSPACE_DIR: workspace,
    TOOL_LEDGER_TOKENS: 'entry-token=acme:agent',
  });
});
afterAll(async () => {
  process.env = saved;
  await rm(workspace, { recursive: true, force: true });
});

describe('the Lambda entry point (functions/handlers/api.ts)', () => {
  it('a configuration error is a bare 500, and the next invocation builds again', async () => {
    process.env.TOOL_LEDGER_AUTH = 'magic';
    const broken = parse(await handler(toEvent({ path: '/v1/tools', token: 'entry-token' }), testContext()));
    expect(broken.status).toBe(500);
    expect(broken.body.code).toBe('internal_error');
    expect(broken.raw.body).not.toContain('TOOL_LEDGER_AUTH');
    delete process.env.TOOL_LEDGER_AUTH;
    const tools = parse(await handler(toEvent({ path: '/v1/tools', token: 'entry-token' }), testContext()));
    expect(tools.status).toBe(200);
    expect((tools.body.tools as { name: string }[]).map((t) => t.name)).toContain('workspace.write_file');
  });

  it('runs a shipped tool end to end on the environment’s table and replays it', async () => {
    const request = {
      method: 'POST',
      path: '/v1/operations',
      token: 'entry-token',
      key: 'entry-1',
      body: { tool: 'workspace.write_file', arguments: { path: 'notes/a.txt', content: 'hello\n' } },
    };
    const first = parse(await handler(toEvent(request), testContext()));
    expect(first.status).toBe(201);
    expect(first.body.state).toBe('succeeded');
    expect(await readFile(join(workspace, 'acme', 'notes/a.txt'), 'utf8')).toBe('hello\n');
    const again = parse(await handler(toEvent(request), testContext()));
    expect(again.status).toBe(201);
    expect(again.headers['Idempotent-Replayed']).toBe('true');
  });
});
