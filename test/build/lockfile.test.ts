/**
 * `npm ci` installs exactly what package-lock.json lists. A dependency that ships its binary
 * as per-platform optional packages (dbmate, deno, esbuild, Biome, ...) works on a fresh
 * clone only if the lock lists every platform package it declares: npm ci on a machine whose
 * platform is missing from the lock stops with "lock file out of sync". npm leaves a platform
 * package out when the registry lacks that version, so a dependency must be pinned to a
 * version published for every platform.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

interface LockEntry {
  version?: string;
  hasInstallScript?: boolean;
  optionalDependencies?: Record<string, string>;
  resolved?: string;
}

interface Lock {
  lockfileVersion: number;
  packages: Record<string, LockEntry>;
}

const lock = JSON.parse(readFileSync(new URL('../../package-lock.json', import.meta.url), 'utf8')) as Lock;

/** Where Node's resolution finds `name` from the package installed at `from` (a lock key). */
function resolveFrom(lock: Lock, from: string, name: string): LockEntry | undefined {
  let dir = from;
  for (;;) {
    const hit = lock.packages[`${dir ? `${dir}/` : ''}node_modules/${name}`];
    if (hit) return hit;
    if (!dir) return undefined;
    const cut = dir.lastIndexOf('node_modules/');
    dir = cut <= 0 ? '' : dir.slice(0, cut - 1);
  }
}

/** Every optional dependency a locked package declares that the lock does not hold. */
function missingOptionalPackages(lock: Lock): string[] {
  const missing: string[] = [];
  for (const [path, entry] of Object.entries(lock.packages)) {
    for (const name of Object.keys(entry.optionalDependencies ?? {})) {
      if (!resolveFrom(lock, path, name))
        missing.push(`${path || '(root)'} -> ${name}@${entry.optionalDependencies?.[name]}`);
    }
  }
  return missing;
}

describe('package-lock.json', () => {
  it('is a version 3 lock file', () => {
    expect(lock.lockfileVersion).toBe(3);
  });

  it('holds every platform package that a locked dependency declares', () => {
    expect(missingOptionalPackages(lock)).toEqual([]);
  });

  it('the check finds a platform package that is missing, also beside a nested copy', () => {
    const synthetic: Lock = {
      lockfileVersion: 3,
      packages: {
        '': {},
        'node_modules/tool': { optionalDependencies: { '@tool/linux-x64': '1.0.0', '@tool/darwin-arm64': '1.0.0' } },
        'node_modules/@tool/linux-x64': { version: '1.0.0' },
        'node_modules/a/node_modules/tool': { optionalDependencies: { '@tool/linux-x64': '2.0.0' } },
        'node_modules/a/node_modules/@tool/linux-x64': { version: '2.0.0' },
      },
    };
    expect(missingOptionalPackages(synthetic)).toEqual(['node_modules/tool -> @tool/darwin-arm64@1.0.0']);
  });

  it('has every install script reviewed in allowScripts, for every platform', () => {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
      allowScripts: Record<string, boolean>;
    };
    const unreviewed = Object.entries(lock.packages)
      .filter(([path, entry]) => path && entry.hasInstallScript)
      .map(([path]) => path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length))
      .filter((name) => !(name in pkg.allowScripts));
    expect(unreviewed).toEqual([]);
  });

  it('records no download addresses (npm ci resolves them from the configured registry)', () => {
    const withAddress = Object.entries(lock.packages)
      .filter(([, e]) => e.resolved !== undefined)
      .map(([p]) => p);
    expect(withAddress).toEqual([]);
  });
});
