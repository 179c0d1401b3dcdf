import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { MikroORM } from '@mikro-orm/core';
import { createOrm, migrate, ormOptions, type Orm } from '../../src/db/orm.js';
import { createDatabase, dropDatabase } from '../../src/db/pg-admin.js';
import { postgresUrl, skipUnless } from '../helpers/services.js';

/** Tables, columns (name, type, nullability) and index names, as SQLite reports them. */
async function sqliteShape(orm: Orm) {
  const conn = orm.em.getConnection();
  const tables = (
    await conn.execute<{ name: string }[]>(
      `select name from sqlite_master where type = 'table' and name not like 'sqlite_%' and name <> 'mikro_orm_migrations' order by name`,
    )
  ).map((r) => r.name);
  const shape: Record<string, unknown> = {};
  for (const table of tables) {
    const columns = await conn.execute<{ name: string; type: string; notnull: number; pk: number }[]>(`pragma table_info(\`${table}\`)`);
    const indexes = await conn.execute<{ name: string; unique: number }[]>(`pragma index_list(\`${table}\`)`);
    const fks = await conn.execute<{ table: string; from: string; on_delete: string }[]>(`pragma foreign_key_list(\`${table}\`)`);
    shape[table] = {
      columns: columns.map((c) => `${c.name} ${c.type.toLowerCase()} ${c.notnull ? 'not null' : 'null'}${c.pk ? ' pk' : ''}`).sort(),
      indexes: indexes
        .filter((i) => !i.name.startsWith('sqlite_autoindex'))
        .map((i) => `${i.name}${i.unique ? ' unique' : ''}`)
        .sort(),
      foreignKeys: fks.map((f) => `${f.from} -> ${f.table} on delete ${f.on_delete.toLowerCase()}`).sort(),
    };
  }
  return shape;
}

describe('migrations: the committed migrations produce the schema the entities describe', () => {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-mig-test-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('when SQLite is migrated, then its tables, columns, indexes and foreign keys equal a schema generated from the entities', async () => {
    const migrated = await createOrm({
      database: { kind: 'sqlite', path: join(dir, 'migrated.db'), url: '' },
      dbPoolMax: 1,
      dbStatementTimeoutMs: 0,
    });
    const generated = await createOrm({
      database: { kind: 'sqlite', path: join(dir, 'generated.db'), url: '' },
      dbPoolMax: 1,
      dbStatementTimeoutMs: 0,
    });
    try {
      await migrate(migrated);
      // The ORM's own SQLite DDL names the foreign-key indexes twice (as the migration tool does); once each.
      const ddl = (await generated.schema.getCreateSchemaSQL({ wrap: false })).split('\n');
      await generated.schema.execute([...new Set(ddl)].join('\n'));
      const expected = await sqliteShape(generated);
      assert.ok(Object.keys(expected).length >= 7, 'the entity schema has the seven tables');
      assert.deepEqual(await sqliteShape(migrated), expected);
    } finally {
      await migrated.close(true);
      await generated.close(true);
    }
  });

  it('when SQLite is migrated twice, then the second run applies nothing', async () => {
    const orm = await createOrm({
      database: { kind: 'sqlite', path: join(dir, 'twice.db'), url: '' },
      dbPoolMax: 1,
      dbStatementTimeoutMs: 0,
    });
    try {
      await migrate(orm);
      assert.deepEqual(await orm.getMigrator().getPendingMigrations(), []);
      await migrate(orm);
      assert.ok((await orm.getMigrator().getExecutedMigrations()).length >= 1);
    } finally {
      await orm.close(true);
    }
  });
});

describe('migrations on PostgreSQL', async () => {
  const pg = await postgresUrl();
  const name = `petstore_mig_${process.pid}_${randomBytes(3).toString('hex')}`;
  let url = '';
  before(async () => {
    if (pg) url = await createDatabase(pg, name);
  });
  after(async () => {
    if (pg) await dropDatabase(pg, name);
  });

  it('when PostgreSQL is migrated, then the entities need no further change (the migrations are not stale)', {
    skip: skipUnless(pg, 'PostgreSQL'),
  }, async () => {
    const orm = await createOrm({ database: { kind: 'postgresql', url }, dbPoolMax: 2, dbStatementTimeoutMs: 0 });
    try {
      await migrate(orm);
      const diff = await orm.schema.getUpdateSchemaSQL({ wrap: false });
      assert.equal(diff.trim(), '', `the entities differ from the migrated schema:\n${diff}`);
    } finally {
      await orm.close(true);
    }
  });

  it('when two instances migrate the same empty database at once, then both succeed and the tables exist once', {
    skip: skipUnless(pg, 'PostgreSQL'),
  }, async () => {
    const other = `${name}_b`;
    const fresh = await createDatabase(pg!, other);
    const a = (await MikroORM.init(
      await ormOptions({ database: { kind: 'postgresql', url: fresh }, dbPoolMax: 2, dbStatementTimeoutMs: 0 }),
    )) as unknown as Orm;
    const b = (await MikroORM.init(
      await ormOptions({ database: { kind: 'postgresql', url: fresh }, dbPoolMax: 2, dbStatementTimeoutMs: 0 }),
    )) as unknown as Orm;
    try {
      await Promise.all([migrate(a), migrate(b)]);
      const executed = await a.getMigrator().getExecutedMigrations();
      assert.equal(new Set(executed.map((m) => m.name)).size, executed.length);
      const [{ count }] = await a.em
        .getConnection()
        .execute<{ count: string }[]>(`select count(*) as count from information_schema.tables where table_name = 'pets'`);
      assert.equal(Number(count), 1);
    } finally {
      await a.close(true);
      await b.close(true);
      await dropDatabase(pg!, other);
    }
  });
});
