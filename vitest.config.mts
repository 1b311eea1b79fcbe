import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // SPIN's own tests run in `npm run verify` (vitest.verify.config.mts), after CI installs it.
    exclude: ['**/node_modules/**', 'test/**/*.spin.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    env: {
      AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
      AWS_EC2_METADATA_DISABLED: 'true',
      POWERTOOLS_DEV: 'false',
    },
  },
});
