import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { submitCallerOperation } from '../../functions/engine/caller-submit';
import { useDynalite } from '../support/dynalite';
import { ScriptedTool } from '../support/harness';
import { type CliHarness, serveCli } from './support';

/**
 * `tool-ledger list`, `show`, `reconcile` and `tools`, run in-process against the real API handler
 * served over HTTP on dynalite.
 */

const db = useDynalite();
let tool: ScriptedTool;
let cli: CliHarness;

beforeEach(async () => {
  tool = new ScriptedTool('test.effect');
  cli = await serveCli(db, [tool.tool, new ScriptedTool('test.approved', { requiresApproval: true }).tool]);
});
afterEach(async () => {
  await cli.close();
});

/** Leaves an operation `uncertain` (its effect happened, the answer was lost). */
async function uncertain(id: string, target = `target-of-${id}`, tenant = 'acme') {
  tool.next({ kind: 'uncertain', code: 'reset_after_send' });
  const result = await cli.ledger.submit({ operationId: id, arguments: { target }, tenant });
  expect(result.record.state).toBe('uncertain');
  cli.ledger.advance(1_000);
  return result.record;
}

async function succeeded(id: string) {
  const result = await cli.ledger.submit({ operationId: id, arguments: { target: 'done' } });
  expect(result.record.state).toBe('succeeded');
}

describe('tool-ledger list', () => {
  it('prints the tenant’s unresolved operations newest first: id, tool, state, attempt, age, digest prefix', async () => {
    const first = await uncertain('u-1');
    await uncertain('u-2');
    await succeeded('done-1');
    await uncertain('theirs', 'x', 'other');
    cli.ledger.advance(5 * 60_000);
    const { code, stdout, stderr } = await cli.run(['list']);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    const lines = stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^ID\s+TOOL\s+STATE\s+EXECUTOR\s+ATTEMPT\s+AGE\s+DIGEST$/);
    expect(lines.slice(1).map((l) => l.split(/\s+/)[0])).toEqual(['u-2', 'u-1']);
    const u1 = lines[2]!.split(/\s+/);
    expect(u1).toEqual([
      'u-1',
      'test.effect',
      'uncertain',
      'ledger',
      '1',
      '5m',
      first.arguments_digest.slice(0, 15),
    ]);
    expect(stdout).not.toContain('done-1');
    expect(stdout).not.toContain('theirs');
  });

  it('filters by state, pages with a cursor (the hint goes to stderr), and says when the queue is empty', async () => {
    for (const id of ['p-1', 'p-2', 'p-3']) await uncertain(id);
    const empty = await cli.run(['list', '--state', 'needs_reconciliation']);
    expect(empty).toMatchObject({
      code: 0,
      stdout: 'no operations in state needs_reconciliation\n',
    });
    const page1 = await cli.run(['list', '--state', 'uncertain', '--limit', '2']);
    expect(page1.code).toBe(0);
    expect(page1.stdout).toContain('p-3');
    expect(page1.stdout).toContain('p-2');
    expect(page1.stdout).not.toContain('p-1');
    const hint = /^more: tool-ledger list --state uncertain --limit 2 --cursor (\S+)\n$/.exec(page1.stderr);
    expect(hint).not.toBeNull();
    const cursor = hint![1]!.replace(/^'|'$/g, '');
    const page2 = await cli.run(['list', '--state', 'uncertain', '--limit', '2', '--cursor', cursor]);
    expect(page2.stdout).toContain('p-1');
    expect(page2.stdout).not.toContain('p-2');
    expect(page2.stderr).toBe('');
  });

  it('--json prints {operations, cursor} with the API’s operation bodies', async () => {
    await uncertain('j-1');
    const { code, stdout } = await cli.run(['list', '--json']);
    expect(code).toBe(0);
    const body = JSON.parse(stdout) as { operations: Record<string, unknown>[]; cursor: unknown };
    expect(Object.keys(body).sort()).toEqual(['cursor', 'operations']);
    expect(body.cursor).toBeNull();
    expect(body.operations).toHaveLength(1);
    expect(body.operations[0]).toMatchObject({
      operation_id: 'j-1',
      tool: 'test.effect',
      state: 'uncertain',
      attempt: 1,
      arguments_digest: expect.stringMatching(/^v1:[0-9a-f]{64}$/),
    });
    expect(body.operations[0]).not.toHaveProperty('arguments');
  });

  it('needs the operator role: an agent token is refused with the problem code and title (exit 1)', async () => {
    const { code, stdout, stderr } = await cli.run(['list'], { token: 'agent-a' });
    expect(code).toBe(1);
    expect(stdout).toBe('');
    expect(stderr).toContain('tool-ledger: forbidden (403): Forbidden');
    expect(stderr).toContain('operator role');
  });

  it('without credentials: unauthenticated (401) with a hint about --token', async () => {
    const { code, stderr } = await cli.run(['list'], { token: null });
    expect(code).toBe(1);
    expect(stderr).toContain('unauthenticated (401)');
    expect(stderr).toContain('--token');
  });

  it('reads the token from TOOL_LEDGER_TOKEN and the endpoint from TOOL_LEDGER_ENDPOINT', async () => {
    await uncertain('env-1');
    const { code, stdout } = await cli.run(['list'], {
      token: null,
      endpoint: false,
      env: { TOOL_LEDGER_TOKEN: 'operator-a', TOOL_LEDGER_ENDPOINT: cli.endpoint },
    });
    expect(code).toBe(0);
    expect(stdout).toContain('env-1');
  });
});

describe('tool-ledger list: any state, a tool, a time window', () => {
  /** IDs in the order the table printed them. */
  const ids = (stdout: string) =>
    stdout
      .trimEnd()
      .split('\n')
      .slice(1)
      .map((l) => l.split(/\s+/)[0]);

  it('--state all lists finished operations too, newest first; a list of states keeps only those', async () => {
    await succeeded('done-1');
    cli.ledger.advance(1_000);
    await uncertain('u-1');
    await succeeded('done-2');
    const all = await cli.run(['list', '--state', 'all']);
    expect(all.code).toBe(0);
    expect(ids(all.stdout)).toEqual(['done-2', 'u-1', 'done-1']);
    const finished = await cli.run(['list', '--state', 'succeeded']);
    expect(ids(finished.stdout)).toEqual(['done-2', 'done-1']);
    const both = await cli.run(['list', '--state', 'uncertain,succeeded', '--json']);
    const body = JSON.parse(both.stdout) as { operations: { operation_id: string; state: string }[] };
    expect(body.operations.map((o) => [o.operation_id, o.state])).toEqual([
      ['done-2', 'succeeded'],
      ['u-1', 'uncertain'],
      ['done-1', 'succeeded'],
    ]);
  });

  it('--tool keeps one tool’s operations, whatever their state', async () => {
    await succeeded('effect-1');
    cli.ledger.advance(1_000);
    const held = await cli.ledger.submit({
      operationId: 'approve-1',
      tool: 'test.approved',
      arguments: { target: 'x' },
    });
    expect(held.record.state).toBe('awaiting_approval');
    const effect = await cli.run(['list', '--state', 'all', '--tool', 'test.effect']);
    expect(ids(effect.stdout)).toEqual(['effect-1']);
    const approved = await cli.run(['list', '--state', 'all', '--tool', 'test.approved']);
    expect(ids(approved.stdout)).toEqual(['approve-1']);
    const none = await cli.run(['list', '--state', 'all', '--tool', 'test.unknown']);
    expect(none).toMatchObject({ code: 0, stdout: 'no operations of tool test.unknown\n' });
  });

  it('--since and --until bound the creation time (absolute or back from now); the page hint repeats them', async () => {
    await succeeded('old-1');
    const startedAt = cli.ledger.deps.clock();
    cli.ledger.advance(3 * 3_600_000);
    await succeeded('mid-1');
    await succeeded('mid-2');
    cli.ledger.advance(30 * 60_000);
    await succeeded('new-1');
    const lastHour = await cli.run(['list', '--state', 'all', '--since', '1h']);
    expect(ids(lastHour.stdout)).toEqual(['new-1', 'mid-2', 'mid-1']);
    const until = new Date(cli.ledger.deps.clock() - 10 * 60_000).toISOString();
    const asked = cli.ledger.deps.clock();
    const window = await cli.run([
      'list',
      '--state',
      'all',
      '--since',
      '2h',
      '--until',
      until,
      '--limit',
      '1',
    ]);
    const answered = cli.ledger.deps.clock();
    expect(ids(window.stdout)).toEqual(['mid-2']);
    // The hint carries the window as absolute times, so the next page continues the same query.
    const hint =
      /^more: tool-ledger list --state all --since (\S+) --until (\S+) --limit 1 --cursor (\S+)\n$/.exec(
        window.stderr,
      );
    expect(hint?.[2]).toBe(until);
    const since = Date.parse(hint?.[1] ?? '');
    expect(since).toBeGreaterThanOrEqual(asked - 2 * 3_600_000);
    expect(since).toBeLessThanOrEqual(answered - 2 * 3_600_000);
    const next = await cli.run([
      'list',
      '--state',
      'all',
      '--since',
      hint![1]!,
      '--until',
      until,
      '--limit',
      '1',
      '--cursor',
      hint![3]!.replace(/^'|'$/g, ''),
    ]);
    expect(ids(next.stdout)).toEqual(['mid-1']);
    const before = await cli.run([
      'list',
      '--state',
      'all',
      '--until',
      new Date(startedAt + 1).toISOString(),
    ]);
    expect(ids(before.stdout)).toEqual(['old-1']);
  });

  it('shows who executes each operation: the ledger, or the caller that claimed it', async () => {
    await succeeded('ours-1');
    cli.ledger.advance(1_000);
    const out = await submitCallerOperation(cli.ledger.deps, cli.ledger.req(), {
      tenant: 'acme',
      principal: 'agent-1',
      operationId: 'theirs-1',
      tool: 'crm.create_contact',
      arguments: { name: 'Ada' },
      options: { leaseSeconds: 30 },
    });
    expect(out.kind).toBe('claimed');
    const { code, stdout } = await cli.run(['list', '--state', 'all']);
    expect(code).toBe(0);
    const rows = stdout
      .trimEnd()
      .split('\n')
      .slice(1)
      .map((l) => l.split(/\s+/).slice(0, 4));
    expect(rows).toEqual([
      ['theirs-1', 'crm.create_contact', 'pending', 'caller'],
      ['ours-1', 'test.effect', 'succeeded', 'ledger'],
    ]);
    const shown = await cli.run(['show', 'theirs-1']);
    expect(shown.stdout).toMatch(/^executed by\s+its caller/m);
    expect(shown.stdout).toMatch(/^claim until\s+\S+/m);
    expect(shown.stdout).toMatch(/^downstream key\s+\S+/m);
    expect((await cli.run(['show', 'ours-1'])).stdout).toMatch(/^executed by\s+the ledger$/m);
  });

  it.each([
    [['--state', 'done'], '--state must be unresolved, all, or states separated by commas'],
    [['--state', 'succeeded,bogus'], 'not bogus'],
    [['--state', ''], '--state must be'],
    [['--tool', 'Bad Tool'], '--tool must be a tool name'],
    [['--since', 'yesterday'], '--since must be a time with a zone'],
    [['--since', '2026-11-29T10:00:00'], '--since must be a time with a zone'],
    [['--until', '5 minutes'], '--until must be a time with a zone'],
    [['--since', '1h', '--until', '2h'], '--since must be before --until'],
  ])('refuses %j before sending anything (exit 2, a message naming the option)', async (argv, message) => {
    const before = cli.connections();
    const result = await cli.run(['list', ...(argv as string[])]);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain(message);
    expect(cli.connections()).toBe(before);
  });

  it('GET /v1/identity says who the credentials are: tenant, principal label and roles, never the token', async () => {
    const ask = async (token: string) => {
      const response = await fetch(`${cli.endpoint}/v1/identity`, {
        headers: { authorization: `Bearer ${token}` },
      });
      expect(response.status).toBe(200);
      return {
        text: await response.clone().text(),
        body: (await response.json()) as Record<string, unknown>,
      };
    };
    const operator = await ask('operator-a');
    expect(operator.body).toMatchObject({ tenant: 'acme', roles: ['operator'] });
    expect(typeof operator.body.principal).toBe('string');
    expect(operator.text).not.toContain('operator-a');
    expect((await ask('all-a')).body).toMatchObject({
      tenant: 'acme',
      roles: ['agent', 'approver', 'operator'],
    });
    expect((await ask('approver-b')).body).toMatchObject({ tenant: 'other', roles: ['approver'] });
  });

  it('the API refuses the same bad filters with 400 naming the parameter', async () => {
    for (const [query, field] of [
      ['state=done', 'state'],
      ['tool=Bad%20Tool', 'tool'],
      ['since=yesterday', 'since'],
      ['since=2026-01-02T00:00:00Z&until=2026-01-01T00:00:00Z', 'since'],
    ] as const) {
      const response = await fetch(`${cli.endpoint}/v1/operations?${query}`, {
        headers: { authorization: 'Bearer operator-a' },
      });
      expect(response.status).toBe(400);
      const problem = (await response.json()) as { code: string; issues: { path: string }[] };
      expect(problem.code).toBe('validation_failed');
      expect(problem.issues.map((e) => e.path)).toEqual([field]);
    }
  });
});

describe('tool-ledger show', () => {
  it('shows state, full digest, attempt and times, and no argument values unless asked', async () => {
    const record = await uncertain('s-1', 'very-secret-target');
    const { code, stdout } = await cli.run(['show', 's-1']);
    expect(code).toBe(0);
    expect(stdout).toMatch(/^operation\s+s-1$/m);
    expect(stdout).toMatch(/^tool\s+test\.effect$/m);
    expect(stdout).toMatch(/^state\s+uncertain$/m);
    expect(stdout).toContain(record.arguments_digest);
    expect(stdout).toMatch(/^attempt\s+1$/m);
    expect(stdout).toMatch(/^error\s+reset_after_send/m);
    expect(stdout).not.toContain('very-secret-target');
    expect(stdout).not.toContain('history');
  });

  it('--arguments shows the values to an operator; an agent asking for them is refused (403)', async () => {
    await uncertain('s-2', 'very-secret-target');
    const asked = await cli.run(['show', 's-2', '--arguments']);
    expect(asked.code).toBe(0);
    expect(asked.stdout).toMatch(/^arguments\s+\{"target":"very-secret-target"\}$/m);
    const agent = await cli.run(['show', 's-2', '--arguments'], { token: 'agent-a' });
    expect(agent.code).toBe(1);
    expect(agent.stderr).toContain('forbidden (403)');
    expect(agent.stdout).toBe('');
  });

  it('--history lists every transition with its attempt, author and code', async () => {
    await uncertain('s-3');
    const { code, stdout } = await cli.run(['show', 's-3', '--history']);
    expect(code).toBe(0);
    expect(stdout).toMatch(/^history$/m);
    expect(stdout).toMatch(/\(new\) -> pending\s+1\s+\S+/);
    expect(stdout).toMatch(/pending -> uncertain\s+1\s+\S+\s+reset_after_send/);
  });

  it('shows a resolution and an operator’s identity once resolved', async () => {
    await uncertain('s-4');
    expect((await cli.run(['resolve', 's-4', 'applied', '--yes'])).code).toBe(0);
    const { stdout } = await cli.run(['show', 's-4']);
    expect(stdout).toMatch(/^state\s+succeeded$/m);
    expect(stdout).toMatch(/^resolution\s+resolved by token:[0-9a-f]{8}$/m);
    expect(stdout).toMatch(/^completed\s+/m);
  });

  it('another tenant’s operation is not found (exit 1), exactly like an unknown ID', async () => {
    await uncertain('theirs', 'x', 'other');
    for (const id of ['theirs', 'never-used']) {
      const { code, stdout, stderr } = await cli.run(['show', id]);
      expect(code).toBe(1);
      expect(stdout).toBe('');
      expect(stderr).toContain('tool-ledger: not_found (404): Not found');
    }
  });

  it('--json prints the operation body as the API returns it, with history when asked', async () => {
    await uncertain('s-5');
    const { code, stdout } = await cli.run(['show', 's-5', '--json', '--history']);
    expect(code).toBe(0);
    const op = JSON.parse(stdout) as Record<string, unknown>;
    expect(op).toMatchObject({ operation_id: 's-5', state: 'uncertain', attempt: 1, replayed: false });
    expect(Array.isArray(op.history)).toBe(true);
  });

  it('escapes control characters a stored value could carry, so the terminal never acts on them', async () => {
    const raw = ['\u001b', '\u009b', '\u202e'];
    tool.next({ kind: 'succeed', result: { note: 'ok\u001b[2J\u009b31m\u202e' } });
    await cli.ledger.submit({ operationId: 'esc-1', arguments: { target: 'a' } });
    const text = await cli.run(['show', 'esc-1']);
    for (const c of raw) expect(text.stdout).not.toContain(c);
    expect(text.stdout).toContain('\\u001b[2J');
    const json = await cli.run(['show', 'esc-1', '--json']);
    for (const c of raw) expect(json.stdout).not.toContain(c);
    expect((JSON.parse(json.stdout) as { result: { note: string } }).result.note).toBe(
      'ok\u001b[2J\u009b31m\u202e',
    );
  });
});

describe('tool-ledger reconcile', () => {
  it("runs one pass over the caller's tenant and prints its line, then the totals; the operations are settled", async () => {
    await uncertain('r-1');
    await uncertain('r-2');
    cli.ledger.advance(10 * 60_000);
    const { code, stdout, stderr } = await cli.run(['reconcile']);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    const lines = stdout.trimEnd().split('\n');
    expect(lines).toEqual([
      'shard tenant: read 2, acted 2',
      'pass done: read 2 in 1 page, acted on 2, skipped 0 (reconciled_applied 2)',
    ]);
    for (const id of ['r-1', 'r-2']) {
      expect((await cli.run(['show', id])).stdout).toMatch(/^state\s+succeeded$/m);
    }
    expect(tool.starts).toHaveLength(2);
  });

  it('--json prints {shards, read, pages, actions, skipped, deferred, complete}', async () => {
    const { code, stdout } = await cli.run(['reconcile', '--json']);
    expect(code).toBe(0);
    const report = JSON.parse(stdout) as Record<string, unknown>;
    expect(Object.keys(report).sort()).toEqual([
      'actions',
      'complete',
      'deferred',
      'pages',
      'read',
      'shards',
      'skipped',
    ]);
    expect(report.shards).toEqual([{ shard: 'tenant', read: 0, acted: 0 }]);
    expect(report.complete).toBe(true);
  });

  it('an agent or approver cannot run a pass (403, exit 1) and nothing changes', async () => {
    await uncertain('r-3');
    cli.ledger.advance(10 * 60_000);
    for (const token of ['agent-a', 'approver-a']) {
      const { code, stderr } = await cli.run(['reconcile'], { token });
      expect(code).toBe(1);
      expect(stderr).toContain('forbidden (403)');
    }
    expect((await cli.run(['show', 'r-3'])).stdout).toMatch(/^state\s+uncertain$/m);
  });
});

describe('tool-ledger tools', () => {
  it('prints the tools with effect, approval, timeout and attempts; --json adds the schemas', async () => {
    const { code, stdout } = await cli.run(['tools'], { token: 'agent-a' });
    expect(code).toBe(0);
    expect(stdout).toMatch(/^NAME\s+EFFECT\s+APPROVAL\s+TIMEOUT\s+ATTEMPTS\s+DESCRIPTION$/m);
    expect(stdout).toMatch(/^test\.effect\s+write\s+-\s+10s\s+3\s+a scripted effect for tests$/m);
    expect(stdout).toMatch(/^test\.approved\s+write\s+required\s+10s\s+3\s+/m);
    const json = await cli.run(['tools', '--json']);
    const body = JSON.parse(json.stdout) as { tools: Record<string, unknown>[] };
    expect(body.tools.map((t) => t.name)).toEqual(['test.effect', 'test.approved']);
    expect(body.tools[0]).toMatchObject({
      effect: 'write',
      requires_approval: false,
      input_schema: expect.any(Object),
    });
  });
});
