import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { APIGatewayProxyEvent } from 'aws-lambda';
import { afterAll, describe, expect, it } from 'vitest';
import { authenticatorFromEnv } from '../../functions/http/auth';
import { toEvent } from './support';

const ACCT = '123456789012';
const dir = mkdtempSync(path.join(tmpdir(), 'tool-ledger-tenants-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function bundledFile(content: unknown): string {
  const file = path.join(dir, `${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(file, typeof content === 'string' ? content : JSON.stringify(content));
  return file;
}

function callerEvent(userArn: string): APIGatewayProxyEvent {
  const event = toEvent({ path: '/v1/tools', token: null });
  (event.requestContext as { identity: { userArn: string } }).identity.userArn = userArn;
  return event;
}

describe('IAM tenant map from the bundled file and the environment', () => {
  // 200 roles: five times what Lambda's 4 KB environment could carry.
  const many = Array.from({ length: 200 }, (_, n) => `arn:aws:iam::${ACCT}:role/agent-${n}`);

  it('reads the bundled file and merges the deploy-time variable into it, role list by role list', () => {
    const auth = authenticatorFromEnv({
      TOOL_LEDGER_IAM_TENANTS_FILE: bundledFile({ acme: { agents: many, approvers: [], operators: [] } }),
      TOOL_LEDGER_IAM_TENANTS: JSON.stringify({
        acme: { operators: [`arn:aws:iam::${ACCT}:role/acme-ops`] },
        globex: { agents: [`arn:aws:iam::${ACCT}:role/globex-agent`] },
      }),
    });
    const agent = auth.authenticate(callerEvent(`arn:aws:sts::${ACCT}:assumed-role/agent-199/run-1`));
    expect(agent.tenant).toBe('acme');
    expect([...agent.roles]).toEqual(['agent']);
    expect([...auth.authenticate(callerEvent(`arn:aws:iam::${ACCT}:role/acme-ops`)).roles]).toEqual([
      'operator',
    ]);
    expect(auth.authenticate(callerEvent(`arn:aws:iam::${ACCT}:role/globex-agent`)).tenant).toBe('globex');
    expect(() => auth.authenticate(callerEvent(`arn:aws:iam::${ACCT}:role/agent-200`))).toThrow(
      /not a member of any tenant/,
    );
  });

  it('refuses a principal that the two parts bind to two tenants', () => {
    const role = `arn:aws:iam::${ACCT}:role/shared`;
    expect(() =>
      authenticatorFromEnv({
        TOOL_LEDGER_IAM_TENANTS_FILE: bundledFile({ acme: { agents: [role] } }),
        TOOL_LEDGER_IAM_TENANTS: JSON.stringify({ globex: { agents: [role] } }),
      }),
    ).toThrow(/more than one tenant/);
  });

  it('fails closed, naming the source, when the file is missing or not a tenant map', () => {
    expect(() =>
      authenticatorFromEnv({ TOOL_LEDGER_IAM_TENANTS_FILE: path.join(dir, 'absent.json') }),
    ).toThrow(/TOOL_LEDGER_IAM_TENANTS_FILE cannot be read/);
    expect(() => authenticatorFromEnv({ TOOL_LEDGER_IAM_TENANTS_FILE: bundledFile('[1]') })).toThrow(
      /TOOL_LEDGER_IAM_TENANTS_FILE must be an object/,
    );
    expect(() =>
      authenticatorFromEnv({ TOOL_LEDGER_IAM_TENANTS_FILE: bundledFile({ acme: { agents: 'x' } }) }),
    ).toThrow(/agents must be an array/);
  });

  it('without a file, reads the variable alone as before', () => {
    const auth = authenticatorFromEnv({
      TOOL_LEDGER_IAM_TENANTS: JSON.stringify({ acme: { agents: [`arn:aws:iam::${ACCT}:role/a`] } }),
    });
    expect(auth.authenticate(callerEvent(`arn:aws:iam::${ACCT}:role/a`)).tenant).toBe('acme');
  });
});
