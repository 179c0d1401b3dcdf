import { IncomingMessage, ServerResponse } from 'node:http';
import { Socket } from 'node:net';
import type { Context, Middleware, Next } from 'koa';
import helmet, { type HelmetOptions } from 'helmet';
import { facadeOf } from './context.js';
import { setHeaders } from './headers.js';

/**
 * The headers helmet sets for `options`. They depend on no request, so they are computed once, by
 * helmet itself, and every response gets the same object (helmet would rebuild them per request).
 */
function headersOf(options: HelmetOptions): Record<string, string> {
  const request = new IncomingMessage(new Socket());
  const response = new ServerResponse(request);
  let done = false;
  helmet(options)(request, response, () => (done = true));
  const headers = response.getHeaders();
  if (!done || Object.keys(headers).length === 0) throw new Error('helmet did not set its headers synchronously');
  // In lower case (as Node's getHeaders gives them), as every header the service sets itself (src/http/headers.ts).
  return Object.fromEntries(Object.entries(headers).map(([name, value]) => [name, String(value)]));
}

/** Helmet's set for Apollo's landing pages (the Sandbox outside production): they load Apollo's scripts from its CDN. */
let landingPageSet: Record<string, string> | undefined;

/**
 * Gives a GraphQL answer that turned out to be Apollo's landing page (HTML, by a GET that prefers it) the page's
 * headers instead of the API's: no CSP (its scripts come from Apollo's CDN), and the headers meant for pages.
 */
export function asLandingPage(ctx: Context): void {
  if (ctx.res.headersSent) return;
  ctx.res.removeHeader('content-security-policy');
  setHeaders(ctx, (landingPageSet ??= headersOf({ contentSecurityPolicy: false, crossOriginResourcePolicy: { policy: 'cross-origin' } })));
}

const CSP = { useDefaults: false, directives: { defaultSrc: ["'none'"], frameAncestors: ["'none'"] } };

/** The security headers of an API answer (below), also for the answers the HTTP server writes itself. */
let apiSet: Record<string, string> | undefined;
export const apiSecurityHeaders = (): Record<string, string> =>
  (apiSet ??= headersOf({
    contentSecurityPolicy: CSP,
    crossOriginResourcePolicy: { policy: 'cross-origin' },
    crossOriginOpenerPolicy: false,
    originAgentCluster: false,
    xDnsPrefetchControl: false,
    xDownloadOptions: false,
    xPermittedCrossDomainPolicies: false,
    xXssProtection: false,
  }));

/**
 * Security headers. API answers (under /v1, and /graphql's JSON) get the set the OWASP REST Security
 * Cheat Sheet asks of an API: a CSP that lets nothing load or frame, nosniff, no framing, no referrer,
 * HSTS and CORP; the headers that only mean something for an HTML page a browser renders (COOP,
 * Origin-Agent-Cluster, DNS prefetch, IE's download options, Flash's cross-domain policies, the old XSS
 * auditor) are left off them: six fewer lines on every answer. Pages (`/docs`, which sets its own CSP,
 * and the rest) get helmet's full set. What /graphql serves is known only once Apollo has answered: its landing
 * page gets `asLandingPage`'s set then.
 */
export function securityHeaders(): Middleware {
  const page = headersOf({ contentSecurityPolicy: CSP, crossOriginResourcePolicy: { policy: 'cross-origin' } });
  const api = apiSecurityHeaders();
  return (ctx: Context, next: Next) => {
    const facade = facadeOf(ctx.request.path);
    setHeaders(ctx, facade === 'rest' || facade === 'graphql' ? api : page);
    return next();
  };
}
