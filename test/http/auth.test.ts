import { createHash } from 'node:crypto';
import type { APIGatewayProxyEvent } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { authenticatorFromEnv } from '../../functions/http/auth';
import { canonicalArn, IamAuthenticator } from '../../functions/http/auth-iam';
import { BearerTokenAuthenticator } from '../../functions/http/auth-tokens';
import { toEvent } from './support';

const ACCT = '123456789012';

function iamEvent(userArn: string | null): APIGatewayProxyEvent {
  const event = toEvent({ path: '/v1/tools', token: null });
  (event.requestContext as { identity: { userArn: string | null } }).identity.userArn = userArn;
  return event;
}

describe('BearerTokenAuthenticator', () => {
  const auth = new BearerTokenAuthenticator(' t1=acme:agent+operator , t2=acme:approver,t3=ns:team-1:agent');

  it('maps a token to its tenant and roles, with a fingerprint principal that is never the token', () => {
    const identity = auth.authenticate(toEvent({ path: '/', token: 't1' }));
    expect(identity.tenant).toBe('acme');
    expect([...identity.roles].sort()).toEqual(['agent', 'operator']);
    const fingerprint = createHash('sha256').update('t1').digest('hex').slice(0, 8);
    expect(identity.principal).toBe(`token:${fingerprint}`);
    expect(identity.principal).not.toContain('t1');
  });

  it('tenants may contain a colon: the roles follow the last one', () => {
    expect(auth.authenticate(toEvent({ path: '/', token: 't3' })).tenant).toBe('ns:team-1');
    expect(auth.tenants().sort()).toEqual(['acme', 'ns:team-1']);
  });

  it('refuses missing, unknown, repeated or non-Bearer credentials with unauthenticated', () => {
    const bad: APIGatewayProxyEvent[] = [
      toEvent({ path: '/', token: null }),
      toEvent({ path: '/', token: 'T1' }),
      toEvent({ path: '/', token: 't1x' }),
      toEvent({ path: '/', token: null, headers: [['Authorization', 'Token t1']] }),
      toEvent({ path: '/', token: null, headers: [['Authorization', 'Bearer']] }),
      toEvent({ path: '/', token: null, headers: [['Authorization', 'Bearer t1 t2']] }),
      toEvent({ path: '/', token: 't1', headers: [['authorization', 'Bearer t1']] }),
    ];
    for (const event of bad) {
      expect(() => auth.authenticate(event)).toThrow(expect.objectContaining({ code: 'unauthenticated' }));
    }
  });

  it.each([
    ['no equals sign', 'tok:acme:agent'],
    ['no roles', 't=acme'],
    ['an unknown role', 't=acme:admin'],
    ['an empty role', 't=acme:agent+'],
    ['a bad tenant', 't=ac#me:agent'],
    ['whitespace in a token', 'a b=acme:agent'],
    ['a repeated token', 't=acme:agent,t=other:agent'],
    ['nothing', ' , '],
  ])('refuses a TOOL_LEDGER_TOKENS with %s, without quoting it', (_name, spec) => {
    let message = '';
    try {
      new BearerTokenAuthenticator(spec);
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toMatch(/TOOL_LEDGER_TOKENS/);
    expect(message).not.toContain('acme');
  });
});

describe('IamAuthenticator', () => {
  const config = JSON.stringify({
    acme: {
      agents: [`arn:aws:iam::${ACCT}:role/agent-role`, `arn:aws:iam::${ACCT}:user/alice`],
      approvers: [`arn:aws:iam::${ACCT}:role/team/approver-role`, `arn:aws:iam::${ACCT}:user/alice`],
      operators: [`arn:aws:iam::${ACCT}:role/ops`],
    },
    other: { agents: [`arn:aws:iam::${ACCT}:role/other-agent`] },
  });
  const auth = new IamAuthenticator(config);

  it('maps an IAM user to its tenant and every role it is listed under', () => {
    const identity = auth.authenticate(iamEvent(`arn:aws:iam::${ACCT}:user/alice`));
    expect(identity).toMatchObject({ tenant: 'acme', principal: `arn:aws:iam::${ACCT}:user/alice` });
    expect([...identity.roles].sort()).toEqual(['agent', 'approver']);
  });

  it('maps an assumed-role session to its role, keeping the session ARN as the principal', () => {
    const session = `arn:aws:sts::${ACCT}:assumed-role/agent-role/lambda-session-1`;
    const identity = auth.authenticate(iamEvent(session));
    expect(identity).toMatchObject({ tenant: 'acme', principal: session });
    expect([...identity.roles]).toEqual(['agent']);
  });

  it('matches a configured role with a path from its session (sessions carry no path)', () => {
    const identity = auth.authenticate(
      iamEvent(`arn:aws:sts::${ACCT}:assumed-role/approver-role/bob@example.com`),
    );
    expect([...identity.roles]).toEqual(['approver']);
  });

  it('an unsigned request is unauthenticated; a signed stranger is forbidden', () => {
    expect(() => auth.authenticate(iamEvent(null))).toThrow(
      expect.objectContaining({ code: 'unauthenticated' }),
    );
    expect(() => auth.authenticate(iamEvent(`arn:aws:iam::${ACCT}:user/mallory`))).toThrow(
      expect.objectContaining({ code: 'forbidden' }),
    );
    expect(() => auth.authenticate(iamEvent(`arn:aws:sts::999999999999:assumed-role/agent-role/x`))).toThrow(
      expect.objectContaining({ code: 'forbidden' }),
    );
  });

  it('canonicalArn drops sessions and role paths and leaves other ARNs alone', () => {
    expect(canonicalArn(`arn:aws-cn:sts::${ACCT}:assumed-role/r/s`)).toBe(`arn:aws-cn:iam::${ACCT}:role/r`);
    expect(canonicalArn(`arn:aws:iam::${ACCT}:role/a/b/r`)).toBe(`arn:aws:iam::${ACCT}:role/r`);
    expect(canonicalArn(`arn:aws:iam::${ACCT}:user/u`)).toBe(`arn:aws:iam::${ACCT}:user/u`);
  });

  it.each([
    ['not JSON', '{'],
    ['an array', '[]'],
    ['a bad tenant', JSON.stringify({ 'a#b': { agents: [] } })],
    ['a non-ARN', JSON.stringify({ acme: { agents: ['alice'] } })],
    ['a list that is not an array', JSON.stringify({ acme: { agents: `arn:aws:iam::${ACCT}:user/a` } })],
    [
      'a principal in two tenants',
      JSON.stringify({
        a: { agents: [`arn:aws:iam::${ACCT}:user/u`] },
        b: { operators: [`arn:aws:iam::${ACCT}:user/u`] },
      }),
    ],
  ])('refuses a configuration with %s', (_name, json) => {
    expect(() => new IamAuthenticator(json)).toThrow(/TOOL_LEDGER_IAM_TENANTS|tenant|ARN/);
  });
});

describe('authenticatorFromEnv', () => {
  it('defaults to IAM on AWS and to tokens in local mode, with no default token anywhere', () => {
    expect(authenticatorFromEnv({})).toBeInstanceOf(IamAuthenticator);
    // The well-known token of earlier versions is gone: local mode is given its tokens, or starts none.
    expect(() => authenticatorFromEnv({ TOOL_LEDGER_LOCAL: 'true' })).toThrow(/TOOL_LEDGER_TOKENS/);
    const local = authenticatorFromEnv({ TOOL_LEDGER_LOCAL: 'true', TOOL_LEDGER_TOKENS: 'tl_a=local:agent' });
    expect(local).toBeInstanceOf(BearerTokenAuthenticator);
    expect(() => local.authenticate(toEvent({ path: '/', token: 'dev-token' }))).toThrow();
  });

  it('uses TOOL_LEDGER_TOKENS when tokens are chosen, and never falls back to dev tokens outside local mode', () => {
    const auth = authenticatorFromEnv({ TOOL_LEDGER_AUTH: 'tokens', TOOL_LEDGER_TOKENS: 'x=acme:agent' });
    expect(auth.authenticate(toEvent({ path: '/', token: 'x' })).tenant).toBe('acme');
    expect(() => authenticatorFromEnv({ TOOL_LEDGER_AUTH: 'tokens' })).toThrow(/TOOL_LEDGER_TOKENS/);
    expect(() => authenticatorFromEnv({ TOOL_LEDGER_AUTH: 'magic' })).toThrow(/TOOL_LEDGER_AUTH/);
  });

  it('local mode can still choose IAM explicitly', () => {
    expect(authenticatorFromEnv({ TOOL_LEDGER_LOCAL: 'true', TOOL_LEDGER_AUTH: 'iam' })).toBeInstanceOf(
      IamAuthenticator,
    );
  });
});
