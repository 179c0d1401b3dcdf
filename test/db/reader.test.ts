import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'libsql';
import { createReader } from '../../src/db/reader.js';
import type { Orm } from '../../src/db/orm.js';

/**
 * The SQLite reader keeps each SQL text's prepared statement. libsql does not reset a statement whose step failed:
 * reused, it fails again once with the same error, so a read that failed (a busy checkpoint, a value SQLite refuses)
 * would fail the next read of the same text too.
 */
describe('reader: a failed statement is not reused (SQLite)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'petstore-reader-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('when a read fails, then the next read of the same SQL with good values is answered', async () => {
    const file = join(dir, 'reader.db');
    const db = new Database(file);
    db.exec('pragma journal_mode = wal; create table t (v integer)');
    db.close();
    // The SQLite reader opens the file by its path alone.
    const reader = await createReader(undefined as unknown as Orm, { kind: 'sqlite', path: file, url: `sqlite:${file}` });
    try {
      const sql = 'select abs(?) as v';
      await assert.rejects(reader.one(sql, [-9223372036854775808n]), /integer overflow/);
      assert.equal((await reader.one<{ v: number }>(sql, [-5]))?.v, 5);
      await assert.rejects(reader.all(sql, [-9223372036854775808n]), /integer overflow/);
      assert.deepEqual(
        (await reader.all<{ v: number }>(sql, [-7])).map((row) => row.v),
        [7],
      );
    } finally {
      reader.close();
    }
  });
});
