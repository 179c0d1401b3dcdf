import type { Context } from 'koa';

/**
 * Sets response headers straight on Node's response: what Koa's `ctx.set(object)` does for plain string values,
 * without its per-call entry arrays (`Object.entries`, a `[name, value]` pair per header, a closure). The request
 * walk sets about twenty headers per answer through here. Once the headers are sent, does nothing (as `ctx.set`).
 */
export function setHeaders(ctx: Context, headers: Readonly<Record<string, string>>): void {
  const res = ctx.res;
  if (res.headersSent) return;
  for (const name in headers) res.setHeader(name, headers[name]!);
}

/** One header, as `setHeaders`. */
export function setHeader(ctx: Context, name: string, value: string): void {
  if (!ctx.res.headersSent) ctx.res.setHeader(name, value);
}
