/**
 * A subscription document over WebSocket passes the same preparation as a request over HTTP: the GraphQL spec's
 * validation rules, the query limits, the operation's shape and page sizes. An invalid document is answered with
 * an `error` message in the HTTP code (VALIDATION_FAILED), costs 1 as over HTTP, logs no internal error, and leaves the
 * socket open for the client's next subscription.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { Client as WsClient } from 'graphql-ws';
import { createAccount, createPet, startApp, type Client, type TestApp } from '../helpers/app.js';
import { globalId } from '../../src/graphql/global-id.js';
import { eventually, subscribe, wsClient } from '../events/support.js';
import { gql } from './support.js';

describe('subscriptions: one preparation with HTTP (validation, limits, shape)', () => {
  let t: TestApp;
  const logs: string[] = [];
  let customer: { client: Client; key: string };
  let ws: { client: WsClient; closed: Promise<{ code: number; reason: string }> };

  before(async () => {
    t = await startApp({ env: { SUBSCRIPTION_POLL_MS: '20', LOG_LEVEL: 'info' }, logStream: { write: (l) => void logs.push(l) } });
    customer = await createAccount(t, { name: 'Prober', plan: 'business' });
    ws = wsClient(t.url, customer.key);
  });
  after(async () => {
    await ws?.client.dispose();
    await t.close();
  });

  const used = async () =>
    (await gql(customer.client, '{ rateLimit { resources { minute { used } } } }')).body.data.rateLimit.resources.minute.used as number;
  const stillOpen = () => Promise.race([ws.closed.then((c) => `closed ${c.code}`), new Promise((r) => setTimeout(() => r('open'), 100))]);

  /** Subscribes with `query` and returns the one error answer it gets (never data, never completion). */
  async function refused(query: string, variables?: Record<string, unknown>) {
    const sub = await subscribe(ws.client, query, variables);
    const errors = await eventually(`an error for ${query}`, () => (sub.errors.length ? sub.errors : undefined));
    assert.deepEqual(sub.results, [], query);
    sub.dispose();
    return errors[0] as Array<{ message: string; extensions: { code: string; status: number; requestId?: string } }>;
  }

  it('when subscription documents break the spec rules or the limits, then each is refused VALIDATION_FAILED, charged 1, unlogged, the socket open', async () => {
    const { petId } = await createPet(t, { stock: 5 });
    const cases: Array<[string, string, Record<string, unknown>?]> = [
      ['an unknown root field', 'subscription { nope }'],
      ['an introspection root field', 'subscription { __typename }'],
      ['an unknown nested field', 'subscription { orderUpdated { id nope } }'],
      ['a fragment cycle', 'subscription { orderUpdated { ...A } } fragment A on Event { id ...B } fragment B on Event { id ...A }'],
      ['several root fields', 'subscription { a: orderUpdated { id } b: inventoryChanged { petId } }'],
      [
        'a string page size',
        `subscription { inventoryChanged(petId: "${globalId('Pet', petId)}") { pet { category { pets(first: "x") { edges { node { id } } } } } } }`,
      ],
      [
        'a page size of 5000',
        `subscription { inventoryChanged(petId: "${globalId('Pet', petId)}") { pet { category { pets(first: 5000) { edges { node { id } } } } } } }`,
      ],
      [
        'a page size of 5000 in a variable',
        'subscription ($n: Int) { inventoryChanged { pet { category { pets(first: $n) { edges { node { id } } } } } } }',
        { n: 5000 },
      ],
      ['a variable of the wrong type', 'subscription ($id: ID) { inventoryChanged(petId: $id) { petId } }', { id: { not: 'an id' } }],
      [
        'too deep',
        'subscription { inventoryChanged { pet { category { pets { edges { node { category { pets { edges { node { id } } } } } } } } } } }',
      ],
      ['a query', '{ viewer { id } }'],
      ['a syntax error', 'subscription { inventoryChanged { petId }'],
    ];
    const before = await used();
    for (const [what, query, variables] of cases) {
      const errors = await refused(query, variables);
      assert.ok(errors.length >= 1, what);
      for (const e of errors) {
        assert.deepEqual([e.extensions.code, e.extensions.status], ['VALIDATION_FAILED', 400], `${what}: ${JSON.stringify(e)}`);
        assert.ok(e.extensions.requestId, `${what}: no requestId`);
      }
    }
    assert.equal(await stillOpen(), 'open');
    // Each refusal cost 1 (the rateLimit reads in between are free), so that a flood of them meets the limit.
    assert.equal(await used(), before + cases.length);
    const internal = logs.filter((l) => /"level":(50|60)/.test(l) || l.includes('INTERNAL'));
    assert.deepEqual(internal, []);
    // The same socket still subscribes.
    const ok = await subscribe(ws.client, `subscription { inventoryChanged(petId: "${globalId('Pet', petId)}") { petId quantity } }`);
    await t.admin.put(`/v1/store/inventory/${petId}`, { quantity: 7 });
    await eventually('the stock change', () => ok.results.length >= 1);
    assert.deepEqual(ok.errors, []);
    assert.deepEqual(ok.results[0].data.inventoryChanged, { petId: globalId('Pet', petId), quantity: 7 });
    ok.dispose();
  });

  it('when a page size HTTP refuses is asked over WebSocket, then both transports answer the same code', async () => {
    const http = await gql(customer.client, 'query ($n: Int) { pets(first: $n) { edges { node { id } } } }', { n: 5000 });
    assert.equal(http.status, 400);
    const wsErrors = await refused(
      'subscription ($n: Int) { inventoryChanged { pet { category { pets(first: $n) { edges { node { id } } } } } } }',
      { n: 5000 },
    );
    assert.equal(wsErrors[0]!.extensions.code, http.body.errors![0]!.extensions?.code);
    assert.equal(wsErrors[0]!.message, http.body.errors![0]!.message);
  });

  it('when a field is misspelt, then both transports say so without a suggestion or a "[Suggestion hidden]" marker', async () => {
    const http = await gql(customer.client, '{ pets { edgez { cursor } } }');
    assert.equal(http.status, 400);
    assert.equal(http.body.errors![0]!.message, 'Cannot query field "edgez" on type "PetConnection".');
    const wsErrors = await refused('subscription { inventoryChanged { petid } }');
    assert.equal(wsErrors[0]!.message, 'Cannot query field "petid" on type "InventoryItem".');
  });
});
