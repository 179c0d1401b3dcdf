import assert from 'node:assert/strict';
import type { Client, TestApp, TestResponse } from '../helpers/app.js';

/** Text that must never reach a client: stack frames, SQL, file paths, driver names. */
const LEAKS = [
  /\bat .+\(.*:\d+:\d+\)/,
  /\.(js|ts):\d+/,
  /node_modules/,
  /\/work\//,
  /\bselect\s+\S.*\s+from\s+\S/i,
  /\binsert\s+into\b/i,
  /\bupdate\s+\S+\s+set\b/i,
  /sqlite_|SQLITE_/,
  /\bknex\b/i,
  /\bpg\b/,
];

/** Asserts that a response body carries nothing internal. */
export function assertNoLeak(res: TestResponse): void {
  for (const pattern of LEAKS) assert.doesNotMatch(res.text, pattern, `response leaks internals: ${res.text.slice(0, 300)}`);
}

/**
 * Asserts the error envelope (docs/ERRORS.md): the status and code, `status` in the body, `requestId` equal to
 * the `X-Request-Id` header, and no internals.
 */
export function assertError(res: TestResponse, status: number, code: string): void {
  assert.equal(res.status, status, `expected ${status} ${code}, got ${res.status}: ${res.text.slice(0, 300)}`);
  assert.equal(res.body?.code, code, `expected code ${code}: ${res.text.slice(0, 300)}`);
  assert.equal(res.body.status, status);
  assert.equal(typeof res.body.message, 'string');
  const requestId = res.headers.get('x-request-id');
  assert.ok(requestId, 'X-Request-Id header is missing');
  assert.equal(res.body.requestId, requestId);
  assertNoLeak(res);
}

/** Follows `Link: <…>; rel="next"` from `path` and returns every item, failing on a loop. */
export async function walk<T = any>(client: Client, path: string): Promise<{ items: T[]; pages: number }> {
  const items: T[] = [];
  const seen = new Set<string>();
  let next: string | null = path;
  let pages = 0;
  while (next) {
    assert.ok(!seen.has(next), `pagination loops at ${next}`);
    seen.add(next);
    const res: TestResponse<T[]> = await client.get<T[]>(next);
    assert.equal(res.status, 200, res.text);
    assert.ok(Array.isArray(res.body));
    items.push(...res.body);
    pages++;
    next = nextLink(res);
  }
  return { items, pages };
}

/** The path and query of the `rel="next"` link, or null on the last page. */
export function nextLink(res: TestResponse): string | null {
  const link = res.headers.get('link');
  if (!link) return null;
  const match = /<([^>]+)>;\s*rel="next"/.exec(link);
  if (!match) return null;
  const url = new URL(match[1]!, 'http://placeholder');
  return url.pathname + url.search;
}

/** Everything a staff member can see, for "changed nothing" checks. */
export async function snapshot(t: TestApp) {
  const [pets, categories, orders, inventory, accounts] = await Promise.all([
    walk(t.admin, '/v1/pets?limit=100'),
    walk(t.admin, '/v1/categories?limit=100'),
    walk(t.admin, '/v1/store/orders?limit=100'),
    walk(t.admin, '/v1/store/inventory?limit=100'),
    walk(t.admin, '/v1/accounts?limit=100'),
  ]);
  return { pets: pets.items, categories: categories.items, orders: orders.items, inventory: inventory.items, accounts: accounts.items };
}

/** The stock and status of one pet, as staff sees them. */
export async function stockOf(t: TestApp, petId: number): Promise<{ quantity: number; status: string }> {
  const res = await t.admin.get(`/v1/store/inventory/${petId}`);
  assert.equal(res.status, 200, res.text);
  return { quantity: res.body.quantity, status: res.body.status };
}
