/**
 * `GET /docs`: the API reference (docs/API.md, "API reference"). Swagger UI renders `/v1/openapi.json` in the browser;
 * its files come from the `swagger-ui-dist` npm package and are served from here (no CDN), together
 * with `petstore-docs.js`, the small plugin that makes Swagger UI honour `x-sunset`, `x-stability`
 * and `x-hideTryItPanel`. Public: no key, not rate limited.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { gzipSync } from 'node:zlib';
import type { Context, Middleware, Next } from 'koa';
import { projectPath } from '../project-path.js';
import { HttpError } from '../http/errors.js';
import { setHeader } from '../http/headers.js';

export interface DocsOptions {
  /** Where the browser fetches the document from. */
  specUrl?: string;
  /** Page title. */
  title?: string;
  /** Link the GraphQL explorers (GraphiQL, Apollo Sandbox): they exist outside production only. */
  explorers?: boolean;
}

export interface Asset {
  file: string;
  type: string;
  body?: Buffer;
  gzipped?: Buffer;
}

/**
 * Only scripts and styles from this origin; Swagger UI sets inline `style` attributes and uses `data:`
 * images in its stylesheet; try-it requests go to this origin only.
 */
export const DOCS_CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

function swaggerUiDistDir(): string {
  const require = createRequire(import.meta.url);
  return dirname(require.resolve('swagger-ui-dist/package.json'));
}

/** Koa middleware answering `/docs` and `/docs/assets/*`; passes everything else on. */
export function docsRoutes(options: DocsOptions = {}): Middleware {
  const specUrl = options.specUrl ?? '/v1/openapi.json';
  const title = options.title ?? 'Petstore API reference';
  const vendor = swaggerUiDistDir();
  const assets: Record<string, Asset> = {
    'swagger-ui-bundle.js': { file: join(vendor, 'swagger-ui-bundle.js'), type: 'text/javascript; charset=utf-8' },
    'swagger-ui.css': { file: join(vendor, 'swagger-ui.css'), type: 'text/css; charset=utf-8' },
    'favicon-32x32.png': { file: join(vendor, 'favicon-32x32.png'), type: 'image/png' },
    'petstore-docs.js': { file: projectPath('src/docs/assets/petstore-docs.js'), type: 'text/javascript; charset=utf-8' },
    'petstore-docs.css': { file: projectPath('src/docs/assets/petstore-docs.css'), type: 'text/css; charset=utf-8' },
  };
  const page = Buffer.from(renderPage(title, specUrl, options.explorers ?? true));

  return pageWithAssets('/docs', 'the reference', page, assets);
}

/**
 * A public, read-only page at `path` and its local assets under `path/assets/`: `path/` redirects to
 * `path`, anything else is left to the next middleware (the 404).
 */
export function pageWithAssets(path: string, what: string, page: Buffer, assets: Record<string, Asset>): Middleware {
  const assetsPrefix = `${path}/assets/`;
  return async (ctx: Context, next: Next) => {
    if (ctx.path !== path && !ctx.path.startsWith(`${path}/`)) return next();
    requireRead(ctx, what);
    if (ctx.path === `${path}/`) return ctx.redirect(path);
    if (ctx.path === path) return servePage(ctx, page);
    const name = ctx.path.startsWith(assetsPrefix) ? ctx.path.slice(assetsPrefix.length) : undefined;
    // Own entries only: `constructor` or `__proto__` would otherwise find Object's and answer 500.
    const asset = name !== undefined && Object.hasOwn(assets, name) ? assets[name] : undefined;
    if (!asset) return next();
    serveAsset(ctx, asset);
  };
}

/** A file from an npm package or src/docs/assets: read once, gzipped once, cached by the browser for an hour. */
export function serveAsset(ctx: Context, asset: Asset) {
  asset.body ??= readFileSync(asset.file);
  setSecurityHeaders(ctx);
  setHeader(ctx, 'Cache-Control', 'public, max-age=3600');
  // Added to what is there (CORS's `Vary: Origin`): a shared cache must keep one copy per origin too.
  ctx.vary('Accept-Encoding');
  ctx.type = asset.type;
  if (!asset.type.startsWith('image/') && ctx.acceptsEncodings('gzip', 'identity') === 'gzip') {
    asset.gzipped ??= gzipSync(asset.body);
    setHeader(ctx, 'Content-Encoding', 'gzip');
    ctx.body = asset.gzipped;
  } else ctx.body = asset.body;
}

/** A page of ours: never cached, under the same policy as its assets. */
export function servePage(ctx: Context, page: Buffer) {
  setSecurityHeaders(ctx);
  setHeader(ctx, 'Cache-Control', 'no-cache');
  ctx.type = 'text/html; charset=utf-8';
  ctx.body = page;
}

/** Only GET and HEAD: the pages and their files are read-only. */
export function requireRead(ctx: Context, what: string) {
  if (ctx.method !== 'GET' && ctx.method !== 'HEAD') {
    throw new HttpError('METHOD_NOT_ALLOWED', `${ctx.method} is not allowed here; ${what} is read-only.`, { Allow: 'GET, HEAD' });
  }
}

export function setSecurityHeaders(ctx: Context) {
  setHeader(ctx, 'Content-Security-Policy', DOCS_CONTENT_SECURITY_POLICY);
  setHeader(ctx, 'X-Content-Type-Options', 'nosniff');
  setHeader(ctx, 'Referrer-Policy', 'no-referrer');
}

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

function renderPage(title: string, specUrl: string, explorers: boolean): string {
  const t = escapeHtml(title);
  const spec = escapeHtml(specUrl);
  const explorerLinks = explorers
    ? `
    <a href="/graphiql">GraphQL explorer (GraphiQL)</a>
    <a href="/graphql">Apollo Sandbox</a>`
    : '';
  return `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>${t}</title>
  <link rel="icon" type="image/png" href="/docs/assets/favicon-32x32.png">
  <link rel="stylesheet" href="/docs/assets/swagger-ui.css">
  <link rel="stylesheet" href="/docs/assets/petstore-docs.css">
</head>
<body>
  <header class="petstore-header">
    <strong>${t}</strong>
    <a href="${spec}">OpenAPI (JSON)</a>
    <a href="${spec.replace(/\.json$/, '.yaml')}">OpenAPI (YAML)</a>${explorerLinks}
  </header>
  <main id="swagger-ui" data-spec-url="${spec}"></main>
  <noscript>This reference needs JavaScript. The document itself is at <a href="${spec}">${spec}</a>.</noscript>
  <script src="/docs/assets/swagger-ui-bundle.js"></script>
  <script src="/docs/assets/petstore-docs.js"></script>
</body>
</html>
`;
}
