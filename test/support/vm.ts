/**
 * What the VM tests share: the Debian mirror of the host's apt configuration, and a forward
 * proxy that passes only to it (the guest reaches nothing else of the network).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';

export interface Mirror {
  host: string;
  directory: string;
}

/** The Debian mirror of the host's apt configuration: the host of a `…/debian` URI. */
export function hostMirror(): Mirror {
  const files = ['/etc/apt/sources.list'];
  const dir = '/etc/apt/sources.list.d';
  if (existsSync(dir)) files.push(...readdirSync(dir).map((name) => join(dir, name)));
  for (const file of files) {
    if (!existsSync(file)) continue;
    for (const m of readFileSync(file, 'utf8').matchAll(/\bhttps?:\/\/([a-z0-9.-]+)(\/debian)\/?(?=\s|$)/gim)) {
      return { host: m[1]!, directory: m[2]! };
    }
  }
  throw new Error('no Debian mirror (a …/debian URI) in the host apt configuration');
}

/**
 * A forward proxy on a loopback port for plain-HTTP requests to the mirror only (the guest
 * asks with absolute URLs); anything else is refused with 403. `proxied` collects the paths.
 */
export async function mirrorProxy(mirror: Mirror, proxied: string[]): Promise<{ server: Server; port: number }> {
  const server = createServer((req, res) => {
    let url: URL;
    try {
      url = new URL(req.url ?? '');
    } catch {
      res.writeHead(400).end();
      return;
    }
    if (url.protocol !== 'http:' || url.hostname !== mirror.host) {
      res.writeHead(403).end('only the Debian mirror');
      return;
    }
    proxied.push(url.pathname);
    const { 'proxy-connection': _hop, ...rest } = req.headers as Record<string, string | string[] | undefined>;
    const headers = { ...rest, host: url.host };
    const upstream = request(url, { method: req.method, headers }, (up) => {
      res.writeHead(up.statusCode ?? 502, up.headers);
      up.pipe(res);
    });
    upstream.on('error', () => res.writeHead(502).end());
    req.pipe(upstream);
  });
  await new Promise<void>((ready) => server.listen(0, '127.0.0.1', () => ready()));
  return { server, port: (server.address() as AddressInfo).port };
}
