/**
 * Serving an ISO file: the `Range` rules (single byte ranges, for resumable downloads of
 * large images) and a pull-based web stream over a file handle, so the bytes come
 * straight from disk with back-pressure on Node and Deno alike.
 */
import { open, type FileHandle } from 'node:fs/promises';

export type RangeDecision =
  | { kind: 'full' }
  | { kind: 'partial'; start: number; end: number }
  | { kind: 'unsatisfiable' };

/**
 * RFC 9110 §14: a `Range` the server does not understand (another unit, bad syntax,
 * several ranges) is ignored and the whole file is sent; a syntactically valid range
 * that starts past the end is 416. An `If-Range` that is not the current ETag also sends
 * the whole file, so a resumed download never mixes two images.
 */
export function decideRange(
  range: string | undefined,
  ifRange: string | undefined,
  etag: string,
  size: number,
): RangeDecision {
  if (range === undefined) return { kind: 'full' };
  if (ifRange !== undefined && ifRange.trim() !== etag) return { kind: 'full' };
  const match = /^bytes=(\d*)-(\d*)$/.exec(range.trim());
  if (!match) return { kind: 'full' };
  const [, first = '', last = ''] = match;
  if (first === '' && last === '') return { kind: 'full' };
  if (first === '') {
    const suffix = Number(last);
    if (suffix === 0 || size === 0) return { kind: 'unsatisfiable' };
    return { kind: 'partial', start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(first);
  const end = last === '' ? Number.MAX_SAFE_INTEGER : Number(last);
  if (!Number.isSafeInteger(start) || !Number.isSafeInteger(end) || end < start) return { kind: 'full' };
  if (start >= size) return { kind: 'unsatisfiable' };
  return { kind: 'partial', start, end: Math.min(end, size - 1) };
}

/** Opens the file for reading; null when it is not there. */
export async function openFile(path: string): Promise<{ handle: FileHandle; size: number } | null> {
  let handle: FileHandle;
  try {
    handle = await open(path, 'r');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
  try {
    // The size of the opened file: what we send even if the path is replaced meanwhile.
    const { size } = await handle.stat();
    return { handle, size };
  } catch (err) {
    await handle.close();
    throw err;
  }
}

const CHUNK = 256 * 1024;

/** Bytes `start..end` (inclusive) of the file; closes the handle when done or cancelled. */
export function fileStream(handle: FileHandle, start: number, end: number): ReadableStream<Uint8Array> {
  let position = start;
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    await handle.close();
  };
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const want = Math.min(CHUNK, end + 1 - position);
        if (want <= 0) {
          await close();
          controller.close();
          return;
        }
        const buffer = new Uint8Array(want);
        const { bytesRead } = await handle.read(buffer, 0, want, position);
        if (bytesRead === 0) throw new Error('the file ended before its recorded size');
        position += bytesRead;
        controller.enqueue(buffer.subarray(0, bytesRead));
      } catch (err) {
        await close().catch(() => {});
        controller.error(err);
      }
    },
    async cancel() {
      await close();
    },
  });
}
