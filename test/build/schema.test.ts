/**
 * `npm run schema:check` (.ci/schema.ts): the committed sql/schema.sql is what the migrations
 * make, and a hand-edited copy fails the check with the edited line in the diff. One check of
 * both files: one throw-away cluster.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { missingTools } from '../support/tools.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));

/** `tsx .ci/schema.ts check file...`, its exit code and everything it printed. */
function check(...files: string[]): Promise<{ code: number | null; output: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', '.ci/schema.ts', 'check', ...files], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk) => (output += chunk));
  child.stderr.on('data', (chunk) => (output += chunk));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, output })));
}

it.skipIf(missingTools('postgresql-15'))(
  'sql/schema.sql is the schema the migrations make; a copy edited by hand fails with the edit in a unified diff',
  async () => {
    const original = 'CREATE FUNCTION public.bump_override_versions(organization_ids uuid[]) RETURNS void';
    const edited = 'CREATE FUNCTION public.bump_override_versions(ids uuid[]) RETURNS void';
    const committed = await readFile(join(root, 'sql', 'schema.sql'), 'utf8');
    expect(committed).toContain(`\n${original}\n`);
    const dir = await mkdtemp(join(tmpdir(), 'fleet-schema-edited-'));
    try {
      const file = join(dir, 'schema.sql');
      await writeFile(file, committed.replace(original, edited));

      const { code, output } = await check('sql/schema.sql', file);
      expect(output).toContain('schema: sql/schema.sql is the schema the migrations make');
      expect(output).not.toContain('--- sql/schema.sql');
      expect(output).toContain(`--- ${file}\n+++ dump of sql/migrations\n`);
      expect(output).toContain(`\n-${edited}\n+${original}\n`);
      expect(output).toContain(`schema: ${file} differs from the migrations; run \`npm run schema:dump\``);
      expect(code).toBe(1);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  },
);
