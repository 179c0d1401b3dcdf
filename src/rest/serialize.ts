import type { AccountView, ApiKeyView, NewApiKeyView, Page } from '../domain/index.js';
import type { RateLimitStatus } from '../rate-limit/gate.js';

/**
 * Domain read models → the JSON shapes of schema/openapi.yaml where they differ (the resources' shapes
 * live in the domain, which events share). A pet and an inventory entry are sent as their views are.
 */
export { categoryRepresentation as category, orderRepresentation as order } from '../domain/representations.js';

export const account = (a: AccountView) => ({
  id: a.id,
  name: a.name,
  role: a.role,
  plan: a.plan,
  limits: a.limits,
  createdAt: a.createdAt.toISOString(),
});

export const apiKey = (k: ApiKeyView) => ({
  id: k.id,
  prefix: k.prefix,
  createdAt: k.createdAt.toISOString(),
  revokedAt: k.revokedAt ? k.revokedAt.toISOString() : null,
  bannedUntil: k.bannedUntil ? k.bannedUntil.toISOString() : null,
});

export const newApiKey = (k: NewApiKeyView) => ({ ...apiKey(k), key: k.key });

export const rateLimit = (s: RateLimitStatus) => ({ ...s, bannedUntil: s.bannedUntil ? s.bannedUntil.toISOString() : null });

/** A page as a bare array (each item through `map`, or as it is), with the next page in `Link: <…>; rel="next"` (RFC 8288). */
export function page<T, R = T>(p: Page<T>, url: () => URL, map?: (item: T) => R) {
  const headers: Record<string, string> = {};
  if (p.nextCursor) {
    const next = url();
    next.searchParams.set('cursor', p.nextCursor);
    // A relative reference (RFC 8288 §3.2, resolved against the request URL): an absolute one would
    // echo the client's Host header, which a proxy or cache could be tricked into serving to others.
    headers.Link = `<${next.pathname}${next.search}>; rel="next"`;
  }
  return { body: map ? p.items.map(map) : p.items, headers };
}
