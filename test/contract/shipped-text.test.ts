import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { INTERNAL_POINTER, internalPointers } from '../../scripts/pack-check/internal-pointers';

/*
 * Users receive the packages, not the repository's design brief: comments and doc comments end up in
 * the published sources and `.d.ts` files, so they cite the package's own contract (docs/contract.md)
 * or say the rule in words. `npm run pack-check` checks the packed tarballs the same way; this checks
 * the sources they are built from on every test run.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

describe('what ships cites nothing users do not have', () => {
  it('no source, declaration or doc in lib, functions, cli, client, bin, types or docs cites the design brief', async () => {
    const found: string[] = [];
    for (const dir of ['lib', 'functions', 'cli', 'client', 'bin', 'types', 'docs']) {
      for (const file of await internalPointers(path.join(ROOT, dir))) {
        if (!file.split(path.sep).includes('dist')) found.push(`${dir}/${file}`);
      }
    }
    for (const file of ['README.md', 'client/README.md']) {
      if (INTERNAL_POINTER.test(await readFile(path.join(ROOT, file), 'utf8'))) found.push(file);
    }
    expect(found).toEqual([]);
  });

  it('the check sees a citation in each of its spellings', () => {
    for (const text of ['(SPEC §5)', 'see SPEC section 6', 'SPEC.md', '../shared/SPEC']) {
      expect(INTERNAL_POINTER.test(text), text).toBe(true);
    }
    for (const text of ['TOOLS_MODULE_SPECIFIER', 'SPECIAL_IPV4', 'the contract, §5']) {
      expect(INTERNAL_POINTER.test(text), text).toBe(false);
    }
  });
});
