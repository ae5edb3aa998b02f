/**
 * The device agent's journeys with real Ansible alone (`npm run test:device`): the setup of
 * `npm test`, one worker per core; each file sets up its own device and passes alone.
 */
import { defineConfig } from 'vitest/config';
import { DEVICE_TESTS } from './vitest.config.ts';

export default defineConfig({
  test: {
    root: new URL('..', import.meta.url).pathname,
    include: DEVICE_TESTS,
    globalSetup: ['test/support/global_setup.ts', 'test/support/tools_setup.ts'],
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 10 * 60_000,
    hookTimeout: 2 * 60_000,
  },
});
