import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { siteProblems } from '../../scripts/docs/check-site';

/**
 * The check CI runs on the built docs site (`npm run docs:check`): it must see a broken link, a missing
 * fragment and an asset from the internet, and pass a site whose links all land.
 */

function site(files: Record<string, string>): string {
  const dist = mkdtempSync(path.join(tmpdir(), 'tool-ledger-site-'));
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dist, name)), { recursive: true });
    writeFileSync(path.join(dist, name), text);
  }
  return dist;
}

describe('the docs site check', () => {
  it('passes a site whose links, fragments and assets all land on it', () => {
    const dist = site({
      'index.html':
        '<link rel="stylesheet" href="/assets/style.css"><a href="./docs/a.html#run">a</a><a href="#top" id="top">top</a>',
      'docs/a.html': '<h2 id="run">Run</h2><a href="../index.html">home</a><img src="/assets/logo.svg">',
      'assets/style.css': 'body { background: url("./bg.png"); }',
      'assets/logo.svg': '<svg/>',
    });
    expect(siteProblems(dist)).toEqual({ problems: [], pages: 2, links: 5 });
  });

  it('names a missing page, a missing fragment, a remote script, a remote font and an outside link', () => {
    const dist = site({
      'index.html': [
        '<a href="./docs/gone.html">gone</a>',
        '<a href="./docs/a.html#walk">walk</a>',
        '<script src="https://cdn.example.com/x.js"></script>',
        '<a href="https://example.com/">out</a>',
      ].join(''),
      'docs/a.html': '<h2 id="run">Run</h2>',
      'assets/style.css': '@font-face { src: url(https://fonts.example.com/inter.woff2); }',
    });
    expect(siteProblems(dist).problems).toEqual([
      'index.html: ./docs/gone.html: no such file in the site',
      'index.html: ./docs/a.html#walk: no element with id "walk" on docs/a.html',
      'index.html: <script src="https://cdn.example.com/x.js"> loads from the internet',
      'index.html: links outside the site: https://example.com/',
      'assets/style.css: loads https://fonts.example.com/inter.woff2 from the internet',
    ]);
  });
});
