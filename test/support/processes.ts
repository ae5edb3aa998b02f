/**
 * The process table as Linux shows it in /proc, for tests that check what is left after a
 * stop or a kill: without procps (pgrep, ps), which a machine with only Node may lack.
 */
import { readdirSync, readFileSync } from 'node:fs';

export interface ProcessInfo {
  pid: number;
  ppid: number;
  pgid: number;
  /** R, S, D, Z (zombie), X (dead), ... */
  state: string;
  command: string;
}

/** One process, or null when it is gone (zombies are still listed, with state Z). */
function processInfo(pid: number): ProcessInfo | null {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  // "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses, so split after the last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  let command = '';
  try {
    command = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').trim();
  } catch {
    // gone meanwhile
  }
  return { pid, state: fields[0]!, ppid: Number(fields[1]), pgid: Number(fields[2]), command };
}

export function allProcesses(): ProcessInfo[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .map((name) => processInfo(Number(name)))
    .filter((p): p is ProcessInfo => p !== null);
}

/** Processes that still run (not zombies) in the process group. */
export function liveInGroup(pgid: number): ProcessInfo[] {
  return allProcesses().filter((p) => p.pgid === pgid && p.state !== 'Z' && p.state !== 'X');
}

/** The living children, grandchildren, ... of a process. */
export function liveDescendants(pid: number): ProcessInfo[] {
  const all = allProcesses().filter((p) => p.state !== 'Z' && p.state !== 'X');
  const found: ProcessInfo[] = [];
  let parents = new Set([pid]);
  while (parents.size > 0) {
    const children = all.filter((p) => parents.has(p.ppid));
    found.push(...children);
    parents = new Set(children.map((p) => p.pid));
  }
  return found;
}

/** Whether the process runs (a zombie does not). */
export function running(pid: number): boolean {
  const info = processInfo(pid);
  return info !== null && info.state !== 'Z' && info.state !== 'X';
}
