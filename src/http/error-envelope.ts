import type { IncomingMessage } from 'node:http';
import accepts from 'accepts';
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

/** How each facade writes an error: its body's shape and its media types (Koa's envelope and the server's own refusals). */
export interface ErrorFormats {
  renderers: ErrorRenderers;
  mediaTypes: ErrorMediaTypes;
}

/** The `Content-Type` of a facade's error for a request's `Accept` (absent: the facade's default), by Koa's negotiator. */
export function errorContentType(formats: ErrorFormats, facade: Facade, accept: string | undefined): string {
  const types = formats.mediaTypes[facade] ?? ['application/json'];
  const type = (types.length > 1 && accept && accepts({ headers: { accept } } as IncomingMessage).type([...types])) || types[0];
  return `${type}; charset=utf-8`;
}

/**
 * The error envelope for everything below it: anything thrown becomes the documented error shape of
 * the facade the request is for, with its status and headers; unexpected errors are logged and
 * answered as INTERNAL, never leaked.
 */
export function errorEnvelope({ logger, formats }: { logger: Logger; formats: ErrorFormats }): Middleware {
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
      const render = formats.renderers[facade];
      ctx.body = render ? render(body) : body;
      if (formats.mediaTypes[facade]) ctx.set('content-type', errorContentType(formats, facade, ctx.req.headers.accept));
    }
  };
}
