import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { createDatabase, dropDatabase } from '../../src/db/pg-admin.js';
import { WebSocket } from 'ws';
import { Client, createAccount, createPet, startApp, type TestApp } from '../helpers/app.js';
import { onOwnPostgres, postgresUrl, skipUnless, untilBackend } from '../helpers/services.js';

/**
 * PostgreSQL out of connections is the database being busy, not a bug: every answer is 503 UNAVAILABLE
 * with Retry-After in the error shape, never a 500. The service runs as a role allowed one connection
 * (the server refuses the pool's others with SQLSTATE 53300); with none at all, an API key cannot be checked. The other codes mapped alike (57014 a
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

  it('when requests need more connections than the server allows, then the refused ones get 503 with Retry-After, none a 500', {
    skip,
  }, async () => {
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
    assert.ok(
      responses.some((r) => r.status === 503),
      `some were refused for want of a connection: ${statuses.join(', ')}`,
    );
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

  it('when a key cannot be checked (no connection to be had), then HTTP answers 503 UNAVAILABLE and a WebSocket connection_init is closed with 1013, not refused as a bad key', {
    skip,
  }, async () => {
    // A key the service has never looked up, then no connection at all for its role.
    const { key } = await createAccount(t!, { name: 'Unchecked' });
    await sql(`alter role "${role}" connection limit 0`);
    await sql(`select pg_terminate_backend(pid) from pg_stat_activity where usename = '${role}'`);
    try {
      const rest = await new Client(t!.url, key).get('/v1/pets');
      assert.equal(rest.status, 503, rest.text);
      assert.equal(rest.body.code, 'UNAVAILABLE');
      assert.match(rest.body.message, /API key could not be checked/);
      assert.ok(Number(rest.headers.get('retry-after')) > 0);

      const ws = new WebSocket(`${t!.url.replace(/^http/, 'ws')}/graphql`, 'graphql-transport-ws');
      const closed = new Promise<{ code: number; reason: string }>((resolve) =>
        ws.on('close', (code, reason) => resolve({ code, reason: String(reason) })),
      );
      ws.on('open', () => ws.send(JSON.stringify({ type: 'connection_init', payload: { 'X-API-Key': key } })));
      ws.on('error', () => undefined);
      const close = await closed;
      assert.equal(close.code, 1013, close.reason);
      assert.match(close.reason, /^UNAVAILABLE: your API key could not be checked/);
    } finally {
      await sql(`alter role "${role}" connection limit 1`);
    }
    // The same key, once it can be checked, is an ordinary valid key. A pooled connection the outage ended may fail
    // first: that answer is a 503 with Retry-After, and the client's retry is served.
    let again = await new Client(t!.url, key).get('/v1/pets');
    for (let retry = 0; again.status === 503 && retry < 3; retry++) {
      assert.equal(again.body.code, 'UNAVAILABLE', again.text);
      await new Promise((r) => setTimeout(r, Number(again.headers.get('retry-after')) * 1000));
      again = await new Client(t!.url, key).get('/v1/pets');
    }
    assert.equal(again.status, 200, again.text);
  });
});

/**
 * A PostgreSQL connection that dies under a transaction (the server restarting, a failover, an operator's
 * `pg_terminate_backend`), wherever in the transaction it happens: the order answers 503 UNAVAILABLE with
 * Retry-After, never a 500, and the retry with the same Idempotency-Key places the order once (when the
 * COMMIT had taken effect before the connection died, it replays that order). The backend serving the
 * order is terminated from another connection at each point: the service's own pooled connections are
 * watched (the statement each is about to send) only to pick the moment.
 */
describe('PostgreSQL: a connection that dies mid-transaction', async () => {
  let t: TestApp;
  let db: pg.Client;
  let customer: Client;
  let petId: number;

  type Conn = { query: (...args: unknown[]) => unknown; processID: number; once(event: 'end', listener: () => void): void };
  /** The next statement whose text matches `when` runs `then` first, with the connection about to send it. */
  let trap: { when: RegExp; rewrite: (conn: Conn, text: string) => Promise<string> } | null = null;
  const watched = new WeakSet<object>();

  const skip = await onOwnPostgres('dying', {
    setup: async (url) => {
      t = await startApp({ databaseUrl: url });
      db = new pg.Client({ connectionString: url });
      await db.connect();
      customer = (await createAccount(t)).client;
      petId = (await createPet(t, { stock: 100 })).petId;
      const knexClient = t.app.orm.em.getConnection().getKnex().client as unknown as { acquireConnection(): Promise<Conn> };
      const acquire = knexClient.acquireConnection.bind(knexClient);
      knexClient.acquireConnection = async () => {
        const conn = await acquire();
        if (!watched.has(conn)) {
          watched.add(conn);
          const query = conn.query.bind(conn);
          conn.query = (...args: unknown[]) => {
            const config = args[0] as string | { text: string };
            const text = typeof config === 'string' ? config : config.text;
            const armed = trap;
            if (!armed?.when.test(text)) return query(...args);
            trap = null;
            const changed = armed
              .rewrite(conn, text)
              .then((newText) => (typeof config === 'string' ? newText : { ...config, text: newText }));
            if (typeof args[1] === 'function') {
              void changed.then((c) => query(c, ...args.slice(1)));
              return undefined;
            }
            return changed.then((c) => query(c, ...args.slice(1)));
          };
        }
        return conn;
      };
    },
    teardown: async () => {
      await db?.end();
      await t?.close();
    },
  });

  /** Terminates the connection's backend and waits until the client has noticed (the statement then finds it dead). */
  const killNow = async (conn: Conn, text: string) => {
    const ended = new Promise<void>((resolve) => conn.once('end', () => resolve()));
    await db.query('select pg_terminate_backend($1)', [conn.processID]);
    await Promise.race([ended, new Promise((resolve) => setTimeout(resolve, 2000))]);
    return text;
  };
  /** Terminates whichever backend of the service sleeps (pg_sleep) once one does. */
  const killTheSleeper = () => untilBackend(db, "wait_event = 'PgSleep'", 'no backend slept', 'pg_terminate_backend(pid) as killed');

  const stock = async () => Number((await db.query('select quantity from inventory where pet_id = $1', [petId])).rows[0].quantity);
  const ordersOf = async () => Number((await db.query('select count(*) as n from orders where pet_id = $1', [petId])).rows[0].n);
  const place = (key: string) => customer.post('/v1/store/orders', { petId, quantity: 1 }, { headers: { 'Idempotency-Key': key } });

  async function dies(point: string, arm: () => void, committed: boolean, beforeRetry = async () => {}) {
    const [stockBefore, ordersBefore] = [await stock(), await ordersOf()];
    const key = `dying-${point.replace(/\W+/g, '-')}`;
    arm();
    const first = await place(key);
    assert.equal(trap, null, 'the connection was terminated at that point');
    assert.equal(first.status, 503, `${point}: ${first.status} ${first.text}`);
    assert.equal(first.body.code, 'UNAVAILABLE');
    assert.ok(Number(first.headers.get('retry-after')) >= 1, 'Retry-After');
    assert.doesNotMatch(first.text, /terminat|pg_|select |commit/i);
    assert.equal(await ordersOf(), ordersBefore + (committed ? 1 : 0), committed ? 'the COMMIT had taken effect' : 'nothing was placed');
    await beforeRetry();

    const retry = await place(key);
    assert.equal(retry.status, 201, `${point}, the retry: ${retry.status} ${retry.text}`);
    assert.equal(retry.headers.get('idempotent-replayed') === 'true', committed, 'a committed order is replayed');
    const again = await place(key);
    assert.equal(again.status, 201);
    assert.equal(again.body.id, retry.body.id);
    assert.equal(await ordersOf(), ordersBefore + 1, 'placed once');
    assert.equal(await stock(), stockBefore - 1, 'the stock went down once');
  }

  it('when it dies before the transaction begins (an idle pooled connection), then 503 with Retry-After, and the retry places the order once', {
    skip,
  }, async () => {
    await dies('before begin', () => (trap = { when: /^\s*begin/i, rewrite: killNow }), false);
  });

  it("when it dies between the transaction's statements, then 503 with Retry-After, and the retry places the order once", {
    skip,
  }, async () => {
    await dies('between statements', () => (trap = { when: /update idempotency_records set outcome/, rewrite: killNow }), false);
  });

  it('when it dies during the COMMIT, then 503 with Retry-After, and the retry places the order once', { skip }, async () => {
    // A deferred trigger runs at COMMIT: it sleeps there until the backend is terminated.
    await db.query(`create function sleep_at_commit() returns trigger language plpgsql as $$ begin perform pg_sleep(30); return null; end $$;
      create constraint trigger sleep_at_commit after insert on orders deferrable initially deferred for each row execute function sleep_at_commit()`);
    const calm = () =>
      db.query('drop trigger if exists sleep_at_commit on orders; drop function if exists sleep_at_commit()').then(() => undefined);
    try {
      const killing = killTheSleeper();
      await dies('during commit', () => undefined, false, calm);
      await killing;
    } finally {
      await calm();
    }
  });

  it('when it dies after the COMMIT took effect, before its answer, then 503 with Retry-After, and the retry replays the order', {
    skip,
  }, async () => {
    const killing = killTheSleeper();
    // The order's transaction ends with its key's outcome, then its COMMIT (a message of its own, after the claim's
    // transaction has committed): the server sleeps after that COMMIT, before answering, and is terminated.
    const afterCommit = { when: /^commit$/, rewrite: async (_conn: Conn, text: string) => `${text};\nselect pg_sleep(30)` };
    await dies(
      'after commit',
      () =>
        (trap = {
          when: /update idempotency_records set outcome/,
          rewrite: async (_conn, text) => {
            trap = afterCommit;
            return text;
          },
        }),
      true,
    );
    await killing;
  });
});
