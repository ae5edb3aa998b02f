/**
 * Local state under DATA_DIR: generated secrets (admin token, WLAN key, embedded database
 * password), kept in files of mode 0600 and generated once.
 */
import { mkdir, readFile, writeFile, chmod } from 'node:fs/promises';
import { join } from 'node:path';

export async function ensureDataDir(dataDir: string): Promise<void> {
  await mkdir(dataDir, { recursive: true });
  // The embedded PostgreSQL runs as its own user and must be able to traverse into
  // DATA_DIR to reach its data folder; the secrets in it stay 0600.
  await chmod(dataDir, 0o711);
  // The ISO files (activation code, WLAN password) are the service user's alone.
  await mkdir(join(dataDir, 'isos'), { mode: 0o700 }).catch((err: NodeJS.ErrnoException) => {
    if (err.code !== 'EEXIST') throw err;
  });
}

/** Reads the secret file, or creates it with `generate()` (mode 0600, never overwritten). */
export async function loadOrCreateSecret(
  dataDir: string,
  name: string,
  generate: () => string,
): Promise<{ value: string; path: string; created: boolean }> {
  const path = join(dataDir, name);
  try {
    return { value: (await readFile(path, 'utf8')).trim(), path, created: false };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  const value = generate();
  try {
    await writeFile(path, value + '\n', { mode: 0o600, flag: 'wx' });
    return { value, path, created: true };
  } catch (err) {
    // Another process created it first: use theirs.
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    return { value: (await readFile(path, 'utf8')).trim(), path, created: false };
  }
}
