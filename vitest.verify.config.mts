import { defineConfig } from 'vitest/config';

/**
 * `npm run verify`'s tests: the ones that run SPIN, which CI installs (see `.ci/run`). The settings
 * are vitest.config.mts's, restated because vitest merges include lists rather than replacing them.
 */
export default defineConfig({
  test: {
    include: ['test/**/*.spin.test.ts'],
    testTimeout: 300_000,
    hookTimeout: 60_000,
    pool: 'forks',
    env: {
      AWS_EC2_METADATA_DISABLED: 'true',
      POWERTOOLS_DEV: 'false',
    },
  },
});
