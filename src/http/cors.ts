import type { Context, Middleware, Next } from 'koa';
import cors from '@koa/cors';
import { RATE_LIMIT_HEADER_NAMES } from '../rate-limit/headers.js';
import { setHeader } from './headers.js';
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

/**
 * CORS for the configured origins (`*` for any); preflights are answered here. A request from no allowed
 * origin (most of them: servers and scripts send no `Origin`) gets exactly what @koa/cors gives it,
 * `Vary: Origin`, without its asynchronous step.
 */
export function corsPolicy(origins: readonly string[]): Middleware {
  const any = origins.includes('*');
  const allowed = (origin: string) => origin !== '' && (any || origins.includes(origin));
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
  return (ctx: Context, next: Next) => {
    if (allowed(requestHeader(ctx, 'origin'))) return withCors(ctx, next);
    // As `ctx.vary('Origin')` gives it, without parsing a Vary that nothing has set yet.
    if (ctx.res.hasHeader('vary')) ctx.vary('Origin');
    else setHeader(ctx, 'vary', 'Origin');
    return next();
  };
}
