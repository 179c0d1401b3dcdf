import type { Context, Middleware, Next } from 'koa';
import cors from '@koa/cors';
import { RATE_LIMIT_HEADER_NAMES } from '../rate-limit/headers.js';
import type { RateLimitGate } from '../rate-limit/gate.js';
import { setHeader, setHeaders } from './headers.js';
import { requestHeader } from './context.js';

/** Headers a browser may read on an API response (CORS): the rate-limit headers and the HTTP edge's own. */
export const EXPOSED_HEADERS = [
  'X-Request-Id',
  'ETag',
  ...RATE_LIMIT_HEADER_NAMES,
  'Retry-After',
  'Link',
  'Location',
  'Deprecation',
  'Sunset',
  'Idempotent-Replayed',
];

/** Whether a browser origin is one of `CORS_ORIGINS` (`*`: any); no origin (`''`) is none. */
export function originAllowed(origins: readonly string[]): (origin: string) => boolean {
  const any = origins.includes('*');
  return (origin) => origin !== '' && (any || origins.includes(origin));
}

/**
 * CORS for the configured origins (`*` for any). A request from no allowed origin (most of them: servers and
 * scripts send no `Origin`) gets exactly what @koa/cors gives it, `Vary: Origin`, without its asynchronous step.
 * Every preflight is answered here, from any origin, and free: it carries no key, so past this point GraphQL's CSRF
 * check would refuse it and count a failed authentication against the address. It shows the address's window, as
 * every answer without a key does; from an origin not allowed it has no `Access-Control-Allow-*` headers, so the
 * browser refuses the request.
 */
export function corsPolicy(origins: readonly string[], gate: Pick<RateLimitGate, 'addressHeaders'>): Middleware {
  const allowed = originAllowed(origins);
  const withCors = cors({
    origin: (ctx: Context) => {
      const origin = requestHeader(ctx, 'origin');
      return allowed(origin) ? origin : '';
    },
    exposeHeaders: EXPOSED_HEADERS,
    allowHeaders: [
      'Content-Type',
      'X-API-Key',
      'Idempotency-Key',
      'If-None-Match',
      'X-Request-Id',
      'Apollo-Require-Preflight',
      'X-Apollo-Operation-Name',
      'Apollographql-Client-Name',
      'Apollographql-Client-Version',
    ],
    allowMethods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'],
    maxAge: 600,
  });
  const varyOnOrigin = (ctx: Context) => {
    // As `ctx.vary('Origin')` gives it, without parsing a Vary that nothing has set yet.
    if (ctx.res.hasHeader('vary')) ctx.vary('Origin');
    else setHeader(ctx, 'vary', 'Origin');
  };
  const preflight = async (ctx: Context, next: Next, origin: string) => {
    setHeaders(ctx, gate.addressHeaders(ctx.request.ip));
    // @koa/cors answers an allowed preflight itself (204 and its Access-Control-Allow-* headers).
    if (allowed(origin)) return withCors(ctx, next);
    varyOnOrigin(ctx);
    ctx.status = 204;
  };
  return (ctx: Context, next: Next) => {
    const origin = requestHeader(ctx, 'origin');
    if (origin !== '' && ctx.method === 'OPTIONS' && requestHeader(ctx, 'access-control-request-method') !== '')
      return preflight(ctx, next, origin);
    if (allowed(origin)) return withCors(ctx, next);
    varyOnOrigin(ctx);
    return next();
  };
}
