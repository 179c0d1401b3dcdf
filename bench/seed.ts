/**
 * The benchmark's database: a temporary SQLite file (or, with `PG_URL`, a fresh PostgreSQL database)
 * migrated and bootstrapped by the app itself (staff key from ADMIN_API_KEY), then 10 categories and
 * 10,000 pets (stock 1,000,000 each, so orders never run out) inserted by three set-based statements
 * in one transaction, and two accounts created through `POST /v1/accounts` like any operator would:
 * an enterprise customer with quotas a benchmark cannot exhaust, and a free customer for the 429 path;
 * then MANY_KEYS more enterprise customers, one key each, for the read by many keys at once.
 */
import 'reflect-metadata';
import { randomBytes } from 'node:crypto';
import { loadConfig } from '../src/config.js';
import { createApp } from '../src/app.js';

export const PET_COUNT = 10_000;
export const CATEGORY_COUNT = 10;
export const STOCK = 1_000_000;
/**
 * Customers of the many-keys read (`rest-ids-keys`): with each key's cache entry living a second, 500 busy keys cost
 * 500 lookups a second. At most ~990: the staff key's plan allows 1,000
 * account creations a minute.
 */
export const MANY_KEYS = 500;

export interface BenchDatabase {
  /** The SQLite file, or the PostgreSQL URL. */
  file: string;
  adminKey: string;
  enterpriseKey: string;
  freeKey: string;
  /** MANY_KEYS keys (unless asked fewer), each of its own enterprise account. */
  manyKeys: string[];
}

/** `file`: a SQLite file's path, or a `postgres://` URL of an empty database; `manyKeys`: how many of the many keys. */
export async function seedBenchDatabase(file: string, { manyKeys: many = MANY_KEYS }: { manyKeys?: number } = {}): Promise<BenchDatabase> {
  const adminKey = `psk_${randomBytes(24).toString('base64url')}`;
  const postgres = /^postgres(ql)?:\/\//.test(file);
  const config = loadConfig({
    DATABASE_URL: postgres ? file : `sqlite:${file}`,
    NODE_ENV: 'production',
    LOG_LEVEL: 'silent',
    ADMIN_API_KEY: adminKey,
  });
  const app = await createApp(config, { announce: () => {} });
  try {
    const knex = app.orm.em.getConnection().getKnex();
    await knex.transaction(async (trx) => {
      // Timestamps in whatever form the ORM wrote the staff account's.
      const now = '(select created_at from accounts limit 1)';
      await trx.raw(
        `with recursive n(x) as (select 1 union all select x + 1 from n where x < ${CATEGORY_COUNT})
         insert into categories (name, name_key, description, created_at)
         select 'Category ' || x, 'category ' || x, 'Benchmark category ' || x, ${now} from n`,
      );
      await trx.raw(
        `with recursive n(x) as (select 1 union all select x + 1 from n where x < ${PET_COUNT})
         insert into pets (name, category_id, status, created_at)
         select 'Pet ' || x, (select min(id) from categories) + (x % ${CATEGORY_COUNT}), 'available', ${now} from n`,
      );
      await trx.raw(`insert into inventory (pet_id, quantity) select id, ${STOCK} from pets`);
    });
    const counted = await knex.raw('select count(*) as pets from pets');
    const [{ pets }] = postgres ? counted.rows : counted;
    if (Number(pets) < PET_COUNT) throw new Error(`seeded ${pets} pets, expected ${PET_COUNT}`);

    const { url } = await app.listen(0, '127.0.0.1');
    const create = async (body: object): Promise<string> => {
      const res = await fetch(`${url}/v1/accounts`, {
        method: 'POST',
        headers: { 'X-API-Key': adminKey, 'Content-Type': 'application/json' },
        body: JSON.stringify(body),
      });
      const json = (await res.json()) as { apiKey?: { key: string } };
      if (res.status !== 201 || !json.apiKey) throw new Error(`POST /v1/accounts → ${res.status} ${JSON.stringify(json)}`);
      return json.apiKey.key;
    };
    const enterpriseKey = await create({
      name: 'Bench enterprise',
      role: 'customer',
      plan: 'enterprise',
      limits: { perMinute: 1_000_000, perDay: 100_000_000 },
    });
    const freeKey = await create({ name: 'Bench free', role: 'customer', plan: 'free' });
    const manyKeys: string[] = [];
    for (let i = 0; i < many; i += 10) {
      const batch = Array.from({ length: Math.min(10, many - i) }, (_, j) =>
        create({
          name: `Bench customer ${i + j + 1}`,
          role: 'customer',
          plan: 'enterprise',
          limits: { perMinute: 1_000_000, perDay: 100_000_000 },
        }),
      );
      manyKeys.push(...(await Promise.all(batch)));
    }
    // Everything into the main file, so that a copy of it is the whole database.
    if (!postgres) await knex.raw('pragma wal_checkpoint(truncate)');
    return { file, adminKey, enterpriseKey, freeKey, manyKeys };
  } finally {
    await app.close();
  }
}
