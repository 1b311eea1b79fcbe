import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import * as classic from 'zod';
import * as mini from 'zod/mini';
import { defineTool } from '../../functions/tool-kit';
import { type TestApi, testApi } from '../http/support';
import { body, callWithId, handlerFetch, mcpClient } from '../mcp/support';
import { useDynalite } from '../support/dynalite';

/**
 * The ledger's own schemas use zod's smaller entry (`zod/mini`); a tool author's schema may be built
 * with either kind of zod. Both validate a call (a failure names the field and creates no record),
 * both normalize it before the digest (a default filled in), and both are published as JSON Schema by
 * `GET /v1/tools` and by MCP's `tools/list`.
 */

const db = useDynalite();

/** The same tool, its schema written with classic zod. */
const withClassic = defineTool({
  name: 'kinds.classic',
  description: 'A tool whose schema is classic zod',
  effect: 'write',
  schema: classic.strictObject({
    title: classic.string().min(1),
    priority: classic.number().int().default(3),
  }),
  execute: async (args) => ({ title: args.title, priority: args.priority }),
});

/** The same tool, its schema written with zod/mini. */
const withMini = defineTool({
  name: 'kinds.mini',
  description: 'A tool whose schema is zod/mini',
  effect: 'write',
  schema: mini.strictObject({
    title: mini.string().check(mini.minLength(1)),
    priority: mini._default(mini.number().check(mini.int()), 3),
  }),
  execute: async (args) => ({ title: args.title, priority: args.priority }),
});

const EXPECTED_SCHEMA = {
  type: 'object',
  properties: {
    title: { type: 'string', minLength: 1 },
    priority: { type: 'integer', default: 3 },
  },
  required: ['title'],
  additionalProperties: false,
};

let api: TestApi;
let client: Client;
beforeEach(async () => {
  api = await testApi(db.client, [withClassic, withMini]);
  client = await mcpClient('http://api.invalid/mcp', 'agent-a', handlerFetch(api.handler));
});
afterEach(async () => {
  await client.close();
});

describe('a tool schema of either kind of zod', () => {
  it('is published as the same JSON Schema by GET /v1/tools and by MCP tools/list', async () => {
    const res = await api.call({ method: 'GET', path: '/v1/tools' });
    expect(res.status).toBe(200);
    const listed = res.body.tools as { name: string; input_schema: Record<string, unknown> }[];
    for (const name of ['kinds.classic', 'kinds.mini']) {
      expect(listed.find((t) => t.name === name)?.input_schema).toMatchObject(EXPECTED_SCHEMA);
    }
    const { tools } = await client.listTools();
    for (const name of ['kinds.classic', 'kinds.mini']) {
      expect(tools.find((t) => t.name === name)?.inputSchema).toMatchObject(EXPECTED_SCHEMA);
    }
  });

  it('refuses bad arguments naming the field, with the same messages, and creates no record', async () => {
    const issues: unknown[] = [];
    for (const name of ['kinds.classic', 'kinds.mini']) {
      const res = await api.call({
        method: 'POST',
        path: '/v1/operations',
        key: `bad-${name}`,
        body: { tool: name, arguments: { title: '', priority: 1.5 } },
      });
      expect(res.status).toBe(400);
      expect(res.body.code).toBe('validation_failed');
      expect(res.body.issues).toEqual([
        { path: '$.arguments.title', message: expect.stringContaining('expected string to have >=1') },
        { path: '$.arguments.priority', message: expect.stringContaining('expected int') },
      ]);
      issues.push(res.body.issues);
    }
    // zod/mini loads no messages of its own: the English ones are set for every schema.
    expect(issues[1]).toEqual(issues[0]);
    expect(await api.recordCount()).toBe(0);
  });

  it('fills the default before the digest, so an omitted default replays the spelled-out call', async () => {
    for (const name of ['kinds.classic', 'kinds.mini']) {
      const first = await callWithId(client, name, { title: 't' }, `d-${name}`);
      expect(first.isError).toBe(false);
      expect(body(first)).toMatchObject({ state: 'succeeded', result: { title: 't', priority: 3 } });
      const spelled = await callWithId(client, name, { title: 't', priority: 3 }, `d-${name}`);
      expect(body(spelled)).toMatchObject({ state: 'succeeded', replayed: true });
    }
  });
});
