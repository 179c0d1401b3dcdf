/**
 * Request timing: one log line and one metrics observation per request. Mounted outermost, so it
 * times everything, and reads what the inner middleware left on `ctx.state` (request id, facade,
 * route template, GraphQL operation, caller) once the response is decided.
 */
import type { Context, Middleware, Next } from 'koa';
import type { Logger } from 'pino';
import type { AppState } from '../http/context.js';
import type { Metrics } from './metrics.js';

/** Paths outside both facades that get their own label; anything else is `other` (never the raw path). */
const META_PATHS = new Map([
  ['/healthz', '/healthz'],
  ['/readyz', '/readyz'],
  ['/metrics', '/metrics'],
  ['/docs', '/docs'],
]);
/** Probes and scrapes are logged at debug: they would drown the request log. */
const QUIET_PATHS = new Set(['/healthz', '/readyz', '/metrics']);

export function observeRequests({ logger: appLogger, metrics }: { logger: Logger; metrics?: Metrics }): Middleware {
  // The request line is built here from fixed fields, none of which can hold a credential (no headers,
  // no body, no query string), so it skips the app logger's redaction pass (~3% of a read's CPU).
  // test/ops/logging.test.ts holds that no key reaches a log line.
  const logger = appLogger.child({}, { redact: { paths: [] } });
  return async (ctx: Context, next: Next) => {
    const started = performance.now();
    let failed = false;
    try {
      await next();
    } catch (error) {
      // The error envelope answers everything; this only happens if it failed itself.
      failed = true;
      throw error;
    } finally {
      const seconds = (performance.now() - started) / 1000;
      const state = ctx.state as Partial<AppState>;
      const status = failed ? 500 : ctx.status;
      const facade = state.facade ?? 'meta';
      metrics?.observeRequest({ facade, operation: operationLabel(ctx, state), status }, seconds);
      const line = {
        requestId: state.requestId,
        method: ctx.method,
        path: ctx.path,
        route: state.route,
        facade,
        operationName: state.operationName?.slice(0, 100),
        status,
        durationMs: Math.round(seconds * 1e6) / 1e3,
        accountId: state.actor?.accountId,
        keyId: state.actor?.keyId,
        errorCode: state.errorCode,
      };
      if (status >= 500) logger.warn(line, 'request');
      else if (QUIET_PATHS.has(ctx.path)) logger.debug(line, 'request');
      else logger.info(line, 'request');
    }
  };
}

function operationLabel(ctx: Context, state: Partial<AppState>): string {
  if (state.facade === 'rest') return state.route ?? 'unmatched';
  if (state.facade === 'graphql') return state.operation ?? (ctx.method === 'GET' && !ctx.querystring ? 'landing page' : 'unresolved');
  const meta = META_PATHS.get(ctx.path) ?? (ctx.path.startsWith('/docs/') ? '/docs' : undefined);
  return meta ? `${ctx.method} ${meta}` : 'other';
}
