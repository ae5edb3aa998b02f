/** The VM boot tests alone (`npm run test:vm`): the setup of `npm test`, minutes per test. */
import { defineConfig } from 'vitest/config';
import { VM_TESTS } from './vitest.config.ts';

export default defineConfig({
  test: {
    root: new URL('..', import.meta.url).pathname,
    include: VM_TESTS,
    globalSetup: ['test/support/global_setup.ts', 'test/support/tools_setup.ts'],
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 20 * 60_000,
    hookTimeout: 30 * 60_000,
  },
});
