/**
 * GET /api/v1/docs: interactive docs (Swagger UI) of /api/v1/openapi.json, served from the
 * swagger-ui-dist package so they work without any outside network. "Authorize" takes the
 * operator token or an organization API key; it lives in the page's memory only, never in
 * the browser's storage, so it is gone when the tab closes or reloads.
 *
 * The assets are read and gzip-compressed once per process. Their URLs carry a hash of
 * their content, so browsers may keep them for a year; the ETag answers a revalidation
 * with 304. The OpenAPI document is built and compressed once per process too.
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
  'docs.css': 'text/css; charset=utf-8',
};

// BaseLayout: no top bar (its "Explore" box loads other documents), so "Authorize" shows
// on the first screen. The callers plugin writes each operation's `x-callers` into its
// summary line, where a customer scans for what their key may do; showExtensions lists
// them once more in the opened operation.
const init = `const callers = { anyone: 'anyone', installer: 'installer', agent: 'agent', operator: 'operator', admin: 'admin key', viewer: 'viewer key' };
function CallersPlugin(system) {
  const h = system.React.createElement;
  return {
    wrapComponents: {
      OperationSummaryPath: (Original, sys) => (props) => {
        // From the document itself: an operation is resolved only once it is opened.
        const where = ['paths', props.operationProps.get('path'), props.operationProps.get('method'), 'x-callers'];
        const list = sys.specSelectors.specJson().getIn(where);
        const names = list ? list.toJS().map((c) => callers[c] || c) : [];
        return h(system.React.Fragment, null, h(Original, props),
          names.length ? h('span', { className: 'x-callers', title: 'x-callers: who may call this operation' }, names.join(' · ')) : null);
      },
    },
  };
}
window.ui = SwaggerUIBundle({
  url: '/api/v1/openapi.json',
  dom_id: '#swagger-ui',
  deepLinking: true,
  persistAuthorization: false,
  showExtensions: true,
  tryItOutEnabled: true,
  presets: [SwaggerUIBundle.presets.apis],
  plugins: [CallersPlugin],
  layout: 'BaseLayout',
});`;

const css = `.swagger-ui .x-callers { margin: 0 10px; padding: 2px 8px; border-radius: 4px; background: #eef1f4;
  color: #3b4151; font-family: sans-serif; font-size: 12px; white-space: nowrap; }`;

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
        name === 'init.js' || name === 'docs.css'
          ? new TextEncoder().encode(name === 'init.js' ? init : css)
          : new Uint8Array(await readFile(fileURLToPath(import.meta.resolve(`swagger-ui-dist/${name}`))));
      map.set(name, stored(type, bytes));
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
  <link rel="stylesheet" href="${url('docs.css', all)}">
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="${url('swagger-ui-bundle.js', all)}"></script>
  <script src="${url('init.js', all)}"></script>
</body>
</html>`;
}

function acceptsGzip(c: Context): boolean {
  return /\bgzip\b/i.test(c.req.header('accept-encoding') ?? '');
}

/** A response body kept once per process, plain and gzip-compressed, with its ETag. */
function stored(type: string, bytes: Uint8Array): Asset {
  return {
    type,
    bytes,
    gzip:
      type.startsWith('text/') || type.startsWith('application/json')
        ? new Uint8Array(gzipSync(bytes, { level: 9 }))
        : null,
    etag: `"${createHash('sha256').update(bytes).digest('base64url').slice(0, 22)}"`,
  };
}

/** 304 for a matching If-None-Match, else the body, compressed when the client takes gzip. */
function send(c: Context, asset: Asset, cacheControl: string) {
  const headers: Record<string, string> = {
    'content-type': asset.type,
    'cache-control': cacheControl,
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
}

/**
 * GET /api/v1/openapi.json. `build` makes the document from the app's routes; every route
 * is registered before the first request, so it is built once, at the first request.
 * Compressed it is about a tenth of its size.
 */
export function openapiDocumentRoutes(build: () => unknown) {
  let document: Asset | undefined;
  return newRouter().get('/openapi.json', accessMiddleware({ method: 'get', access: 'public' }), (c) => {
    document ??= stored('application/json', new TextEncoder().encode(JSON.stringify(build())));
    return send(c, document, 'no-cache');
  });
}

export function docsRoutes() {
  const anyone = accessMiddleware({ method: 'get', access: 'public' });
  return newRouter()
    .get('/docs', anyone, async (c) => c.html(page(await assets()), 200, { 'cache-control': 'no-cache' }))
    .get('/docs/:asset', anyone, async (c) => {
      const asset = (await assets()).get(c.req.param('asset'));
      if (!asset) return c.notFound();
      return send(c, asset, 'public, max-age=31536000, immutable');
    });
}
