/**
 * The migration to case-folded category names (src/db/migrations/category-name-keys.ts) on a database written
 * when names were only lower-cased: every key is recomputed, names that now collide keep their rows and are
 * reported (at start, in the log), and afterwards the folded rule holds, on SQLite and on PostgreSQL.
 */
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { createOrm, loadMigrator, type Orm } from '../../src/db/orm.js';
import { createDatabase, dropDatabase } from '../../src/db/pg-admin.js';
import { postgresUrl, skipUnless } from '../helpers/services.js';
import { startApp } from '../helpers/app.js';
import { assertError } from '../rest/support.js';

/** The last migration before names were case-folded. */
const BEFORE_FOLDING = 'Migration20261128180000';

async function migratedBeforeFolding(orm: Orm, dialect: 'sqlite' | 'postgresql') {
  await loadMigrator(orm, dialect);
  await orm.getMigrator().up({ to: BEFORE_FOLDING });
  // As the service wrote them then: the key was the lower-cased name.
  for (const name of ['Straße', 'STRASSE', 'İstanbul', 'istanbul', 'Cats', 'Dogs']) {
    await orm.em
      .getConnection()
      .execute('insert into categories (name, name_key, description, created_at) values (?, ?, null, ?)', [
        name,
        name.toLowerCase(),
        new Date(),
      ]);
  }
}

async function checkMigration(url: string, dialect: 'sqlite' | 'postgresql') {
  const orm = await createOrm({
    database: dialect === 'sqlite' ? { kind: 'sqlite', path: url.replace(/^sqlite:/, ''), url: '' } : { kind: 'postgresql', url },
    dbPoolMax: 2,
    dbStatementTimeoutMs: 0,
  });
  try {
    await migratedBeforeFolding(orm, dialect);
  } finally {
    await orm.close(true);
  }
  const lines: string[] = [];
  const t = await startApp({ databaseUrl: url, env: { LOG_LEVEL: 'warn' }, logStream: { write: (line) => lines.push(line) } });
  try {
    const rows = await t.app.orm.em
      .getConnection()
      .execute<Array<{ id: number | string; name: string; name_key: string }>>('select id, name, name_key from categories order by id');
    const byName = Object.fromEntries(rows.map((r) => [r.name, { id: Number(r.id), key: r.name_key }]));
    assert.equal(rows.length, 6, 'every row is kept');
    assert.equal(byName.Straße!.key, 'strasse');
    assert.equal(byName.İstanbul!.key, 'istanbul');
    assert.equal(
      byName.STRASSE!.key,
      `\u0001${byName.STRASSE!.id}`,
      'the later of two colliding names keeps its row under a key of its own',
    );
    assert.equal(byName.istanbul!.key, `\u0001${byName.istanbul!.id}`);
    assert.equal(byName.Cats!.key, 'cats');

    const reported = lines.map((l) => JSON.parse(l)).filter((l) => /equals another category's ignoring case/.test(l.msg));
    assert.deepEqual(
      reported.map((l) => [l.id, l.name, l.sameAsId]),
      [
        [byName.STRASSE!.id, 'STRASSE', byName.Straße!.id],
        [byName.istanbul!.id, 'istanbul', byName.İstanbul!.id],
      ],
    );
    // The folded rule holds from now on, and the kept rows are still served.
    assertError(await t.admin.post('/v1/categories', { name: 'strasse' }), 409, 'NAME_TAKEN');
    assertError(await t.admin.post('/v1/categories', { name: 'CATS' }), 409, 'NAME_TAKEN');
    assert.equal((await t.admin.get(`/v1/categories/${byName.STRASSE!.id}`)).body.name, 'STRASSE');
    // Renaming the kept duplicate to a free name resolves it: the next start reports nothing.
    assert.equal((await t.admin.put(`/v1/categories/${byName.STRASSE!.id}`, { name: 'Streets' })).status, 200);
    assert.equal((await t.admin.put(`/v1/categories/${byName.istanbul!.id}`, { name: 'Constantinople' })).status, 200);
  } finally {
    await t.close();
  }
  const again: string[] = [];
  const restarted = await startApp({ databaseUrl: url, env: { LOG_LEVEL: 'warn' }, logStream: { write: (line) => again.push(line) } });
  await restarted.close();
  assert.deepEqual(
    again.filter((l) => /ignoring case/.test(l)),
    [],
  );
}

describe('migrations: category names case-folded', async () => {
  const pg = await postgresUrl();
  const dir = mkdtempSync(join(tmpdir(), 'petstore-fold-'));
  const pgName = `petstore_fold_${process.pid}_${randomBytes(3).toString('hex')}`;
  after(async () => {
    rmSync(dir, { recursive: true, force: true });
    if (pg) await dropDatabase(pg, pgName).catch(() => undefined);
  });

  it('when SQLite holds names that collide once folded, then the migration keeps every row, gives the later ones their own key, and the start reports them', async () => {
    await checkMigration(`sqlite:${join(dir, 'fold.db')}`, 'sqlite');
  });

  it('when PostgreSQL holds names that collide once folded, then the same', { skip: skipUnless(pg, 'PostgreSQL') }, async () => {
    await checkMigration(await createDatabase(pg!, pgName), 'postgresql');
  });
});
