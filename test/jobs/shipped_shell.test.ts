/**
 * The shell that ships on every image (CONTRACT §18, STYLE "Shell that ships on the image"):
 * POSIX sh, so shellcheck in sh mode finds nothing in it.
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { missingTools } from '../support/tools.ts';

const installer = fileURLToPath(new URL('../../jobs/iso/installer/', import.meta.url));

describe.skipIf(missingTools('shellcheck'))('shell shipped on the image', () => {
  it.each(['install.sh', 'handshake.sh', 'agent/fleet-agent', 'agent/fleet-disk-key'])(
    '%s passes shellcheck --shell=sh',
    (script) => {
      const out = spawnSync('shellcheck', ['--shell=sh', `${installer}${script}`], { encoding: 'utf8' });
      expect(out.stdout + out.stderr).toBe('');
      expect(out.status).toBe(0);
    },
    180_000,
  ); // shellcheck takes seconds per file, more on a loaded machine
});
