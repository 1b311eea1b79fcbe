import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Parser } from 'htmlparser2';

/**
 * `npm run docs:check`: the built docs site (docs/.vitepress/dist) has no broken link and needs nothing
 * from the internet. Every `href` and `src` of every page must land on a file of the site and, with a
 * fragment, on an element of that page with that `id`; no page, stylesheet or script may load an asset
 * from another host (a stylesheet, a script, an image, a font, a CSS `url()` or `@import`). Exits 1
 * naming each problem, and prints the counts it checked.
 */

/** What one page holds: the ids of its elements and the references it makes, with the tag they are on. */
interface Page {
  ids: Set<string>;
  references: { tag: string; attribute: string; value: string }[];
}

/** A reference to another host (or protocol-relative). */
const REMOTE = /^(?:[a-z][a-z0-9+.-]*:)?\/\//i;

function parsePage(html: string): Page {
  const page: Page = { ids: new Set(), references: [] };
  const parser = new Parser({
    onopentag(tag, attributes) {
      if (attributes.id !== undefined) page.ids.add(attributes.id);
      if (attributes.name !== undefined && tag === 'a') page.ids.add(attributes.name);
      for (const attribute of ['href', 'src']) {
        const value = attributes[attribute];
        if (value !== undefined) page.references.push({ tag, attribute, value });
      }
    },
  });
  parser.write(html);
  parser.end();
  return page;
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .map((f) => path.join(dir, f))
    .filter((f) => statSync(f).isFile());
}

/**
 * The problems of a built site: broken links, missing fragments, and assets loaded from another host.
 *
 * @example
 * ```ts
 * siteProblems('docs/.vitepress/dist'); // { problems: [], pages: 13, links: 512 } when all is well
 * ```
 */
export function siteProblems(dist: string): { problems: string[]; pages: number; links: number } {
  const files = filesUnder(dist);
  const pages = new Map<string, Page>();
  for (const file of files.filter((f) => f.endsWith('.html'))) {
    pages.set(file, parsePage(readFileSync(file, 'utf8')));
  }
  const problems: string[] = [];
  let links = 0;
  for (const [file, page] of pages) {
    const at = path.relative(dist, file);
    for (const { tag, attribute, value } of page.references) {
      if (REMOTE.test(value)) {
        // A link a reader may follow is not an asset; anything the page loads by itself is.
        if (tag !== 'a') problems.push(`${at}: <${tag} ${attribute}="${value}"> loads from the internet`);
        else problems.push(`${at}: links outside the site: ${value}`);
        continue;
      }
      if (/^(?:mailto|javascript|data):/i.test(value)) continue;
      links += 1;
      const [rawPath = '', fragment] = value.split('#', 2);
      const pathPart = decodeURIComponent(rawPath.split('?')[0] as string);
      let target = file;
      if (pathPart !== '') {
        target = pathPart.startsWith('/')
          ? path.join(dist, pathPart)
          : path.resolve(path.dirname(file), pathPart);
        if (existsSync(target) && statSync(target).isDirectory()) target = path.join(target, 'index.html');
      }
      if (!existsSync(target)) {
        problems.push(`${at}: ${value}: no such file in the site`);
        continue;
      }
      if (fragment === undefined || fragment === '') continue;
      const targetPage = pages.get(target);
      if (targetPage && !targetPage.ids.has(decodeURIComponent(fragment))) {
        problems.push(`${at}: ${value}: no element with id "${fragment}" on ${path.relative(dist, target)}`);
      }
    }
  }
  for (const file of files.filter((f) => f.endsWith('.css'))) {
    for (const match of readFileSync(file, 'utf8').matchAll(/(?:url\(\s*["']?|@import\s+["'])([^"')\s]+)/g)) {
      if (REMOTE.test(match[1] as string)) {
        problems.push(`${path.relative(dist, file)}: loads ${match[1]} from the internet`);
      }
    }
  }
  return { problems, pages: pages.size, links };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const dist = path.resolve(process.argv[2] ?? 'docs/.vitepress/dist');
  if (!existsSync(dist)) {
    process.stderr.write(`docs:check: ${dist} does not exist; run npm run docs:build first\n`);
    process.exit(2);
  }
  const { problems, pages, links } = siteProblems(dist);
  for (const problem of problems) process.stderr.write(`docs:check: ${problem}\n`);
  process.stdout.write(
    `docs:check: ${pages} pages, ${links} links and assets checked, ${problems.length} broken or remote\n`,
  );
  process.exit(problems.length === 0 ? 0 : 1);
}
