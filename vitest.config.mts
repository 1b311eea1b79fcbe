import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // SPIN's own tests run in `npm run verify` (vitest.verify.config.mts), after CI installs it.
    exclude: ['**/node_modules/**', 'test/**/*.spin.test.ts'],
    // A timeout is a net for a hung test, never a pace: every test waits on events. Under a CPU hog on
    // two cores, starting local mode twice in one test took over 30 s, so the net sits well above that.
    testTimeout: 120_000,
    hookTimeout: 240_000,
    pool: 'forks',
    env: {
      AWS_EC2_METADATA_DISABLED: 'true',
      POWERTOOLS_DEV: 'false',
    },
  },
});
