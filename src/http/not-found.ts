import type { Context, Middleware } from 'koa';
import { HttpError } from './errors.js';

/** The one 404 for a path nothing answers: what was asked, and where to look instead. */
export function notFound(ctx: Context, lookInstead: string): HttpError {
  return new HttpError('NOT_FOUND', `Nothing at ${ctx.method} ${ctx.path}. ${lookInstead}`);
}

/** The end of the request walk: a path outside every route. */
export const notFoundHandler: Middleware = (ctx) => {
  throw notFound(ctx, 'The API is under /v1 and /graphql; docs at /docs.');
};
