import 'reflect-metadata';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { loadConfig } from '../../src/config.js';
import { createOrm, migrate, type Orm } from '../../src/db/orm.js';
import { createDatabase, dropDatabase } from '../../src/db/pg-admin.js';
import { createReader } from '../../src/db/reader.js';
import { createWriter } from '../../src/db/writer.js';
import { createDomain, type Actor, type Domain } from '../../src/domain/index.js';
import { authenticateKey } from '../../src/domain/api-keys.js';
import type { SqlReader } from '../../src/domain/reader.js';

export interface DomainFixture {
  orm: Orm;
  /** The plain-SQL reader the domain's hot reads (and key lookups) use. */
  reader: SqlReader;
  /** Fresh services over a new EntityManager fork, as one request gets them. */
  domain(): Domain;
  staff: Actor;
  customer: Actor;
  /** Another customer, for ownership rules. */
  stranger: Actor;
  close(): Promise<void>;
}

let counter = 0;

/**
 * The domain services over a fresh, migrated database and no transport at all: a new SQLite file, or a
 * new PostgreSQL database when TEST_DATABASE_URL is set.
 */
export async function startDomain(): Promise<DomainFixture> {
  const cleanups: Array<() => unknown> = [];
  let url: string;
  const pg = process.env.TEST_DATABASE_URL;
  if (pg) {
    const name = `petstore_d_${process.pid}_${++counter}_${randomBytes(3).toString('hex')}`;
    url = await createDatabase(pg, name);
    cleanups.push(() => dropDatabase(pg, name));
  } else {
    const dir = mkdtempSync(join(tmpdir(), 'petstore-domain-'));
    url = `sqlite:${join(dir, 'petstore.db')}`;
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  }
  const config = loadConfig({ NODE_ENV: 'test', LOG_LEVEL: 'silent', SEED_DEMO: 'false', DATABASE_URL: url });
  const orm = await createOrm(config);
  cleanups.unshift(() => orm.close(true));
  await migrate(orm);
  const reader = await createReader(orm, config.database);
  cleanups.unshift(() => reader.close());
  const domain = () => createDomain(() => orm.em.fork(), { reader, writer: createWriter(orm, () => undefined) });
  const adminKey = `psk_${randomBytes(24).toString('base64url')}`;
  await domain().accounts.bootstrapAdmin(adminKey);
  const staff = (await authenticateKey(reader, adminKey))!;
  const actorOf = async (name: string): Promise<Actor> => {
    const created = await domain().accounts.createAccount(staff, { name, role: 'customer', plan: 'pro' });
    return (await authenticateKey(reader, created.apiKey.key))!;
  };
  return {
    orm,
    reader,
    domain,
    staff,
    customer: await actorOf('Customer'),
    stranger: await actorOf('Stranger'),
    async close() {
      for (const c of cleanups) await c();
    },
  };
}

/** Asserts that `promise` rejects with a domain error of `code`. */
export async function rejectsWith(promise: Promise<unknown>, code: string): Promise<void> {
  try {
    await promise;
  } catch (error) {
    if ((error as { code?: string }).code === code) return;
    throw new Error(`expected ${code}, got ${(error as { code?: string }).code ?? error}`);
  }
  throw new Error(`expected ${code}, but it succeeded`);
}
