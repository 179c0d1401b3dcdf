import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import ts from 'typescript';
import { gql, type ApolloClient } from '@apollo/client';
import { CombinedGraphQLErrors } from '@apollo/client/errors';
import { projectPath } from '../../src/project-path.js';
import { createAccount, createPet, startApp, type TestApp, type TestResponse } from '../helpers/app.js';
import { globalId } from '../../src/graphql/global-id.js';
import { doc, pattern, runGraphqlWalkthrough } from '../helpers/readme.js';

interface RateLimitHeaders {
  limit: number | null;
  remaining: number | null;
  reset: number | null;
  retryAfter: number | null;
}
type PetstoreClient = (uri: string, apiKey: string) => { client: ApolloClient; rateLimit: RateLimitHeaders };

/**
 * The README's Apollo Client code (the first ```ts block of its "Apollo Client" section), compiled as
 * written and loaded from a directory that sees this project's node_modules.
 */
async function readmeApolloClient(): Promise<{ petstoreClient: PetstoreClient; cleanup(): void }> {
  const section = doc('CLIENTS.md').split('\n## Apollo Client\n')[1]?.split('\n## ')[0];
  assert.ok(section, 'docs/CLIENTS.md has an Apollo Client section');
  const source = /```ts\n([\s\S]*?)```/.exec(section)?.[1];
  assert.ok(source, 'the section has a ```ts block');
  const { outputText } = ts.transpileModule(source, { compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 } });
  const dir = mkdtempSync(join(tmpdir(), 'petstore-apollo-'));
  symlinkSync(projectPath('node_modules'), join(dir, 'node_modules'), 'dir');
  writeFileSync(join(dir, 'readme-client.mjs'), outputText);
  const module = (await import(pathToFileURL(join(dir, 'readme-client.mjs')).href)) as { petstoreClient: PetstoreClient };
  return { petstoreClient: module.petstoreClient, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Apollo adds `__typename` to every selection; the README shows the server's answer without it. */
const withoutTypename = (value: unknown): unknown =>
  Array.isArray(value)
    ? value.map(withoutTypename)
    : value && typeof value === 'object'
      ? Object.fromEntries(
          Object.entries(value)
            .filter(([k]) => k !== '__typename')
            .map(([k, v]) => [k, withoutTypename(v)]),
        )
      : value;

describe('README: its Apollo Client code works with @apollo/client 4 against the service (issue 13, item 4)', () => {
  let t: TestApp;
  let loaded: Awaited<ReturnType<typeof readmeApolloClient>>;
  before(async () => {
    t = await startApp({ env: { SEED_DEMO: 'true' } });
    loaded = await readmeApolloClient();
  });
  after(async () => {
    await t.close();
    loaded.cleanup();
  });

  it('when every operation of the GraphQL walkthrough runs through the README client, then each answers what the README shows, refusals as CombinedGraphQLErrors', async () => {
    const customerKey = /demo customer[\s\S]*?X-API-Key: (psk_[\w-]+)/.exec(t.announced.join('\n'))?.[1];
    assert.ok(customerKey);
    const clients = {
      staff: loaded.petstoreClient(`${t.url}/graphql`, t.adminKey).client,
      customer: loaded.petstoreClient(`${t.url}/graphql`, customerKey).client,
    };
    const steps = await runGraphqlWalkthrough(async (role, document, variables) => {
      const query = gql(document);
      const isMutation = document.trimStart().startsWith('mutation');
      try {
        const result = isMutation
          ? await clients[role].mutate({ mutation: query, variables })
          : await clients[role].query({ query, variables, fetchPolicy: 'network-only' });
        return JSON.stringify({ data: withoutTypename(result.data) });
      } catch (error) {
        // The default error policy: a GraphQL error rejects. Hand the server's answer back as the README shows it.
        assert.ok(CombinedGraphQLErrors.is(error), `${(error as Error).message}\n${document}`);
        return JSON.stringify({ errors: error.errors, data: error.data ?? null });
      }
    });
    assert.ok(steps >= 8);
  });

  it("when past events are read with fetchPolicy 'no-cache' (docs/EVENTS.md), then the cached stock stays the current one; through the cache, an old event replaces it", async () => {
    const { petId } = await createPet(t, { stock: 5, name: 'Snapshot' });
    assert.equal((await t.admin.put(`/v1/store/inventory/${petId}`, { quantity: 0 })).status, 200);
    const { client } = loaded.petstoreClient(`${t.url}/graphql`, t.adminKey);
    const STOCK = gql('query Stock($id: ID!) { inventoryItem(petId: $id) { id quantity status } }');
    const petGid = globalId('Pet', petId);
    await client.query({ query: STOCK, variables: { id: petGid } });
    const cached = () =>
      client.readQuery<{ inventoryItem: { quantity: number } }>({ query: STOCK, variables: { id: petGid } })?.inventoryItem.quantity;
    assert.equal(cached(), 0);
    // The pet's first stock event (5 units), older than what the cache holds.
    const EVENTS = gql(`query Old($after: String) { events(types: ["inventory.changed"], after: $after, first: 1) {
      edges { node { id data { ... on InventoryItem { id quantity status } } } } } }`);
    type StockEvent = { id: number; data: { petId: number; quantity: number } };
    let first: StockEvent | undefined;
    let path: string | undefined = '/v1/events?types=inventory.changed&limit=100';
    while (!first && path) {
      const page: TestResponse<StockEvent[]> = await t.admin.get<StockEvent[]>(path);
      first = page.body.find((e) => e.data.petId === petId && e.data.quantity === 5);
      path = /<([^>]+)>; rel="next"/.exec(page.headers.get('link') ?? '')?.[1]; // the feed's next page, while there is one
    }
    assert.ok(first, 'the stock of 5 has its event');
    const after = String(first!.id - 1);
    const read = await client.query({ query: EVENTS, variables: { after }, fetchPolicy: 'no-cache' });
    assert.equal(
      (read.data as { events: { edges: Array<{ node: { data: { quantity: number } } }> } }).events.edges[0]?.node.data.quantity,
      5,
    );
    assert.equal(cached(), 0, 'no-cache left the current stock alone');
    await client.query({ query: EVENTS, variables: { after }, fetchPolicy: 'network-only' });
    assert.equal(cached(), 5, 'through the cache, the old event replaced it (why the docs say no-cache)');
  });

  it('when a client of the README goes over its limit, then the 429 rejects with RATE_LIMITED and the link has read Retry-After and the X-RateLimit headers', async () => {
    const tight = await createAccount(t, { name: 'Tight', plan: 'enterprise', limits: { perMinute: 2, perDay: 100 } });
    const { client, rateLimit } = loaded.petstoreClient(`${t.url}/graphql`, tight.key);
    const query = gql('query Mine { viewer { id } }');

    await client.query({ query, fetchPolicy: 'network-only' });
    assert.deepEqual([rateLimit.limit, rateLimit.remaining, rateLimit.retryAfter], [2, 1, null]);
    assert.ok(rateLimit.reset! > Date.now() / 1000, `reset is a future Unix time: ${rateLimit.reset}`);
    await client.query({ query, fetchPolicy: 'network-only' });
    assert.equal(rateLimit.remaining, 0);

    const refused = await client.query({ query, fetchPolicy: 'network-only' }).then(
      () => assert.fail('the third request in the minute is refused'),
      (error: unknown) => error,
    );
    assert.ok(CombinedGraphQLErrors.is(refused), String(refused));
    assert.equal(refused.errors[0]?.extensions?.code, 'RATE_LIMITED');
    assert.equal(rateLimit.remaining, 0);
    assert.ok(rateLimit.retryAfter! >= 1 && rateLimit.retryAfter! <= 60, `Retry-After: ${rateLimit.retryAfter}`);
    assert.match(JSON.stringify(refused.errors[0]), pattern('{"message":"Rate limit exceeded (2 per minute); retry in … seconds.",…'));
    // What the README's catch branches on: this one costs 1, within the limit, so waiting helps …
    assert.deepEqual(refused.extensions?.cost, { requested: 1, charged: 0 });
    // … and a query that costs more than the whole minute never passes: its cost is above the limit.
    const costly = await client
      .query({ query: gql('query Many { a: viewer { id } b: viewer { id } c: viewer { id } }'), fetchPolicy: 'network-only' })
      .then(
        () => assert.fail('a query costing 3 against a limit of 2 is refused'),
        (error: unknown) => error,
      );
    assert.ok(CombinedGraphQLErrors.is(costly), String(costly));
    assert.equal(costly.errors[0]?.extensions?.code, 'RATE_LIMITED');
    assert.deepEqual(costly.extensions?.cost, { requested: 3, charged: 0 });
    assert.equal(rateLimit.limit, 2);
  });
});
