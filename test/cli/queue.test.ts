import { afterEach, beforeEach, describe, expect, it } from 'vitest';
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
    expect(lines[0]).toMatch(/^ID\s+TOOL\s+STATE\s+ATTEMPT\s+AGE\s+DIGEST$/);
    expect(lines.slice(1).map((l) => l.split(/\s+/)[0])).toEqual(['u-2', 'u-1']);
    const u1 = lines[2]!.split(/\s+/);
    expect(u1).toEqual(['u-1', 'test.effect', 'uncertain', '1', '5m', first.arguments_digest.slice(0, 15)]);
    expect(stdout).not.toContain('done-1');
    expect(stdout).not.toContain('theirs');
  });

  it('filters by state, pages with a cursor (the hint goes to stderr), and says when the queue is empty', async () => {
    for (const id of ['p-1', 'p-2', 'p-3']) await uncertain(id);
    const empty = await cli.run(['list', '--state', 'needs_reconciliation']);
    expect(empty).toMatchObject({
      code: 0,
      stdout: 'no unresolved operations in state needs_reconciliation\n',
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
