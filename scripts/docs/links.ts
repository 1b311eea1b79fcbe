import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { slug } from 'github-slugger';
import MarkdownIt from 'markdown-it';
import type Token from 'markdown-it/lib/token.mjs';

/**
 * The link check of the README and the docs: every link that stays inside the repository must land on
 * a file that exists and, when it names a fragment, on a heading of that file. Headings get GitHub's
 * anchors (github-slugger), which the docs site uses too (docs/.vitepress/config.mts), so one check
 * holds for the repository as GitHub shows it and for the built site.
 */

/** One link that does not land. */
export interface BrokenLink {
  /** The Markdown file holding the link, relative to the root. */
  file: string;
  /** 1-based line of the link. */
  line: number;
  /** The link as written. */
  target: string;
  /** Why it does not land. */
  reason: string;
}

/** A link that leaves the repository: a URL scheme, or a protocol-relative address. */
const EXTERNAL = /^(?:[a-z][a-z0-9+.-]*:|\/\/)/i;

const markdown = new MarkdownIt({ html: true });

/** The plain text of a heading's inline token, as GitHub reads it for the anchor. */
function headingText(inline: Token): string {
  return (inline.children ?? [])
    .filter((t) => t.type === 'text' || t.type === 'code_inline')
    .map((t) => t.content)
    .join('');
}

/**
 * The anchors of a Markdown file's headings, as GitHub makes them: the slug of the heading's text, with
 * `-1`, `-2` … for repeats.
 *
 * @example
 * ```ts
 * anchorsOf('## Run it `npm start`\n'); // Set { 'run-it-npm-start' }
 * ```
 */
export function anchorsOf(source: string): Set<string> {
  const tokens = markdown.parse(source, {});
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (let i = 0; i < tokens.length; i += 1) {
    if (tokens[i]?.type !== 'heading_open') continue;
    const base = slug(headingText(tokens[i + 1] as Token));
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  // Explicit anchors written as HTML (`<a id="…">`), for a place that is not a heading.
  for (const match of source.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) anchors.add(match[1] as string);
  return anchors;
}

/** Every link target of a Markdown file (links and images), with its line. */
export function linksOf(source: string): { target: string; line: number }[] {
  const found: { target: string; line: number }[] = [];
  let line = 1;
  for (const block of markdown.parse(source, {})) {
    // Table cells carry no line of their own: they keep the line of the row before them.
    if (block.map) line = block.map[0] + 1;
    if (block.type !== 'inline') continue;
    for (const child of block.children ?? []) {
      const target =
        child.type === 'link_open'
          ? child.attrGet('href')
          : child.type === 'image'
            ? child.attrGet('src')
            : null;
      if (target !== null) found.push({ target, line });
    }
  }
  return found;
}

/**
 * The links of `files` (Markdown, relative to `root`) that do not land: a path outside `root`, a file
 * that does not exist, or a fragment that names no heading of its Markdown file.
 *
 * @example
 * ```ts
 * brokenLinks(process.cwd(), ['README.md', 'docs/agents.md']); // [] when every link lands
 * ```
 */
export function brokenLinks(root: string, files: string[]): BrokenLink[] {
  const broken: BrokenLink[] = [];
  const anchorCache = new Map<string, Set<string>>();
  const anchors = (file: string) => {
    let set = anchorCache.get(file);
    if (!set) {
      set = anchorsOf(readFileSync(file, 'utf8'));
      anchorCache.set(file, set);
    }
    return set;
  };
  for (const file of files) {
    const absolute = path.resolve(root, file);
    for (const { target, line } of linksOf(readFileSync(absolute, 'utf8'))) {
      const report = (reason: string) => broken.push({ file, line, target, reason });
      if (EXTERNAL.test(target)) {
        report('points outside the repository');
        continue;
      }
      const [rawPath = '', fragment] = target.split('#', 2);
      const pathPart = decodeURIComponent(rawPath);
      const destination = pathPart === '' ? absolute : path.resolve(path.dirname(absolute), pathPart);
      if (path.relative(root, destination).startsWith('..')) {
        report('leaves the repository');
        continue;
      }
      if (!existsSync(destination)) {
        report('no such file');
        continue;
      }
      if (fragment === undefined) continue;
      if (statSync(destination).isDirectory() || !destination.endsWith('.md')) {
        report('a fragment on a file that has no headings');
      } else if (!anchors(destination).has(decodeURIComponent(fragment))) {
        report(`no heading "#${fragment}" in ${path.relative(root, destination)}`);
      }
    }
  }
  return broken;
}

/**
 * The Markdown a reader of the repository or of the docs site follows links through: the README and
 * every page of docs/, relative to `root`.
 *
 * @example
 * ```ts
 * documentationFiles(process.cwd()); // ['README.md', 'docs/agents.md', …]
 * ```
 */
export function documentationFiles(root: string): string[] {
  const pages = readdirSync(path.join(root, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`);
  const changelog = existsSync(path.join(root, 'CHANGELOG.md')) ? ['CHANGELOG.md'] : [];
  return ['README.md', ...changelog, ...pages.sort()];
}
