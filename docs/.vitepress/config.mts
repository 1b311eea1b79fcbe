import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { slug } from 'github-slugger';
import { defineConfig } from 'vitepress';

/**
 * The docs site: the README as its home page and every page of docs/, built by VitePress with its
 * default theme and nothing of our own. Anchors are GitHub's (github-slugger), so a link that lands on
 * GitHub lands on the site too, and one check (scripts/docs/links.ts) covers both. Local search only, no
 * asset from the internet: the site works offline.
 */

/** The pages, in reading order, as the sidebar lists them. */
const pages: [string, string][] = [
  ['Agents', '/docs/agents'],
  ['Agent frameworks', '/docs/frameworks'],
  ['Tools', '/docs/tools'],
  ['Operations the caller executes', '/docs/caller-executed'],
  ['HTTP API and work queue', '/docs/http-api'],
  ['Operators', '/docs/operators'],
  ['Local mode', '/docs/local-mode'],
  ['Deploy to AWS', '/docs/deploying'],
  ['Runbook', '/docs/runbook'],
  ['Guarantees', '/docs/guarantees'],
  ['Performance', '/docs/performance'],
  ['Decisions', '/docs/decisions'],
  ['Install', '/docs/install'],
  ['The contract', '/docs/contract'],
  ['Architecture', '/docs/architecture'],
  ['The client package', '/client/README'],
  ['Changelog', '/CHANGELOG'],
];

/**
 * Every top-level folder of the repository but docs/: their Markdown (fixtures, changelogs) is theirs.
 * The one exception is the client's README, which the docs link to: it is a page of the site too (its
 * folder's subfolders, `node_modules` among them, and its changelog stay out).
 */
const otherFolders = readdirSync(fileURLToPath(new URL('../..', import.meta.url)), { withFileTypes: true })
  .filter((entry) => entry.isDirectory() && entry.name !== 'docs')
  .flatMap((entry) =>
    entry.name === 'client' ? ['client/*/**', 'client/CHANGELOG.md'] : [`${entry.name}/**`],
  );

export default defineConfig({
  title: 'tool-ledger',
  description: "Make AI agents' tool calls safe to retry.",
  lang: 'en',
  // The repository's root, so the README is a page and its links to docs/ resolve as on GitHub.
  srcDir: '..',
  srcExclude: [...otherFolders, 'docs/.vitepress/**'],
  rewrites: { 'README.md': 'index.md' },
  cleanUrls: false,
  lastUpdated: false,
  markdown: {
    anchor: { slugify: slug },
    headers: { slugify: slug },
  },
  themeConfig: {
    nav: [
      { text: 'Tour', link: '/#five-minute-tour' },
      { text: 'Contract', link: '/docs/contract' },
    ],
    sidebar: [
      { text: 'Start', items: [{ text: 'What it is, and a tour', link: '/' }] },
      { text: 'Docs', items: pages.map(([text, link]) => ({ text, link })) },
    ],
    outline: { level: [2, 3] },
    search: { provider: 'local' },
  },
});
