import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { createPet, startApp, type TestApp } from '../helpers/app.js';
import { globalId } from '../../src/graphql/global-id.js';

/** Defects an outside review found at the REST edge; each test would have caught one. */
describe('REST edge: text is valid Unicode, and responses never echo a client-chosen host', () => {
  let t: TestApp;
  before(async () => {
    t = await startApp();
  });
  after(() => t.close());

  const countCategories = async () => (await t.admin.get('/v1/categories?limit=100')).body.length;

  it('when a body is not valid UTF-8, then it is 400 VALIDATION_FAILED and nothing is stored', async () => {
    const before = await countCategories();
    const bytes = Buffer.concat([Buffer.from('{"name": "'), Buffer.from([0xff, 0xfe]), Buffer.from('"}')]);
    const res = await t.admin.request('POST', '/v1/categories', { rawBody: bytes, headers: { 'content-type': 'application/json' } });
    assert.equal(res.status, 400);
    assert.equal(res.body.code, 'VALIDATION_FAILED');
    assert.equal(await countCategories(), before);
  });

  it('when JSON declares a charset other than UTF-8, then it is 415 UNSUPPORTED_MEDIA_TYPE', async () => {
    const res = await t.admin.request('POST', '/v1/categories', {
      rawBody: '{"name": "Latin"}',
      headers: { 'content-type': 'application/json; charset=latin1' },
    });
    assert.equal(res.status, 415);
    assert.equal(res.body.code, 'UNSUPPORTED_MEDIA_TYPE');
    const ok = await t.admin.request('POST', '/v1/categories', {
      rawBody: '{"name": "Utf"}',
      headers: { 'content-type': 'application/json; charset=UTF-8' },
    });
    assert.equal(ok.status, 201);
  });

  it('when a body is sent gzip-compressed, then it is 415 UNSUPPORTED_MEDIA_TYPE saying to send it uncompressed, on both facades, and nothing is stored', async () => {
    const { gzipSync } = await import('node:zlib');
    const before = await countCategories();
    const rest = await t.admin.request('POST', '/v1/categories', {
      rawBody: gzipSync('{"name": "Zipped"}'),
      headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
    });
    assert.equal(rest.status, 415);
    assert.equal(rest.body.code, 'UNSUPPORTED_MEDIA_TYPE');
    assert.match(rest.body.message, /uncompressed/);
    const graphql = await t.admin.request('POST', '/graphql', {
      rawBody: gzipSync('{"query": "mutation { createCategory(input: {name: \\"Zipped\\"}) { id } }"}'),
      headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
      skipContract: true,
    });
    assert.equal(graphql.status, 415);
    assert.equal(graphql.body.errors[0].extensions.code, 'UNSUPPORTED_MEDIA_TYPE');
    assert.equal(await countCategories(), before);
  });

  it('when a name holds a lone surrogate escape, then it is 400 on both facades and nothing is stored', async () => {
    const before = await countCategories();
    const rest = await t.admin.request('POST', '/v1/categories', {
      rawBody: '{"name": "\\ud800x"}',
      headers: { 'content-type': 'application/json' },
    });
    assert.equal(rest.status, 400);
    assert.equal(rest.body.code, 'VALIDATION_FAILED');
    const gql = await t.admin.request('POST', '/graphql', {
      rawBody: '{"query": "mutation { createCategory(input: {name: \\"\\\\ud800x\\"}) { id } }"}',
      headers: { 'content-type': 'application/json' },
    });
    assert.equal(gql.body.errors?.[0]?.extensions?.code, 'VALIDATION_FAILED', gql.text);
    assert.equal(await countCategories(), before);
  });

  it('when a name is padded with spaces past 100 characters, then both facades accept it trimmed to 100', async () => {
    const padded = ` ${'a'.repeat(100)} `;
    const rest = await t.admin.post('/v1/categories', { name: padded });
    assert.equal(rest.status, 201, rest.text);
    assert.equal(rest.body.name, 'a'.repeat(100));
    const gql = await t.admin.graphql('mutation ($name: String!) { createCategory(input: { name: $name }) { name } }', {
      name: ` ${'b'.repeat(100)} `,
    });
    assert.equal(gql.body.data?.createCategory?.name, 'b'.repeat(100), gql.text);
    const blank = await t.admin.post('/v1/categories', { name: '   ' });
    assert.equal(blank.status, 400);
  });

  it('when a body nests 20,000 levels deep, then it is a 400, not a stack overflow', async () => {
    const deep = `${'{"a":'.repeat(20_000)}1${'}'.repeat(20_000)}`;
    const res = await t.admin.request('POST', '/v1/categories', { rawBody: deep, headers: { 'content-type': 'application/json' } });
    assert.equal(res.status, 400);
    assert.equal(res.body.code, 'VALIDATION_FAILED');
  });

  it('when an unknown path under /graphql is requested with a key, then the 404 carries the rate-limit headers', async () => {
    const res = await t.admin.request('GET', '/graphql/x', { skipContract: true });
    assert.equal(res.status, 404);
    assert.equal(res.body.errors?.[0]?.extensions?.code, 'NOT_FOUND');
    assert.ok(res.headers.get('x-ratelimit-limit'), 'X-RateLimit-Limit');
    assert.ok(res.headers.get('ratelimit-policy'), 'RateLimit-Policy');
  });

  it("when staff lists an account's keys, then each shows its prefix, revocation and ban, never the secret", async () => {
    const created = await t.admin.post('/v1/accounts', { name: 'Keys', role: 'customer', plan: 'free' });
    const first = created.body.apiKey;
    const second = (await t.admin.post(`/v1/accounts/${created.body.id}/api-keys`)).body;
    assert.equal((await t.admin.delete(`/v1/api-keys/${first.id}`)).status, 204);
    const res = await t.admin.get(`/v1/accounts/${created.body.id}/api-keys`);
    assert.equal(res.status, 200);
    assert.deepEqual(
      res.body.map((k: { id: number; prefix: string; revokedAt: string | null }) => [k.id, k.prefix, k.revokedAt !== null]),
      [
        [first.id, first.key.slice(0, 8), true],
        [second.id, second.key.slice(0, 8), false],
      ],
    );
    assert.doesNotMatch(res.text, new RegExp(`${first.key}|${second.key}`));
    const customer = (await t.admin.post('/v1/accounts', { name: 'C', role: 'customer', plan: 'free' })).body.apiKey.key;
    assert.equal((await t.admin.get(`/v1/accounts/${created.body.id}/api-keys`, { key: customer })).status, 403);
    assert.equal((await t.admin.get('/v1/accounts/987654/api-keys')).status, 404);
  });

  it("when staff asks GraphQL for an account's keys, then apiKeys answers the same list as REST", async () => {
    const created = await t.admin.post('/v1/accounts', { name: 'Twin', role: 'customer', plan: 'pro' });
    const rest = await t.admin.get(`/v1/accounts/${created.body.id}/api-keys`);
    const gql = await t.admin.graphql('query ($id: ID!) { apiKeys(accountId: $id) { id prefix revokedAt } }', {
      id: globalId('Account', created.body.id),
    });
    assert.deepEqual(
      gql.body.data.apiKeys,
      rest.body.map((k: { id: number; prefix: string; revokedAt: string | null }) => ({
        id: globalId('ApiKey', k.id),
        prefix: k.prefix,
        revokedAt: k.revokedAt,
      })),
    );
    const missing = await t.admin.graphql(`{ apiKeys(accountId: "${globalId('Account', 987654)}") { id } }`);
    assert.equal(missing.body.errors[0].extensions.code, 'NOT_FOUND');
  });

  it('when a client sends a forged Host header, then the next-page Link does not carry it', async () => {
    await createPet(t, { name: 'A' });
    await createPet(t, { name: 'B' });
    const url = new URL(`${t.url}/v1/pets?limit=1`);
    const link = await new Promise<string>((resolve, reject) => {
      const req = request(
        { host: url.hostname, port: url.port, path: url.pathname + url.search, headers: { host: 'evil.example', 'x-api-key': t.adminKey } },
        (res) => {
          res.resume();
          resolve(String(res.headers.link ?? ''));
        },
      );
      req.on('error', reject);
      req.end();
    });
    assert.match(link, /^<\/v1\/pets\?limit=1&cursor=[\w-]+>; rel="next"$/);
    assert.doesNotMatch(link, /evil/);
  });
});

describe('startup failure', () => {
  it('when the app cannot be assembled after its database is open, then createApp rejects and the process can exit', async () => {
    const { execFile } = await import('node:child_process');
    const { fileURLToPath } = await import('node:url');
    const app = fileURLToPath(new URL('../../src/app.js', import.meta.url));
    const config = fileURLToPath(new URL('../../src/config.js', import.meta.url));
    // A child process assembles an app whose limiter gate fails after the ORM is open; if anything
    // stayed open the child would never exit and the 20 s deadline below would kill it.
    const script = `
      import { mkdtempSync } from 'node:fs'; import { tmpdir } from 'node:os'; import { join } from 'node:path';
      const { createApp } = await import(${JSON.stringify(app)});
      const { loadConfig } = await import(${JSON.stringify(config)});
      const c = loadConfig({ DATABASE_URL: 'sqlite:' + join(mkdtempSync(join(tmpdir(), 'petstore-fail-')), 'p.db'), LOG_LEVEL: 'silent', NODE_ENV: 'test' });
      const failing = new Proxy({}, { ownKeys: () => { throw new Error('gate broken'); } });
      await createApp(c, { gate: failing, announce: () => {} }).then(() => process.exit(3), (e) => console.log('rejected: ' + e.message));`;
    const result = await new Promise<{ code: number | null; killed: boolean; stdout: string }>((resolve) => {
      const child = execFile(process.execPath, ['--input-type=module', '-e', script], { timeout: 20_000 }, (error, stdout) =>
        resolve({ code: child.exitCode, killed: Boolean(error && (error as { killed?: boolean }).killed), stdout }),
      );
    });
    assert.equal(result.killed, false, 'the process did not exit: something opened during assembly stayed open');
    assert.match(result.stdout, /rejected: gate broken/);
    assert.equal(result.code, 0);
  });
});
