import type { Context, Middleware, Next } from 'koa';
import helmet from 'koa-helmet';

/**
 * Security headers. API responses are JSON and may not be framed or run anything; `/docs` sets its
 * own CSP, and Apollo's landing pages at GET /graphql (the Sandbox outside production, a notice in
 * production) load Apollo's scripts from its CDN, so they get no CSP (JSON answers need none).
 */
export function securityHeaders(): Middleware {
  const api = helmet({
    contentSecurityPolicy: { useDefaults: false, directives: { defaultSrc: ["'none'"], frameAncestors: ["'none'"] } },
    crossOriginResourcePolicy: { policy: 'cross-origin' },
  });
  const landingPage = helmet({ contentSecurityPolicy: false, crossOriginResourcePolicy: { policy: 'cross-origin' } });
  return (ctx: Context, next: Next) => (ctx.path === '/graphql' && ctx.method === 'GET' ? landingPage(ctx, next) : api(ctx, next));
}
