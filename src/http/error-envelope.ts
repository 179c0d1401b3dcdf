import type { Context, Middleware, Next } from 'koa';
import type { Logger } from 'pino';
import { facadeOf, type AppState, type Facade } from './context.js';
import { toErrorBody, type ErrorBody } from './errors.js';
import { setHeaders } from './headers.js';

/** How a facade shapes an error body; REST's (and the meta routes') is the error body itself. */
export type ErrorRenderers = Partial<Record<Facade, (body: ErrorBody) => unknown>>;

/**
 * The media types a facade writes its error bodies in, its default first: the client's `Accept` picks among them
 * (GraphQL over HTTP: `application/graphql-response+json` when preferred, as Apollo Server answers). JSON otherwise.
 */
export type ErrorMediaTypes = Partial<Record<Facade, readonly [string, ...string[]]>>;

/**
 * The error envelope for everything below it: anything thrown becomes the documented error shape of
 * the facade the request is for, with its status and headers; unexpected errors are logged and
 * answered as INTERNAL, never leaked.
 */
export function errorEnvelope({
  logger,
  renderers = {},
  mediaTypes = {},
}: {
  logger: Logger;
  renderers?: ErrorRenderers;
  mediaTypes?: ErrorMediaTypes;
}): Middleware {
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
      const facade = state.facade ?? facadeOf(ctx.path);
      const render = renderers[facade];
      ctx.body = render ? render(body) : body;
      const types = mediaTypes[facade];
      if (types) ctx.set('content-type', `${ctx.accepts(...types) || types[0]}; charset=utf-8`);
    }
  };
}
