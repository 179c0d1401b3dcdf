import type { Context, Middleware, Next } from 'koa';
import type { Logger } from 'pino';
import { facadeOf, type AppState, type Facade } from './context.js';
import { toErrorBody, type ErrorBody } from './errors.js';
import { setHeaders } from './headers.js';

/** How a facade shapes an error body; REST's (and the meta routes') is the error body itself. */
export type ErrorRenderers = Partial<Record<Facade, (body: ErrorBody) => unknown>>;

/**
 * The error envelope for everything below it: anything thrown becomes the documented error shape of
 * the facade the request is for, with its status and headers; unexpected errors are logged and
 * answered as INTERNAL, never leaked.
 */
export function errorEnvelope({ logger, renderers = {} }: { logger: Logger; renderers?: ErrorRenderers }): Middleware {
  return async (ctx: Context, next: Next) => {
    try {
      await next();
    } catch (error) {
      const state = ctx.state as AppState;
      const { body, headers, expected } = toErrorBody(error, state.requestId);
      state.errorCode = body.code;
      if (!expected) logger.error({ err: error, requestId: state.requestId, route: state.route }, 'unexpected error');
      setHeaders(ctx, headers);
      ctx.status = body.status;
      const render = renderers[state.facade ?? facadeOf(ctx.path)];
      ctx.body = render ? render(body) : body;
    }
  };
}
