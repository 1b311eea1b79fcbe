import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * The client's README is read on npm and in node_modules, where only the files of the client package
 * exist: every link it makes must land inside that package.
 */

const CLIENT = fileURLToPath(new URL('../../client/', import.meta.url));
const manifest = JSON.parse(readFileSync(path.join(CLIENT, 'package.json'), 'utf8')) as { files: string[] };
const readme = readFileSync(path.join(CLIENT, 'README.md'), 'utf8');

/** Markdown link targets that are paths, not web addresses or anchors. */
function localLinks(markdown: string): string[] {
  return [...markdown.matchAll(/\]\(([^)\s]+)\)/g)]
    .map((m) => m[1] as string)
    .filter((target) => !/^(https?:|mailto:|#)/.test(target));
}

describe('the client package README', () => {
  it('links only to files the client package ships', () => {
    const outside = localLinks(readme).filter((target) => {
      const file = path.resolve(CLIENT, target.split('#')[0] as string);
      const relative = path.relative(CLIENT, file);
      const shipped = manifest.files.some((entry) => relative === entry || relative.startsWith(`${entry}/`));
      return relative.startsWith('..') || !shipped || !existsSync(file);
    });
    expect(outside).toEqual([]);
  });

  it('cites no internal design document', () => {
    expect(readme).not.toMatch(/SPEC §|\.\.\/shared\//);
  });
});
