import { configDefaults, defineConfig } from 'vitest/config';

/**
 * The tests that boot a VM (minutes each under TCG): not part of `npm test`, run by
 * `npm run test:vm` (test/vitest.vm.config.ts) in a step of their own in .ci/run.
 */
export const VM_TESTS = ['test/jobs/installer_vm.test.ts', 'test/device/*.test.ts'];

/**
 * The device agent's journeys with real Ansible (seconds of CPU per apply): not part of
 * `npm test`, run by `npm run test:device` (test/vitest.device.config.ts), once, in .ci/run.
 */
export const DEVICE_TESTS = ['test/agent/device_agent*.test.ts', 'test/disk_keys/disk_key_swap.test.ts'];

export default defineConfig({
  test: {
    root: new URL('..', import.meta.url).pathname,
    include: ['test/**/*.test.ts'],
    exclude: [...configDefaults.exclude, ...VM_TESTS, ...DEVICE_TESTS],
    globalSetup: ['test/support/global_setup.ts', 'test/support/tools_setup.ts', 'test/support/chromium_setup.ts'],
    pool: 'forks',
    // One module cache per worker, not per file: a file no longer pays the import of the
    // whole app. A file that mocks a module loads its importers afresh
    // (test/agent/checkin_path.test.ts); one that changes global state (nock) undoes it.
    isolate: false,
    maxWorkers: 4,
    testTimeout: 30_000,
    hookTimeout: 120_000,
  },
});
