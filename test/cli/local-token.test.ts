import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveConnection } from '../../cli/connection';
import { readLocalTokens } from '../../cli/io';
import { useDynalite } from '../support/dynalite';
import { ScriptedTool } from '../support/harness';
import { type CliHarness, serveCli } from './support';

/**
 * The CLI against local mode with no credentials given: it takes the token local mode made for its data
 * folder, of the role the command needs, and never sends it anywhere but this machine.
 */

const db = useDynalite();
/** A data folder's tokens file, with the HTTP tests' tokens of tenant acme. */
const LOCAL = 'operator-a=acme:agent+operator,approver-a=acme:approver';

describe('the CLI’s default credentials against local mode', () => {
  let cli: CliHarness;
  beforeAll(async () => {
    cli = await serveCli(db, [new ScriptedTool('test.t').tool]);
  });
  afterAll(async () => {
    await cli?.close();
  });

  it('takes the data folder’s operator token when none is given', async () => {
    const listed = await cli.run(['list'], { token: null, localTokens: LOCAL });
    expect(listed.code, listed.stderr).toBe(0);
    const without = await cli.run(['list'], { token: null });
    expect(without.code).toBe(1);
    expect(without.stderr).toContain('the token npm start made in its data folder');
  });

  it('a token given wins over the data folder’s', async () => {
    const given = await cli.run(['list'], { token: 'agent-b', localTokens: LOCAL });
    expect(given.code).toBe(1); // agent-b has no operator role: the given token was the one sent
  });

  it('`token` prints the token of a role, and says what to do when there is none', async () => {
    expect((await cli.run(['token'], { token: null, localTokens: LOCAL })).stdout.trim()).toBe('operator-a');
    expect(
      (await cli.run(['token', '--role', 'approver'], { token: null, localTokens: LOCAL })).stdout.trim(),
    ).toBe('approver-a');
    const none = await cli.run(['token'], { token: null });
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('start local mode (npm start) first');
    expect((await cli.run(['token', '--role', 'root'], { token: null, localTokens: LOCAL })).code).toBe(2);
  });
});

describe('which token a connection takes', () => {
  const local = (role: 'agent' | 'approver' | 'operator') => ({ role, localTokens: () => LOCAL });

  it('the role the command needs: approver for decisions, agent for the bridge, operator otherwise', () => {
    const auth = (role: 'agent' | 'approver' | 'operator') =>
      resolveConnection({ endpoint: 'http://localhost:3000' }, {}, local(role)).auth;
    expect(auth('approver')).toEqual({ kind: 'token', token: 'approver-a' });
    expect(auth('operator')).toEqual({ kind: 'token', token: 'operator-a' });
    expect(auth('agent')).toEqual({ kind: 'token', token: 'operator-a' });
  });

  it('never for an endpoint that is not this machine’s loopback', () => {
    for (const endpoint of [
      'https://abc123.execute-api.eu-west-1.amazonaws.com/prod',
      'http://10.0.0.5:3000',
    ]) {
      expect(resolveConnection({ endpoint }, {}, local('operator')).auth, endpoint).toEqual({ kind: 'none' });
    }
  });

  it('reads the tokens file of TOOL_LEDGER_DATA_DIR, and nothing when there is none', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'tl-cli-tokens-'));
    try {
      expect(readLocalTokens({ TOOL_LEDGER_DATA_DIR: dir })).toBeUndefined();
      await writeFile(path.join(dir, 'tokens'), `${LOCAL}\n`);
      expect(readLocalTokens({ TOOL_LEDGER_DATA_DIR: dir })).toBe(LOCAL);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
