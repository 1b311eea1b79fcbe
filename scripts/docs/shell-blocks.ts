/**
 * The shell blocks of the docs that a reader runs as they stand. A ```sh block is one that runs here,
 * on this machine, as written; a block that needs what this machine lacks (an AWS account, the AWS CLI,
 * an upstream MCP server, a desktop client) is ```bash. Every ```sh block carries, on the line after
 * it, an HTML comment that says how the tests run it:
 *
 * - `<!-- doc-test: ci -->`: the commands CI runs itself (`.ci/run`), and `npm start`, which the tour
 *   test runs;
 * - `<!-- doc-test: start -->`: `npm ci` (done before any test) and `npm start`, which the tour test
 *   runs to start local mode;
 * - `<!-- doc-test: run /re/ … file:PATH … -->`: run as written by the tour test, in order, against
 *   the local mode it started; each `/re/` must match what the block printed, each `file:` path
 *   (`.data/…`, in the test's data folder) must exist once it ran;
 * - `<!-- doc-test: pack-check -->`: run as written by `npm run pack-check`, from a clone and a
 *   scratch project outside the repository.
 */

/** How the tests run a block. */
export type ShellBlockKind = 'ci' | 'start' | 'run' | 'pack-check';

/** One ```sh block and what it must do. */
export interface ShellBlock {
  /** The Markdown file, relative to the root. */
  file: string;
  /** 1-based line of the opening fence. */
  line: number;
  /** The commands, as a reader copies them. */
  script: string;
  /** How the tests run it; undefined when the block carries no doc-test comment. */
  kind: ShellBlockKind | undefined;
  /** Patterns the output must match (`run` blocks). */
  expect: RegExp[];
  /** Paths that must exist once the block ran (`run` blocks). */
  files: string[];
}

const MARKER = /^\s*<!-- doc-test: (ci|start|run|pack-check)\b(.*?)-->\s*$/;

/**
 * The ```sh blocks of a Markdown text, in order, with their doc-test comments.
 *
 * @example
 * ```ts
 * shellBlocks('README.md', readme).filter((b) => b.kind === 'run'); // the tour's commands
 * ```
 */
export function shellBlocks(file: string, markdown: string): ShellBlock[] {
  const lines = markdown.split('\n');
  const blocks: ShellBlock[] = [];
  for (let i = 0; i < lines.length; i += 1) {
    const open = /^(\s*)```sh\s*$/.exec(lines[i] as string);
    if (!open) continue;
    const indent = open[1] as string;
    let close = i + 1;
    while (close < lines.length && (lines[close] as string).trimEnd() !== `${indent}\`\`\``) close += 1;
    const script = lines
      .slice(i + 1, close)
      .map((l) => l.slice(indent.length))
      .join('\n');
    const marker = MARKER.exec(lines[close + 1] ?? '');
    const words = markerWords(marker?.[2] ?? '');
    blocks.push({
      file,
      line: i + 1,
      script,
      kind: marker?.[1] as ShellBlockKind | undefined,
      expect: words.filter((w) => w.startsWith('/')).map((w) => new RegExp(w.slice(1, -1))),
      files: words.filter((w) => w.startsWith('file:')).map((w) => w.slice('file:'.length)),
    });
    i = close;
  }
  return blocks;
}

/** The words of a doc-test comment: `/patterns/` (which may hold spaces and `\/`) and plain words. */
function markerWords(text: string): string[] {
  const words: string[] = [];
  let i = 0;
  while (i < text.length) {
    if (/\s/.test(text[i] as string)) {
      i += 1;
      continue;
    }
    let j = i + 1;
    if (text[i] === '/') {
      while (j < text.length && text[j] !== '/') j += text[j] === '\\' ? 2 : 1;
      j += 1;
    } else {
      while (j < text.length && !/\s/.test(text[j] as string)) j += 1;
    }
    words.push(text.slice(i, j));
    i = j;
  }
  return words;
}
