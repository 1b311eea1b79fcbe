import { defineConfig } from 'tsup';

/**
 * The published build of `tool-ledger`: the construct (`.`) and the tool author's entry (`./tool`),
 * ESM with bundled declarations. The Lambda handlers are not built here: they ship as source under
 * `functions/`, and the construct bundles them with the deployment's own tools module at synth, exactly
 * as in this repository.
 */
export default defineConfig({
  entry: { index: 'lib/index.ts', tool: 'functions/tool-kit.ts' },
  format: ['esm'],
  target: 'node22', // the oldest Node in package.json `engines`; pack-check runs the package on 22 and 24
  platform: 'node',
  dts: true,
  clean: true,
  sourcemap: true,
  outDir: 'dist',
});
