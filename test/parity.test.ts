/**
 * Parity: one list of scenarios, run against the REST facade and the GraphQL facade, each on its own
 * fresh app, with the same expected outcome and error code (docs/API.md: "the same operation exists in
 * both facades with the same rules and errors"). Every step's outcome is also recorded, and the two
 * facades must have answered every step alike.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Client, startApp, type TestApp, type TestResponse } from './helpers/app.js';
import { assertError } from './rest/support.js';
import { assertGraphQLError, gql, type GraphQLBody } from './graphql/support.js';
import { decodeGlobalId, globalId, type NodeType } from '../src/graphql/global-id.js';

type Id = number | string;
type Outcome<T = any> = { ok: true; value: T } | { ok: false; code: string; status: number };
interface Pet {
  id: number;
  name: string;
  categoryId: number;
  status: string;
}
interface Order {
  id: number;
  petId: number | null;
  quantity: number;
  shipDate: string | null;
  complete: boolean;
}
interface Page<T> {
  items: T[];
  next: string | null;
}
interface PetQuery {
  status?: string;
  categoryId?: Id;
  name?: string;
  ids?: Id[];
  limit?: number;
  cursor?: string;
}

/** The operations as both facades offer them, with results normalised to one shape. */
interface Facade {
  name: 'REST' | 'GraphQL';
  createCategory(as: Client, input: Record<string, unknown>): Promise<Outcome<{ id: number; name: string; description: string | null }>>;
  deleteCategory(as: Client, id: Id): Promise<Outcome<null>>;
  createPet(as: Client, input: Record<string, unknown>): Promise<Outcome<Pet>>;
  updatePet(as: Client, id: Id, input: Record<string, unknown>): Promise<Outcome<Pet>>;
  deletePet(as: Client, id: Id): Promise<Outcome<null>>;
  listPets(as: Client, query: PetQuery): Promise<Outcome<Page<Pet>>>;
  placeOrder(as: Client, input: Record<string, unknown>, idempotencyKey?: string): Promise<Outcome<Order>>;
  getOrder(as: Client, id: Id): Promise<Outcome<Order>>;
  listOrders(as: Client, query: { complete?: boolean; petId?: Id }): Promise<Outcome<Page<Order>>>;
  completeOrder(as: Client, id: Id, shipDate?: string): Promise<Outcome<Order>>;
  cancelOrder(as: Client, id: Id): Promise<Outcome<null>>;
  getInventory(as: Client, petId: Id): Promise<Outcome<{ petId: number; quantity: number; status: string }>>;
  setInventory(as: Client, petId: Id, quantity: unknown): Promise<Outcome<{ petId: number; quantity: number; status: string }>>;
  listInventory(as: Client): Promise<Outcome<Page<{ petId: number; quantity: number; status: string }>>>;
  createAccount(as: Client, input: Record<string, unknown>): Promise<Outcome<{ id: number; role: string; plan: string; key: string }>>;
  updateAccount(
    as: Client,
    id: Id,
    input: Record<string, unknown>,
  ): Promise<Outcome<{ id: number; name: string; role: string; plan: string; limits: unknown }>>;
  createApiKey(as: Client, accountId: Id): Promise<Outcome<{ id: number; key: string }>>;
  revokeApiKey(as: Client, keyId: Id): Promise<Outcome<null>>;
  liftBan(as: Client, keyId: Id): Promise<Outcome<null>>;
  updateCategory(
    as: Client,
    id: Id,
    input: Record<string, unknown>,
  ): Promise<Outcome<{ id: number; name: string; description: string | null }>>;
  getCategory(as: Client, id: Id): Promise<Outcome<{ id: number; name: string; description: string | null }>>;
  listCategories(
    as: Client,
    query: { limit?: number; cursor?: string },
  ): Promise<Outcome<Page<{ id: number; name: string; description: string | null }>>>;
  getPet(as: Client, id: Id): Promise<Outcome<Pet>>;
  viewer(as: Client): Promise<Outcome<{ id: number; name: string; role: string; plan: string }>>;
  listEvents(as: Client, query: { after?: Id; types?: string[]; limit?: number }): Promise<Outcome<Page<Event>>>;
  createWebhook(as: Client, input: Record<string, unknown>): Promise<Outcome<Webhook & { secret: string }>>;
  getWebhook(as: Client, id: Id): Promise<Outcome<Webhook>>;
  listWebhooks(as: Client): Promise<Outcome<Page<Webhook>>>;
  updateWebhook(as: Client, id: Id, input: Record<string, unknown>): Promise<Outcome<Webhook>>;
  deleteWebhook(as: Client, id: Id): Promise<Outcome<null>>;
  rotateWebhookSecret(as: Client, id: Id): Promise<Outcome<Webhook & { secret: string }>>;
  listWebhookDeliveries(as: Client, id: Id): Promise<Outcome<Page<Delivery>>>;
  redeliver(as: Client, id: Id, deliveryId: Id): Promise<Outcome<Delivery>>;
}

interface Event {
  id: number;
  type: string;
  /** The id of the resource (the pet's for inventory events). */
  subject: number;
}
const event = (e: any): Event => ({ id: Number(e.id), type: e.type, subject: Number(e.data.id ?? e.data.petId ?? e.data.stockOf) });

interface Webhook {
  id: number;
  url: string;
  events: string[];
  enabled: boolean;
  disabledReason: string | null;
}
interface Delivery {
  id: number;
  eventId: number;
  eventType: string;
  attempt: number;
  status: string;
}
const webhook = (w: any): Webhook => ({
  id: Number(w.id),
  url: w.url,
  events: w.events,
  enabled: w.enabled,
  disabledReason: w.disabledReason,
});
const withSecret = (w: any) => ({ ...webhook(w), secret: w.secret as string });
const delivery = (d: any): Delivery => ({
  id: Number(d.id),
  eventId: Number(d.eventId),
  eventType: d.eventType,
  attempt: d.attempt,
  status: d.status,
});

const pet = (p: any): Pet => ({ id: Number(p.id), name: p.name, categoryId: Number(p.categoryId), status: p.status });
const order = (o: any): Order => ({
  id: Number(o.id),
  petId: o.petId === null ? null : Number(o.petId),
  quantity: o.quantity,
  shipDate: o.shipDate,
  complete: o.complete,
});
const stock = (i: any) => ({ petId: Number(i.petId), quantity: i.quantity, status: i.status });
const category = (c: any) => ({ id: Number(c.id), name: c.name, description: c.description ?? null });

// ---------------------------------------------------------------------------------------------- REST

function restOutcome<T>(res: TestResponse, map: (body: any, res: TestResponse) => T): Outcome<T> {
  if (res.status >= 200 && res.status < 300) return { ok: true, value: map(res.body, res) };
  assertError(res, res.status, res.body?.code);
  return { ok: false, code: res.body.code, status: res.status };
}

function nextCursor(res: TestResponse): string | null {
  const match = /<([^>]+)>;\s*rel="next"/.exec(res.headers.get('link') ?? '');
  return match ? new URL(match[1]!, 'http://relative.invalid').searchParams.get('cursor') : null;
}

const restPage =
  <T>(map: (item: any) => T) =>
  (body: any[], res: TestResponse): Page<T> => ({ items: body.map(map), next: nextCursor(res) });

function query(params: Record<string, unknown>): string {
  const search = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined) search.set(k, Array.isArray(v) ? v.join(',') : String(v));
  const text = search.toString();
  return text ? `?${text}` : '';
}

const rest: Facade = {
  name: 'REST',
  createCategory: async (as, input) => restOutcome(await as.post('/v1/categories', input), category),
  deleteCategory: async (as, id) => restOutcome(await as.delete(`/v1/categories/${id}`), () => null),
  createPet: async (as, input) => restOutcome(await as.post('/v1/pets', input), pet),
  updatePet: async (as, id, input) => restOutcome(await as.put(`/v1/pets/${id}`, input), pet),
  deletePet: async (as, id) => restOutcome(await as.delete(`/v1/pets/${id}`), () => null),
  listPets: async (as, q) => restOutcome(await as.get(`/v1/pets${query({ ...q })}`), restPage(pet)),
  placeOrder: async (as, input, idempotencyKey) =>
    restOutcome(await as.post('/v1/store/orders', input, idempotencyKey ? { headers: { 'Idempotency-Key': idempotencyKey } } : {}), order),
  getOrder: async (as, id) => restOutcome(await as.get(`/v1/store/orders/${id}`), order),
  listOrders: async (as, q) => restOutcome(await as.get(`/v1/store/orders${query(q)}`), restPage(order)),
  completeOrder: async (as, id, shipDate) =>
    restOutcome(await as.patch(`/v1/store/orders/${id}`, shipDate ? { complete: true, shipDate } : { complete: true }), order),
  cancelOrder: async (as, id) => restOutcome(await as.delete(`/v1/store/orders/${id}`), () => null),
  getInventory: async (as, petId) => restOutcome(await as.get(`/v1/store/inventory/${petId}`), stock),
  setInventory: async (as, petId, quantity) => restOutcome(await as.put(`/v1/store/inventory/${petId}`, { quantity }), stock),
  listInventory: async (as) => restOutcome(await as.get('/v1/store/inventory'), restPage(stock)),
  createAccount: async (as, input) =>
    restOutcome(await as.post('/v1/accounts', input), (b) => ({ id: b.id, role: b.role, plan: b.plan, key: b.apiKey.key })),
  viewer: async (as) => restOutcome(await as.get('/v1/account'), (b) => ({ id: b.id, name: b.name, role: b.role, plan: b.plan })),
  updateAccount: async (as, id, input) =>
    restOutcome(await as.patch(`/v1/accounts/${id}`, input), (b) => ({
      id: b.id,
      name: b.name,
      role: b.role,
      plan: b.plan,
      limits: b.limits,
    })),
  createApiKey: async (as, accountId) =>
    restOutcome(await as.post(`/v1/accounts/${accountId}/api-keys`), (b) => ({ id: b.id, key: b.key })),
  revokeApiKey: async (as, keyId) => restOutcome(await as.delete(`/v1/api-keys/${keyId}`), () => null),
  liftBan: async (as, keyId) => restOutcome(await as.delete(`/v1/api-keys/${keyId}/ban`), () => null),
  updateCategory: async (as, id, input) => restOutcome(await as.put(`/v1/categories/${id}`, input), category),
  getCategory: async (as, id) => restOutcome(await as.get(`/v1/categories/${id}`), category),
  listCategories: async (as, q) => restOutcome(await as.get(`/v1/categories${query(q)}`), restPage(category)),
  getPet: async (as, id) => restOutcome(await as.get(`/v1/pets/${id}`), pet),
  listEvents: async (as, { types, ...q }) =>
    restOutcome(await as.get(`/v1/events${query({ ...q, types: types?.join(',') })}`), (body: any[], res) => ({
      items: body.map(event),
      next: /<[^>]*[?&]after=(\d+)[^>]*>;\s*rel="next"/.exec(res.headers.get('link') ?? '')?.[1] ?? null,
    })),
  createWebhook: async (as, input) => restOutcome(await as.post('/v1/webhooks', input), withSecret),
  getWebhook: async (as, id) => restOutcome(await as.get(`/v1/webhooks/${id}`), webhook),
  listWebhooks: async (as) => restOutcome(await as.get('/v1/webhooks'), restPage(webhook)),
  updateWebhook: async (as, id, input) => restOutcome(await as.patch(`/v1/webhooks/${id}`, input), webhook),
  deleteWebhook: async (as, id) => restOutcome(await as.delete(`/v1/webhooks/${id}`), () => null),
  rotateWebhookSecret: async (as, id) => restOutcome(await as.post(`/v1/webhooks/${id}/rotate-secret`), withSecret),
  listWebhookDeliveries: async (as, id) => restOutcome(await as.get(`/v1/webhooks/${id}/deliveries`), restPage(delivery)),
  redeliver: async (as, id, deliveryId) => restOutcome(await as.post(`/v1/webhooks/${id}/deliveries/${deliveryId}/redeliver`), delivery),
};

// ------------------------------------------------------------------------------------------- GraphQL

// GraphQL ids are global: the facade sends the REST ids encoded (as a client passes back the ids it was given)
// and reads `databaseId` as the REST id, decoding the fields that hold another object's id.
const PET = 'id: databaseId name categoryId status';
const ORDER = 'id: databaseId petId quantity shipDate complete';
const STOCK = 'petId quantity status';
const WEBHOOK = 'id: databaseId url events enabled disabledReason';
const DELIVERY = 'id: databaseId eventId eventType attempt status';

/** A REST id as the GraphQL id of a `type` (absent stays absent; what REST would refuse stays refused: "Pet:abc"). */
const gid = (type: NodeType, id: unknown) => (id === undefined || id === null ? id : globalId(type, id as number));
/** A GraphQL id field as the REST id it stands for. */
const restId = (id: string | null) => (id === null ? null : decodeGlobalId(id, 'id').databaseId);
const gqlPet = (p: any) => pet({ ...p, categoryId: restId(p.categoryId) });
const gqlOrder = (o: any) => order({ ...o, petId: restId(o.petId) });
const gqlStock = (i: any) => stock({ ...i, petId: restId(i.petId) });
const gqlDelivery = (d: any) => delivery({ ...d, eventId: restId(d.eventId) });
const gqlEvent = (e: any) => event({ ...e, data: { ...e.data, stockOf: e.data.stockOf && restId(e.data.stockOf) } });
const petInput = (input: Record<string, unknown>) =>
  'categoryId' in input ? { ...input, categoryId: gid('Category', input.categoryId) } : input;

/** Runs an operation whose single root field is aliased `r`; errors must carry code and status in `extensions`. */
async function graph<T>(as: Client, document: string, variables: Record<string, unknown>, map: (r: any) => T): Promise<Outcome<T>> {
  const res: TestResponse<GraphQLBody> = await gql(as, document, variables);
  const first = res.body.errors?.[0];
  if (first) {
    assertGraphQLError(res, first.extensions?.code, first.extensions?.status);
    return { ok: false, code: first.extensions!.code, status: first.extensions!.status };
  }
  assert.equal(res.status, 200, res.text);
  return { ok: true, value: map(res.body.data.r) };
}

const connection =
  <T>(map: (node: any) => T) =>
  (r: any): Page<T> => ({ items: r.edges.map((e: any) => map(e.node)), next: r.pageInfo.hasNextPage ? r.pageInfo.endCursor : null });

const graphql: Facade = {
  name: 'GraphQL',
  createCategory: (as, input) =>
    graph(
      as,
      'mutation($input: NewCategoryInput!) { r: createCategory(input: $input) { id: databaseId name description } }',
      { input },
      category,
    ),
  deleteCategory: (as, id) => graph(as, 'mutation($id: ID!) { r: deleteCategory(id: $id) }', { id: gid('Category', id) }, () => null),
  createPet: (as, input) =>
    graph(as, `mutation($input: NewPetInput!) { r: createPet(input: $input) { ${PET} } }`, { input: petInput(input) }, gqlPet),
  updatePet: (as, id, input) =>
    graph(
      as,
      `mutation($id: ID!, $input: NewPetInput!) { r: updatePet(id: $id, input: $input) { ${PET} } }`,
      { id: gid('Pet', id), input: petInput(input) },
      gqlPet,
    ),
  deletePet: (as, id) => graph(as, 'mutation($id: ID!) { r: deletePet(id: $id) }', { id: gid('Pet', id) }, () => null),
  listPets: (as, { limit, cursor, ...filter }) =>
    graph(
      as,
      `query($filter: PetFilter, $first: Int, $after: String) {
        r: pets(filter: $filter, first: $first, after: $after) { edges { cursor node { ${PET} } } pageInfo { hasNextPage endCursor } }
      }`,
      {
        filter: {
          ...filter,
          categoryId: gid('Category', filter.categoryId),
          ids: Array.isArray(filter.ids) ? filter.ids.map((id: unknown) => gid('Pet', id)) : filter.ids,
        },
        first: limit,
        after: cursor,
      },
      connection(gqlPet),
    ),
  placeOrder: (as, input, idempotencyKey) =>
    graph(
      as,
      `mutation($input: NewOrderInput!, $key: String) { r: placeOrder(input: $input, idempotencyKey: $key) { ${ORDER} } }`,
      { input: 'petId' in input ? { ...input, petId: gid('Pet', input.petId) } : input, key: idempotencyKey },
      gqlOrder,
    ),
  getOrder: (as, id) => graph(as, `query($id: ID!) { r: order(id: $id) { ${ORDER} } }`, { id: gid('Order', id) }, gqlOrder),
  listOrders: (as, filter) =>
    graph(
      as,
      `query($filter: OrderFilter) { r: orders(filter: $filter) { edges { node { ${ORDER} } } pageInfo { hasNextPage endCursor } } }`,
      { filter: filter && { ...filter, petId: gid('Pet', filter.petId) } },
      connection(gqlOrder),
    ),
  completeOrder: (as, id, shipDate) =>
    graph(
      as,
      `mutation($id: ID!, $shipDate: DateTime) { r: completeOrder(id: $id, shipDate: $shipDate) { ${ORDER} } }`,
      { id: gid('Order', id), shipDate },
      gqlOrder,
    ),
  cancelOrder: (as, id) => graph(as, 'mutation($id: ID!) { r: cancelOrder(id: $id) }', { id: gid('Order', id) }, () => null),
  getInventory: (as, petId) =>
    graph(as, `query($petId: ID!) { r: inventoryItem(petId: $petId) { ${STOCK} } }`, { petId: gid('Pet', petId) }, gqlStock),
  setInventory: (as, petId, quantity) =>
    graph(
      as,
      `mutation($petId: ID!, $quantity: Int!) { r: setInventory(petId: $petId, quantity: $quantity) { ${STOCK} } }`,
      { petId: gid('Pet', petId), quantity },
      gqlStock,
    ),
  listInventory: (as) =>
    graph(as, `{ r: inventory { edges { node { ${STOCK} } } pageInfo { hasNextPage endCursor } } }`, {}, connection(gqlStock)),
  createAccount: (as, input) =>
    graph(
      as,
      'mutation($input: NewAccountInput!) { r: createAccount(input: $input) { id: databaseId role plan apiKey { key } } }',
      { input },
      (r) => ({
        id: Number(r.id),
        role: r.role,
        plan: r.plan,
        key: r.apiKey.key,
      }),
    ),
  viewer: (as) =>
    graph(as, '{ r: viewer { id: databaseId name role plan } }', {}, (r) => ({
      id: Number(r.id),
      name: r.name,
      role: r.role,
      plan: r.plan,
    })),
  updateAccount: (as, id, input) =>
    graph(
      as,
      'mutation($id: ID!, $input: AccountUpdateInput!) { r: updateAccount(id: $id, input: $input) { id: databaseId name role plan limits { perMinute perDay webhookEndpoints subscriptions } } }',
      { id: gid('Account', id), input },
      (r) => ({ id: Number(r.id), name: r.name, role: r.role, plan: r.plan, limits: r.limits }),
    ),
  createApiKey: (as, accountId) =>
    graph(as, 'mutation($id: ID!) { r: createApiKey(accountId: $id) { id: databaseId key } }', { id: gid('Account', accountId) }, (r) => ({
      id: Number(r.id),
      key: r.key,
    })),
  revokeApiKey: (as, keyId) =>
    graph(as, 'mutation($id: ID!) { r: revokeApiKey(keyId: $id) { id } }', { id: gid('ApiKey', keyId) }, () => null),
  liftBan: (as, keyId) => graph(as, 'mutation($id: ID!) { r: liftBan(keyId: $id) }', { id: gid('ApiKey', keyId) }, () => null),
  updateCategory: (as, id, input) =>
    graph(
      as,
      'mutation($id: ID!, $input: NewCategoryInput!) { r: updateCategory(id: $id, input: $input) { id: databaseId name description } }',
      { id: gid('Category', id), input },
      category,
    ),
  getCategory: (as, id) =>
    graph(as, 'query($id: ID!) { r: category(id: $id) { id: databaseId name description } }', { id: gid('Category', id) }, category),
  listCategories: (as, { limit, cursor }) =>
    graph(
      as,
      'query($first: Int, $after: String) { r: categories(first: $first, after: $after) { edges { node { id: databaseId name description } } pageInfo { hasNextPage endCursor } } }',
      { first: limit, after: cursor },
      connection(category),
    ),
  getPet: (as, id) => graph(as, `query($id: ID!) { r: pet(id: $id) { ${PET} } }`, { id: gid('Pet', id) }, gqlPet),
  listEvents: (as, { after, types, limit }) =>
    graph(
      as,
      `query($after: String, $types: [String!], $first: Int) {
        r: events(after: $after, types: $types, first: $first) {
          edges { node { id: databaseId type data { ... on Order { id: databaseId } ... on Pet { id: databaseId } ... on Category { id: databaseId } ... on InventoryItem { stockOf: petId } } } }
          pageInfo { hasNextPage endCursor }
        }
      }`,
      { after: after === undefined ? undefined : String(after), types, first: limit },
      connection(gqlEvent),
    ),
  createWebhook: (as, input) =>
    graph(as, `mutation($input: NewWebhookInput!) { r: createWebhook(input: $input) { ${WEBHOOK} secret } }`, { input }, withSecret),
  getWebhook: (as, id) => graph(as, `query($id: ID!) { r: webhook(id: $id) { ${WEBHOOK} } }`, { id: gid('WebhookEndpoint', id) }, webhook),
  listWebhooks: (as) =>
    graph(as, `{ r: webhooks { edges { node { ${WEBHOOK} } } pageInfo { hasNextPage endCursor } } }`, {}, connection(webhook)),
  updateWebhook: (as, id, input) =>
    graph(
      as,
      `mutation($id: ID!, $input: WebhookUpdateInput!) { r: updateWebhook(id: $id, input: $input) { ${WEBHOOK} } }`,
      { id: gid('WebhookEndpoint', id), input },
      webhook,
    ),
  deleteWebhook: (as, id) => graph(as, 'mutation($id: ID!) { r: deleteWebhook(id: $id) }', { id: gid('WebhookEndpoint', id) }, () => null),
  rotateWebhookSecret: (as, id) =>
    graph(
      as,
      `mutation($id: ID!) { r: rotateWebhookSecret(id: $id) { ${WEBHOOK} secret } }`,
      { id: gid('WebhookEndpoint', id) },
      withSecret,
    ),
  listWebhookDeliveries: (as, id) =>
    graph(
      as,
      `query($id: ID!) { r: webhookDeliveries(webhookId: $id) { edges { node { ${DELIVERY} } } pageInfo { hasNextPage endCursor } } }`,
      { id: gid('WebhookEndpoint', id) },
      connection(gqlDelivery),
    ),
  redeliver: (as, id, deliveryId) =>
    graph(
      as,
      `mutation($id: ID!, $d: ID!) { r: redeliverWebhookDelivery(webhookId: $id, deliveryId: $d) { ${DELIVERY} } }`,
      { id: gid('WebhookEndpoint', id), d: gid('WebhookDelivery', deliveryId) },
      gqlDelivery,
    ),
};

// ----------------------------------------------------------------------------------------- scenarios

/** What a scenario gets: the facade under test, its own fresh app, and a few conveniences. */
interface World {
  f: Facade;
  t: TestApp;
  staff: Client;
  /** A new customer account (through the facade under test) and a client holding its key. */
  customer(name?: string): Promise<Client>;
  /** A new category and a pet in it with `stock` units (through the facade under test). */
  petInStock(stock?: number, name?: string): Promise<{ petId: number; categoryId: number }>;
}

const ok = <T>(outcome: Outcome<T>, what: string): T => {
  assert.ok(outcome.ok, `${what}: expected success, got ${JSON.stringify(outcome)}`);
  return outcome.value;
};

const refused = (outcome: Outcome, code: string, status: number, what: string) =>
  assert.deepEqual(outcome.ok ? outcome : { code: outcome.code, status: outcome.status }, { code, status }, what);

interface Scenario {
  name: string;
  run(w: World): Promise<void>;
}

const scenarios: Scenario[] = [
  {
    name: 'when staff creates a category and a pet in it, then both read back and the pet has one unit of stock',
    async run({ f, staff }) {
      const cat = ok(await f.createCategory(staff, { name: '  Parrots ', description: 'Talkative' }), 'create category');
      assert.deepEqual({ name: cat.name, description: cat.description }, { name: 'Parrots', description: 'Talkative' });
      const created = ok(await f.createPet(staff, { name: 'Polly', categoryId: cat.id }), 'create pet');
      assert.deepEqual(
        { name: created.name, categoryId: created.categoryId, status: created.status },
        { name: 'Polly', categoryId: cat.id, status: 'available' },
      );
      assert.deepEqual(ok(await f.getInventory(staff, created.id), 'inventory'), { petId: created.id, quantity: 1, status: 'available' });
      const listed = ok(await f.listPets(staff, { ids: [created.id] }), 'list by id');
      assert.deepEqual(listed.items, [created]);
    },
  },
  {
    name: 'when pets are listed with filters and small pages, then each filter narrows the list and the pages cover it in id order',
    async run({ f, staff }) {
      const a = ok(await f.createCategory(staff, { name: 'Filter cats' }), 'category a');
      const b = ok(await f.createCategory(staff, { name: 'Filter dogs' }), 'category b');
      const names = ['Tom', 'Tomasina', 'Felix', 'Garfield', 'Rex'];
      const pets: Pet[] = [];
      for (const [i, name] of names.entries()) {
        pets.push(ok(await f.createPet(staff, { name, categoryId: i < 4 ? a.id : b.id, status: i === 2 ? 'sold' : 'available' }), name));
      }
      const inA = ok(await f.listPets(staff, { categoryId: a.id, limit: 100 }), 'by category');
      assert.deepEqual(
        inA.items.map((p) => p.name),
        ['Tom', 'Tomasina', 'Felix', 'Garfield'],
      );
      const toms = ok(await f.listPets(staff, { name: 'TOM', categoryId: a.id }), 'by name');
      assert.deepEqual(
        toms.items.map((p) => p.name),
        ['Tom', 'Tomasina'],
      );
      const sold = ok(await f.listPets(staff, { status: 'sold', categoryId: a.id }), 'by status');
      assert.deepEqual(
        sold.items.map((p) => p.name),
        ['Felix'],
      );
      const some = ok(await f.listPets(staff, { ids: [pets[4]!.id, pets[0]!.id, 999_999] }), 'by ids');
      assert.deepEqual(
        some.items.map((p) => p.name),
        ['Tom', 'Rex'],
      );

      const seen: string[] = [];
      let cursor: string | undefined;
      let pages = 0;
      do {
        const page = ok(await f.listPets(staff, { categoryId: a.id, limit: 3, cursor }), `page ${pages + 1}`);
        seen.push(...page.items.map((p) => p.name));
        cursor = page.next ?? undefined;
        pages++;
      } while (cursor && pages < 10);
      assert.equal(pages, 2);
      assert.deepEqual(seen, ['Tom', 'Tomasina', 'Felix', 'Garfield']);
    },
  },
  {
    name: 'when a customer places an order that staff completes, and another that the customer cancels, then stock and status follow the state table',
    async run({ f, staff, customer, petInStock }) {
      const buyer = await customer();
      const { petId } = await petInStock(2);
      const first = ok(await f.placeOrder(buyer, { petId, quantity: 1, shipDate: '2030-01-02T03:04:05.000Z' }), 'place');
      assert.deepEqual({ ...first, id: 0 }, { id: 0, petId, quantity: 1, shipDate: '2030-01-02T03:04:05.000Z', complete: false });
      assert.deepEqual(ok(await f.getOrder(buyer, first.id), 'read own order'), first);
      const done = ok(await f.completeOrder(staff, first.id, '2030-02-03T04:05:06.000Z'), 'complete');
      assert.deepEqual(done, { ...first, complete: true, shipDate: '2030-02-03T04:05:06.000Z' });

      const second = ok(await f.placeOrder(buyer, { petId, quantity: 1 }), 'place the last unit');
      assert.deepEqual(ok(await f.getInventory(staff, petId), 'stock after'), { petId, quantity: 0, status: 'pending' });
      ok(await f.cancelOrder(buyer, second.id), 'cancel');
      refused(await f.getOrder(buyer, second.id), 'NOT_FOUND', 404, 'a cancelled order is gone');
      assert.deepEqual(ok(await f.getInventory(staff, petId), 'restocked'), { petId, quantity: 1, status: 'available' });

      const open = ok(await f.listOrders(buyer, { complete: true, petId }), 'completed orders of the pet');
      assert.deepEqual(
        open.items.map((o) => o.id),
        [first.id],
      );
    },
  },
  {
    name: 'when a transition is not allowed, then it is refused with its specific 409 code and nothing changes',
    async run({ f, staff, customer, petInStock }) {
      const buyer = await customer();
      const { petId, categoryId } = await petInStock(1);
      refused(await f.placeOrder(buyer, { petId, quantity: 2 }), 'INSUFFICIENT_STOCK', 409, 'more than the stock');
      const placed = ok(await f.placeOrder(buyer, { petId, quantity: 1 }), 'place');
      refused(await f.placeOrder(buyer, { petId, quantity: 1 }), 'PET_NOT_AVAILABLE', 409, 'pet now pending');
      refused(await f.deletePet(staff, petId), 'PET_HAS_OPEN_ORDERS', 409, 'delete with an open order');
      refused(await f.deleteCategory(staff, categoryId), 'CATEGORY_IN_USE', 409, 'delete a category in use');
      ok(await f.completeOrder(staff, placed.id), 'complete');
      refused(await f.completeOrder(staff, placed.id), 'ORDER_NOT_OPEN', 409, 'complete twice');
      refused(await f.cancelOrder(staff, placed.id), 'ORDER_NOT_OPEN', 409, 'cancel a completed order');
      assert.deepEqual(ok(await f.getInventory(staff, petId), 'sold out'), { petId, quantity: 0, status: 'sold' });
      refused(
        await f.updatePet(staff, petId, { name: 'Rex', categoryId, status: 'available' }),
        'INSUFFICIENT_STOCK',
        409,
        'on sale without stock',
      );
      refused(
        await f.createCategory(staff, { name: 'transitions' }).then(() => f.createCategory(staff, { name: 'TRANSITIONS' })),
        'NAME_TAKEN',
        409,
        'name taken',
      );
    },
  },
  {
    name: 'when a customer calls a staff operation, then it is FORBIDDEN and nothing changes',
    async run({ f, staff, customer, petInStock }) {
      const buyer = await customer();
      const { petId, categoryId } = await petInStock(3);
      const placed = ok(await f.placeOrder(buyer, { petId, quantity: 1 }), 'place');
      refused(await f.createCategory(buyer, { name: 'Not mine' }), 'FORBIDDEN', 403, 'create category');
      refused(await f.createPet(buyer, { name: 'Sneaky', categoryId }), 'FORBIDDEN', 403, 'create pet');
      refused(await f.updatePet(buyer, petId, { name: 'Renamed', categoryId }), 'FORBIDDEN', 403, 'update pet');
      refused(await f.deleteCategory(buyer, categoryId), 'FORBIDDEN', 403, 'delete category');
      refused(await f.completeOrder(buyer, placed.id), 'FORBIDDEN', 403, 'complete own order');
      refused(await f.setInventory(buyer, petId, 50), 'FORBIDDEN', 403, 'set inventory');
      refused(await f.listInventory(buyer), 'FORBIDDEN', 403, 'list inventory');
      refused(await f.createAccount(buyer, { name: 'Me too', role: 'staff', plan: 'business' }), 'FORBIDDEN', 403, 'create account');
      assert.deepEqual(ok(await f.getInventory(staff, petId), 'unchanged'), { petId, quantity: 2, status: 'available' });
      assert.equal(ok(await f.getOrder(staff, placed.id), 'still open').complete, false);
    },
  },
  {
    name: "when a customer addresses another account's order, then it is NOT_FOUND, never FORBIDDEN, and lists show only its own",
    async run({ f, staff, customer, petInStock }) {
      const alice = await customer('Alice');
      const bob = await customer('Bob');
      const { petId } = await petInStock(5);
      const hers = ok(await f.placeOrder(alice, { petId, quantity: 1 }), 'alice orders');
      const his = ok(await f.placeOrder(bob, { petId, quantity: 1 }), 'bob orders');
      refused(await f.getOrder(bob, hers.id), 'NOT_FOUND', 404, 'read');
      refused(await f.cancelOrder(bob, hers.id), 'NOT_FOUND', 404, 'cancel');
      refused(await f.getOrder(bob, 999_999), 'NOT_FOUND', 404, 'a missing order reads the same');
      assert.deepEqual(
        ok(await f.listOrders(bob, { petId }), 'bob lists').items.map((o) => o.id),
        [his.id],
      );
      assert.deepEqual(
        ok(await f.listOrders(staff, { petId }), 'staff lists').items.map((o) => o.id),
        [hers.id, his.id],
      );
      assert.equal(ok(await f.getOrder(alice, hers.id), 'still there').complete, false);
    },
  },
  {
    name: 'when the input is invalid, then it is VALIDATION_FAILED (400) and nothing is created',
    async run({ f, staff, customer, petInStock }) {
      const buyer = await customer();
      const { petId, categoryId } = await petInStock(1);
      refused(await f.createPet(staff, { name: '   ', categoryId }), 'VALIDATION_FAILED', 400, 'blank name');
      refused(await f.createPet(staff, { name: 'x'.repeat(101), categoryId }), 'VALIDATION_FAILED', 400, 'long name');
      refused(await f.createPet(staff, { name: 'Ghost', categoryId: 999_999 }), 'VALIDATION_FAILED', 400, 'missing category');
      refused(await f.createPet(staff, { name: 'Rex', categoryId, colour: 'brown' }), 'VALIDATION_FAILED', 400, 'unknown property');
      refused(await f.createCategory(staff, { description: 'no name' }), 'VALIDATION_FAILED', 400, 'missing name');
      refused(await f.placeOrder(buyer, { petId, quantity: 0 }), 'VALIDATION_FAILED', 400, 'quantity 0');
      refused(await f.placeOrder(buyer, { petId, quantity: 101 }), 'VALIDATION_FAILED', 400, 'quantity 101');
      refused(await f.placeOrder(buyer, { petId: 999_999, quantity: 1 }), 'VALIDATION_FAILED', 400, 'missing pet in the body');
      refused(await f.placeOrder(buyer, { petId, quantity: 1, shipDate: 'tomorrow' }), 'VALIDATION_FAILED', 400, 'bad date');
      refused(await f.setInventory(staff, petId, -1), 'VALIDATION_FAILED', 400, 'negative stock');
      refused(await f.listPets(staff, { limit: 101 }), 'VALIDATION_FAILED', 400, 'page too large');
      refused(await f.listPets(staff, { cursor: 'not-a-cursor' }), 'VALIDATION_FAILED', 400, 'bad cursor');
      refused(await f.getOrder(staff, 'abc'), 'VALIDATION_FAILED', 400, 'bad id');
      refused(await f.placeOrder(buyer, { petId, quantity: 1 }, 'x'.repeat(256)), 'VALIDATION_FAILED', 400, 'idempotency key too long');
      assert.deepEqual(
        ok(await f.listPets(staff, { categoryId }), 'unchanged').items.map((p) => p.id),
        [petId],
      );
      assert.deepEqual(ok(await f.listOrders(buyer, {}), 'no order').items, []);
    },
  },
  {
    name: 'when an order is retried with the same idempotency key, then the first outcome is replayed, and another payload is IDEMPOTENCY_KEY_REUSED',
    async run({ f, customer, petInStock }) {
      const buyer = await customer();
      const { petId } = await petInStock(3);
      const first = ok(await f.placeOrder(buyer, { petId, quantity: 1 }, 'order-1'), 'first');
      assert.deepEqual(ok(await f.placeOrder(buyer, { petId, quantity: 1 }, 'order-1'), 'retry'), first);
      refused(await f.placeOrder(buyer, { petId, quantity: 2 }, 'order-1'), 'IDEMPOTENCY_KEY_REUSED', 422, 'other payload');
      assert.equal(ok(await f.listOrders(buyer, {}), 'one order').items.length, 1);
    },
  },
  {
    name: 'when a request has no key or an unknown one, then it is UNAUTHENTICATED or INVALID_API_KEY (401)',
    async run({ f, t }) {
      refused(await f.listPets(t.anonymous, {}), 'UNAUTHENTICATED', 401, 'no key');
      refused(await f.viewer(t.anonymous.withKey('psk_this-key-does-not-exist-0000')), 'INVALID_API_KEY', 401, 'unknown key');
    },
  },
  {
    name: 'when staff creates an account, then its key works at once and reads back its own account',
    async run({ f, t, staff }) {
      const created = ok(await f.createAccount(staff, { name: 'Kennel', role: 'customer', plan: 'free' }), 'create');
      assert.match(created.key, /^psk_/);
      const me = ok(await f.viewer(new Client(t.url, created.key)), 'viewer');
      assert.deepEqual(me, { id: created.id, name: 'Kennel', role: 'customer', plan: 'free' });
      refused(
        await f.createAccount(staff, { name: 'Big', role: 'customer', plan: 'enterprise' }),
        'VALIDATION_FAILED',
        400,
        'enterprise without limits',
      );
    },
  },
  {
    name: 'when staff edits and removes catalogue entries, then reads follow each change and removed ones are NOT_FOUND',
    async run({ f, staff, customer }) {
      const buyer = await customer();
      const cat = ok(await f.createCategory(staff, { name: 'Lizards' }), 'create');
      const other = ok(await f.createCategory(staff, { name: 'Snakes' }), 'create another');
      assert.deepEqual(ok(await f.updateCategory(staff, cat.id, { name: 'Geckos', description: 'Sticky feet' }), 'update'), {
        id: cat.id,
        name: 'Geckos',
        description: 'Sticky feet',
      });
      refused(await f.updateCategory(staff, cat.id, { name: 'snakes' }), 'NAME_TAKEN', 409, 'rename onto another name');
      assert.deepEqual(ok(await f.getCategory(buyer, cat.id), 'read'), { id: cat.id, name: 'Geckos', description: 'Sticky feet' });
      const p = ok(await f.createPet(staff, { name: 'Leo', categoryId: cat.id }), 'pet');
      const moved = ok(await f.updatePet(staff, p.id, { name: 'Leon', categoryId: other.id, status: 'pending' }), 'replace pet');
      assert.deepEqual(moved, { id: p.id, name: 'Leon', categoryId: other.id, status: 'pending' });
      assert.deepEqual(ok(await f.getPet(buyer, p.id), 'read pet (deprecated operation)'), moved);
      ok(await f.deleteCategory(staff, cat.id), 'delete the emptied category');
      refused(await f.getCategory(buyer, cat.id), 'NOT_FOUND', 404, 'deleted category');
      ok(await f.deletePet(staff, p.id), 'delete pet');
      refused(await f.getPet(buyer, p.id), 'NOT_FOUND', 404, 'deleted pet');
      refused(await f.getInventory(staff, p.id), 'NOT_FOUND', 404, 'its inventory went with it');
      refused(await f.updatePet(staff, p.id, { name: 'Ghost', categoryId: other.id }), 'NOT_FOUND', 404, 'replace a deleted pet');
      const names = ok(await f.listCategories(buyer, { limit: 100 }), 'list').items.map((c) => c.name);
      assert.ok(names.includes('Snakes') && !names.includes('Geckos'));
    },
  },
  {
    name: 'when staff manages accounts and keys, then plan changes, new keys, revocations and ban lifts behave alike',
    async run({ f, t, staff }) {
      const acct = ok(await f.createAccount(staff, { name: 'Reseller', role: 'customer', plan: 'free' }), 'create');
      const enterprise = ok(
        await f.updateAccount(staff, acct.id, { plan: 'enterprise', limits: { perMinute: 500, perDay: 50000 } }),
        'upgrade',
      );
      assert.deepEqual(enterprise, {
        id: acct.id,
        name: 'Reseller',
        role: 'customer',
        plan: 'enterprise',
        limits: { perMinute: 500, perDay: 50000, webhookEndpoints: 20, subscriptions: 50 },
      });
      refused(
        await f.updateAccount(staff, acct.id, { plan: 'pro', limits: { perMinute: 5, perDay: 5 } }),
        'VALIDATION_FAILED',
        400,
        'limits off enterprise',
      );
      refused(await f.updateAccount(staff, 999_999, { name: 'Nobody' }), 'NOT_FOUND', 404, 'missing account');
      const second = ok(await f.createApiKey(staff, acct.id), 'second key');
      const withSecond = new Client(t.url, second.key);
      assert.equal(ok(await f.viewer(withSecond), 'second key works').id, acct.id);
      ok(await f.liftBan(staff, second.id), 'lifting a ban that is not there is fine');
      ok(await f.revokeApiKey(staff, second.id), 'revoke');
      refused(await f.viewer(withSecond), 'INVALID_API_KEY', 401, 'revoked key');
      assert.equal(ok(await f.viewer(new Client(t.url, acct.key)), 'first key still works').plan, 'enterprise');
      refused(await f.revokeApiKey(staff, 999_999), 'NOT_FOUND', 404, 'missing key');
      refused(await f.createApiKey(new Client(t.url, acct.key), acct.id), 'FORBIDDEN', 403, 'a customer cannot mint keys');
    },
  },
  {
    name: "when an enterprise account has its own caps, then it gets exactly them (PLAN_LIMIT_REACHED past them), a cap left out is kept and null returns it to the business plan's",
    async run({ f, t, staff }) {
      const created = ok(
        await f.createAccount(staff, {
          name: 'Big hooks',
          role: 'customer',
          plan: 'enterprise',
          limits: { perMinute: 1000, perDay: 10000, webhookEndpoints: 2, subscriptions: 3 },
        }),
        'create with caps',
      );
      const big = new Client(t.url, created.key);
      const url = 'http://127.0.0.1:9/hooks';
      for (let i = 1; i <= 2; i++) ok(await f.createWebhook(big, { url, events: ['pet.deleted'] }), `endpoint ${i} of its 2`);
      refused(await f.createWebhook(big, { url, events: ['pet.deleted'] }), 'PLAN_LIMIT_REACHED', 409, 'a third endpoint');
      const raised = ok(
        await f.updateAccount(staff, created.id, { limits: { perMinute: 1000, perDay: 10000, webhookEndpoints: 3 } }),
        'raise one cap',
      );
      assert.deepEqual(
        raised.limits,
        { perMinute: 1000, perDay: 10000, webhookEndpoints: 3, subscriptions: 3 },
        'the cap left out is kept',
      );
      ok(await f.createWebhook(big, { url, events: ['pet.deleted'] }), 'endpoint 3 of its 3');
      refused(await f.createWebhook(big, { url, events: ['pet.deleted'] }), 'PLAN_LIMIT_REACHED', 409, 'a fourth endpoint');
      const reset = ok(
        await f.updateAccount(staff, created.id, {
          limits: { perMinute: 1000, perDay: 10000, webhookEndpoints: null, subscriptions: null },
        }),
        'reset',
      );
      assert.deepEqual(reset.limits, { perMinute: 1000, perDay: 10000, webhookEndpoints: 20, subscriptions: 50 });
      const plain = ok(
        await f.createAccount(staff, { name: 'Plain big', role: 'customer', plan: 'enterprise', limits: { perMinute: 10, perDay: 100 } }),
        'no caps',
      );
      assert.deepEqual(ok(await f.updateAccount(staff, plain.id, { name: 'Plain big too' }), 'read').limits, {
        perMinute: 10,
        perDay: 100,
        webhookEndpoints: 20,
        subscriptions: 50,
      });
      refused(
        await f.updateAccount(staff, created.id, { limits: { perMinute: 10, perDay: 100, webhookEndpoints: -1 } }),
        'VALIDATION_FAILED',
        400,
        'a negative cap',
      );
      refused(
        await f.updateAccount(staff, created.id, { limits: { perMinute: 10, perDay: 100, subscriptions: 10001 } }),
        'VALIDATION_FAILED',
        400,
        'a cap too large',
      );
    },
  },
  {
    name: "when orders change, then the event feed shows each account its own orders' events and the catalogue's, never another's (BOLA)",
    async run({ f, staff, customer, petInStock }) {
      const alice = await customer('Alice');
      const bob = await customer('Bob');
      const { petId } = await petInStock(5);
      const start = ok(await f.listEvents(staff, { types: ['pet.created'] }), 'the pet is in the feed').items.at(-1)!;
      assert.equal(start.subject, petId);
      const hers = ok(await f.placeOrder(alice, { petId, quantity: 1 }), 'alice orders');
      const his = ok(await f.placeOrder(bob, { petId, quantity: 1 }), 'bob orders');
      ok(await f.completeOrder(staff, hers.id), 'complete hers');
      ok(await f.cancelOrder(bob, his.id), 'bob cancels');
      const seen = async (as: Client, types?: string[]) =>
        ok(await f.listEvents(as, { after: start.id, types, limit: 100 }), 'feed').items.map((e) => `${e.type} ${e.subject}`);
      assert.deepEqual(await seen(bob, ['order.*']), [`order.placed ${his.id}`, `order.cancelled ${his.id}`]);
      assert.deepEqual(await seen(alice, ['order.*']), [`order.placed ${hers.id}`, `order.completed ${hers.id}`]);
      assert.deepEqual(await seen(staff, ['order.placed']), [`order.placed ${hers.id}`, `order.placed ${his.id}`]);
      assert.deepEqual(await seen(bob, ['inventory.changed']), await seen(alice, ['inventory.changed']));
      assert.equal((await seen(bob, ['inventory.changed'])).length, 4, 'stock set, two orders, one cancellation');
      const page = ok(await f.listEvents(staff, { after: start.id, limit: 2 }), 'a small page');
      assert.equal(page.items.length, 2);
      assert.equal(page.next, String(page.items[1]!.id));
      refused(await f.listEvents(bob, { types: ['order.shipped'] }), 'VALIDATION_FAILED', 400, 'an unknown type');
    },
  },
  {
    name: "when customers manage webhook endpoints, then create, read, update, rotate, deliveries, redeliver and delete behave alike, capped per plan, and another account's endpoint is NOT_FOUND",
    async run({ f, t, staff, customer }) {
      const bob = await customer('Bob');
      const eve = await customer('Eve');
      // Nothing listens on port 9 of loopback: every attempt fails and is logged.
      const url = 'http://127.0.0.1:9/hooks';
      const hook = ok(await f.createWebhook(bob, { url, events: ['category.*'] }), 'create');
      assert.match(hook.secret, /^whsec_/);
      assert.deepEqual(hook.events, ['category.created', 'category.updated', 'category.deleted']);
      assert.deepEqual(ok(await f.getWebhook(bob, hook.id), 'read'), {
        id: hook.id,
        url,
        events: hook.events,
        enabled: true,
        disabledReason: null,
      });
      assert.deepEqual(
        ok(await f.listWebhooks(bob), 'list').items.map((w) => w.id),
        [hook.id],
      );
      refused(await f.getWebhook(eve, hook.id), 'NOT_FOUND', 404, "another account's endpoint");
      refused(await f.deleteWebhook(staff, hook.id), 'NOT_FOUND', 404, "staff does not reach a customer's endpoint either");
      refused(await f.createWebhook(bob, { url: 'ftp://127.0.0.1/x', events: ['order.*'] }), 'VALIDATION_FAILED', 400, 'not http(s)');
      refused(await f.createWebhook(bob, { url, events: ['order.shipped'] }), 'VALIDATION_FAILED', 400, 'an unknown type');
      const paused = ok(await f.updateWebhook(bob, hook.id, { enabled: false }), 'pause');
      assert.equal(paused.enabled, false);
      ok(await f.updateWebhook(bob, hook.id, { enabled: true, events: ['category.created'] }), 'resume');
      const rotated = ok(await f.rotateWebhookSecret(bob, hook.id), 'rotate');
      assert.notEqual(rotated.secret, hook.secret);
      ok(await f.createCategory(staff, { name: `Hooked ${f.name}` }), 'a category to deliver');
      // Wait, outside the compared steps, for the failed attempt to be logged.
      for (
        let i = 0;
        i < 100 &&
        !(await rest
          .listWebhookDeliveries(new Client(t.url, bob.key), hook.id)
          .then((o) => o.ok && o.value.items.some((d) => d.status === 'failed')));
        i++
      ) {
        await new Promise((r) => setTimeout(r, 50));
      }
      const logged = ok(await f.listWebhookDeliveries(bob, hook.id), 'deliveries').items;
      const [first] = logged;
      const retry = logged.find((d) => d.status === 'pending');
      assert.ok(retry, 'the failed attempt has its retry waiting');
      assert.deepEqual(
        { ...first!, id: 0, eventId: 0 },
        { id: 0, eventId: 0, eventType: 'category.created', attempt: 1, status: 'failed' },
      );
      // The failed attempt's retry is pending (its schedule runs to 24 h): the redelivery answers that one, brought forward, and queues nothing more.
      const again = ok(await f.redeliver(bob, hook.id, first!.id), 'redeliver');
      assert.deepEqual([again.eventId, again.status], [first!.eventId, 'pending']);
      assert.deepEqual([again.id, again.attempt], [retry.id, 1], 'the waiting retry, as a first attempt again, not a new delivery');
      refused(await f.listWebhookDeliveries(eve, hook.id), 'NOT_FOUND', 404, "another account's deliveries");
      refused(await f.redeliver(eve, hook.id, first!.id), 'NOT_FOUND', 404, "another account's redelivery");
      for (let i = 2; i <= 5; i++) ok(await f.createWebhook(bob, { url, events: ['pet.deleted'] }), `endpoint ${i} of the pro plan's 5`);
      refused(await f.createWebhook(bob, { url, events: ['pet.deleted'] }), 'PLAN_LIMIT_REACHED', 409, 'a sixth endpoint');
      ok(await f.deleteWebhook(bob, hook.id), 'delete');
      refused(await f.getWebhook(bob, hook.id), 'NOT_FOUND', 404, 'deleted');
    },
  },
];

// ---------------------------------------------------------------------------------------------- run

/** Records every outcome of a facade, so the two runs of a scenario can be compared step by step. */
function traced(facade: Facade, trace: string[]): Facade {
  const wrapped = { name: facade.name } as Facade;
  for (const key of Object.keys(facade) as Array<keyof Facade>) {
    if (key === 'name') continue;
    const call = facade[key] as (...args: any[]) => Promise<Outcome>;
    (wrapped as any)[key] = async (...args: any[]) => {
      const outcome = await call(...args);
      trace.push(`${key} → ${outcome.ok ? 'ok' : `${outcome.code} ${outcome.status}`}`);
      return outcome;
    };
  }
  return wrapped;
}

describe('parity: every scenario gives the same outcome and error code through REST and GraphQL', () => {
  const apps = new Map<Facade['name'], TestApp>();
  let counter = 0;
  before(async () => {
    // GET /pets/{petId} answers 410 after its sunset; keep it in the future so the comparison holds whatever today is.
    const env = { PETS_GET_SUNSET: '2099-12-31', WEBHOOK_ALLOW_PRIVATE: 'true' };
    const [a, b] = await Promise.all([startApp({ env }), startApp({ env })]);
    apps.set('REST', a);
    apps.set('GraphQL', b);
  });
  after(async () => {
    await Promise.all([...apps.values()].map((t) => t.close()));
  });

  function world(facade: Facade, trace: string[]): World {
    const t = apps.get(facade.name)!;
    const f = traced(facade, trace);
    return {
      f,
      t,
      staff: t.admin,
      async customer(name = 'Customer') {
        const created = ok(await f.createAccount(t.admin, { name, role: 'customer', plan: 'pro' }), 'create customer');
        return new Client(t.url, created.key);
      },
      async petInStock(units = 1, name = 'Rex') {
        const cat = ok(await f.createCategory(t.admin, { name: `Category ${facade.name} ${++counter}` }), 'category');
        const created = ok(await f.createPet(t.admin, { name, categoryId: cat.id }), 'pet');
        if (units !== 1) ok(await f.setInventory(t.admin, created.id, units), 'stock');
        return { petId: created.id, categoryId: cat.id };
      },
    };
  }

  for (const scenario of scenarios) {
    describe(scenario.name, () => {
      const traces = { REST: [] as string[], GraphQL: [] as string[] };
      for (const facade of [rest, graphql]) {
        it(`through ${facade.name}`, async () => {
          await scenario.run(world(facade, traces[facade.name]));
        });
      }
      it('through both, with the same outcome at every step', () => {
        assert.ok(traces.REST.length > 0, 'the REST run recorded its steps');
        assert.deepEqual(traces.GraphQL, traces.REST);
      });
    });
  }
});
