/**
 * GET /api/v1/docs: interactive docs (Swagger UI) of /api/v1/openapi.json, served from the
 * swagger-ui-dist package so they work without any outside network. "Authorize" takes the
 * operator token or an organization API key; it is kept in the browser only.
 */
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { accessMiddleware } from '../access/middleware.ts';
import { newRouter } from '../http/openapi.ts';

const assets: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
  'swagger-ui-standalone-preset.js': 'text/javascript; charset=utf-8',
};

const page = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Fleet provisioning API</title>
  <link rel="stylesheet" href="/api/v1/docs/swagger-ui.css">
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="/api/v1/docs/swagger-ui-bundle.js"></script>
  <script src="/api/v1/docs/swagger-ui-standalone-preset.js"></script>
  <script src="/api/v1/docs/init.js"></script>
</body>
</html>`;

const init = `window.ui = SwaggerUIBundle({
  url: '/api/v1/openapi.json',
  dom_id: '#swagger-ui',
  deepLinking: true,
  persistAuthorization: true,
  tryItOutEnabled: true,
  presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset],
  layout: 'StandaloneLayout',
});`;

const cache = new Map<string, string>();

async function asset(name: string): Promise<string> {
  let text = cache.get(name);
  if (text === undefined) {
    text = await readFile(fileURLToPath(import.meta.resolve(`swagger-ui-dist/${name}`)), 'utf8');
    cache.set(name, text);
  }
  return text;
}

export function docsRoutes() {
  const anyone = accessMiddleware({ method: 'get', access: 'public' });
  return newRouter()
    .get('/docs', anyone, (c) => c.html(page))
    .get('/docs/init.js', anyone, (c) => c.body(init, 200, { 'content-type': 'text/javascript; charset=utf-8' }))
    .get('/docs/:asset', anyone, async (c) => {
      const name = c.req.param('asset');
      const type = assets[name];
      if (!type) return c.notFound();
      return c.body(await asset(name), 200, { 'content-type': type, 'cache-control': 'public, max-age=86400' });
    });
}
