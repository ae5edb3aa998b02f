/**
 * GET /api/v1/docs: interactive docs (Swagger UI) of /api/v1/openapi.json, served from the
 * swagger-ui-dist package so they work without any outside network. "Authorize" takes the
 * operator token or an organization API key; it is kept in the browser only.
 *
 * The assets are read and gzip-compressed once per process. Their URLs carry a hash of
 * their content, so browsers may keep them for a year; the ETag answers a revalidation
 * with 304.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import type { Context } from 'hono';
import { accessMiddleware } from '../access/middleware.ts';
import { newRouter } from '../access/route.ts';

const types: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
  'swagger-ui-standalone-preset.js': 'text/javascript; charset=utf-8',
  'favicon-32x32.png': 'image/png',
  'favicon-16x16.png': 'image/png',
  'init.js': 'text/javascript; charset=utf-8',
};

const init = `window.ui = SwaggerUIBundle({
  url: '/api/v1/openapi.json',
  dom_id: '#swagger-ui',
  deepLinking: true,
  persistAuthorization: true,
  tryItOutEnabled: true,
  presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset],
  layout: 'StandaloneLayout',
});`;

interface Asset {
  type: string;
  bytes: Uint8Array;
  /** Only when compressing pays (text, not PNG). */
  gzip: Uint8Array | null;
  etag: string;
}

let loading: Promise<Map<string, Asset>> | undefined;

function assets(): Promise<Map<string, Asset>> {
  loading ??= (async () => {
    const map = new Map<string, Asset>();
    for (const [name, type] of Object.entries(types)) {
      const bytes =
        name === 'init.js'
          ? new TextEncoder().encode(init)
          : new Uint8Array(await readFile(fileURLToPath(import.meta.resolve(`swagger-ui-dist/${name}`))));
      const gzip = type.startsWith('text/') ? new Uint8Array(gzipSync(bytes, { level: 9 })) : null;
      const etag = `"${createHash('sha256').update(bytes).digest('base64url').slice(0, 22)}"`;
      map.set(name, { type, bytes, gzip, etag });
    }
    return map;
  })();
  loading.catch(() => {
    loading = undefined;
  });
  return loading;
}

function url(name: string, all: Map<string, Asset>): string {
  return `/api/v1/docs/${name}?v=${all.get(name)?.etag.slice(1, 13)}`;
}

function page(all: Map<string, Asset>): string {
  return `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Fleet provisioning API</title>
  <link rel="icon" type="image/png" sizes="32x32" href="${url('favicon-32x32.png', all)}">
  <link rel="icon" type="image/png" sizes="16x16" href="${url('favicon-16x16.png', all)}">
  <link rel="stylesheet" href="${url('swagger-ui.css', all)}">
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="${url('swagger-ui-bundle.js', all)}"></script>
  <script src="${url('swagger-ui-standalone-preset.js', all)}"></script>
  <script src="${url('init.js', all)}"></script>
</body>
</html>`;
}

function acceptsGzip(c: Context): boolean {
  return /\bgzip\b/i.test(c.req.header('accept-encoding') ?? '');
}

export function docsRoutes() {
  const anyone = accessMiddleware({ method: 'get', access: 'public' });
  return newRouter()
    .get('/docs', anyone, async (c) => c.html(page(await assets()), 200, { 'cache-control': 'no-cache' }))
    .get('/docs/:asset', anyone, async (c) => {
      const asset = (await assets()).get(c.req.param('asset'));
      if (!asset) return c.notFound();
      const headers: Record<string, string> = {
        'content-type': asset.type,
        'cache-control': 'public, max-age=31536000, immutable',
        etag: asset.etag,
        vary: 'Accept-Encoding',
      };
      const match = c.req.header('if-none-match');
      if (match?.split(',').some((tag) => tag.trim().replace(/^W\//, '') === asset.etag)) {
        return c.body(null, 304, headers);
      }
      if (asset.gzip && acceptsGzip(c)) {
        return c.body(asset.gzip as Uint8Array<ArrayBuffer>, 200, { ...headers, 'content-encoding': 'gzip' });
      }
      return c.body(asset.bytes as Uint8Array<ArrayBuffer>, 200, headers);
    });
}
