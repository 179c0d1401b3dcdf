import type { Context, Middleware } from 'koa';
import cors from '@koa/cors';
import { RATE_LIMIT_HEADER_NAMES } from '../rate-limit/headers.js';

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

/** CORS for the configured origins (`*` for any); preflights are answered here. */
export function corsPolicy(origins: readonly string[]): Middleware {
  return cors({
    origin: (ctx: Context) => {
      const origin = ctx.get('origin');
      return origins.includes('*') || origins.includes(origin) ? origin : '';
    },
    exposeHeaders: EXPOSED_HEADERS,
    allowHeaders: ['Content-Type', 'X-API-Key', 'Idempotency-Key', 'If-None-Match', 'X-Request-Id', 'Apollo-Require-Preflight', 'X-Apollo-Operation-Name', 'Apollographql-Client-Name', 'Apollographql-Client-Version'],
    allowMethods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'],
    maxAge: 600,
  });
}
