import { randomUUID } from 'node:crypto';
import type { Context, Middleware, Next } from 'koa';
import { requestHeader, type AppState } from './context.js';
import { setHeader } from './headers.js';

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Gives every request an id (the client's `X-Request-Id` when it is sane), echoed on the response. */
export function requestId(): Middleware {
  return (ctx: Context, next: Next) => {
    const state = ctx.state as AppState;
    const given = requestHeader(ctx, 'x-request-id');
    state.requestId = REQUEST_ID.test(given) ? given : randomUUID();
    setHeader(ctx, 'x-request-id', state.requestId);
    return next();
  };
}
