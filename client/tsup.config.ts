import { defineConfig } from 'tsup';

/**
 * The published build of `@tool-ledger/client`: ESM with bundled declarations, one entry per import
 * path. The main entry needs nothing but Node; `./sigv4`, `./sqs`, `./mcp` and one entry per agent framework
 * (`./ai-sdk`, `./mastra`, `./durable`, `./openai-agents`, `./langchain`) are separate so that the AWS SDK,
 * the MCP SDK and the frameworks (optional peer dependencies) are loaded only by those who use them.
 */
export default defineConfig({
  entry: {
    index: 'index.ts',
    sigv4: 'sigv4.ts',
    sqs: 'sqs-entry.ts',
    mcp: 'mcp-entry.ts',
    'ai-sdk': 'ai-sdk-entry.ts',
    mastra: 'mastra-entry.ts',
    durable: 'durable-entry.ts',
    'openai-agents': 'openai-agents-entry.ts',
    langchain: 'langchain-entry.ts',
  },
  format: ['esm'],
  target: 'node22', // the oldest Node in package.json `engines`; pack-check runs the package on 22 and 24
  platform: 'node',
  dts: { compilerOptions: { lib: ['ES2022'], types: ['node'] } },
  clean: true,
  sourcemap: true,
  splitting: true,
  treeshake: true,
  outDir: 'dist',
  tsconfig: '../tsconfig.json',
});
