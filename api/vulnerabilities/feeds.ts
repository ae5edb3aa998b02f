/**
 * Reading the security feeds (worker side): each from an `https://` URL, asked
 * conditionally (ETag / Last-Modified), or a `file://` path (a file, or for Ubuntu a
 * folder of OSV records) for sites without internet. A read that fails to download or
 * parse changes no entry and records its error; a good one replaces the feed's entries in
 * one transaction, and only when their content changed.
 */
import { Buffer } from 'node:buffer';
import { createHash } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import type { Sql } from '../db/client.ts';
import { archiveKind, folderJsonFiles, tarGzJsonFiles, zipJsonFiles, type ArchiveFile } from './archive.ts';
import { type FeedEntry, type FeedName, type ParsedFeed, parseDebianTracker, parseUbuntuOsv } from './feed_parse.ts';

/** Rows per insert statement: far below the database's statement time limit. */
const INSERT_BATCH = 20_000;
/** The longest a download may take. */
const DOWNLOAD_TIMEOUT_MS = 10 * 60_000;

export type FeedResult = { feed: FeedName; outcome: 'changed' | 'unchanged' | 'failed'; error?: string };

interface Downloaded {
  /** null: the server answered 304. */
  content: { bytes: Buffer } | { folder: string } | null;
  etag: string | null;
  lastModified: string | null;
}

interface FeedRow {
  source: string | null;
  etag: string | null;
  last_modified: string | null;
  content_sha256: Buffer | null;
}

async function download(source: string, known: FeedRow | null): Promise<Downloaded> {
  const url = new URL(source);
  if (url.protocol === 'file:') {
    const path = fileURLToPath(url);
    if ((await stat(path)).isDirectory()) return { content: { folder: path }, etag: null, lastModified: null };
    return { content: { bytes: await readFile(path) }, etag: null, lastModified: null };
  }
  if (url.protocol !== 'https:') throw new Error('a feed is read from an https:// URL or a file:// path');
  const headers: Record<string, string> = { accept: '*/*' };
  if (known?.etag) headers['if-none-match'] = known.etag;
  if (known?.last_modified) headers['if-modified-since'] = known.last_modified;
  const response = await fetch(url, { headers, redirect: 'follow', signal: AbortSignal.timeout(DOWNLOAD_TIMEOUT_MS) });
  if (response.status === 304) {
    await response.body?.cancel();
    return { content: null, etag: known?.etag ?? null, lastModified: known?.last_modified ?? null };
  }
  if (!response.ok) {
    await response.body?.cancel();
    throw new Error(`download failed: HTTP ${response.status}`);
  }
  return {
    content: { bytes: Buffer.from(await response.arrayBuffer()) },
    etag: response.headers.get('etag'),
    lastModified: response.headers.get('last-modified'),
  };
}

async function* ubuntuFiles(content: { bytes: Buffer } | { folder: string }): AsyncGenerator<ArchiveFile> {
  if ('folder' in content) {
    yield* folderJsonFiles(content.folder);
    return;
  }
  const kind = archiveKind(content.bytes);
  if (kind === 'tar.gz') yield* tarGzJsonFiles(Readable.from([content.bytes]));
  else if (kind === 'zip') yield* zipJsonFiles(content.bytes);
  else yield { name: 'record.json', data: content.bytes };
}

/** The content's hash, and its entries; throws when it cannot be read. */
async function parse(feed: FeedName, content: { bytes: Buffer } | { folder: string }) {
  const hash = createHash('sha256');
  let parsed: ParsedFeed;
  if (feed === 'debian') {
    if (!('bytes' in content)) throw new Error('the Debian feed is one JSON file, not a folder');
    hash.update(content.bytes);
    parsed = parseDebianTracker(content.bytes.toString('utf8'));
  } else {
    const entries: FeedEntry[] = [];
    const seen = new Set<string>();
    let count = 0;
    for await (const file of ubuntuFiles(content)) {
      hash.update(`${file.name}\n${file.data.length}\n`).update(file.data);
      let record: unknown;
      try {
        record = JSON.parse(file.data.toString('utf8'));
      } catch {
        throw new Error(`${file.name.split('/').pop()} is not JSON`);
      }
      count += parseUbuntuOsv(record, entries, seen);
    }
    parsed = { entries, count };
  }
  if (parsed.count === 0) throw new Error('the feed holds no entries');
  return { sha256: hash.digest(), parsed };
}

/** A short, single-line error for the feeds list (no stack, no URL credentials). */
function describe(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  return message.replace(/\s+/g, ' ').slice(0, 1000);
}

/**
 * Reads one feed from `source` and stores it when it changed. Never throws for a bad
 * download or content: the error is recorded on the feed and returned.
 */
export async function refreshFeed(sql: Sql, feed: FeedName, source: string): Promise<FeedResult> {
  const [row] = await sql<FeedRow[]>`
    update vulnerability_feeds set last_attempt_at = now_ms() where name = ${feed}
    returning source, etag, last_modified, content_sha256`;
  // Another source's validators and hash say nothing about this one.
  const known = row && row.source === source ? row : null;
  try {
    const got = await download(source, known);
    if (got.content === null) {
      await markSuccess(sql, feed, source, got);
      return { feed, outcome: 'unchanged' };
    }
    const { sha256, parsed } = await parse(feed, got.content);
    if (known?.content_sha256 && Buffer.from(known.content_sha256).equals(sha256)) {
      await markSuccess(sql, feed, source, got);
      return { feed, outcome: 'unchanged' };
    }
    await store(sql, feed, source, got, sha256, parsed);
    return { feed, outcome: 'changed' };
  } catch (err) {
    const error = describe(err);
    await sql`update vulnerability_feeds set last_error = ${error}, source = ${source} where name = ${feed}`;
    return { feed, outcome: 'failed', error };
  }
}

async function markSuccess(sql: Sql, feed: FeedName, source: string, got: Downloaded) {
  await sql`
    update vulnerability_feeds
       set last_success_at = now_ms(), last_error = null, source = ${source},
           etag = ${got.etag}, last_modified = ${got.lastModified}
     where name = ${feed}`;
}

async function store(sql: Sql, feed: FeedName, source: string, got: Downloaded, sha256: Buffer, parsed: ParsedFeed) {
  await sql.begin(async (tx) => {
    await tx`select 1 from vulnerability_feeds where name = ${feed} for update`;
    await tx`delete from vulnerability_entries where feed = ${feed}`;
    const { entries } = parsed;
    for (let i = 0; i < entries.length; i += INSERT_BATCH) {
      const batch = entries.slice(i, i + INSERT_BATCH);
      await tx`
        insert into vulnerability_entries (feed, release, source, cve, introduced, fixed_version, urgency)
        select ${feed}, * from unnest(
          ${batch.map((e) => e.release)}::text[], ${batch.map((e) => e.source)}::text[],
          ${batch.map((e) => e.cve)}::text[], ${batch.map((e) => e.introduced)}::text[],
          ${batch.map((e) => e.fixed)}::text[], ${batch.map((e) => e.urgency)}::text[])`;
    }
    await tx`
      update vulnerability_feeds
         set last_success_at = now_ms(), last_error = null, source = ${source}, etag = ${got.etag},
             last_modified = ${got.lastModified}, content_sha256 = ${sha256}, entries = ${parsed.count},
             version = version + 1
       where name = ${feed}`;
  });
}
