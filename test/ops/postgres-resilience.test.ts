import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { createDatabase, dropDatabase } from '../../src/db/pg-admin.js';
import { startApp, type TestApp } from '../helpers/app.js';
import { postgresUrl, skipUnless } from '../helpers/services.js';

/**
 * PostgreSQL out of connections is the database being busy, not a bug: every answer is 503 UNAVAILABLE
 * with Retry-After in the error shape, never a 500. The service runs as a role allowed one connection
 * (the server refuses the pool's others with SQLSTATE 53300). The other codes mapped alike (57014 a
 * statement timeout, 57P0x, class 08) have no test of their own.
 */
describe('PostgreSQL refusals: out of connections', async () => {
  const admin = await postgresUrl();
  const skip = skipUnless(admin, 'PostgreSQL');
  const suffix = `${process.pid}_${randomBytes(3).toString('hex')}`;
  const name = `petstore_limited_${suffix}`;
  const role = `petstore_limited_${suffix}`;
  let t: TestApp | undefined;

  const sql = async (text: string) => {
    const client = new pg.Client({ connectionString: admin! });
    await client.connect();
    try {
      await client.query(text);
    } finally {
      await client.end();
    }
  };

  before(async () => {
    if (skip) return;
    await sql(`create role "${role}" login`);
    const url = new URL(await createDatabase(admin!, name));
    await sql(`alter database "${name}" owner to "${role}"`);
    url.username = role;
    // Migrated and bootstrapped with connections to spare, then limited to one.
    t = await startApp({ databaseUrl: url.toString(), env: { DB_POOL_MAX: '10' } });
    await sql(`alter role "${role}" connection limit 1`);
  });
  after(async () => {
    if (skip) return;
    await t?.close();
    await dropDatabase(admin!, name);
    await sql(`drop role if exists "${role}"`);
  });

  it('when requests need more connections than the server allows, then the refused ones get 503 with Retry-After, none a 500', { skip }, async () => {
    // Whatever the pool already holds, more concurrent requests than one connection can serve at once.
    await sql(`select pg_terminate_backend(pid) from pg_stat_activity where usename = '${role}'`);
    const responses = await Promise.all(
      Array.from({ length: 45 }, (_, i) =>
        i % 3 === 0
          ? t!.admin.graphql('{ orders(first: 5) { edges { node { id } } } }')
          : i % 3 === 1
            ? t!.admin.get('/v1/store/orders')
            : t!.admin.get('/v1/accounts'),
      ),
    );
    const statuses = responses.map((r) => `${r.status}${r.body?.errors ? ' with errors' : ''}`);
    assert.ok(!responses.some((r) => r.status === 500), `no 500: ${statuses.join(', ')}`);
    assert.ok(responses.some((r) => r.status === 503), `some were refused for want of a connection: ${statuses.join(', ')}`);
    // A refusal (503) or a GraphQL field that failed (200 with errors) says UNAVAILABLE, never INTERNAL.
    for (const r of responses.filter((x) => x.status === 503 || x.body?.errors)) {
      const codes = r.body.errors ? r.body.errors.map((e: { extensions?: { code?: string } }) => e.extensions?.code) : [r.body.code];
      assert.deepEqual([...new Set(codes)], ['UNAVAILABLE'], JSON.stringify(r.body));
      if (r.status === 503) {
        assert.ok(Number(r.headers.get('retry-after')) > 0);
        assert.ok(r.headers.get('x-ratelimit-limit'), 'the rate-limit headers are there');
      }
      assert.doesNotMatch(JSON.stringify(r.body), /53300|too many|role|pg_|select /i);
    }
  });
});
