import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { commonJsAdvice, isCommonJsFailure, loadsAsCommonJs } from '../../functions/local/module-format';

/** Which tools modules Node loads as CommonJS, the format tool-ledger's ESM packages cannot serve. */

describe('tools module format', () => {
  let root: string;
  beforeAll(async () => {
    root = await mkdtemp(path.join(tmpdir(), 'tl-module-format-'));
    for (const [dir, manifest] of [
      ['cjs', { type: 'commonjs' }],
      ['untyped', { name: 'untyped' }],
      ['esm', { type: 'module' }],
    ] as const) {
      await mkdir(path.join(root, dir, 'tools'), { recursive: true });
      await writeFile(path.join(root, dir, 'package.json'), JSON.stringify(manifest));
    }
  });
  afterAll(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('a .ts file is CommonJS unless the nearest package.json says "type": "module"', () => {
    expect(loadsAsCommonJs(path.join(root, 'cjs', 'tools', 'index.ts'))).toBe(true);
    expect(loadsAsCommonJs(path.join(root, 'untyped', 'tools', 'index.ts'))).toBe(true);
    expect(loadsAsCommonJs(path.join(root, 'esm', 'tools', 'index.ts'))).toBe(false);
  });

  it('.mts is ESM and .cts CommonJS wherever they are; .js is left to Node', () => {
    expect(loadsAsCommonJs(path.join(root, 'cjs', 'tools', 'index.mts'))).toBe(false);
    expect(loadsAsCommonJs(path.join(root, 'esm', 'tools', 'index.cts'))).toBe(true);
    expect(loadsAsCommonJs(path.join(root, 'cjs', 'tools', 'index.js'))).toBe(false);
  });

  it("recognises Node's require(esm) refusals by code", () => {
    const coded = (code: string) => Object.assign(new Error('Cannot require() ES Module'), { code });
    expect(isCommonJsFailure(coded('ERR_REQUIRE_CYCLE_MODULE'))).toBe(true);
    expect(isCommonJsFailure(coded('ERR_REQUIRE_ESM'))).toBe(true);
    expect(isCommonJsFailure(coded('ERR_MODULE_NOT_FOUND'))).toBe(false);
    expect(isCommonJsFailure(undefined)).toBe(false);
  });

  it('advises "type": "module" or the .mts name, as the setting would be typed', () => {
    const project = path.join(root, 'cjs');
    expect(commonJsAdvice(path.join(project, 'tools', 'index.ts'), project)).toMatch(
      /set "type": "module" in your package\.json, or name the file index\.mts \(TOOL_LEDGER_TOOLS_MODULE=tools\/index\.mts\)\.$/,
    );
    expect(commonJsAdvice(path.join(project, 'tools', 'index.js'), '/elsewhere')).toContain(
      `index.mjs (TOOL_LEDGER_TOOLS_MODULE=${path.join(project, 'tools', 'index.mjs')})`,
    );
  });
});
