/**
 * The bench's servers answer what the bench asks them, as the service does: F and L0 the service's exact bytes to the
 * REST read by ids, F_apollo the service's data to the two GraphQL documents the targets compare, and no answer to a
 * key the floors do not know. A ratio between two servers that answer different work would measure nothing.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, copyFileSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { buildSchema, parse, validate } from 'graphql';
import { projectPath } from '../../src/project-path.js';
import { seedBenchDatabase } from '../../bench/seed.js';
import { announcedUrl, checkAnswer, serverCommand, writeOnce } from '../../bench/start-server.js';
import { REST_IDS_PATH, SCENARIOS, scenarioRequest } from '../../bench/scenarios.js';
import { countStatements } from '../../bench/sql-count.js';
import { FLOOD_CLIENTS, floodDocument, measureBesideFreeDocumentFlood } from '../../bench/hostile.js';
import { measureEventLag } from '../../bench/events.js';

const work = mkdtempSync(join(tmpdir(), 'petstore-bench-servers-'));
const children: ChildProcess[] = [];
let key = '';
let adminKey = '';
let freeKey = '';
const urls: Record<string, string> = {};

async function start(name: string, script: string, env: Record<string, string>, nodeArgs: string[] = []): Promise<string> {
  const logFile = join(work, `${name}.log`);
  const fd = openSync(logFile, 'w');
  const child = spawn(process.execPath, [...nodeArgs, script], {
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', fd, fd],
  });
  closeSync(fd);
  children.push(child);
  return announcedUrl(name, child, logFile, 60_000);
}

before(async () => {
  const db = await seedBenchDatabase(join(work, 'seed.db'), { manyKeys: 0 });
  key = db.enterpriseKey;
  adminKey = db.adminKey;
  freeKey = db.freeKey;
  const copy = (name: string) => {
    const file = join(work, `${name}.db`);
    copyFileSync(db.file, file);
    return file;
  };
  const service = serverCommand('service', copy('service'), key);
  // Webhooks to the bench's own receiver on 127.0.0.1 (`--events`).
  urls.service = await start('service', service.script, { ...service.env, WEBHOOK_ALLOW_PRIVATE: 'true' }, service.nodeArgs);
  await writeOnce(urls.service, db.adminKey);
  const body = await fetch(urls.service + REST_IDS_PATH, { headers: { 'X-API-Key': key } }).then((r) => r.text());
  const bodyFile = join(work, 'body.json');
  writeFileSync(bodyFile, body);
  const floor = serverCommand('floor', copy('floor'), key, bodyFile);
  const apollo = serverCommand('apollo-floor', copy('apollo'), key);
  [urls.floor, urls.l0, urls.apollo] = await Promise.all([
    start('floor', floor.script, floor.env),
    start('l0', floor.script, { ...floor.env, RUNG: 'l0' }),
    start('apollo', apollo.script, apollo.env),
  ]);
});

after(() => {
  for (const child of children) child.kill('SIGTERM');
  rmSync(work, { recursive: true, force: true });
});

test("F and L0 answer the service's exact bytes to the REST read by ids", async () => {
  const read = (url: string) =>
    fetch(url + REST_IDS_PATH, { headers: { 'X-API-Key': key } }).then(async (r) => ({ status: r.status, body: await r.text() }));
  const service = await read(urls.service!);
  assert.equal(service.status, 200);
  assert.equal(JSON.parse(service.body).length, 10);
  assert.deepEqual(await read(urls.floor!), service);
  assert.deepEqual(await read(urls.l0!), service);
});

test("F_apollo answers the service's data to the GraphQL read by ids and to pet(id), with the rate-limit headers", async () => {
  for (const [floorId, serviceId] of [
    ['apollo-ids', 'gql-ids'],
    ['apollo-pet', 'gql-pet'],
  ] as const) {
    const floor = JSON.parse(await checkAnswer(urls.apollo!, key, floorId));
    const service = JSON.parse(await checkAnswer(urls.service!, key, serviceId));
    assert.deepEqual(floor.data, service.data, serviceId);
  }
  const { url, method, body, headers } = scenarioRequest(urls.apollo!, key, 'apollo-ids');
  const res = await fetch(url, { method, body, headers });
  for (const name of ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'x-ratelimit-resource', 'x-request-id'])
    assert.ok(res.headers.get(name), name);
});

test('the floors refuse a key they do not know', async () => {
  assert.equal((await fetch(urls.floor + REST_IDS_PATH, { headers: { 'X-API-Key': 'psk_unknown' } })).status, 401);
  const { url, method, body, headers } = scenarioRequest(urls.apollo!, 'psk_unknown', 'apollo-ids');
  assert.equal((await fetch(url, { method, body, headers })).status, 401);
});

test("the flood's document is a valid query of the service's schema whose fields are all the free rate-limit status", () => {
  const schema = buildSchema(readFileSync(projectPath('schema/schema.graphql'), 'utf8'));
  const document = parse(floodDocument(1));
  assert.deepEqual(validate(schema, document), []);
  assert.notEqual(floodDocument(1), floodDocument(2), 'a new operation name each time');
});

test("--events counts each order's event once at the webhook and once at the subscriber", async () => {
  const lag = await measureEventLag(urls.service!, key, 1, 100);
  assert.ok(lag.orders >= 3, `${lag.orders} orders`);
  assert.equal(lag.badSignatures, 0);
  assert.equal(lag.webhook.length, lag.orders, 'webhook');
  assert.equal(lag.subscriber.length, lag.orders, 'subscriber');
});

test("the flood row's clients (on a thread of their own) send documents the service refuses, while the reader reads", async () => {
  const flood = await measureBesideFreeDocumentFlood(urls.service!, adminKey, key, 1);
  assert.ok(flood.alone.length > 0 && flood.besidePlain.length > 0 && flood.beside.length > 0);
  assert.ok((flood.statuses[400] ?? 0) > 0, JSON.stringify(flood.statuses));
  assert.ok(flood.sent >= FLOOD_CLIENTS, `${flood.sent} documents sent: every client sends`);
  assert.deepEqual(
    Object.keys(flood.statuses).filter((status) => status !== '400' && status !== '429'),
    [],
  );
});

test("the per-request counts: the service's reads each send one prepared statement and make the promises an async hook counts on the server", async () => {
  const counted = SCENARIOS.filter((s) => s.id === 'gql-pet' || s.id === 'rest-ids');
  const file = join(work, 'counts.db');
  copyFileSync(join(work, 'seed.db'), file);
  const counts = await countStatements(file, counted, { enterprise: key, free: freeKey, many: [] });
  for (const id of ['gql-pet', 'rest-ids']) {
    const c = counts.get(id)!;
    assert.equal(c.total, 1, `${id}: ${c.statements.join('; ')}`);
    assert.match(c.statements[0]!, /^select id, name, category_id, status from pets where id .*\[prepared\]$/);
    // A request makes promises (Koa's, Apollo's, the limiter's); an uncounted request or a counted client would not
    // fall in this range.
    assert.ok(c.promises >= 10 && c.promises <= 400, `${id}: ${c.promises} promises`);
  }
  assert.ok(counts.get('gql-pet')!.promises > counts.get('rest-ids')!.promises, 'Apollo makes more promises than the REST read');
});
