import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { useDynalite } from '../support/dynalite';
import { ScriptedTool } from '../support/harness';
import { type CliHarness, serveCli } from './support';

/**
 * The CLI's decisions: `resolve` (operators) and `approve` / `reject` (approvers), against the real API
 * handler served over HTTP on dynalite. Each refusal is checked on the record too: the CLI's exit code
 * and message must match what actually happened.
 */

const db = useDynalite();
let tool: ScriptedTool;
let approvalTool: ScriptedTool;
let cli: CliHarness;

beforeEach(async () => {
  tool = new ScriptedTool('test.effect');
  approvalTool = new ScriptedTool('test.approved', { requiresApproval: true });
  cli = await serveCli(db, [tool.tool, approvalTool.tool]);
});
afterEach(async () => {
  await cli.close();
});

async function uncertain(id: string, tenant = 'acme') {
  tool.next({ kind: 'uncertain', code: 'reset_after_send' });
  const { record } = await cli.ledger.submit({ operationId: id, arguments: { target: id }, tenant });
  expect(record.state).toBe('uncertain');
  return record;
}

/** An operation awaiting approval, requested by an agent of `tenant`; returns its digest. */
async function awaiting(id: string, target = 'to-delete', tenant = 'acme'): Promise<string> {
  const { record } = await cli.ledger.submit({
    operationId: id,
    tool: 'test.approved',
    arguments: { target },
    tenant,
  });
  expect(record.state).toBe('awaiting_approval');
  return record.arguments_digest;
}

async function stateOf(id: string, tenant = 'acme'): Promise<string> {
  const record = await cli.ledger.store.get({ pk: `${tenant}#${id}`, sk: 'op' });
  return record?.state ?? 'absent';
}

describe('tool-ledger resolve', () => {
  it('applied, with a result and the attempt checked: the operation succeeds, resolved by the operator', async () => {
    await uncertain('res-1');
    const { code, stdout, stderr } = await cli.run([
      'resolve',
      'res-1',
      'applied',
      '--result',
      '{"checked":"by hand"}',
      '--attempt',
      '1',
    ]);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    // The operation as it stood is shown first, then the verdict.
    expect(stdout).toMatch(/^attempt\s+1$/m);
    expect(stdout).toMatch(
      /\nresolved: res-1 is now succeeded, attempt 1 \(resolved by token:[0-9a-f]{8}\)\n$/,
    );
    const record = await cli.ledger.store.get({ pk: 'acme#res-1', sk: 'op' });
    expect(record).toMatchObject({ state: 'succeeded', result: '{"checked":"by hand"}' });
  });

  it('not_applied makes the operation retryable; failed makes it terminal', async () => {
    await uncertain('res-2');
    await uncertain('res-3');
    expect((await cli.run(['resolve', 'res-2', 'not_applied', '--yes'])).stdout).toContain(
      'is now failed_retryable',
    );
    expect((await cli.run(['resolve', 'res-3', 'failed', '--attempt', '1'])).stdout).toContain(
      'is now failed_terminal',
    );
    expect(await stateOf('res-2')).toBe('failed_retryable');
    expect(await stateOf('res-3')).toBe('failed_terminal');
  });

  it('on an operation that already succeeded: state_changed (409), the state it is in now, exit 1', async () => {
    await cli.ledger.submit({ operationId: 'res-done', arguments: { target: 'a' } });
    const { code, stdout, stderr } = await cli.run(['resolve', 'res-done', 'failed', '--attempt', '1']);
    expect(code).toBe(1);
    expect(stdout).not.toContain('resolved:');
    expect(stderr).toContain('tool-ledger: state_changed (409): The operation changed state');
    expect(stderr).toContain('the operation is now succeeded, attempt 1');
    expect(await stateOf('res-done')).toBe('succeeded');
  });

  it('with an attempt the operation has moved past: state_changed, nothing resolved', async () => {
    await uncertain('res-4');
    const { code, stderr } = await cli.run(['resolve', 'res-4', 'applied', '--attempt', '2']);
    expect(code).toBe(1);
    expect(stderr).toContain('state_changed (409)');
    expect(await stateOf('res-4')).toBe('uncertain');
  });

  it('an agent or approver token cannot resolve (403), and the operation stays uncertain', async () => {
    await uncertain('res-5');
    for (const token of ['agent-a', 'approver-a']) {
      const { code, stderr } = await cli.run(['resolve', 'res-5', 'applied', '--yes'], { token });
      expect(code).toBe(1);
      expect(stderr).toContain('forbidden (403)');
    }
    expect(await stateOf('res-5')).toBe('uncertain');
  });

  it('another tenant’s operation is not found (404) and is not touched', async () => {
    await uncertain('theirs', 'other');
    const { code, stderr } = await cli.run(['resolve', 'theirs', 'applied', '--yes']);
    expect(code).toBe(1);
    expect(stderr).toContain('not_found (404)');
    expect(await stateOf('theirs', 'other')).toBe('uncertain');
  });

  it('--json prints the resolved operation', async () => {
    await uncertain('res-6');
    const { code, stdout } = await cli.run(['resolve', 'res-6', 'applied', '--json', '--yes']);
    expect(code).toBe(0);
    expect(JSON.parse(stdout)).toMatchObject({ operation_id: 'res-6', state: 'succeeded', result: null });
  });

  it('refuses a bad outcome, bad --result JSON, --result without applied, or a bad --attempt before sending (exit 2)', async () => {
    await uncertain('res-7');
    for (const argv of [
      ['resolve', 'res-7', 'maybe'],
      ['resolve', 'res-7', 'applied', '--result', '{not json'],
      ['resolve', 'res-7', 'failed', '--result', '{}'],
      ['resolve', 'res-7', 'applied', '--attempt', '-1'],
      ['resolve', 'res-7', 'applied', '--attempt', 'two'],
      ['resolve', 'res-7'],
      // No attempt, no --yes and no terminal to confirm on: nothing says which attempt was checked.
      ['resolve', 'res-7', 'not_applied'],
    ]) {
      const { code, stderr } = await cli.run(argv);
      expect(code, argv.join(' ')).toBe(2);
      expect(stderr).toContain('see: tool-ledger resolve --help');
    }
    expect(cli.connections()).toBe(0);
    expect(await stateOf('res-7')).toBe('uncertain');
  });
});

describe('tool-ledger resolve sends the attempt it showed', () => {
  it('on a terminal asks first, naming the attempt: "no" resolves nothing (exit 1), "yes" resolves that attempt', async () => {
    await uncertain('res-8');
    const questions: string[] = [];
    const declined = await cli.run(['resolve', 'res-8', 'not_applied'], {
      confirm: async (q) => {
        questions.push(q);
        return false;
      },
    });
    expect(declined.code).toBe(1);
    expect(declined.stderr).toContain('not resolved: nothing was decided');
    expect(questions).toEqual(['Resolve res-8 attempt 1 as not_applied?']);
    expect(await stateOf('res-8')).toBe('uncertain');
    const accepted = await cli.run(['resolve', 'res-8', 'not_applied'], { confirm: async () => true });
    expect(accepted.code).toBe(0);
    expect(accepted.stdout).toContain('is now failed_retryable, attempt 1');
  });

  it('run again after its not_applied started the next attempt: state_changed (exit 1), no further attempt', async () => {
    await uncertain('res-9');
    const argv = ['resolve', 'res-9', 'not_applied', '--attempt', '1'];
    expect((await cli.run(argv)).code).toBe(0);
    // The retry (attempt 2) runs and ends uncertain again.
    tool.next({ kind: 'uncertain', code: 'reset_after_send' });
    const { record } = await cli.ledger.submit({ operationId: 'res-9', arguments: { target: 'res-9' } });
    expect(record).toMatchObject({ state: 'uncertain', attempt: 2 });
    const again = await cli.run(argv);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('state_changed (409)');
    expect(await cli.ledger.store.get({ pk: 'acme#res-9', sk: 'op' })).toMatchObject({
      state: 'uncertain',
      attempt: 2,
    });
    expect(tool.starts.map((s) => s.attempt)).toEqual([1, 2]);
  });
});

describe('tool-ledger approve / reject', () => {
  it('approve --digest: shows the tool and digest, and the operation is queued and enqueued once', async () => {
    const digest = await awaiting('ap-1');
    const { code, stdout, stderr } = await cli.run(['approve', 'ap-1', '--digest', digest], {
      token: 'approver-a',
    });
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(stdout).toMatch(/^tool\s+test\.approved$/m);
    expect(stdout).toMatch(new RegExp(`^digest\\s+${digest}$`, 'm'));
    expect(stdout).toMatch(/^approve by\s+/m);
    expect(stdout).not.toContain('to-delete');
    expect(stdout).toMatch(/approved: ap-1 is now queued\n$/);
    expect(await stateOf('ap-1')).toBe('queued');
    expect(cli.ledger.queue.messages.map((m) => m.operation_id)).toEqual(['ap-1']);
    expect(approvalTool.starts).toHaveLength(0);
    const shown = await cli.run(['show', 'ap-1']);
    expect(shown.stdout).toMatch(/^approval\s+approved by token:[0-9a-f]{8} at /m);
    expect(shown.stdout).toContain(`digest ${digest}`);
    // The deadline no longer applies once someone decided.
    expect(shown.stdout).not.toMatch(/^approve by/m);
  });

  it('approve with a digest that is not the operation’s: approval_mismatch (409), nothing decided', async () => {
    await awaiting('ap-2');
    const wrong = `v1:${'0'.repeat(64)}`;
    const { code, stderr } = await cli.run(['approve', 'ap-2', '--digest', wrong], { token: 'approver-a' });
    expect(code).toBe(1);
    expect(stderr).toContain('tool-ledger: approval_mismatch (409): The approval names other arguments');
    expect(stderr).toContain('nothing was decided');
    expect(await stateOf('ap-2')).toBe('awaiting_approval');
    expect(cli.ledger.queue.messages).toHaveLength(0);
  });

  it('on a terminal asks first, naming the tool and digest: "no" decides nothing (exit 1), "yes" approves', async () => {
    const digest = await awaiting('ap-3');
    const questions: string[] = [];
    const declined = await cli.run(['approve', 'ap-3'], {
      token: 'approver-a',
      confirm: async (q) => {
        questions.push(q);
        return false;
      },
    });
    expect(declined.code).toBe(1);
    expect(declined.stderr).toContain('not approved: nothing was decided');
    expect(questions).toEqual([`Approve test.approved with digest ${digest}?`]);
    expect(await stateOf('ap-3')).toBe('awaiting_approval');
    const accepted = await cli.run(['approve', 'ap-3'], { token: 'approver-a', confirm: async () => true });
    expect(accepted.code).toBe(0);
    expect(await stateOf('ap-3')).toBe('queued');
  });

  it('without a terminal, --digest or --yes it refuses before sending anything (exit 2)', async () => {
    await awaiting('ap-4');
    for (const decision of ['approve', 'reject']) {
      const { code, stdout, stderr } = await cli.run([decision, 'ap-4'], { token: 'approver-a' });
      expect(code).toBe(2);
      expect(stdout).toBe('');
      expect(stderr).toContain('--digest');
      expect(stderr).toContain('--yes');
    }
    expect(cli.connections()).toBe(0);
    expect(await stateOf('ap-4')).toBe('awaiting_approval');
  });

  it('--yes decides on the digest shown; --arguments shows the values first', async () => {
    await awaiting('ap-5', 'customer-db');
    const { code, stdout } = await cli.run(['approve', 'ap-5', '--yes', '--arguments'], {
      token: 'approver-a',
    });
    expect(code).toBe(0);
    expect(stdout).toMatch(/^arguments\s+\{"target":"customer-db"\}$/m);
    expect(await stateOf('ap-5')).toBe('queued');
  });

  it('reject: the operation becomes rejected and never runs', async () => {
    const digest = await awaiting('rj-1');
    const { code, stdout } = await cli.run(['reject', 'rj-1', '--digest', digest], { token: 'approver-a' });
    expect(code).toBe(0);
    expect(stdout).toMatch(/rejected: rj-1 is now rejected\n$/);
    expect(await stateOf('rj-1')).toBe('rejected');
    expect(cli.ledger.queue.messages).toHaveLength(0);
    const again = await cli.run(['approve', 'rj-1', '--digest', digest], { token: 'approver-a' });
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('state_changed (409)');
    expect(again.stderr).toContain('the operation is now rejected');
  });

  it('an agent or operator token cannot approve (403); the operation keeps waiting', async () => {
    const digest = await awaiting('ap-6');
    for (const token of ['agent-a', 'operator-a']) {
      const { code, stderr } = await cli.run(['approve', 'ap-6', '--digest', digest], { token });
      expect(code).toBe(1);
      expect(stderr).toContain('forbidden (403)');
    }
    expect(await stateOf('ap-6')).toBe('awaiting_approval');
  });

  it('another tenant’s approver gets not_found (404) for the operation and cannot approve it', async () => {
    const digest = await awaiting('ap-7');
    const { code, stderr } = await cli.run(['approve', 'ap-7', '--digest', digest], { token: 'approver-b' });
    expect(code).toBe(1);
    expect(stderr).toContain('not_found (404)');
    expect(await stateOf('ap-7')).toBe('awaiting_approval');
  });

  it('the requester may not approve its own operation (self_approval, 403)', async () => {
    const res = await fetch(`${cli.endpoint}/v1/operations`, {
      method: 'POST',
      headers: {
        authorization: 'Bearer all-a',
        'content-type': 'application/json',
        'idempotency-key': '"ap-self"',
      },
      body: JSON.stringify({ tool: 'test.approved', arguments: { target: 'x' } }),
    });
    expect(res.status).toBe(202);
    const { code, stderr } = await cli.run(['approve', 'ap-self', '--yes'], { token: 'all-a' });
    expect(code).toBe(1);
    expect(stderr).toContain('self_approval (403)');
    expect(await stateOf('ap-self')).toBe('awaiting_approval');
  });

  it('--json: the preview goes to stderr and stdout is only the decided operation', async () => {
    const digest = await awaiting('ap-8');
    const { code, stdout, stderr } = await cli.run(['approve', 'ap-8', '--digest', digest, '--json'], {
      token: 'approver-a',
    });
    expect(code).toBe(0);
    expect(JSON.parse(stdout)).toMatchObject({
      operation_id: 'ap-8',
      state: 'queued',
      approval: { decision: 'approve', arguments_digest: digest },
    });
    expect(stderr).toMatch(/^digest\s+v1:/m);
  });

  it('a malformed --digest is a usage error (exit 2), not a request', async () => {
    await awaiting('ap-9');
    const { code } = await cli.run(['approve', 'ap-9', '--digest', 'abc'], { token: 'approver-a' });
    expect(code).toBe(2);
    expect(cli.connections()).toBe(0);
  });
});
