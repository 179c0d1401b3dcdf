/**
 * Request timing: one log line and one metrics observation per request. Mounted outermost, so it
 * times everything, and reads what the inner middleware left on `ctx.state` (request id, facade,
 * route template, GraphQL operation, caller) once the response is decided.
 */
import type { Context, Middleware, Next } from 'koa';
import type { Logger } from 'pino';
import type { AppState } from '../http/context.js';
import type { Metrics } from './metrics.js';
import { activeSpan, logIds, type Span } from './tracing.js';
import { flatLineLogger, REQUEST_LINE } from './logger.js';

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
  // The request line is built here from fixed fields of strings and numbers, none of which can hold a credential
  // (no headers, no body, no query string): it skips the app logger's redaction pass and
  // pino's key-by-key serialisation. test/ops/logging.test.ts holds that no key reaches a log line.
  const logger = flatLineLogger(appLogger);
  return async (ctx: Context, next: Next) => {
    const started = performance.now();
    // The HTTP server span (tracing on): named by the route template once it is known, and joined to the log line.
    const span = activeSpan();
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
      const status = failed ? 500 : ctx.response.status;
      const facade = state.facade ?? 'meta';
      metrics?.observeRequest({ facade, operation: operationLabel(ctx, state), status }, seconds);
      const line = {
        requestId: state.requestId,
        method: ctx.req.method,
        path: ctx.request.path,
        route: state.route,
        facade,
        operationName: state.operationName?.slice(0, 100),
        status,
        durationMs: Math.round(seconds * 1e6) / 1e3,
        accountId: state.actor?.accountId,
        keyId: state.actor?.keyId,
        errorCode: state.errorCode,
      };
      // Only with tracing on: the untraced line keeps its shape.
      if (span) Object.assign(line, describeSpan(span, ctx, state));
      if (status >= 500) logger.warn(line, REQUEST_LINE);
      else if (QUIET_PATHS.has(line.path)) logger.debug(line, REQUEST_LINE);
      else logger.info(line, REQUEST_LINE);
    }
  };
}

function operationLabel(ctx: Context, state: Partial<AppState>): string {
  if (state.facade === 'rest') return state.route ?? 'unmatched';
  if (state.facade === 'graphql') return state.operation ?? (ctx.method === 'GET' && !ctx.querystring ? 'landing page' : 'unresolved');
  const meta = META_PATHS.get(ctx.path) ?? (ctx.path.startsWith('/docs/') ? '/docs' : undefined);
  return meta ? `${ctx.method} ${meta}` : 'other';
}

/**
 * The server span gets the route template (`http.route`, never the raw path) and, for GraphQL, the
 * operation's type, root field and name (never its variables); returns the ids for the log line.
 */
function describeSpan(span: Span, ctx: Context, state: Partial<AppState>) {
  const route = state.route?.replace(/^[A-Z]+ /, '');
  if (route) {
    span.setAttribute('http.route', route);
    span.updateName(`${ctx.req.method} ${route}`);
  }
  if (state.facade === 'graphql') {
    const [type, root] = state.operation?.split(' ') ?? [];
    if (type && root) span.setAttributes({ 'graphql.operation.type': type, 'graphql.operation.root_field': root });
    if (state.operationName) span.setAttribute('graphql.operation.name', state.operationName.slice(0, 100));
  }
  return logIds(span);
}
