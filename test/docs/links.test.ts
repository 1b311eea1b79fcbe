import { mkdtempSync, writeFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { anchorsOf, brokenLinks, documentationFiles } from '../../scripts/docs/links';

/**
 * The README and every page of docs/ link only inside the repository, and every link lands: on a file
 * that exists and, when it names a fragment, on a heading of that page (GitHub's anchors, which the
 * docs site uses too).
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

describe('links in the README and the docs', () => {
  it('every link lands on a file of the repository and every fragment on a heading of its page', () => {
    const broken = brokenLinks(ROOT, documentationFiles(ROOT)).map(
      (b) => `${b.file}:${b.line} ${b.target}: ${b.reason}`,
    );
    expect(broken).toEqual([]);
  });

  it('finds a missing page, a missing heading, a path out of the repository and a web address', async () => {
    const root = mkdtempSync(path.join(tmpdir(), 'tool-ledger-links-'));
    await mkdir(path.join(root, 'docs'));
    writeFileSync(path.join(root, 'docs', 'a.md'), '# A\n\n## Run it `npm start`\n');
    writeFileSync(
      path.join(root, 'README.md'),
      [
        '[ok](docs/a.md#run-it-npm-start) [self](#top) [gone](docs/b.md)',
        '[no heading](docs/a.md#run-it) [out](../elsewhere.md) [web](https://example.com/)',
        '',
        '# Top',
      ].join('\n'),
    );
    const broken = brokenLinks(root, documentationFiles(root));
    expect(broken.map((b) => [b.target, b.reason])).toEqual([
      ['docs/b.md', 'no such file'],
      ['docs/a.md#run-it', 'no heading "#run-it" in docs/a.md'],
      ['../elsewhere.md', 'leaves the repository'],
      ['https://example.com/', 'points outside the repository'],
    ]);
  });

  it("makes GitHub's anchors: code spans kept, punctuation dropped, repeats numbered", () => {
    const anchors = anchorsOf(
      "# `webhook.post` and the SSRF guard\n## Operators' console\n## Limits\n## Limits\n## 1. Words\n",
    );
    expect([...anchors]).toEqual([
      'webhookpost-and-the-ssrf-guard',
      'operators-console',
      'limits',
      'limits-1',
      '1-words',
    ]);
  });
});
