import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { typeScriptBlocks } from '../../scripts/docs/embed';
import { DOC_EXAMPLES } from '../../scripts/pack-check/consumer-files';

/**
 * The agent frameworks page opens with one example per framework, each a file of examples/ that the
 * type-check compiles against the sources and pack-check against the packed client; the README and the
 * sidebar lead to it.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const read = (file: string) => readFileSync(path.join(ROOT, file), 'utf8');

const FRAMEWORK_EXAMPLES = [
  'examples/agents/ai-sdk.ts',
  'examples/agents/mastra.ts',
  'examples/agents/openai-agents.ts',
  'examples/agents/langchain.ts',
  'examples/agents/durable-function.ts',
];

describe('the agent frameworks page', () => {
  const blocks = typeScriptBlocks('docs/frameworks.md', read('docs/frameworks.md'));

  it('opens with one example per framework, in the order of its table', () => {
    expect(blocks.slice(0, FRAMEWORK_EXAMPLES.length).map((block) => block.example)).toEqual(
      FRAMEWORK_EXAMPLES,
    );
  });

  it('each example is one pack-check type-checks against the packed client', () => {
    for (const example of FRAMEWORK_EXAMPLES) expect(DOC_EXAMPLES).toContain(example);
  });

  it('each entry in its table imports from its own entry of @tool-ledger/client', () => {
    for (const entry of ['ai-sdk', 'mastra', 'openai-agents', 'langchain', 'durable']) {
      expect(blocks.some((block) => block.code.includes(`from '@tool-ledger/client/${entry}'`))).toBe(true);
    }
  });

  it('is linked from the README and from the site sidebar', () => {
    expect(read('README.md')).toContain('](docs/frameworks.md)');
    expect(read('docs/.vitepress/config.mts')).toContain("'/docs/frameworks'");
  });
});
