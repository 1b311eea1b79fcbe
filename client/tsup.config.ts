import { defineConfig } from 'tsup';

/**
 * The published build of `@tool-ledger/client`: ESM with bundled declarations, one entry per import
 * path. The main entry needs nothing but Node; `./sigv4` and `./sqs` are separate so that the AWS SDK
 * (optional peer dependencies) is loaded only by those who sign with IAM or send to the queue.
 */
export default defineConfig({
  entry: { index: 'index.ts', sigv4: 'sigv4.ts', sqs: 'sqs-sender.ts' },
  format: ['esm'],
  target: 'node20',
  platform: 'node',
  dts: { compilerOptions: { lib: ['ES2022'], types: ['node'] } },
  clean: true,
  sourcemap: true,
  splitting: true,
  treeshake: true,
  outDir: 'dist',
  tsconfig: '../tsconfig.json',
});
