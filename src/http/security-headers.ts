import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Context, Middleware, Next } from 'koa';
import helmet, { type HelmetOptions } from 'helmet';

/**
 * The headers helmet sets for `options`. They depend on no request, so they are computed once, by
 * helmet itself, and every response gets the same object (helmet would rebuild them per request).
 */
function headersOf(options: HelmetOptions): Record<string, string> {
  const headers: Record<string, string> = {};
  const response = { setHeader: (name: string, value: unknown) => (headers[name] = String(value)), removeHeader: () => undefined };
  let done = false;
  helmet(options)({} as IncomingMessage, response as unknown as ServerResponse, () => (done = true));
  if (!done || Object.keys(headers).length === 0) throw new Error('helmet did not set its headers synchronously');
  return headers;
}

/**
 * Security headers. API responses are JSON and may not be framed or run anything; `/docs` sets its
 * own CSP, and Apollo's landing pages at GET /graphql (the Sandbox outside production, a notice in
 * production) load Apollo's scripts from its CDN, so they get no CSP (JSON answers need none).
 */
export function securityHeaders(): Middleware {
  const api = headersOf({
    contentSecurityPolicy: { useDefaults: false, directives: { defaultSrc: ["'none'"], frameAncestors: ["'none'"] } },
    crossOriginResourcePolicy: { policy: 'cross-origin' },
  });
  const landingPage = headersOf({ contentSecurityPolicy: false, crossOriginResourcePolicy: { policy: 'cross-origin' } });
  return (ctx: Context, next: Next) => {
    ctx.set(ctx.path === '/graphql' && ctx.method === 'GET' ? landingPage : api);
    return next();
  };
}
