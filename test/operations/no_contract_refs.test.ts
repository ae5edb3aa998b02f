/**
 * The project documents itself: code, comments and the OpenAPI document point to the
 * folders' own READMEs or say the rule inline, never to a product contract that is not in
 * the repository (issue 39).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { useTestApp } from '../support/app.ts';

const ctx = useTestApp();
const root = new URL('../..', import.meta.url).pathname;
const FORBIDDEN = 'CONTRACT';

/** Every file under `dir`, as paths relative to the repository. */
function* files(dir: string): Generator<string> {
  for (const entry of readdirSync(join(root, dir), { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* files(path);
    else if (entry.isFile()) yield path;
  }
}

/** The lines of `text` that name the contract, as `path:line: text`. */
function mentions(path: string, text: string): string[] {
  return text.split('\n').flatMap((line, i) => (line.includes(FORBIDDEN) ? [`${path}:${i + 1}: ${line.trim()}`] : []));
}

describe(`no "${FORBIDDEN}" reference`, () => {
  it('in any text file under api/ or jobs/', () => {
    const found: string[] = [];
    let read = 0;
    for (const path of [...files('api'), ...files('jobs')]) {
      const bytes = readFileSync(join(root, path));
      if (bytes.includes(0)) continue; // binary
      read++;
      found.push(...mentions(relative(root, join(root, path)), bytes.toString('utf8')));
    }
    expect(read).toBeGreaterThan(100);
    expect(found).toEqual([]);
  });

  it('in the OpenAPI document or the docs page', async () => {
    const doc = await ctx.request('GET', '/api/v1/openapi.json', { token: null });
    expect(doc.status).toBe(200);
    expect(mentions('openapi.json', JSON.stringify(doc.body, null, 1))).toEqual([]);
    const page = await ctx.app.request('/api/v1/docs');
    expect(page.status).toBe(200);
    expect(mentions('docs', await page.text())).toEqual([]);
  });
});
