/**
 * Trusted documents: a manifest written by GraphQL Codegen's client preset (`persistedDocuments: true`) is loaded at
 * start (GRAPHQL_TRUSTED_DOCUMENTS); its documents are served by `documentId` (POST and GET) and by Apollo's
 * persisted-query hash without their text, charged as their text is; with GRAPHQL_TRUSTED_ONLY every other document
 * is refused DOCUMENT_NOT_TRUSTED on HTTP and WebSocket, running nothing and costing 1 point, but from a staff key; a manifest the
 * service cannot trust stops the start.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ApolloServerPlugin } from '@apollo/server';
import { Kind, parse } from 'graphql';
import type { Client as WsClient } from 'graphql-ws';
import type { GraphQLContext } from '../../src/graphql/context.js';
import { Client, createAccount, createPet, startApp, type TestApp, type TestResponse } from '../helpers/app.js';
import { eventually, subscribe, wsClient } from '../events/support.js';
import { assertGraphQLError, codegenPersistedDocuments, dataOf, type GraphQLBody } from './support.js';

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** The app's own operations, as a web app keeps them: a .graphql file and `graphql()` calls in TypeScript. */
const GRAPHQL_DOCUMENTS = `
query Viewer { viewer { name } }

query Pets($first: Int) {
  pets(first: $first) { edges { node { id name category { name pets(first: 3) { edges { node { name } } } } } } }
}
`;
const TS_DOCUMENTS = `
import { graphql } from './gql';

export const PlaceOrder = graphql(\`
  mutation PlaceOrder($input: NewOrderInput!) { placeOrder(input: $input) { id quantity } }
\`);

export const StockChanges = graphql(\`
  subscription StockChanges($petId: ID) { inventoryChanged(petId: $petId) { quantity } }
\`);
`;

interface Persisted {
  /** The manifest's key: `sha256:<hex>`. */
  id: string;
  hash: string;
  text: string;
}

/** Runs GraphQL Codegen's client preset with persisted documents over the documents; returns the manifest's path and entries by operation name. */
async function codegenManifest(dir: string): Promise<{ file: string; byName: Record<string, Persisted> }> {
  mkdirSync(join(dir, 'documents'));
  writeFileSync(join(dir, 'documents', 'operations.graphql'), GRAPHQL_DOCUMENTS);
  writeFileSync(join(dir, 'documents', 'orders.ts'), TS_DOCUMENTS);
  const file = await codegenPersistedDocuments(dir, [join(dir, 'documents', '*.graphql'), join(dir, 'documents', '*.ts')]);
  const manifest = JSON.parse(readFileSync(file, 'utf8')) as Record<string, string>;
  const byName: Record<string, Persisted> = {};
  for (const [id, text] of Object.entries(manifest)) {
    const operation = parse(text).definitions.find((d) => d.kind === Kind.OPERATION_DEFINITION);
    byName[operation!.name!.value] = { id, hash: id.replace(/^sha256:/, ''), text };
  }
  return { file, byName };
}

/** An Apollo plugin that records the text of every document Apollo parses (it does not when its document store holds it). */
function parsingPlugin(parsed: string[]): ApolloServerPlugin<GraphQLContext> {
  return {
    async requestDidStart() {
      return {
        async parsingDidStart({ source }) {
          parsed.push(source);
        },
      };
    },
  };
}

const remaining = (res: TestResponse) => Number(res.headers.get('x-ratelimit-remaining'));

/** POST /graphql with any body (documentId, extensions…), as a GraphQL response. */
async function post(client: Client, body: Record<string, unknown>): Promise<TestResponse<GraphQLBody>> {
  const res = await client.post<GraphQLBody>('/graphql', body, { skipContract: true });
  assert.equal(typeof res.body, 'object', `not a JSON GraphQL response (${res.status}): ${res.text.slice(0, 300)}`);
  return res;
}

async function get(client: Client, params: Record<string, string>): Promise<TestResponse<GraphQLBody>> {
  const res = await client.get<GraphQLBody>(`/graphql?${new URLSearchParams(params)}`, { skipContract: true });
  assert.equal(typeof res.body, 'object', `not a JSON GraphQL response (${res.status}): ${res.text.slice(0, 300)}`);
  return res;
}

describe('GraphQL trusted documents (GRAPHQL_TRUSTED_DOCUMENTS, GRAPHQL_TRUSTED_ONLY)', () => {
  let dir: string;
  let file: string;
  let docs: Record<string, Persisted>;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'petstore-trusted-'));
    ({ file, byName: docs } = await codegenManifest(dir));
    assert.deepEqual(Object.keys(docs).sort(), ['Pets', 'PlaceOrder', 'StockChanges', 'Viewer']);
    for (const d of Object.values(docs)) assert.equal(d.id, `sha256:${sha256(d.text)}`, 'Codegen keys each document by its SHA-256');
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  describe('with the manifest, other documents accepted', () => {
    let t: TestApp;
    const parsed: string[] = [];
    before(async () => {
      t = await startApp({ env: { GRAPHQL_TRUSTED_DOCUMENTS: file }, graphqlPlugins: [parsingPlugin(parsed)] });
      await createPet(t, { stock: 3, name: 'Rex' });
    });
    after(() => t?.close());

    it('when a trusted document is named by documentId by POST and by GET, then it is answered as its text is, and charged the same points', async () => {
      const { client } = await createAccount(t, { name: 'App' });
      const variables = { first: 5 };
      const byText = await post(client, { query: docs.Pets!.text, variables });
      const byPost = await post(client, { documentId: docs.Pets!.id, variables });
      const byGet = await get(client, { documentId: docs.Pets!.id, variables: JSON.stringify(variables) });
      const data = dataOf(byText);
      assert.ok(data.pets.edges.length >= 1);
      for (const res of [byPost, byGet]) {
        assert.deepEqual(dataOf(res), data);
        assert.deepEqual(res.body.extensions?.cost, byText.body.extensions?.cost);
      }
      const { charged } = byText.body.extensions!.cost as { charged: number };
      assert.ok(charged > 1, `the document costs more than one point (${charged})`);
      assert.equal(remaining(byText) - remaining(byPost), charged, 'documentId by POST took the points of the text');
      assert.equal(remaining(byPost) - remaining(byGet), charged, 'documentId by GET took the points of the text');
      // Apollo parsed the text once: named by id, by POST or GET, it is the same text, found in Apollo's document store.
      assert.deepEqual(parsed, [docs.Pets!.text]);
      dataOf(await post(client, { query: '{ viewer { plan } }' }));
      assert.deepEqual(parsed, [docs.Pets!.text, '{ viewer { plan } }'], 'a document outside the manifest is parsed as usual');
    });

    it("when Apollo's persisted-query hash of a trusted document is sent first, then it is answered without the text ever being registered", async () => {
      const { client } = await createAccount(t, { name: 'Apq' });
      const extensions = { persistedQuery: { version: 1, sha256Hash: docs.Viewer!.hash } };
      assert.deepEqual(dataOf(await post(client, { extensions })), { viewer: { name: 'Apq' } });
      assert.deepEqual(dataOf(await get(client, { extensions: JSON.stringify(extensions) })), { viewer: { name: 'Apq' } });
      // Another document is still Apollo's usual APQ: unknown until registered.
      const other = '{ viewer { plan } }';
      const unknown = await post(client, { extensions: { persistedQuery: { version: 1, sha256Hash: sha256(other) } } });
      assertGraphQLError(unknown, 'PERSISTED_QUERY_NOT_FOUND', 200);
    });

    it('when a documentId is unknown, malformed, or sent with a query, then it is refused with its code and costs 1 point, as any refused request', async () => {
      const { client } = await createAccount(t, { name: 'Unknown' });
      const first = await post(client, { documentId: `sha256:${'0'.repeat(64)}` });
      const error = assertGraphQLError(first, 'PERSISTED_DOCUMENT_NOT_FOUND', 404);
      assert.match(error.message, /No trusted document has the id sha256:0{64}/);
      assertGraphQLError(await get(client, { documentId: `sha256:${'0'.repeat(64)}` }), 'PERSISTED_DOCUMENT_NOT_FOUND', 404);
      for (const documentId of [docs.Viewer!.hash, 'md5:abc', 42]) {
        assertGraphQLError(await post(client, { documentId }), 'VALIDATION_FAILED', 400);
      }
      const both = await post(client, { documentId: docs.Viewer!.id, query: docs.Viewer!.text });
      assert.match(assertGraphQLError(both, 'VALIDATION_FAILED', 400).message, /either `documentId` or `query`/);
      const last = await post(client, { documentId: docs.Viewer!.id });
      // After the first: 1 unknown by GET, 3 malformed, 1 with both, 1 point each; then the document's own cost.
      assert.equal(remaining(first) - remaining(last), 5 + last.body.extensions?.cost.charged, 'each refusal took 1 point');
      assert.deepEqual(dataOf(last), { viewer: { name: 'Unknown' } });
    });

    it('when a trusted mutation is named by documentId by GET, then it is refused 405 as its text would be, and nothing is ordered', async () => {
      const { client } = await createAccount(t, { name: 'GetMutation' });
      const pets = dataOf(await post(client, { documentId: docs.Pets!.id, variables: { first: 1 } }));
      const input = { petId: pets.pets.edges[0].node.id, quantity: 1 };
      const res = await get(client, { documentId: docs.PlaceOrder!.id, variables: JSON.stringify({ input }) });
      assert.equal(res.status, 405);
      assert.deepEqual((await client.get('/v1/store/orders')).body, []);
    });
  });

  describe('with GRAPHQL_TRUSTED_ONLY=true', () => {
    let t: TestApp;
    /** The pet's id in GraphQL, and in REST. */
    let petId: string;
    let restPetId: number;
    const wsClients: WsClient[] = [];
    before(async () => {
      t = await startApp({ env: { GRAPHQL_TRUSTED_DOCUMENTS: file, GRAPHQL_TRUSTED_ONLY: 'true', SUBSCRIPTION_POLL_MS: '20' } });
      ({ petId: restPetId } = await createPet(t, { stock: 5, name: 'Tom' }));
      petId = dataOf(await post(t.admin, { documentId: docs.Pets!.id, variables: { first: 1 } })).pets.edges[0].node.id;
    });
    after(async () => {
      for (const c of wsClients) await c.dispose();
      await t?.close();
    });

    it('when a customer sends a free document, by POST, GET or as an APQ registration, then it is refused DOCUMENT_NOT_TRUSTED (403), 1 point each as any refused document, and the mutation does not run', async () => {
      const { client } = await createAccount(t, { name: 'Customer' });
      const start = await post(client, { documentId: docs.Viewer!.id });
      assert.deepEqual(dataOf(start), { viewer: { name: 'Customer' } });
      const placeOrder = 'mutation ($input: NewOrderInput!) { placeOrder(input: $input) { id } }';
      const input = { petId, quantity: 2 };
      const refusals = [
        await post(client, { query: placeOrder, variables: { input } }),
        await post(client, { query: '{ viewer { name } }' }),
        await get(client, { query: '{ viewer { name } }' }),
        await post(client, {
          query: placeOrder,
          variables: { input },
          extensions: { persistedQuery: { version: 1, sha256Hash: sha256(placeOrder) } },
        }),
        await post(t.anonymous, { query: '{ __typename }' }),
      ];
      for (const res of refusals) {
        const error = assertGraphQLError(res, 'DOCUMENT_NOT_TRUSTED', 403);
        assert.match(error.message, /runs only its trusted documents/);
      }
      for (const [i, res] of refusals.slice(0, 4).entries())
        assert.equal(remaining(res), remaining(start) - (i + 1), 'a refusal takes 1 point');
      // A hash alone that names no trusted document is refused as its text is, also once a staff key registered it.
      const staffOnly = '{ viewer { role } }';
      const staffApq = { persistedQuery: { version: 1, sha256Hash: sha256(staffOnly) } };
      assert.deepEqual(dataOf(await post(t.admin, { query: staffOnly, extensions: staffApq })), { viewer: { role: 'staff' } });
      assert.deepEqual(dataOf(await post(t.admin, { extensions: staffApq })), { viewer: { role: 'staff' } }, 'registered for staff');
      for (const extensions of [{ persistedQuery: { version: 1, sha256Hash: sha256(placeOrder) } }, staffApq]) {
        const before = remaining(await post(client, { documentId: docs.Viewer!.id }));
        const hashOnly = await post(client, { variables: { input }, extensions });
        // Its message speaks of the hash it sent, not of a text.
        assert.match(assertGraphQLError(hashOnly, 'DOCUMENT_NOT_TRUSTED', 403).message, /this hash is not one of them/);
        assert.equal(remaining(hashOnly), before - 1, 'a refused hash takes 1 point');
        assertGraphQLError(await get(client, { extensions: JSON.stringify(extensions) }), 'DOCUMENT_NOT_TRUSTED', 403);
      }
      // A hash that is not one (an array here) is malformed before it is untrusted.
      const notAHash = { persistedQuery: { version: 1, sha256Hash: [sha256(staffOnly)] } };
      assertGraphQLError(await post(client, { variables: { input }, extensions: notAHash }), 'VALIDATION_FAILED', 400);
      assert.deepEqual((await client.get('/v1/store/orders')).body, [], 'no order was placed');
      assert.equal((await t.admin.get(`/v1/store/inventory/${restPetId}`)).body.quantity, 5, 'the stock is untouched');

      // The same customer may run the trusted mutation, by documentId or by sending its exact text.
      const placed = dataOf(await post(client, { documentId: docs.PlaceOrder!.id, variables: { input: { petId, quantity: 1 } } }));
      assert.equal(placed.placeOrder.quantity, 1);
      assert.deepEqual(dataOf(await post(client, { query: docs.Viewer!.text })), { viewer: { name: 'Customer' } });
      assert.equal(((await client.get('/v1/store/orders')).body as unknown[]).length, 1);
    });

    it('when a key that is not valid sends a free document, then the answer says the key is invalid (401), not that the document is untrusted', async () => {
      const wrongKey = new Client(t.url, `psk_${'x'.repeat(32)}`);
      for (const res of [await post(wrongKey, { query: '{ viewer { role } }' }), await get(wrongKey, { query: '{ viewer { role } }' })]) {
        assertGraphQLError(res, 'INVALID_API_KEY', 401);
      }
    });

    it('when a staff key sends a free document (an explorer), then it is answered', async () => {
      assert.deepEqual(dataOf(await post(t.admin, { query: '{ viewer { role } }' })), { viewer: { role: 'staff' } });
      assert.ok(dataOf(await get(t.admin, { query: '{ __schema { queryType { name } } }' })).__schema);
    });

    it('when a customer subscribes over graphql-ws with a free document, then it gets DOCUMENT_NOT_TRUSTED; by documentId, the trusted subscription runs, and a staff key may subscribe freely', async () => {
      const { key } = await createAccount(t, { name: 'Watcher' });
      const customer = wsClient(t.url, key);
      const staff = wsClient(t.url, t.adminKey);
      wsClients.push(customer.client, staff.client);

      const free = await subscribe(customer.client, `subscription { inventoryChanged(petId: "${petId}") { quantity } }`);
      const errors = await eventually('a refusal', () => (free.errors.length ? free.errors : undefined));
      const refusal = (errors[0] as Array<{ extensions: { code: string; status: number } }>)[0]!;
      assert.deepEqual([refusal.extensions.code, refusal.extensions.status], ['DOCUMENT_NOT_TRUSTED', 403]);
      assert.deepEqual(free.results, []);

      // graphql-ws's payload needs a `query`: empty, the document named by `documentId` beside it.
      const named = { query: '', documentId: docs.StockChanges!.id, variables: { petId } };
      const trusted: unknown[] = [];
      const trustedErrors: unknown[] = [];
      const stop = customer.client.subscribe(named, {
        next: (v) => void trusted.push(v),
        error: (e) => void trustedErrors.push(e),
        complete: () => {},
      });
      const staffSub = await subscribe(staff.client, `subscription { inventoryChanged(petId: "${petId}") { quantity status } }`);
      await eventually(
        'both subscriptions receive the change',
        async () => {
          await t.admin.put(`/v1/store/inventory/${restPetId}`, { quantity: 7 });
          return trusted.length && staffSub.results.length ? true : undefined;
        },
        200,
        25,
      );
      assert.deepEqual(trustedErrors, []);
      assert.deepEqual((trusted[0] as GraphQLBody).data, { inventoryChanged: { quantity: 7 } });
      stop();
      staffSub.dispose();
    });
  });

  describe('a manifest the service cannot trust', () => {
    const manifestFile = (name: string, content: string) => {
      const path = join(dir, name);
      writeFileSync(path, content);
      return path;
    };

    it('when the manifest is missing, not JSON, has a hash that is not its text, or a document invalid against the schema, then the service does not start and says why', async () => {
      const good = docs.Viewer!;
      const cases: Array<[string, string, RegExp]> = [
        ['a missing file', join(dir, 'nope.json'), /GRAPHQL_TRUSTED_DOCUMENTS=".*nope\.json": cannot read the file \(ENOENT\)/],
        ['not JSON', manifestFile('broken.json', '{"sha256:'), /is not JSON/],
        ['an array', manifestFile('array.json', '[]'), /must be a JSON object/],
        [
          'a wrong hash',
          manifestFile('wrong.json', JSON.stringify({ [good.id]: `${good.text} ` })),
          /entry "sha256:[0-9a-f]{64}": the SHA-256 of its document is [0-9a-f]{64}; the key must be the hash of the text/,
        ],
        [
          'an md5 key',
          manifestFile('md5.json', JSON.stringify({ [createHash('md5').update(good.text).digest('hex')]: good.text })),
          /the key is not a SHA-256/,
        ],
        [
          'an invalid document',
          manifestFile('invalid.json', JSON.stringify({ [`sha256:${sha256('{ viewer { nope } }')}`]: '{ viewer { nope } }' })),
          /the document is not valid against the schema: Cannot query field "nope" on type "Viewer"/,
        ],
        [
          'a syntax error',
          manifestFile('syntax.json', JSON.stringify({ [sha256('{ viewer {')]: '{ viewer {' })),
          /not valid against the schema: Syntax Error/,
        ],
      ];
      for (const [what, path, message] of cases) {
        await assert.rejects(startApp({ env: { GRAPHQL_TRUSTED_DOCUMENTS: path } }), message, what);
      }
      // A first start with a manifest it cannot read, or with a syntax error, stops before it migrates or makes (and
      // prints) the staff key.
      for (const [what, path, message] of cases.filter(([what]) => what === 'a missing file' || what === 'a syntax error')) {
        const fresh = join(dir, `fresh-${what.replace(/\W+/g, '-')}`, 'petstore.db');
        await assert.rejects(startApp({ databaseUrl: `sqlite:${fresh}`, env: { GRAPHQL_TRUSTED_DOCUMENTS: path } }), message, what);
        assert.equal(existsSync(fresh), false, `${what}: no database was made`);
      }
      await assert.rejects(
        startApp({ env: { GRAPHQL_TRUSTED_ONLY: 'true' } }),
        /GRAPHQL_TRUSTED_ONLY="true": needs GRAPHQL_TRUSTED_DOCUMENTS/,
      );
    });

    it("when relay-compiler's SHA-256 manifest (bare hex keys) is given, then its documents are served by documentId", async () => {
      const relay = manifestFile('relay.json', JSON.stringify({ [docs.Viewer!.hash]: docs.Viewer!.text }));
      const t = await startApp({ env: { GRAPHQL_TRUSTED_DOCUMENTS: relay, GRAPHQL_TRUSTED_ONLY: 'true' } });
      try {
        const { client } = await createAccount(t, { name: 'Relay' });
        assert.deepEqual(dataOf(await post(client, { documentId: `sha256:${docs.Viewer!.hash}` })), { viewer: { name: 'Relay' } });
      } finally {
        await t.close();
      }
    });
  });
});
