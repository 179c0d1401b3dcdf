import type { AccountView, ApiKeyView, CategoryView, InventoryView, NewApiKeyView, OrderView, Page, PetView } from '../domain/index.js';

/** Domain read models → the JSON shapes of schema/openapi.yaml. */
export const pet = (p: PetView) => ({ id: p.id, name: p.name, categoryId: p.categoryId, status: p.status });

export const category = (c: CategoryView) => (c.description === null ? { id: c.id, name: c.name } : { id: c.id, name: c.name, description: c.description });

export const order = (o: OrderView) => ({
  id: o.id,
  petId: o.petId,
  quantity: o.quantity,
  shipDate: o.shipDate ? o.shipDate.toISOString() : null,
  complete: o.complete,
});

export const inventory = (i: InventoryView) => ({ petId: i.petId, quantity: i.quantity, status: i.status });

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

/** A page as a bare array, with the next page in `Link: <…>; rel="next"` (RFC 8288). */
export function page<T, R>(p: Page<T>, map: (item: T) => R, url: URL) {
  const headers: Record<string, string> = {};
  if (p.nextCursor) {
    const next = new URL(url);
    next.searchParams.set('cursor', p.nextCursor);
    // A relative reference (RFC 8288 §3.2, resolved against the request URL): an absolute one would
    // echo the client's Host header, which a proxy or cache could be tricked into serving to others.
    headers.Link = `<${next.pathname}${next.search}>; rel="next"`;
  }
  return { body: p.items.map(map), headers };
}
