import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { documentationFiles } from './links';

/**
 * TypeScript in the docs is never written in the docs: every ```ts block of the README, the client's
 * README and docs/ is a copy of a real file under `examples/` (or of its `// #region docs` …
 * `// #endregion docs` part), named by an `<!-- embed: examples/… -->` line right above the block.
 * `npm run typecheck` compiles those files (examples/tsconfig.json) against the packages' own sources,
 * and pack-check compiles the tools examples against the packed packages, so a sample cannot drift from
 * the API. `npm run docs:embed` copies the files into the blocks; the docs test fails on a block that
 * differs from its file or names none. The idea is Powertools' documentation's.
 */

/** One ```ts block of a Markdown file. */
export interface TypeScriptBlock {
  /** The Markdown file, relative to the root. */
  file: string;
  /** 1-based line of the opening fence. */
  line: number;
  /** The example it embeds, relative to the root, or undefined when no embed line names one. */
  example: string | undefined;
  /** The block's code, without the fence's indentation. */
  code: string;
  /** Indentation of the fence (a block inside a list item is indented). */
  indent: string;
  /** Offsets of the code in the Markdown text: [start, end). */
  span: [number, number];
}

const EMBED = /^\s*<!-- embed: (\S+) -->\s*$/;

/** The ```ts blocks of a Markdown text, with the example each one names. */
export function typeScriptBlocks(file: string, markdown: string): TypeScriptBlock[] {
  const blocks: TypeScriptBlock[] = [];
  const lines = markdown.split('\n');
  const offsets: number[] = [];
  let offset = 0;
  for (const line of lines) {
    offsets.push(offset);
    offset += line.length + 1;
  }
  for (let i = 0; i < lines.length; i += 1) {
    const open = /^(\s*)```ts\s*$/.exec(lines[i] as string);
    if (!open) continue;
    const indent = open[1] as string;
    let close = i + 1;
    while (close < lines.length && (lines[close] as string).trimEnd() !== `${indent}\`\`\``) close += 1;
    const body = lines.slice(i + 1, close).map((l) => (l.startsWith(indent) ? l.slice(indent.length) : l));
    const above = lines
      .slice(0, i)
      .reverse()
      .find((l) => l.trim() !== '');
    blocks.push({
      file,
      line: i + 1,
      example: above === undefined ? undefined : EMBED.exec(above)?.[1],
      code: body.join('\n'),
      indent,
      span: [offsets[i + 1] as number, (offsets[close] as number) - 1],
    });
    i = close;
  }
  return blocks;
}

/**
 * The part of an example file the docs show: the lines between `// #region docs` and
 * `// #endregion docs` (from the top when there is no `#region`, to the end when there is no
 * `#endregion`), without their common indentation and without trailing blank lines.
 *
 * @example
 * ```ts
 * exampleRegion("import x from 'x';\n// #endregion docs\ndeclare const y: number;\n"); // "import x from 'x';"
 * ```
 */
export function exampleRegion(source: string): string {
  const lines = source.split('\n');
  const start = lines.findIndex((l) => l.trim() === '// #region docs');
  const end = lines.findIndex((l) => l.trim() === '// #endregion docs');
  const region = lines.slice(start + 1, end < 0 ? lines.length : end);
  while (region.length > 0 && (region[region.length - 1] as string).trim() === '') region.pop();
  const indents = region
    .filter((l) => l.trim() !== '')
    .map((l) => (/^ */.exec(l) as RegExpExecArray)[0].length);
  const common = Math.min(...indents);
  return region.map((l) => l.slice(common)).join('\n');
}

/** The Markdown that may hold TypeScript: the README, the docs and the client package's README. */
export function markdownWithTypeScript(root: string): string[] {
  return [...documentationFiles(root), 'client/README.md'];
}

/**
 * Every ```ts block of `files` that names no example, names one that does not exist, or differs from it.
 *
 * @example
 * ```ts
 * embedProblems(process.cwd(), ['docs/agents.md']); // [] when every block is its example
 * ```
 */
export function embedProblems(root: string, files: string[]): { problems: string[]; blocks: number } {
  const problems: string[] = [];
  let blocks = 0;
  for (const file of files) {
    for (const block of typeScriptBlocks(file, readFileSync(path.join(root, file), 'utf8'))) {
      blocks += 1;
      const at = `${file}:${block.line}`;
      if (block.example === undefined) {
        problems.push(`${at}: a TypeScript block without an "<!-- embed: examples/… -->" line above it`);
        continue;
      }
      let source: string;
      try {
        source = readFileSync(path.join(root, block.example), 'utf8');
      } catch {
        problems.push(`${at}: ${block.example} does not exist`);
        continue;
      }
      if (exampleRegion(source) !== block.code) {
        problems.push(`${at}: differs from ${block.example} (run npm run docs:embed)`);
      }
    }
  }
  return { problems, blocks };
}

/** Copies each named example into its block; returns the files it changed. */
export function writeEmbeds(root: string, files: string[]): string[] {
  const changed: string[] = [];
  for (const file of files) {
    const absolute = path.join(root, file);
    let markdown = readFileSync(absolute, 'utf8');
    const blocks = typeScriptBlocks(file, markdown).filter((b) => b.example !== undefined);
    // From the last block up, so the earlier spans stay where they are.
    for (const block of blocks.reverse()) {
      const region = exampleRegion(readFileSync(path.join(root, block.example as string), 'utf8'));
      const indented = region
        .split('\n')
        .map((l) => (l === '' ? l : `${block.indent}${l}`))
        .join('\n');
      markdown = `${markdown.slice(0, block.span[0])}${indented}${markdown.slice(block.span[1])}`;
    }
    if (markdown !== readFileSync(absolute, 'utf8')) {
      writeFileSync(absolute, markdown);
      changed.push(file);
    }
  }
  return changed;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const root = fileURLToPath(new URL('../..', import.meta.url));
  const changed = writeEmbeds(root, markdownWithTypeScript(root));
  process.stdout.write(`docs:embed: ${changed.length === 0 ? 'nothing to change' : changed.join(', ')}\n`);
  const { problems } = embedProblems(root, markdownWithTypeScript(root));
  for (const problem of problems) process.stderr.write(`docs:embed: ${problem}\n`);
  process.exit(problems.length === 0 ? 0 : 1);
}
