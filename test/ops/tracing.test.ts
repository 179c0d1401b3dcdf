import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import { randomBytes } from 'node:crypto';
import { startService, type Service } from './support.js';
import { subscribe, wsClient } from '../events/support.js';
import { createDatabase, dropDatabase } from '../../src/db/pg-admin.js';
import { globalId } from '../../src/graphql/global-id.js';

/** `npm run test:postgres` runs the service on a PostgreSQL database of its own; otherwise SQLite. */
const PG = process.env.TEST_DATABASE_URL;
const PG_NAME = `petstore_tracing_${process.pid}`;
const SQL_SYSTEMS = PG ? ['postgresql'] : ['sqlite', 'libsql'];

/** A span as OTLP/HTTP JSON sends it, with its attributes flattened. */
interface ExportedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: Record<string, unknown>;
  links: Array<{ traceId: string; spanId: string }>;
  scope: string;
}

const attributeValue = (v: Record<string, any>): unknown =>
  'stringValue' in v
    ? v.stringValue
    : 'intValue' in v
      ? Number(v.intValue)
      : 'boolValue' in v
        ? v.boolValue
        : 'doubleValue' in v
          ? v.doubleValue
          : 'arrayValue' in v
            ? (v.arrayValue.values ?? []).map(attributeValue)
            : JSON.stringify(v);
const attributesOf = (list: Array<{ key: string; value: Record<string, any> }> = []) =>
  Object.fromEntries(list.map((a) => [a.key, attributeValue(a.value)]));

/** An OTLP/HTTP receiver (JSON encoding), keeping every span and the raw bodies. */
async function otlpReceiver() {
  const spans: ExportedSpan[] = [];
  const bodies: string[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      bodies.push(body);
      if (req.url === '/v1/traces') {
        for (const rs of JSON.parse(body).resourceSpans ?? []) {
          for (const ss of rs.scopeSpans ?? []) {
            for (const s of ss.spans ?? []) {
              spans.push({ ...s, attributes: attributesOf(s.attributes), links: s.links ?? [], scope: ss.scope?.name ?? '' });
            }
          }
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  return { server, url, spans, bodies };
}

/** A webhook receiver: every request's headers and body. */
async function webhookReceiver() {
  const got: Array<{ headers: IncomingHttpHeaders; body: string }> = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      got.push({ headers: req.headers, body });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    server,
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}/hooks/tok-${randomBytes(6).toString('hex')}`,
    got,
  };
}

async function until<T>(what: string, probe: () => T | undefined, ms = 20_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const found = probe();
    if (found !== undefined) return found;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function call(s: Service, key: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(s.url + path, {
    method,
    headers: { 'x-api-key': key, 'content-type': 'application/json', ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as any };
}

describe('ops: OpenTelemetry traces over OTLP/HTTP', () => {
  let otlp: Awaited<ReturnType<typeof otlpReceiver>>;
  let hooks: Awaited<ReturnType<typeof webhookReceiver>>;
  let s: Service;
  let customerKey: string;
  let webhookSecret: string;
  let petId: string;
  const idempotencyKey = `idem-${randomBytes(8).toString('hex')}`;

  before(async () => {
    otlp = await otlpReceiver();
    hooks = await webhookReceiver();
    const databaseUrl = PG ? await createDatabase(PG, PG_NAME) : undefined;
    s = await startService(
      {
        OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_BSP_SCHEDULE_DELAY: '50',
        OTEL_TRACES_SAMPLER: 'always_on',
        WEBHOOK_ALLOW_PRIVATE: 'true',
        WEBHOOK_POLL_MS: '20',
      },
      { databaseUrl },
    );
    const account = await call(s, s.key, 'POST', '/v1/accounts', { name: 'Traced', role: 'customer', plan: 'pro' });
    assert.equal(account.status, 201);
    customerKey = account.body.apiKey.key;
    const category = await call(s, s.key, 'POST', '/v1/categories', { name: 'Traces' });
    const pet = await call(s, s.key, 'POST', '/v1/pets', { name: 'Span', categoryId: category.body.id });
    petId = String(pet.body.id);
    assert.equal((await call(s, s.key, 'PUT', `/v1/store/inventory/${petId}`, { quantity: 10 })).status, 200);
    const hook = await call(s, customerKey, 'POST', '/v1/webhooks', { url: hooks.url, events: ['order.placed'] });
    assert.equal(hook.status, 201);
    webhookSecret = hook.body.secret;
  });

  after(async () => {
    s?.child.kill('SIGTERM');
    await s?.exited;
    s?.cleanup();
    if (PG) await dropDatabase(PG, PG_NAME);
    otlp?.server.close();
    hooks?.server.close();
  });

  const childrenOf = (span: ExportedSpan) => otlp.spans.filter((c) => c.parentSpanId === span.spanId);
  const descendantsOf = (span: ExportedSpan): ExportedSpan[] => childrenOf(span).flatMap((c) => [c, ...descendantsOf(c)]);

  it('when a REST order is placed, then one trace holds the HTTP span named by its route template, the rate-limit decision and each SQL statement, and the log line carries its ids', async () => {
    const placed = await call(
      s,
      customerKey,
      'POST',
      '/v1/store/orders',
      { petId: Number(petId), quantity: 1 },
      { 'idempotency-key': idempotencyKey },
    );
    assert.equal(placed.status, 201, JSON.stringify(placed.body));
    const requestId = placed.headers.get('x-request-id');

    const server = await until('the REST server span', () =>
      otlp.spans.find(
        (sp) => sp.kind === 2 && sp.attributes['http.route'] === '/v1/store/orders' && sp.attributes['http.request.method'] === 'POST',
      ),
    );
    assert.equal(server.name, 'POST /v1/store/orders');
    assert.equal(server.parentSpanId ?? '', '', 'a request without traceparent starts a trace');
    await until('the SQL spans', () =>
      descendantsOf(server).some((sp) => String(sp.attributes['db.query.text'] ?? '').includes('insert into events')) ? true : undefined,
    );
    const inside = descendantsOf(server);
    assert.ok(inside.every((sp) => sp.traceId === server.traceId));

    const limit = inside.find((sp) => sp.name === 'rate-limit');
    assert.ok(limit, `no rate-limit span among ${inside.map((sp) => sp.name)}`);
    assert.equal(limit.attributes['petstore.rate_limit.plan'], 'pro');
    assert.equal(limit.attributes['petstore.rate_limit.cost'], 1);
    assert.equal(limit.attributes['petstore.rate_limit.outcome'], 'admitted');

    const sql = inside.filter((sp) => SQL_SYSTEMS.includes(String(sp.attributes['db.system.name'])));
    assert.ok(sql.length >= 3, `SQL spans: ${sql.map((sp) => sp.name)}`);
    for (const sp of sql) assert.match(String(sp.attributes['db.query.text']), /^\s*[a-zA-Z]/);
    assert.deepEqual(
      sql.filter((sp) => sql.some((outer) => outer.spanId === sp.parentSpanId)).map((sp) => sp.name),
      [],
      'one span per statement (none inside another)',
    );
    // On PostgreSQL the order's insert is part of one statement with the stock decrement (a CTE).
    const insert = sql.find((sp) => /\binsert into orders\b/.test(String(sp.attributes['db.query.text'])));
    assert.ok(insert, `no insert into orders among ${sql.map((sp) => sp.attributes['db.query.text'])}`);
    assert.match(String(insert.attributes['db.query.text']), /\?|\$\d/, 'the statement text keeps its placeholders');

    const logged = await s.logLine('request', (r) => r.msg === 'request' && r.requestId === requestId);
    assert.ok(logged, 'the request was logged');
    assert.equal(logged.trace_id, server.traceId);
    assert.equal(logged.span_id, server.spanId);
  });

  it('when a category is created (the ORM writes it), then each SQL statement is one span, none inside another', async () => {
    const created = await call(s, s.key, 'POST', '/v1/categories', { name: `Traced ${randomBytes(3).toString('hex')}` });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const server = await until('the REST server span', () =>
      otlp.spans.find(
        (sp) => sp.kind === 2 && sp.attributes['http.route'] === '/v1/categories' && sp.attributes['http.request.method'] === 'POST',
      ),
    );
    const sql = await until('the insert span', () => {
      const all = descendantsOf(server).filter((sp) => SQL_SYSTEMS.includes(String(sp.attributes['db.system.name'])));
      return all.some((sp) => /\binsert into .?categories\b/i.test(String(sp.attributes['db.query.text']))) ? all : undefined;
    });
    const texts = sql.map((sp) => String(sp.attributes['db.query.text']));
    assert.equal(texts.filter((t) => /\binsert into .?categories\b/i.test(t)).length, 1, `the insert once: ${texts.join(' | ')}`);
    assert.deepEqual(
      sql.filter((sp) => sql.some((outer) => outer.spanId === sp.parentSpanId)).map((sp) => sp.name),
      [],
      'no statement span inside another',
    );
  });

  it('when a GraphQL placeOrder comes with a traceparent, then its spans continue that trace, the operation is named and typed, and the webhook delivery and the subscription push it causes link to it', async () => {
    const ws = wsClient(s.url, customerKey);
    const sub = await subscribe(ws.client, 'subscription { orderUpdated { type } }');
    // Listening before anything commits (subscribe() waits for it too; this says so at the metrics).
    for (let open = false, end = Date.now() + 20_000; !open; await new Promise((r) => setTimeout(r, 50))) {
      open = /^petstore_graphql_subscriptions 1$/m.test(await (await fetch(`${s.url}/metrics`)).text());
      assert.ok(open || Date.now() < end, 'the subscription did not open');
    }
    const traceId = randomBytes(16).toString('hex');
    const parentId = randomBytes(8).toString('hex');
    const res = await call(
      s,
      customerKey,
      'POST',
      '/graphql',
      {
        query: 'mutation Buy($input: NewOrderInput!) { placeOrder(input: $input) { id: databaseId quantity } }',
        variables: { input: { petId: globalId('Pet', Number(petId)), quantity: 2 } },
      },
      { traceparent: `00-${traceId}-${parentId}-01` },
    );
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.errors, undefined, JSON.stringify(res.body));
    const orderId = res.body.data.placeOrder.id;

    const server = await until('the GraphQL server span', () =>
      otlp.spans.find((sp) => sp.kind === 2 && sp.traceId === traceId && sp.attributes['http.route'] === '/graphql'),
    );
    assert.equal(server.parentSpanId, parentId, 'the incoming traceparent is the parent');
    assert.equal(server.name, 'POST /graphql');
    assert.equal(server.attributes['graphql.operation.type'], 'mutation');
    assert.equal(server.attributes['graphql.operation.name'], 'Buy');
    assert.equal(server.attributes['graphql.operation.root_field'], 'placeOrder');

    const inside = await until('the operation and SQL spans', () => {
      const all = descendantsOf(server);
      return all.some((sp) => String(sp.attributes['db.query.text'] ?? '').includes('insert into events')) &&
        all.some((sp) => sp.scope.includes('graphql'))
        ? all
        : undefined;
    });
    const execute = inside.find((sp) => sp.attributes['graphql.operation.type'] === 'mutation' && sp.scope.includes('graphql'));
    assert.ok(execute, `no graphql operation span among ${inside.map((sp) => `${sp.scope}:${sp.name}`)}`);
    assert.equal(execute.attributes['graphql.operation.name'], 'Buy');
    const limit = inside.find((sp) => sp.name === 'rate-limit');
    assert.ok(limit, 'the rate-limit decision is in the trace');
    assert.equal(limit.attributes['petstore.rate_limit.outcome'], 'admitted');
    assert.ok(inside.some((sp) => SQL_SYSTEMS.includes(String(sp.attributes['db.system.name']))));

    // The webhook for this order: its request carries a traceparent; its span links to the order's trace.
    const delivered = await until('the webhook delivery', () =>
      hooks.got.find((r) => JSON.parse(r.body).data?.id === Number(orderId) || String(JSON.parse(r.body).data?.id) === String(orderId)),
    );
    const header = String(delivered.headers.traceparent ?? '');
    assert.match(header, /^00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]$/);
    const [, deliveryTrace] = header.split('-');
    const delivery = await until('the delivery span', () =>
      otlp.spans.find((sp) => sp.name === 'webhook delivery' && sp.traceId === deliveryTrace),
    );
    assert.notEqual(delivery.traceId, traceId, 'the delivery is a trace of its own');
    assert.equal(delivery.parentSpanId ?? '', '');
    assert.ok(
      delivery.links.some((l) => l.traceId === traceId && inside.some((sp) => sp.spanId === l.spanId)),
      `the delivery links to a span of the order's trace: ${JSON.stringify(delivery.links)}`,
    );
    assert.equal(delivery.attributes['server.address'], '127.0.0.1');

    // The subscriber got the order; the push is a span of its own linked to the order's trace.
    try {
      await until('the subscription event', () =>
        sub.results.some((r) => r.data?.orderUpdated?.type === 'order.placed') ? true : undefined,
      ).catch((error) => {
        throw new Error(`${error.message}: ${JSON.stringify({ results: sub.results, errors: sub.errors })}`);
      });
      const push = await until('the subscription push span', () =>
        otlp.spans.find((sp) => sp.name === 'subscription push' && sp.links.some((l) => l.traceId === traceId)),
      );
      assert.notEqual(push.traceId, traceId);
      assert.ok(
        inside.some((sp) => push.links.some((l) => l.spanId === sp.spanId)),
        'the push links to a span of the order',
      );
    } finally {
      sub.dispose();
      await ws.client.dispose();
    }
  });

  it('when spans are exported, then no API key, Idempotency-Key value, webhook secret, request body or variable appears in any of them', async () => {
    await until('spans of every request', () => (otlp.spans.some((sp) => sp.name === 'webhook delivery') ? true : undefined));
    await new Promise((r) => setTimeout(r, 300));
    const exported = otlp.bodies.join('\n');
    assert.ok(exported.length > 1000);
    for (const secret of [
      s.key,
      customerKey,
      idempotencyKey,
      webhookSecret,
      webhookSecret.replace(/^whsec_/, ''),
      hooks.url.split('/').at(-1)!,
    ]) {
      assert.equal(exported.includes(secret), false, `${secret.slice(0, 12)}… appears in an exported span`);
    }
    for (const sp of otlp.spans) {
      for (const name of Object.keys(sp.attributes))
        assert.doesNotMatch(name, /header\.(x_api_key|authorization|idempotency_key|cookie)|request\.body|variables/i, name);
    }
  });

  // Last here: it leaves this address with no failed authentication left.
  it('when a banned key, or an address with no failed authentication left, sends GraphQL, then it is refused before its document is parsed', async () => {
    /** The GraphQL spans of one request, by its trace. */
    const traced = async (key: string | undefined, query: string) => {
      const traceId = randomBytes(16).toString('hex');
      const res = await fetch(`${s.url}/graphql`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          traceparent: `00-${traceId}-${randomBytes(8).toString('hex')}-01`,
          ...(key ? { 'x-api-key': key } : {}),
        },
        // A text of its own: a document seen before is not parsed again (Apollo's document store).
        body: JSON.stringify({ query: `query Q${randomBytes(4).toString('hex')} ${query}` }),
      });
      await until('the server span', () => (otlp.spans.some((sp) => sp.traceId === traceId && sp.kind === 2) ? true : undefined));
      await new Promise((r) => setTimeout(r, 200));
      const names = otlp.spans.filter((sp) => sp.traceId === traceId && sp.name.startsWith('graphql.')).map((sp) => sp.name);
      return {
        status: res.status,
        code: ((await res.json()) as any).errors?.[0]?.extensions?.code,
        parsed: names.includes('graphql.parse'),
      };
    };
    const limits = { perMinute: 1, perDay: 100 };
    const account = await call(s, s.key, 'POST', '/v1/accounts', { name: 'Banned', role: 'customer', plan: 'enterprise', limits });
    const key = account.body.apiKey.key;
    assert.deepEqual(await traced(key, '{ viewer { id } }'), { status: 200, code: undefined, parsed: true });
    for (let i = 0; i < 11; i++) await call(s, key, 'GET', '/v1/account');
    assert.deepEqual(await traced(key, '{ viewer { id } }'), { status: 429, code: 'API_KEY_BANNED', parsed: false });

    assert.deepEqual(await traced(undefined, '{ __typename }'), { status: 200, code: undefined, parsed: true });
    for (let i = 0; i < 30; i++) await call(s, 'psk_not_a_key', 'GET', '/v1/account');
    assert.deepEqual(await traced(undefined, '{ __typename }'), { status: 429, code: 'RATE_LIMITED', parsed: false });
  });
});
