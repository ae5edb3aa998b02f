/**
 * Local state under DATA_DIR: generated secrets (admin token, WLAN key, embedded database
 * password), kept in files of mode 0600 and generated once; and who holds the folder.
 */
import { readFileSync } from 'node:fs';
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

/**
 * What a process recorded as the owner of DATA_DIR (or its embedded PostgreSQL) is now:
 * `running`; `dying` (it is exiting: it still holds what it held for a moment); or `gone`,
 * which includes a zombie (exited, only waiting for its parent to collect its status; it
 * still answers kill(pid, 0)) and a pid reused by another program (its command line is not
 * the recorded one). Where /proc cannot be read, kill(pid, 0) decides.
 */
export function processState(pid: number, command?: string): 'running' | 'dying' | 'gone' {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 'gone';
    return signalable(pid) ? 'running' : 'gone';
  }
  // "pid (comm) state ppid pgrp session tty_nr tpgid flags ...": comm may hold spaces.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const state = fields[0];
  if (state === 'Z' || state === 'X' || state === 'x') return 'gone';
  if ((Number(fields[6]) & PF_EXITING) !== 0) return 'dying';
  if (command !== undefined && commandLineOf(pid) !== command) return 'gone';
  return 'running';
}

/** The kernel's flag of a process that is exiting (linux/sched.h). */
const PF_EXITING = 0x4;

function signalable(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The process's command line as one string (Linux /proc), or null where it cannot be read. */
export function commandLineOf(pid: number): string | null {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').trim();
  } catch {
    return null;
  }
}

/** This process as the owner of DATA_DIR: its pid, then its command line. */
export function ownerRecord(): string {
  return `${process.pid}\n${commandLineOf(process.pid) ?? ''}\n`;
}

/** The owner file's pid and command line (the command is absent in files of older releases). */
export function readOwnerRecord(path: string): { pid: number; command?: string } | null {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return null;
  }
  const [first, command] = text.split('\n');
  const pid = Number.parseInt(first ?? '', 10);
  if (!Number.isInteger(pid) || pid <= 0) return null;
  return command ? { pid, command } : { pid };
}
