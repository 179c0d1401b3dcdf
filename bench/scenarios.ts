/**
 * What the benchmark sends. Each REST scenario has a GraphQL twin asking for the same data, so
 * their ratio compares the facades, not the work.
 */
import type autocannon from 'autocannon';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { MANY_KEYS, PET_COUNT } from './seed.js';
import { globalId } from '../src/graphql/global-id.js';

/**
 * `against`: the memory service built from another commit (`--against DIR`), for before/after ratios.
 * `postgres`: the same service on PostgreSQL (`PG_URL`), memory limiter, its own seeded database.
 * `traced`: the same service with traces on (always-on sampler, OTLP/HTTP to a sink in the bench process).
 */
export type ServiceName =
  | 'l0'
  | 'koa'
  | 'gate'
  | 'floor'
  | 'apollo-floor'
  | 'memory'
  /** The flood row's service: as deployed, with its default ban threshold. */
  | 'as-deployed'
  | 'no-limiter'
  | 'no-outbox'
  | 'traced'
  | 'redis'
  | 'postgres'
  | 'against'
  | 'against-postgres';
/** The ladder from L0 to the service (bench/ladder-server.ts): each adds one layer of the stack. */
export const LADDER: ServiceName[] = ['koa', 'gate', 'floor'];
/** The keys a run sends: one per name; `many`, MANY_KEYS keys each of its own account, which requests take in turn (bench/seed.ts). */
export type BenchKeys = { enterprise: string; free: string; many: readonly string[] };
type KeyName = keyof BenchKeys;

/**
 * What a scenario sends with which key: its one key (the run's header), or for `many` the first key as the run's header
 * and its requests each carrying the next of the keys (autocannon's per-request headers override the run's). The one
 * place every bench tool asks.
 */
export function keyedRequests(scenario: Scenario, keys: BenchKeys): { key: string; requests: autocannon.Request[] } {
  const named = keys[scenario.key];
  if (typeof named === 'string') return { key: named, requests: scenario.requests };
  return { key: named[0]!, requests: rotatingKeys(scenario.requests, named) };
}

function rotatingKeys(requests: autocannon.Request[], keys: readonly string[]): autocannon.Request[] {
  let next = 0;
  return requests.map((request) => ({
    ...request,
    setupRequest: (req: autocannon.Request, context: unknown) => {
      const own = request.setupRequest as ((req: autocannon.Request, context: object) => autocannon.Request) | undefined;
      const prepared = own ? own(req, context as object) : req;
      next = (next + 1) % keys.length;
      return { ...prepared, headers: { ...prepared.headers, 'X-API-Key': keys[next]! } };
    },
  }));
}

export interface Scenario {
  id: string;
  /** What the table shows. */
  label: string;
  service: ServiceName;
  key: KeyName;
  /** HTTP requests per operation (REST needs two for a page with its categories). */
  requestsPerOp: number;
  /** The status every response should have. */
  expect: number;
  requests: autocannon.Request[];
  /** Clients at once, when not the run's `--connections`: one client shows what a request costs when none share a turn of the event loop. */
  connections?: number;
}

/** Ten pets spread over the table: `GET /v1/pets?ids=…` and `pets(filter: {ids})`. */
export const IDS = Array.from({ length: 10 }, (_, i) => 1 + i * Math.floor(PET_COUNT / 10));
export const REST_IDS_PATH = `/v1/pets?ids=${IDS.join(',')}`;

const json = { 'Content-Type': 'application/json' };
const graphql = (query: string, variables?: object): autocannon.Request => ({
  method: 'POST',
  path: '/graphql',
  headers: json,
  body: JSON.stringify({ query, variables }),
});

/** Orders rotate over every pet, so no single inventory row is the hot spot. */
function rotatingPets(toBody: (petId: number) => string): autocannon.Request['setupRequest'] {
  let next = 0;
  return (request) => {
    next = (next % PET_COUNT) + 1;
    return { ...request, body: toBody(next) };
  };
}

const IDS_QUERY =
  'query PetsByIds($ids: [ID!]) { pets(filter: { ids: $ids }, first: 100) { edges { node { id name categoryId status } } } }';
/** GraphQL's read of the ten pets REST_IDS_PATH reads. */
export const GQL_IDS_REQUEST = graphql(IDS_QUERY, { ids: IDS.map((id) => globalId('Pet', id)) });
/** GraphQL's read of one pet. */
export const GQL_PET_REQUEST = graphql('query Pet($id: ID!) { pet(id: $id) { id name categoryId status } }', { id: globalId('Pet', 1) });
const PAGE_QUERY = 'query Page { pets(first: 20) { edges { node { name category { name } } } } }';
const ORDER_MUTATION = 'mutation Order($input: NewOrderInput!) { placeOrder(input: $input) { id petId quantity shipDate complete } }';

const restIds = (service: ServiceName, id: string, label: string): Scenario => ({
  id,
  label,
  service,
  key: 'enterprise',
  requestsPerOp: 1,
  expect: 200,
  requests: [{ method: 'GET', path: REST_IDS_PATH }],
});

const SCENARIOS_BASE: Scenario[] = [
  { ...restIds('l0', 'l0', 'L0: node:http, same bytes from memory'), key: 'enterprise' },
  restIds('koa', 'koa', 'Koa + @koa/router (every route of the document), same bytes'),
  restIds('gate', 'gate', '+ key in a Map, rate-limiter-flexible memory, 5 headers'),
  restIds('floor', 'floor', 'F: + the 10-id read as one cached libsql prepared statement'),
  restIds('memory', 'rest-ids', 'REST GET /v1/pets?ids=(10 ids)'),
  { ...restIds('memory', 'rest-ids-keys', `REST by ids, each request with the next of ${MANY_KEYS} customers' keys`), key: 'many' },
  { ...restIds('floor', 'floor-1', 'F, one client at a time'), connections: 1 },
  { ...restIds('memory', 'rest-ids-1', 'REST GET /v1/pets?ids=(10 ids), one client at a time'), connections: 1 },
  {
    id: 'gql-ids',
    label: 'GraphQL pets(filter:{ids}) (10 ids)',
    service: 'memory',
    key: 'enterprise',
    requestsPerOp: 1,
    expect: 200,
    requests: [GQL_IDS_REQUEST],
  },
  { ...restIds('memory', 'rest-one', 'REST GET /v1/pets?ids=1 (one pet)'), requests: [{ method: 'GET', path: '/v1/pets?ids=1' }] },
  {
    id: 'gql-pet',
    label: 'GraphQL pet(id) (one pet)',
    service: 'memory',
    key: 'enterprise',
    requestsPerOp: 1,
    expect: 200,
    requests: [GQL_PET_REQUEST],
  },
  {
    id: 'apollo-ids',
    label: 'F_apollo: GraphQL pets(filter:{ids}) (10 ids)',
    service: 'apollo-floor',
    key: 'enterprise',
    requestsPerOp: 1,
    expect: 200,
    requests: [GQL_IDS_REQUEST],
  },
  {
    id: 'apollo-pet',
    label: 'F_apollo: GraphQL pet(id)',
    service: 'apollo-floor',
    key: 'enterprise',
    requestsPerOp: 1,
    expect: 200,
    requests: [GQL_PET_REQUEST],
  },
  restIds('no-limiter', 'rest-ids-no-limiter', 'REST by ids, limiter replaced by a no-op'),
  restIds('redis', 'rest-ids-redis', 'REST by ids, Redis limiter store'),
  {
    id: 'rest-page',
    label: 'REST page of 20 + categories (2 requests)',
    service: 'memory',
    key: 'enterprise',
    requestsPerOp: 2,
    expect: 200,
    requests: [
      { method: 'GET', path: '/v1/pets?limit=20' },
      { method: 'GET', path: '/v1/categories' },
    ],
  },
  {
    id: 'gql-page',
    label: 'GraphQL pets(first:20){name category{name}}',
    service: 'memory',
    key: 'enterprise',
    requestsPerOp: 1,
    expect: 200,
    requests: [graphql(PAGE_QUERY)],
  },
  {
    id: 'rest-order',
    label: 'REST POST /v1/store/orders',
    service: 'memory',
    key: 'enterprise',
    requestsPerOp: 1,
    expect: 201,
    requests: [
      {
        method: 'POST',
        path: '/v1/store/orders',
        headers: json,
        setupRequest: rotatingPets((petId) => JSON.stringify({ petId, quantity: 1 })),
      },
    ],
  },
  {
    id: 'gql-order',
    label: 'GraphQL placeOrder',
    service: 'memory',
    key: 'enterprise',
    requestsPerOp: 1,
    expect: 200,
    requests: [
      {
        method: 'POST',
        path: '/graphql',
        headers: json,
        setupRequest: rotatingPets((petId) =>
          JSON.stringify({ query: ORDER_MUTATION, variables: { input: { petId: globalId('Pet', petId), quantity: 1 } } }),
        ),
      },
    ],
  },
  {
    id: 'rest-429',
    label: 'REST by ids, free key over its limit (429)',
    service: 'memory',
    key: 'free',
    requestsPerOp: 1,
    expect: 429,
    requests: [{ method: 'GET', path: REST_IDS_PATH }],
  },
];

/** The order scenarios again on the service without the outbox's writes (bench/service-variant.ts, `no-outbox`). */
const withoutOutbox = (id: string): Scenario => {
  const s = SCENARIOS_BASE.find((x) => x.id === id)!;
  return { ...s, id: `${id}-no-outbox`, label: `${s.label}, outbox writes off`, service: 'no-outbox' };
};

/** The read and the order again on PostgreSQL (`PG_URL`): the order's target holds on both databases. */
const onPostgres = (id: string): Scenario => {
  const s = SCENARIOS_BASE.find((x) => x.id === id)!;
  return { ...s, id: `${id}-pg`, label: `${s.label}, PostgreSQL`, service: 'postgres' };
};

/** The reads and the order again with traces on: every request sampled and exported (bench/run.ts's sink). */
const traced = (id: string): Scenario => {
  const s = SCENARIOS_BASE.find((x) => x.id === id)!;
  return { ...s, id: `${id}-traced`, label: `${s.label}, tracing on (always_on)`, service: 'traced' };
};

export const SCENARIOS: Scenario[] = [
  ...SCENARIOS_BASE,
  withoutOutbox('rest-order'),
  withoutOutbox('gql-order'),
  traced('rest-ids'),
  traced('gql-ids'),
  traced('rest-order'),
  onPostgres('rest-ids'),
  onPostgres('rest-ids-keys'),
  onPostgres('gql-ids'),
  onPostgres('rest-order'),
  onPostgres('gql-order'),
];

/**
 * The targets, judged by instructions per request (bench/instructions.ts): each the floor's instructions over the
 * service's, i.e. the share of its floor's efficiency the service keeps (100% = as cheap as its floor).
 */
export const TARGETS = [
  { label: 'REST by ids / F', service: 'rest-ids', floor: 'floor', target: 0.8 },
  { label: 'GraphQL by ids / F_apollo', service: 'gql-ids', floor: 'apollo-ids', target: 0.85 },
  { label: 'GraphQL pet(id) / F_apollo pet(id)', service: 'gql-pet', floor: 'apollo-pet', target: 0.85 },
] as const;
/** The scenarios the targets compare, in the order `npm run bench` prints them. */
export const TARGET_SCENARIOS = ['floor', 'rest-ids', 'apollo-ids', 'gql-ids', 'apollo-pet', 'gql-pet'];

/** A scenario's one request as autocannon's options, with the key (for the tools that send one kind of request). */
export function scenarioRequest(
  url: string,
  key: string,
  id: string,
): { url: string; method?: autocannon.Request['method']; body?: string; headers: Record<string, string> } {
  const request = SCENARIOS.find((s) => s.id === id)?.requests[0];
  if (!request?.path) throw new Error(`no scenario ${id} with a fixed request`);
  return {
    url: url + request.path,
    method: request.method,
    body: request.body as string | undefined,
    headers: { ...(request.headers as Record<string, string> | undefined), 'X-API-Key': key },
  };
}

export interface RatioSpec {
  label: string;
  numerator: string;
  denominator: string;
  /** Minimum for the target; null when only informative. */
  target: number | null;
}

export const RATIOS: RatioSpec[] = [
  { label: 'REST / F, the stack floor (by ids)', numerator: 'rest-ids', denominator: 'floor', target: 0.8 },
  { label: 'GraphQL by ids / F_apollo', numerator: 'gql-ids', denominator: 'apollo-ids', target: 0.85 },
  { label: 'GraphQL pet(id) / F_apollo pet(id)', numerator: 'gql-pet', denominator: 'apollo-pet', target: 0.85 },
  { label: 'GraphQL by ids / F', numerator: 'gql-ids', denominator: 'floor', target: null },
  { label: `REST by ids, ${MANY_KEYS} keys / one key`, numerator: 'rest-ids-keys', denominator: 'rest-ids', target: null },
  { label: 'REST / F (by ids), one client at a time', numerator: 'rest-ids-1', denominator: 'floor-1', target: null },
  { label: 'Koa + router / L0', numerator: 'koa', denominator: 'l0', target: null },
  { label: '+ gate / L0', numerator: 'gate', denominator: 'l0', target: null },
  { label: 'F / L0', numerator: 'floor', denominator: 'l0', target: null },
  { label: 'REST / L0 (by ids)', numerator: 'rest-ids', denominator: 'l0', target: null },
  { label: 'GraphQL by ids / L0', numerator: 'gql-ids', denominator: 'l0', target: null },
  { label: 'GraphQL / REST (by ids)', numerator: 'gql-ids', denominator: 'rest-ids', target: null },
  { label: 'GraphQL pet(id) / REST (one pet)', numerator: 'gql-pet', denominator: 'rest-one', target: null },
  { label: 'REST place an order / REST read by ids', numerator: 'rest-order', denominator: 'rest-ids', target: 0.5 },
  { label: 'PostgreSQL: REST place an order / REST read by ids', numerator: 'rest-order-pg', denominator: 'rest-ids-pg', target: 0.5 },
  { label: 'PostgreSQL: GraphQL / REST (by ids)', numerator: 'gql-ids-pg', denominator: 'rest-ids-pg', target: null },
  { label: 'PostgreSQL: GraphQL / REST (place an order)', numerator: 'gql-order-pg', denominator: 'rest-order-pg', target: null },
  {
    label: `PostgreSQL: REST by ids, ${MANY_KEYS} keys / one key`,
    numerator: 'rest-ids-keys-pg',
    denominator: 'rest-ids-pg',
    target: null,
  },
  { label: 'PostgreSQL / SQLite (REST by ids)', numerator: 'rest-ids-pg', denominator: 'rest-ids', target: null },
  { label: 'PostgreSQL / SQLite (REST place an order)', numerator: 'rest-order-pg', denominator: 'rest-order', target: null },
  { label: 'GraphQL / REST (page of 20 + categories, per page)', numerator: 'gql-page', denominator: 'rest-page', target: 0.75 },
  { label: 'GraphQL / REST (place an order)', numerator: 'gql-order', denominator: 'rest-order', target: 0.75 },
  {
    label: 'REST order with outbox / without (outbox writes off)',
    numerator: 'rest-order',
    denominator: 'rest-order-no-outbox',
    target: 0.9,
  },
  {
    label: 'GraphQL order with outbox / without (outbox writes off)',
    numerator: 'gql-order',
    denominator: 'gql-order-no-outbox',
    target: 0.9,
  },
  { label: 'tracing on / off (REST by ids)', numerator: 'rest-ids-traced', denominator: 'rest-ids', target: null },
  { label: 'tracing on / off (GraphQL by ids)', numerator: 'gql-ids-traced', denominator: 'gql-ids', target: null },
  { label: 'tracing on / off (REST place an order)', numerator: 'rest-order-traced', denominator: 'rest-order', target: null },
  { label: 'limiter on / limiter off (REST by ids)', numerator: 'rest-ids', denominator: 'rest-ids-no-limiter', target: 0.95 },
  { label: 'Redis / memory limiter (REST by ids)', numerator: 'rest-ids-redis', denominator: 'rest-ids', target: 0.8 },
  { label: '429 refusals / served (REST by ids)', numerator: 'rest-429', denominator: 'rest-ids', target: null },
];

/**
 * The node flags of a build's start command: `npm start` is `node <flags> scripts/start.mjs` in its
 * package.json, and the production command `node <flags> dist/src/main.js` takes the same flags
 * (docs/OPERATIONS.md, "Memory and garbage collection"). A build without such flags (an older commit) runs on node's defaults.
 */
export function startNodeArgs(root: string): string[] {
  const { scripts } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts?: Record<string, string> };
  const match = /^node((?: --\S+)*) scripts\/start\.mjs$/.exec(scripts?.start ?? '');
  return match ? match[1]!.split(' ').filter(Boolean) : [];
}

/** `NAME=VALUE` pairs (`--env`, repeatable; `--against-env`, comma-separated) as an environment for a service. */
export function envOption(pairs: readonly string[]): Record<string, string> {
  return Object.fromEntries(
    pairs.map((pair) => {
      const at = pair.indexOf('=');
      if (at <= 0) throw new Error(`--env ${pair}: expected NAME=VALUE`);
      return [pair.slice(0, at), pair.slice(at + 1)];
    }),
  );
}
