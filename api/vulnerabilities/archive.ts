/**
 * The JSON files of an archive of OSV records: a `.tar.gz` (read as a stream: the gzip
 * and tar layers never hold more than one file), a `.zip` (its central directory names
 * the files; deflate or stored), or a folder. Only node's zlib: the formats' few fields
 * are read here rather than by a dependency.
 */
import { Buffer } from 'node:buffer';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { createGunzip, inflateRawSync } from 'node:zlib';

export interface ArchiveFile {
  name: string;
  data: Buffer;
}

const GZIP = Buffer.from([0x1f, 0x8b]);
const ZIP = Buffer.from([0x50, 0x4b, 0x03, 0x04]);

export function archiveKind(head: Buffer): 'tar.gz' | 'zip' | 'json' {
  if (head.subarray(0, 2).equals(GZIP)) return 'tar.gz';
  if (head.subarray(0, 4).equals(ZIP)) return 'zip';
  return 'json';
}

/** A NUL-terminated field of a tar header. */
function field(header: Buffer, offset: number, length: number): string {
  const raw = header.subarray(offset, offset + length);
  const end = raw.indexOf(0);
  return raw.subarray(0, end < 0 ? length : end).toString('utf8');
}

function octal(header: Buffer, offset: number, length: number): number {
  const value = field(header, offset, length).trim();
  if (!/^[0-7]*$/.test(value)) throw new Error('not a tar archive (bad size field)');
  return value === '' ? 0 : Number.parseInt(value, 8);
}

/** The `path` of a pax extended header, if it sets one. */
function paxPath(data: Buffer): string | null {
  let at = 0;
  let path: string | null = null;
  while (at < data.length) {
    const space = data.indexOf(0x20, at);
    if (space < 0) break;
    const length = Number.parseInt(data.subarray(at, space).toString('ascii'), 10);
    if (!Number.isFinite(length) || length <= 0) break;
    const record = data.subarray(space + 1, at + length - 1).toString('utf8');
    if (record.startsWith('path=')) path = record.slice(5);
    at += length;
  }
  return path;
}

/** The `*.json` files of a gzipped tar stream, one at a time (ustar, pax and GNU long names). */
export async function* tarGzJsonFiles(input: Readable): AsyncGenerator<ArchiveFile> {
  let buffered = Buffer.alloc(0);
  let longName: string | null = null;
  const gunzip = input.pipe(createGunzip());
  const pending: Buffer[] = [];
  let pendingBytes = 0;
  const take = (n: number): Buffer | null => {
    if (buffered.length + pendingBytes < n) return null;
    if (buffered.length < n) {
      buffered = Buffer.concat([buffered, ...pending]);
      pending.length = 0;
      pendingBytes = 0;
    }
    const out = buffered.subarray(0, n);
    buffered = buffered.subarray(n);
    return out;
  };
  let header: Buffer | null = null;
  for await (const chunk of gunzip as AsyncIterable<Buffer>) {
    pending.push(chunk);
    pendingBytes += chunk.length;
    for (;;) {
      if (!header) {
        header = take(512);
        if (!header) break;
        if (header.every((b) => b === 0)) {
          header = null;
          continue;
        }
      }
      const size = octal(header, 124, 12);
      const padded = Math.ceil(size / 512) * 512;
      const body = take(padded);
      if (!body) break;
      const data = Buffer.from(body.subarray(0, size));
      const type = String.fromCharCode(header[156] ?? 0);
      const prefix = field(header, 345, 155);
      const name = longName ?? (prefix ? `${prefix}/${field(header, 0, 100)}` : field(header, 0, 100));
      header = null;
      if (type === 'x') {
        longName = paxPath(data);
      } else if (type === 'L') {
        longName = data.toString('utf8').replace(/\0+$/, '');
      } else {
        longName = null;
        if ((type === '0' || type === '\0') && name.endsWith('.json')) yield { name, data };
      }
    }
  }
}

/** The `*.json` files of a zip archive held in memory. */
export function* zipJsonFiles(zip: Buffer): Generator<ArchiveFile> {
  let eocd = -1;
  for (let at = zip.length - 22; at >= Math.max(0, zip.length - 22 - 0xffff); at--) {
    if (zip.readUInt32LE(at) === 0x06054b50) {
      eocd = at;
      break;
    }
  }
  if (eocd < 0) throw new Error('not a zip archive (no end of central directory)');
  const files = zip.readUInt16LE(eocd + 10);
  let at = zip.readUInt32LE(eocd + 16);
  for (let i = 0; i < files; i++) {
    if (zip.readUInt32LE(at) !== 0x02014b50) throw new Error('damaged zip archive (central directory)');
    const method = zip.readUInt16LE(at + 10);
    const compressed = zip.readUInt32LE(at + 20);
    const nameLength = zip.readUInt16LE(at + 28);
    const extraLength = zip.readUInt16LE(at + 30);
    const commentLength = zip.readUInt16LE(at + 32);
    const local = zip.readUInt32LE(at + 42);
    const name = zip.subarray(at + 46, at + 46 + nameLength).toString('utf8');
    at += 46 + nameLength + extraLength + commentLength;
    if (!name.endsWith('.json')) continue;
    if (zip.readUInt32LE(local) !== 0x04034b50) throw new Error('damaged zip archive (local header)');
    const start = local + 30 + zip.readUInt16LE(local + 26) + zip.readUInt16LE(local + 28);
    const raw = zip.subarray(start, start + compressed);
    if (method === 0) yield { name, data: Buffer.from(raw) };
    else if (method === 8) yield { name, data: inflateRawSync(raw) };
    else throw new Error(`zip compression method ${method} is not supported (only deflate and stored)`);
  }
}

/** The `*.json` files under a folder, in name order. */
export async function* folderJsonFiles(dir: string): AsyncGenerator<ArchiveFile> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  const names = entries
    .filter((e) => e.isFile() && e.name.endsWith('.json'))
    .map((e) => join(e.parentPath, e.name))
    .sort();
  for (const name of names) yield { name, data: await readFile(name) };
}
