import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { defineTool } from '../../functions/domain/tool';
import { type BannerStack, greeting, readyLine } from '../../functions/local/banner';
import { loadLocalSettings } from '../../functions/local/settings';
import { builtinTools } from '../../functions/tools/builtin';
import { ToolRegistry } from '../../functions/tools/registry';
import teamTools from '../fixtures/team-tools';

/** What local mode prints at start: the ready line scripts wait for, then a greeting people can paste. */

const API = 'http://127.0.0.1:3000';
/** Tokens as local mode makes them for a data folder (functions/local/local-tokens.ts). */
const MADE = {
  spec: 'tl_agentAAAA=local:agent+operator,tl_approverBBBB=local:approver',
  file: '/home/me/project/.data/tokens',
};
const made = () => loadLocalSettings({ TOOL_LEDGER_DATA_DIR: '/home/me/project/.data' }, false, MADE);
const ENV = { workspaceRoot: '/tmp/ws', webhookAllow: ['http://127.0.0.1'], local: true };

function stack(tools: ToolRegistry): BannerStack {
  return {
    apiUrl: API,
    sqsEndpoint: 'http://127.0.0.1:4001',
    dynamoEndpoint: 'http://127.0.0.1:4002',
    queues: {
      queueUrl: 'http://sqs.us-east-1.localhost:4001/000000000000/tool-ledger-work',
    } as BannerStack['queues'],
    tableName: 'tool-ledger',
    tools,
  };
}

/**
 * The greeting's curl example with the line before it (`export TOKEN=…`), run by bash with `curl`
 * replaced by a function that prints its arguments.
 */
function curlArguments(text: string, env: Record<string, string> = {}): string[] {
  const lines = text.split('\n');
  const curl = lines.findIndex((l) => l.trimStart().startsWith(`curl -i ${API}/v1/operations`));
  expect(curl).toBeGreaterThanOrEqual(1);
  const start = curl - 1;
  let end = curl;
  while (lines[end]?.endsWith('\\')) end += 1;
  const command = lines.slice(start, end + 1).join('\n');
  const script = `curl() { printf '%s\\0' "$@"; }\n${command}\n`;
  const out = execFileSync('bash', ['--norc', '--noprofile', '-c', script], {
    env: { PATH: process.env.PATH, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  }).toString('utf8');
  return out.split('\0').slice(0, -1);
}

function header(args: string[], name: string): string | undefined {
  for (let i = 0; i < args.length - 1; i += 1) {
    if (args[i] === '-H' && args[i + 1]?.toLowerCase().startsWith(`${name.toLowerCase()}:`))
      return args[i + 1];
  }
  return undefined;
}

function body(args: string[]): unknown {
  const at = args.indexOf('-d');
  expect(at).toBeGreaterThanOrEqual(0);
  return JSON.parse(args[at + 1] as string);
}

describe('the start banner', () => {
  it('prints the ready line exactly as scripts expect it', () => {
    expect(readyLine(stack(new ToolRegistry(builtinTools(ENV))))).toBe(
      'tool-ledger ready api=http://127.0.0.1:3000 sqs=http://127.0.0.1:4001 ' +
        'queue=http://sqs.us-east-1.localhost:4001/000000000000/tool-ledger-work ' +
        'dynamodb=http://127.0.0.1:4002 table=tool-ledger',
    );
  });

  it('with the tokens made for the data folder: both printed, and a write_file call a shell runs as printed', () => {
    const text = greeting(stack(new ToolRegistry(builtinTools(ENV))), made(), '/home/me/project');
    expect(text).toContain('kept in /home/me/project/.data/tokens, readable only by you');
    expect(text).toMatch(/tl_agentAAAA\s+tenant=local roles=agent\+operator/);
    expect(text).toMatch(/tl_approverBBBB\s+tenant=local roles=approver/);
    const args = curlArguments(text);
    expect(header(args, 'Authorization')).toBe('Authorization: Bearer tl_agentAAAA');
    expect(header(args, 'Idempotency-Key')).toBe('Idempotency-Key: hello-1');
    expect(body(args)).toEqual({
      tool: 'workspace.write_file',
      arguments: { path: 'hello', content: 'hello' },
    });
    // The CLI takes the data folder's token by itself: no token on its command line.
    expect(text).toContain(
      `Console (the reconciliation queue in a browser): npx tool-ledger console --endpoint ${API}\n`,
    );
    expect(text).toContain(`curl -s ${API}/v1/tools -H "Authorization: Bearer $TOKEN"`);
  });

  it('names the data folder for the CLI when it is not .data of the working folder', () => {
    const settings = loadLocalSettings({ TOOL_LEDGER_DATA_DIR: '/srv/ledger' }, false, {
      ...MADE,
      file: '/srv/ledger/tokens',
    });
    const text = greeting(stack(new ToolRegistry(builtinTools(ENV))), settings, '/home/me/project');
    expect(text).toContain(`TOOL_LEDGER_DATA_DIR=/srv/ledger npx tool-ledger console --endpoint ${API}`);
  });

  it("with the user's own tokens: none is printed, and $TOKEN sits in double quotes so the shell expands it", () => {
    const settings = loadLocalSettings({ TOOL_LEDGER_TOKENS: 's3cret-agent=acme:agent+operator' }, false);
    const text = greeting(stack(new ToolRegistry(builtinTools(ENV))), settings);
    expect(text).not.toContain('s3cret-agent');
    expect(text).toContain('-H "Authorization: Bearer $TOKEN"');
    expect(header(curlArguments(text, { TOKEN: 'from-the-shell' }), 'Authorization')).toBe(
      'Authorization: Bearer from-the-shell',
    );
    expect(text).toContain(`TOOL_LEDGER_TOKEN="$TOKEN" npx tool-ledger console --endpoint ${API}`);
    expect(text).not.toContain('--token');
  });

  it("with a team's tools module: the example names the team's write tool with arguments its schema accepts", () => {
    const registry = new ToolRegistry(teamTools(ENV));
    const args = curlArguments(greeting(stack(registry), made()));
    const call = body(args) as { tool: string; arguments: unknown };
    expect(call.tool).toBe('team.note');
    expect(registry.get('team.note').schema.safeParse(call.arguments).success).toBe(true);
  });

  it('takes the first write tool whose arguments it can fill, past reads, approvals and unfillable schemas', () => {
    const tool = (name: string, effect: 'read' | 'write', schema: z.ZodType, requiresApproval = false) =>
      defineTool({ name, description: name, effect, schema, requiresApproval, execute: async () => ({}) });
    const registry = new ToolRegistry([
      tool('team.lookup', 'read', z.object({ id: z.string() })),
      tool('team.pay', 'write', z.object({ amount: z.number().int().min(5) }), true),
      tool('team.ping', 'write', z.object({ url: z.url() })),
      tool(
        'team.quote',
        'write',
        z.strictObject({ text: z.string().refine((t) => t.includes("'")), n: z.number() }),
      ),
      tool(
        'team.tag',
        'write',
        z.object({
          kind: z.enum(["it's", 'b']),
          count: z.number().int().min(2),
          on: z.boolean(),
          note: z.string().optional(),
        }),
      ),
    ]);
    const args = curlArguments(greeting(stack(registry), made()));
    // An enum value with a single quote survives the shell's single quotes.
    expect(body(args)).toEqual({ tool: 'team.tag', arguments: { kind: "it's", count: 2, on: true } });
  });

  it('points at GET /v1/tools when no write tool can be filled in', () => {
    const registry = new ToolRegistry([
      defineTool({
        name: 'team.ping',
        description: 'pings',
        effect: 'write',
        schema: z.object({ url: z.url() }),
        execute: async () => ({}),
      }),
    ]);
    const text = greeting(stack(registry), made(), '/home/me/project');
    expect(text).not.toContain('/v1/operations \\');
    expect(text).toContain('  export TOKEN=tl_agentAAAA\n');
    expect(text).toContain(`  curl -s ${API}/v1/tools -H "Authorization: Bearer $TOKEN"`);
    expect(text).toContain(`npx tool-ledger console --endpoint ${API}`);
  });
});
