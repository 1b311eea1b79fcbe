import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { localTokens, tokenWithRole } from '../../functions/local/local-tokens';
import { parseTokens } from '../../functions/local/settings';

/** The tokens local mode makes for a data folder when TOOL_LEDGER_TOKENS is not set. */

describe('local mode’s own tokens', () => {
  let root: string;
  beforeAll(async () => {
    root = await mkdtemp(path.join(tmpdir(), 'tl-local-tokens-'));
  });
  afterAll(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('are made at the first start: random, an agent+operator and an approver token, readable only by the user', async () => {
    const dir = path.join(root, 'fresh', '.data');
    const made = await localTokens(dir);
    expect(made.created).toBe(true);
    expect((await stat(dir)).mode & 0o777).toBe(0o700);
    expect((await stat(made.file)).mode & 0o777).toBe(0o600);
    expect((await readFile(made.file, 'utf8')).trim()).toBe(made.spec);
    const tokens = parseTokens(made.spec);
    expect(tokens.map((t) => [t.tenant, t.roles])).toEqual([
      ['local', ['agent', 'operator']],
      ['local', ['approver']],
    ]);
    for (const t of tokens) expect(t.token).toMatch(/^tl_[A-Za-z0-9_-]{43}$/);
    expect((await localTokens(path.join(root, 'other'))).spec).not.toBe(made.spec);
  });

  it('are kept: later starts, and starts racing on a fresh folder, all get the same ones', async () => {
    const dir = path.join(root, 'raced');
    const all = await Promise.all(Array.from({ length: 8 }, () => localTokens(dir)));
    expect(new Set(all.map((t) => t.spec)).size).toBe(1);
    expect(all.filter((t) => t.created)).toHaveLength(1);
    expect((await localTokens(dir)).created).toBe(false);
  });

  it('tokenWithRole picks the first token that has the role', () => {
    const spec = 'a=local:agent+operator,b=local:approver';
    expect(tokenWithRole(spec, 'operator')).toBe('a');
    expect(tokenWithRole(spec, 'approver')).toBe('b');
    expect(tokenWithRole(spec, 'root')).toBeUndefined();
  });
});
