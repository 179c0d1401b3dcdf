import { randomBytes } from 'node:crypto';
import { Socket } from 'node:net';
import { after, before } from 'node:test';
import { createDatabase, dropDatabase } from '../../src/db/pg-admin.js';

/**
 * Suites that need PostgreSQL or Redis skip on a bare laptop, but CI sets REQUIRE_SERVICES=1 and
 * then a missing service fails the run instead.
 */
export const REQUIRE_SERVICES = process.env.REQUIRE_SERVICES === '1';

export const PG_URL = process.env.TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
export const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

function reachable(url: string, defaultPort: number): Promise<boolean> {
  const u = new URL(url);
  return new Promise((resolve) => {
    const socket = new Socket();
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(1000, () => done(false));
    socket.once('error', () => done(false));
    socket.connect(Number(u.port || defaultPort), u.hostname, () => done(true));
  });
}

async function need(name: string, url: string, port: number): Promise<string | undefined> {
  if (await reachable(url, port)) return url;
  if (REQUIRE_SERVICES) throw new Error(`${name} at ${url} is not reachable, and REQUIRE_SERVICES=1 forbids skipping.`);
  return undefined;
}

/** The PostgreSQL URL, or undefined (skip) when it is down on a machine that does not require it. */
export const postgresUrl = () => need('PostgreSQL', PG_URL, 5432);
/** The Redis URL, or undefined (skip) when it is down on a machine that does not require it. */
export const redisUrl = () => need('Redis', REDIS_URL, 6379);

/** The skip option for node:test: false to run, or the reason to skip. */
export const skipUnless = (url: string | undefined, name: string) => (url ? false : `${name} is not reachable`);

/**
 * Waits until another backend of `db`'s database matches `where` (a condition on `pg_stat_activity`), and
 * returns `select`'s rows for the backends that do (`pg_terminate_backend(pid)` ends them as it reads them).
 * Polls every 10 ms for at most 5 s, then fails with `what`.
 */
export async function untilBackend(
  db: { query(text: string): Promise<{ rows: unknown[] }> },
  where: string,
  what: string,
  select = 'pid',
): Promise<unknown[]> {
  for (let i = 0; i < 500; i++) {
    const { rows } = await db.query(
      `select ${select} from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid() and ${where}`,
    );
    if (rows.length) return rows;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(what);
}

/**
 * A `describe` block on a PostgreSQL database of its own: registers the block's `before` and `after` hooks, which
 * create the database (named after `label`) and run `setup` with its URL, then run `teardown` and drop the database.
 * Returns node:test's skip option: the reason to skip when PostgreSQL, or any service in `needs` (name → its URL,
 * from `redisUrl()` and the like), is unreachable on a machine that allows skipping; then neither hook does anything.
 */
export async function onOwnPostgres(
  label: string,
  hooks: { setup(url: string): Promise<void>; teardown?(): Promise<void> },
  needs: Record<string, string | undefined> = {},
): Promise<string | false> {
  const admin = await postgresUrl();
  const missing = Object.entries({ PostgreSQL: admin, ...needs }).find(([, url]) => !url);
  const skip = missing ? skipUnless(undefined, missing[0]) : false;
  const name = `petstore_${label}_${process.pid}_${randomBytes(3).toString('hex')}`;
  before(async () => {
    if (skip) return;
    await hooks.setup(await createDatabase(admin!, name));
  });
  after(async () => {
    if (skip) return;
    try {
      await hooks.teardown?.();
    } finally {
      await dropDatabase(admin!, name);
    }
  });
  return skip;
}
