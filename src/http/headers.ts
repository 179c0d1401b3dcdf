import type { Context } from 'koa';

/**
 * The headers on every API answer are written with lower-case names ('x-ratelimit-limit', 'etag'), as HTTP/2 and 3
 * require and GitHub's API sends them over HTTP/1.1 (names are case-insensitive, RFC 9110 §5.1): Node keys each
 * header by its lower-cased name, and a name already in lower case costs no new string and no string-table lookup.
 *
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
