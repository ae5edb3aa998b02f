/**
 * One delivery attempt: a `POST` to the webhook's URL that goes only where the policy
 * allows. The host is resolved here, every address checked, and the connection pinned to
 * a checked address (a second DNS answer cannot swap in a private one). 10 s for the whole
 * exchange, no redirects followed, at most the first 1 KiB of an error answer kept.
 */
import { lookup } from 'node:dns/promises';
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { addressFamily, isPrivateAddress } from '../../api/webhooks/url_policy.ts';

const DEFAULT_WEBHOOK_TIMEOUT_MS = 10_000;
const KEPT_BODY_BYTES = 1024;

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** Resolves a host name to all its addresses (tests substitute their own DNS). */
export type Resolver = (host: string) => Promise<ResolvedAddress[]>;

const systemResolver: Resolver = async (host) =>
  (await lookup(host, { all: true, verbatim: true })).map((a) => ({ address: a.address, family: a.family as 4 | 6 }));

export interface PostOptions {
  allowPrivate: boolean;
  timeoutMs?: number;
  resolve?: Resolver;
}

/** What came of an attempt: a status code (any), or an error before one arrived. */
export interface AttemptOutcome {
  statusCode: number | null;
  error: string | null;
}

export async function postWebhook(
  url: string,
  body: string,
  headers: Record<string, string>,
  options: PostOptions,
): Promise<AttemptOutcome> {
  const target = new URL(url);
  const timeoutMs = options.timeoutMs ?? DEFAULT_WEBHOOK_TIMEOUT_MS;
  const started = Date.now();
  let pinned: ResolvedAddress;
  try {
    // The name's resolution counts against the attempt's time: a host whose DNS hangs holds
    // its webhook's queue no longer than one that does not answer.
    pinned = await withinTime(
      checkedAddress(target.hostname, options),
      timeoutMs,
      `${target.hostname} did not resolve`,
    );
  } catch (err) {
    return { statusCode: null, error: (err as Error).message };
  }
  const left = Math.max(1, timeoutMs - (Date.now() - started));
  const client = target.protocol === 'https:' ? https : http;
  const pin: LookupFunction = (_host, opts, done) => {
    if ((opts as { all?: boolean }).all) (done as (e: null, a: ResolvedAddress[]) => void)(null, [pinned]);
    else done(null, pinned.address, pinned.family);
  };
  return new Promise<AttemptOutcome>((settle) => {
    const request = client.request(
      target,
      {
        method: 'POST',
        headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
        lookup: pin,
        agent: false,
      },
      (response) => {
        const status = response.statusCode ?? 0;
        if (status >= 200 && status < 300) {
          response.resume();
          response.on('end', () => settle({ statusCode: status, error: null }));
          response.on('error', () => settle({ statusCode: status, error: null }));
          return;
        }
        const kept: Buffer[] = [];
        let size = 0;
        const finish = () => {
          const text = Buffer.concat(kept).subarray(0, KEPT_BODY_BYTES).toString('utf8');
          const location = response.headers.location;
          const why =
            status >= 300 && status < 400
              ? `redirect${location ? ` to ${String(location).slice(0, 200)}` : ''} not followed`
              : `answered ${status}`;
          settle({ statusCode: status, error: text ? `${why}: ${text}` : why });
        };
        response.on('data', (chunk: Buffer) => {
          if (size < KEPT_BODY_BYTES) kept.push(chunk);
          size += chunk.length;
          // Enough kept: stop reading a large or endless answer.
          if (size >= KEPT_BODY_BYTES) {
            response.destroy();
            finish();
          }
        });
        response.on('end', finish);
        response.on('error', finish);
      },
    );
    const timer = setTimeout(() => {
      request.destroy(new Error(`no answer within ${timeoutMs / 1000} s`));
    }, left);
    request.on('error', (err) => settle({ statusCode: null, error: err.message }));
    request.on('close', () => clearTimeout(timer));
    request.end(body);
  });
}

/** The promise's value, or a rejection naming `what` when it takes longer than `ms`. */
function withinTime<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} within ${ms / 1000} s`)), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

/** An address of the host that the policy allows; throws naming the refused one. */
async function checkedAddress(host: string, options: PostOptions): Promise<ResolvedAddress> {
  const bare = host.replace(/^\[|\]$/g, '');
  const family = addressFamily(bare);
  const addresses = family
    ? [{ address: bare, family }]
    : await (options.resolve ?? systemResolver)(bare).catch((err: Error) => {
        throw new Error(`could not resolve ${bare}: ${err.message}`);
      });
  if (addresses.length === 0) throw new Error(`could not resolve ${bare}: no address`);
  if (!options.allowPrivate) {
    const refused = addresses.find((a) => isPrivateAddress(a.address));
    if (refused) throw new Error(`${bare} resolves to ${refused.address}, a private address (WEBHOOK_ALLOW_PRIVATE)`);
  }
  return addresses[0]!;
}
