import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * A code block the README (or the client's) marks with `<!-- embed: <file> -->` on the line above it is a copy of that
 * file, which a type-check sees (pack-check compiles `examples/` against the packed packages): a sample
 * edited in the README alone, or a file changed without its copy, fails here.
 */

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

function embeds(markdown: string): { file: string; block: string }[] {
  return [...markdown.matchAll(/<!-- embed: (\S+) -->\n```[a-z]*\n([\s\S]*?)\n```/g)].map((m) => ({
    file: m[1] as string,
    block: m[2] as string,
  }));
}

describe.each(['README.md', 'client/README.md'])('embeds in %s', (page) => {
  const markdown = readFileSync(path.join(ROOT, page), 'utf8');

  it('marks the durable function example', () => {
    expect(embeds(markdown).map((e) => e.file)).toContain('examples/agents/durable-function.ts');
  });

  it('marks the OpenAI Agents and LangChain examples', () => {
    expect(embeds(markdown).map((e) => e.file)).toEqual(
      expect.arrayContaining(['examples/agents/openai-agents.ts', 'examples/agents/langchain.ts']),
    );
  });

  it('opens the agent side with the AI SDK and Mastra examples', () => {
    const files = embeds(markdown).map((e) => e.file);
    expect(files).toContain('examples/agents/ai-sdk.ts');
    expect(files).toContain('examples/agents/mastra.ts');
    expect(files.indexOf('examples/agents/ai-sdk.ts')).toBeLessThan(
      files.indexOf('examples/agents/durable-function.ts'),
    );
  });

  it.each(embeds(markdown))('the block of $file is the file, byte for byte', ({ file, block }) => {
    expect(block).toBe(readFileSync(path.join(ROOT, file), 'utf8').replace(/\n$/, ''));
  });
});
